/* The cost tables' functions, declared (data layer): those the rest of the
 * runtime calls, the slow paths of the inline ones (costs_inlines.h), and
 * those the tables' files share; by the file that defines them, each of
 * the data layer's tables/ folder: dense.c (the memory), paths.c (call
 * paths' nodes), arcs.c (arcs and self entries), repair.c (frames ended
 * without their exit hook), sampled.c (sampled time), costs.c (a table's
 * life). As jemalloc's prof_externs.h declares the functions of its
 * prof_*.c files: a header before them in the layers (the inline paths
 * call some of them), whose functions are each defined once, by a later
 * module of the same folder. */
#ifndef CG_COSTS_EXTERNS_H
#define CG_COSTS_EXTERNS_H

#include <stddef.h>
#include <stdint.h>

#include "costs_structs.h"

/* ---- dense.c: the tables' memory ------------------------------------------ */

/* Dumps in progress anywhere in the process. A table that grows frees its
 * outgrown arrays only when this is zero; a dump increments it before it
 * reads any table pointer. Both sides use sequentially consistent atomics
 * (the store-then-load pattern of Dekker's algorithm): either the grower
 * sees the dump and keeps the old arrays, or the dump sees the new ones. */
extern unsigned long cg_readers;

/* An anonymous mapping of len bytes, zeroed; NULL when refused. */
void *cg_dense_map(size_t len);
/* An outgrown array of c's: unmapped now if no dump may read it, else
 * kept (c->retired) until none does. */
void cg_dense_retire(struct cg_costs *c, void *p, size_t len);
/* Replaces the dense array *arr (*cap items of item bytes) by one twice as
 * large, copying its first n items, the new pointer published before the
 * old array is retired. 0, or -1 when it cannot grow (unchanged). */
int cg_dense_grow(struct cg_costs *c, void **arr, uint32_t *cap, uint32_t n, size_t item);
/* Rebuilds a private hash index (*index, *mask) at `slots` entries over
 * entries 1 to n - 1 of a dense array of c, entry e hashed by
 * hash_of(c, e). The old index is unmapped at once: no other thread ever
 * reads it. 0, or -1 without memory (unchanged). */
int cg_dense_index(uint32_t **index, uint32_t *mask, uint32_t slots, uint32_t n,
                   uint64_t (*hash_of)(const struct cg_costs *, uint32_t), const struct cg_costs *c);
/* The shadow stack grown (a hook's slow path: errno kept); c->frame_cap
 * unchanged when it cannot. */
void cg_stack_grow(struct cg_costs *c);

/* ---- paths.c: call paths' nodes ------------------------------------------- */

/* The node table and its index made for at most bound nodes (at least 16).
 * 0, or -1 without memory. */
int cg_paths_init(struct cg_costs *c, uint32_t bound);
/* The node of fn called on path `parent`, made when new (the slow path:
 * folding, the bound). c->nodes must not be NULL. */
uint32_t cg_node_find_slow(struct cg_costs *c, uint32_t parent, uintptr_t fn);

/* ---- arcs.c: arcs and self entries ---------------------------------------- */

/* Slow path of cg_arc_find (costs_inlines.h): the arc is new, made (the
 * filters applied). errno kept. */
uint32_t cg_arc_find_slow(struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee, int inlined,
                          uintptr_t code);
/* An arc's count reached CGPROF_THROTTLE's N (in the exit of its Nth call):
 * if its calls took less than T ns on average, or its callee is throttled
 * already (by another arc, or thread), its later calls are left out. The
 * calls counted so far stay. */
void cg_throttle_check(struct cg_costs *c, uint32_t arc);
/* The arc (caller, key, fn) made or found, marked kind (CG_ARC_DROPPED or
 * CG_ARC_FOLDED): the fast path then drops the call by it. inlined: key is
 * the hook's return address (a call in the top frame's frame). */
void cg_costs_drop_arc(struct cg_costs *c, uintptr_t caller, uintptr_t key, uintptr_t fn, int inlined, int kind);
/* The arc (site, callee) of a real call, whatever its caller, or CG_SINK:
 * the arc a sample charges a frame's inclusive time to (CGPROF_STACKS=
 * unwind: the site decides the caller, except for a signal handler's,
 * whose caller is the function the signal interrupted: given, or 0 for
 * any). */
uint32_t cg_costs_arc_of(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee);
/* Between the tables' files: the hashes of arc e and self entry e (for
 * their indexes); the self entry (fn, addr), made when new (inlined: fn's
 * frame runs in another function's code, where addr lies), or looked up
 * only (CG_SINK when absent); whether the filters leave callee out (a
 * CG_ARC_* state); an arc made (filtered: the filters applied; the
 * others as struct cg_arc says), or looked up among the real calls'
 * (CG_SINK when absent); whether the top frame is inlined into another
 * function (its call sites are in that function's code). */
uint64_t cg_arcs_hash_at(const struct cg_costs *c, uint32_t e);
uint64_t cg_selfs_hash_at(const struct cg_costs *c, uint32_t e);
uint32_t cg_self_find(struct cg_costs *c, uintptr_t fn, uintptr_t addr, int inlined);
uint32_t cg_self_lookup(const struct cg_costs *c, uintptr_t fn, uintptr_t addr);
uint32_t cg_arc_state_of(const struct cg_costs *c, uintptr_t callee);
uint32_t cg_arc_insert(struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee, int filtered,
                       int inlined, int caller_inlined, uintptr_t code);
uint32_t cg_arc_lookup(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee);
int cg_top_inlined(const struct cg_costs *c);

/* ---- repair.c: frames ended without their exit hook ------------------------ */

/* Whether a call whose hook frame is at sp, below the top frame's, with
 * the top frame's host's own call site, is a real call: then its return
 * address, site, is on the stack between sp and the top frame's sp (at the
 * top of the callee's frame). Otherwise it is a call inlined into the host
 * while the host had the arguments of an enclosing call pushed (seen in
 * SQLite built by gcc -O2), which are no return address. A real call with
 * that site is a recursive call made from the instruction that made the
 * host's own call (walkExpr calling itself). */
int cg_real_call_below(const struct cg_costs *c, uintptr_t site, uintptr_t sp);
/* Slow paths of cg_costs_resync and cg_costs_exit (costs_inlines.h): the
 * frames an entry or exit at sp shows left popped as ending now (a repair,
 * counted in `left`); an exit of a function that is not on top (the frames
 * above it popped, then it), or of none (counted in `unmatched_exits`). */
void cg_resync_slow(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int entering,
                    uint64_t now);
void cg_exit_mismatch(struct cg_costs *c, uintptr_t fn, uint64_t now);
/* Frames that a longjmp or exception unwinding ends (their exit hooks will
 * never run), popped as ending at `now` and counted in `jumped`: those above
 * depth (a longjmp whose setjmp was seen at that depth), or those whose sp
 * is below `sp` (the stack pointer the jump or the unwinding resumes at).
 * The caller holds the thread's guard. */
void cg_costs_unwind_to(struct cg_costs *c, uint32_t depth, uint64_t now);
void cg_costs_unwind_below(struct cg_costs *c, uintptr_t sp, uint64_t now);

/* ---- sampled.c: sampled time ---------------------------------------------- */

/* CGPROF_TIME=sample: a sample that finds the thread in code that is not
 * instrumented, called (through n frames) from the top frame: fns[0] is the
 * outermost of those functions, called from the top frame's function at
 * sites[0]; fns[i] is called from fns[i-1] at sites[i]; the innermost,
 * fns[n-1], was interrupted at pc. Charges period ns inclusive to each of
 * those arcs and self at (fns[n-1], pc). The arcs' counts are visits: an
 * arc is counted again when the thread made a hook since the last sample
 * (new_visit) or when the last sample was elsewhere (last[], *nlast: the
 * arcs of the previous sample, updated). Returns 0, or -1 when fns[0] is a
 * real call of an instrumented function (sampled in its prologue or
 * epilogue, around its hooks): nothing is charged and the time stays the
 * top frame's. The caller moves the top frame's segment start on by period
 * (the time is not its self time) and holds the thread's guard. */
int cg_costs_sample(struct cg_costs *c, const uintptr_t *fns, const uintptr_t *sites, unsigned n, uintptr_t pc,
                    uint64_t period, int new_visit, uint32_t *last, unsigned *nlast);

/* A sample that finds the thread in the top frame's own code (its
 * function's, a part or clone of it, or, for a frame inlined into another,
 * its host's), interrupted at pc: period ns of self time at (top frame's
 * function, pc), where its line is, rather than at the position the frame
 * runs from (its entry, or the return address of its last call). The
 * frame's running segment starts period later: that time is charged.
 * Returns 0, or -1 when nothing is charged and the time stays at the
 * frame's position: a call left out (its time is its caller's, at the call
 * site), or a new address when the sampler has made CG_SAMPLE_PCS entries
 * on this thread, or no memory (counted in `unplaced`). The caller holds
 * the thread's guard; no malloc, no lock (self entries grow by mmap, as the
 * hooks' do). */
int cg_costs_sample_at(struct cg_costs *c, uintptr_t pc, uint64_t period);

/* A sample in the code of fn, a function whose hooks are the program's,
 * called from the top frame at site but not framed at that moment (the
 * walk found it just under the top frame): in its prologue, before its
 * enter hook is called (pc before the enter hook's return address, its
 * arc's code_off), or in its epilogue, after its exit hook (the frame just
 * popped is that call's). That time is the call's own, as a sampling
 * profiler of the plain build counts it: period ns of self time (at the
 * call's entry for a prologue, at its last position for an epilogue), of
 * inclusive time on its arc and, with call paths, on its node. The top
 * frame's running segment starts period later. Returns 0, or -1 when it is
 * neither (no real arc from this site, a call left out, its code not
 * known): nothing is charged. The caller holds the thread's guard. */
int cg_costs_sample_call(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t pc, uint64_t period);

/* CGPROF_STACKS=unwind: period ns of self time at (fn, pc), where a sample
 * found the innermost function with hooks on the stack (no frame: the
 * counting hooks keep none); -1 when no entry can be made (no memory, or
 * CG_SAMPLE_PCS entries made). The caller holds the thread's guard. */
int cg_costs_charge_self(struct cg_costs *c, uintptr_t fn, uintptr_t pc, uint64_t period);

/* CGPROF_STACKS=unwind: cg_costs_sample's work for a sample in code that is
 * not instrumented, fns[0] called from the function with hooks caller
 * (found by unwinding: no frame) at sites[0]. Visits counted as there. */
int cg_costs_sample_from(struct cg_costs *c, uintptr_t caller, const uintptr_t *fns, const uintptr_t *sites,
                         unsigned n, uintptr_t pc, uint64_t period, int new_visit, uint32_t *last, unsigned *nlast);

/* ---- costs.c: a table's life ---------------------------------------------- */

/* paths_bound: the most call-path nodes (0: no paths kept). */
int cg_costs_init(struct cg_costs *c, uint32_t paths_bound);
/* Keeps latency histograms from now on (before the first arc but the
 * sink). Returns 0, or -1 if out of memory (then none). */
int cg_costs_latency_on(struct cg_costs *c);
void cg_costs_destroy(struct cg_costs *c);
/* Zeroes all costs and counts, keeping entries, the stack and its frames
 * (frames still running restart their measure at `now`). */
void cg_costs_zero(struct cg_costs *c, uint64_t now);

/* The counting hooks' table (CGPROF_STACKS=unwind): its size in bytes for
 * a number of slots, and its growth: made (CG_COUNT_INITIAL slots) or doubled, the slots copied, the
 * new one published before the old one is retired (a dump may read it).
 * 0, or -1 without memory. The caller blocks signals meanwhile (a hook
 * in a handler would count into the old table). */
size_t cg_costs_count_bytes(uint64_t slots);
int cg_costs_count_grow(struct cg_costs *c);
/* A mapping of the counting hooks' (counting.c's maps) outgrown: unmapped
 * once no dump reads (as the tables' arrays), and at the thread's end. */
void cg_costs_count_retire(struct cg_costs *c, void *p, size_t len);
/* The same for one still in use, at the thread's end: its size. */
void cg_costs_count_keep(struct cg_costs *c, void *p, size_t len);

/* head (in a ring just mapped by this thread) watched by the hooks: 0, or
 * -1 when the page cannot be made (then no ring: the caller unmaps it). */
int cg_costs_watch(struct cg_costs *c, const volatile uint64_t *head);
/* No ring watched any more (its mapping may stay, cg_costs_ring_mine). */
void cg_costs_unwatch(struct cg_costs *c);
/* Whether a ring is watched now. */
int cg_costs_watching(const struct cg_costs *c);
/* Whether the ring last watched was mapped by this process: not in a
 * forked child (there its address is a hole, or anything mapped since). */
int cg_costs_ring_mine(const struct cg_costs *c);

#endif
