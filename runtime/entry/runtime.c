/* The runtime's start (entry layer): one-time initialisation on first use
 * (from the library's constructor, library.c, or whatever runs first), and
 * the one place where the layers are wired together: the thread layer's
 * events and the fork handlers call into the layers above from here. */
#define _GNU_SOURCE
#include "runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/auxv.h>

#include "calibrate.h"
#include "clock.h"
#include "cpu.h"
#include "crash.h"
#include "dump.h"
#include "elfutils.h"
#include "filter.h"
#include "offcpu.h"
#include "options.h"
#include "part.h"
#include "proc.h"
#include "sample.h"
#include "samplering.h"
#include "service.h"
#include "takeback.h"
#include "thread.h"
#include "util.h"

extern char **environ;

enum { INIT_NONE, INIT_RUNNING, INIT_DONE, INIT_OFF };
static int init_state;

static void report_option(void *ctx, const char *msg, const char *why)
{
    (void)ctx;
    (void)why;
    cg_warn("%s", msg);
}

/* ---- a thread's life, as the layers above see it ---- */

/* Overhead compensation's calibration: 0 not done, 1 under way, 2 done. */
static int calibrated;

/* What the hooks cost, measured with them (a few ms), once per process, at
 * its first hook: not in initialise(), which the constructor runs in every
 * process the runtime is preloaded into (a shell, a compiler of a build),
 * most of which never run a hook. A thread attaching meanwhile waits for
 * the figures. Sampled time has no hook time to leave out: a sample in a
 * hook is charged where the hook's call is. */
static void calibrate_once(void)
{
    int s = 0;
    if (__atomic_compare_exchange_n(&calibrated, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (cg_opts.compensate && !cg_sampling &&
            (cg_calibrate(&cg_comp_in, &cg_comp_out) != 0 ||
             cg_calibrate_mode(CG_FAST_NONE, &cg_comp_gin, &cg_comp_gout) != 0))
            cg_comp_in = cg_comp_out = cg_comp_gin = cg_comp_gout = 0;
        __atomic_store_n(&calibrated, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&calibrated, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
}

static void thread_attached(struct cg_thread *t)
{
    cg_filter_attach(&t->costs);
    cg_ring_thread_start(t); /* then no timer (CGPROF_SAMPLE_TIMER=ring) */
    cg_sample_thread_start(t);
    calibrate_once();
    cg_calibrate_apply(&t->costs, cg_comp_in, cg_comp_out, cg_comp_gin, cg_comp_gout);
    cg_offcpu_thread_start(t);
    /* An output directory that cannot take the files is said now, rather
     * than after the whole run: at the process's first hook, not in the
     * constructor, so that the processes that run no hook (a shell, mkdir
     * making that very directory: the runtime is preloaded into all of
     * them) stay silent. Syscalls only (part.h), once per process. */
    static int dir_checked;
    if (!__atomic_exchange_n(&dir_checked, 1, __ATOMIC_ACQ_REL))
        cg_part_check_dir();
}

/* Every thread that ends, profiled or not: its alternate signal stack goes,
 * and the service thread too if it was the program's last. */
static void thread_gone(void)
{
    cg_crash_thread_end();
    cg_service_thread_gone();
}

/* A thread that ends: its timer and its switch records go. */
static void thread_stopping(struct cg_thread *t)
{
    cg_ring_thread_stop(t);
    cg_sample_thread_stop(t);
    cg_offcpu_thread_stop(t);
}

static const struct cg_thread_events thread_events = {
    .attached = thread_attached,
    .stopping = thread_stopping,
    .ended = cg_dump_thread_exit,
    .gone = thread_gone,
};

/* ---- fork ------------------------------------------------------------------
 * No dump may be half done in the child, whose only thread is the one that
 * forked: fork waits for the dump lock. In the child, each layer from the
 * bottom up: the process's identity, the thread that forked (its tables
 * counting from zero, the others forgotten) and its timer, the dumps'
 * state, then a service thread of the child's own. */

/* The service thread stopped across the fork, before the dump lock is
 * taken (it may be writing a dump): the fork then has the threads the
 * program made, no more. */
static int service_paused;

static void fork_prepare(void)
{
    service_paused = cg_service_pause();
    cg_dump_fork_prepare();
}

static void fork_parent(void)
{
    cg_dump_fork_parent();
    cg_service_resume(service_paused);
    service_paused = 0;
}

static void fork_child(void)
{
    service_paused = 0; /* cg_service_forked starts the child's */
    /* a calibration under way in another thread: that thread is not here */
    if (__atomic_load_n(&calibrated, __ATOMIC_ACQUIRE) == 1)
        __atomic_store_n(&calibrated, 0, __ATOMIC_RELEASE);
    cg_proc_forked();
    cg_takeback_forked();
    cg_thread_forked();
    cg_ring_forked(cg_thread_list());
    cg_sample_forked(cg_thread_list());
    cg_offcpu_forked(cg_thread_list());
    cg_dump_forked();
    cg_service_forked();
}

static int initialise(const struct cg_hook_addrs *hooks)
{
    cg_stderr_remember();
    /* A set-user-ID or otherwise privileged program: files named by the
     * environment of an unprivileged user must not be written. */
    if (getauxval(AT_SECURE))
        return -1; /* not even a message: a privileged program's stderr is its own (the launcher says why) */
    /* The start-up directory first: a relative CGPROF_OUT's files are named
     * from it, and its length counts toward the system's limit. */
    cg_proc_read_identity();
    cg_options_parse(&cg_opts, environ, cg_proc_cwd(), report_option, NULL);
    /* Refused (and said): no file anywhere else, the program left alone. */
    if (cg_opts.out_refused)
        return -1;
    const char *why;
    cg_clock_init((enum cg_clock_kind)cg_opts.clock, &why);
    if (why)
        cg_warn("CGPROF_CLOCK=tsc is not possible (%s); using monotonic", why);
    cg_paths_bound = cg_opts.paths ? cg_opts.paths_max : 0;
    /* The counting hooks (CGPROF_STACKS=unwind) keep no stack: what needs
     * one, or the exact clock, keeps the hooks' (one message). They count
     * every call at the cost of a counter: the throttle is not used. */
    int counting = cg_opts.stacks == CG_STACKS_UNWIND;
    if (counting) {
        const char *not_with = cg_opts.time != CG_TIME_SAMPLE ? "CGPROF_TIME=exact"
                          : cg_opts.inlined != CG_INLINED_FOLD ? "CGPROF_INLINED=count"
                          : cg_opts.paths ? "CGPROF_PATHS=1"
                          : cg_opts.latency ? "CGPROF_LATENCY=1"
                          : cg_opts.off_cpu ? "CGPROF_OFF_CPU=1"
                          : cg_opts.skip[0] || cg_opts.skip_object[0] || cg_opts.skip_file[0] ? "CGPROF_SKIP*"
                          : NULL;
#if !CG_HAVE_LIBUNWIND
        not_with = not_with ? not_with : "a runtime built without libunwind";
#endif
        if (!CG_CPU_HAVE_COUNTING) {
            cg_warn("CGPROF_STACKS=unwind is not used on %s yet (docs/limitations.md): the hooks keep the stack "
                    "(CGPROF_STACKS=hooks)", CG_CPU_NAME);
            counting = 0;
        } else if (not_with) {
            cg_warn("CGPROF_STACKS=unwind counts calls with sampled time and folded inlined calls only, not with %s: "
                    "the hooks keep the stack (CGPROF_STACKS=hooks)", not_with);
            counting = 0;
        } else {
            cg_opts.throttle.n = 0;
        }
    }
    cg_filter_init();
    /* A call's latency is its two clock readings, which sampled time does
     * not make: the histograms make the time exact (their cost over exact
     * time is a bucket and three stores a call, docs/latency.md). */
    if (cg_opts.latency && cg_opts.time != CG_TIME_EXACT) {
        if (getenv("CGPROF_TIME"))
            cg_warn("CGPROF_LATENCY=1 times every call with the clock: CGPROF_TIME=exact, not sample");
        cg_opts.time = CG_TIME_EXACT;
    }
    cg_latency = cg_opts.latency;
    cg_offcpu_init(cg_opts.off_cpu && cg_opts.time == CG_TIME_EXACT);
    if (cg_opts.off_cpu && cg_opts.time != CG_TIME_EXACT)
        cg_warn("CGPROF_OFF_CPU=1 shows time off the CPU with CGPROF_TIME=exact only: sampled time (the default) "
                "is CPU time, which never counts it; set CGPROF_TIME=exact too");
    if (cg_thread_init(&thread_events) != 0 || pthread_atfork(fork_prepare, fork_parent, fork_child) != 0 ||
        cg_sample_init(hooks->enter, hooks->exit) != 0) {
        cg_warn("cannot set up thread and fork handling; not profiling");
        return -1;
    }
    cg_ring_init();
    cg_takeback_init(hooks->enter, hooks->exit, cg_opts.takeback);
    cg_collecting = 1;
    if (counting && !cg_sampling) {
        cg_warn("CGPROF_STACKS=unwind needs sampled time, which is not possible here (said above): the hooks keep "
                "the stack (CGPROF_STACKS=hooks)");
        counting = 0;
    }
    cg_fast_mode = counting      ? CG_FAST_COUNT
                   : cg_sampling ? CG_FAST_SAMPLE
                   : cg_clock_use_tsc ? CG_FAST_TSC : CG_FAST_NONE;
    if (cg_opts.collect == CG_COLLECT_OFF)
        cg_dump_start_off();
    return 0;
}

int cg_runtime_ready(const struct cg_hook_addrs *hooks)
{
    int s = __atomic_load_n(&init_state, __ATOMIC_ACQUIRE);
    if (cg_likely(s == INIT_DONE))
        return 1;
    if (s != INIT_NONE)
        return 0;
    if (!__atomic_compare_exchange_n(&init_state, &s, INIT_RUNNING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s == INIT_DONE;
    int saved = errno;
    int rc = initialise(hooks);
    errno = saved;
    __atomic_store_n(&init_state, rc == 0 ? INIT_DONE : INIT_OFF, __ATOMIC_RELEASE);
    return rc == 0;
}

/* ---- an instrumented process's services ------------------------------------
 * The runtime is preloaded into every process of a build, a shell script or
 * a sandbox, most of which run no hook. Until a process is known to be
 * instrumented (an object of it calls __cyg_profile_func_enter, or a hook
 * ran), it adds nothing the program could see: no service thread, no dump
 * signal handler, no crash handlers or alternate stacks (docs/internals/design.md, "What
 * the program sees of cgprof"). They are set up here, never from a hook: a
 * thread's first hook may run inside the program's allocator or a signal
 * handler. */

/* Not known to be instrumented yet: the services wait. */
static int dormant;

static void set_up_services(void)
{
    /* Not from initialise(): it may run in a thread's first hook, and
     * resolving the skip patterns reads symbol tables. Arcs made before
     * this point (by constructors of libraries that ran before ours) are
     * not filtered. */
    cg_filter_scan();
    /* Under ThreadSanitizer libdw is loaded now (in the constructor, in a
     * program known to be instrumented: before its threads and cgprof's
     * service run), not at the first dump: loaded while they ran and dumps
     * were asked by signal, on a loaded machine, TSan ended the program
     * ("ThreadSanitizer failed to allocate 0x1ed6ffffff000 bytes",
     * scripts/tsan's server with two CPU hogs: 6 runs in 10; none loaded
     * here). Its address space does not matter there: TSan reserves
     * terabytes of its own. */
    if (dlsym(RTLD_DEFAULT, "__tsan_init"))
        cg_elfutils();
    dlerror();
    cg_sample_set_up();
    cg_ring_set_up();
    cg_crash_install();
    cg_crash_thread_start();
    cg_service_start();
}

int cg_runtime_dormant(void)
{
    return __atomic_load_n(&dormant, __ATOMIC_ACQUIRE);
}

void cg_runtime_wake(int scan)
{
    if (!__atomic_load_n(&dormant, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    if ((cg_thread_attached_ever() || (scan && cg_proc_instrumented(&dormant))) &&
        __atomic_exchange_n(&dormant, 0, __ATOMIC_ACQ_REL))
        set_up_services();
    errno = saved;
}

int cg_runtime_services(void)
{
    /* A static program linked the runtime in to be profiled. */
    if (CG_STATIC || cg_thread_attached_ever() || cg_proc_instrumented(&dormant)) {
        set_up_services();
        return 1;
    }
    __atomic_store_n(&dormant, 1, __ATOMIC_RELEASE);
    return 0;
}

int cg_runtime_started(void)
{
    return __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_DONE;
}
