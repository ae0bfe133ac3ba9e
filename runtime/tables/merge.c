#include "merge.h"

#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "util.h"

/* The hash of an entry by two of its words: an arc's site and callee (as
 * cg_arc_hash, costs_inlines.h: the call site all but decides the
 * caller), a self entry's address and function, a node's parent and
 * function. */
static size_t merged_hash(uintptr_t a, uintptr_t b)
{
    return (size_t)cg_hash2(a, b);
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
            h = merged_hash(a->site, a->callee);
        } else {
            const struct cg_snap_self *s = &((const struct cg_snap_self *)v)[e];
            h = merged_hash(s->addr, s->fn);
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
            size_t h = merged_hash(s->nodes[e].parent, s->nodes[e].fn);
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
        size_t h = merged_hash(parent, x->fn);
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
        size_t h = merged_hash(a->site, a->callee);
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
        size_t h = merged_hash(c->addr, c->fn);
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
