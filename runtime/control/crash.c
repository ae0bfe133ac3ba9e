/* Crashes: see crash.h.
 *
 * On a fatal signal the handler forks a copy of the process without running
 * any atfork handler (_Fork: async-signal-safe), whose only thread is the
 * crashed one and whose tables no thread changes any more. The copy writes
 * the profile under the crashed pid, without taking the dump lock (another
 * thread may have held it); it may still block (malloc's lock held by a
 * thread that no longer exists in the copy), so the crashed process waits
 * for it 5 s at most and kills it. Then the crash proceeds with the default
 * action: same signal, same exit status, same core dump.
 *
 * A stack overflow faults on the guard page below the thread's stack, where
 * no handler can run: the handler asks for SA_ONSTACK, and each thread gets
 * an alternate signal stack of its own (cg_crash_thread_start) unless it
 * has one already. The handler needs little of it; the copy, which resolves
 * symbols and formats the files, moves to a fresh stack of its own. */
#define _GNU_SOURCE
#include "crash.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "elfutils.h"
#include "proc.h"
#include "real.h"
#include "util.h"

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static int crashing;
/* whether a crash handler of ours went in: a thread needs its alternate
 * stack only then */
static int installed;
/* Per signal of crash_signals: our handler is what the kernel holds, and
 * the action it replaced (SIG_DFL), which a query of the program's is
 * answered (cg_crash_signal_view). */
static int held[CG_ARRAY_SIZE(crash_signals)];
static struct sigaction program_view[CG_ARRAY_SIZE(crash_signals)];

/* Resolved when the handlers are installed, not in the handler. */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

/* ---- alternate signal stacks ----------------------------------------------
 * CG_ALT_STACK bytes per thread, with a guard page below them, mapped when
 * the thread starts and unmapped when it ends; untouched pages cost no
 * memory. The handler itself uses a few kB: the rest is room for the
 * program's own handlers that ask for SA_ONSTACK, which run there too from
 * now on (a program that sets no alternate stack gets them on its stack). */
enum { CG_ALT_STACK = 256 * 1024 };
static __thread void *alt_map; /* this thread's mapping (guard page first) */
static size_t page_size;

void cg_crash_thread_start(void)
{
    if (!cg_opts.crash || alt_map || !__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) {
        errno = saved;
        return; /* the program's (or inherited from a thread that set one) */
    }
    if (!page_size)
        page_size = (size_t)sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, CG_ALT_STACK + page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
        errno = saved;
        return;
    }
    mprotect(m, page_size, PROT_NONE);
    stack_t ss = { .ss_sp = (char *)m + page_size, .ss_size = CG_ALT_STACK, .ss_flags = 0 };
    if (sigaltstack(&ss, NULL) != 0)
        munmap(m, CG_ALT_STACK + page_size);
    else
        alt_map = m;
    errno = saved;
}

void cg_crash_thread_end(void)
{
    if (!alt_map)
        return;
    int saved = errno;
    stack_t cur;
    /* Ours still, and not in use (a thread may end inside a handler that
     * runs on it, by pthread_exit): disabled, then unmapped. Replaced by the
     * program: the program's stays, ours is unmapped. */
    if (sigaltstack(NULL, &cur) == 0) {
        int ours = !(cur.ss_flags & SS_DISABLE) && cur.ss_sp == (char *)alt_map + page_size;
        if (ours && (cur.ss_flags & SS_ONSTACK)) {
            errno = saved;
            return;
        }
        if (ours) {
            stack_t off = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
            sigaltstack(&off, NULL);
        }
        munmap(alt_map, CG_ALT_STACK + page_size);
        alt_map = NULL;
    }
    errno = saved;
}

/* ---- the copy ---------------------------------------------------------------- */

/* In the copy: the profile, under the crashed process's pid. */
static void write_profile(pid_t crashed, int sig, const siginfo_t *info)
{
    char name[24], trigger[128];
    if (sig == SIGSEGV || sig == SIGBUS)
        snprintf(trigger, sizeof trigger, "Crash: SIG%s at address %p", cg_signal_name(sig, name, sizeof name),
                 info ? info->si_addr : NULL);
    else
        snprintf(trigger, sizeof trigger, "Crash: SIG%s", cg_signal_name(sig, name, sizeof name));
    cg_proc_set_names_pid(crashed);
    cg_dump_crash(trigger);
}

/* The copy is a process of its own: its globals are its own, and nothing
 * returns to the crashed context. */
static struct {
    pid_t crashed;
    int sig;
    siginfo_t info;
    int has_info;
} copy_args;

static void copy_main(void)
{
    cg_elfutils_no_loading(); /* loaded at start-up (cg_crash_install), or never */
    write_profile(copy_args.crashed, copy_args.sig, copy_args.has_info ? &copy_args.info : NULL);
    _exit(0);
}

/* The copy runs on the handler's stack: the alternate stack of a thread
 * whose stack overflowed, or what is left of the thread's own stack. A dump
 * (symbol tables, line tables, formatting) needs more: it moves to 8 MB of
 * its own (if they cannot be had, it stays where it is). */
static void in_copy(pid_t crashed, int sig, const siginfo_t *info)
{
    enum { COPY_STACK = 8 << 20 };
    copy_args.crashed = crashed;
    copy_args.sig = sig;
    copy_args.has_info = info != NULL;
    if (info)
        copy_args.info = *info;
    void *m = mmap(NULL, COPY_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    static ucontext_t uc;
    if (m != MAP_FAILED && getcontext(&uc) == 0) {
        uc.uc_stack.ss_sp = m;
        uc.uc_stack.ss_size = COPY_STACK;
        uc.uc_link = NULL;
        makecontext(&uc, copy_main, 0);
        setcontext(&uc);
    }
    copy_main();
}

static void on_crash(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    int saved = errno;
    if (!__atomic_exchange_n(&crashing, 1, __ATOMIC_ACQ_REL) && !cg_dump_finished()) {
        pid_t me = getpid();
        pid_t child = _Fork();
        if (child == 0)
            in_copy(me, sig, info); /* does not return */
        if (child > 0) {
            int status;
            for (int i = 0; i < 500 && waitpid(child, &status, WNOHANG) == 0; i++) {
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
            if (waitpid(child, &status, WNOHANG) == 0) {
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
            }
        }
    }
    /* The default action from now on. A fault happens again when the
     * handler returns (and dumps core with its real context); a signal that
     * was sent is sent again, and arrives when the handler returns. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (real_sigaction)
        real_sigaction(sig, &dfl, NULL);
    if (!info || info->si_code <= 0 || sig == SIGABRT)
        raise(sig);
    errno = saved;
}

void cg_crash_install(void)
{
    real_sigaction = cg_real_sigaction();
    if (!cg_opts.crash || !real_sigaction)
        return;
    for (unsigned i = 0; i < CG_ARRAY_SIZE(crash_signals); i++) {
        struct sigaction cur, sa;
        if (real_sigaction(crash_signals[i], NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
            continue; /* the program's (or another library's) action stays */
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        program_view[i] = cur;
        if (real_sigaction(crash_signals[i], &sa, NULL) == 0) {
            __atomic_store_n(&held[i], 1, __ATOMIC_RELEASE);
            __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
        }
    }
    /* The copy names the addresses with libdw, which it cannot load
     * (copy_main): loaded now, where crashes are asked for. */
    if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
        cg_elfutils();
}

int cg_crash_signal_view(int sig, struct sigaction *view)
{
    for (unsigned i = 0; i < CG_ARRAY_SIZE(crash_signals); i++)
        if (crash_signals[i] == sig && __atomic_load_n(&held[i], __ATOMIC_ACQUIRE)) {
            *view = program_view[i];
            return 1;
        }
    return 0;
}

void cg_crash_signal_claimed(int sig)
{
    for (unsigned i = 0; i < CG_ARRAY_SIZE(crash_signals); i++)
        if (crash_signals[i] == sig)
            __atomic_store_n(&held[i], 0, __ATOMIC_RELEASE);
}
