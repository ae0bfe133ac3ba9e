/* Time off the CPU shown apart (CGPROF_OFF_CPU=1; thread layer): each
 * thread's context switches, from a perf_event ring buffer of
 * PERF_RECORD_SWITCH records the kernel writes as it switches the thread
 * out and back in. The hooks see that records came (a load and a compare:
 * struct cg_costs, switch_head) and the general path charges each time the
 * thread was off the CPU to a callee of the running function,
 * cgprof_off_cpu, at its position, instead of to its own time. */
#ifndef CG_OFFCPU_H
#define CG_OFFCPU_H

#include <stdint.h>

struct cg_thread;

/* Once, at start-up, before any thread attaches: on (CGPROF_OFF_CPU=1,
 * exact time). */
void cg_offcpu_init(int on);
/* The calling thread's ring buffer (at its first hook); on refusal, one
 * message for the process and the thread goes without. */
void cg_offcpu_thread_start(struct cg_thread *t);
void cg_offcpu_thread_stop(struct cg_thread *t);
/* Its ring goes with its state (under the dump lock: see cg_offcpu_pending). */
void cg_offcpu_thread_release(struct cg_thread *t);
/* In a forked child, for the thread that forked: the parent's buffer is
 * the parent's; a new one. */
void cg_offcpu_forked(struct cg_thread *t);
/* Charges the switches recorded since the last call to the top frame, its
 * guard held, before a hook's event at `now` (the thread's time). */
void cg_offcpu_drain(struct cg_thread *t, uint64_t now);

/* For a dump, from any thread: how long thread t has been off the CPU
 * that its hooks have not yet charged (ns, by the records in its ring not
 * yet drained; a stretch still going on counts up to now), without
 * draining them: a thread blocked when a dump is taken (a worker waiting
 * for work at exit, a server idle at a SIGUSR1) would otherwise show its
 * wait so far as the running function's own time. 0 when off. With the
 * dump lock held: the ring stays mapped until cg_offcpu_thread_release,
 * which the dumper calls. */
uint64_t cg_offcpu_pending(const struct cg_thread *t);

/* The time (ns, the thread's compensated clock) at which a reading of
 * running thread t's tables is taken, from any thread, under the dump
 * lock: CG_NOW (reading.h: now), or, with time off the CPU pending
 * (cg_offcpu_pending), now less that time, never before the top frame's
 * last time; *pending gets what was left out (0 when nothing was). A dump,
 * a pause of the collection and a look at the stacks read it alike, so
 * that the wait is not the running function's own time there and
 * cgprof_off_cpu's later. */
uint64_t cg_offcpu_read_time(const struct cg_thread *t, uint64_t *pending);

/* The function the time off the CPU is shown as called (never called). */
void cgprof_off_cpu(void);

#endif
