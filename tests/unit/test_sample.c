/* Unit tests of sample.c (and sampletimer.c's handler): the sampler's
 * charging (CGPROF_TIME=sample). Its signal handler is what a thread's
 * CPU-time timer runs; here the test sends the sampling signal to its own
 * thread (pthread_kill: delivered before the call returns), so every
 * sample lands exactly where the test is. Such a signal is not SI_TIMER: one period per signal; a timer's
 * overrun is sent as the kernel would give it (rt_tgsigqueueinfo with
 * si_code SI_TIMER), and counts 1 + overrun periods.
 *
 * What the handler must do: advance the thread's clock (t->vclock) by the
 * period and count the sample, and leave the charging to the hooks' own
 * arithmetic (cg_costs_enter/exit with now = t->vclock, as the hooks read
 * it): the period lands as the running segment's self time and in the
 * inclusive time of every frame on the stack. With the guard held by a
 * hook, or events pending, the clock alone moves (the interrupted hook
 * charges it); inside the runtime (a dump), nothing at all.
 *
 * A sample in code that is not instrumented is walked with libunwind up
 * to the top frame's function. That depends on real frames, so the test
 * makes them: a function of its own (sample_from) pushes the top frame
 * with a stack pointer of its own real frame (just below its return
 * address, where every call it makes is below and its caller above), then
 * calls kick(), which makes the tgkill system call itself (inline
 * assembly, no libc frame in between) with a global label right after the
 * syscall instruction: the interrupted pc, kick's start and the return
 * address into sample_from are all known exactly. The other tests give the
 * top frame a stack pointer in a static array, below every real frame,
 * so the walk finds the top frame's caller at once and the sample is the
 * top frame's.
 *
 * Timers: CGPROF_SAMPLE_HZ=10 (a period of 100 ms of the thread's CPU
 * time), so that a timer armed by the test (cg_sample_thread_start) does
 * not fire while it is checked. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "costs.h"
#include "reading.h"
#include "options.h"
#include "proc.h"
#include "sample.h"
#include "thread.h"
#include "unwinder.h"

/* The functions the samples are taken in: out of line and, with gcc, not
 * cloned either (a clone's code is not at the function's address). clang
 * has no noclone attribute, nor clones of that kind. */
#if defined(__clang__)
#define KEPT __attribute__((noinline))
#else
#define KEPT __attribute__((noinline, noclone))
#endif

#define PERIOD 100000000u /* 1e9 / CGPROF_SAMPLE_HZ */

#define ROOT_SITE ((uintptr_t)0x7f0000009000u)
#define MAIN ((uintptr_t)0x1000)
#define F    ((uintptr_t)0x2000)
#define G    ((uintptr_t)0x3000)
#define TOP  ((uintptr_t)0x4000)

static int sample_sig; /* CGPROF_SAMPLE_SIGNAL */
static struct cg_thread *t; /* the main thread's state */

/* ---- helpers ---------------------------------------------------------------------- */

/* A stack below every real one (.bss): the walk from a sample finds the
 * top frame's caller at once. */
static uint8_t fake_stack[1 << 16];
#define STACK_TOP ((uintptr_t)(fake_stack + sizeof fake_stack - 256))

static void enter(uintptr_t fn, uintptr_t site, uintptr_t sp)
{
    *(uintptr_t *)(sp + sizeof(uintptr_t)) = site; /* the callee's return address */
    cg_costs_enter(&t->costs, fn, site, sp, fn + 4, t->vclock);
}

static void leave(uintptr_t fn)
{
    cg_costs_exit(&t->costs, fn, t->vclock);
}

/* One sample on this thread, now. */
static void sample(void)
{
    assert_int_equal(pthread_kill(pthread_self(), sample_sig), 0);
}

/* A timer's signal with `overrun` expirations missed. */
static void timer_sample(int overrun)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sample_sig;
    si.si_code = SI_TIMER;
    si.si_overrun = overrun;
    assert_int_equal(syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sample_sig, &si), 0);
}

/* The thread's tables and clock from scratch. */
static int reset(void **state)
{
    (void)state;
    cg_costs_destroy(&t->costs);
    if (cg_costs_init(&t->costs, 0) != 0)
        return -1;
    t->costs.vclock = &t->vclock;
    t->vclock = 0;
    t->guard = 0;
    t->ndeferred = 0;
    t->nhooks = t->sampler.sample_hooks = 0;
    t->sampler.samples = t->sampler.samples_unnamed = 0;
    t->sampler.sample_nlast = 0;
    return 0;
}

static const struct cg_arc *find_arc(uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    for (uint32_t i = 1; i < t->costs.narcs; i++) {
        const struct cg_arc *a = &t->costs.arcs[i];
        if (a->caller == caller && a->site == site && a->callee == callee)
            return a;
    }
    return NULL;
}

static uint64_t self_cost(uintptr_t fn, uintptr_t addr)
{
    for (uint32_t i = 1; i < t->costs.nselfs; i++)
        if (t->costs.selfs[i].fn == fn && t->costs.selfs[i].addr == addr)
            return t->costs.selfs[i].cost;
    return UINT64_MAX;
}

static uint64_t all_self(void)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < t->costs.nselfs; i++)
        sum += t->costs.selfs[i].cost;
    return sum;
}

#define ASSERT_ARC(caller, site, callee, cnt, inc)                                                           \
    do {                                                                                                     \
        const struct cg_arc *a_ = find_arc((caller), (site), (callee));                                      \
        assert_non_null(a_);                                                                                 \
        assert_int_equal(a_->count, (cnt));                                                                  \
        assert_int_equal(a_->incl, (inc));                                                                   \
    } while (0)

/* ---- set-up ------------------------------------------------------------------------- */

static void test_installed(void **state)
{
    (void)state;
    assert_int_equal(cg_sampling, 1);
    assert_int_equal(cg_sample_period_ns(), PERIOD);
    struct sigaction sa;
    assert_int_equal(sigaction(sample_sig, NULL, &sa), 0);
    assert_true(sa.sa_flags & SA_SIGINFO);
    assert_true(sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
    /* the thread attached while sampling: its tables read its clock */
    assert_ptr_equal(t->costs.vclock, &t->vclock);
    /* the walk's premise in the other tests */
    int here;
    assert_true((uintptr_t)fake_stack < (uintptr_t)&here);
}

/* ---- the clock ---------------------------------------------------------------------- */

static void test_clock(void **state)
{
    (void)state;
    /* no frame on the stack: the clock moves, nothing else */
    sample();
    assert_int_equal(t->vclock, PERIOD);
    assert_int_equal(t->sampler.samples, 1);
    sample();
    sample();
    assert_int_equal(t->vclock, 3 * PERIOD);
    assert_int_equal(t->sampler.samples, 3);
    /* a timer's signal that missed 2 expirations: 3 periods, one sample */
    timer_sample(2);
    assert_int_equal(t->vclock, 6 * PERIOD);
    assert_int_equal(t->sampler.samples, 4);
    timer_sample(0);
    assert_int_equal(t->vclock, 7 * PERIOD);
    assert_int_equal(t->sampler.samples, 5);
    assert_int_equal(all_self(), 0);
    assert_int_equal(t->guard, 0);
}

/* ---- charged by the hooks' arithmetic ---------------------------------------------------- */

static void test_charging(void **state)
{
    (void)state;
    /* MAIN entered at 0; 2 samples; F entered at 2p; 3 samples; F left at
     * 5p; 1 sample; G entered and left at 6p with 1 sample inside;
     * 2 samples; MAIN left at 9p */
    enter(MAIN, ROOT_SITE, STACK_TOP);
    sample();
    sample();
    enter(F, MAIN + 0x10, STACK_TOP - 64);
    sample();
    sample();
    sample();
    leave(F);
    sample();
    enter(G, MAIN + 0x20, STACK_TOP - 64);
    sample();
    leave(G);
    sample();
    sample();
    leave(MAIN);
    assert_int_equal(t->vclock, 9 * (uint64_t)PERIOD);
    assert_int_equal(t->sampler.samples, 9);
    /* self: each segment its samples */
    assert_int_equal(self_cost(MAIN, MAIN), 2 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(MAIN, MAIN + 0x10), 1 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(MAIN, MAIN + 0x20), 2 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(F, F), 3 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(G, G), 1 * (uint64_t)PERIOD);
    assert_int_equal(all_self(), 9 * (uint64_t)PERIOD);
    /* inclusive: every frame that was on the stack */
    ASSERT_ARC(0, ROOT_SITE, MAIN, 1, 9 * (uint64_t)PERIOD);
    ASSERT_ARC(MAIN, MAIN + 0x10, F, 1, 3 * (uint64_t)PERIOD);
    ASSERT_ARC(MAIN, MAIN + 0x20, G, 1, 1 * (uint64_t)PERIOD);
    /* no arc made by the sampler: the samples were the frames' own */
    assert_int_equal(t->costs.narcs, 4);
}

/* ---- when only the clock moves, and when nothing does ------------------------------------ */

static void test_guarded(void **state)
{
    (void)state;
    enter(MAIN, ROOT_SITE, STACK_TOP);
    const struct cg_frame *top = &t->costs.frames[0];
    /* a sample seen by the handler records the hooks made so far */
    t->nhooks = 5;
    sample();
    assert_int_equal(t->sampler.sample_hooks, 5);
    assert_int_equal(t->guard, 0);
    assert_int_equal(t->vclock, PERIOD);
    assert_int_equal(t->sampler.samples, 1);

    /* inside a hook, with overhead compensation (the default): cgprof's
     * own time, left out: the clock stays, the sample counts, comp says
     * how much was left out */
    t->nhooks = 6;
    t->guard = CG_GUARD_HOOK;
    sample();
    assert_int_equal(t->guard, CG_GUARD_HOOK);
    assert_int_equal(t->vclock, PERIOD);
    assert_int_equal(t->costs.comp, PERIOD);
    assert_int_equal(t->sampler.samples, 2);
    assert_int_equal(t->sampler.sample_hooks, 5);
    assert_int_equal(top->t_last, 0);
    /* without (CGPROF_COMPENSATE=0): the clock moves and the sample
     * counts; nothing else (the hook charges the time) */
    cg_opts.compensate = 0;
    sample();
    cg_opts.compensate = 1;
    assert_int_equal(t->guard, CG_GUARD_HOOK);
    assert_int_equal(t->vclock, 2 * (uint64_t)PERIOD);
    assert_int_equal(t->costs.comp, PERIOD);
    assert_int_equal(t->sampler.samples, 3);
    assert_int_equal(t->sampler.sample_hooks, 5);
    assert_int_equal(top->t_last, 0);
    t->guard = 0;

    /* events pending (a hook between its guard's release and their replay) */
    t->ndeferred = 1;
    sample();
    assert_int_equal(t->ndeferred, 1);
    assert_int_equal(t->guard, 0);
    assert_int_equal(t->vclock, 3 * (uint64_t)PERIOD);
    assert_int_equal(t->sampler.samples, 4);
    assert_int_equal(t->sampler.sample_hooks, 5);
    t->ndeferred = 0;

    /* inside the runtime: nothing at all */
    t->guard = CG_GUARD_RUNTIME;
    sample();
    timer_sample(3);
    assert_int_equal(t->guard, CG_GUARD_RUNTIME);
    assert_int_equal(t->vclock, 3 * (uint64_t)PERIOD);
    assert_int_equal(t->sampler.samples, 4);
    assert_int_equal(t->sampler.sample_hooks, 5);
    t->guard = 0;

    /* the clock's time is still charged by the hooks: MAIN's 3 periods */
    leave(MAIN);
    assert_int_equal(self_cost(MAIN, MAIN), 3 * (uint64_t)PERIOD);
    ASSERT_ARC(0, ROOT_SITE, MAIN, 1, 3 * (uint64_t)PERIOD);
}

/* On a thread without a state, or an internal one: nothing (and no crash). */
static void *unattached(void *arg)
{
    (void)arg;
    pthread_kill(pthread_self(), sample_sig);
    cg_thread_mark_internal();
    pthread_kill(pthread_self(), sample_sig);
    return cg_self;
}

static void test_other_threads(void **state)
{
    (void)state;
    pthread_t th;
    void *self = NULL;
    assert_int_equal(pthread_create(&th, NULL, unattached, NULL), 0);
    assert_int_equal(pthread_join(th, &self), 0);
    assert_non_null(self);
    assert_int_equal(((struct cg_thread *)self)->sampler.samples, 0);
    assert_int_equal(((struct cg_thread *)self)->vclock, 0);
    assert_int_equal(t->sampler.samples, 0);
    assert_int_equal(t->vclock, 0);
}

/* ---- a sample in code that is not instrumented ------------------------------------------- */

/* tgkill(this thread) made here: the signal arrives as the system call
 * returns, at kick_resume. kick_hook does the same at kick_hook_resume;
 * the sampler is told it is the enter hook. */
extern const char kick_resume[], kick_hook_resume[];

/* tgkill(this thread, the sampling signal) made here, by the system call
 * itself (no libc frame in between), with a global label right after the
 * syscall instruction: where the signal finds the thread. */
#if defined(__aarch64__)
/* aarch64: the system call's number in x8, its arguments in x0-x2, svc
 * (the arguments computed first: a call between the register variables'
 * assignments and the asm would clobber them) */
#define TGKILL_RAW(label, pid, tid)                                                                          \
    do {                                                                                                     \
        long pid_ = (long)(pid), tid_ = (long)(tid);                                                         \
        register long x8_ __asm__("x8") = SYS_tgkill;                                                        \
        register long x0_ __asm__("x0") = pid_;                                                              \
        register long x1_ __asm__("x1") = tid_;                                                              \
        register long x2_ __asm__("x2") = (long)sample_sig;                                                  \
        __asm__ volatile("svc #0\n\t"                                                                         \
                         ".globl " #label "\n" #label ":"                                                    \
                         : "+r"(x0_)                                                                         \
                         : "r"(x8_), "r"(x1_), "r"(x2_)                                                      \
                         : "memory");                                                                        \
    } while (0)
#else
#define TGKILL_RAW(label, pid, tid)                                                                          \
    do {                                                                                                     \
        long ret_;                                                                                           \
        __asm__ volatile("syscall\n\t"                                                                       \
                         ".globl " #label "\n" #label ":"                                                    \
                         : "=a"(ret_)                                                                        \
                         : "0"((long)SYS_tgkill), "D"((long)(pid)), "S"((long)(tid)), "d"((long)sample_sig)   \
                         : "rcx", "r11", "memory");                                                          \
    } while (0)
#endif
#define TGKILL_AT(label) TGKILL_RAW(label, getpid(), gettid())
static uintptr_t kick_site; /* kick's return address */

KEPT static void kick(void)
{
    kick_site = (uintptr_t)__builtin_return_address(0);
    TGKILL_AT(kick_resume);
}

KEPT static void kick_hook(void)
{
    kick_site = (uintptr_t)__builtin_return_address(0);
    TGKILL_AT(kick_hook_resume);
}

/* The top frame TOP, whose sp is a stack pointer of this function's own
 * frame (just below its return address: every call it makes is below,
 * its caller above), then `calls` calls of k, each a sample in k (each
 * after a hook if new_visits), then TOP's exit. */
KEPT static void sample_from(void (*k)(void), unsigned calls, int new_visits)
{
    uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa() - sizeof(uintptr_t);
    cg_costs_enter(&t->costs, TOP, ROOT_SITE, sp, TOP + 4, t->vclock);
    for (unsigned i = 0; i < calls; i++) {
        if (new_visits)
            t->nhooks++; /* as a hook does */
        k();
    }
    cg_costs_exit(&t->costs, TOP, t->vclock);
}

static void test_uninstrumented(void **state)
{
    (void)state;
#if CG_HAVE_LIBUNWIND
    if (!cg_unwinder()) {
        printf("libunwind cannot be loaded here: the walk is not tested\n");
        skip();
    }
    /* 3 samples in kick, no hook between them: one visit, 3 periods */
    sample_from(kick, 3, 0);
    assert_int_equal(t->vclock, 3 * (uint64_t)PERIOD);
    assert_int_equal(t->sampler.samples, 3);
    const struct cg_arc *a = find_arc(TOP, kick_site, (uintptr_t)kick);
    assert_non_null(a);
    assert_int_equal(a->sampled, 1);
    assert_int_equal(a->count, 1);
    assert_int_equal(a->incl, 3 * (uint64_t)PERIOD);
    /* the time is kick's, at the interrupted instruction, not TOP's */
    assert_int_equal(self_cost((uintptr_t)kick, (uintptr_t)kick_resume), 3 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(TOP, TOP), 0);
    assert_int_equal(all_self(), 3 * (uint64_t)PERIOD);
    ASSERT_ARC(0, ROOT_SITE, TOP, 1, 3 * (uint64_t)PERIOD);

    /* again, a hook before each sample: each a new visit */
    sample_from(kick, 2, 1);
    a = find_arc(TOP, kick_site, (uintptr_t)kick);
    assert_int_equal(a->count, 3);
    assert_int_equal(a->incl, 5 * (uint64_t)PERIOD);
    assert_int_equal(self_cost((uintptr_t)kick, (uintptr_t)kick_resume), 5 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(TOP, TOP), 0);
    ASSERT_ARC(0, ROOT_SITE, TOP, 2, 5 * (uint64_t)PERIOD);

    /* in a hook (its entry point, before its guard): with overhead
     * compensation (the default), left out; without, the top frame's */
    uint32_t narcs = t->costs.narcs;
    sample_from(kick_hook, 2, 0);
    assert_int_equal(t->costs.narcs, narcs);
    assert_int_equal(t->vclock, 5 * (uint64_t)PERIOD);
    assert_int_equal(t->costs.comp, 2 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(TOP, TOP), 0);
    ASSERT_ARC(0, ROOT_SITE, TOP, 3, 5 * (uint64_t)PERIOD);
    cg_opts.compensate = 0;
    sample_from(kick_hook, 2, 0);
    cg_opts.compensate = 1;
    assert_int_equal(t->costs.narcs, narcs);
    assert_int_equal(t->costs.comp, 2 * (uint64_t)PERIOD);
    assert_int_equal(self_cost(TOP, TOP), 2 * (uint64_t)PERIOD);
    ASSERT_ARC(0, ROOT_SITE, TOP, 4, 7 * (uint64_t)PERIOD);
    assert_int_equal(all_self(), 7 * (uint64_t)PERIOD);
#else
    printf("built without libunwind: the walk is not tested\n");
    skip();
#endif
}

/* ---- a sample in an instrumented call's prologue or epilogue ------------------------------ */

/* kick, with a call of itself framed by the hooks' tables first (entered
 * and left at once, at its own call site, made by framed_call): its enter
 * hook called from kick_framed + framed_off. When that is after the
 * interrupted pc (kick_framed_resume), the sample is in its prologue;
 * before it, in its epilogue when that call is the one just left
 * (framed_other: another call left after it, from another site). */
extern const char kick_framed_resume[];
static intptr_t framed_off;
static int framed_other;

KEPT static void framed_call(uintptr_t fn, uintptr_t site)
{
    uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa();
    cg_costs_enter(&t->costs, fn, site, sp, fn + (uintptr_t)framed_off, t->vclock);
    cg_costs_exit(&t->costs, fn, t->vclock);
    if (framed_other) {
        cg_costs_enter(&t->costs, G, TOP + 0x30, sp, G + 4, t->vclock);
        cg_costs_exit(&t->costs, G, t->vclock);
    }
}

KEPT static void kick_framed(void)
{
    kick_site = (uintptr_t)__builtin_return_address(0);
    framed_call((uintptr_t)kick_framed, kick_site);
    TGKILL_AT(kick_framed_resume);
}

static void test_prologue_epilogue(void **state)
{
#if CG_HAVE_LIBUNWIND
    if (!cg_unwinder()) {
        printf("libunwind cannot be loaded here: the walk is not tested\n");
        skip();
    }
    const uintptr_t k = (uintptr_t)kick_framed;
    const intptr_t resume = (intptr_t)((uintptr_t)kick_framed_resume - k);
    framed_other = 0;
    /* the prologue: the enter hook is called after the interrupted pc. The
     * period is kick's own time (at its entry) and its call's inclusive
     * time; its count stays the calls the hooks saw; TOP's self has none */
    framed_off = resume + 1;
    sample_from(kick_framed, 1, 0);
    assert_int_equal(t->sampler.samples, 1);
    ASSERT_ARC(TOP, kick_site, k, 1, PERIOD);
    assert_int_equal(find_arc(TOP, kick_site, k)->sampled, 0);
    assert_int_equal(self_cost(k, k), PERIOD);
    assert_int_equal(all_self(), PERIOD);
    ASSERT_ARC(0, ROOT_SITE, TOP, 1, PERIOD);
    assert_int_equal(t->costs.narcs, 3); /* the sink, TOP's, kick's */

    /* the epilogue: the enter hook was called before it, and the call just
     * left is kick's from this site */
    assert_int_equal(reset(state), 0);
    framed_off = 1;
    sample_from(kick_framed, 1, 0);
    ASSERT_ARC(TOP, kick_site, k, 1, PERIOD);
    assert_int_equal(self_cost(k, k), PERIOD);
    assert_int_equal(all_self(), PERIOD);
    ASSERT_ARC(0, ROOT_SITE, TOP, 1, PERIOD);
    assert_int_equal(t->costs.narcs, 3);

    /* neither: another call left since (kick's frame is gone), or kick's
     * code not known: the time stays TOP's, as before this change, and no
     * arc is made by the sampler */
    assert_int_equal(reset(state), 0);
    framed_other = 1;
    sample_from(kick_framed, 1, 0);
    framed_other = 0;
    ASSERT_ARC(TOP, kick_site, k, 1, 0);
    assert_int_equal(self_cost(TOP, TOP + 0x30), PERIOD);
    assert_int_equal(all_self(), PERIOD);
    assert_int_equal(t->costs.narcs, 4);
    assert_int_equal(reset(state), 0);
    framed_off = CG_NO_CODE;
    sample_from(kick_framed, 1, 0);
    ASSERT_ARC(TOP, kick_site, k, 1, 0);
    assert_int_equal(self_cost(TOP, kick_site), PERIOD);
    assert_int_equal(all_self(), PERIOD);
    assert_int_equal(t->costs.narcs, 3);
#else
    (void)state;
    printf("built without libunwind: the walk is not tested\n");
    skip();
#endif
}

/* ---- a sample in an instrumented function before its first call -------------------------- */

/* kick_first: an instrumented function's shape, its first call instruction
 * the enter hook's (kick_hook, which the sampler is told is the enter
 * hook), sampled before it, at kick_first_resume: in its prologue, before
 * any hook of it has run (no arc from TOP yet). tgkill is made with the
 * ids read before (TGKILL_AT calls getpid and gettid: calls before the
 * hook's). */
extern const char kick_first_resume[];
static long first_pid, first_tid;

KEPT static void kick_first(void)
{
    TGKILL_RAW(kick_first_resume, first_pid, first_tid);
    kick_hook();
    __asm__ volatile("" ::: "memory");
}

static void test_before_first_call(void **state)
{
    (void)state;
#if CG_HAVE_LIBUNWIND
    if (!cg_unwinder()) {
        printf("libunwind cannot be loaded here: the walk is not tested\n");
        skip();
    }
    first_pid = getpid();
    first_tid = gettid();
    /* jq's main -> jv_array, 3 calls for 2 (issue 38): the sample made an
     * arc of visits that the hooks then counted on. No arc now, and the
     * time stays TOP's; the sample in kick_hook is the hooks' (left out) */
    sample_from(kick_first, 1, 0);
    assert_int_equal(t->sampler.samples, 2);
    assert_int_equal(t->vclock, PERIOD);
    assert_int_equal(t->costs.comp, PERIOD);
    assert_null(find_arc(TOP, kick_site, (uintptr_t)kick_first));
    assert_int_equal(t->costs.narcs, 2); /* the sink, TOP's */
    assert_int_equal(self_cost(TOP, TOP), PERIOD);
    assert_int_equal(all_self(), PERIOD);
    ASSERT_ARC(0, ROOT_SITE, TOP, 1, PERIOD);
#else
    (void)state;
    printf("built without libunwind: the walk is not tested\n");
    skip();
#endif
}

/* ---- a sample in the top frame's own code ---------------------------------------------- */

extern const char own_resume[];

/* The top frame is this function's (its hooks' fn: its address, plus
 * `shift` for hooks that name another address, as a clone's name the
 * function it was cloned from), its enter hook called from its own code;
 * one sample in that code, at own_resume; then its exit. */
KEPT static void own_code(uintptr_t shift)
{
    uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa() - sizeof(uintptr_t);
    uintptr_t fn = (uintptr_t)own_code + shift;
    cg_costs_enter(&t->costs, fn, ROOT_SITE, sp, (uintptr_t)own_resume, t->vclock);
    TGKILL_AT(own_resume);
    cg_costs_exit(&t->costs, fn, t->vclock);
}

static void test_own_code(void **state)
{
    (void)state;
#if CG_HAVE_LIBUNWIND
    if (!cg_unwinder()) {
        printf("libunwind cannot be loaded here: the walk is not tested\n");
        skip();
    }
    const uintptr_t fn = (uintptr_t)own_code;
    /* the time is at the interrupted instruction, not at the entry */
    own_code(0);
    assert_int_equal(t->sampler.samples, 1);
    assert_int_equal(self_cost(fn, (uintptr_t)own_resume), PERIOD);
    assert_int_equal(self_cost(fn, fn), 0);
    assert_int_equal(all_self(), PERIOD);
    ASSERT_ARC(0, ROOT_SITE, fn, 1, PERIOD);
    assert_int_equal(t->costs.sample_pcs, 1);
    /* hooks that name another address: the code that called the enter
     * hook is the interrupted function's */
    own_code(1);
    assert_int_equal(self_cost(fn + 1, (uintptr_t)own_resume), PERIOD);
    assert_int_equal(self_cost(fn + 1, fn + 1), 0);
    assert_int_equal(t->costs.sample_pcs, 2);

    /* the bound: the last entry the sampler may make, then none; an entry
     * made before is still charged */
    t->costs.sample_pcs = CG_SAMPLE_PCS - 2;
    own_code(2);
    assert_int_equal(self_cost(fn + 2, (uintptr_t)own_resume), PERIOD);
    assert_int_equal(t->costs.sample_pcs, CG_SAMPLE_PCS - 1);
    assert_int_equal(t->costs.unplaced, 0);
    own_code(3);
    assert_int_equal(t->costs.sample_pcs, CG_SAMPLE_PCS);
    own_code(4);
    assert_int_equal(t->costs.sample_pcs, CG_SAMPLE_PCS);
    assert_int_equal(t->costs.unplaced, 1);
    /* not placed: at the frame's position (its entry), by the hooks */
    assert_int_equal(self_cost(fn + 4, (uintptr_t)own_resume), UINT64_MAX);
    assert_int_equal(self_cost(fn + 4, fn + 4), PERIOD);
    own_code(0);
    assert_int_equal(self_cost(fn, (uintptr_t)own_resume), 2 * (uint64_t)PERIOD);
    assert_int_equal(t->costs.unplaced, 1);
    assert_int_equal(all_self(), 6 * (uint64_t)PERIOD);
    assert_int_equal(t->vclock, 6 * (uint64_t)PERIOD);
    /* counted in the totals, and so in a part's header */
    struct cg_reading tot;
    memset(&tot, 0, sizeof tot);
    assert_int_equal(cg_reading_take(&t->costs, t->vclock, &tot), 0);
    assert_int_equal(tot.unplaced, 1);
    cg_reading_free(&tot);
#else
    printf("built without libunwind: the walk is not tested\n");
    skip();
#endif
}

/* ---- timers ---------------------------------------------------------------------------- */

static void test_timers(void **state)
{
    (void)state;
    assert_int_equal(t->sampler.has_timer, 0);
    cg_sample_thread_start(t);
    assert_int_equal(t->sampler.has_timer, 1);
    struct itimerspec its;
    timer_t id = (timer_t)t->sampler.timer;
    assert_int_equal(timer_gettime(id, &its), 0);
    assert_int_equal(its.it_interval.tv_sec, 0);
    assert_int_equal(its.it_interval.tv_nsec, PERIOD);
    assert_true(its.it_value.tv_sec != 0 || its.it_value.tv_nsec != 0); /* armed */
    /* once */
    cg_sample_thread_start(t);
    assert_ptr_equal((timer_t)t->sampler.timer, id);
    cg_sample_thread_stop(t);
    assert_int_equal(t->sampler.has_timer, 0);
    assert_int_equal(timer_gettime(id, &its), -1); /* deleted */
    assert_int_equal(errno, EINVAL);
    cg_sample_thread_stop(t);
    assert_int_equal(t->sampler.has_timer, 0);
}

/* Last: sampling stops for good. */
static void test_claimed(void **state)
{
    (void)state;
    cg_sample_thread_start(t);
    assert_int_equal(t->sampler.has_timer, 1);
    timer_t id = (timer_t)t->sampler.timer;
    struct itimerspec its;
    /* another signal: not ours */
    int other = sample_sig == SIGPROF ? SIGUSR1 : SIGPROF;
    assert_int_equal(cg_sample_signal_claimed(other), 0);
    assert_int_equal(timer_gettime(id, &its), 0);
    assert_true(its.it_value.tv_sec != 0 || its.it_value.tv_nsec != 0);
    /* the sampling signal: once; the timers stopped */
    assert_int_equal(cg_sample_signal_claimed(sample_sig), 1);
    assert_int_equal(timer_gettime(id, &its), 0);
    assert_int_equal(its.it_value.tv_sec, 0);
    assert_int_equal(its.it_value.tv_nsec, 0);
    assert_int_equal(its.it_interval.tv_sec, 0);
    assert_int_equal(its.it_interval.tv_nsec, 0);
    assert_int_equal(cg_sample_signal_claimed(sample_sig), 0);
    /* threads from now on get no timer */
    struct cg_thread *s = calloc(1, sizeof *s);
    assert_non_null(s);
    cg_sample_thread_start(s);
    assert_int_equal(s->sampler.has_timer, 0);
    free(s);
    cg_sample_thread_stop(t);
    assert_int_equal(t->sampler.has_timer, 0);
}

static void no_event(struct cg_thread *th)
{
    (void)th;
}

static void no_gone(void)
{
}

static void report(void *ctx, const char *msg, const char *why)
{
    (void)ctx;
    (void)why;
    fprintf(stderr, "option: %s\n", msg);
}

int main(void)
{
    /* runtime.c's initialisation, the minimum of it; the timers are the
     * test's to start */
    /* POSIX timers: the tests read them back (timer_gettime); the
     * perf_event timer is tested on a program (test_runtime.py) */
    char time[] = "CGPROF_TIME=sample", hz[] = "CGPROF_SAMPLE_HZ=10", sig[] = "CGPROF_SAMPLE_SIGNAL=USR2",
         timer[] = "CGPROF_SAMPLE_TIMER=posix";
    char *env[] = { time, hz, sig, timer, NULL };
    if (cg_options_parse(&cg_opts, env, NULL, report, NULL) != 0)
        return 1;
    sample_sig = cg_opts.sample_signal;
    if (sample_sig != SIGUSR2)
        return 1;
    cg_proc_read_identity();
    static const struct cg_thread_events events = {
        .attached = no_event,
        .stopping = cg_sample_thread_stop,
        .ended = no_event,
        .gone = no_gone,
    };
    if (cg_thread_init(&events) != 0 || cg_sample_init((uintptr_t)kick_hook, (uintptr_t)no_gone) != 0)
        return 1;
    cg_sample_set_up(); /* libunwind, as the runtime's constructor loads it */
    cg_collecting = 1;
    t = cg_thread_attach();
    if (!t)
        return 1;
    /* the handler goes in at the first timer (sampletimer.c, ensure_handler):
     * one started and stopped, the tests start their own */
    cg_sample_thread_start(t);
    cg_sample_thread_stop(t);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed), /* the state as attached */
        cmocka_unit_test_setup(test_clock, reset),
        cmocka_unit_test_setup(test_charging, reset),
        cmocka_unit_test_setup(test_guarded, reset),
        cmocka_unit_test_setup(test_other_threads, reset),
        cmocka_unit_test_setup(test_uninstrumented, reset),
        cmocka_unit_test_setup(test_prologue_epilogue, reset),
        cmocka_unit_test_setup(test_before_first_call, reset),
        cmocka_unit_test_setup(test_own_code, reset),
        cmocka_unit_test_setup(test_timers, reset),
        cmocka_unit_test_setup(test_claimed, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
