/* What cgprof-control -b, -e and -s show (service layer): every thread's
 * shadow stack with names, and the counters so far, read from the tables of
 * threads that keep running, as a dump reads them. Written as the body of a
 * reply file (docs/internals/control-protocol.md); called by the service thread under
 * the dump lock (dump.c), which keeps every table it reads mapped. */
#ifndef CG_INSPECT_H
#define CG_INSPECT_H

#include "reading.h"
#include "util.h"

struct cg_thread;

/* The frames shown per thread: the innermost CG_INSPECT_INNER and the
 * outermost CG_INSPECT_OUTER of a deeper stack (a recursion a million
 * deep is read in constant time; its two ends are what tells the story). */
#define CG_INSPECT_INNER 96
#define CG_INSPECT_OUTER 32

/* Appends the stacks: one "thread:" line per live profiled thread, then one
 * "frame:" line per frame, innermost first. */
void cg_inspect_stacks(struct cg_buf *b);

/* Appends the counters: the process's, then one "thread:" line per live
 * profiled thread. paused: collection is paused (the next part is then what
 * was collected up to the pause). */
void cg_inspect_counters(struct cg_buf *b, int paused);

/* A thread's last reading (cur) as it ends, before its last part is taken
 * from them: the calls it made stay counted in the process's. */
void cg_inspect_thread_ended(const struct cg_reading *cur);

/* In a forked child: the counters are the parent's. */
void cg_inspect_forked(void);

#endif
