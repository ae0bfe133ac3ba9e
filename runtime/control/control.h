/* The files cgprof-control reads and writes (docs/internals/control-protocol.md). */
#ifndef CG_CONTROL_H
#define CG_CONTROL_H

#include <stddef.h>

#include "util.h"

enum {
    CG_CONTROL_NONE,
    CG_CONTROL_DUMP,
    CG_CONTROL_ZERO,
    CG_CONTROL_COLLECT_ON,
    CG_CONTROL_COLLECT_OFF,
    CG_CONTROL_STACKS,   /* a question: the answer goes in the reply file */
    CG_CONTROL_COUNTERS,
};

/* Finds (or creates) the control directory; sig: the dump signal, 0 none. */
void cg_control_init(int sig);
void cg_control_set_signal(int sig);
/* The service thread's id (0: none), said in the status (service:) from
 * its next rewrite: the control signals that thread alone, so that a dump
 * request never interrupts a thread of the program's. */
#include <sys/types.h>
void cg_control_set_service(pid_t tid);
/* Rewrites <dir>/<pid>.status; done_one: a request was handled. */
void cg_control_status(unsigned threads, unsigned parts, int collecting, const char *last, int done_one);
/* Takes <dir>/<pid>.cmd if there is one: returns its kind (CG_CONTROL_NONE
 * when absent) and, for a dump, its reason in arg. */
int cg_control_take_command(char *arg, size_t size);
/* Writes <dir>/<pid>.reply: the id of the command being handled, then
 * body (the answer to a question), atomically. */
void cg_control_reply(const struct cg_buf *body);
/* Removes the status file (process exit). */
void cg_control_remove(void);
/* In a forked child: the files are the parent's. */
void cg_control_forget(void);

#endif
