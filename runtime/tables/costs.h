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

/* One more of a thread's counter that a dump reads meanwhile (the part's
 * desc: lines): stored whole, by its one writer, the thread, with no
 * read-modify-write on the bus. */
#define CG_COUNT(x) __atomic_store_n(&(x), (x) + 1, __ATOMIC_RELAXED)

#include <stddef.h>
#include <stdint.h>

#include "addrset.h"
#include "compiler.h"
#include "latency.h"
#include "snapshot.h"
#include "util.h"

#define CG_SINK 0u

/* Arcs whose callee the filters leave out (struct cg_arc.skip): its calls
 * are not counted and its own time is its caller's, charged at the call
 * site; the calls it makes are recorded as made by the nearest caller that
 * is not left out, at that call site. A throttled arc keeps the calls it
 * counted before it was throttled. */
enum { CG_ARC_COUNTED = 0, CG_ARC_SKIPPED = 1, CG_ARC_THROTTLED = 2, CG_ARC_DROPPED = 3, CG_ARC_FOLDED = 4 };
/* Every arc but a counted one is of calls that keep no frame (fold.h): of
 * a function left out (skipped, throttled: its hook calls taken back), or
 * inlined and folded into its host (CG_ARC_FOLDED). CG_ARC_DROPPED and
 * CG_ARC_FOLDED: the hooks find the arc and drop the call at once (its hook
 * calls come again where they could not be taken back). The counts an arc
 * had before are kept. */

/* The process-wide filters (filter.c) as the tables see them. */
struct cg_filter {
    /* CGPROF_SKIP*: the functions left out, published whole (release) and
     * replaced, never changed, when a library brings more. */
    const struct cg_addrset *skip;
    /* CGPROF_THROTTLE=N:T (throttle_n 0: off): the functions throttled so
     * far, by any thread. */
    struct cg_addrset *throttled;
    uint64_t throttle_n, throttle_ns;
    /* when a function was last added to throttled (cg_clock_now): the
     * exits of throttled functions are taken back some time after it
     * (fold.h) */
    uint64_t throttled_at;
    unsigned long throttle_full; /* functions not listed: the set was full */
};

struct cg_arc {
    uintptr_t caller; /* entry address of the calling function, 0 at a thread's root */
    uintptr_t site;   /* a real call: the return address in the caller, the
                         hooks' call_site; an inlined call: where its enter
                         hook is called in the host's code (the hook's own
                         return address), one arc per inlined call's place,
                         as one per call site. The two never collide: a
                         call of the hook and a call of a function are
                         two call instructions. */
    uintptr_t callee; /* entry address of the called function */
    uint64_t count;   /* completed calls */
    uint64_t incl;    /* nanoseconds spent in those calls, callees included */
    uint64_t runs;    /* times the caller's frame switched to this arc from another */
    uint32_t entry_self; /* self entry (callee, callee) charged from entry */
    uint32_t ret_self;   /* self entry (caller, site) charged after return */
    uint8_t sampled;     /* made by the sampler (CGPROF_TIME=sample): a call
                            into uninstrumented code, count = visits seen */
    uint8_t inlined;     /* a call inlined into its caller, whose hooks the
                            compiler kept: same frame (sp), called with the
                            host's own call site (see cg_resync_slow);
                            CG_INLINED_BELOW: below the top frame, judged
                            so by the unwind tables (cg_costs_enter_as) */
    uint8_t caller_inlined; /* the caller's frame is itself inlined: the
                            call site lies in the code of the function it
                            was inlined into (or a part of it), which is not
                            a callback from that function */
    uint8_t skip;        /* CG_ARC_*: decided when the arc is made (or
                            throttled); then entry_self == ret_self */
    int32_t code_off;    /* a real call: where its enter hook is called,
                            from the callee's start (the same for every call
                            of the arc: one call instruction calls one
                            function, or one clone of it); CG_NO_CODE if
                            that does not fit */
};

#define CG_NO_CODE INT32_MIN
#define CG_INLINED_BELOW 2

struct cg_self {
    uintptr_t fn;   /* function whose frame was running */
    uintptr_t addr; /* instruction address the time is charged at */
    uint64_t cost;  /* nanoseconds */
    uint32_t inlined; /* fn's frame was inlined: addr is in the code of the
                         function it was inlined into (see cg_arc) */
};

struct cg_frame {
    uintptr_t fn;
    uintptr_t sp;      /* the enter hook's call frame address: where the
                          stack pointer of the code that called it was */
    uint64_t t_enter;  /* time at entry (ns) */
    uint64_t t_last;   /* start of the self-time segment now running */
    uint32_t arc;      /* the arc this call is counted on */
    uint32_t self;     /* self entry the running segment is charged to */
    uint32_t last_arc; /* arc of this frame's previous call (for runs) */
    uint32_t skip;     /* a call left out (its arc's skip): a frame only for
                          its exit and re-synchronisation; its calls are
                          made by its arc's caller at its arc's call site */
    uintptr_t host_site; /* the call site of the function whose code this
                          frame runs in (cg_host_site): for a real call the
                          site its enter hook was given, for an inlined
                          call its host's. Not its arc's site: under a
                          frame left out, that is the left-out call's. */
    uintptr_t code;    /* where its enter hook was called (cg_frame_code),
                          kept so that the fast path compares it without
                          the arc: 0 when not known */
    uint32_t node;     /* its path's node (CGPROF_PATHS; 0 when off): for a
                          call left out, its caller's */
    uint32_t folded_self; /* copies of its own function inlined into its
                          code (recursion inlined into itself), folded and
                          not ended yet: the next exits of its function are
                          theirs, not the frame's (fold.h) */
};

/* ---- call paths (CGPROF_PATHS) ----------------------------------------------
 * The calling-context tree: one node per distinct path of functions from
 * the thread's root (docs/internals/paths-format.md), found by (parent node, function)
 * in a private open-addressing index, as the arcs are. Keyed by function,
 * not by call site: a flame graph's frame is a function, and two call
 * sites of one callee in one caller make one path.
 *  - Recursion: a call of a function already on the path is folded onto the
 *    node where it first appears (the index maps (parent, fn) to that
 *    ancestor, an alias made once, when the path is first seen: the hooks
 *    never walk the path). A node's inclusive time is added by the exit of
 *    its outermost call only (`active` counts its frames on the stack), so
 *    recursion counts it once; its calls and self time count every level.
 *  - Bound: at most `bound` nodes per thread (CGPROF_PATHS_MAX). Past
 *    15/16 of it a new path is counted on its parent's one "beyond" node
 *    (fn CG_NODE_BEYOND), which everything under it folds into; the last
 *    16th is kept for those. Past the bound, the sink.
 *  - A dump reads nodes as it reads arcs (cg_reading_take): self first,
 *    then inclusive, then calls, then the frames, the reverse of the exit's
 *    stores. */

struct cg_node {
    uintptr_t fn;    /* the function called, CG_NODE_BEYOND for the paths past the bound */
    uint32_t parent; /* node of the path without fn, 0 at the root */
    uint32_t active; /* frames of this node on the shadow stack (not left out) */
    uint64_t calls;  /* calls ended */
    uint64_t incl;   /* ns of its outermost calls, ended */
    uint64_t self;   /* ns in fn's own code on this path */
};

struct cg_node_slot {
    uintptr_t fn;
    uint32_t parent;
    uint32_t node; /* 0: empty (node 0, the sink, is never indexed) */
};

#define CG_MAX_RETIRED 96

/* The counting hooks' table (CGPROF_STACKS=unwind, counting.h): one slot
 * per (enter hook's return address, call site), that is per arc, found by
 * one probe: the count lives in the slot, 32 bytes, two to a cache line,
 * apart from the 64-byte arc the writer needs (a real program's thousands
 * of arcs did not stay in the cache: issue 38). A slot is written whole
 * before its key (ret last), so that a hook that matches it sees it
 * filled. arc: its arc (CG_SINK: an inlined call's, folded, not counted).
 * The owner thread alone writes; a dump reads the counts (whole words). */
struct cg_count_slot {
    uintptr_t ret, site;
    uint64_t count;
    uint32_t arc;
    uint32_t pad;
};
struct cg_count_map;
struct cg_count_callbacks;
struct cg_count_table {
    uint64_t mask;  /* slots - 1, a power of two less one */
    uint64_t used;
    struct cg_count_slot slot[];
};
static CG_INLINE uint64_t cg_count_hash(uintptr_t ret, uintptr_t site)
{
    return ((uint64_t)ret * 0x9e3779b97f4a7c15ull ^ (uint64_t)site * 0xff51afd7ed558ccdull) >> 32;
}

struct cg_costs {
    /* shadow stack */
    struct cg_frame *frames;
    uint32_t depth, frame_cap;
    /* Overhead compensation (CGPROF_COMPENSATE, exact time only): the
     * hooks' own time so far, in ns, which every time this thread keeps
     * leaves out: its clock is the clock less comp. Each hook adds the
     * part of it that ran before its clock reading (comp_pre[enter]) and
     * the part of the hook before it that ran after that one's reading
     * (comp_pending, set from comp_post[enter]): so each self-time segment
     * between two hooks loses what those two hooks spent inside it. Zero
     * when off. Calibrated at start-up (runtime.c). */
    uint64_t comp, comp_pending;
    uint32_t comp_pre[2], comp_post[2]; /* [0]: exit hook, [1]: enter hook */
    uint32_t comp_gpre[2], comp_gpost[2]; /* the same for the general path's hooks */
    /* A ring buffer the kernel fills for the thread (CGPROF_OFF_CPU's
     * context switch records, offcpu.h; CGPROF_SAMPLE_TIMER=ring's samples,
     * samplering.h): the word that holds its head's address, which the
     * kernel moves, and the head as last drained; NULL when none. A hook
     * that finds them different leaves its event to the general path,
     * which drains. The word is in a page the kernel wipes in a forked
     * child (switch_slot, MADV_WIPEONFORK), as it leaves the ring itself
     * out of the child (VM_DONTCOPY): a child of a fork that ran no atfork
     * handler (syscall(SYS_fork)) reads NULL there, where the ring's
     * address would be a hole (it died of SIGSEGV at its first hook). */
    const volatile uint64_t *const volatile *switch_head;
    uint64_t switch_seen;
    struct cg_switch_slot *switch_slot;
    /* arcs: dense array + private index */
    struct cg_arc *arcs;
    uint32_t narcs, arc_cap;
    uint32_t *arc_index;
    uint32_t arc_mask;
    /* latency histograms (CGPROF_LATENCY): CG_LAT_ROW counters per arc,
     * in the arcs' order, lat_cap rows (never fewer than narcs); NULL when
     * off, so that the arcs' table is what it is without them */
    uint64_t *lat;
    uint32_t lat_cap;
    /* self costs: dense array + private index */
    struct cg_self *selfs;
    uint32_t nselfs, self_cap;
    uint32_t *self_index;
    uint32_t self_mask;
    /* Filters: NULL for none. throttle_n is a copy of filter->throttle_n
     * (0: off) where the exit path reads it. */
    struct cg_filter *filter;
    uint64_t throttle_n;
    /* Entries that found no room (memory exhausted) and exits that matched no
     * entry; reported in the profile header. */
    uint64_t lost;
    uint64_t unmatched_exits;
    /* Frames found abandoned by a later hook (a frame whose exit hook never
     * ran, found from the stack pointers or by the exit of a function under
     * it) and popped as ending then: a repair, said in the profile. */
    uint64_t left;
    /* Hook calls of calls that keep no frame (fold.h) that still reached
     * the tables: enters of inlined calls folded into their host, and
     * exits of calls without a frame. Counted, not a repair. */
    uint64_t inlined_calls, frameless_exits;
    /* Of comp, the time its hooks spent taking hook calls back (fold.c),
     * said apart in each part. */
    uint64_t takeback_ns;
    /* Frames ended by a longjmp or by exception unwinding, which cannot
     * call their exit hooks: popped when the jump or the unwinder left them
     * (see nonlocal.c), known exactly, not a repair. */
    uint64_t jumped;
    /* Enters beyond a shadow stack that could not grow; their exits are
     * dropped in turn. */
    uint64_t overflow;
    /* Sampled time placed at the interrupted instruction (cg_costs_sample_
     * at): the self entries the sampler made so (at most CG_SAMPLE_PCS),
     * and the samples that found no room and stayed at the frame's
     * position. */
    uint32_t sample_pcs;
    uint64_t unplaced;
    /* CGPROF_SAMPLE_TIMER=ring: records the kernel dropped, its buffer full
     * (samplering.c); their time is the top frame's */
    uint64_t ring_lost;
    /* CGPROF_SAMPLE_TIMER=ring: 1 when the kernel refused this thread its
     * buffer (its locked-memory limit: perf_event_mlock_kb, RLIMIT_MEMLOCK),
     * 2 when it was not asked for, for want of address space (RLIMIT_AS),
     * and the thread is sampled with signals: its part's header says so */
    uint32_t ring_refused;
    /* call paths: NULL when off (CGPROF_PATHS=0). Nodes, dense, published
     * by nnodes (release) as the arcs; the index is private. node_bound:
     * the most nodes; folded: aliases made (re-entries of a function on
     * the path); beyond_calls, beyond_paths: calls and new paths counted
     * on a "beyond" node. */
    struct cg_node *nodes;
    uint32_t nnodes, node_cap, node_bound;
    struct cg_node_slot *node_index;
    uint32_t node_mask, node_slots_used;
    uint64_t folded, beyond_paths;
    /* The thread's virtual clock in sampled mode (advanced by its timer's
     * signal), NULL when time is read from the clock. */
    const volatile uint64_t *vclock;
    /* The counting hooks' table (CGPROF_STACKS=unwind), NULL otherwise:
     * its counts are the arcs' (reading.c adds them) */
    struct cg_count_table *count;
    /* and its set of the functions entered (counting.c's), its size */
    struct cg_count_map *count_entries, *count_sites;
    /* the sampler's buffers for a walk of CG_UNWIND_DEPTH frames: return
     * addresses, functions, signal-frame flags (made with the table) */
    uintptr_t *count_walk;
    /* counting.c's cache of callers of calls from code without hooks */
    struct cg_count_callbacks *count_callbacks;
    size_t count_callbacks_len;
    /* counting.c's maps in use, unmapped at the thread's end */
    struct { void *p; size_t len; } kept[4];
    unsigned nkept;
    /* Arrays outgrown but possibly still read by a dump. */
    struct { void *p; size_t len; } retired[CG_MAX_RETIRED];
    unsigned nretired;
};

/* A call of arc `arc` that took d ns ended: counted in its latency row
 * (latency.h). */
static CG_INLINE void cg_lat_add(struct cg_costs *c, uint32_t arc, uint64_t d)
{
    uint64_t *row = c->lat + (size_t)arc * CG_LAT_ROW;
    unsigned i = cg_lat_bucket(d);
    __atomic_store_n(&row[i], row[i] + 1, __ATOMIC_RELAXED);
    if (cg_unlikely(d > row[CG_LAT_MAX]))
        __atomic_store_n(&row[CG_LAT_MAX], d, __ATOMIC_RELAXED);
}

/* Dumps in progress anywhere in the process. A table that grows frees its
 * outgrown arrays only when this is zero; a dump increments it before it
 * reads any table pointer. Both sides use sequentially consistent atomics
 * (the store-then-load pattern of Dekker's algorithm): either the grower
 * sees the dump and keeps the old arrays, or the dump sees the new ones. */
extern unsigned long cg_readers;

/* paths_bound: the most call-path nodes (0: no paths kept). */
int cg_costs_init(struct cg_costs *c, uint32_t paths_bound);
/* Keeps latency histograms from now on (before the first arc but the
 * sink). Returns 0, or -1 if out of memory (then none). */
int cg_costs_latency_on(struct cg_costs *c);
void cg_costs_destroy(struct cg_costs *c);
/* Zeroes all costs and counts, keeping entries, the stack and its frames
 * (frames still running restart their measure at `now`). */
void cg_costs_zero(struct cg_costs *c, uint64_t now);

/* ---- sampled time (CGPROF_TIME=sample) -----------------------------------
 * A sample that finds the thread in code that is not instrumented, called
 * (through n frames) from the top frame: fns[0] is the outermost of those
 * functions, called from the top frame's function at sites[0]; fns[i] is
 * called from fns[i-1] at sites[i]; the innermost, fns[n-1], was
 * interrupted at pc. Charges period ns inclusive to each of those arcs and
 * self at (fns[n-1], pc). The arcs' counts are visits: an arc is counted
 * again when the thread made a hook since the last sample (new_visit) or
 * when the last sample was elsewhere (last[], *nlast: the arcs of the
 * previous sample, updated). Returns 0, or -1 when fns[0] is a real call of
 * an instrumented function (sampled in its prologue or epilogue, around its
 * hooks): nothing is charged and the time stays the top frame's. The caller
 * moves the top frame's segment start on by period (the time is not its
 * self time) and holds the thread's guard. */
#define CG_SAMPLE_DEPTH 8
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
#define CG_SAMPLE_PCS 16384
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

/* The counting table's size in bytes for a number of slots, and its
 * growth: made (CG_COUNT_INITIAL slots) or doubled, the slots copied, the
 * new one published before the old one is retired (a dump may read it).
 * 0, or -1 without memory. The caller blocks signals meanwhile (a hook
 * in a handler would count into the old table). */
#define CG_COUNT_INITIAL 1024
#define CG_UNWIND_DEPTH 512
#define CG_COUNT_WALK_BYTES (CG_UNWIND_DEPTH * (2 * sizeof(uintptr_t) + 1))
size_t cg_costs_count_bytes(uint64_t slots);
int cg_costs_count_grow(struct cg_costs *c);
/* A mapping of the counting hooks' (counting.c's maps) outgrown: unmapped
 * once no dump reads (as the tables' arrays), and at the thread's end. */
void cg_costs_count_retire(struct cg_costs *c, void *p, size_t len);
/* The same for one still in use, at the thread's end: its size. */
void cg_costs_count_keep(struct cg_costs *c, void *p, size_t len);

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

/* The arc (site, callee) of a real call, whatever its caller, or CG_SINK:
 * the arc a sample charges a frame's inclusive time to (CGPROF_STACKS=
 * unwind: the site decides the caller, except for a signal handler's,
 * whose caller is the function the signal interrupted: given, or 0 for
 * any). */
uint32_t cg_costs_arc_of(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee);

/* One more on a counter of c that a dump reads meanwhile (inlined_calls,
 * frameless_exits): stored whole. */
static inline void cg_costs_count(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

/* The arc (caller, key, fn) made or found, marked kind (CG_ARC_DROPPED or
 * CG_ARC_FOLDED): the fast path then drops the call by it. inlined: key is
 * the hook's return address (a call in the top frame's frame). */
void cg_costs_drop_arc(struct cg_costs *c, uintptr_t caller, uintptr_t key, uintptr_t fn, int inlined, int kind);

/* Slow paths of the hooks, out of line. */
uint32_t cg_arc_find_slow(struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee, int inlined,
                          uintptr_t code);
void cg_stack_grow(struct cg_costs *c);
void cg_exit_mismatch(struct cg_costs *c, uintptr_t fn, uint64_t now);
void cg_resync_slow(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int entering,
                    uint64_t now);
void cg_throttle_check(struct cg_costs *c, uint32_t arc);

/* Frames that a longjmp or exception unwinding ends (their exit hooks will
 * never run), popped as ending at `now` and counted in `jumped`: those above
 * depth (a longjmp whose setjmp was seen at that depth), or those whose sp
 * is below `sp` (the stack pointer the jump or the unwinding resumes at).
 * The caller holds the thread's guard. */
void cg_costs_unwind_to(struct cg_costs *c, uint32_t depth, uint64_t now);
void cg_costs_unwind_below(struct cg_costs *c, uintptr_t sp, uint64_t now);

/* ---- call paths ---------------------------------------------------------- */

static CG_INLINE uint64_t cg_node_hash(uint32_t parent, uintptr_t fn)
{
    return cg_hash2(fn, parent);
}

/* The node of fn called on path `parent`, made when new (the slow path:
 * folding, the bound). c->nodes must not be NULL. */
uint32_t cg_node_find_slow(struct cg_costs *c, uint32_t parent, uintptr_t fn);

static CG_INLINE uint32_t cg_node_find(struct cg_costs *c, uint32_t parent, uintptr_t fn)
{
    for (uint32_t i = (uint32_t)cg_node_hash(parent, fn);; i++) {
        const struct cg_node_slot *s = &c->node_index[i & c->node_mask];
        if (cg_likely(s->fn == fn && s->parent == parent))
            return s->node;
        if (s->node == 0)
            return cg_node_find_slow(c, parent, fn);
    }
}

/* A frame of node n begins (not a call left out). */
static CG_INLINE void cg_node_enter(struct cg_costs *c, uint32_t n)
{
    c->nodes[n].active++;
}

/* A frame of node n entered at t_enter ends at now: its call counted, and
 * its time if it was the node's outermost frame. The same order of stores
 * as an arc's (cg_costs_pop). */
static CG_INLINE void cg_node_exit(struct cg_costs *c, uint32_t n, uint64_t t_enter, uint64_t now)
{
    struct cg_node *node = &c->nodes[n];
    __atomic_store_n(&node->calls, node->calls + 1, __ATOMIC_RELEASE);
    if (--node->active == 0)
        __atomic_store_n(&node->incl, node->incl + (now - t_enter), __ATOMIC_RELEASE);
}

/* Whether the thread was switched out since its last hook (CGPROF_OFF_CPU:
 * its ring's head moved; false when off): then its general path drains the
 * records (offcpu.h). */
static CG_INLINE int cg_costs_switched(const struct cg_costs *c)
{
    const volatile uint64_t *const volatile *slot = c->switch_head;
    if (cg_likely(slot == NULL))
        return 0;
    const volatile uint64_t *head = *slot;
    return head != NULL && *head != c->switch_seen;
}

/* The page of c's switch_head (costs.c): the head's address, and 1 while
 * the ring mapped is this process's; both 0 in a forked child. */
struct cg_switch_slot {
    const volatile uint64_t *volatile head;
    volatile uint64_t mine;
};
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

/* ---- overhead compensation -------------------------------------------------- */

/* The time of a hook whose clock read raw (ns), compensated (see comp),
 * the hook's parts before and after its reading being pre and post: never
 * before floor (the top frame's last time), the overhead given back when it
 * would be (a segment never goes below zero: what is subtracted from it is
 * at most what it measured). */
static CG_INLINE uint64_t cg_costs_comp_time(struct cg_costs *c, uint64_t raw, uint64_t floor, uint32_t pre,
                                             uint32_t post)
{
    uint64_t was = c->comp, comp = was + c->comp_pending + pre;
    c->comp_pending = post;
    /* The segment since floor, less the overhead, at least zero (the
     * excess given back): a conditional move, not a branch. A segment of a
     * tiny function comes out below zero about as often as not (half the
     * segments of fib), where a branch mispredicted cost more than the
     * whole compensation (6.5 ns a call on tests/bench/workload, against
     * 1 ns, measured). */
    int64_t seg = (int64_t)(raw - comp - floor);
    uint64_t now = floor + (uint64_t)(seg > 0 ? seg : 0);
    comp = raw - now;
    if (cg_unlikely(raw < floor)) /* a TSC that stepped back: none taken */
        comp = was;
    __atomic_store_n(&c->comp, comp, __ATOMIC_RELAXED);
    return now;
}

/* The same for a hook of the general path (enter: 1 for an enter hook, 0
 * for an exit); the fast path's calls cg_costs_comp_time with its own
 * figures and the top frame at hand. */
static CG_INLINE uint64_t cg_costs_hook_time(struct cg_costs *c, uint64_t raw, int enter)
{
    uint64_t floor = c->depth ? c->frames[c->depth - 1].t_last : 0;
    return cg_costs_comp_time(c, raw, floor, c->comp_gpre[enter], c->comp_gpost[enter]);
}

/* The thread's compensated time now, for what is not a hook (a dump, the
 * thread's end, a longjmp): the clock less the overhead so far. */
static CG_INLINE uint64_t cg_costs_time_of(const struct cg_costs *c, uint64_t raw)
{
    uint64_t comp = __atomic_load_n(&c->comp, __ATOMIC_RELAXED);
    return raw > comp ? raw - comp : raw;
}

/* Re-synchronises the shadow stack with the real one before a hook whose
 * own frame is at sp (the stack grows down), called from the instrumented
 * code at `code` (the hook's return address). What the hooks see
 * (docs/internals/design.md, "Calls as the hooks see them"):
 *  - a real call's enter hook runs in the callee's frame, below its
 *    caller's: its sp is lower than every live frame's;
 *  - a function inlined into another keeps its hooks (gcc and clang at -O2),
 *    called from the host's code, in the host's frame (the same sp) and
 *    with the host's own call site (the host's return address).
 * So when a function is entered, a frame below sp was left without its exit
 * hook (a longjmp or exception that the runtime did not see end it) and is
 * popped as ending now; a frame at sp is the host of an inlined call (or an
 * inlined call in it), and is kept unless shown to be left (cg_resync_slow).
 * When fn exits, a top frame of fn is the one exiting: at -O2 the exit hook
 * may be a tail call, made after the frame is gone, from above it; only
 * frames of other functions below sp are stale. */
static CG_INLINE void cg_costs_resync(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                      uintptr_t code, int entering, uint64_t now)
{
    if (cg_unlikely(c->depth > 0)) {
        const struct cg_frame *top = &c->frames[c->depth - 1];
        if (cg_unlikely(entering ? top->sp <= sp : top->sp < sp && top->fn != fn))
            cg_resync_slow(c, fn, site, sp, code, entering, now);
    }
}

/* The caller is left out of the hash: the call site, an address inside
 * the caller, all but decides it (two callers share a (site, callee) only
 * through a frame left out, which calls through its caller), and two
 * multiplies that run side by side are all the hot path pays. The lookups
 * still compare the caller, and whether the call is inlined: a function
 * inlined into itself (recursion, at -O2) makes, from the same call site,
 * both a real call of itself and, inside that callee, inlined calls whose
 * hooks get the callee's return address, the same site. */
static CG_INLINE uint64_t cg_arc_hash(uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    (void)caller;
    return cg_hash2(site, callee);
}

/* The arc of a call: site is the call site, or for an inlined call the
 * code that called its enter hook (struct cg_arc); code, for a new real
 * arc, where its enter hook was called. */
static CG_INLINE uint32_t cg_arc_find(struct cg_costs *c, uintptr_t caller, uintptr_t site,
                                          uintptr_t callee, int inlined, uintptr_t code)
{
    uint64_t h = cg_arc_hash(caller, site, callee);
    for (uint32_t i = (uint32_t)h;; i++) {
        uint32_t slot = c->arc_index[i & c->arc_mask];
        if (slot == 0)
            return cg_arc_find_slow(c, caller, site, callee, inlined, code);
        const struct cg_arc *a = &c->arcs[slot];
        if (a->site == site && a->callee == callee && a->caller == caller)
            return slot;
    }
}

/* The call site of the function whose code frame i runs in (its host: the
 * first frame under it that is not an inlined call), which the hooks of a
 * call inlined into it are given; 0 if not known. */
static CG_INLINE uintptr_t cg_host_site(const struct cg_costs *c, uint32_t i)
{
    return c->frames[i].host_site;
}

/* How far below the top frame a call's hook frame may be and still be a
 * call inlined into it (cg_real_call_below): pushed arguments take a few
 * words; a real call's frame may be large, and then it is one anyway. */
#define CG_INLINED_REACH (64 * sizeof(uintptr_t))

/* Where fn's own enter hook is called, for a real call of fn on arc a: its
 * code_off from fn; 0 when not known. */
static CG_INLINE uintptr_t cg_arc_own_code(const struct cg_arc *a, uintptr_t fn)
{
    return a->code_off == CG_NO_CODE ? 0 : fn + (uintptr_t)(intptr_t)a->code_off;
}

/* Where the enter hook of a frame of fn on arc `arc` was called: for an
 * inlined call its arc's site, for a real one cg_arc_own_code; 0 when not
 * known. */
static CG_INLINE uintptr_t cg_arc_code(const struct cg_costs *c, uint32_t arc, uintptr_t fn)
{
    const struct cg_arc *a = &c->arcs[arc];
    if (arc == CG_SINK)
        return 0;
    if (a->inlined)
        return a->site;
    return cg_arc_own_code(a, fn);
}

/* The same for frame f, as it was pushed. */
static CG_INLINE uintptr_t cg_frame_code(const struct cg_frame *f)
{
    return f->code;
}

/* Whether a call whose hook frame is at sp, below the top frame's, with
 * the top frame's host's own call site, is a real call: then its return
 * address, site, is on the stack between sp and the top frame's sp (at the
 * top of the callee's frame). Otherwise it is a call inlined into the host
 * while the host had the arguments of an enclosing call pushed (seen in
 * SQLite built by gcc -O2), which are no return address. A real call with
 * that site is a recursive call made from the instruction that made the
 * host's own call (walkExpr calling itself). */
int cg_real_call_below(const struct cg_costs *c, uintptr_t site, uintptr_t sp);

/* cg_real_call_below's test, for the top frame's sp top (the fast path's
 * too): the return address site on the stack between sp and top, or the
 * call too far below to be an inlined one. Words of the stack that were
 * never written (padding) are read too: valgrind's memcheck says so
 * (runtime/cgprof.supp), harmlessly. */
static CG_INLINE int cg_return_address_above(uintptr_t site, uintptr_t sp, uintptr_t top)
{
    if (top - sp > CG_INLINED_REACH)
        return 1;
    for (const uintptr_t *w = (const uintptr_t *)sp; (uintptr_t)w < top; w++)
        if (*w == site)
            return 1;
    return 0;
}

/* Function entry at time `now` (ns), its enter hook called from `code` with
 * its frame at sp: closes the caller's running self segment, pushes a frame.
 * After cg_costs_resync, the call is inlined into the top frame (or its
 * host) when its frame is at the top frame's sp, or below it with the
 * host's own call site and no return address of its own
 * (cg_real_call_below), or when inlined_below says so: below the top
 * frame, in code that is not the function's own machine function (the
 * unwind tables', fold.c): a call inlined into a part of the host's code
 * that has a frame of its own (gcc's fn.part.0), or into a host whose
 * frame grew after its enter hook (alloca, a variable-length array). Its
 * arc is keyed by its place, as an inlined call's; its frame's host site is
 * the call site its hooks are given (the part's return address). */
static CG_INLINE void cg_costs_enter_as(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                        uintptr_t code, uint64_t now, int inlined_below)
{
    uintptr_t caller = 0, host_site = site;
    struct cg_frame *top = NULL;
    int inlined = 0;
    if (cg_likely(c->depth > 0)) {
        top = &c->frames[c->depth - 1];
        /* never before the last time of this thread: a clock a little
         * behind (another core's TSC) must not make negative durations */
        if (cg_unlikely(now < top->t_last))
            now = top->t_last;
        /* Sampled time moves a thousand times a second: most segments are
         * empty, and their self entries need not be written. */
        if (now != top->t_last) {
            c->selfs[top->self].cost += now - top->t_last;
            if (c->nodes)
                c->nodes[top->node].self += now - top->t_last;
        }
        caller = top->fn;
        inlined = top->sp == sp || (top->sp > sp && cg_unlikely(site == cg_host_site(c, c->depth - 1)) &&
                                    !cg_real_call_below(c, site, sp));
        if (inlined)
            host_site = top->host_site;
        else if (cg_unlikely(inlined_below && top->sp > sp))
            inlined = CG_INLINED_BELOW;
        if (cg_unlikely(top->skip)) {
            /* made by the caller that the frame left out runs for */
            caller = c->arcs[top->arc].caller;
            site = c->arcs[top->arc].site;
        }
    }
    uint32_t arc = cg_arc_find(c, caller, inlined ? code : site, fn, inlined, code);
    CG_CHECK(arc < c->narcs); /* 0: the sink */
    if (top && top->last_arc != arc) {
        top->last_arc = arc;
        c->arcs[arc].runs++;
    }
    if (cg_unlikely(c->depth == c->frame_cap)) {
        cg_stack_grow(c);
        if (c->depth == c->frame_cap) {
            c->overflow++;
            if (top)
                top->t_last = now;
            return;
        }
    }
    struct cg_frame *f = &c->frames[c->depth];
    f->fn = fn;
    f->sp = sp;
    f->t_enter = now;
    f->t_last = now;
    f->arc = arc;
    f->self = c->arcs[arc].entry_self;
    f->last_arc = CG_SINK;
    f->skip = c->arcs[arc].skip;
    f->host_site = host_site;
    f->code = cg_arc_code(c, arc, fn);
    f->node = 0;
    f->folded_self = 0;
    if (c->nodes) {
        /* a call left out is no step of the path: its frame runs on its
         * caller's node, and the calls it makes are its caller's */
        uint32_t parent = top ? f[-1].node : 0; /* not top: the stack may have moved (grown) */
        if (f->skip) {
            f->node = parent;
        } else {
            f->node = cg_node_find(c, parent, fn);
            cg_node_enter(c, f->node);
        }
    }
    /* The dump reads frames [0, depth): publish the frame after filling it. */
    __atomic_store_n(&c->depth, c->depth + 1, __ATOMIC_RELEASE);
}

static CG_INLINE void cg_costs_enter(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp,
                                     uintptr_t code, uint64_t now)
{
    cg_costs_enter_as(c, fn, site, sp, code, now, 0);
}

/* Whether an arc whose count just became count is due for CGPROF_THROTTLE's
 * check (throttle_n N, 0: off): at N calls, and again at each power of two
 * above it, so that an arc whose first N calls were slowed (the thread
 * switched out in exact time, the hooks' first calls) is looked at again;
 * the check is an average over all its calls. */
static CG_INLINE int cg_throttle_due(const struct cg_costs *c, uint64_t count)
{
    return count == c->throttle_n || (c->throttle_n && count > c->throttle_n && !(count & (count - 1)));
}

/* Pops the top frame at time `now`, charging its call and resuming the
 * caller's self time at the call's return address. A frame left out
 * (skip) charged its time to that same address all along. */
static CG_INLINE void cg_costs_pop(struct cg_costs *c, uint64_t now)
{
    CG_CHECK(c->depth > 0);
    struct cg_frame *f = &c->frames[c->depth - 1];
    struct cg_arc *a = &c->arcs[f->arc];
    CG_CHECK(f->arc < c->narcs);
    CG_CHECK(f->self < c->nselfs);
    if (cg_unlikely(now < f->t_last))
        now = f->t_last; /* see cg_costs_enter */
    if (now != f->t_last) {
        c->selfs[f->self].cost += now - f->t_last;
        if (c->nodes)
            c->nodes[f->node].self += now - f->t_last;
    }
    uint32_t d = c->depth - 1;
    /* The caller resumes: its running segment starts now, before it is the
     * top frame again for a dump reading meanwhile. */
    if (cg_likely(d > 0)) {
        struct cg_frame *p = &c->frames[d - 1];
        p->t_last = now;
        p->self = a->ret_self;
    }
    /* The frame is unpublished before its call is counted, the count stored
     * before the time: a dump reading meanwhile (cg_reading_take: times,
     * counts, then frames) finds the call in its frame or in its count, or
     * in neither (a reading one short, which the next makes up), never in
     * both. A call counted twice would stay so: parts never take back
     * (cg_reading_raise). */
    __atomic_store_n(&c->depth, d, __ATOMIC_RELEASE);
    if (cg_likely(!f->skip)) {
        uint64_t count = a->count + 1;
        __atomic_store_n(&a->count, count, __ATOMIC_RELEASE);
        __atomic_store_n(&a->incl, a->incl + (now - f->t_enter), __ATOMIC_RELEASE);
        if (c->lat)
            cg_lat_add(c, f->arc, now - f->t_enter);
        /* 0 when off: never due (cg_throttle_due) */
        if (cg_unlikely(cg_throttle_due(c, count)))
            cg_throttle_check(c, f->arc);
        if (c->nodes)
            cg_node_exit(c, f->node, f->t_enter, now);
    }
}

static CG_INLINE void cg_costs_exit(struct cg_costs *c, uintptr_t fn, uint64_t now)
{
    if (cg_unlikely(c->overflow)) {
        c->overflow--;
        return;
    }
    if (cg_likely(c->depth > 0 && c->frames[c->depth - 1].fn == fn))
        cg_costs_pop(c, now);
    else
        cg_exit_mismatch(c, fn, now);
}

#endif
