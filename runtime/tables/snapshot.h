/* A snapshot: what the output files are written from (writer.c,
 * pathwriter.c, the sums of total.c): a thread's part, or a merge of parts,
 * copied out of the live tables (reading.h), in plain arrays that nothing
 * else writes. Costs in nanoseconds; the latency rows in latency.h's
 * layout. */
#ifndef CG_SNAPSHOT_H
#define CG_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

/* The node that stands for every path past CGPROF_PATHS_MAX (see costs_structs.h,
 * "call paths"), in the live tables and in snapshots. */
#define CG_NODE_BEYOND ((uintptr_t)1) /* no function starts at address 1 */

struct cg_snap_arc {
    uintptr_t caller, site, callee;
    uintptr_t call_pc; /* address of the call instruction (site - 1 until the
                          dump decodes it), naming the call's position; for
                          an inlined call, where its enter hook was called;
                          0 when no call made this frame (a signal handler) */
    uint64_t count; /* calls, including those still running at the snapshot */
    uint64_t incl;  /* nanoseconds */
    uint64_t runs;
    uint8_t inlined;        /* cg_arc's */
    uint8_t caller_inlined; /* cg_arc's: call_pc is in the host's code */
    uint8_t sampled;        /* cg_arc's: made by the sampler, not by a hook */
};

struct cg_snap_self {
    uintptr_t fn, addr;
    uint64_t cost; /* nanoseconds */
    uint32_t inlined; /* cg_self's: addr is in the host's code */
};

/* A path's node in a part: parent is the index + 1 of its parent in the
 * snapshot's nodes (which come after their parents), 0 at the root. */
struct cg_snap_node {
    uintptr_t fn; /* CG_NODE_BEYOND: the paths past the bound */
    uint32_t parent;
    uint64_t calls, incl, self;
};

struct cg_snapshot {
    struct cg_snap_arc *arcs;
    size_t narcs;
    struct cg_snap_self *selfs;
    size_t nselfs;
    /* call paths: NULL when off; the tree's size, bound and foldings
     * (struct cg_costs) */
    struct cg_snap_node *nodes;
    size_t nnodes;
    uint32_t tree_nodes, tree_bound;
    uint64_t folded, beyond_paths;
    uint64_t lost, unmatched_exits, left, jumped;
    uint64_t inlined_calls, frameless_exits, takeback_ns; /* struct cg_costs's */
    uint64_t unplaced;  /* samples left at their frame's position (cg_costs_sample_at) */
    uint64_t ring_lost; /* CGPROF_SAMPLE_TIMER=ring: records the kernel dropped */
    uint32_t ring_refused; /* CGPROF_SAMPLE_TIMER=ring: this thread sampled with signals (struct cg_costs) */
    uint64_t compensated; /* ns of the hooks' own time left out (CGPROF_COMPENSATE) */
    uint64_t off_pending; /* ns off the CPU since the thread's last hook, left out (CGPROF_OFF_CPU) */
    uint32_t depth;     /* frames still running when it was taken */
    uint64_t continued; /* arcs with time but no new call: calls counted in an earlier part */
    /* CGPROF_LATENCY: CG_LAT_ROW counters per arc, in the arcs' order, of
     * the calls that ended in the part (the longest: see cg_reading_part);
     * NULL when off */
    uint64_t *lat;
};
void cg_snapshot_free(struct cg_snapshot *s);

#endif
