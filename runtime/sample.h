/* Sampled time (CGPROF_TIME=sample): see sample.c. */
#ifndef CG_SAMPLE_H
#define CG_SAMPLE_H

#include <stdint.h>

struct cg_thread;

/* Installs the sampling signal handler when CGPROF_TIME=sample (or says
 * why sampling is not possible and leaves exact timing on). */
int cg_sample_init(void);
uint64_t cg_sample_period_ns(void);
/* The calling thread's timer (from its first hook) and its end. */
void cg_sample_thread_start(struct cg_thread *t);
void cg_sample_thread_stop(struct cg_thread *t);
/* In a forked child, for the thread that forked. */
void cg_sample_forked(struct cg_thread *t);
/* The program sets an action for sig: if it is the sampling signal,
 * sampling stops (one message). Returns 1 then. */
int cg_sample_signal_claimed(int sig);

/* Ends a hook-like section on t (hooks.c): releases the guard, replaying
 * the events that signal handlers deferred meanwhile. */
void cg_hook_release(struct cg_thread *t);

#endif
