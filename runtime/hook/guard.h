/* The per-thread guard of the hooks (thread layer): a hook re-entered from
 * a signal handler while a hook of the same thread runs must not touch
 * tables that are half updated. Its event is kept (deferred) and replayed
 * when the interrupted hook ends, as if the handler had run right after
 * it. Used by the hooks (hooks.c, fastpath.h), the sampler's signal handler
 * (sample.c) and the non-local exits (nonlocal.c).
 *
 * Rules of everything here: no malloc, no lock, no stdio, no system call
 * (the clock is RDTSC or the vDSO), errno untouched. */
#ifndef CG_GUARD_H
#define CG_GUARD_H

#include <stdint.h>

#include "clock.h"
#include "compiler.h"
#include "costs.h"
#include "fold.h"
#include "proc.h"
#include "thread.h"

/* The clock for a hook of thread t: its sampled clock (CGPROF_TIME=sample),
 * or the clock. It may step back a little (a thread that migrates to a core
 * whose TSC lags): cg_costs_enter/pop never go below the top frame's last
 * time, which they load anyway, instead of a per-thread "last time" that
 * every hook loaded and stored. */
static CG_INLINE uint64_t cg_guard_now(struct cg_thread *t, int enter)
{
    if (cg_sampling) {
        /* sampled time: the clock is the thread's, moved by its timer */
        t->nhooks++;
        return t->vclock;
    }
    return cg_costs_hook_time(&t->costs, cg_clock_now(), enter);
}

/* The thread's time for what is not a hook (a longjmp's frames, a handler's
 * deferred hook, the thread's end): compensated, not adding to it. */
static CG_INLINE uint64_t cg_guard_time(const struct cg_thread *t)
{
    return cg_sampling ? t->vclock : cg_costs_time_of(&t->costs, cg_clock_now());
}

/* One event applied to t's tables, the guard held: the general path of a
 * hook (resync: the shadow stack checked against sp first). */
static CG_INLINE void cg_guard_apply(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                     uintptr_t code, int enter, uint64_t now, int resync)
{
    /* a call that keeps no frame: dropped, its hook call taken back */
    int how = cg_fold_event(t, fn, site, sp, code, enter, now, resync);
    if (how == CG_FOLD_DROPPED)
        return;
    if (resync)
        cg_costs_resync(&t->costs, fn, site, sp, code, enter, now);
    if (enter)
        cg_costs_enter_as(&t->costs, fn, site, sp, code, now, how == CG_FOLD_INLINED_BELOW);
    else
        cg_costs_exit(&t->costs, fn, now);
}

/* Keeps the event of a hook that found t's guard taken (or events pending),
 * to be replayed by the hook that holds it. */
CG_COLD void cg_guard_defer(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter);
/* Events deferred after the guard was released: takes it again and
 * replays, until the guard is released with nothing pending. */
CG_COLD void cg_guard_replay_late(struct cg_thread *t);
/* A signal handler that interrupted a hook of t (its guard held) leaves it
 * for good with siglongjmp: the hook never ends. Its one event is lost
 * (counted: desc: Lost), the guard given back, and the events the handler
 * deferred meanwhile replayed, so that its calls are counted and the
 * thread's later hooks are not deferred forever. The tables are as a dump
 * would read them at that instant: every store of the hooks is whole and
 * published in order (costs.h). */
CG_COLD void cg_guard_abandon(struct cg_thread *t);

/* Takes t's guard for a hook's event, or returns NULL when this hook must
 * do nothing: collection paused, or a hook already running on this thread
 * (this one comes from a signal handler: deferred), or events pending,
 * which this one waits behind, so that the order is kept. */
static CG_INLINE struct cg_thread *cg_guard_take(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                                 uintptr_t code, int enter)
{
    if (cg_unlikely(t->guard | t->ndeferred | !cg_collecting)) {
        if (cg_collecting)
            cg_guard_defer(t, fn, site, sp, code, enter);
        return NULL;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    return t;
}

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

/* The general path of a hook on t (not NULL): the guard taken, the event
 * applied, the guard released. */
CG_COLD void cg_guard_hook(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter);
/* The same, the guard already held (a fast path gave up). */
CG_COLD void cg_guard_hook_held(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                        int enter);
/* An exit whose arc reached CGPROF_THROTTLE's count, the guard held: the
 * check, then the guard released. */
CG_COLD void cg_guard_throttle(struct cg_thread *t, uint32_t arc);

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
extern int (*cg_guard_drain_samples)(struct cg_thread *t);

#endif
