#include "costs.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
    if (c->count)
        munmap(c->count, cg_costs_count_bytes(c->count->mask + 1));
    for (unsigned i = 0; i < c->nkept; i++)
        munmap(c->kept[i].p, c->kept[i].len);
    if (c->count_walk)
        munmap(c->count_walk, CG_COUNT_WALK_BYTES);
    if (c->count_callbacks)
        munmap(c->count_callbacks, c->count_callbacks_len);
    if (c->switch_slot)
        munmap(c->switch_slot, (size_t)sysconf(_SC_PAGESIZE));
    for (unsigned i = 0; i < c->nretired; i++)
        munmap(c->retired[i].p, c->retired[i].len);
    memset(c, 0, sizeof *c);
}

int cg_costs_watch(struct cg_costs *c, const volatile uint64_t *head)
{
    if (!c->switch_slot) {
        size_t len = (size_t)sysconf(_SC_PAGESIZE);
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        /* Linux 4.14 and later; without it no ring */
        if (madvise(p, len, MADV_WIPEONFORK) != 0) {
            munmap(p, len);
            return -1;
        }
        c->switch_slot = p;
    }
    c->switch_slot->mine = 1;
    __atomic_store_n(&c->switch_slot->head, head, __ATOMIC_RELEASE);
    __atomic_store_n(&c->switch_head, (const volatile uint64_t *const volatile *)&c->switch_slot->head,
                     __ATOMIC_RELEASE);
    return 0;
}

void cg_costs_unwatch(struct cg_costs *c)
{
    if (c->switch_slot)
        __atomic_store_n(&c->switch_slot->head, NULL, __ATOMIC_RELEASE);
}

int cg_costs_watching(const struct cg_costs *c)
{
    return c->switch_slot && __atomic_load_n(&c->switch_slot->head, __ATOMIC_ACQUIRE) != NULL;
}

int cg_costs_ring_mine(const struct cg_costs *c)
{
    return c->switch_slot && c->switch_slot->mine;
}

size_t cg_costs_count_bytes(uint64_t slots)
{
    return sizeof(struct cg_count_table) + (size_t)slots * sizeof(struct cg_count_slot);
}

void cg_costs_count_retire(struct cg_costs *c, void *p, size_t len)
{
    /* a kept mapping no longer in use */
    for (unsigned i = 0; i < c->nkept; i++)
        if (c->kept[i].p == p) {
            c->kept[i] = c->kept[--c->nkept];
            break;
        }
    retire(c, p, len);
}

void cg_costs_count_keep(struct cg_costs *c, void *p, size_t len)
{
    if (c->nkept < sizeof c->kept / sizeof c->kept[0]) {
        c->kept[c->nkept].p = p;
        c->kept[c->nkept].len = len;
        c->nkept++;
    }
}

int cg_costs_count_grow(struct cg_costs *c)
{
    struct cg_count_table *old = c->count;
    uint64_t n = old ? (old->mask + 1) * 2 : CG_COUNT_INITIAL;
    if (n > ((uint64_t)1 << 28))
        return -1;
    struct cg_count_table *t = map(cg_costs_count_bytes(n));
    if (!t)
        return -1;
    t->mask = n - 1;
    for (uint64_t i = 0; old && i <= old->mask; i++) {
        const struct cg_count_slot *o = &old->slot[i];
        if (!o->ret)
            continue;
        uint64_t k = cg_count_hash(o->ret, o->site);
        while (t->slot[k & t->mask].ret)
            k++;
        t->slot[k & t->mask] = *o;
        t->used++;
    }
    if (!old && !c->count_walk)
        c->count_walk = map(CG_COUNT_WALK_BYTES); /* NULL: the samples are not placed */
    __atomic_store_n(&c->count, t, __ATOMIC_SEQ_CST);
    if (old)
        retire(c, old, cg_costs_count_bytes(old->mask + 1));
    return 0;
}

void cg_costs_zero(struct cg_costs *c, uint64_t now)
{
    for (uint32_t i = 0; i < c->narcs; i++) {
        c->arcs[i].count = c->arcs[i].incl = c->arcs[i].runs = 0;
    }
    for (uint32_t i = 0; i < c->nselfs; i++)
        c->selfs[i].cost = 0;
    if (c->count)
        for (uint64_t i = 0; i <= c->count->mask; i++)
            c->count->slot[i].count = 0;
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
    return cg_return_address_above(site, sp, c->frames[c->depth - 1].sp);
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
        uint32_t a = arc_lookup(c, from, from_site, fns[i]);
        if (a == CG_SINK) {
            /* the first call is made from the top frame's code: its
             * host's, when the top frame is inlined */
            a = arc_insert(c, from, from_site, fns[i], 0, 0, i == 0 && first_inlined, 0);
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
        if ((new_visit || !seen) && (a->sampled || (!visits_only && a->skip == CG_ARC_COUNTED &&
                                                     skip_of(c, a->callee) == CG_ARC_COUNTED))) {
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
    return sample_chain(c, caller, site0, top_inlined(c), top->node, 0, fns, sites, n, pc, period, new_visit, last,
                        nlast);
}

static uint32_t self_lookup(const struct cg_costs *c, uintptr_t fn, uintptr_t addr)
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
    for (uint32_t i = (uint32_t)cg_arc_hash(caller, site, callee);; i++) {
        uint32_t slot = c->arc_index[i & c->arc_mask];
        if (slot == 0)
            return CG_SINK;
        const struct cg_arc *a = &c->arcs[slot];
        if (a->site == site && a->callee == callee && !a->inlined && !a->sampled && (!caller || a->caller == caller))
            return slot;
    }
}

int cg_costs_charge_self(struct cg_costs *c, uintptr_t fn, uintptr_t pc, uint64_t period)
{
    uint32_t e = self_lookup(c, fn, pc);
    if (e == CG_SINK) {
        /* bounded as cg_costs_sample_at's */
        if (c->sample_pcs >= CG_SAMPLE_PCS) {
            CG_COUNT(c->unplaced);
            return -1;
        }
        int saved = errno;
        e = self_find(c, fn, pc, 0);
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

