/* Call paths' nodes (data layer; CGPROF_PATHS): the calling-context
 * tree's nodes made and indexed, folded onto an ancestor for recursion,
 * cut at the bound (costs_structs.h, "call paths"); the hooks find the
 * nodes inline (cg_node_find), this makes them. */
#include "costs_inlines.h"

#include <errno.h>
#include <sys/mman.h>

#include "snapshot.h"

enum { INITIAL_NODES = 1024 };

/* The node index: a power of two of slots, at most 3/4 used. */
static CG_NOINSTR int node_index_make(struct cg_costs *c, uint32_t slots)
{
    struct cg_node_slot *ix = cg_dense_map((size_t)slots * sizeof *ix);
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

CG_NOINSTR int cg_paths_init(struct cg_costs *c, uint32_t bound)
{
    if (bound < 16)
        bound = 16;
    c->node_bound = bound;
    c->node_cap = bound < INITIAL_NODES ? bound : INITIAL_NODES;
    c->nodes = cg_dense_map(sizeof(struct cg_node) * c->node_cap);
    c->nnodes = 1; /* node 0: the sink */
    return c->nodes && node_index_make(c, 2 * INITIAL_NODES) == 0 ? 0 : -1;
}

/* A new node (fn, parent), or 0 (the sink) when there is no room or memory. */
static CG_NOINSTR uint32_t node_new(struct cg_costs *c, uint32_t parent, uintptr_t fn, uint32_t limit)
{
    if (c->nnodes >= limit)
        return CG_SINK;
    if (c->nnodes == c->node_cap &&
        cg_dense_grow(c, (void **)&c->nodes, &c->node_cap, c->nnodes, sizeof(struct cg_node)) != 0) {
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

/* The "beyond" node of parent, 0 if it has none yet. */
static CG_NOINSTR uint32_t beyond_of(const struct cg_costs *c, uint32_t parent)
{
    for (uint32_t i = (uint32_t)cg_node_hash(parent, CG_NODE_BEYOND);; i++) {
        const struct cg_node_slot *s = &c->node_index[i & c->node_mask];
        if (s->node == 0 || (s->fn == CG_NODE_BEYOND && s->parent == parent))
            return s->node;
    }
}

static CG_NOINSTR uint32_t beyond_new(struct cg_costs *c, uint32_t parent, uint32_t limit)
{
    uint32_t node = node_new(c, parent, CG_NODE_BEYOND, limit);
    node_index_add(c, parent, CG_NODE_BEYOND, node);
    return node;
}

/* Where a new path past the cut is counted: its parent's "beyond" node,
 * made while the bound's last sixteenth has room; without room for the
 * parent's own, the nearest ancestor's (the path is past the bound under
 * it too); without any, the root's, for which the tree's last node, the
 * bound-th, is kept. So a call is always on some node (only memory running
 * out leaves it to the sink, counted as lost). Before, a parent without
 * room for its own sent its calls to the sink, in no file and unsaid: with
 * CGPROF_PATHS_MAX=16, whose last sixteenth is one node, every parent past
 * the cut but the first. */
static CG_NOINSTR uint32_t beyond_node(struct cg_costs *c, uint32_t parent)
{
    uint32_t node = beyond_of(c, parent);
    if (node || (node = beyond_new(c, parent, c->node_bound)) != CG_SINK)
        return node;
    for (uint32_t a = parent; a;) {
        a = c->nodes[a].parent;
        if ((node = beyond_of(c, a)) != 0)
            return node;
    }
    return beyond_new(c, 0, c->node_bound + 1);
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
                /* past the cut: a "beyond" node (beyond_node) */
                node = beyond_node(c, parent);
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
