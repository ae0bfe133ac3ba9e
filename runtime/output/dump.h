/* Dumps (service layer): every thread's part on request (signal, API,
 * cgprof-control), a thread's last part when it ends, all at exit, and what
 * a dump needs kept between dumps (part numbers, collection paused). Every
 * dump, zeroing, pause and thread's last part happens under one lock, taken
 * by the thread that asks (the API, a thread ending, exit) or by the
 * service thread that serves the dump signal (service.c). */
#ifndef CG_DUMP_H
#define CG_DUMP_H

#include <stdint.h>

struct cg_thread;

/* Every live thread's part now; reason goes in "desc: Trigger:". Returns 0
 * when every file was written. */
int cg_dump_now(const char *reason);
void cg_dump_zero(void);
void cg_dump_collect(int on);
/* Collection off from the start (CGPROF_COLLECT=off): by the runtime's
 * initialisation, before any thread has tables. */
void cg_dump_start_off(void);
/* Every live thread's part before exec() replaces the image, and the
 * total. */
void cg_dump_exec(const char *what);
/* The dump at process exit, then nothing more. */
void cg_dump_final(const char *trigger);
/* The last part of a thread that ends, written by that thread. */
void cg_dump_thread_exit(struct cg_thread *t);
/* A request the service thread took (kind: CG_CONTROL_*, cmd its reason;
 * CG_CONTROL_NONE: the dump signal), served for `signals` signals. */
void cg_dump_serve(int kind, const char *cmd, unsigned signals);
/* Rewrites the status file (cgprof-control's listing). */
void cg_dump_status(void);
/* Whether the status file is behind (a thread ended since it was written);
 * clears it. */
int cg_dump_status_stale(void);
/* The threads' ring buffers copied out where more than half full
 * (samplering.c's cg_ring_spill), from the service thread; nothing when a
 * dump holds the lock (its own threads' records are drained by the
 * threads). */
void cg_dump_spill_rings(void);
/* Whether the exit dump has run. */
int cg_dump_finished(void);

/* The crash copy of the process (crash.c): every thread's part, without
 * the lock, which a thread that no longer exists in the copy may hold. */
void cg_dump_crash(const char *trigger);

/* Calls visit with every address the tables hold (threads' tables and the
 * sums), under the lock, for objects about to be unloaded (given to
 * unload.c's cg_unload_note by the entry layer). */
void cg_dump_addresses(void (*visit)(void *ctx, uintptr_t addr), void *ctx);

/* fork(): no dump may be half done in the child, whose only thread is the
 * one that forked. */
void cg_dump_fork_prepare(void);
void cg_dump_fork_parent(void);
/* In the child: the state is the parent's; the child's parts start again
 * from 1. */
void cg_dump_forked(void);

#endif
