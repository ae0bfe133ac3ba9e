/* Dump triggers and files: every thread's part on request (signal, API,
 * cgprof-control), a thread's last part when it ends, all at exit; each
 * file written under a temporary name and renamed into place. */
#ifndef CG_DUMP_H
#define CG_DUMP_H

/* Once, at initialisation: fork handling. Returns 0 or -1. */
int cg_dump_init(void);
/* From the library constructor: the service thread and the dump signal. */
void cg_dump_start_service(void);

/* Every live thread's part now; reason goes in "desc: Trigger:". Returns 0
 * when every file was written. */
int cg_dump_now(const char *reason);
void cg_dump_zero(void);
void cg_dump_collect(int on);
/* Every live thread's part before exec() replaces the image. */
void cg_dump_exec(const char *what);
/* The dump at process exit, then nothing more. */
void cg_dump_final(const char *trigger);

/* dlclose() of an object is about to happen: note the addresses the tables
 * hold in it, so that they keep their names. */
void cg_dump_note_unload(const void *handle);

/* The program sets its own action for signal sig: if it is the dump signal,
 * cgprof steps aside (says so once). Returns whether it was. */
int cg_dump_signal_claimed(int sig);

#endif
