/* The cost tables' constants (data layer): what the values in a thread's
 * tables mean (the sink, an arc's states, an inlined call's kinds) and
 * their fixed sizes. The first of the four headers of the cost tables, as
 * jemalloc splits prof_types.h, prof_structs.h, prof_externs.h and
 * prof_inlines.h: costs_structs.h (the structures), costs_externs.h (the
 * functions' declarations), costs_inlines.h (the hooks' paths, inline);
 * costs.h includes them all, and says what is recorded and why it is laid
 * out so. */
#ifndef CG_COSTS_TYPES_H
#define CG_COSTS_TYPES_H

#include <stdint.h>

/* One more of a thread's counter that a dump reads meanwhile (the part's
 * desc: lines): stored whole, by its one writer, the thread, with no
 * read-modify-write on the bus. */
#define CG_COUNT(x) __atomic_store_n(&(x), (x) + 1, __ATOMIC_RELAXED)

#define CG_SINK 0u

/* An arc's state (struct cg_arc.state, and a frame's copy of it): counted,
 * or how its calls keep no frame. An arc whose callee the filters leave
 * out (skipped, throttled): its calls are not counted and its own time is
 * its caller's, charged at the call site; the calls it makes are recorded
 * as made by the nearest caller that is not left out, at that call site.
 * A throttled arc keeps the calls it counted before it was throttled. */
enum { CG_ARC_COUNTED = 0, CG_ARC_SKIPPED = 1, CG_ARC_THROTTLED = 2, CG_ARC_DROPPED = 3, CG_ARC_FOLDED = 4 };
/* Every arc but a counted one is of calls that keep no frame (fold.h): of
 * a function left out (skipped, throttled: its hook calls taken back), or
 * inlined and folded into its host (CG_ARC_FOLDED). CG_ARC_DROPPED and
 * CG_ARC_FOLDED: the hooks find the arc and drop the call at once (its hook
 * calls come again where they could not be taken back). The counts an arc
 * had before are kept. */


/* An arc's code_off when where its enter hook is called is not known. */
#define CG_NO_CODE INT32_MIN
/* struct cg_arc.inlined: a call judged inlined below the top frame (by the
 * unwind tables: cg_costs_enter_as), beside 1 (in the top frame's own). */
#define CG_INLINED_BELOW 2

/* How far below the top frame a call's hook frame may be and still be a
 * call inlined into it (cg_real_call_below): pushed arguments take a few
 * words; a real call's frame may be large, and then it is one anyway. */
#define CG_INLINED_REACH (64 * sizeof(uintptr_t))

/* Arrays outgrown that a table keeps until no dump reads them. */
#define CG_MAX_RETIRED 96

/* Sampled time: the most frames of code without hooks a sample charges
 * (cg_costs_sample), and the most self entries the sampler makes on a
 * thread (cg_costs_sample_at). */
#define CG_SAMPLE_DEPTH 8
#define CG_SAMPLE_PCS 16384

/* The counting hooks (CGPROF_STACKS=unwind): their table's first size
 * (cg_costs_count_grow), the deepest walk a sample makes, and the walk's
 * buffers (return addresses, functions, signal-frame flags). */
#define CG_COUNT_INITIAL 1024
#define CG_UNWIND_DEPTH 512
#define CG_COUNT_WALK_BYTES (CG_UNWIND_DEPTH * (2 * sizeof(uintptr_t) + 1))

#endif
