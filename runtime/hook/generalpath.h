/* The hooks' general path (thread layer): everything a hook does that the
 * fast path (fastpath.h) does not, and the per-thread guard it runs under.
 * A hook comes here on a thread's first call, a new arc, a stack to
 * re-synchronise or grow, a filter, a call that keeps no frame (fold.h),
 * the monotonic clock, or when the guard is taken: a hook re-entered from a
 * signal handler while a hook of the same thread runs must not touch tables
 * that are half updated, so its event is kept (deferred) and replayed when
 * the interrupted hook ends, as if the handler had run right after it. The
 * fast path takes the same guard and releases it here (cg_guard_release).
 * Used by the hooks (hooks.c, fastpath.h), the sampler's signal handler
 * (sample.c) and the non-local exits (nonlocal.c).
 *
 * Rules of everything here: no malloc, no lock, no stdio, no system call
 * (the clock is RDTSC or the vDSO), errno untouched. */
#ifndef CG_GENERALPATH_H
#define CG_GENERALPATH_H

#include <stdint.h>

#include "compiler.h"
#include "costs.h"
#include "thread.h"

/* Events deferred after the guard was released: takes it again and
 * replays, until the guard is released with nothing pending. */
CG_COLD void cg_guard_replay_late(struct cg_thread *t);
/* A signal handler that interrupted a hook of t (its guard held) leaves it
 * for good with siglongjmp: the hook never ends. Its one event is lost
 * (counted: desc: Lost), the guard given back, and the events the handler
 * deferred meanwhile replayed, so that its calls are counted and the
 * thread's later hooks are not deferred forever. The tables are as a dump
 * would read them at that instant: every store of the hooks is whole and
 * published in order (costs_inlines.h). */
CG_COLD void cg_guard_abandon(struct cg_thread *t);

/* Releases the guard, then replays what signal handlers deferred
 * meanwhile (cg_guard_replay_late takes the guard again, and releases it
 * only with nothing pending). A handler that lands between the two sees
 * the events pending and defers its own behind them, so the order is
 * kept. */
static CG_INLINE void cg_guard_release(struct cg_thread *t)
{
    CG_CHECK(t->guard == CG_GUARD_HOOK);
    cg_signal_fence();
    t->guard = 0;
    cg_signal_fence();
    if (cg_unlikely(t->ndeferred))
        cg_guard_replay_late(t);
}

/* The general path of a hook on t (not NULL): the guard taken (or the
 * event deferred behind the hook that holds it), the event applied to the
 * tables, the guard released. */
CG_COLD void cg_general_hook(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                             int enter);
/* The same, the guard already held (a fast path gave up). */
CG_COLD void cg_general_hook_held(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                  int enter);
/* An exit whose arc reached CGPROF_THROTTLE's count, the guard held: the
 * check, then the guard released. */
CG_COLD void cg_general_throttle(struct cg_thread *t, uint32_t arc);

/* A non-local exit on the calling thread (a longjmp, or exception
 * unwinding entering a landing pad: nonlocal.c), applied to its shadow
 * stack as a hook would be, under the thread's guard: the frames above
 * depth end now, or, with depth UINT32_MAX, those whose stack pointer is
 * below sp. Does nothing on a thread that is inside a hook (the exit comes
 * from a signal handler that interrupted it) or when nothing is collected. */
void cg_hook_nonlocal(uint32_t depth, uintptr_t sp);

/* CGPROF_SAMPLE_TIMER=ring: drains the calling thread's samples (its
 * guard held) before the general path's event; NULL when no thread
 * samples so. */
extern int (*cg_general_drain_samples)(struct cg_thread *t);

#endif
