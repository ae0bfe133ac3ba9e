/* Per-thread state: set up on a thread's first hook, registered process-wide
 * so that a dump can find every thread's tables. */
#ifndef CG_THREAD_H
#define CG_THREAD_H

#include <stdint.h>
#include <sys/types.h>

#include "reading.h"

enum { CG_GUARD_HOOK = 1, CG_GUARD_RUNTIME = 2 };

/* A hook that ran while another hook of the same thread was running (from
 * a signal handler): kept, and replayed when the interrupted hook ends. */
struct cg_deferred {
    uintptr_t fn, site, sp, code;
    uint64_t now;
    int enter;
};

/* Room for the hooks of the handlers that run while one hook of the thread
 * runs. A handler run is a few hooks, so one was enough in principle; but a
 * storm of signals (a 20 us timer on a loaded machine) can starve the
 * interrupted code: 64 handler runs, 256 events, were seen within one hook
 * that did not advance for 1.3 ms. The thread's state is mmap'ed, so the
 * slots never used cost address space, not memory. */
#define CG_MAX_DEFERRED 8192
/* fold.c's answers kept per thread (a power of two) */
#define CG_OWN_MEMO 64
/* sample.c's answers kept per thread: where a function calls the enter
 * hook in its entry (a power of two) */
#define CG_HOOKED_MEMO 32

/* Where a jmp_buf was set (nonlocal.c): the shadow stack's depth then, and its
 * top frame, to end the right frames when a longjmp comes back to it. One
 * per slot, keyed by the jmp_buf's address (a newer one takes the slot). */
#define CG_JMP_SLOTS 64
struct cg_jmp_seen {
    uintptr_t env;         /* the jmp_buf; 0: free, or being written */
    uintptr_t sp;          /* the setjmp's caller's stack pointer */
    uintptr_t top_fn, top_sp;
    uint32_t depth;
};

/* What a thread's samples come from (sampletimer.c): cg_thread_sampler.has_timer. */
enum cg_timer_kind { CG_TIMER_NONE, CG_TIMER_POSIX, CG_TIMER_PERF };

/* The sampler's per-thread state (sample.c, sampletimer.c; CGPROF_TIME=sample). */
struct cg_thread_sampler {
    void *timer;            /* timer_t of this thread's CPU-time timer (posix) */
    int has_timer;          /* enum cg_timer_kind */
    int timer_fd;           /* the perf_event's fd, and its id (checked before */
    uint64_t timer_id;      /* it is closed: the program may have reused the fd) */
    uint64_t sample_hooks;  /* nhooks at the last sample in uninstrumented code */
    uint32_t sample_last[CG_SAMPLE_DEPTH];
    unsigned sample_nlast;
    uint64_t samples, samples_unnamed;
    /* CGPROF_SAMPLE_TIMER=ring (samplering.c): the mapped buffer, the
     * thread's CPU clock when it was made, the periods accounted for since
     * (records, and those dropped), and those charged by the clock before
     * the kernel said they were dropped */
    void *ring;
    uint64_t ring_cpu0, ring_taken, ring_ahead;
    /* records the service thread copied out of the ring, filling up while
     * the thread ran without a hook (cg_ring_spill): drained first, in
     * order. ring_lock: 0 free, 1 the thread (a drain, its end), 2 the
     * service thread (a spill) */
    unsigned char *spill;
    size_t spill_used;
    int ring_lock;
    /* a function met under the top frame (fn, never 0 once filled) and
     * the address of its call of the enter hook, 0 when it has none */
    struct {
        uintptr_t fn, enter;
    } hooked[CG_HOOKED_MEMO];
};

/* Time off the CPU, per thread (offcpu.c, CGPROF_OFF_CPU): the perf_event
 * ring (no descriptor: the mapping holds the event), the time of a switch
 * out not yet matched by its switch in, and the sampler's arcs of the last
 * charge (cg_costs_sample). */
struct cg_thread_offcpu {
    void *switch_ring;
    uint64_t switched_out;
    uint32_t offcpu_last[CG_SAMPLE_DEPTH];
    unsigned offcpu_nlast;
};

/* The setjmps seen on a thread (nonlocal.c, entry layer). Plain data with
 * nothing of the entry layer in it, so declared here, where the thread's
 * state can hold it. */
struct cg_thread_jmps {
    struct cg_jmp_seen jmps[CG_JMP_SLOTS];
};

/* The dumper's per-thread state (dump.c, service layer): its two readings
 * of the thread (reading.h). */
struct cg_thread_dumper {
    struct cg_reading base;   /* the reading last reported (or zeroed) */
    struct cg_reading paused; /* the reading when collection was paused */
};

/* A thread's state. Its hot part first, in the order the hooks' fast path
 * (fastpath.h) reads it, whatever module owns each field: guard,
 * ndeferred and deferred are generalpath.c's, vclock and nhooks the
 * sampler's (sample.c), costs the tables' (costs.h), own_memo fold.c's, own_calls
 * calibrate.c's. The cold part after it holds each other module's fields
 * in a struct of its own. */
struct cg_thread {
    /* Nonzero while a hook runs on this thread (CG_GUARD_HOOK) or the
     * runtime works on it (CG_GUARD_RUNTIME): a hook entered again from a
     * signal handler must not touch tables that are half updated. Sentinel
     * threads keep it set. */
    volatile int guard;
    /* cg_thread_enter_runtime's: how deep, and the guard it found (a hook's
     * that a signal handler interrupted, which the handler's call of the
     * runtime (a fork) must give back as it was) */
    uint32_t runtime_depth;
    int guard_before_runtime;
    /* this process is a child forked by a signal handler that interrupted
     * a hook: that hook's event is its parent's, not a call lost here */
    int forked_in_hook;
    volatile uint32_t ndeferred; /* events in deferred[] */
    /* CGPROF_TIME=sample: the thread's clock, advanced by its timer's
     * signal (ns of CPU time), and the hooks made (new visits, sample.c). */
    volatile uint64_t vclock;
    uint64_t nhooks;
    struct cg_costs costs;
    /* CG_MAX_DEFERRED events, mapped at the first one (384 KB: inline,
     * every thread's state and the runtime's two sentinels took that much
     * address space, 0.8 MB of the library's data; issue 39, RLIMIT_AS) */
    struct cg_deferred *deferred;

    /* fold.c's answers of cg_takeback_own by the enter hook's return
     * address: whether a call is its machine function's own first call
     * does not change while its epoch does not (cg_takeback_epoch), and
     * the general path asks it on every call it takes (a recursion's):
     * a lookup under the takeback lock between two clock readings. */
    struct {
        uintptr_t code, fn;
        unsigned epoch;
        int own;
    } own_memo[CG_OWN_MEMO];

    /* counting.c's calls made by signal handlers while the thread was in
     * its slow path (counted when it ends) */
    struct {
        uintptr_t fn, site, ret, sp;
        uintptr_t caller; /* a handler's caller, found as it was deferred */
    } count_deferred[1024]; /* CG_COUNT_DEFERRED */
    volatile uint32_t count_ndeferred;
    /* the function whose call (or exit) a counting hook's slow path is
     * counting: a handler deferred meanwhile was called from it */
    volatile uintptr_t count_current;
    /* registered with LeakSanitizer as a root region (thread.c) */
    int lsan_root;
    /* counting.h's exit hook call sites met (CGPROF_STACKS=unwind) */
    uintptr_t count_exits[64]; /* CG_COUNT_EXITS */

    /* A scratch state the runtime drives its own hooks on (calibrate.c):
     * its calls are never folded nor taken back. */
    int own_calls;

    /* cold */
    struct cg_thread *next; /* registry, newest first */
    uint32_t number;        /* 1 = main thread, then in order of creation */
    pid_t tid;
    int finished;           /* the thread has ended (key destructor ran) */
    uint64_t t_end;         /* time (ns) at which it ended */
    char name[64];          /* cgprof_set_thread_name(), "" if none */
    /* Each module's own fields, grouped by owner. They are declared here,
     * not in the owner's header: sample.c, offcpu.c, nonlocal.c and dump.c
     * include thread.h, and thread.h including theirs would make a circle
     * (nonlocal.c and dump.c are also of layers above). Cold: nothing of
     * the hooks' fast path reads them. */
    struct cg_thread_sampler sampler; /* sample.c's */
    struct cg_thread_offcpu offcpu;   /* offcpu.c's */
    struct cg_thread_jmps nonlocal;   /* nonlocal.c's (entry layer) */
    struct cg_thread_dumper dumper;   /* dump.c's (service layer), under the dump lock */
};

/* The calling thread's state. initial-exec TLS: one %fs-relative load, no
 * __tls_get_addr call (which may allocate) on the hot path. The library is
 * meant to be preloaded or linked, where static TLS is always available. */
extern __thread struct cg_thread *cg_self __attribute__((tls_model("initial-exec")));

/* What the layers above do when a thread's life changes, registered once
 * by the runtime's initialisation (runtime.c) before any thread attaches:
 * callbacks, as they are after this module (docs/internals/design.md, "Layers"). */
struct cg_thread_events {
    /* a thread's state was just made, on its first hook (filters, timer) */
    void (*attached)(struct cg_thread *t);
    /* the thread ends: its hooks no longer record; before it is marked
     * finished (its timer) */
    void (*stopping)(struct cg_thread *t);
    /* then, marked finished with its end time: its last part */
    void (*ended)(struct cg_thread *t);
    /* any thread of the program ended, profiled or not */
    void (*gone)(void);
};

/* Key destructor hook-up and the events; called once by the process-wide
 * init. Returns 0 or -1. */
int cg_thread_init(const struct cg_thread_events *events);

/* Cold path of a thread's first hook, once the runtime is ready: returns the
 * new state, or NULL when this hook must be ignored (no memory: the thread
 * stays unprofiled and says so once). */
struct cg_thread *cg_thread_attach(void);

/* Head of the registry (newest first). Only the dumper, holding the dump
 * lock, walks it or removes entries; threads add themselves at any time. */
struct cg_thread *cg_thread_list(void);
/* Whether any thread still running has a frame of fn whose enter hook was
 * called from [lo, hi) (or from a place not known; lo == hi: from
 * anywhere); *running (may be NULL): the threads still running, when none
 * has one. From a hook's slow path (takeback.c): no lock, no malloc; a
 * frame pushed while it reads may be missed. */
int cg_thread_any_frame(uintptr_t fn, uintptr_t lo, uintptr_t hi, unsigned *running);
/* Unlinks a finished thread whose last part is written, and frees it. */
void cg_thread_release(struct cg_thread *t);
/* Makes hooks on the calling thread do nothing for good (the runtime's own
 * service thread). */
void cg_thread_mark_internal(void);
/* Names the calling thread for its profile (kept until it is set up, if it
 * is not yet). Async-signal-safe. Returns 0, or -1 for a thread the runtime
 * does not profile. */
int cg_thread_set_name(const char *name);

/* Makes sure the calling thread's end is seen (events.gone) even if it
 * never makes a hook. */
void cg_thread_watch_exit(void);

/* Thread numbers: files are numbered like Callgrind's
 * (callgrind.out.<pid>-<NN>) in the order threads are created, which only
 * the creator knows. cg_thread_take_number() gives the next number (in the
 * creating thread); cg_thread_assign_number() hands it to the new thread,
 * before its first hook. */
uint32_t cg_thread_take_number(void);
void cg_thread_assign_number(uint32_t number);
/* Whether any thread of this process has run a hook since it started. */
int cg_thread_attached_ever(void);

/* Marks the calling thread as inside the runtime (a dump), so that hooks
 * reached from the dump's own calls are ignored. Returns what to pass to
 * cg_thread_leave_runtime(). */
struct cg_thread *cg_thread_enter_runtime(void);
void cg_thread_leave_runtime(struct cg_thread *saved);

/* A vfork() child runs on its parent thread's memory, cg_self included:
 * cg_thread_suspend() makes the calling thread's hooks do nothing and
 * returns what cg_thread_resume() puts back (in the parent, once the child
 * has execed or ended). */
struct cg_thread *cg_thread_suspend(void);
void cg_thread_resume(struct cg_thread *saved);

/* In a forked child, for the thread that forked: it keeps its stack and
 * counts from zero; the other threads are forgotten. */
void cg_thread_forked(void);

#endif
