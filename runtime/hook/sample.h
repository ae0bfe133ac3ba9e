/* Sampled time (CGPROF_TIME=sample): see sample.c. */
#ifndef CG_SAMPLE_H
#define CG_SAMPLE_H

#include <stdint.h>

struct cg_thread;

/* Installs the sampling signal handler when CGPROF_TIME=sample (or says
 * why sampling is not possible and leaves exact timing on). The hooks'
 * entry points (a sample that lands in a hook is charged to the top frame)
 * are the entry layer's, given here. */
int cg_sample_init(uintptr_t enter_hook, uintptr_t exit_hook);
/* Loads libunwind for the walks, in a process known to be instrumented
 * (runtime.c, never from a hook: dlopen); until then samples are charged
 * to the top frame's position. */
void cg_sample_set_up(void);
uint64_t cg_sample_period_ns(void);

/* What sends the threads' samples, for a part's header: "CLOCK_THREAD_CPUTIME_ID
 * timer", or a perf_event task clock (user time only, where the kernel does
 * not let it sample its own code). */
const char *cg_sample_timer_desc(int ring_refused);
/* The calling thread's timer (from its first hook) and its end. */
void cg_sample_thread_start(struct cg_thread *t);
void cg_sample_thread_stop(struct cg_thread *t);
/* In a forked child, for the thread that forked. */
void cg_sample_forked(struct cg_thread *t);
/* The program sets an action for sig: if it is the sampling signal,
 * sampling stops (one message). Returns 1 then. */
int cg_sample_signal_claimed(int sig);
/* As cg_service_signal_view, for the sampling signal. */
struct sigaction;
int cg_sample_signal_view(int sig, struct sigaction *view);
/* The calling thread (t, cg_self) is about to exec (going 1): its timer
 * stopped and a sample already sent taken back, so that no signal is
 * pending when the new image starts; going 0: the exec failed, sampled
 * again. */
void cg_sample_exec(struct cg_thread *t, int going);
/* Collection goes off (on 0) or on: every thread's timer stopped or started
 * again, a sample sent meanwhile ignored (nothing is recorded: its walk
 * would cost the program for nothing). From the dump service, under its
 * lock. */
void cg_sample_collect(int on);

/* Whether the machine function [begin, end) runs the top frame's own code:
 * it starts at the frame's function (top_fn), or holds the return address
 * of its enter hook (top_code: a clone's, or the host's of an inlined
 * frame). */
static inline int cg_sample_top_code(uintptr_t top_fn, uintptr_t top_code, uintptr_t begin, uintptr_t end)
{
    return begin == top_fn || (top_code > begin && top_code <= end);
}

/* A perf_event task clock of the calling thread sampling every period,
 * user time only with exclude_kernel: what both the signals' timer and
 * the ring (samplering.c) open, each adding its own. */
struct perf_event_attr;
void cg_sample_task_clock(struct perf_event_attr *a, int exclude_kernel);

/* A walk's start: fills cursor (libunwind's unw_cursor_t) from arg and
 * returns the functions that step it (unwinder.h), NULL when it cannot. */
struct cg_unwinder;
typedef const struct cg_unwinder *(*cg_sample_cursor_fn)(void *cursor, void *arg);
/* One sample of p ns on thread t (the calling thread), its guard held:
 * walked from the cursor init makes up to the top frame and charged as a
 * sampling signal's is (samplering.c: samples read from a ring buffer at
 * the thread's next hook). */
void cg_sample_charge_held(struct cg_thread *t, uint64_t p, cg_sample_cursor_fn init, void *arg);

/* One sample of p ns on thread t (its guard held) known to be in the top
 * frame's own code, at pc: charged there, as a walk that found it so. */
void cg_sample_charge_own(struct cg_thread *t, uint64_t p, uintptr_t pc);
/* CGPROF_SAMPLE_TIMER=ring (samplering.c): the threads with a ring take
 * no timer here, and the header's clock line is desc. */
void cg_sample_ring_chosen(const char *desc);
/* Whether collection is off (cg_sample_collect): samples not charged. */
int cg_sample_paused(void);

/* The soft RLIMIT_NOFILE at start-up when below 256, else 0: sampling
 * then holds no descriptor (POSIX timers, no libunwind). */
int cg_sample_few_fds(void);

#endif
