/* The timers that send each thread its samples, and the signal they come
 * by (thread layer; CGPROF_TIME=sample): a perf_event task clock or a
 * POSIX CPU-time timer per thread, the signal's handler, collection off
 * and on, exec. What a sample is charged to is sample.c's (sample.h),
 * which hands its function down at start-up. */
#ifndef CG_SAMPLETIMER_H
#define CG_SAMPLETIMER_H

#include <signal.h>
#include <stdint.h>

struct cg_thread;

/* What a sample sent as a signal is charged to: the handler's si and uc,
 * and the timers' period (ns). */
typedef void (*cg_sample_charge_fn)(siginfo_t *si, void *uc, uint64_t period);

/* At start-up, with CGPROF_TIME=sample: the sampling signal checked, the
 * period set, and the timer the kernel allows chosen; the signals' samples
 * then go to charge. 0 when sampling cannot be had (said why: exact timing
 * stays on), else 1. */
int cg_sample_timers_init(cg_sample_charge_fn charge);
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

/* A perf_event task clock of the calling thread sampling every period,
 * user time only with exclude_kernel: what both the signals' timer and
 * the ring (samplering.c) open, each adding its own. */
struct perf_event_attr;
void cg_sample_task_clock(struct perf_event_attr *a, int exclude_kernel);

/* CGPROF_SAMPLE_TIMER=ring (samplering.c): the threads with a ring take
 * no timer here, and the header's clock line is desc. */
void cg_sample_ring_chosen(const char *desc);
/* Whether collection is off (cg_sample_collect): samples not charged. */
int cg_sample_paused(void);

/* The soft RLIMIT_NOFILE at start-up when below 256, else 0: sampling
 * then holds no descriptor (POSIX timers, no libunwind). */
int cg_sample_few_fds(void);

#endif
