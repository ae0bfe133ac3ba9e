/* The latency histograms' layout (CGPROF_LATENCY): one row of counters per
 * arc, which the hooks fill (costs_inlines.h, cg_lat_add), a reading copies and
 * subtracts (reading.c), a merge adds up (merge.c) and the writers print.
 * Pure: no state, no I/O. */
#ifndef CG_LATENCY_H
#define CG_LATENCY_H

#include <stdint.h>

/* Per arc, the calls that ended by inclusive time (ns), in log-linear
 * buckets: a time below 4 ns has a bucket of its own; above, each power of
 * two [2^e, 2^(e+1)) is cut into 4 buckets of equal width 2^(e-2), bucket
 * 4(e-1) + the two bits under the top one. A bucket's width is at most a
 * quarter of its lower bound, so its midpoint is within 12.5% of any time in
 * it. 160 buckets reach 2^41 ns (36 minutes); longer calls go to the last.
 * After the buckets, the row holds the sum of the times and the longest.
 * The hooks store the longest only: the sum is the arc's incl (the time of
 * the calls that ended), which a reading copies into the row.
 * Why per arc, not per function: the exit has the arc at hand (the frame's),
 * so recording is one bucket index and three stores, and a function's
 * histogram is the sum of its arcs' (same buckets, exact), made at the dump.
 * Written as counters a dump reads meanwhile: stored whole, by the thread. */
#define CG_LAT_BUCKETS 160
#define CG_LAT_SUM CG_LAT_BUCKETS
#define CG_LAT_MAX (CG_LAT_BUCKETS + 1)
#define CG_LAT_ROW (CG_LAT_BUCKETS + 2)

/* Bucket 4(e-1) + q of v in [2^e, 2^(e+1)) is 4(e-2) + (v >> (e-2)): the
 * three bits at the top of v after the shift are 4 + q. With e at least 2
 * (v | 4), a v below 4 is its own bucket by the same formula: no branch.
 * 8 instructions (callgrind), where the two cases written apart took 20. */
static inline unsigned cg_lat_bucket(uint64_t v)
{
    unsigned s = 61u - (unsigned)__builtin_clzll(v | 4); /* e - 2 */
    unsigned i = (s << 2) + (unsigned)(v >> s);
    return i < CG_LAT_BUCKETS ? i : CG_LAT_BUCKETS - 1;
}

/* The least time of bucket i. */
static inline uint64_t cg_lat_lower(unsigned i)
{
    if (i < 4)
        return i;
    return (uint64_t)(4 | (i & 3)) << ((i >> 2) - 1);
}

#endif
