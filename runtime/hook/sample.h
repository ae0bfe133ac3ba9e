/* Sampled time (CGPROF_TIME=sample; thread layer): what a sample is
 * charged to, see sample.c. The timers that send the samples and the
 * signal they come by: sampletimer.h. */
#ifndef CG_SAMPLE_H
#define CG_SAMPLE_H

#include <stdint.h>

#include "sampletimer.h"

struct cg_thread;

/* Sets sampling up when CGPROF_TIME=sample, its timers and signal
 * (cg_sample_timers_init), or says why sampling is not possible and leaves
 * exact timing on. The hooks' entry points (a sample that lands in a hook
 * is charged to the top frame) are the entry layer's, given here. */
int cg_sample_init(uintptr_t enter_hook, uintptr_t exit_hook);
/* Loads libunwind for the walks, in a process known to be instrumented
 * (runtime.c, never from a hook: dlopen); until then samples are charged
 * to the top frame's position. */
void cg_sample_set_up(void);

/* Whether the machine function [begin, end) runs the top frame's own code:
 * it starts at the frame's function (top_fn), or holds the return address
 * of its enter hook (top_code: a clone's, or the host's of an inlined
 * frame). */
static inline int cg_sample_top_code(uintptr_t top_fn, uintptr_t top_code, uintptr_t begin, uintptr_t end)
{
    return begin == top_fn || (top_code > begin && top_code <= end);
}

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

#endif
