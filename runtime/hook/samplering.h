/* Sampled time without signals (CGPROF_SAMPLE_TIMER=ring, thread layer):
 * each thread's perf_event task clock writes its samples (user registers
 * and a copy of the top of the user stack) into a ring buffer that the
 * thread reads at its next hook, charging each to the shadow stack, which
 * has not changed since the sample was taken. See samplering.c. */
#ifndef CG_SAMPLERING_H
#define CG_SAMPLERING_H

#include <stdint.h>

struct cg_thread;

/* At start-up, after cg_sample_init: with CGPROF_SAMPLE_TIMER=ring,
 * whether the kernel gives this process such an event (system time
 * counted where it allows, else user time only); if so the threads take
 * rings instead of timers, else one message says why. */
void cg_ring_init(void);
/* The walks' address space (libunwind), from the runtime's set-up (not a
 * hook: it may load libunwind). */
void cg_ring_set_up(void);
/* The calling thread's event and buffer: 0, or -1 (then signals). */
int cg_ring_thread_start(struct cg_thread *t);
/* The calling thread ends: its last records charged, its ring unmapped. */
void cg_ring_thread_stop(struct cg_thread *t);
/* In a forked child, for the thread that forked. */
void cg_ring_forked(struct cg_thread *t);
/* The records since the last drain, charged (or, discard set, only
 * counted); t is the calling thread, its guard held. 0 when t has no
 * ring. */
int cg_ring_drain(struct cg_thread *t, int discard);
/* From the service thread, holding the dump lock (t is not freed
 * meanwhile): t's ring, when more than half full, copied out into t's
 * spill buffer (made at the first need), so that code without hooks
 * running longer than the ring holds loses no record. Never waits: a ring
 * the thread is draining is left. */
void cg_ring_spill(struct cg_thread *t);
/* How often the rings are to be spilled (a quarter of what one holds), in
 * ns; 0 without rings. */
uint64_t cg_ring_spill_interval_ns(void);

#endif
