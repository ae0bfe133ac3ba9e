/* Sampled time (CGPROF_TIME=sample): the hooks keep the shadow stack and
 * count calls exactly but read no clock; each thread's time is a virtual
 * clock (cg_thread.vclock) that a per-thread CPU-time timer advances by one
 * period per signal. The hooks use that clock like the real one, so a
 * sample is charged, by the hooks' own arithmetic, as self time to the
 * segment of the top frame that is running and inclusive time to every
 * frame on the stack; costs add up exactly as in exact mode.
 *
 * A sample in the top frame's own code is charged where it landed, at the
 * interrupted instruction (cg_costs_sample_at), so that the line view
 * shows the line that ran, not the frame's entry or last call site.
 *
 * A sample that lands in code that is not instrumented (libc, a system
 * library) is walked with libunwind from the interrupted address up to the
 * top frame's function: the time goes to those functions, shown as called
 * from the top frame (cg_costs_sample), instead of to the top frame's self.
 *
 * Why timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID): the timer
 * measures the thread's own CPU time and signals that thread, so the
 * handler runs on the thread it samples and touches only its tables, with
 * the same guard as a hook. setitimer(ITIMER_PROF) would signal any thread
 * of the process.
 *
 * libunwind is loaded privately (RTLD_LOCAL: Debian's libunwind.so.8 also
 * exports _Unwind_* and would take over C++ exceptions if linked) at
 * start-up, with its per-thread cache: libunwind's local unwinding is
 * async-signal-safe then (no malloc, no lock but dl_iterate_phdr's, which
 * is recursive in glibc). */
#define _GNU_SOURCE
#include "sample.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "compiler.h"
#include "guard.h"
#include "options.h"
#include "proc.h"
#include "real.h"
#include "unwinder.h"
#include "thread.h"
#include "util.h"


static uint64_t period_ns;
static int sample_sig;
static int stepped_aside;
/* The hooks' entry points: a sample in them is the top frame's. */
static uintptr_t hook_enter, hook_exit;

#if CG_HAVE_LIBUNWIND
static const struct cg_unwinder *unwinder;

/* libunwind (unwinder.c), with its per-thread cache: its local unwinding
 * is async-signal-safe then (no malloc, no lock but dl_iterate_phdr's,
 * which is recursive in glibc). */
static void load_unwinder(void)
{
    const struct cg_unwinder *u = cg_unwinder();
    if (!u || !u->init_local2 || !u->step || !u->get_reg || !u->get_proc_info)
        return;
    if (u->local_addr_space && u->set_caching_policy)
        u->set_caching_policy(*u->local_addr_space, UNW_CACHE_PER_THREAD);
    unwinder = u;
}

/* Walks from the interrupted context up to the top frame's own: the first
 * whose call frame address is above top_sp (the stack pointer of the code
 * that called the top frame's enter hook: every call it made since is
 * below it). Not by its function: the code running in an inlined frame is
 * its host's, and a clone or a cold part (fn.constprop.0, fn.cold) is a
 * function of its own for the unwinder. Returns the number of
 * uninstrumented frames in between (fns[0] outermost), or 0 when the
 * sample is in the top frame's own code, in a hook, or cannot be walked
 * within CG_SAMPLE_DEPTH frames.
 *
 * *own is set when the interrupted code is the top frame's own, with *pc
 * the interrupted address: the machine function it is in is the one that
 * called the top frame's enter hook (top_code, its return address: the
 * clone's for a clone, the host's for an inlined frame), or starts at the
 * top frame's function (top_fn: the hook's place not known). Not a cold
 * part (fn.cold holds no enter hook): its time stays at the frame's
 * position, as does a sample in a frame the stack pointers alone would
 * call the top frame's (a frame left by a longjmp not seen yet). */
static unsigned walk(void *uc, uintptr_t top_sp, uintptr_t top_fn, uintptr_t top_code, uintptr_t *fns,
                     uintptr_t *sites, uintptr_t *pc, int *own)
{
    const struct cg_unwinder *u = unwinder;
    if (!u)
        return 0;
    unw_cursor_t cur;
    if (u->init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
        return 0;
    uintptr_t inner_fn[CG_SAMPLE_DEPTH + 1], inner_ip[CG_SAMPLE_DEPTH + 1];
    unw_word_t top_ip;
    unsigned n = 0;
    for (;;) {
        unw_proc_info_t pi;
        unw_word_t ip, cfa;
        if (u->get_reg(&cur, UNW_REG_IP, &ip) < 0 || u->get_proc_info(&cur, &pi) < 0 || pi.start_ip == 0)
            return 0;
        if (pi.start_ip == hook_enter || pi.start_ip == hook_exit)
            return 0; /* a hook before or after its guard: the top frame's */
        /* the caller's stack pointer is this frame's call frame address */
        if (u->step(&cur) <= 0 || u->get_reg(&cur, UNW_REG_SP, &cfa) < 0)
            return 0;
        if (cfa > top_sp) {
            if (n == 0 && (pi.start_ip == top_fn || (top_code > pi.start_ip && top_code <= pi.end_ip))) {
                *own = 1;
                *pc = ip;
            }
            top_ip = ip;
            break;
        }
        if (n == CG_SAMPLE_DEPTH)
            return 0;
        inner_fn[n] = pi.start_ip;
        inner_ip[n] = ip;
        n++;
    }
    if (n == 0)
        return 0;
    /* top_ip is the return address of the top frame's call into
     * inner_fn[n-1]; inner_ip[k] is the return address in inner_fn[k] of
     * its call into inner_fn[k-1], and inner_ip[0] the interrupted pc. */
    *pc = inner_ip[0];
    for (unsigned i = 0; i < n; i++) {
        fns[i] = inner_fn[n - 1 - i];
        sites[i] = i == 0 ? (uintptr_t)top_ip : inner_ip[n - i];
    }
    return n;
}
#else
static void load_unwinder(void)
{
}

static unsigned walk(void *uc, uintptr_t top_sp, uintptr_t top_fn, uintptr_t top_code, uintptr_t *fns,
                     uintptr_t *sites, uintptr_t *pc, int *own)
{
    (void)uc, (void)top_sp, (void)top_fn, (void)top_code, (void)fns, (void)sites, (void)pc, (void)own;
    return 0;
}
#endif

static CG_NOINSTR void on_sample(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved = errno;
    struct cg_thread *t = cg_self;
    if (!t || !t->costs.frames || t->guard == CG_GUARD_RUNTIME) {
        errno = saved;
        return;
    }
    uint64_t p = period_ns;
    if (si && si->si_code == SI_TIMER && si->si_overrun > 0)
        p *= 1 + (uint64_t)si->si_overrun;
    t->samples++;
    /* In a hook, or nothing instrumented running: the clock moves on and
     * the hooks charge the time where it belongs. */
    if (t->guard || t->ndeferred || t->costs.depth == 0) {
        t->vclock += p;
        errno = saved;
        return;
    }
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    struct cg_frame *top = &t->costs.frames[t->costs.depth - 1];
    uintptr_t fns[CG_SAMPLE_DEPTH], sites[CG_SAMPLE_DEPTH], pc = 0;
    int own = 0;
    unsigned n = walk(uc, top->sp, top->fn, cg_frame_code(top), fns, sites, &pc, &own);
    t->vclock += p;
    if (own)
        cg_costs_sample_at(&t->costs, pc, p); /* or left to the hooks, at the frame's position */
    else if (n && cg_costs_sample(&t->costs, fns, sites, n, pc, p, t->nhooks != t->sample_hooks, t->sample_last,
                                  &t->sample_nlast) == 0)
        top->t_last += p; /* not the top frame's self time */
    t->sample_hooks = t->nhooks;
    cg_guard_release(t);
    errno = saved;
}

int cg_sample_init(uintptr_t enter_hook, uintptr_t exit_hook)
{
    hook_enter = enter_hook;
    hook_exit = exit_hook;
    if (cg_opts.time != CG_TIME_SAMPLE)
        return 0;
    if (cg_opts.sample_signal == 0) {
        cg_warn("CGPROF_TIME=sample needs a signal (CGPROF_SAMPLE_SIGNAL=none); timing every call instead");
        return 0;
    }
    if (cg_opts.sample_signal == cg_opts.signal) {
        cg_warn("CGPROF_SAMPLE_SIGNAL and CGPROF_SIGNAL are the same signal; timing every call instead");
        return 0;
    }
    struct sigaction old;
    if (cg_real_sigaction()(cg_opts.sample_signal, NULL, &old) == 0 && old.sa_handler != SIG_DFL) {
        char name[24];
        cg_warn("SIG%s already has an action in this program; timing every call instead of sampling "
                "(CGPROF_SAMPLE_SIGNAL chooses another signal)",
                cg_signal_name(cg_opts.sample_signal, name, sizeof name));
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (cg_real_sigaction()(cg_opts.sample_signal, &sa, NULL) != 0) {
        cg_warn("cannot install the sampling signal handler (%s); timing every call instead", strerror(errno));
        return 0;
    }
    load_unwinder();
    sample_sig = cg_opts.sample_signal;
    period_ns = 1000000000u / cg_opts.sample_hz;
    cg_sampling = 1;
    return 0;
}

uint64_t cg_sample_period_ns(void)
{
    return period_ns;
}

void cg_sample_thread_start(struct cg_thread *t)
{
    if (!cg_sampling || stepped_aside || t->has_timer)
        return;
    int saved = errno;
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
            t->timer = (void *)id;
            t->has_timer = 1;
        } else {
            timer_delete(id);
        }
    }
    errno = saved;
}

void cg_sample_thread_stop(struct cg_thread *t)
{
    if (!t->has_timer)
        return;
    int saved = errno;
    t->has_timer = 0;
    timer_delete((timer_t)t->timer);
    errno = saved;
}

void cg_sample_forked(struct cg_thread *t)
{
    /* timers are not inherited by a child: the forking thread needs one */
    if (t) {
        t->has_timer = 0;
        cg_sample_thread_start(t);
    }
}

int cg_sample_signal_claimed(int sig)
{
    if (!cg_sampling || stepped_aside || sig != sample_sig)
        return 0;
    stepped_aside = 1;
    char name[24];
    cg_warn("the program sets its own action for SIG%s: cgprof stops sampling on it; threads started from "
            "now on get no samples (CGPROF_SAMPLE_SIGNAL chooses another signal)",
            cg_signal_name(sig, name, sizeof name));
    /* Timers of running threads are process-wide objects: stop them all. */
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (t->has_timer) {
            struct itimerspec off;
            memset(&off, 0, sizeof off);
            timer_settime((timer_t)t->timer, 0, &off, NULL);
        }
    return 1;
}
