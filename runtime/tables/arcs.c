/* Arcs and self entries (data layer): a thread's arcs made (the filters
 * applied once, when an arc is made), found without the hooks' inline
 * probe (for the sampler), marked to be dropped or throttled; the self
 * entries each arc charges. The hooks find an arc inline (cg_arc_find);
 * this makes it. */
#include "costs_inlines.h"

#include <errno.h>

#include "addrset.h"
#include "clock.h"

static inline CG_NOINSTR uint64_t self_hash(uintptr_t fn, uintptr_t addr)
{
    return cg_hash2(addr, fn);
}

CG_NOINSTR uint64_t cg_arcs_hash_at(const struct cg_costs *c, uint32_t e)
{
    const struct cg_arc *a = &c->arcs[e];
    return cg_arc_hash(a->site, a->callee);
}

CG_NOINSTR uint64_t cg_selfs_hash_at(const struct cg_costs *c, uint32_t e)
{
    return self_hash(c->selfs[e].fn, c->selfs[e].addr);
}

/* inlined: fn's frame is inlined into another function, in whose code addr
 * lies (set when the entry is made: the address decides it). */
CG_NOINSTR uint32_t cg_self_find(struct cg_costs *c, uintptr_t fn, uintptr_t addr, int inlined)
{
    uint32_t i = (uint32_t)self_hash(fn, addr);
    for (;; i++) {
        uint32_t slot = c->self_index[i & c->self_mask];
        if (slot == 0)
            break;
        if (c->selfs[slot].addr == addr && c->selfs[slot].fn == fn)
            return slot;
    }
    if (c->nselfs == c->self_cap) {
        if (cg_dense_grow(c, (void **)&c->selfs, &c->self_cap, c->nselfs, sizeof(struct cg_self)) ||
            cg_dense_index(&c->self_index, &c->self_mask, 2 * c->self_cap, c->nselfs, cg_selfs_hash_at, c)) {
            CG_COUNT(c->lost);
            return CG_SINK;
        }
        for (i = (uint32_t)self_hash(fn, addr); c->self_index[i & c->self_mask]; i++)
            ;
    }
    uint32_t e = c->nselfs;
    struct cg_self *s = &c->selfs[e];
    s->fn = fn;
    s->addr = addr;
    s->cost = 0;
    s->inlined = (uint32_t)inlined;
    c->self_index[i & c->self_mask] = e;
    __atomic_store_n(&c->nselfs, e + 1, __ATOMIC_RELEASE);
    return e;
}

/* Whether the filters leave callee out: checked once per arc, when it is
 * made, so that a call of a function left out costs no more than any
 * other call (the arc lookup). */
CG_NOINSTR uint32_t cg_arc_state_of(const struct cg_costs *c, uintptr_t callee)
{
    const struct cg_filter *f = c->filter;
    if (!f)
        return CG_ARC_COUNTED;
    if (cg_addrset_has(__atomic_load_n(&f->skip, __ATOMIC_ACQUIRE), callee))
        return CG_ARC_SKIPPED;
    if (f->throttle_n && cg_addrset_has(f->throttled, callee))
        return CG_ARC_THROTTLED;
    return CG_ARC_COUNTED;
}

/* filtered: apply the filters (the sampler's arcs, into code that is not
 * instrumented, are not filtered). inlined: callee is inlined into caller
 * (site: where the host's code called its enter hook); caller_inlined: the
 * caller itself is. code: where a real call's enter hook was called (0:
 * not known). */
CG_NOINSTR uint32_t cg_arc_insert(struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee,
                                   int filtered, int inlined, int caller_inlined, uintptr_t code)
{
    uint32_t state = filtered ? cg_arc_state_of(c, callee) : CG_ARC_COUNTED;
    /* after an inlined call the caller runs on where the call began: it
     * has no return address of its own. That place is in the code that
     * runs the caller's frame, whatever function it is (for a caller
     * itself inlined into code that is not instrumented, as clang's static
     * initialisers are, not a callback from it): flagged as the host's. */
    uint32_t ret_self = caller ? cg_self_find(c, caller, site, caller_inlined || inlined) : CG_SINK;
    /* A call left out runs on its caller's time from its entry: its frame
     * charges the call site, as the caller does after it returns. */
    uint32_t entry_self = state ? ret_self : cg_self_find(c, callee, callee, 0);
    if (c->narcs == c->arc_cap) {
        if (cg_dense_grow(c, (void **)&c->arcs, &c->arc_cap, c->narcs, sizeof(struct cg_arc)) ||
            cg_dense_index(&c->arc_index, &c->arc_mask, 2 * c->arc_cap, c->narcs, cg_arcs_hash_at, c)) {
            CG_COUNT(c->lost);
            return CG_SINK;
        }
    }
    /* the histograms' rows grow with the arcs (the hooks index them by arc
     * without a check): an arc with no row is not made */
    if (c->lat && c->narcs >= c->lat_cap &&
        cg_dense_grow(c, (void **)&c->lat, &c->lat_cap, c->lat_cap, sizeof(uint64_t) * CG_LAT_ROW)) {
        CG_COUNT(c->lost);
        return CG_SINK;
    }
    uint32_t i = (uint32_t)cg_arc_hash(site, callee);
    while (c->arc_index[i & c->arc_mask])
        i++;
    uint32_t e = c->narcs;
    struct cg_arc *a = &c->arcs[e];
    a->caller = caller;
    a->site = site;
    a->callee = callee;
    a->count = a->incl = a->runs = 0;
    a->sampled = 0;
    a->inlined = (uint8_t)inlined;
    a->caller_inlined = (uint8_t)caller_inlined;
    a->state = (uint8_t)state;
    intptr_t off = (intptr_t)(code - callee);
    a->code_off = !inlined && code && off > CG_NO_CODE && off <= INT32_MAX ? (int32_t)off : CG_NO_CODE;
    a->entry_self = entry_self;
    a->ret_self = ret_self;
    c->arc_index[i & c->arc_mask] = e;
    __atomic_store_n(&c->narcs, e + 1, __ATOMIC_RELEASE);
    return e;
}

/* Whether the top frame is inlined into another function (its call sites
 * are in that function's code). A frame left out calls through its arc's
 * caller, so what counts is that caller's frame. */
int cg_top_inlined(const struct cg_costs *c)
{
    if (c->depth == 0)
        return 0;
    const struct cg_arc *a = &c->arcs[c->frames[c->depth - 1].arc];
    return c->frames[c->depth - 1].state ? a->caller_inlined : a->inlined;
}

/* The slow paths make system calls (mmap, munmap) in the middle of the
 * program's code: errno must come out as it went in. */
uint32_t cg_arc_find_slow(struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee, int inlined,
                          uintptr_t code)
{
    /* cg_arc_find() probed up to an empty slot: the arc is new. inlined: a
     * top frame at the same sp, after cg_costs_resync, is the host of an
     * inlined call (and site is where it was called). */
    int saved = errno;
    uint32_t e = cg_arc_insert(c, caller, site, callee, 1, inlined, cg_top_inlined(c), code);
    errno = saved;
    return e;
}

void cg_costs_drop_arc(struct cg_costs *c, uintptr_t caller, uintptr_t key, uintptr_t fn, int inlined, int kind)
{
    uint32_t arc = cg_arc_find(c, caller, key, fn, inlined, 0);
    if (arc == CG_SINK)
        return;
    struct cg_arc *a = &c->arcs[arc];
    a->state = (uint8_t)kind;
    a->entry_self = a->ret_self;
}

/* An arc's count reached CGPROF_THROTTLE's N (in the exit of its Nth call):
 * if its calls took less than T ns on average, or its callee is throttled
 * already (by another arc, or thread), its later calls are left out. The
 * calls counted so far stay. */
void cg_throttle_check(struct cg_costs *c, uint32_t arc)
{
    struct cg_arc *a = &c->arcs[arc];
    struct cg_filter *f = c->filter;
    if (!f || arc == CG_SINK || a->state || a->sampled)
        return;
    if (a->incl >= f->throttle_ns * a->count && !cg_addrset_has(f->throttled, a->callee))
        return;
    a->entry_self = a->ret_self;
    a->state = CG_ARC_THROTTLED;
    int added = cg_addrset_add(f->throttled, a->callee);
    if (added < 0)
        __atomic_fetch_add(&f->throttle_full, 1, __ATOMIC_RELAXED);
    else if (added > 0)
        __atomic_store_n(&f->throttled_at, cg_clock_now(), __ATOMIC_RELAXED);
}

uint32_t cg_arc_lookup(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    for (uint32_t i = (uint32_t)cg_arc_hash(site, callee);; i++) {
        uint32_t slot = c->arc_index[i & c->arc_mask];
        if (slot == 0)
            return 0;
        const struct cg_arc *a = &c->arcs[slot];
        if (a->site == site && a->callee == callee && a->caller == caller && !a->inlined)
            return slot;
    }
}

uint32_t cg_self_lookup(const struct cg_costs *c, uintptr_t fn, uintptr_t addr)
{
    for (uint32_t i = (uint32_t)self_hash(fn, addr);; i++) {
        uint32_t slot = c->self_index[i & c->self_mask];
        if (slot == 0 || (c->selfs[slot].addr == addr && c->selfs[slot].fn == fn))
            return slot;
    }
}

/* ---- CGPROF_STACKS=unwind: samples charged by unwinding, no frames ------ */

uint32_t cg_costs_arc_of(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    for (uint32_t i = (uint32_t)cg_arc_hash(site, callee);; i++) {
        uint32_t slot = c->arc_index[i & c->arc_mask];
        if (slot == 0)
            return CG_SINK;
        const struct cg_arc *a = &c->arcs[slot];
        if (a->site == site && a->callee == callee && !a->inlined && !a->sampled && (!caller || a->caller == caller))
            return slot;
    }
}
