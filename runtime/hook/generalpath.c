/* The hooks' general path and their guard: see generalpath.h. A hook's
 * event on it: the guard taken (or the event deferred behind the hook that
 * holds it), the ring's samples and the time off the CPU drained, the
 * clock read, the event applied (cg_general_apply: a call that keeps no
 * frame dropped by fold.c, the stack re-synchronised, the frame pushed or
 * popped: costs_inlines.h), the guard released and what signal handlers
 * deferred meanwhile replayed. */
#include "generalpath.h"

#include <errno.h>
#include <sys/mman.h>

#include "clock.h"
#include "fold.h"
#include "offcpu.h"
#include "proc.h"
#include "takeback.h"

/* The clock for a hook of thread t: its sampled clock (CGPROF_TIME=sample),
 * or the clock. It may step back a little (a thread that migrates to a core
 * whose TSC lags): cg_costs_enter/pop never go below the top frame's last
 * time, which they load anyway, instead of a per-thread "last time" that
 * every hook loaded and stored. */
static CG_INLINE uint64_t cg_general_now(struct cg_thread *t, int enter)
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

/* t's deferred events' array, mapped at the first (in a signal handler:
 * mmap is a system call, safe there); two handlers nested that both map
 * one keep the first published. NULL without memory. */
static struct cg_deferred *deferred_of(struct cg_thread *t)
{
    struct cg_deferred *d = __atomic_load_n(&t->deferred, __ATOMIC_ACQUIRE);
    if (d)
        return d;
    int saved = errno;
    size_t len = sizeof *d * CG_MAX_DEFERRED;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        errno = saved;
        return NULL;
    }
    struct cg_deferred *none = NULL;
    if (!__atomic_compare_exchange_n(&t->deferred, &none, (struct cg_deferred *)p, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        munmap(p, len);
        p = none;
    }
    errno = saved;
    return p;
}

/* Keeps the event of a hook that found t's guard taken (or events pending),
 * to be replayed by the hook that holds it. */
static CG_COLD void cg_guard_defer(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                   int enter)
{
    if (t->guard == CG_GUARD_RUNTIME || !t->costs.frames)
        return; /* the runtime's own work, or a sentinel: not the program's */
    struct cg_deferred *all = deferred_of(t);
    if (!all) {
        CG_COUNT(t->costs.lost);
        return;
    }
    /* slots reserved atomically: handlers nest */
    uint32_t i = __atomic_fetch_add(&t->ndeferred, 1, __ATOMIC_RELAXED);
    if (i >= CG_MAX_DEFERRED) {
        __atomic_fetch_sub(&t->ndeferred, 1, __ATOMIC_RELAXED);
        CG_COUNT(t->costs.lost); /* reported with the part: desc: Lost */
        return;
    }
    struct cg_deferred *d = &all[i];
    d->fn = fn;
    d->site = site;
    d->sp = sp;
    d->code = code;
    d->enter = enter;
    d->now = cg_guard_time(t);
}

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

/* One event applied to t's tables, the guard held: the general path of a
 * hook (resync: the shadow stack checked against sp first). */
static CG_INLINE void cg_general_apply(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
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

/* Replays the deferred events, in order; the caller holds the guard (more
 * may arrive meanwhile, from further signals). No re-synchronisation: the
 * events of a handler are nested in the interrupted context by
 * construction, and frames a siglongjmp left are found by the next hook. */
static void replay(struct cg_thread *t)
{
    CG_CHECK(t->guard == CG_GUARD_HOOK);
    uint32_t i = 0;
    for (;;) {
        uint32_t n = __atomic_load_n(&t->ndeferred, __ATOMIC_ACQUIRE);
        for (; i < n && i < CG_MAX_DEFERRED; i++) {
            const struct cg_deferred *d = &t->deferred[i];
            cg_general_apply(t, d->fn, d->site, d->sp, d->code, d->enter, d->now, 0);
        }
        if (__atomic_compare_exchange_n(&t->ndeferred, &n, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
}

void cg_guard_replay_late(struct cg_thread *t)
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

void cg_guard_abandon(struct cg_thread *t)
{
    CG_CHECK(t->guard == CG_GUARD_HOOK);
    CG_COUNT(t->costs.lost); /* the interrupted hook's event */
    cg_signal_fence();
    t->guard = 0;
    cg_signal_fence();
    cg_guard_replay_late(t);
}

/* Set by samplering.c (after this module in the layer: it charges with
 * sample.c, which takes the guard) when threads sample into ring buffers. */
int (*cg_general_drain_samples)(struct cg_thread *t);

void cg_general_hook_held(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                          int enter)
{
    /* the samples of the ring since the last hook (CGPROF_SAMPLE_TIMER=
     * ring: sampled time, which the off-CPU records below never share),
     * charged to the stack as it was then, and still is */
    int (*drain)(struct cg_thread *) = __atomic_load_n(&cg_general_drain_samples, __ATOMIC_ACQUIRE);
    if (drain && cg_costs_switched(&t->costs))
        drain(t);
    uint64_t now = cg_general_now(t, enter);
    /* the time the thread spent switched out since the last hook, as a
     * callee of the function running then (CGPROF_OFF_CPU) */
    if (cg_costs_switched(&t->costs))
        cg_offcpu_drain(t, now);
    cg_general_apply(t, fn, site, sp, code, enter, now, 1);
    cg_guard_release(t);
}

void cg_general_hook(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter)
{
    if (cg_guard_take(t, fn, site, sp, code, enter))
        cg_general_hook_held(t, fn, site, sp, code, enter);
}

void cg_general_throttle(struct cg_thread *t, uint32_t arc)
{
    struct cg_costs *c = &t->costs;
    int was = c->arcs[arc].state;
    cg_throttle_check(c, arc);
    /* The function's own enter taken back at once, from the frame just
     * popped (where its enter hook was called): its calls from any caller
     * stop coming, not only those of this arc. */
    uintptr_t code = c->frames[c->depth].code;
    if (!was && c->arcs[arc].state == CG_ARC_THROTTLED && code)
        cg_fold_take(t, c->arcs[arc].callee, code, 1, CG_TB_FILTERED);
    cg_guard_release(t);
}

void cg_hook_nonlocal(uint32_t depth, uintptr_t sp)
{
    struct cg_thread *t = cg_self;
    if (!t || (t->guard | t->ndeferred) || !cg_collecting || !t->costs.frames)
        return;
    int saved = errno;
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    uint64_t now = cg_guard_time(t);
    if (depth != UINT32_MAX)
        cg_costs_unwind_to(&t->costs, depth, now);
    else
        cg_costs_unwind_below(&t->costs, sp, now);
    cg_guard_release(t);
    errno = saved;
}
