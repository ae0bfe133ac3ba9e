/* The hooks' bodies (thread layer): a fast path for the common case and the
 * general one (generalpath.h) for the rest, as inline functions of the
 * thread, the hook's arguments, its stack pointer and return address, and
 * the clock's mode, so that the unit tests run them as the hooks do
 * (tests/unit/test_fastpath.c compares the two paths on random event
 * sequences).
 *
 * The fast path calls nothing and needs no frame pointer, so that it
 * saves few registers (two, against six and a frame pointer when the
 * general path was inlined in it). It checks everything that could send
 * it elsewhere before it changes anything, and goes on to the general path
 * (tail calls, with the guard it took) at the first thing out of the
 * ordinary: the thread's first hook, a pending deferred event, the
 * monotonic clock, an empty stack, a stack to re-synchronise or to grow, a
 * new arc, a filter. Its second halves are cg_costs_enter's and
 * cg_costs_pop's, specialised (no call left out, no empty TSC segment, the
 * frame and arc already at hand): written with those functions' pieces
 * shared, gcc kept four registers instead of two and the hooks made 8% more
 * instructions (callgrind, the benchmark's workload). */
#ifndef CG_FASTPATH_H
#define CG_FASTPATH_H

#include <stdint.h>

#include "clock.h"
#include "compiler.h"
#include "costs.h"
#include "counting.h"
#include "cpu.h"
#include "generalpath.h"
#include "proc.h"
#include "thread.h"

/* The hook's return address (the place of an inlined call's hook, and
 * where the general path is told the hook was called from). Read where it
 * is used, with __builtin_return_address, which in an always-inline
 * function gives the hook's own: an argument read at the hook's start had
 * to be loaded before the guard's store (the compiler cannot tell that the
 * store does not change the stack slot) and kept in a register all along,
 * two more saved registers per hook. The unit tests, which give the bodies
 * return addresses of their own, define CG_FAST_RET(ret) as ret. */
#ifndef CG_FAST_RET
#define CG_FAST_RET(ret) ((void)(ret), (uintptr_t)__builtin_return_address(0))
#endif
/* The same for the hook's call frame address (where its caller's stack
 * pointer was before the call): computed where used, as the hooks did,
 * rather than once at the start and kept in a register (cpu.h's
 * CG_CPU_CFA: __builtin_dwarf_cfa, but for clang on aarch64). */
#ifndef CG_FAST_SP
#define CG_FAST_SP(sp) ((void)(sp), CG_CPU_CFA())
#endif

/* The fast path's clock (sampled or the TSC), and the self time of the
 * segment that ends now charged to frame f's running self entry.
 *  - TSC: never before the segment's start (a thread that migrates to a
 *    core whose TSC lags must not make a negative duration).
 *  - sampled: the clock moves a thousand times a second, so most segments
 *    are empty: one well-predicted test instead of the charge, and the
 *    clock never steps back. */
static CG_INLINE uint64_t cg_fast_now_charge(struct cg_thread *t, struct cg_frame *f, const int sampled,
                                             const int enter)
{
    uint64_t now;
    if (sampled) {
        t->nhooks++;
        now = t->vclock;
        if (cg_unlikely(now != f->t_last)) {
            t->costs.selfs[f->self].cost += now - f->t_last;
            if (t->costs.nodes)
                t->costs.nodes[f->node].self += now - f->t_last;
        }
        return now;
    }
#if CG_HAVE_TSC
    uint64_t raw = cg_tsc_to_ns(cg_cpu_counter());
#else
    uint64_t raw = 0; /* not reached: no CG_FAST_TSC without a TSC */
#endif
    /* the clock less the hooks' own time (overhead compensation; all zero
     * when off), with the fast path's figures */
    struct cg_costs *c = &t->costs;
    now = cg_costs_comp_time(c, raw, f->t_last, c->comp_pre[enter], c->comp_post[enter]);
    t->costs.selfs[f->self].cost += now - f->t_last;
    if (t->costs.nodes)
        t->costs.nodes[f->node].self += now - f->t_last;
    return now;
}

/* The arc of (key, callee), whatever its caller, or 0: the fast path's
 * probe of the arcs' index (cg_arc_find's, without the caller). */
static CG_INLINE uint32_t cg_fast_probe(const struct cg_costs *c, uintptr_t key, uintptr_t fn)
{
    for (uint32_t i = (uint32_t)cg_arc_hash(key, fn);; i++) {
        uint32_t arc = c->arc_index[i & c->arc_mask];
        if (cg_unlikely(arc == 0))
            return 0;
        const struct cg_arc *a = &c->arcs[arc];
        if (a->site == key && a->callee == fn)
            return arc;
    }
}

/* An entry, the guard held: 1 when done, 0 when the general path must take
 * it (nothing changed yet). sp: the hook's call frame address; ret: its
 * return address (see CG_FAST_RET), read only for an inlined call. Inlined twice into each
 * hook, once per clock, so that neither tests the mode again. */
static CG_INLINE int cg_fast_enter(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t ret,
                                   const int sampled)
{
    struct cg_costs *c = &t->costs;
    uint32_t d = c->depth;
    if (cg_unlikely(d == 0 || d == c->frame_cap))
        return 0;
    /* the thread was switched out since the last hook (CGPROF_OFF_CPU) */
    if (cg_costs_switched(c))
        return 0;
    /* cg_costs_resync's test for an entry: a real call's frame is below
     * its caller's. At the same sp is an inlined call, whose arc is keyed
     * by where its enter hook was called (the hook's return address). The
     * same inlined call entered again (its first frame on top, never ended:
     * cg_resync_slow) has no arc here, from its own frame at its own
     * place: it goes to the general path. */
    struct cg_frame *top = &c->frames[d - 1];
    uintptr_t key = site;
    if (cg_unlikely(top->sp <= sp)) {
        if (top->sp != sp)
            return 0;
        key = CG_FAST_RET(ret);
        /* cg_resync_slow pops frames at sp that this call shows left: not
         * inlined into them (another host's call site: they share the
         * top's), or the same inlined call entered again (its place
         * theirs; they are few, the host and the calls inlined into it) */
        if (cg_unlikely(site != top->host_site))
            return 0;
        for (const struct cg_frame *g = top;; g--) {
            if (cg_unlikely(g->code == key))
                return 0;
            if (g == c->frames || g[-1].sp != sp)
                break;
        }
    }
    /* The arc, by key and callee first: few values live through the
     * probes, no callee-saved register to spill. The caller, which the key
     * all but decides, is checked after. A miss goes to the general path:
     * among others, a call inlined into a part of its host's code that has
     * a frame of its own (gcc's fn.part.0), whose arc is keyed by its place
     * (CG_INLINED_BELOW). Tried here too, that case kept site, sp and ret
     * alive through the probes: 110 ns a call against 82 (scripts/bench). */
    uint32_t arc = cg_fast_probe(c, key, fn);
    if (cg_unlikely(arc == 0))
        return 0;
    struct cg_arc *a = &c->arcs[arc];
    CG_CHECK(arc < c->narcs && a->entry_self < c->nselfs);
    /* The frame again, rather than kept through the probes (two registers
     * saved and restored: more than two loads from L1). Relaxed atomics:
     * only so that the compiler does not reuse the values read above. */
    d = __atomic_load_n(&c->depth, __ATOMIC_RELAXED);
    top = &__atomic_load_n(&c->frames, __ATOMIC_RELAXED)[d - 1];
    /* The host's own call site, below the host's frame: a call inlined
     * while the host had arguments pushed, or into a host whose frame grew
     * after its enter hook (a variable-length array: jq's jv_load_file), or
     * a recursion from the instruction that made the host's call. The
     * general path tells them apart (fold.c, inlined_below); what it judged
     * a real recursion before, half of a recursive function's calls
     * (fib's), is taken here by its two tests: the enter hook is called at
     * the place the real arc keeps (code_off), fn's own enter, which no
     * inlined copy's hook call shares (the unwind tables' rule), and the
     * call's return address is on the stack above its frame (the
     * stack-pointer rule). Tested after the probe, with the frame read
     * again: before it, the values kept through it made every call dearer
     * (5 instructions a call, callgrind on tests/bench/workload). */
    if (cg_unlikely(top->sp > sp && site == top->host_site) &&
        (a->inlined || cg_arc_own_code(a, fn) != CG_FAST_RET(ret) || !cg_return_address_above(site, sp, top->sp)))
        return 0;
    /* A caller that is not the top frame (another arc of this key and
     * callee: a frame left out calls through its arc's caller); an arc left
     * out */
    if (cg_unlikely(top->state || a->caller != top->fn || a->state)) {
        /* a call that keeps no frame (fold.h): no frame, no segment
         * ended; only the hook's own time counted, as the general path
         * does (cg_general_now) */
        if (a->state >= CG_ARC_DROPPED && a->caller == top->fn && !top->state) {
            cg_costs_count(&c->inlined_calls, a->state == CG_ARC_FOLDED);
            /* a copy of the top frame's own function inlined into it: its
             * exit will be one of the same function, dropped by the count */
            top->folded_self += a->state == CG_ARC_FOLDED && fn == top->fn;
            if (sampled) {
                t->nhooks++;
            } else {
#if CG_HAVE_TSC
                cg_costs_comp_time(c, cg_tsc_to_ns(cg_cpu_counter()), top->t_last, c->comp_pre[1], c->comp_post[1]);
#endif
            }
            return 1;
        }
        return 0;
    }
    /* The path's node (CGPROF_PATHS), found before anything changes: a new
     * one is made by the general path. */
    uint32_t node = 0;
    if (c->nodes) {
        for (uint32_t i = (uint32_t)cg_node_hash(top->node, fn);; i++) {
            const struct cg_node_slot *s = &c->node_index[i & c->node_mask];
            if (cg_likely(s->fn == fn && s->parent == top->node)) {
                node = s->node;
                break;
            }
            if (cg_unlikely(s->node == 0))
                return 0;
        }
    }
    /* from here on as cg_costs_enter */
    uint64_t now = cg_fast_now_charge(t, top, sampled, 1);
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
    f->state = CG_ARC_COUNTED;
    if (key == site) { /* a real call */
        f->host_site = site;
        f->code = cg_arc_own_code(a, fn);
    } else {
        /* an inlined call: the site its hooks are given is its host's (at
         * the top frame's sp, checked above), or that of the part of its
         * host's code that it runs in */
        f->host_site = site;
        f->code = key;
    }
    f->node = node;
    f->folded_self = 0;
    if (c->nodes)
        cg_node_enter(c, node);
    __atomic_store_n(&c->depth, d + 1, __ATOMIC_RELEASE);
    return 1;
}

/* The same for an exit; 2: done, and the arc popped (the frame just above
 * the stack) reached CGPROF_THROTTLE's count. */
static CG_INLINE int cg_fast_exit(struct cg_thread *t, uintptr_t fn, const int sampled)
{
    struct cg_costs *c = &t->costs;
    uint32_t d = c->depth;
    /* the top frame is fn's: no re-synchronisation (cg_costs_resync), no
     * mismatch (cg_costs_exit) */
    if (cg_unlikely(d == 0 || c->overflow))
        return 0;
    if (cg_costs_switched(c))
        return 0;
    struct cg_frame *f = &c->frames[d - 1];
    if (cg_unlikely(f->fn != fn || f->state || f->folded_self))
        return 0;
    /* from here on as cg_costs_pop */
    CG_CHECK(f->arc < c->narcs && f->self < c->nselfs);
    uint64_t now = cg_fast_now_charge(t, f, sampled, 0);
    struct cg_arc *a = &c->arcs[f->arc];
    if (cg_likely(d > 1)) {
        f[-1].t_last = now;
        f[-1].self = a->ret_self;
    }
    /* unpublished, then counted, then timed: see cg_costs_pop */
    uint64_t count = a->count + 1;
    __atomic_store_n(&c->depth, d - 1, __ATOMIC_RELEASE);
    __atomic_store_n(&a->count, count, __ATOMIC_RELEASE);
    __atomic_store_n(&a->incl, a->incl + (now - f->t_enter), __ATOMIC_RELEASE);
    if (c->lat)
        cg_lat_add(c, f->arc, now - f->t_enter);
    if (c->nodes)
        cg_node_exit(c, f->node, f->t_enter, now);
    /* the check is a call: made outside, by cg_general_throttle */
    return cg_unlikely(cg_throttle_due(c, count)) ? 2 : 1;
}

/* What a hook does when it cannot take the fast path at once: no thread
 * state yet (t NULL), a guard taken or events pending, or the monotonic
 * clock (mode CG_FAST_NONE). The hooks pass a function that makes the
 * thread's state on its first hook; the unit tests, cg_general_hook. A
 * constant after inlining: a direct call. */
typedef void (*cg_hook_slow_fn)(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                int enter);

/* The body of __cyg_profile_func_enter on thread t (cg_self), fast mode
 * mode (cg_fast_mode). */
static CG_INLINE void cg_hook_enter_body(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                         uintptr_t ret, int mode, cg_hook_slow_fn slow)
{
    if (cg_unlikely(!t || (t->guard | t->ndeferred) || mode == CG_FAST_NONE)) {
        slow(t, fn, site, CG_FAST_SP(sp), CG_FAST_RET(ret), 1);
        return;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    if (cg_likely(mode == CG_FAST_TSC ? cg_fast_enter(t, fn, site, CG_FAST_SP(sp), ret, 0)
                                      : cg_fast_enter(t, fn, site, CG_FAST_SP(sp), ret, 1)))
        cg_guard_release(t);
    else
        cg_general_hook_held(t, fn, site, CG_FAST_SP(sp), CG_FAST_RET(ret), 1);
}

/* The body of __cyg_profile_func_exit. */
static CG_INLINE void cg_hook_exit_body(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                        uintptr_t ret, int mode, cg_hook_slow_fn slow)
{
    if (cg_unlikely(!t || (t->guard | t->ndeferred) || mode == CG_FAST_NONE)) {
        slow(t, fn, site, CG_FAST_SP(sp), CG_FAST_RET(ret), 0);
        return;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    int r = mode == CG_FAST_TSC ? cg_fast_exit(t, fn, 0) : cg_fast_exit(t, fn, 1);
    if (cg_likely(r == 1))
        cg_guard_release(t);
    else if (r == 2)
        cg_general_throttle(t, t->costs.frames[t->costs.depth].arc);
    else
        cg_general_hook_held(t, fn, site, CG_FAST_SP(sp), CG_FAST_RET(ret), 0);
}

/* The rest of the hooks' text, shared by the exported hooks (hooks.c) and
 * the calibration's twin (calib_hooks.c), so that the calibration measures
 * the hooks' own code: each file writes its enter and exit hooks the same
 * way around cg_hook_enter_body and cg_hook_exit_body, with its own
 * general path (cg_hook_slow_fn: the thread's first hook, then
 * cg_hook_slow) and counting enter hook (cg_hook_count_enter). */

/* The counting enter hook's body, in a function of its own (noinline) that
 * the enter hook jumps to: count_slow makes the thread's state on its first
 * hook, as slow does. */
typedef void (*cg_hook_count_slow_fn)(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t code,
                                      uintptr_t sp);
static CG_INLINE void cg_hook_count_enter(void *fn, void *site, cg_hook_count_slow_fn count_slow)
{
    cg_count_enter(cg_self, (uintptr_t)fn, (uintptr_t)site, CG_FAST_RET(0), count_slow);
}

/* A hook's general path once the thread's state is there (slow's, after
 * the thread's first hook started the runtime and made it): the counting
 * hooks' (their exit does nothing), or cg_general_hook. */
static CG_INLINE void cg_hook_slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                   int enter)
{
    if (cg_fast_mode == CG_FAST_COUNT) { /* the counting hooks: the exit does nothing */
        if (enter)
            cg_count_slow(t, fn, site, code, sp);
        return;
    }
    cg_general_hook(t, fn, site, sp, code, enter);
}

#endif
