/* The cost tables' structures (data layer): a thread's arcs, self entries,
 * shadow-stack frames, call-path nodes, the counting hooks' table, and
 * struct cg_costs, which holds them (costs.h says what is recorded and
 * why it is laid out so; costs_types.h what the values mean). */
#ifndef CG_COSTS_STRUCTS_H
#define CG_COSTS_STRUCTS_H

#include <stddef.h>
#include <stdint.h>

#include "costs_types.h"

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
    uint8_t state;       /* CG_ARC_COUNTED, or how its calls keep no frame
                            (CG_ARC_SKIPPED, _THROTTLED, _DROPPED,
                            _FOLDED: costs_types.h): decided when the arc
                            is made (or throttled, dropped); not counted:
                            entry_self == ret_self */
    int32_t code_off;    /* a real call: where its enter hook is called,
                            from the callee's start (the same for every call
                            of the arc: one call instruction calls one
                            function, or one clone of it); CG_NO_CODE if
                            that does not fit */
};

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
    uint32_t state;    /* its arc's state (CG_ARC_*) when pushed; not
                          CG_ARC_COUNTED: a call left out, a frame only for
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
 *    16th is kept for those. Without room for the parent's own, on the
 *    nearest ancestor's, else on the root's, for which the bound-th node
 *    is kept (paths.c, beyond_node). Only memory running out leaves a call
 *    to the sink.
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

/* The page of c's switch_head (costs.c): the head's address, and 1 while
 * the ring mapped is this process's; both 0 in a forked child. */
struct cg_switch_slot {
    const volatile uint64_t *volatile head;
    volatile uint64_t mine;
};

#endif
