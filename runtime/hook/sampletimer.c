/* The timers that send each thread its samples, and the signal they come
 * by: see sampletimer.h. What a sample is charged to is sample.c's.
 *
 * Why timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID): the timer
 * measures the thread's own CPU time and signals that thread, so the
 * handler runs on the thread it samples and touches only its tables, with
 * the same guard as a hook. setitimer(ITIMER_PROF) would signal any thread
 * of the process. */
#define _GNU_SOURCE
#include "sampletimer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"
#include "options.h"
#include "proc.h"
#include "real.h"
#include "thread.h"
#include "util.h"

static uint64_t period_ns;
static int sample_sig;
static int stepped_aside;
/* The action the sampling signal had before ours (SIG_DFL): a query's
 * answer while it is ours (cg_sample_signal_view). */
static struct sigaction program_view;
/* What a sample is charged to (sample.c's, from cg_sample_timers_init). */
static cg_sample_charge_fn charge;

/* Collection off (cg_sample_collect): the timers stopped, and a signal
 * already sent does nothing (its time is not recorded: no walk); a ring's
 * records are counted, not charged. */
static int sampling_paused;

int cg_sample_paused(void)
{
    return __atomic_load_n(&sampling_paused, __ATOMIC_RELAXED);
}
static void timer_switch(struct cg_thread *t, int on);

static CG_NOINSTR void on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    if (__atomic_load_n(&sampling_paused, __ATOMIC_RELAXED))
        return; /* not enabled again either: cg_sample_collect(1) does */
    charge(si, uc, period_ns);
    /* The perf_event timer, disabled by its overflow: enabled again when
     * the handler is done, so that the handler's own time (a first walk
     * through a library's unwind tables takes longer than a period at
     * 20,000 Hz) is not counted: re-enabled at its start, the next
     * overflow came as it returned, and the thread only ran handlers,
     * every sample at the one place it had stopped. It is ours: cgprof
     * owns the signal, and only its events send it so. */
    if (si && (si->si_code == POLL_IN || si->si_code == POLL_HUP) && si->si_fd >= 0) {
        int saved = errno;
        ioctl(si->si_fd, PERF_EVENT_IOC_REFRESH, 1);
        errno = saved;
    }
}

/* The perf_event timer (CGPROF_SAMPLE_TIMER=perf, or auto where the kernel
 * allows it): a task clock of the thread with a sampling period, its
 * overflow sending the sampling signal to that thread (O_ASYNC, F_SETSIG,
 * F_SETOWN_EX). The kernel drives it by a high-resolution timer of its
 * own, so CGPROF_SAMPLE_HZ is the rate of the signals, where a POSIX
 * CPU-time timer is checked at the scheduler's tick (250 a second) and
 * carries the periods between in one signal. Each overflow disables it
 * (PERF_EVENT_IOC_REFRESH 1); the handler enables it again. It counts
 * user time only (exclude_kernel), even where the kernel would let it count
 * its own: an overflow in a system call queued the signal there, and a
 * short nanosleep or poll of the program failed with EINTR (4 to 10 in
 * 20,000 waits: tests/progs/shortwaits.c), and one pending across exec()
 * ended the new image. Counted in user mode, the signal is sent by the
 * timer interrupt of the thread's own code and handled as it returns
 * there. */
static int use_perf;
static int perf_exclude_kernel;
/* CGPROF_SAMPLE_TIMER=ring: samplering.c's buffers serve the threads that
 * have one (t->sampler.ring), and the header says so */
static const char *ring_desc;

void cg_sample_ring_chosen(const char *desc)
{
    ring_desc = desc;
}

void cg_sample_task_clock(struct perf_event_attr *a, int exclude_kernel)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_TASK_CLOCK;
    a->sample_period = period_ns;
    a->exclude_kernel = (unsigned)exclude_kernel;
    a->exclude_hv = 1;
}

static int perf_timer_open(int exclude_kernel)
{
    struct perf_event_attr a;
    cg_sample_task_clock(&a, exclude_kernel);
    a.disabled = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void perf_timer_close(struct cg_thread *t)
{
    /* only if the fd is still that event: a program may close fds it did
     * not open (closefrom) and reuse the number */
    uint64_t id = 0;
    if (ioctl(t->sampler.timer_fd, PERF_EVENT_IOC_ID, &id) == 0 && id == t->sampler.timer_id)
        close(t->sampler.timer_fd);
    t->sampler.timer_fd = -1;
}

static int perf_timer_start(struct cg_thread *t)
{
    int fd = cg_fd_above(perf_timer_open(perf_exclude_kernel));
    if (fd < 0)
        return -1;
    struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    uint64_t id = 0;
    if (fcntl(fd, F_SETSIG, sample_sig) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        fcntl(fd, F_SETFL, O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
        close(fd);
        return -1;
    }
    t->sampler.timer_fd = fd;
    t->sampler.timer_id = id;
    t->sampler.has_timer = CG_TIMER_PERF;
    if (ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
        perf_timer_close(t);
        t->sampler.has_timer = CG_TIMER_NONE;
        return -1;
    }
    return 0;
}

/* Whether this process may use the perf_event timer, and how (at start-up). */
/* Under a tight RLIMIT_NOFILE (a soft limit below CG_FEW_FDS), sampling
 * holds no descriptor: POSIX timers (none), not the perf_event timer (one
 * per thread), and no libunwind (its address probes hold a pipe: two),
 * so that time in code without hooks stays with the function that called
 * it. A program opening three files under a limit of 6 got "Too many open
 * files" for all three (issue 39). Said in each part's header. */
#define CG_FEW_FDS 256
static int few_fds;

int cg_sample_few_fds(void)
{
    return few_fds;
}

static void perf_timer_probe(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < CG_FEW_FDS)
        few_fds = (int)lim.rlim_cur;
    if (cg_opts.sample_timer == CG_SAMPLE_TIMER_POSIX || few_fds)
        return;
    for (int excl = 1; excl >= 0; excl--) { /* user time first: see above */
        int fd = perf_timer_open(excl);
        if (fd >= 0) {
            close(fd);
            use_perf = 1;
            perf_exclude_kernel = excl;
            return;
        }
    }
    if (cg_opts.sample_timer == CG_SAMPLE_TIMER_PERF)
        cg_warn("CGPROF_SAMPLE_TIMER=perf: the kernel refuses a perf_event task clock here (%s); using POSIX "
                "CPU-time timers", strerror(errno));
}

int cg_sample_timers_init(cg_sample_charge_fn fn)
{
    if (cg_opts.sample_signal == 0) {
        cg_warn("CGPROF_TIME=sample needs a signal (CGPROF_SAMPLE_SIGNAL=none); timing every call instead");
        return 0;
    }
    if (cg_opts.sample_signal == cg_opts.signal) {
        cg_warn("CGPROF_SAMPLE_SIGNAL and CGPROF_SIGNAL are the same signal; timing every call instead");
        return 0;
    }
    /* Taken already, by a signal the user chose: as asked, or not at all.
     * Otherwise the handler goes in at the first timer (ensure_handler). */
    struct sigaction old;
    if (cg_option_given(&cg_opts, "CGPROF_SAMPLE_SIGNAL") &&
        cg_real_sigaction()(cg_opts.sample_signal, NULL, &old) == 0 && old.sa_handler != SIG_DFL) {
        char name[24];
        cg_warn("SIG%s already has an action in this program; timing every call instead of sampling "
                "(CGPROF_SAMPLE_SIGNAL chooses another signal)",
                cg_signal_name(cg_opts.sample_signal, name, sizeof name));
        return 0;
    }
    charge = fn;
    sample_sig = cg_opts.sample_signal;
    period_ns = 1000000000u / cg_opts.sample_hz;
    perf_timer_probe();
    return 1;
}

uint64_t cg_sample_period_ns(void)
{
    return period_ns;
}

const char *cg_sample_timer_desc(int ring_refused)
{
    if (few_fds)
        return "CLOCK_THREAD_CPUTIME_ID timer, and no descriptor held: RLIMIT_NOFILE below 256, so no perf_event "
               "timer and no walk of code without hooks, whose time stays with the function that called it";
    if (ring_desc && !ring_refused)
        return ring_desc;
    if (ring_desc && ring_refused == 2)
        return !use_perf ? "CLOCK_THREAD_CPUTIME_ID timer: no room for this thread's ring buffer (RLIMIT_AS)"
               : perf_exclude_kernel
                   ? "perf_event task clock, user time only, its signals: no room for this thread's ring buffer "
                     "(RLIMIT_AS)"
                   : "perf_event task clock, its signals: no room for this thread's ring buffer (RLIMIT_AS)";
    if (ring_desc && !use_perf)
        return "CLOCK_THREAD_CPUTIME_ID timer: the kernel refused this thread a ring buffer (locked memory: "
               "perf_event_mlock_kb, RLIMIT_MEMLOCK)";
    if (ring_desc)
        return perf_exclude_kernel ? "perf_event task clock, user time only, its signals: the kernel refused this "
                                     "thread a ring buffer (locked memory: perf_event_mlock_kb, RLIMIT_MEMLOCK)"
                                   : "perf_event task clock, its signals: the kernel refused this thread a ring "
                                     "buffer (locked memory: perf_event_mlock_kb, RLIMIT_MEMLOCK)";
    if (!use_perf)
        return "CLOCK_THREAD_CPUTIME_ID timer";
    return perf_exclude_kernel ? "perf_event task clock, user time only" : "perf_event task clock";
}

/* The sampling signal's handler, installed over SIG_DFL only (the
 * program's view of the signal is that: program_view). Returns whether it
 * went in. */
static int install_on(int sig)
{
    struct sigaction old;
    if (cg_real_sigaction()(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    /* every signal blocked while it runs: no handler of the program's
     * runs on top of it (the counting hooks' deferred calls of a handler
     * that interrupted the sampler could not tell their caller: its
     * signal frame is gone when they are counted); but a fault's, which
     * the kernel would turn into the process's end when blocked */
    sigfillset(&sa.sa_mask);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
    for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&sa.sa_mask, faults[i]);
    if (cg_real_sigaction()(sig, &sa, NULL) != 0)
        return 0;
    program_view = old;
    return 1;
}

/* 0: not yet, 1: being installed, 2: in, 3: no signal to be had. */
static int handler_state;

/* The handler goes in at the first timer, not at start-up: another
 * profiler preloaded with cgprof (gperftools' libprofiler) whose
 * constructor runs after cgprof's then finds SIGPROF free, as it requires,
 * and cgprof takes another signal, a real-time one nobody has an action
 * for (unless the user chose the signal: CGPROF_SAMPLE_SIGNAL). */
static int ensure_handler(void)
{
    int s = __atomic_load_n(&handler_state, __ATOMIC_ACQUIRE);
    if (cg_likely(s == 2))
        return 1;
    if (s == 0 && __atomic_compare_exchange_n(&handler_state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        int sig = sample_sig, ok = install_on(sig);
        if (!ok && !cg_option_given(&cg_opts, "CGPROF_SAMPLE_SIGNAL"))
            for (int k = SIGRTMIN + 8; k <= SIGRTMAX - 8 && !ok; k++)
                if (k != cg_opts.signal && install_on(k))
                    sig = k, ok = 1;
        char was[24], now[24];
        if (ok && sig != sample_sig)
            cg_warn("SIG%s has an action of another's (another profiler's?): cgprof samples on SIG%s instead "
                    "(CGPROF_SAMPLE_SIGNAL chooses one)",
                    cg_signal_name(sample_sig, was, sizeof was), cg_signal_name(sig, now, sizeof now));
        else if (!ok)
            cg_warn("SIG%s has an action of another's and no other signal is free: no samples, so no time is "
                    "recorded (the calls still are counted)", cg_signal_name(sample_sig, was, sizeof was));
        sample_sig = sig;
        __atomic_store_n(&handler_state, ok ? 2 : 3, __ATOMIC_RELEASE);
        return ok;
    }
    while ((s = __atomic_load_n(&handler_state, __ATOMIC_ACQUIRE)) == 1)
        sched_yield();
    return s == 2;
}

void cg_sample_thread_start(struct cg_thread *t)
{
    if (!cg_sampling || stepped_aside || t->sampler.has_timer || t->sampler.ring)
        return;
    int saved = errno;
    if (!ensure_handler()) {
        errno = saved;
        return;
    }
    /* A thread that blocks the sampling signal would never be sampled, its
     * time unseen: xz's workers start with every signal blocked (their
     * creator blocks all around pthread_create, so that the process's
     * signals go to its main thread). The signal is cgprof's (a program
     * that sets an action for it makes cgprof step aside), and the timer
     * sends it to this thread alone: unblocked here. */
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, sample_sig);
    pthread_sigmask(SIG_UNBLOCK, &ours, NULL);
    if (use_perf && perf_timer_start(t) == 0) {
        if (__atomic_load_n(&sampling_paused, __ATOMIC_SEQ_CST))
            timer_switch(t, 0); /* collection off: started when it comes on */
        errno = saved;
        return;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sample_sig;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t id;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &id) == 0) {
        struct itimerspec its;
        its.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
        its.it_interval.tv_nsec = (long)(period_ns % 1000000000u);
        its.it_value = its.it_interval;
        if (timer_settime(id, 0, &its, NULL) == 0) {
            t->sampler.timer = (void *)id;
            t->sampler.has_timer = CG_TIMER_POSIX;
            if (__atomic_load_n(&sampling_paused, __ATOMIC_SEQ_CST))
                timer_switch(t, 0);
        } else {
            timer_delete(id);
        }
    }
    errno = saved;
}

void cg_sample_thread_stop(struct cg_thread *t)
{
    if (!t->sampler.has_timer)
        return;
    int saved = errno;
    if (t->sampler.has_timer == CG_TIMER_PERF)
        perf_timer_close(t);
    else
        timer_delete((timer_t)t->sampler.timer);
    t->sampler.has_timer = CG_TIMER_NONE;
    errno = saved;
}

void cg_sample_forked(struct cg_thread *t)
{
    /* timers are not inherited by a child: the forking thread needs one;
     * the fd of a perf_event is, and still counts the parent's thread */
    if (t) {
        if (t->sampler.has_timer == CG_TIMER_PERF)
            perf_timer_close(t);
        t->sampler.has_timer = CG_TIMER_NONE;
        cg_sample_thread_start(t);
    }
}

/* A thread's timer stopped (on 0) or started again (on 1). */
static void timer_switch(struct cg_thread *t, int on)
{
    if (t->sampler.has_timer == CG_TIMER_PERF) {
        ioctl(t->sampler.timer_fd, on ? PERF_EVENT_IOC_REFRESH : PERF_EVENT_IOC_DISABLE, on ? 1 : 0);
    } else if (t->sampler.has_timer) {
        struct itimerspec its;
        memset(&its, 0, sizeof its);
        if (on) {
            its.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
            its.it_interval.tv_nsec = (long)(period_ns % 1000000000u);
            its.it_value = its.it_interval;
        }
        timer_settime((timer_t)t->sampler.timer, 0, &its, NULL);
    }
}

void cg_sample_collect(int on)
{
    if (!cg_sampling || (!on) == sampling_paused)
        return;
    int saved = errno;
    __atomic_store_n(&sampling_paused, !on, __ATOMIC_SEQ_CST);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (!__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE))
            timer_switch(t, on);
    errno = saved;
}

void cg_sample_exec(struct cg_thread *t, int going)
{
    if (!cg_sampling || !t || !t->sampler.has_timer)
        return;
    int saved = errno;
    if (going) {
        /* No sample may be sent while the new image is being loaded: a
         * signal pending across exec() ends the new program (its action is
         * the default again: "Profiling timer expired"). The timer stops,
         * and a sample already sent is taken off the thread. */
        if (t->sampler.has_timer == CG_TIMER_PERF) {
            ioctl(t->sampler.timer_fd, PERF_EVENT_IOC_DISABLE, 0);
        } else {
            struct itimerspec off;
            memset(&off, 0, sizeof off);
            timer_settime((timer_t)t->sampler.timer, 0, &off, NULL);
        }
        sigset_t ours, was;
        sigemptyset(&ours);
        sigaddset(&ours, sample_sig);
        pthread_sigmask(SIG_BLOCK, &ours, &was);
        struct timespec zero = { 0, 0 };
        while (cg_real_sigtimedwait()(&ours, NULL, &zero) == sample_sig)
            ;
        pthread_sigmask(SIG_SETMASK, &was, NULL);
    } else if (t->sampler.has_timer == CG_TIMER_PERF) {
        ioctl(t->sampler.timer_fd, PERF_EVENT_IOC_REFRESH, 1); /* the exec failed: sampled again */
    } else {
        struct itimerspec its;
        its.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
        its.it_interval.tv_nsec = (long)(period_ns % 1000000000u);
        its.it_value = its.it_interval;
        timer_settime((timer_t)t->sampler.timer, 0, &its, NULL);
    }
    errno = saved;
}

int cg_sample_signal_view(int sig, struct sigaction *view)
{
    if (!cg_sampling || stepped_aside || sig != sample_sig || __atomic_load_n(&handler_state, __ATOMIC_ACQUIRE) != 2)
        return 0;
    *view = program_view;
    return 1;
}

int cg_sample_signal_claimed(int sig)
{
    /* not ours yet (no timer so far): the first timer takes another */
    if (!cg_sampling || stepped_aside || sig != sample_sig || __atomic_load_n(&handler_state, __ATOMIC_ACQUIRE) != 2)
        return 0;
    stepped_aside = 1;
    char name[24];
    cg_warn("the program sets its own action for SIG%s: cgprof stops sampling on it; threads started from "
            "now on get no samples (CGPROF_SAMPLE_SIGNAL chooses another signal)",
            cg_signal_name(sig, name, sizeof name));
    /* Timers of running threads are process-wide objects: stop them all. */
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (t->sampler.has_timer == CG_TIMER_PERF) {
            ioctl(t->sampler.timer_fd, PERF_EVENT_IOC_DISABLE, 0);
        } else if (t->sampler.has_timer) {
            struct itimerspec off;
            memset(&off, 0, sizeof off);
            timer_settime((timer_t)t->sampler.timer, 0, &off, NULL);
        }
    return 1;
}
