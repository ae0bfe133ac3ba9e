/* Per-thread state (thread layer): see thread.h. */
#define _GNU_SOURCE
#include "thread.h"
#include "real.h"

#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"
#include "util.h"

__thread struct cg_thread *cg_self __attribute__((tls_model("initial-exec")));

/* A name given before the thread's first hook, taken over by its state. */
static __thread char pending_name[64] __attribute__((tls_model("initial-exec")));

/* Number given to a thread by our pthread_create before it started. */
static __thread uint32_t assigned_number __attribute__((tls_model("initial-exec")));

/* Hooks on a thread whose state is being built, or that could not get
 * memory, see a guard that never clears. */
static struct cg_thread busy_sentinel = { .guard = 1 };
static struct cg_thread off_sentinel = { .guard = 1 };

static struct cg_thread *registry;
static uint32_t next_number = 2; /* 1 is the main thread */
/* Some thread of the process ran a hook (CGPROF_VERBOSE's "not
 * instrumented" line at exit). */
static int attached_ever;
static pthread_key_t exit_key;
static struct cg_thread_events events;

/* Under LeakSanitizer, a thread's record (mapped memory, which it does not
 * scan) is a root region: its snapshots are heap blocks only it points to.
 * A forked child's forgotten threads stay registered: their blocks are
 * reachable, not leaks. Looked up at start-up (real.h), not here: a
 * failed lookup would be retried at every thread. */
static void lsan_root(struct cg_thread *t, int on)
{
    /* only what was registered is unregistered: the functions may be
     * found between the two (the real functions' table filled after a
     * thread attached: LeakSanitizer's "region ... has not been
     * registered", the sanitizer step's unit tests once libdw was no
     * longer linked in) */
    if (!on && !t->lsan_root)
        return;
    void (*f)(const void *, size_t) =
        on ? __atomic_load_n(&cg_real.fn___lsan_register_root_region, __ATOMIC_ACQUIRE)
           : __atomic_load_n(&cg_real.fn___lsan_unregister_root_region, __ATOMIC_ACQUIRE);
    if (f)
        f(t, sizeof *t);
    t->lsan_root = on && f;
}

/* Thread-specific-data destructor: the thread ends. Its calls still running
 * stop counting now; hooks that run later on this thread (other libraries'
 * destructors) are not recorded; its last part is written and its memory
 * freed. */
/* The key's value for threads that have made no hook (yet): they still get
 * the destructor, which the last of the program's threads needs. */
static char exit_marker;

static CG_NOINSTR void on_thread_exit(void *arg)
{
    struct cg_thread *t = arg;
    if (arg == &exit_marker || cg_self != t) {
        events.gone();
        return;
    }
    t->t_end = cg_sampling ? t->vclock : cg_costs_time_of(&t->costs, cg_clock_now());
    cg_self = &off_sentinel;
    events.stopping(t);
    __atomic_store_n(&t->finished, 1, __ATOMIC_RELEASE);
    events.ended(t);
    events.gone();
}

void cg_thread_watch_exit(void)
{
    if (!pthread_getspecific(exit_key))
        pthread_setspecific(exit_key, &exit_marker);
}

int cg_thread_set_name(const char *name)
{
    struct cg_thread *t = cg_self;
    char *dst = pending_name;
    if (t == &off_sentinel)
        return -1;
    if (t && t != &busy_sentinel)
        dst = t->name;
    size_t n = 0;
    for (; n < sizeof t->name - 1 && name[n]; n++)
        dst[n] = name[n] == '\n' ? ' ' : name[n];
    dst[n] = 0;
    return 0;
}

struct cg_thread *cg_thread_suspend(void)
{
    struct cg_thread *t = cg_self;
    cg_self = &off_sentinel;
    return t;
}

void cg_thread_resume(struct cg_thread *saved)
{
    cg_self = saved;
}

void cg_thread_mark_internal(void)
{
    cg_self = &off_sentinel;
}

/* Walks of the registry from the hooks (cg_thread_any_frame) under way:
 * a thread unlinked meanwhile is freed only when they are done. */
static unsigned long walkers;

/* Reads a running thread's frames as a dump does (racy by design): only
 * whether one is of fn, from code in [lo, hi). */
static CG_RACY_READ int has_frame(const struct cg_thread *t, uintptr_t fn, uintptr_t lo, uintptr_t hi)
{
    uint32_t d = __atomic_load_n(&t->costs.depth, __ATOMIC_ACQUIRE);
    const struct cg_frame *f = __atomic_load_n(&t->costs.frames, __ATOMIC_ACQUIRE);
    if (!f || d > t->costs.frame_cap)
        return 0;
    for (uint32_t i = 0; i < d; i++)
        if (f[i].fn == fn && (lo == hi || f[i].code == 0 || (f[i].code >= lo && f[i].code < hi)))
            return 1;
    return 0;
}

int cg_thread_any_frame(uintptr_t fn, uintptr_t lo, uintptr_t hi, unsigned *running)
{
    int found = 0;
    unsigned n = 0;
    __atomic_fetch_add(&walkers, 1, __ATOMIC_SEQ_CST);
    /* no frames array freed meanwhile either (struct cg_costs, retired) */
    __atomic_fetch_add(&cg_readers, 1, __ATOMIC_SEQ_CST);
    /* the links read whole: a thread's unlinking (cg_thread_release) may
     * change one meanwhile (ThreadSanitizer saw the two race) */
    for (struct cg_thread *t = cg_thread_list(); t && !found; t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE))
        if (!__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE)) {
            n++;
            found = has_frame(t, fn, lo, hi);
        }
    if (running)
        *running = n;
    __atomic_fetch_sub(&cg_readers, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&walkers, 1, __ATOMIC_SEQ_CST);
    return found;
}

void cg_thread_release(struct cg_thread *t)
{
    /* Only the dumper removes, so only the head can change under us (new
     * threads pushing themselves). */
    struct cg_thread *head = t;
    if (!__atomic_compare_exchange_n(&registry, &head, t->next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        struct cg_thread *p = __atomic_load_n(&registry, __ATOMIC_ACQUIRE);
        while (p && p->next != t)
            p = p->next;
        if (!p)
            return; /* not registered: leave it alone */
        __atomic_store_n(&p->next, t->next, __ATOMIC_RELEASE);
    }
    /* a walker that found t before it was unlinked may still read it */
    while (__atomic_load_n(&walkers, __ATOMIC_SEQ_CST))
        sched_yield();
    cg_costs_destroy(&t->costs);
    cg_reading_free(&t->dumper.base);
    cg_reading_free(&t->dumper.paused);
    lsan_root(t, 0);
    if (t->deferred)
        munmap(t->deferred, sizeof *t->deferred * CG_MAX_DEFERRED);
    munmap(t, sizeof *t);
}

/* In a forked child only the thread that called fork() exists, with a copy
 * of the parent's tables: it keeps its shadow stack (its returns are real)
 * but counts from zero, and the other threads are forgotten, so nothing is
 * reported twice. Their copied memory stays unused.
 *
 * The calls in progress at the fork were counted by the parent: in the
 * child they are continuations, whose time from the fork counts and whose
 * call does not. The base (what is taken as already reported) is the
 * reading just after the tables are zeroed: a count of one for each frame
 * on the stack and no time, so the child's parts show these arcs with
 * calls=0 ("Calls continued"), as a dump does for a call that runs across
 * it. (malloc is usable here: glibc's fork leaves the child's allocator
 * consistent.) */
void cg_thread_forked(void)
{
    struct cg_thread *t = cg_self;
    int real = t && t->costs.frames != NULL;
    if (real)
        t->forked_in_hook = t->guard == CG_GUARD_HOOK ||
                            (t->guard == CG_GUARD_RUNTIME && t->runtime_depth && t->guard_before_runtime == CG_GUARD_HOOK);
    if (real) {
        uint64_t now = cg_sampling ? t->vclock : cg_costs_time_of(&t->costs, cg_clock_now());
        cg_costs_zero(&t->costs, now);
        cg_reading_free(&t->dumper.paused);
        if (cg_reading_take(&t->costs, now, &t->dumper.base) != 0) {
            cg_reading_free(&t->dumper.base);
            cg_warn("out of memory in a forked child: its %u calls in progress at the fork are counted again "
                    "in its profile", t->costs.depth);
        }
        t->next = NULL;
        t->tid = (pid_t)syscall(SYS_gettid);
    }
    __atomic_store_n(&registry, real ? t : NULL, __ATOMIC_RELEASE);
}

int cg_thread_init(const struct cg_thread_events *ev)
{
    events = *ev;
    return pthread_key_create(&exit_key, on_thread_exit);
}

struct cg_thread *cg_thread_list(void)
{
    return __atomic_load_n(&registry, __ATOMIC_ACQUIRE);
}

struct cg_thread *cg_thread_attach(void)
{
    int saved = errno;
    cg_self = &busy_sentinel;
    struct cg_thread *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED || cg_costs_init(&t->costs, cg_paths_bound) != 0) {
        if (t != MAP_FAILED)
            munmap(t, sizeof *t);
        cg_self = &off_sentinel;
        cg_warn_once_nomem();
        errno = saved;
        return NULL;
    }
    /* without memory for them, the thread's calls are counted all the same */
    if (cg_latency && cg_costs_latency_on(&t->costs) != 0)
        cg_warn_once_nomem();
    __atomic_store_n(&attached_ever, 1, __ATOMIC_RELAXED);
    lsan_root(t, 1);
    t->tid = (pid_t)syscall(SYS_gettid);
    if (cg_sampling)
        t->costs.vclock = &t->vclock;
    events.attached(t);
    if (assigned_number)
        t->number = assigned_number;
    else if (t->tid == getpid())
        t->number = 1;
    else
        t->number = __atomic_fetch_add(&next_number, 1, __ATOMIC_RELAXED);
    memcpy(t->name, pending_name, sizeof t->name);
    pthread_setspecific(exit_key, t);
    struct cg_thread *head = __atomic_load_n(&registry, __ATOMIC_RELAXED);
    do
        t->next = head;
    while (!__atomic_compare_exchange_n(&registry, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    cg_self = t;
    errno = saved;
    return t;
}

struct cg_thread *cg_thread_enter_runtime(void)
{
    struct cg_thread *saved = cg_self;
    if (saved && saved != &busy_sentinel && saved != &off_sentinel) {
        if (saved->runtime_depth++ == 0)
            saved->guard_before_runtime = saved->guard;
        saved->guard = CG_GUARD_RUNTIME;
    } else
        cg_self = &busy_sentinel;
    cg_signal_fence();
    return saved;
}

void cg_thread_leave_runtime(struct cg_thread *saved)
{
    cg_signal_fence();
    /* the guard as it was: 0, or a hook's that a signal handler interrupted
     * before it called the runtime (a fork in the handler: set to 0, the
     * handler's later hooks ran into the interrupted hook's half-made
     * change, and in the child its calls were kept for good, never
     * counted: issue 39) */
    if (saved && saved != &busy_sentinel && saved != &off_sentinel)
        saved->guard = !saved->runtime_depth ? 0 /* a leave without its enter (a forked child's) */
                       : --saved->runtime_depth ? CG_GUARD_RUNTIME : saved->guard_before_runtime;
    else
        cg_self = saved;
}

int cg_thread_attached_ever(void)
{
    return __atomic_load_n(&attached_ever, __ATOMIC_RELAXED);
}

uint32_t cg_thread_take_number(void)
{
    return __atomic_fetch_add(&next_number, 1, __ATOMIC_RELAXED);
}

void cg_thread_assign_number(uint32_t number)
{
    assigned_number = number;
}
