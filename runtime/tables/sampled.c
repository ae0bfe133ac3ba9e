/* Sampled time charged to a thread's tables (data layer;
 * CGPROF_TIME=sample, and CGPROF_STACKS=unwind's samples): a sample in
 * code without hooks under the top frame (its arcs' visits and inclusive
 * time, the self time at the interrupted instruction), in the top frame's
 * own code, in a call's prologue or epilogue around its hooks. The caller
 * holds the thread's guard. */
#include "costs_inlines.h"

#include <errno.h>

/* cg_costs_sample's work once its caller is known: the arcs from caller
 * (at site0) through fns, their visits and inclusive time, the self time
 * at (fns[n-1], pc). first_inlined: the first call is made from the code
 * of a frame inlined into its host; parent_node: the caller's node (call
 * paths). visits_only: only arcs made by sampling are counted (the
 * counting hooks count the others themselves). */
static int sample_chain(struct cg_costs *c, uintptr_t caller, uintptr_t site0, int first_inlined,
                        uint32_t parent_node, int visits_only, const uintptr_t *fns, const uintptr_t *sites,
                        unsigned n, uintptr_t pc, uint64_t period, int new_visit, uint32_t *last, unsigned *nlast)
{
    int saved = errno;
    uint32_t arcs[CG_SAMPLE_DEPTH];
    for (unsigned i = 0; i < n; i++) {
        uintptr_t from = i ? fns[i - 1] : caller;
        uintptr_t from_site = i ? sites[i] : site0;
        uint32_t a = cg_arc_lookup(c, from, from_site, fns[i]);
        if (a == CG_SINK) {
            /* the first call is made from the top frame's code: its
             * host's, when the top frame is inlined */
            a = cg_arc_insert(c, from, from_site, fns[i], 0, 0, i == 0 && first_inlined, 0);
            if (a != CG_SINK)
                c->arcs[a].sampled = 1;
        }
        arcs[i] = a;
    }
    uint32_t self = cg_self_find(c, fns[n - 1], pc, 0);
    /* The paths go on through the functions sampled, as their arcs do: a
     * flame graph shows memcpy under the function that called it. Nodes
     * that are not frames: their calls are the arcs' visits. */
    uint32_t nodes[CG_SAMPLE_DEPTH];
    if (c->nodes)
        for (unsigned i = 0; i < n; i++)
            nodes[i] = cg_node_find(c, i ? nodes[i - 1] : parent_node, fns[i]);
    errno = saved;
    for (unsigned i = 0; i < n; i++) {
        struct cg_arc *a = &c->arcs[arcs[i]];
        int seen = 0;
        for (unsigned k = 0; k < *nlast && !seen; k++)
            seen = last[k] == arcs[i];
        /* a call without a frame keeps the count it had (exact until it
         * was throttled, a lower bound since): a visit is not a call */
        /* counts and times stored whole: a dump reads them meanwhile, as
         * the hooks store theirs (cg_costs_pop) */
        if ((new_visit || !seen) && (a->sampled || (!visits_only && a->state == CG_ARC_COUNTED &&
                                                     cg_arc_state_of(c, a->callee) == CG_ARC_COUNTED))) {
            __atomic_store_n(&a->count, a->count + 1, __ATOMIC_RELEASE);
            if (c->nodes)
                __atomic_store_n(&c->nodes[nodes[i]].calls, c->nodes[nodes[i]].calls + 1, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&a->incl, a->incl + period, __ATOMIC_RELEASE);
        /* a node folded onto one of the frames' (a callback's function
         * called again from the library) or onto an earlier one of these:
         * its time is already counted there */
        if (c->nodes && !c->nodes[nodes[i]].active) {
            int again = 0;
            for (unsigned k = 0; k < i && !again; k++)
                again = nodes[k] == nodes[i];
            if (!again)
                __atomic_store_n(&c->nodes[nodes[i]].incl, c->nodes[nodes[i]].incl + period, __ATOMIC_RELEASE);
        }
    }
    __atomic_store_n(&c->selfs[self].cost, c->selfs[self].cost + period, __ATOMIC_RELEASE);
    if (c->nodes)
        __atomic_store_n(&c->nodes[nodes[n - 1]].self, c->nodes[nodes[n - 1]].self + period, __ATOMIC_RELEASE);
    for (unsigned i = 0; i < n; i++)
        last[i] = arcs[i];
    *nlast = n;
    return 0;
}

int cg_costs_sample(struct cg_costs *c, const uintptr_t *fns, const uintptr_t *sites, unsigned n, uintptr_t pc,
                    uint64_t period, int new_visit, uint32_t *last, unsigned *nlast)
{
    if (n == 0 || n > CG_SAMPLE_DEPTH || c->depth == 0)
        return -1;
    /* From a call left out, as its other calls: made by the caller it runs for */
    const struct cg_frame *top = &c->frames[c->depth - 1];
    uintptr_t caller = top->state ? c->arcs[top->arc].caller : top->fn;
    uintptr_t site0 = top->state ? c->arcs[top->arc].site : sites[0];
    /* A real call of an instrumented function, sampled around its hooks,
     * is left to cg_costs_sample_call; one whose hook calls were taken back
     * (throttled: it keeps no frame) is sampled as code that is not
     * instrumented, by address, on the arc it has */
    uint32_t first = cg_arc_lookup(c, caller, site0, fns[0]);
    if (first != CG_SINK && !c->arcs[first].sampled && c->arcs[first].state == CG_ARC_COUNTED &&
        cg_arc_state_of(c, fns[0]) == CG_ARC_COUNTED)
        return -1;
    return sample_chain(c, caller, site0, cg_top_inlined(c), top->node, 0, fns, sites, n, pc, period, new_visit, last,
                        nlast);
}

/* ---- CGPROF_STACKS=unwind: samples charged by unwinding, no frames ------ */

int cg_costs_charge_self(struct cg_costs *c, uintptr_t fn, uintptr_t pc, uint64_t period)
{
    uint32_t e = cg_self_lookup(c, fn, pc);
    if (e == CG_SINK) {
        /* bounded as cg_costs_sample_at's */
        if (c->sample_pcs >= CG_SAMPLE_PCS) {
            CG_COUNT(c->unplaced);
            return -1;
        }
        int saved = errno;
        e = cg_self_find(c, fn, pc, 0);
        errno = saved;
        if (e == CG_SINK) {
            CG_COUNT(c->unplaced);
            return -1;
        }
        c->sample_pcs++;
    }
    __atomic_store_n(&c->selfs[e].cost, c->selfs[e].cost + period, __ATOMIC_RELEASE);
    return 0;
}

int cg_costs_sample_from(struct cg_costs *c, uintptr_t caller, const uintptr_t *fns, const uintptr_t *sites,
                         unsigned n, uintptr_t pc, uint64_t period, int new_visit, uint32_t *last, unsigned *nlast)
{
    if (n == 0 || n > CG_SAMPLE_DEPTH)
        return -1;
    return sample_chain(c, caller, sites[0], 0, 0, 1, fns, sites, n, pc, period, new_visit, last, nlast);
}

int cg_costs_sample_at(struct cg_costs *c, uintptr_t pc, uint64_t period)
{
    if (c->depth == 0)
        return -1;
    struct cg_frame *top = &c->frames[c->depth - 1];
    if (top->state)
        return -1; /* its code's time is its caller's, at the call site */
    uint32_t e = cg_self_lookup(c, top->fn, pc);
    if (e == CG_SINK) {
        /* Bounded: the entries stay until the thread ends (a dump reads
         * them by index), and a thread that runs through much code must
         * not grow its tables by a sample's worth each time. */
        if (c->sample_pcs >= CG_SAMPLE_PCS) {
            CG_COUNT(c->unplaced);
            return -1;
        }
        int saved = errno;
        /* a frame inlined into another runs in its host's code, as its
         * call sites are */
        e = cg_self_find(c, top->fn, pc, cg_top_inlined(c));
        errno = saved;
        if (e == CG_SINK) { /* no memory: counted in lost too */
            CG_COUNT(c->unplaced);
            return -1;
        }
        c->sample_pcs++;
    }
    /* The segment's start first, then the cost: a dump of this thread from
     * another one reads the self costs before the frames (cg_reading_take),
     * so it may miss the period (the next reading makes it up) but never
     * counts it twice, in the entry and in the open segment. */
    __atomic_store_n(&top->t_last, top->t_last + period, __ATOMIC_RELEASE);
    __atomic_store_n(&c->selfs[e].cost, c->selfs[e].cost + period, __ATOMIC_RELEASE);
    if (c->nodes)
        __atomic_store_n(&c->nodes[top->node].self, c->nodes[top->node].self + period, __ATOMIC_RELEASE);
    return 0;
}

int cg_costs_sample_call(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t pc, uint64_t period)
{
    if (c->depth == 0)
        return -1;
    struct cg_frame *top = &c->frames[c->depth - 1];
    if (top->state)
        return -1;
    uint32_t arc = cg_arc_lookup(c, top->fn, site, fn);
    if (arc == CG_SINK)
        return -1;
    struct cg_arc *a = &c->arcs[arc];
    if (a->sampled || a->state || a->code_off == CG_NO_CODE)
        return -1;
    uint32_t self, node = 0;
    if (pc < fn + (uintptr_t)(intptr_t)a->code_off) {
        /* the prologue: the call's frame is not made yet */
        self = a->entry_self;
        if (c->nodes) {
            int saved = errno;
            node = cg_node_find(c, top->node, fn);
            errno = saved;
        }
    } else {
        /* the epilogue: the frame just above the stack is still this call's */
        const struct cg_frame *f = top + 1;
        if (c->depth >= c->frame_cap || f->fn != fn || f->arc != arc || f->state)
            return -1;
        self = f->self;
        node = f->node;
    }
    /* as cg_costs_sample_at: the segment's start first, then the costs */
    __atomic_store_n(&top->t_last, top->t_last + period, __ATOMIC_RELEASE);
    __atomic_store_n(&c->selfs[self].cost, c->selfs[self].cost + period, __ATOMIC_RELEASE);
    __atomic_store_n(&a->incl, a->incl + period, __ATOMIC_RELEASE);
    if (c->nodes) {
        struct cg_node *n = &c->nodes[node];
        __atomic_store_n(&n->self, n->self + period, __ATOMIC_RELEASE);
        /* a node on the stack (a recursion folded onto it) has it already,
         * by its running frame's inclusive time */
        if (!n->active)
            __atomic_store_n(&n->incl, n->incl + period, __ATOMIC_RELEASE);
    }
    return 0;
}
