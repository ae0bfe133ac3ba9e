/* Crashes: see crash.h.
 *
 * On a fatal signal the handler forks a copy of the process without running
 * any atfork handler (_Fork: async-signal-safe), whose only thread is the
 * crashed one and whose tables no thread changes any more. The copy writes
 * the profile under the crashed pid, without taking the dump lock (another
 * thread may have held it); it may still block (malloc's lock held by a
 * thread that no longer exists in the copy), so the crashed process waits
 * for it 5 s at most and kills it. Then the crash proceeds with the default
 * action: same signal, same exit status, same core dump. */
#define _GNU_SOURCE
#include "crash.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "proc.h"
#include "real.h"
#include "util.h"

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static int crashing;

/* Resolved when the handlers are installed, not in the handler. */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

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

static void on_crash(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    int saved = errno;
    if (!__atomic_exchange_n(&crashing, 1, __ATOMIC_ACQ_REL) && !cg_dump_finished()) {
        pid_t me = getpid();
        pid_t child = _Fork();
        if (child == 0) {
            write_profile(me, sig, info);
            _exit(0);
        }
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
        real_sigaction(crash_signals[i], &sa, NULL);
    }
}
