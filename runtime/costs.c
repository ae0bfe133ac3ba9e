#include "costs.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "util.h"


unsigned long cg_readers;

enum { INITIAL_FRAMES = 1024, INITIAL_ARCS = 1024, INITIAL_SELFS = 1024, INITIAL_NODES = 1024 };

static CG_NOINSTR void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Frees outgrown arrays unless a dump may be reading them (see cg_readers). */
static CG_NOINSTR void reclaim(struct cg_costs *c)
{
    if (__atomic_load_n(&cg_readers, __ATOMIC_SEQ_CST) != 0)
        return;
    for (unsigned i = 0; i < c->nretired; i++)
        munmap(c->retired[i].p, c->retired[i].len);
    c->nretired = 0;
}

static CG_NOINSTR void retire(struct cg_costs *c, void *p, size_t len)
{
    if (c->nretired < CG_MAX_RETIRED) {
        c->retired[c->nretired].p = p;
        c->retired[c->nretired].len = len;
        c->nretired++;
    } else if (__atomic_load_n(&cg_readers, __ATOMIC_SEQ_CST) == 0) {
        munmap(p, len);
    } /* else: leaked; cannot happen with doubling arrays and 96 slots */
    reclaim(c);
}

/* Replaces a dense array by one twice as large (copying the first n items),
 * publishing the new pointer before the old one is retired. */
static CG_NOINSTR int grow_dense(struct cg_costs *c, void **arr, uint32_t *cap, uint32_t n, size_t item)
{
    if (*cap > UINT32_MAX / 2)
        return -1;
    uint32_t ncap = *cap * 2;
    void *p = map((size_t)ncap * item);
    if (!p)
        return -1;
    memcpy(p, *arr, (size_t)n * item);
    void *old = *arr;
    size_t oldlen = (size_t)*cap * item;
    __atomic_store_n(arr, p, __ATOMIC_SEQ_CST);
    *cap = ncap;
    retire(c, old, oldlen);
    return 0;
}

static inline CG_NOINSTR uint64_t self_hash(uintptr_t fn, uintptr_t addr)
{
    return cg_hash2(addr, fn);
}

/* Rebuilds a private hash index at `slots` entries from the dense array.
 * The old index is unmapped at once: no other thread ever reads it. */
static CG_NOINSTR int rebuild_index(uint32_t **index, uint32_t *mask, uint32_t slots, uint32_t n,
                                    uint64_t (*hash_of)(const struct cg_costs *, uint32_t),
                                    const struct cg_costs *c)
{
    uint32_t *ix = map((size_t)slots * sizeof *ix);
    if (!ix)
        return -1;
    for (uint32_t e = 1; e < n; e++) {
        uint32_t i = (uint32_t)hash_of(c, e);
        while (ix[i & (slots - 1)])
            i++;
        ix[i & (slots - 1)] = e;
    }
    if (*index)
        munmap(*index, (size_t)(*mask + 1) * sizeof **index);
    *index = ix;
    *mask = slots - 1;
    return 0;
}

static CG_NOINSTR uint64_t arc_hash_at(const struct cg_costs *c, uint32_t e)
{
    const struct cg_arc *a = &c->arcs[e];
    return cg_arc_hash(a->caller, a->site, a->callee);
}

static CG_NOINSTR uint64_t self_hash_at(const struct cg_costs *c, uint32_t e)
{
    return self_hash(c->selfs[e].fn, c->selfs[e].addr);
}

/* The node index: a power of two of slots, at most 3/4 used. */
static CG_NOINSTR int node_index_make(struct cg_costs *c, uint32_t slots)
{
    struct cg_node_slot *ix = map((size_t)slots * sizeof *ix);
    if (!ix)
        return -1;
    uint32_t used = 0;
    if (c->node_index) {
        for (uint32_t k = 0; k <= c->node_mask; k++) {
            const struct cg_node_slot *o = &c->node_index[k];
            if (!o->node)
                continue;
            uint32_t i = (uint32_t)cg_node_hash(o->parent, o->fn);
            while (ix[i & (slots - 1)].node)
                i++;
            ix[i & (slots - 1)] = *o;
            used++;
        }
        munmap(c->node_index, (size_t)(c->node_mask + 1) * sizeof *c->node_index);
    }
    c->node_index = ix;
    c->node_mask = slots - 1;
    c->node_slots_used = used;
    return 0;
}

static CG_NOINSTR int paths_init(struct cg_costs *c, uint32_t bound)
{
    if (bound < 16)
        bound = 16;
    c->node_bound = bound;
    c->node_cap = bound < INITIAL_NODES ? bound : INITIAL_NODES;
    c->nodes = map(sizeof(struct cg_node) * c->node_cap);
    c->nnodes = 1; /* node 0: the sink */
    return c->nodes && node_index_make(c, 2 * INITIAL_NODES) == 0 ? 0 : -1;
}

int cg_costs_init(struct cg_costs *c, uint32_t paths_bound)
{
    memset(c, 0, sizeof *c);
    c->frame_cap = INITIAL_FRAMES;
    c->arc_cap = INITIAL_ARCS;
    c->self_cap = INITIAL_SELFS;
    c->frames = map(sizeof(struct cg_frame) * c->frame_cap);
    c->arcs = map(sizeof(struct cg_arc) * c->arc_cap);
    c->selfs = map(sizeof(struct cg_self) * c->self_cap);
    c->narcs = c->nselfs = 1; /* entry 0: the sink */
    if (!c->frames || !c->arcs || !c->selfs ||
        rebuild_index(&c->arc_index, &c->arc_mask, 2 * INITIAL_ARCS, 1, arc_hash_at, c) ||
        rebuild_index(&c->self_index, &c->self_mask, 2 * INITIAL_SELFS, 1, self_hash_at, c) ||
        (paths_bound && paths_init(c, paths_bound) != 0)) {
        cg_costs_destroy(c);
        return -1;
    }
    return 0;
}

int cg_costs_latency_on(struct cg_costs *c)
{
    /* mapped, not touched: a row's pages are made as its arcs are */
    c->lat = map(sizeof(uint64_t) * CG_LAT_ROW * c->arc_cap);
    c->lat_cap = c->lat ? c->arc_cap : 0;
    return c->lat ? 0 : -1;
}

void cg_costs_destroy(struct cg_costs *c)
{
    if (c->frames)
        munmap(c->frames, sizeof(struct cg_frame) * c->frame_cap);
    if (c->arcs)
        munmap(c->arcs, sizeof(struct cg_arc) * c->arc_cap);
    if (c->selfs)
        munmap(c->selfs, sizeof(struct cg_self) * c->self_cap);
    if (c->lat)
        munmap(c->lat, sizeof(uint64_t) * CG_LAT_ROW * c->lat_cap);
    if (c->arc_index)
        munmap(c->arc_index, sizeof(uint32_t) * (c->arc_mask + 1));
    if (c->self_index)
        munmap(c->self_index, sizeof(uint32_t) * (c->self_mask + 1));
    if (c->nodes)
        munmap(c->nodes, sizeof(struct cg_node) * c->node_cap);
    if (c->node_index)
        munmap(c->node_index, sizeof(struct cg_node_slot) * (c->node_mask + 1));
    for (unsigned i = 0; i < c->nretired; i++)
        munmap(c->retired[i].p, c->retired[i].len);
    memset(c, 0, sizeof *c);
}

void cg_costs_zero(struct cg_costs *c, uint64_t now)
{
    for (uint32_t i = 0; i < c->narcs; i++) {
        c->arcs[i].count = c->arcs[i].incl = c->arcs[i].runs = 0;
    }
    for (uint32_t i = 0; i < c->nselfs; i++)
        c->selfs[i].cost = 0;
    if (c->lat)
        memset(c->lat, 0, sizeof(uint64_t) * CG_LAT_ROW * c->narcs);
    for (uint32_t i = 0; i < c->nnodes; i++)
        c->nodes[i].calls = c->nodes[i].incl = c->nodes[i].self = 0;
    for (uint32_t i = 0; i < c->depth; i++)
        c->frames[i].t_enter = c->frames[i].t_last = now;
    c->lost = c->unmatched_exits = c->left = c->jumped = c->unplaced = 0;
    c->inlined_calls = c->frameless_exits = c->takeback_ns = 0;
    c->folded = c->beyond_paths = 0;
}

/* ---- call paths ------------------------------------------------------------ */

/* A new node (fn, parent), or 0 (the sink) when there is no room or memory. */
static CG_NOINSTR uint32_t node_new(struct cg_costs *c, uint32_t parent, uintptr_t fn, uint32_t limit)
{
    if (c->nnodes >= limit)
        return CG_SINK;
    if (c->nnodes == c->node_cap &&
        grow_dense(c, (void **)&c->nodes, &c->node_cap, c->nnodes, sizeof(struct cg_node)) != 0) {
        CG_COUNT(c->lost);
        return CG_SINK;
    }
    uint32_t e = c->nnodes;
    struct cg_node *n = &c->nodes[e];
    n->fn = fn;
    n->parent = parent;
    n->active = 0;
    n->calls = n->incl = n->self = 0;
    __atomic_store_n(&c->nnodes, e + 1, __ATOMIC_RELEASE);
    return e;
}

/* Indexes (parent, fn) -> node: 1, or 0 without room (the index holds
 * the nodes and the aliases of folded and cut paths, in at most four
 * slots per node of the bound; past that, the slow path finds them again
 * each time). */
static CG_NOINSTR int node_index_add(struct cg_costs *c, uint32_t parent, uintptr_t fn, uint32_t node)
{
    if (node == CG_SINK) /* an empty slot */
        return 0;
    uint32_t slots = c->node_mask + 1;
    if ((uint64_t)(c->node_slots_used + 1) * 4 > (uint64_t)slots * 3) {
        uint64_t most = 4 * (uint64_t)c->node_bound;
        if (most < 4096)
            most = 4096;
        if (2 * (uint64_t)slots > most || node_index_make(c, 2 * slots) != 0)
            return 0;
    }
    uint32_t i = (uint32_t)cg_node_hash(parent, fn);
    while (c->node_index[i & c->node_mask].node)
        i++;
    struct cg_node_slot *s = &c->node_index[i & c->node_mask];
    s->fn = fn;
    s->parent = parent;
    s->node = node;
    c->node_slots_used++;
    return 1;
}

uint32_t cg_node_find_slow(struct cg_costs *c, uint32_t parent, uintptr_t fn)
{
    int saved = errno;
    uint32_t node = CG_SINK;
    uint64_t *counter = NULL; /* what an alias made here counts as */
    if (parent >= c->nnodes)
        parent = 0; /* cannot be: a frame's node is one of this thread's */
    if (parent && c->nodes[parent].fn == CG_NODE_BEYOND) {
        node = parent; /* everything under the bound's cut is one node */
    } else {
        /* already on the path: folded onto it (its one walk up the path) */
        for (uint32_t n = parent; n; n = c->nodes[n].parent)
            if (c->nodes[n].fn == fn) {
                node = n;
                counter = &c->folded;
                break;
            }
        if (!node) {
            uint32_t room = c->node_bound - c->node_bound / 16;
            node = node_new(c, parent, fn, room);
            if (!node) {
                /* past the cut: the parent's "beyond" node */
                uint32_t i = (uint32_t)cg_node_hash(parent, CG_NODE_BEYOND);
                for (;; i++) {
                    const struct cg_node_slot *s = &c->node_index[i & c->node_mask];
                    if (s->node == 0 || (s->fn == CG_NODE_BEYOND && s->parent == parent)) {
                        node = s->node;
                        break;
                    }
                }
                if (!node) {
                    node = node_new(c, parent, CG_NODE_BEYOND, c->node_bound);
                    node_index_add(c, parent, CG_NODE_BEYOND, node);
                }
                counter = &c->beyond_paths;
            }
        }
    }
    /* counted once per (path, function), when its alias is made */
    if (node_index_add(c, parent, fn, node) && counter)
        CG_COUNT(*counter);
    errno = saved;
    return node;
}

/* inlined: fn's frame is inlined into another function, in whose code addr
 * lies (set when the entry is made: the address decides it). */
static CG_NOINSTR uint32_t self_find(struct cg_costs *c, uintptr_t fn, uintptr_t addr, int inlined)
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
        if (grow_dense(c, (void **)&c->selfs, &c->self_cap, c->nselfs, sizeof(struct cg_self)) ||
            rebuild_index(&c->self_index, &c->self_mask, 2 * c->self_cap, c->nselfs, self_hash_at, c)) {
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
static CG_NOINSTR uint32_t skip_of(const struct cg_costs *c, uintptr_t callee)
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
static CG_NOINSTR uint32_t arc_insert(struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee,
                                      int filtered, int inlined, int caller_inlined, uintptr_t code)
{
    uint32_t skip = filtered ? skip_of(c, callee) : CG_ARC_COUNTED;
    /* after an inlined call the caller runs on where the call began: it
     * has no return address of its own. That place is in the code that
     * runs the caller's frame, whatever function it is (for a caller
     * itself inlined into code that is not instrumented, as clang's static
     * initialisers are, not a callback from it): flagged as the host's. */
    uint32_t ret_self = caller ? self_find(c, caller, site, caller_inlined || inlined) : CG_SINK;
    /* A call left out runs on its caller's time from its entry: its frame
     * charges the call site, as the caller does after it returns. */
    uint32_t entry_self = skip ? ret_self : self_find(c, callee, callee, 0);
    if (c->narcs == c->arc_cap) {
        if (grow_dense(c, (void **)&c->arcs, &c->arc_cap, c->narcs, sizeof(struct cg_arc)) ||
            rebuild_index(&c->arc_index, &c->arc_mask, 2 * c->arc_cap, c->narcs, arc_hash_at, c)) {
            CG_COUNT(c->lost);
            return CG_SINK;
        }
    }
    /* the histograms' rows grow with the arcs (the hooks index them by arc
     * without a check): an arc with no row is not made */
    if (c->lat && c->narcs >= c->lat_cap &&
        grow_dense(c, (void **)&c->lat, &c->lat_cap, c->lat_cap, sizeof(uint64_t) * CG_LAT_ROW)) {
        CG_COUNT(c->lost);
        return CG_SINK;
    }
    uint32_t i = (uint32_t)cg_arc_hash(caller, site, callee);
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
    a->skip = (uint8_t)skip;
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
static int top_inlined(const struct cg_costs *c)
{
    if (c->depth == 0)
        return 0;
    const struct cg_arc *a = &c->arcs[c->frames[c->depth - 1].arc];
    return c->frames[c->depth - 1].skip ? a->caller_inlined : a->inlined;
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
    uint32_t e = arc_insert(c, caller, site, callee, 1, inlined, top_inlined(c), code);
    errno = saved;
    return e;
}

void cg_costs_drop_arc(struct cg_costs *c, uintptr_t caller, uintptr_t key, uintptr_t fn, int inlined, int kind)
{
    uint32_t arc = cg_arc_find(c, caller, key, fn, inlined, 0);
    if (arc == CG_SINK)
        return;
    struct cg_arc *a = &c->arcs[arc];
    a->skip = (uint8_t)kind;
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
    if (!f || arc == CG_SINK || a->skip || a->sampled)
        return;
    if (a->incl >= f->throttle_ns * a->count && !cg_addrset_has(f->throttled, a->callee))
        return;
    a->entry_self = a->ret_self;
    a->skip = CG_ARC_THROTTLED;
    int added = cg_addrset_add(f->throttled, a->callee);
    if (added < 0)
        __atomic_fetch_add(&f->throttle_full, 1, __ATOMIC_RELAXED);
    else if (added > 0)
        __atomic_store_n(&f->throttled_at, cg_clock_now(), __ATOMIC_RELAXED);
}

int cg_real_call_below(const struct cg_costs *c, uintptr_t site, uintptr_t sp)
{
    uintptr_t top = c->frames[c->depth - 1].sp;
    if (top - sp > CG_INLINED_REACH)
        return 1;
    /* Words of the stack that were never written (padding) are read too:
     * valgrind's memcheck says so (tests/valgrind.supp), harmlessly. */
    for (const uintptr_t *w = (const uintptr_t *)sp; (uintptr_t)w < top; w++)
        if (*w == site)
            return 1;
    return 0;
}

void cg_stack_grow(struct cg_costs *c)
{
    int saved = errno;
    grow_dense(c, (void **)&c->frames, &c->frame_cap, c->depth, sizeof(struct cg_frame));
    errno = saved;
}

static void pop_left(struct cg_costs *c, uint64_t now)
{
    cg_costs_pop(c, now);
    CG_COUNT(c->left);
}

/* On an alternate signal stack the addresses say nothing about the
 * thread's own stack. */
static int on_alt_stack(void)
{
    int saved = errno;
    stack_t ss;
    int on_alt = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
    errno = saved;
    return on_alt;
}

/* The depth the shadow stack has once the frames that an entry of fn
 * (site, sp, code) shows left are popped:
 *  - below sp, no live frame can be;
 *  - at sp are an inlined call's host and the calls inlined into it, kept;
 *    a frame there was left when its enter hook was called from the same
 *    code (the same inlined call, in the same frame, entered again: the
 *    first one never ended, a function cannot be inside itself at one
 *    place), or when the new call is not an inlined one (its site is not
 *    the host's return address): a real call's frame is below every live
 *    one. */
static uint32_t live_depth_at_entry(const struct cg_costs *c, uintptr_t site, uintptr_t sp, uintptr_t code)
{
    uint32_t d = c->depth;
    while (d > 0 && c->frames[d - 1].sp < sp)
        d--;
    uint32_t at = d;
    while (at > 0 && c->frames[at - 1].sp == sp && cg_frame_code(&c->frames[at - 1]) != code)
        at--;
    if (at > 0 && c->frames[at - 1].sp == sp)
        d = at - 1;
    while (d > 0 && c->frames[d - 1].sp == sp && cg_host_site(c, d - 1) != site)
        d--;
    return d;
}

/* The same for an exit of fn at sp: frames of other functions below sp. */
static uint32_t live_depth_at_exit(const struct cg_costs *c, uintptr_t fn, uintptr_t sp)
{
    uint32_t d = c->depth;
    while (d > 0 && c->frames[d - 1].sp < sp && c->frames[d - 1].fn != fn)
        d--;
    return d;
}

void cg_resync_slow(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int entering,
                    uint64_t now)
{
    uint32_t d = entering ? live_depth_at_entry(c, site, sp, code) : live_depth_at_exit(c, fn, sp);
    /* Only when there is something to pop is the stack asked (a system
     * call) whether it is an alternate signal stack, where the addresses
     * say nothing about the thread's own stack. */
    if (d == c->depth || on_alt_stack())
        return;
    while (c->depth > d)
        pop_left(c, now);
}

void cg_costs_unwind_to(struct cg_costs *c, uint32_t depth, uint64_t now)
{
    while (c->depth > depth) {
        cg_costs_pop(c, now);
        CG_COUNT(c->jumped);
    }
}

void cg_costs_unwind_below(struct cg_costs *c, uintptr_t sp, uint64_t now)
{
    while (c->depth > 0 && c->frames[c->depth - 1].sp < sp) {
        cg_costs_pop(c, now);
        CG_COUNT(c->jumped);
    }
}

void cg_exit_mismatch(struct cg_costs *c, uintptr_t fn, uint64_t now)
{
    /* The exit of a function that is not on top: frames above it were left
     * without an exit hook (longjmp, an exception through code that does not
     * call the exit hook). Pop them as ending now, then the function. An exit
     * that matches no frame at all is dropped and counted. */
    uint32_t d = c->depth;
    while (d > 0 && c->frames[d - 1].fn != fn)
        d--;
    if (d == 0) {
        CG_COUNT(c->unmatched_exits);
        return;
    }
    while (c->depth >= d)
        cg_costs_pop(c, now);
}

/* ---- snapshots ---------------------------------------------------------- */

static int resize(uint64_t **p, uint32_t n)
{
    void *q = realloc(*p, (n ? n : 1) * sizeof **p);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int totals_fit(struct cg_totals *t, uint32_t narcs, uint32_t nselfs, uint32_t nnodes)
{
    if (resize(&t->count, narcs) || resize(&t->incl, narcs) || resize(&t->runs, narcs) ||
        resize(&t->cost, nselfs) || resize(&t->ncalls, nnodes) || resize(&t->nincl, nnodes) ||
        resize(&t->nself, nnodes))
        return -1;
    t->narcs = narcs;
    t->nselfs = nselfs;
    t->nnodes = nnodes;
    return 0;
}

/* The histograms' rows of t: n, or none (NULL) when n is 0. */
static int lat_fit(struct cg_totals *t, uint32_t n)
{
    if (!n) {
        free(t->lat);
        t->lat = NULL;
        t->nlat = 0;
        return 0;
    }
    void *q = realloc(t->lat, (size_t)n * CG_LAT_ROW * sizeof *t->lat);
    if (!q)
        return -1;
    t->lat = q;
    t->nlat = n;
    return 0;
}

/* Row i of n rows, or NULL past them (an arc made since). */
static const uint64_t *lat_row(const uint64_t *lat, uint32_t n, uint32_t i)
{
    return lat && i < n ? lat + (size_t)i * CG_LAT_ROW : NULL;
}

void cg_totals_free(struct cg_totals *t)
{
    free(t->lat);
    free(t->count);
    free(t->incl);
    free(t->runs);
    free(t->cost);
    free(t->ncalls);
    free(t->nincl);
    free(t->nself);
    memset(t, 0, sizeof *t);
}

static uint32_t arc_lookup(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    for (uint32_t i = (uint32_t)cg_arc_hash(caller, site, callee);; i++) {
        uint32_t slot = c->arc_index[i & c->arc_mask];
        if (slot == 0)
            return 0;
        const struct cg_arc *a = &c->arcs[slot];
        if (a->site == site && a->callee == callee && a->caller == caller && !a->inlined)
            return slot;
    }
}

int cg_costs_sample(struct cg_costs *c, const uintptr_t *fns, const uintptr_t *sites, unsigned n, uintptr_t pc,
                    uint64_t period, int new_visit, uint32_t *last, unsigned *nlast)
{
    if (n == 0 || n > CG_SAMPLE_DEPTH || c->depth == 0)
        return -1;
    /* From a call left out, as its other calls: made by the caller it runs for */
    const struct cg_frame *top = &c->frames[c->depth - 1];
    uintptr_t caller = top->skip ? c->arcs[top->arc].caller : top->fn;
    uintptr_t site0 = top->skip ? c->arcs[top->arc].site : sites[0];
    /* A real call of an instrumented function, sampled around its hooks,
     * is left to cg_costs_sample_call; one whose hook calls were taken back
     * (throttled: it keeps no frame) is sampled as code that is not
     * instrumented, by address, on the arc it has */
    uint32_t first = arc_lookup(c, caller, site0, fns[0]);
    if (first != CG_SINK && !c->arcs[first].sampled && c->arcs[first].skip == CG_ARC_COUNTED &&
        skip_of(c, fns[0]) == CG_ARC_COUNTED)
        return -1;
    int saved = errno;
    uint32_t arcs[CG_SAMPLE_DEPTH];
    for (unsigned i = 0; i < n; i++) {
        uintptr_t from = i ? fns[i - 1] : caller;
        uintptr_t from_site = i ? sites[i] : site0;
        uint32_t a = arc_lookup(c, from, from_site, fns[i]);
        if (a == CG_SINK) {
            /* the first call is made from the top frame's code: its
             * host's, when the top frame is inlined */
            a = arc_insert(c, from, from_site, fns[i], 0, 0, i == 0 && top_inlined(c), 0);
            if (a != CG_SINK)
                c->arcs[a].sampled = 1;
        }
        arcs[i] = a;
    }
    uint32_t self = self_find(c, fns[n - 1], pc, 0);
    /* The paths go on through the functions sampled, as their arcs do: a
     * flame graph shows memcpy under the function that called it. Nodes
     * that are not frames: their calls are the arcs' visits. */
    uint32_t nodes[CG_SAMPLE_DEPTH];
    if (c->nodes)
        for (unsigned i = 0; i < n; i++)
            nodes[i] = cg_node_find(c, i ? nodes[i - 1] : top->node, fns[i]);
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
        if ((new_visit || !seen) &&
            (a->sampled || (a->skip == CG_ARC_COUNTED && skip_of(c, a->callee) == CG_ARC_COUNTED))) {
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

static uint32_t self_lookup(const struct cg_costs *c, uintptr_t fn, uintptr_t addr)
{
    for (uint32_t i = (uint32_t)self_hash(fn, addr);; i++) {
        uint32_t slot = c->self_index[i & c->self_mask];
        if (slot == 0 || (c->selfs[slot].addr == addr && c->selfs[slot].fn == fn))
            return slot;
    }
}

int cg_costs_sample_at(struct cg_costs *c, uintptr_t pc, uint64_t period)
{
    if (c->depth == 0)
        return -1;
    struct cg_frame *top = &c->frames[c->depth - 1];
    if (top->skip)
        return -1; /* its code's time is its caller's, at the call site */
    uint32_t e = self_lookup(c, top->fn, pc);
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
        e = self_find(c, top->fn, pc, top_inlined(c));
        errno = saved;
        if (e == CG_SINK) { /* no memory: counted in lost too */
            CG_COUNT(c->unplaced);
            return -1;
        }
        c->sample_pcs++;
    }
    /* The segment's start first, then the cost: a dump of this thread from
     * another one reads the self costs before the frames (cg_costs_totals),
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
    if (top->skip)
        return -1;
    uint32_t arc = arc_lookup(c, top->fn, site, fn);
    if (arc == CG_SINK)
        return -1;
    struct cg_arc *a = &c->arcs[arc];
    if (a->sampled || a->skip || a->code_off == CG_NO_CODE)
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
        if (c->depth >= c->frame_cap || f->fn != fn || f->arc != arc || f->skip)
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

/* The reads of a running thread's tables that its owner writes with plain
 * stores (the hot path has no atomics but for the depth, the counts and
 * their times): self costs, runs and the fields of frames. A value read
 * while it changes is the old or the new one (aligned words, x86-64), and
 * the rules of cg_costs_totals make either harmless: races by the letter
 * of C11, harmless by design, and so left out of ThreadSanitizer's checks
 * (CG_RACY_READ), they and nothing else. */
static CG_RACY_READ void cg_totals_read_selfs(const struct cg_self *selfs, uint32_t n, uint64_t *cost)
{
    for (uint32_t i = 0; i < n; i++)
        cost[i] = selfs[i].cost;
}

static CG_RACY_READ void cg_totals_read_runs(const struct cg_arc *arcs, uint32_t n, uint64_t *runs)
{
    for (uint32_t i = 0; i < n; i++)
        runs[i] = arcs[i].runs;
}

struct frame_view {
    uint32_t arc, self, skip, node;
    uint64_t t_enter, t_last;
};

/* Each field once: the thread may be rewriting a frame above its depth (a
 * call that ended, another entered), and a field read twice could give
 * two calls' values. */
static CG_RACY_READ void cg_totals_read_frame(const struct cg_frame *f, struct frame_view *v)
{
    v->arc = __atomic_load_n(&f->arc, __ATOMIC_RELAXED);
    v->t_enter = __atomic_load_n(&f->t_enter, __ATOMIC_RELAXED);
    v->skip = __atomic_load_n(&f->skip, __ATOMIC_RELAXED);
    v->self = __atomic_load_n(&f->self, __ATOMIC_RELAXED);
    v->t_last = __atomic_load_n(&f->t_last, __ATOMIC_RELAXED);
    v->node = __atomic_load_n(&f->node, __ATOMIC_RELAXED);
}

static CG_RACY_READ void cg_totals_read_node_selfs(const struct cg_node *nodes, uint32_t n, uint64_t *self)
{
    for (uint32_t i = 0; i < n; i++)
        self[i] = nodes[i].self;
}

int cg_costs_totals(const struct cg_costs *c, uint64_t now, struct cg_totals *t)
{
    uint32_t narcs = __atomic_load_n(&c->narcs, __ATOMIC_ACQUIRE);
    uint32_t nselfs = __atomic_load_n(&c->nselfs, __ATOMIC_ACQUIRE);
    const struct cg_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_SEQ_CST);
    const struct cg_self *selfs = __atomic_load_n(&c->selfs, __ATOMIC_SEQ_CST);
    uint32_t nnodes = __atomic_load_n(&c->nnodes, __ATOMIC_ACQUIRE);
    const struct cg_node *nodes = __atomic_load_n(&c->nodes, __ATOMIC_SEQ_CST);
    if (!nodes)
        nnodes = 0;
    const uint64_t *lat = __atomic_load_n(&c->lat, __ATOMIC_SEQ_CST);
    if (totals_fit(t, narcs, nselfs, nnodes) || lat_fit(t, lat ? narcs : 0))
        return -1;
    /* a node's outermost frame on the stack, for its time in progress */
    unsigned char *seen = nnodes ? calloc(nnodes, 1) : NULL;
    if (nnodes && !seen)
        return -1;
    /* Of a thread that runs meanwhile, self costs are read first, then the
     * arcs (each one's time before its count), then the frames, in the
     * reverse of the order a call's exit writes them (cg_costs_pop): a call
     * that ends meanwhile is found in its frame or in its count, or in
     * neither (this reading is one short, the next makes it up), never in
     * both, and its time is never in its frame and its arc at once. The
     * acquire loads keep the reads in that order. */
    cg_totals_read_selfs(selfs, nselfs, t->cost);
    cg_totals_read_node_selfs(nodes, nnodes, t->nself);
    cg_totals_read_runs(arcs, narcs, t->runs);
    for (uint32_t i = 0; i < narcs; i++) {
        t->incl[i] = __atomic_load_n(&arcs[i].incl, __ATOMIC_ACQUIRE);
        t->count[i] = __atomic_load_n(&arcs[i].count, __ATOMIC_ACQUIRE);
    }
    /* the histograms hold the calls that ended: none of the frames'; their
     * sum is the arc's time before the frames' is added */
    for (size_t i = 0; lat && i < (size_t)narcs * CG_LAT_ROW; i++)
        t->lat[i] = __atomic_load_n(&lat[i], __ATOMIC_RELAXED);
    for (uint32_t i = 0; lat && i < narcs; i++)
        t->lat[(size_t)i * CG_LAT_ROW + CG_LAT_SUM] = t->incl[i];
    /* the nodes after the arcs: an exit stores the arc's, then the node's */
    for (uint32_t i = 0; i < nnodes; i++) {
        t->nincl[i] = __atomic_load_n(&nodes[i].incl, __ATOMIC_ACQUIRE);
        t->ncalls[i] = __atomic_load_n(&nodes[i].calls, __ATOMIC_ACQUIRE);
    }
    /* The time is taken before the frames are read: a frame still there
     * ends later than that, so a call in progress is never charged more
     * than it will really cost, and successive totals only grow (parts
     * never lose what a torn read put in the part before). */
    if (now == CG_NOW)
        now = c->vclock ? __atomic_load_n(c->vclock, __ATOMIC_RELAXED) : cg_costs_time_of(c, cg_clock_now());
    uint32_t depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
    const struct cg_frame *frames = __atomic_load_n(&c->frames, __ATOMIC_SEQ_CST);
    /* Calls still running: counted once each, with their cost so far. Only
     * the top frame has a self segment open; the others are waiting on a
     * callee and closed theirs when they called it. */
    uint32_t running = 0;
    for (uint32_t i = 0; i < depth; i++) {
        struct frame_view f;
        cg_totals_read_frame(&frames[i], &f);
        if (f.arc >= narcs || now < f.t_enter)
            continue; /* entered after `now`, or a torn read of a frame being pushed */
        if (!f.skip) { /* a call left out is no call: its time is its caller's self */
            t->count[f.arc]++;
            t->incl[f.arc] += now - f.t_enter;
            running++;
            if (f.node < nnodes) {
                t->ncalls[f.node]++;
                /* the outermost frame of a node (the first, from the
                 * root) holds its time; nested ones are in it */
                if (!seen[f.node]) {
                    seen[f.node] = 1;
                    t->nincl[f.node] += now - f.t_enter;
                }
            }
        }
        if (i == depth - 1 && f.self < nselfs && now >= f.t_last) {
            t->cost[f.self] += now - f.t_last;
            if (f.node < nnodes)
                t->nself[f.node] += now - f.t_last;
        }
    }
    free(seen);
    t->folded = __atomic_load_n(&c->folded, __ATOMIC_RELAXED);
    t->beyond_paths = __atomic_load_n(&c->beyond_paths, __ATOMIC_RELAXED);
    t->comp = __atomic_load_n(&c->comp, __ATOMIC_RELAXED);
    t->off_pending = 0;
    t->depth = running;
    t->lost = __atomic_load_n(&c->lost, __ATOMIC_RELAXED);
    t->unmatched_exits = __atomic_load_n(&c->unmatched_exits, __ATOMIC_RELAXED);
    t->left = __atomic_load_n(&c->left, __ATOMIC_RELAXED);
    t->jumped = __atomic_load_n(&c->jumped, __ATOMIC_RELAXED);
    t->inlined_calls = __atomic_load_n(&c->inlined_calls, __ATOMIC_RELAXED);
    t->frameless_exits = __atomic_load_n(&c->frameless_exits, __ATOMIC_RELAXED);
    t->takeback_ns = __atomic_load_n(&c->takeback_ns, __ATOMIC_RELAXED);
    t->unplaced = __atomic_load_n(&c->unplaced, __ATOMIC_RELAXED);
    return 0;
}

/* v - base[i], where base may be shorter (entries added since count from
 * zero) and a torn read may have left it behind the base by one call. */
static uint64_t diff(uint64_t v, const uint64_t *base, uint32_t n, uint32_t i)
{
    uint64_t b = base && i < n ? base[i] : 0;
    return v > b ? v - b : 0;
}

/* The part's nodes: those with a call or time in it, and their ancestors
 * (a path is named by them), in the order of the tree's (parents first). */
static int parts_nodes(const struct cg_costs *c, const struct cg_totals *cur, const struct cg_totals *base,
                       struct cg_snapshot *out)
{
    const struct cg_node *nodes = __atomic_load_n(&c->nodes, __ATOMIC_SEQ_CST);
    if (!nodes)
        return 0;
    uint32_t n = cur->nnodes, bn = base ? base->nnodes : 0;
    out->tree_nodes = n ? n - 1 : 0;
    out->tree_bound = c->node_bound;
    out->folded = cur->folded - (base && base->folded <= cur->folded ? base->folded : 0);
    out->beyond_paths = cur->beyond_paths - (base && base->beyond_paths <= cur->beyond_paths ? base->beyond_paths : 0);
    uint32_t *at = calloc(n ? n : 1, sizeof *at); /* snapshot index + 1, or 1 when wanted */
    out->nodes = calloc(n ? n : 1, sizeof *out->nodes);
    if (!at || !out->nodes) {
        free(at);
        return -1;
    }
    for (uint32_t i = n; i-- > 1;) {
        if (diff(cur->ncalls[i], base ? base->ncalls : NULL, bn, i) ||
            diff(cur->nincl[i], base ? base->nincl : NULL, bn, i) ||
            diff(cur->nself[i], base ? base->nself : NULL, bn, i))
            at[i] = 1;
        /* a parent is older than its children: marked before it is reached */
        if (at[i] && nodes[i].parent && nodes[i].parent < i)
            at[nodes[i].parent] = 1;
    }
    for (uint32_t i = 1; i < n; i++) {
        if (!at[i])
            continue;
        struct cg_snap_node *x = &out->nodes[out->nnodes];
        x->fn = nodes[i].fn;
        x->parent = nodes[i].parent < i ? at[nodes[i].parent] : 0;
        x->calls = diff(cur->ncalls[i], base ? base->ncalls : NULL, bn, i);
        x->incl = diff(cur->nincl[i], base ? base->nincl : NULL, bn, i);
        x->self = diff(cur->nself[i], base ? base->nself : NULL, bn, i);
        at[i] = (uint32_t)++out->nnodes;
    }
    free(at);
    return 0;
}

/* A part's histogram row: cur - base, bucket by bucket. The longest call
 * is cur's when it grew since base (it ended in the part); otherwise the
 * part's longest is at most the top of its highest bucket, and at most
 * cur's: the lesser of the two, a bound within the bucket's error. */
static void lat_part(uint64_t *out, const uint64_t *cur, const uint64_t *base)
{
    memset(out, 0, CG_LAT_ROW * sizeof *out);
    if (!cur)
        return;
    int top = -1;
    for (unsigned k = 0; k < CG_LAT_BUCKETS; k++) {
        out[k] = cur[k] - (base && base[k] <= cur[k] ? base[k] : 0);
        if (out[k])
            top = (int)k;
    }
    out[CG_LAT_SUM] = cur[CG_LAT_SUM] - (base && base[CG_LAT_SUM] <= cur[CG_LAT_SUM] ? base[CG_LAT_SUM] : 0);
    if (top < 0)
        out[CG_LAT_MAX] = 0;
    else if (!base || cur[CG_LAT_MAX] > base[CG_LAT_MAX] || top == CG_LAT_BUCKETS - 1)
        out[CG_LAT_MAX] = cur[CG_LAT_MAX];
    else {
        uint64_t upper = cg_lat_lower((unsigned)top + 1) - 1;
        out[CG_LAT_MAX] = upper < cur[CG_LAT_MAX] ? upper : cur[CG_LAT_MAX];
    }
}

/* Whether a histogram row counts calls that base's does not. */
static int lat_moved(const uint64_t *cur, const uint64_t *base)
{
    for (unsigned k = 0; cur && k < CG_LAT_BUCKETS; k++)
        if (cur[k] > (base ? base[k] : 0))
            return 1;
    return 0;
}

int cg_totals_part(const struct cg_costs *c, const struct cg_totals *cur, const struct cg_totals *base,
                   struct cg_snapshot *out)
{
    memset(out, 0, sizeof *out);
    const struct cg_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_SEQ_CST);
    const struct cg_self *selfs = __atomic_load_n(&c->selfs, __ATOMIC_SEQ_CST);
    out->arcs = calloc(cur->narcs ? cur->narcs : 1, sizeof *out->arcs);
    out->selfs = calloc(cur->nselfs ? cur->nselfs : 1, sizeof *out->selfs);
    if (!out->arcs || !out->selfs) {
        cg_snapshot_free(out);
        return -1;
    }
    if (cur->lat && !(out->lat = malloc((size_t)(cur->narcs ? cur->narcs : 1) * CG_LAT_ROW * sizeof *out->lat))) {
        cg_snapshot_free(out);
        return -1;
    }
    uint32_t bn = base ? base->narcs : 0, bs = base ? base->nselfs : 0;
    for (uint32_t i = 1; i < cur->narcs; i++) {
        uint64_t count = diff(cur->count[i], base ? base->count : NULL, bn, i);
        uint64_t incl = diff(cur->incl[i], base ? base->incl : NULL, bn, i);
        /* A reading of a running thread reads an arc's count, then its
         * histogram (cg_costs_totals), and an exit stores them in that
         * order: a call that ends in between is in one and not yet in the
         * other, and the next part may have nothing else on the arc. Its
         * histogram is shown all the same, on a line with no call and no
         * time (calls=0, behind #>), not taken into the base unseen: the
         * parts' histograms add up to the calls (tests/unit/test_handoff.c
         * lost 6% of them before, under load). */
        if (count == 0 && incl == 0 &&
            !(cur->lat && lat_moved(lat_row(cur->lat, cur->nlat, i), base ? lat_row(base->lat, base->nlat, i) : NULL)))
            continue;
        if (out->lat)
            lat_part(out->lat + out->narcs * CG_LAT_ROW, lat_row(cur->lat, cur->nlat, i),
                     base ? lat_row(base->lat, base->nlat, i) : NULL);
        struct cg_snap_arc *a = &out->arcs[out->narcs++];
        a->caller = arcs[i].caller;
        a->site = arcs[i].site;
        a->callee = arcs[i].callee;
        /* an inlined call has no call instruction: its place is where its
         * enter hook was called, its site */
        a->inlined = arcs[i].inlined;
        a->caller_inlined = arcs[i].caller_inlined;
        a->sampled = arcs[i].sampled;
        a->call_pc = a->site ? a->site - 1 : 0;
        a->count = count;
        a->incl = incl;
        a->runs = diff(cur->runs[i], base ? base->runs : NULL, bn, i);
        if (a->runs == 0 && count)
            a->runs = 1;
        if (count == 0 && incl != 0)
            out->continued++;
    }
    for (uint32_t i = 1; i < cur->nselfs; i++) {
        uint64_t cost = diff(cur->cost[i], base ? base->cost : NULL, bs, i);
        if (cost == 0)
            continue;
        struct cg_snap_self *s = &out->selfs[out->nselfs++];
        s->fn = selfs[i].fn;
        s->addr = selfs[i].addr;
        s->cost = cost;
        s->inlined = selfs[i].inlined;
    }
    if (parts_nodes(c, cur, base, out) != 0) {
        cg_snapshot_free(out);
        return -1;
    }
    out->depth = cur->depth;
    out->lost = cur->lost - (base && base->lost <= cur->lost ? base->lost : 0);
    out->unmatched_exits =
        cur->unmatched_exits - (base && base->unmatched_exits <= cur->unmatched_exits ? base->unmatched_exits : 0);
    out->left = cur->left - (base && base->left <= cur->left ? base->left : 0);
    out->jumped = cur->jumped - (base && base->jumped <= cur->jumped ? base->jumped : 0);
    out->inlined_calls = cur->inlined_calls -
                         (base && base->inlined_calls <= cur->inlined_calls ? base->inlined_calls : 0);
    out->frameless_exits = cur->frameless_exits -
                           (base && base->frameless_exits <= cur->frameless_exits ? base->frameless_exits : 0);
    out->takeback_ns = cur->takeback_ns - (base && base->takeback_ns <= cur->takeback_ns ? base->takeback_ns : 0);
    out->unplaced = cur->unplaced - (base && base->unplaced <= cur->unplaced ? base->unplaced : 0);
    out->compensated = cur->comp - (base && base->comp <= cur->comp ? base->comp : 0);
    out->off_pending = cur->off_pending;
    return 0;
}

int cg_totals_copy(struct cg_totals *dst, const struct cg_totals *src)
{
    if (totals_fit(dst, src->narcs, src->nselfs, src->nnodes) || lat_fit(dst, src->nlat))
        return -1;
    if (src->nlat)
        memcpy(dst->lat, src->lat, (size_t)src->nlat * CG_LAT_ROW * sizeof *dst->lat);
    memcpy(dst->ncalls, src->ncalls, src->nnodes * sizeof *dst->ncalls);
    memcpy(dst->nincl, src->nincl, src->nnodes * sizeof *dst->nincl);
    memcpy(dst->nself, src->nself, src->nnodes * sizeof *dst->nself);
    dst->folded = src->folded;
    dst->beyond_paths = src->beyond_paths;
    memcpy(dst->count, src->count, src->narcs * sizeof *dst->count);
    memcpy(dst->incl, src->incl, src->narcs * sizeof *dst->incl);
    memcpy(dst->runs, src->runs, src->narcs * sizeof *dst->runs);
    memcpy(dst->cost, src->cost, src->nselfs * sizeof *dst->cost);
    dst->depth = src->depth;
    dst->lost = src->lost;
    dst->unmatched_exits = src->unmatched_exits;
    dst->left = src->left;
    dst->jumped = src->jumped;
    dst->inlined_calls = src->inlined_calls;
    dst->frameless_exits = src->frameless_exits;
    dst->takeback_ns = src->takeback_ns;
    dst->unplaced = src->unplaced;
    dst->comp = src->comp;
    dst->off_pending = src->off_pending;
    return 0;
}

static void raise_to(uint64_t *v, const uint64_t *floor, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] < floor[i])
            v[i] = floor[i];
}

void cg_totals_raise(struct cg_totals *cur, const struct cg_totals *base)
{
    uint32_t na = cur->narcs < base->narcs ? cur->narcs : base->narcs;
    uint32_t ns = cur->nselfs < base->nselfs ? cur->nselfs : base->nselfs;
    raise_to(cur->count, base->count, na);
    raise_to(cur->incl, base->incl, na);
    raise_to(cur->runs, base->runs, na);
    raise_to(cur->cost, base->cost, ns);
    uint32_t nn = cur->nnodes < base->nnodes ? cur->nnodes : base->nnodes;
    raise_to(cur->ncalls, base->ncalls, nn);
    raise_to(cur->nincl, base->nincl, nn);
    raise_to(cur->nself, base->nself, nn);
    uint32_t nl = cur->nlat < base->nlat ? cur->nlat : base->nlat;
    if (cur->lat && base->lat)
        raise_to(cur->lat, base->lat, nl * CG_LAT_ROW);
}

int cg_totals_skip(struct cg_totals *base, const struct cg_totals *now, const struct cg_totals *since)
{
    uint32_t bn = base->narcs, bs = base->nselfs, bnn = base->nnodes;
    if (totals_fit(base, now->narcs, now->nselfs, now->nnodes))
        return -1;
    for (uint32_t i = bnn; i < now->nnodes; i++)
        base->ncalls[i] = base->nincl[i] = base->nself[i] = 0;
    for (uint32_t i = 0; i < now->nnodes; i++) {
        base->ncalls[i] += diff(now->ncalls[i], since->ncalls, since->nnodes, i);
        base->nincl[i] += diff(now->nincl[i], since->nincl, since->nnodes, i);
        base->nself[i] += diff(now->nself[i], since->nself, since->nnodes, i);
    }
    base->folded += now->folded - (since->folded <= now->folded ? since->folded : now->folded);
    base->beyond_paths +=
        now->beyond_paths - (since->beyond_paths <= now->beyond_paths ? since->beyond_paths : now->beyond_paths);
    for (uint32_t i = bn; i < now->narcs; i++)
        base->count[i] = base->incl[i] = base->runs[i] = 0;
    for (uint32_t i = bs; i < now->nselfs; i++)
        base->cost[i] = 0;
    for (uint32_t i = 0; i < now->narcs; i++) {
        base->count[i] += diff(now->count[i], since->count, since->narcs, i);
        base->incl[i] += diff(now->incl[i], since->incl, since->narcs, i);
        base->runs[i] += diff(now->runs[i], since->runs, since->narcs, i);
    }
    for (uint32_t i = 0; i < now->nselfs; i++)
        base->cost[i] += diff(now->cost[i], since->cost, since->nselfs, i);
    /* the histograms: what ended meanwhile goes to the base; a longer call
     * meanwhile is the base's longest */
    uint32_t bl = base->nlat;
    if (now->nlat > bl) {
        if (lat_fit(base, now->nlat))
            return -1;
        memset(base->lat + (size_t)bl * CG_LAT_ROW, 0, (size_t)(now->nlat - bl) * CG_LAT_ROW * sizeof *base->lat);
    }
    for (uint32_t i = 0; i < now->nlat; i++) {
        uint64_t *b = base->lat + (size_t)i * CG_LAT_ROW;
        const uint64_t *n = now->lat + (size_t)i * CG_LAT_ROW, *s0 = lat_row(since->lat, since->nlat, i);
        for (unsigned k = 0; k < CG_LAT_MAX; k++) {
            uint64_t was = s0 ? s0[k] : 0;
            b[k] += n[k] > was ? n[k] - was : 0;
        }
        if (n[CG_LAT_MAX] > (s0 ? s0[CG_LAT_MAX] : 0) && n[CG_LAT_MAX] > b[CG_LAT_MAX])
            b[CG_LAT_MAX] = n[CG_LAT_MAX];
    }
    base->lost += now->lost - (since->lost <= now->lost ? since->lost : now->lost);
    base->unmatched_exits += now->unmatched_exits -
                             (since->unmatched_exits <= now->unmatched_exits ? since->unmatched_exits : now->unmatched_exits);
    base->left += now->left - (since->left <= now->left ? since->left : now->left);
    base->jumped += now->jumped - (since->jumped <= now->jumped ? since->jumped : now->jumped);
    base->inlined_calls += now->inlined_calls -
                           (since->inlined_calls <= now->inlined_calls ? since->inlined_calls : now->inlined_calls);
    base->frameless_exits += now->frameless_exits - (since->frameless_exits <= now->frameless_exits
                                                         ? since->frameless_exits
                                                         : now->frameless_exits);
    base->unplaced += now->unplaced - (since->unplaced <= now->unplaced ? since->unplaced : now->unplaced);
    base->comp += now->comp - (since->comp <= now->comp ? since->comp : now->comp);
    return 0;
}

int cg_costs_snapshot(const struct cg_costs *c, uint64_t now, struct cg_snapshot *out)
{
    struct cg_totals t;
    memset(&t, 0, sizeof t);
    int rc = cg_costs_totals(c, now, &t) == 0 ? cg_totals_part(c, &t, NULL, out) : -1;
    if (rc)
        memset(out, 0, sizeof *out);
    cg_totals_free(&t);
    return rc;
}

void cg_snapshot_free(struct cg_snapshot *s)
{
    free(s->lat);
    s->lat = NULL;
    free(s->arcs);
    free(s->selfs);
    free(s->nodes);
    s->arcs = NULL;
    s->selfs = NULL;
    s->nodes = NULL;
    s->narcs = s->nselfs = s->nnodes = 0;
}

/* ---- merging parts --------------------------------------------------------- */

static size_t merged_hash(uintptr_t a, uintptr_t b, uintptr_t c)
{
    return (size_t)cg_arc_hash(a, b, c);
}

/* Makes an index of the entries with room for `want` of them (twice as
 * many slots). */
static int merged_reindex(uint32_t **index, size_t *mask, size_t entries, const void *v, int arcs, size_t want)
{
    size_t slots = 64;
    while (slots < 2 * (want + 1))
        slots *= 2;
    uint32_t *ix = want < UINT32_MAX ? calloc(slots, sizeof *ix) : NULL;
    if (!ix)
        return -1;
    for (size_t e = 0; e < entries; e++) {
        size_t h;
        if (arcs) {
            const struct cg_snap_arc *a = &((const struct cg_snap_arc *)v)[e];
            h = merged_hash(a->caller, a->site, a->callee);
        } else {
            const struct cg_snap_self *s = &((const struct cg_snap_self *)v)[e];
            h = merged_hash(s->fn, s->addr, 0);
        }
        while (ix[h & (slots - 1)])
            h++;
        ix[h & (slots - 1)] = (uint32_t)e + 1;
    }
    free(*index);
    *index = ix;
    *mask = slots - 1;
    return 0;
}

/* What a part adds besides its entries. */
static void merged_counters(struct cg_merged *m, const struct cg_snapshot *part)
{
    struct cg_snapshot *s = &m->snap;
    s->lost += part->lost;
    s->unmatched_exits += part->unmatched_exits;
    s->left += part->left;
    s->jumped += part->jumped;
    s->inlined_calls += part->inlined_calls;
    s->frameless_exits += part->frameless_exits;
    s->takeback_ns += part->takeback_ns;
    s->unplaced += part->unplaced;
    s->compensated += part->compensated;
    s->off_pending += part->off_pending;
    s->continued = 0;
    for (size_t i = 0; i < s->narcs; i++)
        s->continued += s->arcs[i].count == 0 && s->arcs[i].incl != 0;
    m->threads++;
}

/* The part's nodes added to the sum's, matched by path: (parent in the
 * sum, function). The part's come after their parents, and so do the
 * sum's. */
static int merged_nodes(struct cg_merged *m, const struct cg_snapshot *part)
{
    struct cg_snapshot *s = &m->snap;
    size_t want = s->nnodes + part->nnodes;
    uint32_t *to = malloc((part->nnodes ? part->nnodes : 1) * sizeof *to); /* sum index + 1 */
    if (!to || want >= UINT32_MAX || CG_GROW(s->nodes, m->node_cap, want, 256) != 0) {
        free(to);
        return -1;
    }
    if (want * 2 > m->node_mask + 1) {
        size_t slots = 64;
        while (slots < 2 * (want + 1))
            slots *= 2;
        uint32_t *ix = calloc(slots, sizeof *ix);
        if (!ix) {
            free(to);
            return -1;
        }
        for (size_t e = 0; e < s->nnodes; e++) {
            size_t h = merged_hash(s->nodes[e].fn, s->nodes[e].parent, 0);
            while (ix[h & (slots - 1)])
                h++;
            ix[h & (slots - 1)] = (uint32_t)e + 1;
        }
        free(m->node_index);
        m->node_index = ix;
        m->node_mask = slots - 1;
    }
    s->tree_bound = part->tree_bound;
    s->tree_nodes = s->tree_nodes > part->tree_nodes ? s->tree_nodes : part->tree_nodes;
    s->folded += part->folded;
    s->beyond_paths += part->beyond_paths;
    for (size_t i = 0; i < part->nnodes; i++) {
        const struct cg_snap_node *x = &part->nodes[i];
        uint32_t parent = x->parent && x->parent <= i ? to[x->parent - 1] : 0;
        size_t h = merged_hash(x->fn, parent, 0);
        for (;; h++) {
            size_t e = m->node_index[h & m->node_mask];
            if (!e) {
                struct cg_snap_node *y = &s->nodes[s->nnodes];
                *y = *x;
                y->parent = parent;
                m->node_index[h & m->node_mask] = (uint32_t)++s->nnodes;
                to[i] = (uint32_t)s->nnodes;
                break;
            }
            struct cg_snap_node *y = &s->nodes[e - 1];
            if (y->fn == x->fn && y->parent == parent) {
                y->calls += x->calls;
                y->incl += x->incl;
                y->self += x->self;
                to[i] = (uint32_t)e;
                break;
            }
        }
    }
    free(to);
    return 0;
}

int cg_merged_take(struct cg_merged *m, struct cg_snapshot *part)
{
    struct cg_snapshot *s = &m->snap;
    if (s->narcs || s->nselfs || !part->narcs || !part->nselfs || (m->paths && part->nodes))
        return cg_merged_add(m, part);
    /* The first part: its entries, unique in it, are the sum; a copy of a
     * 100,000-arc part was a few ms of fresh pages. */
    if (merged_reindex(&m->arc_index, &m->arc_mask, part->narcs, part->arcs, 1, part->narcs) != 0 ||
        merged_reindex(&m->self_index, &m->self_mask, part->nselfs, part->selfs, 0, part->nselfs) != 0)
        return -1;
    free(s->arcs);
    free(s->selfs);
    free(s->lat);
    s->lat = part->lat;
    m->lat_cap = part->lat ? part->narcs : 0;
    part->lat = NULL;
    s->arcs = part->arcs;
    m->arc_cap = s->narcs = part->narcs;
    s->selfs = part->selfs;
    m->self_cap = s->nselfs = part->nselfs;
    part->arcs = NULL;
    part->selfs = NULL;
    part->narcs = part->nselfs = 0;
    merged_counters(m, part);
    return 0;
}

/* Room for `want` histogram rows in the sum, the new ones zero. */
static int merged_lat_fit(struct cg_merged *m, size_t want)
{
    if (want <= m->lat_cap && m->snap.lat)
        return 0;
    size_t cap = m->lat_cap * 2 > want ? m->lat_cap * 2 : want + 256;
    uint64_t *q = realloc(m->snap.lat, cap * CG_LAT_ROW * sizeof *q);
    if (!q)
        return -1;
    size_t had = m->snap.lat ? m->lat_cap : 0;
    memset(q + had * CG_LAT_ROW, 0, (cap - had) * CG_LAT_ROW * sizeof *q);
    m->snap.lat = q;
    m->lat_cap = cap;
    return 0;
}

int cg_merged_add(struct cg_merged *m, const struct cg_snapshot *part)
{
    struct cg_snapshot *s = &m->snap;
    /* Room for every entry of the part at once: growing step by step
     * rehashed the whole sum each time (a 100,000-arc part took 15 ms). */
    size_t want = s->narcs + part->narcs;
    if ((want * 2 > m->arc_mask + 1 &&
         merged_reindex(&m->arc_index, &m->arc_mask, s->narcs, s->arcs, 1, want) != 0) ||
        CG_GROW(s->arcs, m->arc_cap, want, 256) != 0)
        return -1;
    if ((part->lat || s->lat) && merged_lat_fit(m, want) != 0)
        return -1;
    want = s->nselfs + part->nselfs;
    if ((want * 2 > m->self_mask + 1 &&
         merged_reindex(&m->self_index, &m->self_mask, s->nselfs, s->selfs, 0, want) != 0) ||
        CG_GROW(s->selfs, m->self_cap, want, 256) != 0)
        return -1;
    for (size_t i = 0; i < part->narcs; i++) {
        const struct cg_snap_arc *a = &part->arcs[i];
        size_t h = merged_hash(a->caller, a->site, a->callee);
        for (;; h++) {
            size_t e = m->arc_index[h & m->arc_mask];
            if (!e) {
                if (part->lat)
                    memcpy(s->lat + s->narcs * CG_LAT_ROW, part->lat + i * CG_LAT_ROW,
                           CG_LAT_ROW * sizeof *s->lat);
                s->arcs[s->narcs] = *a;
                m->arc_index[h & m->arc_mask] = (uint32_t)++s->narcs;
                break;
            }
            struct cg_snap_arc *x = &s->arcs[e - 1];
            if (x->caller == a->caller && x->site == a->site && x->callee == a->callee &&
                x->inlined == a->inlined) {
                if (part->lat) {
                    uint64_t *to = s->lat + (e - 1) * CG_LAT_ROW;
                    const uint64_t *from = part->lat + i * CG_LAT_ROW;
                    for (unsigned k = 0; k < CG_LAT_MAX; k++)
                        to[k] += from[k];
                    if (from[CG_LAT_MAX] > to[CG_LAT_MAX])
                        to[CG_LAT_MAX] = from[CG_LAT_MAX];
                }
                x->count += a->count;
                x->incl += a->incl;
                x->runs += a->runs;
                x->sampled &= a->sampled; /* a hook's in one part is a hook's */
                break;
            }
        }
    }
    for (size_t i = 0; i < part->nselfs; i++) {
        const struct cg_snap_self *c = &part->selfs[i];
        size_t h = merged_hash(c->fn, c->addr, 0);
        for (;; h++) {
            size_t e = m->self_index[h & m->self_mask];
            if (!e) {
                s->selfs[s->nselfs] = *c;
                m->self_index[h & m->self_mask] = (uint32_t)++s->nselfs;
                break;
            }
            struct cg_snap_self *x = &s->selfs[e - 1];
            if (x->fn == c->fn && x->addr == c->addr) {
                x->cost += c->cost;
                break;
            }
        }
    }
    if (m->paths && part->nodes && merged_nodes(m, part) != 0)
        return -1;
    merged_counters(m, part);
    return 0;
}

void cg_merged_free(struct cg_merged *m)
{
    free(m->snap.nodes);
    free(m->snap.lat);
    free(m->node_index);
    free(m->snap.arcs);
    free(m->snap.selfs);
    free(m->arc_index);
    free(m->self_index);
    memset(m, 0, sizeof *m);
}
