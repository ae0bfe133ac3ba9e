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
#include "hooks.h"
#include "proc.h"
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
static CG_COLD void defer(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                          int enter)
{
    if (t->guard == CG_GUARD_RUNTIME || !t->costs.frames)
        return; /* the runtime's own work, or a sentinel: not the program's */
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
    d->code = code;
    d->enter = enter;
    d->now = cg_sampling ? t->vclock : cg_clock_now();
}

static CG_INLINE void apply(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                            int enter, uint64_t now, int resync)
{
    if (resync)
        cg_costs_resync(&t->costs, fn, site, sp, code, enter, now);
    if (enter)
        cg_costs_enter(&t->costs, fn, site, sp, code, now);
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
            apply(t, d->fn, d->site, d->sp, d->code, d->enter, d->now, 0);
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
static CG_INLINE struct cg_thread *hook_begin(uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter)
{
    struct cg_thread *t = cg_self;
    if (cg_unlikely(!t) && !(t = cg_thread_attach()))
        return NULL;
    /* Events pending (a handler that landed as a hook was ending): this one
     * waits its turn behind them, so that the order is kept. */
    if (cg_unlikely(t->guard | t->ndeferred | !cg_collecting)) {
        if (cg_collecting)
            defer(t, fn, site, sp, code, enter);
        return NULL;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    return t;
}

/* Releases the guard, then replays what signal handlers deferred
 * meanwhile (replay_late takes the guard again, and releases it only with
 * nothing pending). A handler that lands between the two sees the events
 * pending and defers its own behind them, so the order is kept. */
static CG_INLINE void hook_end(struct cg_thread *t)
{
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

void cg_hook_nonlocal(uint32_t depth, uintptr_t sp)
{
    struct cg_thread *t = cg_self;
    if (!t || (t->guard | t->ndeferred) || !cg_collecting || !t->costs.frames)
        return;
    int saved = errno;
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    uint64_t now = cg_sampling ? t->vclock : cg_clock_now();
    if (depth != UINT32_MAX)
        cg_costs_unwind_to(&t->costs, depth, now);
    else
        cg_costs_unwind_below(&t->costs, sp, now);
    hook_end(t);
    errno = saved;
}

/* ---- the hooks ---------------------------------------------------------
 * Each hook is a fast path for the common case and a general one for the
 * rest. The fast path calls nothing and needs no frame pointer, so that it
 * saves few registers (two, against six and a frame pointer when the
 * general path was inlined in it). It checks everything that could send
 * it elsewhere before it changes anything, and goes on to the general path
 * (tail calls, with the guard it took) at the first thing out of the
 * ordinary: the thread's first hook, a pending deferred event, the
 * monotonic clock, an empty stack, a stack to re-synchronise or to grow, a
 * new arc, a filter. */

/* The general path of a hook, the guard taken. */
static CG_COLD void general_guarded(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                    int enter)
{
    apply(t, fn, site, sp, code, enter, thread_now(t), 1);
    hook_end(t);
}

/* The general path from the start: no thread state yet, or the hook must
 * wait or do nothing (see hook_begin). */
static CG_COLD void hook_general(uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter)
{
    struct cg_thread *t = hook_begin(fn, site, sp, code, enter);
    if (t)
        general_guarded(t, fn, site, sp, code, enter);
}

/* An exit whose arc reached CGPROF_THROTTLE's count: the check, then the
 * end of the hook. */
static CG_COLD void exit_throttle(struct cg_thread *t, uint32_t arc)
{
    cg_throttle_check(&t->costs, arc);
    hook_end(t);
}

/* Where the hook's caller's stack pointer was before its call: the frames'
 * sp, compared across hooks (cg_costs_resync) and with a hook called from
 * the same frame (inlined calls, cg_resync_slow). The call frame address
 * needs no frame pointer, unlike __builtin_frame_address. */
static CG_INLINE uintptr_t hook_sp(void)
{
    return (uintptr_t)__builtin_dwarf_cfa();
}

/* The fast path's clock (sampled or the TSC), and the self time of the
 * segment that ends now charged to frame f's running self entry.
 *  - TSC: never before the segment's start (a thread that migrates to a
 *    core whose TSC lags must not make a negative duration).
 *  - sampled: the clock moves a thousand times a second, so most segments
 *    are empty: one well-predicted test instead of the charge, and the
 *    clock never steps back. */
static CG_INLINE uint64_t fast_now_charge(struct cg_thread *t, struct cg_frame *f, const int sampled)
{
    uint64_t now;
    if (sampled) {
        t->nhooks++;
        now = t->vclock;
        if (cg_unlikely(now != f->t_last))
            t->costs.selfs[f->self].cost += now - f->t_last;
        return now;
    }
#if CG_HAVE_TSC
    now = cg_tsc_to_ns(__rdtsc());
#else
    now = 0; /* not reached: no CG_FAST_TSC without a TSC */
#endif
    if (cg_unlikely(now < f->t_last))
        now = f->t_last;
    t->costs.selfs[f->self].cost += now - f->t_last;
    return now;
}

/* The fast paths proper, the guard held: 1 when the hook is done, 0 when
 * the general path must take it (nothing changed yet). Their second halves
 * are cg_costs_enter's and cg_costs_pop's, specialised (no skip, no empty
 * TSC segment, the frame and arc already at hand): written with those
 * functions' pieces shared, gcc kept four registers instead of two and the
 * hooks made 8% more instructions (callgrind, the benchmark's workload). Inlined twice into
 * each hook, once per clock, so that neither tests the mode again. sp is
 * the hook's hook_sp(). */
static CG_INLINE int enter_fast(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, const int sampled)
{
    struct cg_costs *c = &t->costs;
    uint32_t d = c->depth;
    if (cg_unlikely(d == 0 || d == c->frame_cap))
        return 0;
    /* cg_costs_resync's test for an entry: a real call's frame is below
     * its caller's. At the same sp is an inlined call, whose arc is keyed
     * by where its enter hook was called (the hook's return address: read
     * only here). The same inlined call entered again (its first frame on
     * top, never ended: cg_resync_slow) has no arc here, from its own
     * frame at its own place: it goes to the general path. */
    struct cg_frame *top = &c->frames[d - 1];
    uintptr_t key = site;
    if (cg_unlikely(top->sp <= sp)) {
        if (top->sp != sp)
            return 0;
        key = (uintptr_t)__builtin_return_address(0);
    }
    /* The arc, by key and callee first: few values live through the
     * probes, no callee-saved register to spill. The caller, which the key
     * all but decides, is checked after. */
    uint32_t arc;
    for (uint32_t i = (uint32_t)cg_arc_hash(0, key, fn);; i++) {
        arc = c->arc_index[i & c->arc_mask];
        if (cg_unlikely(arc == 0))
            return 0;
        const struct cg_arc *a = &c->arcs[arc];
        if (a->site == key && a->callee == fn)
            break;
    }
    struct cg_arc *a = &c->arcs[arc];
    /* The frame again, rather than kept through the probes (two registers
     * saved and restored: more than two loads from L1). Relaxed atomics:
     * only so that the compiler does not reuse the values read above. */
    d = __atomic_load_n(&c->depth, __ATOMIC_RELAXED);
    top = &__atomic_load_n(&c->frames, __ATOMIC_RELAXED)[d - 1];
    /* A caller that is not the top frame (another arc of this key and
     * callee: a frame left out calls through its arc's caller); an arc left
     * out */
    if (cg_unlikely(top->skip || a->caller != top->fn || a->skip))
        return 0;
    /* from here on as cg_costs_enter */
    uint64_t now = fast_now_charge(t, top, sampled);
    if (top->last_arc != arc) {
        top->last_arc = arc;
        a->runs++;
    }
    struct cg_frame *f = top + 1;
    f->fn = fn;
    f->sp = sp;
    f->t_enter = now;
    f->t_last = now;
    f->arc = arc;
    f->self = a->entry_self;
    f->last_arc = CG_SINK;
    f->skip = CG_ARC_COUNTED;
    __atomic_store_n(&c->depth, d + 1, __ATOMIC_RELEASE);
    return 1;
}

/* The same for an exit; 2: done, and the arc popped (the frame just above
 * the stack) reached CGPROF_THROTTLE's count. */
static CG_INLINE int exit_fast(struct cg_thread *t, uintptr_t fn, const int sampled)
{
    struct cg_costs *c = &t->costs;
    uint32_t d = c->depth;
    /* the top frame is fn's: no re-synchronisation (cg_costs_resync), no
     * mismatch (cg_costs_exit) */
    if (cg_unlikely(d == 0 || c->overflow))
        return 0;
    struct cg_frame *f = &c->frames[d - 1];
    if (cg_unlikely(f->fn != fn || f->skip))
        return 0;
    /* from here on as cg_costs_pop */
    uint64_t now = fast_now_charge(t, f, sampled);
    struct cg_arc *a = &c->arcs[f->arc];
    uint64_t count = a->count + 1;
    a->count = count;
    a->incl += now - f->t_enter;
    __atomic_store_n(&c->depth, d - 1, __ATOMIC_RELEASE);
    if (cg_likely(d > 1)) {
        f[-1].t_last = now;
        f[-1].self = a->ret_self;
    }
    /* the check is a call: made outside, by exit_throttle */
    return cg_unlikely(count == c->throttle_n) ? 2 : 1;
}

CG_HOT void __cyg_profile_func_enter(void *fn_, void *site_)
{
    uintptr_t fn = (uintptr_t)fn_, site = (uintptr_t)site_;
    struct cg_thread *t = cg_self;
    int mode = cg_fast_mode;
    if (cg_unlikely(!t || (t->guard | t->ndeferred) || mode == CG_FAST_NONE)) {
        hook_general(fn, site, hook_sp(), (uintptr_t)__builtin_return_address(0), 1);
        return;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    if (cg_likely(mode == CG_FAST_TSC ? enter_fast(t, fn, site, hook_sp(), 0) : enter_fast(t, fn, site, hook_sp(), 1)))
        hook_end(t);
    else
        general_guarded(t, fn, site, hook_sp(), (uintptr_t)__builtin_return_address(0), 1);
}

CG_HOT void __cyg_profile_func_exit(void *fn_, void *site_)
{
    uintptr_t fn = (uintptr_t)fn_, site = (uintptr_t)site_;
    struct cg_thread *t = cg_self;
    int mode = cg_fast_mode;
    if (cg_unlikely(!t || (t->guard | t->ndeferred) || mode == CG_FAST_NONE)) {
        hook_general(fn, site, hook_sp(), (uintptr_t)__builtin_return_address(0), 0);
        return;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    int r = mode == CG_FAST_TSC ? exit_fast(t, fn, 0) : exit_fast(t, fn, 1);
    if (cg_likely(r == 1))
        hook_end(t);
    else if (r == 2)
        exit_throttle(t, t->costs.frames[t->costs.depth].arc);
    else
        general_guarded(t, fn, site, hook_sp(), (uintptr_t)__builtin_return_address(0), 0);
}
