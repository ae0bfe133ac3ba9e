/* Reading a thread's live tables (costs.h) from another thread (a dump),
 * while the thread may be running and writing them, and taking parts.
 *
 * A dump writes what a thread did since the previous one. The dumper never
 * writes into a running thread's tables: it keeps, per thread, the reading
 * it last reported (a baseline), and a part is the reading now minus the
 * baseline. A reading is the thread's counts and costs summed since it
 * started, the calls in progress included (counted once, with their cost
 * so far), so a call running across a dump is counted in the part in which
 * it was first seen running, and each later part gets only the time that
 * came after. Parts add up exactly to the whole run.
 *
 * Words: a reading is one thread's; "total" is kept for the process's sum
 * of every thread's parts (CGPROF_TOTAL, callgrind.total.<pid>: total.h).
 * Uses malloc: never from a hook. */
#ifndef CG_READING_H
#define CG_READING_H

#include <stdint.h>

#include "costs.h"
#include "snapshot.h"

/* A thread's counts and costs since it started (see above), by the index
 * of the entry in its live tables. */
struct cg_reading {
    uint64_t *count, *incl, *runs; /* per arc index */
    uint32_t narcs;
    uint64_t *cost;                /* per self index */
    uint32_t nselfs;
    uint64_t *ncalls, *nincl, *nself; /* per node index (CGPROF_PATHS) */
    uint32_t nnodes;
    uint64_t folded, beyond_paths;
    uint32_t depth;                /* calls in progress at the reading */
    uint64_t lost, unmatched_exits, left, jumped, unplaced, ring_lost;
    uint32_t ring_refused;         /* a state, not a count (struct cg_costs's) */
    uint64_t inlined_calls, frameless_exits, takeback_ns;
    uint64_t comp;                 /* struct cg_costs's comp */
    uint64_t off_pending;          /* time off the CPU left out of the reading (dump.c) */
    uint64_t *lat;                 /* CG_LAT_ROW per arc (CGPROF_LATENCY), NULL when off */
    uint32_t nlat;                 /* its rows */
};

/* Reads `c` at `now` into *t (its arrays are reallocated to fit). now =
 * CG_NOW: the clock read after the tables are copied and before the frames
 * are, for a thread that may be running (see reading.c).
 * Returns 0, or -1 if out of memory. */
#define CG_NOW UINT64_MAX
int cg_reading_take(const struct cg_costs *c, uint64_t now, struct cg_reading *t);
/* The part cur - base (base NULL: cur), as a snapshot keyed by c's entries. */
int cg_reading_part(const struct cg_costs *c, const struct cg_reading *cur, const struct cg_reading *base,
                    struct cg_snapshot *out);
/* base += now - since (entries absent from `since` count from zero). */
int cg_reading_skip(struct cg_reading *base, const struct cg_reading *now, const struct cg_reading *since);
/* dst = src. */
int cg_reading_copy(struct cg_reading *dst, const struct cg_reading *src);
/* Raises each entry of cur to at least base's, before cur becomes the
 * base. A reading of a running thread misses a call that ends between the
 * copy of the arcs and that of the frames (counted in neither:
 * cg_reading_take), and reads less than a base that had it in progress; the part
 * loses nothing (cg_reading_part's differences stop at zero), but a base
 * that went back with it would have the next part count the call again. */
void cg_reading_raise(struct cg_reading *cur, const struct cg_reading *base);
void cg_reading_free(struct cg_reading *t);

/* Copies the tables of `c` (which may belong to a running thread) and adds
 * the calls still in progress with their cost up to `now`: the part of the
 * whole run so far (cg_reading_take, then cg_reading_part from nothing).
 * Entries with nothing counted are left out. Returns 0, or -1 if out of
 * memory. */
int cg_reading_snapshot(const struct cg_costs *c, uint64_t now, struct cg_snapshot *out);

#endif
