/* A thread's cost tables made, zeroed and destroyed (data layer; what they
 * hold: costs.h); the ring watched for the hooks (CGPROF_OFF_CPU,
 * CGPROF_SAMPLE_TIMER=ring), and the counting hooks' table grown. */
#include "costs.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { INITIAL_FRAMES = 1024, INITIAL_ARCS = 1024, INITIAL_SELFS = 1024 };

int cg_costs_init(struct cg_costs *c, uint32_t paths_bound)
{
    memset(c, 0, sizeof *c);
    c->frame_cap = INITIAL_FRAMES;
    c->arc_cap = INITIAL_ARCS;
    c->self_cap = INITIAL_SELFS;
    c->frames = cg_dense_map(sizeof(struct cg_frame) * c->frame_cap);
    c->arcs = cg_dense_map(sizeof(struct cg_arc) * c->arc_cap);
    c->selfs = cg_dense_map(sizeof(struct cg_self) * c->self_cap);
    c->narcs = c->nselfs = 1; /* entry 0: the sink */
    if (!c->frames || !c->arcs || !c->selfs ||
        cg_dense_index(&c->arc_index, &c->arc_mask, 2 * INITIAL_ARCS, 1, cg_arcs_hash_at, c) ||
        cg_dense_index(&c->self_index, &c->self_mask, 2 * INITIAL_SELFS, 1, cg_selfs_hash_at, c) ||
        (paths_bound && cg_paths_init(c, paths_bound) != 0)) {
        cg_costs_destroy(c);
        return -1;
    }
    return 0;
}

int cg_costs_latency_on(struct cg_costs *c)
{
    /* mapped, not touched: a row's pages are made as its arcs are */
    c->lat = cg_dense_map(sizeof(uint64_t) * CG_LAT_ROW * c->arc_cap);
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
    cg_dense_retire(c, p, len);
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
    struct cg_count_table *t = cg_dense_map(cg_costs_count_bytes(n));
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
        c->count_walk = cg_dense_map(CG_COUNT_WALK_BYTES); /* NULL: the samples are not placed */
    __atomic_store_n(&c->count, t, __ATOMIC_SEQ_CST);
    if (old)
        cg_dense_retire(c, old, cg_costs_count_bytes(old->mask + 1));
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
