/* Per-thread cost tables and shadow stack: the data the hooks update.
 *
 * What is recorded (see docs/costs.md):
 *  - one arc per (caller function, call site, callee function): how many
 *    calls completed and their summed inclusive cost. Nested recursive calls
 *    are included in the outer call's cost, as in Callgrind's own files.
 *  - self cost per (function, instruction address): the time from a
 *    function's entry to its first call is charged at its entry address; the
 *    time after a call returns, up to the next call or the exit, at that
 *    call's return address (the call_site the hooks receive).
 *
 * Memory layout, and why:
 *  - arcs and self entries live in dense arrays, found through open-addressing
 *    hash indexes of 32-bit slots. A frame keeps indexes into the dense arrays,
 *    so an entry is looked up once per call (at entry) and never at exit: the
 *    arc remembers the self entries its entry and its return charge.
 *  - everything comes from mmap, never malloc: the hooks run inside malloc,
 *    in signal handlers and in threads being torn down.
 *  - index 0 of each dense array is a sink. When memory runs out the hooks
 *    charge the sink and count the loss instead of branching on failure.
 *  - another thread (a dump) may read the dense arrays while this thread
 *    writes: an entry is filled before the count that publishes it is stored
 *    (release), and an array outgrown is not unmapped while a reader may hold
 *    it (see cg_readers). The hash indexes are private to the owning thread.
 *
 * This header is the hooks' (and the sampler's, which charges the same
 * tables): a dump reads the tables through reading.h, and the output files
 * see only what it copies out, snapshots (snapshot.h).
 */
#ifndef CG_COSTS_H
#define CG_COSTS_H

/* The four headers, in the order they build on each other (each says its
 * part; jemalloc's prof_types.h, prof_structs.h, prof_externs.h and
 * prof_inlines.h are the model). */
#include "costs_types.h"
#include "costs_structs.h"
#include "costs_externs.h"
#include "costs_inlines.h"

/* What the tables' users meet with them: the sets the filters hand them
 * (addrset.h), the latency rows' layout (latency.h), the snapshots a dump
 * copies them into (snapshot.h). */
#include "addrset.h"
#include "latency.h"
#include "snapshot.h"

#endif
