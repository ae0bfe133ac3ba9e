/* The service thread: see service.h.
 *
 * The dump signal's handler only posts a semaphore (async-signal-safe, no
 * file descriptor the program could close under us); the service thread
 * does the work. Signals that arrive while a dump is being written are
 * served by the next dump together: its files say how many (desc:
 * Requests). */
#define _GNU_SOURCE
#include "service.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "dump.h"
#include "proc.h"
#include "real.h"
#include "samplering.h"
#include "thread.h"
#include "util.h"

/* The service thread's stack (issue 39: under a tight RLIMIT_AS, address
 * space the program may need). Measured: at most 28 kB of it touched
 * (/proc/<pid>/smaps, its Rss) serving a dump by signal, with libdw
 * reading the symbols and lines of a C++ program, and cgprof-control's -b,
 * -e, -s and -d; glibc's thread descriptor and static TLS included. The
 * demangler's arrays sized by a name's length go on a stack of their own
 * (demangle.c). 4x that, and pthread's guard page below it. */
enum { SERVICE_STACK = 128 * 1024 };

static sem_t wakeup;
static int service_started;
static int service_stop;
static pthread_t service_thread;
static pid_t service_tid;
static int signal_in_use; /* our handler is installed for cg_opts.signal */
static int signal_preset;  /* the signal had an action of its own at start-up */
/* The action the signal had before ours went in (SIG_DFL, with the mask and
 * flags the kernel gave): what a query of the program's is answered while
 * the signal is ours (cg_service_signal_view). */
static struct sigaction program_view;
static int handler_tried;
/* The service thread takes the dump signal (a program may block it in all
 * its own threads: a server that waits for SIGTERM with sigwait()) until
 * the program claims the signal; then it blocks it again, and says so on
 * `reblocked`, before the program's action is set (cg_service_signal_
 * claimed), so that the program's handler never runs on this thread. Each
 * such request is a wakeup of its own, counted in reblock_posts: a wakeup
 * that is no dump request. */
static unsigned reblock_posts;
static sem_t reblocked;
/* Posted by the service thread once its id is stored (start_thread waits:
 * the status that follows names it). */
static sem_t started;

/* The real sigaction and pthread_create (real.h), resolved once, in the
 * process that loaded the runtime: a forked child restarts the service
 * without calling dlsym(). */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void on_dump_signal(int sig)
{
    (void)sig;
    int saved = errno;
    sem_post(&wakeup);
    errno = saved;
}

/* Blocks or unblocks one signal in the calling thread. */
static void signal_mask(int how, int sig)
{
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(how, &one, NULL);
}

static void *service(void *arg)
{
    (void)arg;
    cg_thread_mark_internal();
    __atomic_store_n(&service_tid, gettid(), __ATOMIC_RELEASE);
    /* the dump signal, while it is ours */
    if (__atomic_load_n(&signal_in_use, __ATOMIC_ACQUIRE))
        signal_mask(SIG_UNBLOCK, cg_opts.signal);
    sem_post(&started); /* its id is known: start_thread goes on */
    unsigned shown = 0;
    /* With ring buffers (CGPROF_SAMPLE_TIMER=ring), each is copied out
     * when more than half full, a few times for what one holds
     * (cg_ring_spill): a thread running code without hooks for longer
     * than its ring holds loses no sample. */
    uint64_t spill_ns = cg_ring_spill_interval_ns();
    struct timespec status_at;
    clock_gettime(CLOCK_MONOTONIC, &status_at);
    for (;;) {
        /* Once a second without a request, the status file follows the
         * number of the program's threads, for cgprof-control's listing. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (spill_ns) {
            uint64_t ns = (uint64_t)ts.tv_nsec + spill_ns;
            ts.tv_sec += (time_t)(ns / 1000000000u);
            ts.tv_nsec = (long)(ns % 1000000000u);
        } else {
            ts.tv_sec += 1;
        }
        if (sem_timedwait(&wakeup, &ts) != 0) {
            if (errno == ETIMEDOUT && !__atomic_load_n(&service_stop, __ATOMIC_ACQUIRE)) {
                if (spill_ns)
                    cg_dump_spill_rings();
                struct timespec mono;
                clock_gettime(CLOCK_MONOTONIC, &mono);
                /* (900 ms: a wait of a second on the real-time clock may
                 * end a little short of one on this one) */
                if ((mono.tv_sec - status_at.tv_sec) * 1000000000L + (mono.tv_nsec - status_at.tv_nsec) >= 900000000L) {
                    status_at = mono;
                    unsigned n = cg_proc_program_threads();
                    if (cg_dump_status_stale() || n != shown) {
                        cg_dump_status();
                        shown = n;
                    }
                }
            }
            continue;
        }
        if (__atomic_load_n(&service_stop, __ATOMIC_ACQUIRE))
            return NULL;
        unsigned posts = __atomic_load_n(&reblock_posts, __ATOMIC_ACQUIRE);
        if (posts && __atomic_compare_exchange_n(&reblock_posts, &posts, posts - 1, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
            /* a wakeup to block the signal again, not a request */
            signal_mask(SIG_BLOCK, cg_opts.signal);
            sem_post(&reblocked);
            continue;
        }
        unsigned n = 1;
        while (sem_trywait(&wakeup) == 0)
            n++;
        char cmd[512];
        int kind = cg_control_take_command(cmd, sizeof cmd);
        cg_dump_serve(kind, cmd, n);
    }
}

/* Whether a thread of this process other than the caller and the service
 * thread is still running (zombies do not count: a main thread that called
 * pthread_exit() stays listed as one). */
static int other_threads_alive(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 1; /* cannot tell: keep the service */
    pid_t self = gettid(), svc = __atomic_load_n(&service_tid, __ATOMIC_ACQUIRE);
    int alive = 0;
    struct dirent *e;
    while (!alive && (e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
        if (tid <= 0 || tid == self || tid == svc)
            continue;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* gone meanwhile */
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = 0;
        const char *paren = strrchr(buf, ')');
        char state = paren && paren[1] == ' ' ? paren[2] : 'R';
        alive = state != 'Z' && state != 'X';
    }
    closedir(d);
    return alive;
}

/* Stops the service thread (the one caller that sets service_stop first):
 * posted, joined, and waited for until it is out of the thread group.
 * Returns whether this call stopped it. */
static int stop_thread(void)
{
    if (__atomic_exchange_n(&service_stop, 1, __ATOMIC_ACQ_REL))
        return 0;
    pid_t tid = __atomic_load_n(&service_tid, __ATOMIC_ACQUIRE);
    sem_post(&wakeup);
    pthread_join(service_thread, NULL);
    /* pthread_join returns when the kernel clears the thread's id, before
     * it leaves the thread group: until then unshare() still sees two
     * threads (EINVAL). Gone when a null signal finds no such thread. */
    for (int i = 0; tid > 0 && i < 100000 && syscall(SYS_tgkill, getpid(), tid, 0) == 0; i++)
        sched_yield();
    __atomic_store_n(&service_tid, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&service_started, 0, __ATOMIC_RELEASE);
    cg_proc_internal_threads_add(-1);
    return 1;
}

/* glibc ends the process when its last thread ends, counting ours: which
 * can only happen once the main thread has ended (pthread_exit), and only
 * then is it worth reading /proc for each thread that ends. */
static int main_gone;

void cg_service_thread_gone(void)
{
    if (gettid() == getpid())
        __atomic_store_n(&main_gone, 1, __ATOMIC_RELEASE);
    if (!__atomic_load_n(&main_gone, __ATOMIC_ACQUIRE) || !__atomic_load_n(&service_started, __ATOMIC_ACQUIRE) ||
        other_threads_alive())
        return;
    int saved = errno;
    stop_thread();
    errno = saved;
}

/* The thread stopped by cg_service_pause, to be started again. */
static int paused;
static int start_thread(void);

int cg_service_pause(void)
{
    if (!__atomic_load_n(&service_started, __ATOMIC_ACQUIRE) || gettid() == service_tid)
        return 0;
    int saved = errno;
    int stopped = stop_thread(); /* 0: stopping for good (cg_service_thread_gone) */
    paused = stopped;
    errno = saved;
    return stopped;
}

void cg_service_resume(int was_running)
{
    if (!was_running)
        return;
    int saved = errno;
    paused = 0;
    __atomic_store_n(&service_stop, 0, __ATOMIC_RELEASE);
    /* requests that came meanwhile posted the semaphore: served now; the
     * status names the new thread */
    if (!cg_dump_finished() && start_thread())
        cg_dump_status();
    errno = saved;
}

/* Starts the service thread. Returns whether it runs. */
static int start_thread(void)
{
    /* The service thread takes no signal of the program's: they must keep
     * going to the program's own threads. (The dump signal, it unblocks
     * itself.) Started is said before it runs, for cg_service_signal_
     * claimed's sake. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&service_started, 1, __ATOMIC_RELEASE);
    /* A stack of SERVICE_STACK, not the default (RLIMIT_STACK, 8 MB):
     * under a tight RLIMIT_AS the program's own threads must still find
     * the address space they find without cgprof. The dumps use under
     * 16 kB of it themselves (tests/progs/stackuse.c), with libdw under
     * 28 kB (SERVICE_STACK says how it was measured). */
    pthread_attr_t attr;
    int have_attr = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, SERVICE_STACK) == 0;
    int rc = real_create(&service_thread, have_attr ? &attr : NULL, service, NULL);
    if (have_attr)
        pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        __atomic_store_n(&service_started, 0, __ATOMIC_RELEASE);
        cg_warn("cannot start the thread that serves dump requests (%s); no dumps by signal", strerror(rc));
        return 0;
    }
    cg_proc_internal_threads_add(1);
    while (sem_wait(&started) != 0 && errno == EINTR)
        ;
    /* said in the status the caller writes next: the control signals this
     * thread alone */
    cg_control_set_service(__atomic_load_n(&service_tid, __ATOMIC_ACQUIRE));
    return 1;
}

/* The launcher (cgprof) blocks the dump signal across the exec, so that a
 * signal sent before the handler is in cannot end the program; it says so
 * in _CGPROF_UNBLOCK_SIGNAL (its number), and the signal is unblocked here,
 * in the thread that loaded the runtime, once the handler is in (or it is
 * known that there will be none). A pending signal arrives then. The
 * variable goes: the program's own children start as the program left
 * them. */
static void launcher_unblock(void)
{
    const char *v = getenv("_CGPROF_UNBLOCK_SIGNAL");
    if (!v)
        return;
    char *end;
    long sig = strtol(v, &end, 10);
    if (*end == 0 && sig > 0 && sig < NSIG)
        signal_mask(SIG_UNBLOCK, (int)sig);
    unsetenv("_CGPROF_UNBLOCK_SIGNAL");
}

void cg_service_install_handler(void)
{
    if (handler_tried)
        return;
    handler_tried = 1;
    real_sigaction = cg_real_sigaction();
    real_create = cg_real_pthread_create();
    if (!real_sigaction || !real_create || cg_opts.signal == 0 || sem_init(&wakeup, 0, 0) != 0 ||
        sem_init(&reblocked, 0, 0) != 0 || sem_init(&started, 0, 0) != 0)
        return;
    /* An action already set for the signal (inherited SIG_IGN, another
     * library's handler) is not taken over: step aside as when the program
     * sets one later. */
    struct sigaction cur;
    if (real_sigaction(cg_opts.signal, NULL, &cur) != 0)
        return;
    if (cur.sa_handler != SIG_DFL) {
        signal_preset = 1;
        return;
    }
    program_view = cur;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (real_sigaction(cg_opts.signal, &sa, NULL) == 0)
        __atomic_store_n(&signal_in_use, 1, __ATOMIC_RELEASE);
}

void cg_service_handler_off(void)
{
    if (__atomic_exchange_n(&signal_in_use, 0, __ATOMIC_ACQ_REL)) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        real_sigaction(cg_opts.signal, &dfl, NULL);
    }
    launcher_unblock();
}

void cg_service_start(void)
{
    if (service_started)
        return;
    cg_service_install_handler();
    launcher_unblock();
    if (!real_sigaction || !real_create || cg_opts.signal == 0)
        return;
    if (signal_preset) {
        char name[24];
        cg_warn("SIG%s already has an action in this process: cgprof leaves it alone and does not dump on it "
                "(CGPROF_SIGNAL chooses another signal)",
                cg_signal_name(cg_opts.signal, name, sizeof name));
    }
    if (!start_thread())
        return;
    int in_use = __atomic_load_n(&signal_in_use, __ATOMIC_ACQUIRE);
    cg_control_init(in_use ? cg_opts.signal : 0);
    cg_dump_status();
}

/* The service thread blocks the signal before the program's action is set
 * or its wait begins. It does at once unless it is writing a dump: then
 * the program waits for the dump, a second at most. */
static void take_signal_back(void)
{
    if (!__atomic_load_n(&service_started, __ATOMIC_ACQUIRE) || gettid() == service_tid)
        return;
    int saved = errno;
    __atomic_fetch_add(&reblock_posts, 1, __ATOMIC_ACQ_REL);
    sem_post(&wakeup);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    while (sem_timedwait(&reblocked, &ts) != 0 && errno == EINTR)
        ;
    errno = saved;
}

static int claim(int sig, const char *how)
{
    if (sig != cg_opts.signal || !__atomic_exchange_n(&signal_in_use, 0, __ATOMIC_ACQ_REL))
        return 0;
    take_signal_back();
    char name[24];
    cg_warn("the program %s SIG%s: cgprof steps aside and no longer dumps on it "
            "(CGPROF_SIGNAL chooses another signal)",
            how, cg_signal_name(sig, name, sizeof name));
    cg_control_set_signal(0);
    return 1;
}

int cg_service_signal_view(int sig, struct sigaction *view)
{
    if (sig != cg_opts.signal || sig == 0 || !__atomic_load_n(&signal_in_use, __ATOMIC_ACQUIRE))
        return 0;
    *view = program_view;
    return 1;
}

int cg_service_signal_claimed(int sig)
{
    return claim(sig, "sets its own action for");
}

int cg_service_signal_awaited(const sigset_t *set)
{
    if (!set || cg_opts.signal == 0 || sigismember(set, cg_opts.signal) != 1)
        return 0;
    return claim(cg_opts.signal, "waits for");
}

void cg_service_forked(void)
{
    int had_service = service_started || paused;
    paused = 0;
    service_started = 0;
    service_stop = 0;
    service_tid = 0;
    reblock_posts = 0;
    main_gone = 0; /* the forking thread is the child's main thread */
    sem_init(&wakeup, 0, 0);
    sem_init(&reblocked, 0, 0);
    sem_init(&started, 0, 0);
    if (had_service && !cg_dump_finished() && start_thread()) {
        cg_control_init(signal_in_use ? cg_opts.signal : 0);
        cg_dump_status();
    }
}
