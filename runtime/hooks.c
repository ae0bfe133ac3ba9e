/* The two exported hooks that code built with -finstrument-functions calls
 * on every function entry and exit. Nothing else lives here.
 *
 * Rules of the hot path: no malloc, no lock, no stdio, no system call (the
 * clock is RDTSC or the vDSO), errno untouched (the slow paths that make
 * system calls restore it), and a per-thread guard so that a hook re-entered
 * from a signal handler returns at once. */
#include <errno.h>
#include <signal.h>

#include "clock.h"
#include "costs.h"
#include "runtime.h"
#include "sample.h"
#include "thread.h"

/* The extern declarations are in glibc's headers only with _GNU_SOURCE;
 * declare them here with the export attribute. */
CG_EXPORT void __cyg_profile_func_enter(void *fn, void *site);
CG_EXPORT void __cyg_profile_func_exit(void *fn, void *site);

/* The clock for this hook. It may step back a little (a thread that
 * migrates to a core whose TSC lags): cg_costs_enter/pop never go below the
 * top frame's last time, which they load anyway, instead of a per-thread
 * "last time" that every hook loaded and stored. */
static CG_INLINE uint64_t thread_now(struct cg_thread *t)
{
    if (cg_sampling) {
        /* sampled time: the clock is the thread's, moved by its timer */
        t->nhooks++;
        return t->vclock;
    }
    return cg_clock_now();
}

/* A hook re-entered on a thread whose hook is running: a signal handler
 * interrupted it. The tables are half updated, so the event is kept in a
 * small buffer (slots reserved atomically: handlers nest) and replayed when
 * the interrupted hook ends, as if the handler had run right after it. */
static CG_COLD void defer(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, int enter)
{
    if (t->guard == CG_GUARD_RUNTIME || !t->costs.frames)
        return; /* the runtime's own work, or a sentinel: not the program's */ /* the runtime's own work, or a sentinel: not the program's */
    uint32_t i = __atomic_fetch_add(&t->ndeferred, 1, __ATOMIC_RELAXED);
    if (i >= CG_MAX_DEFERRED) {
        __atomic_fetch_sub(&t->ndeferred, 1, __ATOMIC_RELAXED);
        t->costs.lost++; /* reported with the part: desc: Lost */
        return;
    }
    struct cg_deferred *d = &t->deferred[i];
    d->fn = fn;
    d->site = site;
    d->sp = sp;
    d->enter = enter;
    d->now = cg_sampling ? t->vclock : cg_clock_now();
}

static CG_INLINE void apply(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                            int enter, uint64_t now, int resync)
{
    if (resync)
        cg_costs_resync(&t->costs, fn, site, sp, code, enter, now);
    if (enter)
        cg_costs_enter(&t->costs, fn, site, sp, now);
    else
        cg_costs_exit(&t->costs, fn, now);
}

/* Replays the deferred events, in order; the caller holds the guard (more
 * may arrive meanwhile, from further signals). No re-synchronisation: the
 * events of a handler are nested in the interrupted context by
 * construction, and frames a siglongjmp left are found by the next hook. */
static CG_COLD void replay(struct cg_thread *t)
{
    uint32_t i = 0;
    for (;;) {
        uint32_t n = __atomic_load_n(&t->ndeferred, __ATOMIC_ACQUIRE);
        for (; i < n && i < CG_MAX_DEFERRED; i++) {
            const struct cg_deferred *d = &t->deferred[i];
            apply(t, d->fn, d->site, d->sp, 0, d->enter, d->now, 0);
        }
        if (__atomic_compare_exchange_n(&t->ndeferred, &n, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
}

/* Events deferred after the guard was released: take it again and replay,
 * until the guard is released with nothing pending. */
static CG_COLD void replay_late(struct cg_thread *t)
{
    while (t->ndeferred) {
        t->guard = CG_GUARD_HOOK;
        cg_signal_fence();
        replay(t);
        cg_signal_fence();
        t->guard = 0;
        cg_signal_fence();
    }
}

/* The calling thread's state with its guard taken, or NULL when this hook
 * must do nothing: runtime not ready, collection paused, or a hook already
 * running on this thread (this one comes from a signal handler). */
static CG_INLINE struct cg_thread *hook_begin(uintptr_t fn, uintptr_t site, int enter)
{
    struct cg_thread *t = cg_self;
    if (cg_unlikely(!t) && !(t = cg_thread_attach()))
        return NULL;
    /* Events pending (a handler that landed as a hook was ending): this one
     * waits its turn behind them, so that the order is kept. */
    if (cg_unlikely(t->guard | t->ndeferred | !cg_collecting)) {
        if (cg_collecting)
            defer(t, fn, site, (uintptr_t)__builtin_frame_address(0), enter);
        return NULL;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    return t;
}

/* Releases the guard, replaying first what handlers deferred, and only
 * with nothing pending (see replay_late). */
static CG_INLINE void hook_end(struct cg_thread *t)
{
    cg_signal_fence();
    if (cg_unlikely(t->ndeferred))
        replay(t);
    cg_signal_fence();
    t->guard = 0;
    cg_signal_fence();
    if (cg_unlikely(t->ndeferred))
        replay_late(t);
}

void cg_hook_release(struct cg_thread *t)
{
    hook_end(t);
}

CG_HOT void __cyg_profile_func_enter(void *fn, void *site)
{
    struct cg_thread *t = hook_begin((uintptr_t)fn, (uintptr_t)site, 1);
    if (!t)
        return;
    apply(t, (uintptr_t)fn, (uintptr_t)site, (uintptr_t)__builtin_frame_address(0),
          (uintptr_t)__builtin_return_address(0), 1, thread_now(t), 1);
    hook_end(t);
}

CG_HOT void __cyg_profile_func_exit(void *fn, void *site)
{
    struct cg_thread *t = hook_begin((uintptr_t)fn, (uintptr_t)site, 0);
    if (!t)
        return;
    apply(t, (uintptr_t)fn, (uintptr_t)site, (uintptr_t)__builtin_frame_address(0),
          (uintptr_t)__builtin_return_address(0), 0, thread_now(t), 1);
    hook_end(t);
}
