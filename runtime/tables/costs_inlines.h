/* The cost tables' inline paths (data layer): what a hook does to its
 * thread's tables, written inline so that the hooks' fast path
 * (fastpath.h) and their general path (generalpath.h) compile to straight
 * code: the arc's lookup, a frame pushed (cg_costs_enter_as) and popped
 * (cg_costs_pop, cg_costs_exit), the stack checked against the real one
 * (cg_costs_resync), the self time charged, the overhead compensation's
 * clock, call paths' nodes. What they do out of line (a new arc, a stack to
 * grow or repair) is costs_externs.h's. */
#ifndef CG_COSTS_INLINES_H
#define CG_COSTS_INLINES_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "costs_externs.h"
#include "latency.h"
#include "util.h"

/* The hash of a counting hooks' slot (struct cg_count_slot): its enter
 * hook's return address and call site. */
static CG_INLINE uint64_t cg_count_hash(uintptr_t ret, uintptr_t site)
{
    return ((uint64_t)ret * 0x9e3779b97f4a7c15ull ^ (uint64_t)site * 0xff51afd7ed558ccdull) >> 32;
}

/* A call of arc `arc` that took d ns ended: counted in its latency row
 * (latency.h). */
static CG_INLINE void cg_lat_add(struct cg_costs *c, uint32_t arc, uint64_t d)
{
    uint64_t *row = c->lat + (size_t)arc * CG_LAT_ROW;
    unsigned i = cg_lat_bucket(d);
    __atomic_store_n(&row[i], row[i] + 1, __ATOMIC_RELAXED);
    if (cg_unlikely(d > row[CG_LAT_MAX]))
        __atomic_store_n(&row[CG_LAT_MAX], d, __ATOMIC_RELAXED);
}

/* One more on a counter of c that a dump reads meanwhile (inlined_calls,
 * frameless_exits): stored whole. */
static inline void cg_costs_count(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

/* ---- call paths ---------------------------------------------------------- */

static CG_INLINE uint64_t cg_node_hash(uint32_t parent, uintptr_t fn)
{
    return cg_hash2(fn, parent);
}

static CG_INLINE uint32_t cg_node_find(struct cg_costs *c, uint32_t parent, uintptr_t fn)
{
    for (uint32_t i = (uint32_t)cg_node_hash(parent, fn);; i++) {
        const struct cg_node_slot *s = &c->node_index[i & c->node_mask];
        if (cg_likely(s->fn == fn && s->parent == parent))
            return s->node;
        if (s->node == 0)
            return cg_node_find_slow(c, parent, fn);
    }
}

/* A frame of node n begins (not a call left out). */
static CG_INLINE void cg_node_enter(struct cg_costs *c, uint32_t n)
{
    c->nodes[n].active++;
}

/* A frame of node n entered at t_enter ends at now: its call counted, and
 * its time if it was the node's outermost frame. The same order of stores
 * as an arc's (cg_costs_pop). */
static CG_INLINE void cg_node_exit(struct cg_costs *c, uint32_t n, uint64_t t_enter, uint64_t now)
{
    struct cg_node *node = &c->nodes[n];
    __atomic_store_n(&node->calls, node->calls + 1, __ATOMIC_RELEASE);
    if (--node->active == 0)
        __atomic_store_n(&node->incl, node->incl + (now - t_enter), __ATOMIC_RELEASE);
}

/* Whether the thread was switched out since its last hook (CGPROF_OFF_CPU:
 * its ring's head moved; false when off): then its general path drains the
 * records (offcpu.h). */
static CG_INLINE int cg_costs_switched(const struct cg_costs *c)
{
    const volatile uint64_t *const volatile *slot = c->switch_head;
    if (cg_likely(slot == NULL))
        return 0;
    const volatile uint64_t *head = *slot;
    return head != NULL && *head != c->switch_seen;
}

/* ---- overhead compensation -------------------------------------------------- */

/* The time of a hook whose clock read raw (ns), compensated (see comp),
 * the hook's parts before and after its reading being pre and post: never
 * before floor (the top frame's last time), the overhead given back when it
 * would be (a segment never goes below zero: what is subtracted from it is
 * at most what it measured). */
static CG_INLINE uint64_t cg_costs_comp_time(struct cg_costs *c, uint64_t raw, uint64_t floor, uint32_t pre,
                                             uint32_t post)
{
    uint64_t was = c->comp, comp = was + c->comp_pending + pre;
    c->comp_pending = post;
    /* The segment since floor, less the overhead, at least zero (the
     * excess given back): a conditional move, not a branch. A segment of a
     * tiny function comes out below zero about as often as not (half the
     * segments of fib), where a branch mispredicted cost more than the
     * whole compensation (6.5 ns a call on tests/bench/workload, against
     * 1 ns, measured). */
    int64_t seg = (int64_t)(raw - comp - floor);
    uint64_t now = floor + (uint64_t)(seg > 0 ? seg : 0);
    comp = raw - now;
    if (cg_unlikely(raw < floor)) /* a TSC that stepped back: none taken */
        comp = was;
    __atomic_store_n(&c->comp, comp, __ATOMIC_RELAXED);
    return now;
}

/* The same for a hook of the general path (enter: 1 for an enter hook, 0
 * for an exit); the fast path's calls cg_costs_comp_time with its own
 * figures and the top frame at hand. */
static CG_INLINE uint64_t cg_costs_hook_time(struct cg_costs *c, uint64_t raw, int enter)
{
    uint64_t floor = c->depth ? c->frames[c->depth - 1].t_last : 0;
    return cg_costs_comp_time(c, raw, floor, c->comp_gpre[enter], c->comp_gpost[enter]);
}

/* The thread's compensated time now, for what is not a hook (a dump, the
 * thread's end, a longjmp): the clock less the overhead so far. */
static CG_INLINE uint64_t cg_costs_time_of(const struct cg_costs *c, uint64_t raw)
{
    uint64_t comp = __atomic_load_n(&c->comp, __ATOMIC_RELAXED);
    return raw > comp ? raw - comp : raw;
}

/* Re-synchronises the shadow stack with the real one before a hook whose
 * own frame is at sp (the stack grows down), called from the instrumented
 * code at `code` (the hook's return address). What the hooks see
 * (docs/internals/design.md, "Calls as the hooks see them"):
 *  - a real call's enter hook runs in the callee's frame, below its
 *    caller's: its sp is lower than every live frame's;
 *  - a function inlined into another keeps its hooks (gcc and clang at -O2),
 *    called from the host's code, in the host's frame (the same sp) and
 *    with the host's own call site (the host's return address).
 * So when a function is entered, a frame below sp was left without its exit
 * hook (a longjmp or exception that the runtime did not see end it) and is
 * popped as ending now; a frame at sp is the host of an inlined call (or an
 * inlined call in it), and is kept unless shown to be left (cg_resync_slow).
 * When fn exits, a top frame of fn is the one exiting: at -O2 the exit hook
 * may be a tail call, made after the frame is gone, from above it; only
 * frames of other functions below sp are stale. */
static CG_INLINE void cg_costs_resync(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                      uintptr_t code, int entering, uint64_t now)
{
    if (cg_unlikely(c->depth > 0)) {
        const struct cg_frame *top = &c->frames[c->depth - 1];
        if (cg_unlikely(entering ? top->sp <= sp : top->sp < sp && top->fn != fn))
            cg_resync_slow(c, fn, site, sp, code, entering, now);
    }
}

/* The hash of an arc (caller, site, callee), of its site and callee: the
 * caller is left out, since the call site, an address inside the caller,
 * all but decides it (two callers share a (site, callee) only through a
 * frame left out, which calls through its caller), and two multiplies
 * that run side by side are all the hot path pays. The lookups still
 * compare the caller, and whether the call is inlined: a function inlined
 * into itself (recursion, at -O2) makes, from the same call site, both a
 * real call of itself and, inside that callee, inlined calls whose hooks
 * get the callee's return address, the same site. */
static CG_INLINE uint64_t cg_arc_hash(uintptr_t site, uintptr_t callee)
{
    return cg_hash2(site, callee);
}

/* The arc of a call: site is the call site, or for an inlined call the
 * code that called its enter hook (struct cg_arc); code, for a new real
 * arc, where its enter hook was called. */
static CG_INLINE uint32_t cg_arc_find(struct cg_costs *c, uintptr_t caller, uintptr_t site,
                                          uintptr_t callee, int inlined, uintptr_t code)
{
    uint64_t h = cg_arc_hash(site, callee);
    for (uint32_t i = (uint32_t)h;; i++) {
        uint32_t slot = c->arc_index[i & c->arc_mask];
        if (slot == 0)
            return cg_arc_find_slow(c, caller, site, callee, inlined, code);
        const struct cg_arc *a = &c->arcs[slot];
        if (a->site == site && a->callee == callee && a->caller == caller)
            return slot;
    }
}

/* The call site of the function whose code frame i runs in (its host: the
 * first frame under it that is not an inlined call), which the hooks of a
 * call inlined into it are given; 0 if not known. */
static CG_INLINE uintptr_t cg_host_site(const struct cg_costs *c, uint32_t i)
{
    return c->frames[i].host_site;
}

/* Where fn's own enter hook is called, for a real call of fn on arc a: its
 * code_off from fn; 0 when not known. */
static CG_INLINE uintptr_t cg_arc_own_code(const struct cg_arc *a, uintptr_t fn)
{
    return a->code_off == CG_NO_CODE ? 0 : fn + (uintptr_t)(intptr_t)a->code_off;
}

/* Where the enter hook of a frame of fn on arc `arc` was called: for an
 * inlined call its arc's site, for a real one cg_arc_own_code; 0 when not
 * known. */
static CG_INLINE uintptr_t cg_arc_code(const struct cg_costs *c, uint32_t arc, uintptr_t fn)
{
    const struct cg_arc *a = &c->arcs[arc];
    if (arc == CG_SINK)
        return 0;
    if (a->inlined)
        return a->site;
    return cg_arc_own_code(a, fn);
}

/* The same for frame f, as it was pushed. */
static CG_INLINE uintptr_t cg_frame_code(const struct cg_frame *f)
{
    return f->code;
}

/* cg_real_call_below's test, for the top frame's sp top (the fast path's
 * too): the return address site on the stack between sp and top, or the
 * call too far below to be an inlined one. Words of the stack that were
 * never written (padding) are read too: valgrind's memcheck says so
 * (runtime/cgprof.supp), harmlessly. */
static CG_INLINE int cg_return_address_above(uintptr_t site, uintptr_t sp, uintptr_t top)
{
    if (top - sp > CG_INLINED_REACH)
        return 1;
    for (const uintptr_t *w = (const uintptr_t *)sp; (uintptr_t)w < top; w++)
        if (*w == site)
            return 1;
    return 0;
}

/* Function entry at time `now` (ns), its enter hook called from `code` with
 * its frame at sp: closes the caller's running self segment, pushes a frame.
 * After cg_costs_resync, the call is inlined into the top frame (or its
 * host) when its frame is at the top frame's sp, or below it with the
 * host's own call site and no return address of its own
 * (cg_real_call_below), or when inlined_below says so: below the top
 * frame, in code that is not the function's own machine function (the
 * unwind tables', fold.c): a call inlined into a part of the host's code
 * that has a frame of its own (gcc's fn.part.0), or into a host whose
 * frame grew after its enter hook (alloca, a variable-length array). Its
 * arc is keyed by its place, as an inlined call's; its frame's host site is
 * the call site its hooks are given (the part's return address). */
static CG_INLINE void cg_costs_enter_as(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                        uintptr_t code, uint64_t now, int inlined_below)
{
    uintptr_t caller = 0, host_site = site;
    struct cg_frame *top = NULL;
    int inlined = 0;
    if (cg_likely(c->depth > 0)) {
        top = &c->frames[c->depth - 1];
        /* never before the last time of this thread: a clock a little
         * behind (another core's TSC) must not make negative durations */
        if (cg_unlikely(now < top->t_last))
            now = top->t_last;
        /* Sampled time moves a thousand times a second: most segments are
         * empty, and their self entries need not be written. */
        if (now != top->t_last) {
            c->selfs[top->self].cost += now - top->t_last;
            if (c->nodes)
                c->nodes[top->node].self += now - top->t_last;
        }
        caller = top->fn;
        inlined = top->sp == sp || (top->sp > sp && cg_unlikely(site == cg_host_site(c, c->depth - 1)) &&
                                    !cg_real_call_below(c, site, sp));
        if (inlined)
            host_site = top->host_site;
        else if (cg_unlikely(inlined_below && top->sp > sp))
            inlined = CG_INLINED_BELOW;
        if (cg_unlikely(top->state)) {
            /* made by the caller that the frame left out runs for */
            caller = c->arcs[top->arc].caller;
            site = c->arcs[top->arc].site;
        }
    }
    uint32_t arc = cg_arc_find(c, caller, inlined ? code : site, fn, inlined, code);
    CG_CHECK(arc < c->narcs); /* 0: the sink */
    if (top && top->last_arc != arc) {
        top->last_arc = arc;
        c->arcs[arc].runs++;
    }
    if (cg_unlikely(c->depth == c->frame_cap)) {
        cg_stack_grow(c);
        if (c->depth == c->frame_cap) {
            c->overflow++;
            if (top)
                top->t_last = now;
            return;
        }
    }
    struct cg_frame *f = &c->frames[c->depth];
    f->fn = fn;
    f->sp = sp;
    f->t_enter = now;
    f->t_last = now;
    f->arc = arc;
    f->self = c->arcs[arc].entry_self;
    f->last_arc = CG_SINK;
    f->state = c->arcs[arc].state;
    f->host_site = host_site;
    f->code = cg_arc_code(c, arc, fn);
    f->node = 0;
    f->folded_self = 0;
    if (c->nodes) {
        /* a call left out is no step of the path: its frame runs on its
         * caller's node, and the calls it makes are its caller's */
        uint32_t parent = top ? f[-1].node : 0; /* not top: the stack may have moved (grown) */
        if (f->state) {
            f->node = parent;
        } else {
            f->node = cg_node_find(c, parent, fn);
            cg_node_enter(c, f->node);
        }
    }
    /* The dump reads frames [0, depth): publish the frame after filling it. */
    __atomic_store_n(&c->depth, c->depth + 1, __ATOMIC_RELEASE);
}

static CG_INLINE void cg_costs_enter(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                     uintptr_t code, uint64_t now)
{
    cg_costs_enter_as(c, fn, site, sp, code, now, 0);
}

/* Whether an arc whose count just became count is due for CGPROF_THROTTLE's
 * check (throttle_n N, 0: off): at N calls, and again at each power of two
 * above it, so that an arc whose first N calls were slowed (the thread
 * switched out in exact time, the hooks' first calls) is looked at again;
 * the check is an average over all its calls. */
static CG_INLINE int cg_throttle_due(const struct cg_costs *c, uint64_t count)
{
    return count == c->throttle_n || (c->throttle_n && count > c->throttle_n && !(count & (count - 1)));
}

/* Pops the top frame at time `now`, charging its call and resuming the
 * caller's self time at the call's return address. A frame left out
 * (its state not CG_ARC_COUNTED) charged its time to that same address all
 * along. */
static CG_INLINE void cg_costs_pop(struct cg_costs *c, uint64_t now)
{
    CG_CHECK(c->depth > 0);
    struct cg_frame *f = &c->frames[c->depth - 1];
    struct cg_arc *a = &c->arcs[f->arc];
    CG_CHECK(f->arc < c->narcs);
    CG_CHECK(f->self < c->nselfs);
    if (cg_unlikely(now < f->t_last))
        now = f->t_last; /* see cg_costs_enter */
    if (now != f->t_last) {
        c->selfs[f->self].cost += now - f->t_last;
        if (c->nodes)
            c->nodes[f->node].self += now - f->t_last;
    }
    uint32_t d = c->depth - 1;
    /* The caller resumes: its running segment starts now, before it is the
     * top frame again for a dump reading meanwhile. */
    if (cg_likely(d > 0)) {
        struct cg_frame *p = &c->frames[d - 1];
        p->t_last = now;
        p->self = a->ret_self;
    }
    /* The frame is unpublished before its call is counted, the count stored
     * before the time: a dump reading meanwhile (cg_reading_take: times,
     * counts, then frames) finds the call in its frame or in its count, or
     * in neither (a reading one short, which the next makes up), never in
     * both. A call counted twice would stay so: parts never take back
     * (cg_reading_raise). */
    __atomic_store_n(&c->depth, d, __ATOMIC_RELEASE);
    if (cg_likely(!f->state)) {
        uint64_t count = a->count + 1;
        __atomic_store_n(&a->count, count, __ATOMIC_RELEASE);
        __atomic_store_n(&a->incl, a->incl + (now - f->t_enter), __ATOMIC_RELEASE);
        if (c->lat)
            cg_lat_add(c, f->arc, now - f->t_enter);
        /* 0 when off: never due (cg_throttle_due) */
        if (cg_unlikely(cg_throttle_due(c, count)))
            cg_throttle_check(c, f->arc);
        if (c->nodes)
            cg_node_exit(c, f->node, f->t_enter, now);
    }
}

static CG_INLINE void cg_costs_exit(struct cg_costs *c, uintptr_t fn, uint64_t now)
{
    if (cg_unlikely(c->overflow)) {
        c->overflow--;
        return;
    }
    if (cg_likely(c->depth > 0 && c->frames[c->depth - 1].fn == fn))
        cg_costs_pop(c, now);
    else
        cg_exit_mismatch(c, fn, now);
}


#endif
