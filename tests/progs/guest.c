/* The cases of issue 26: what a program sees of the runtime. Each mode
 * prints what the program can observe; the test runs it with and without
 * cgprof and compares (tests/integration/test_guest.py).
 *
 *   fds           a thread runs work() and ends (its part is written then),
 *                 then the program prints its open descriptors (@top: in
 *                 the top half of its RLIMIT_NOFILE range), the number
 *                 its next open() gets, and execs ls /proc/self/fd, which
 *                 lists those the new image inherited (and its own 3).
 *   nofile        RLIMIT_NOFILE 6; a thread runs work() and ends; the
 *                 program then opens /dev/null three times (fds 3, 4, 5)
 *                 and prints what each open gave.
 *   open3         as nofile, under the limit its starter set (issue 39:
 *                 RLIMIT_NOFILE 6 set before it starts, as ulimit -n does).
 *   title         rewrites its title as setproctitle() does ("guest-title:
 *                 busy" in argv[0]), runs work() 100 times, prints
 *                 "ready" and waits for a line on stdin.
 *   query         prints what sigaction() and signal() report for SIGUSR1,
 *                 SIGPROF and SIGSEGV before the program sets anything: a program
 *                 that leaves an existing action alone looks so.
 *   stderr FILE   closes fd 2 and opens FILE there (as a daemon logs), runs
 *                 work() 50,000 times (throttled when CGPROF_THROTTLE says
 *                 so), writes one line to fd 2 and ends: FILE must hold
 *                 that line only.
 *   reuse DIR     a thread starts and waits; the program closes every
 *                 descriptor from 3 to 1023 (as a daemon does), opens
 *                 DIR/a and DIR/b, lets the thread end, then writes 3100
 *                 bytes to b and prints how many were written: nothing of
 *                 the runtime's may close a number the program reuses.
 *   unshare       a thread runs work() and ends, then the program calls
 *                 unshare(CLONE_NEWUSER), which the kernel refuses to a
 *                 multi-threaded process, and prints its result.
 *   tsanfork      built with -fsanitize=thread by the test: a thread runs
 *                 and is joined, the program forks, the child starts a
 *                 thread (ThreadSanitizer kills a child that does so after
 *                 a multi-threaded fork) and the parent prints its status.
 *   sigjmp        SIGALRM every 50 us of real time; its handler calls
 *                 in_handler() and siglongjmps back to main, which goes on
 *                 calling counted() until 3,000 jumps; prints the jumps,
 *                 the handler's calls and counted()'s entries (counted by
 *                 the program itself, in its body).
 *   sigfork       SIGALRM every 200 us of real time; its handler forks,
 *                 200 times in all, while main calls counted(); each child
 *                 returns from the handler into what it interrupted (often
 *                 a hook), then calls child_work() 1,000 times from main
 *                 and exits: every child's profile must hold them.
 *   sigforkexit   as sigfork, but each child calls child_work() 3 times
 *                 inside the handler and exits there: the hook the signal
 *                 interrupted never resumes in it (issue 39: every count 0).
 *   rawfork       a child made by syscall(SYS_fork) (no atfork handler
 *                 runs) calls child_work() 10 times and exits; the parent
 *                 waits and prints the child's status.
 *   undumpable    as sleep, after prctl(PR_SET_DUMPABLE, 0) (as sshd and
 *                 some servers do): its /proc files become root's.
 *   threads       two threads each sum 1..2000 through add() (2,000 calls)
 *                 and squares(), the main thread one more through add(); prints
 *                 the sums, which depend on the computation only (the run the
 *                 failed allocations are injected into: issue 39, a few ms).
 *   sleep         prints "ready", then sleeps in nanosleep(), 0.25 s at a
 *                 time, printing each one's result and errno, until its
 *                 stdin ends (looked at between two sleeps): a dump asked
 *                 meanwhile must not cut one short.
 *   vmsize        prints its address space at main (VmSize, in kB), after
 *                 what memory does before it maps anything: test_guest
 *                 chooses memory's NEED from it.
 *   memory NEED   issue 39, a program under a tight RLIMIT_AS: maps and
 *                 touches NEED kB (its working set: without it, it ends
 *                 with status 1, as a program that needs its memory
 *                 does), then mallocs blocks of 4 MB, each checked and
 *                 touched, until one fails or 16 are had; then, memory
 *                 being short, starts a thread with a 256 kB stack that
 *                 runs work() 1,000 times and ends (its part is written
 *                 then, memory short); then frees the blocks and ends.
 *                 Prints each step's result: the same with cgprof, unless
 *                 cgprof took memory the program needed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(void)
{
    for (int i = 0; i < 100; i++)
        sink += (unsigned long)i;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        work();
    return NULL;
}

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static int waiting, released;

static void *waiter(void *arg)
{
    (void)arg;
    work();
    pthread_mutex_lock(&gate);
    waiting = 1;
    pthread_cond_broadcast(&moved);
    while (!released)
        pthread_cond_wait(&moved, &gate);
    pthread_mutex_unlock(&gate);
    work();
    return NULL;
}

static sigjmp_buf jump_back;
static volatile sig_atomic_t handler_calls;
static volatile unsigned long counted_calls;

static __attribute__((noinline)) void in_handler(void)
{
    handler_calls++;
}

static volatile sig_atomic_t jumps_left = 3000;

static void on_alarm(int sig)
{
    (void)sig;
    in_handler();
    if (jumps_left > 0) {
        jumps_left--;
        siglongjmp(jump_back, 1);
    }
}

static __attribute__((noinline)) void counted(void)
{
    counted_calls++;
    for (int i = 0; i < 20; i++)
        sink += (unsigned long)i;
}

static volatile sig_atomic_t forks_left = 200, in_child;

static __attribute__((noinline)) void child_work(void)
{
    for (int i = 0; i < 10; i++)
        sink += (unsigned long)i;
}

/* sigforkexit: the child works and exits in the handler */
static int exit_in_handler;

static void on_alarm_fork(int sig)
{
    (void)sig;
    if (forks_left <= 0)
        return;
    forks_left--;
    int saved = errno;
    pid_t pid = fork();
    if (pid == 0 && exit_in_handler) {
        for (int i = 0; i < 3; i++)
            child_work();
        exit(0);
    }
    if (pid == 0) {
        /* the child returns into what the signal interrupted (a hook,
         * often), then works and ends in main */
        in_child = 1;
        errno = saved;
        return;
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
    errno = saved;
}

/* threads: what each thread sums, through instrumented calls */
static __attribute__((noinline)) unsigned long add(unsigned long a, unsigned long b)
{
    return a + b;
}

static __attribute__((noinline)) unsigned long squares(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 1; i <= n; i++)
        s = add(s, i * i);
    return s;
}

static void *summer(void *arg)
{
    unsigned long *out = arg, s = 0;
    for (unsigned long i = 1; i <= 2000; i++)
        s = add(s, i);
    out[0] = s;
    out[1] = squares(100);
    return NULL;
}

static void thread_ends(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "guest: thread failed\n");
        exit(2);
    }
}

/* The descriptors open now, but the one that reads the directory: 0, 1 and
 * 2 by number, each other one by what it is (a file's path, "pipe",
 * "anon_inode:[perf_event]") and whether it is close-on-exec. */
static void print_fds(const char *who)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        printf("%s: no /proc/self/fd\n", who);
        return;
    }
    int own = dirfd(d);
    int fds[256], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        if (fd != own)
            fds[n++] = fd;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (fds[j] < fds[i]) {
                int x = fds[i];
                fds[i] = fds[j];
                fds[j] = x;
            }
    /* where the runtime keeps its own (cg_fd_above): the top of the range */
    struct rlimit rl;
    long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long)(rl.rlim_cur / 2) : 0;
    if (top > 4096 || rl.rlim_cur == RLIM_INFINITY)
        top = 4096;
    printf("%s:", who);
    for (int i = 0; i < n; i++) {
        if (fds[i] <= 2) {
            printf(" %d", fds[i]);
            continue;
        }
        char path[64], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fds[i]);
        ssize_t len = readlink(path, target, sizeof target - 1);
        target[len > 0 ? len : 0] = 0;
        if (strncmp(target, "pipe:", 5) == 0)
            target[4] = 0;
        int flags = fcntl(fds[i], F_GETFD);
        printf(" %s%s%s", target, top >= 128 && fds[i] >= top ? "@top" : "",
               flags >= 0 && (flags & FD_CLOEXEC) ? "(cloexec)" : "");
    }
    printf("\n");
    fflush(stdout);
}

static const char *kind(void (*h)(int))
{
    return h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : "a handler";
}

static void query(int sig, const char *name)
{
    struct sigaction old;
    memset(&old, 0, sizeof old);
    if (sigaction(sig, NULL, &old) != 0) {
        printf("%s: sigaction failed: %s\n", name, strerror(errno));
        return;
    }
    int restart = (old.sa_flags & SA_RESTART) != 0, siginfo = (old.sa_flags & SA_SIGINFO) != 0;
    printf("%s: sigaction says %s, SA_RESTART %d, SA_SIGINFO %d\n", name,
           siginfo ? "a handler" : kind(old.sa_handler), restart, siginfo);
    /* signal() sets what was there: the program's own view is unchanged */
    void (*was)(int) = signal(sig, SIG_DFL);
    printf("%s: signal() returned %s\n", name, kind(was));
}

/* memory: the thread started when memory is short */
static volatile int short_calls;

static void *short_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        work();
        short_calls++;
    }
    return NULL;
}

/* The VmSize line of /proc/self/status, in kB (read without malloc). */
static long vmsize_kb(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    const char *v = strstr(buf, "VmSize:");
    return v ? strtol(v + 7, NULL, 10) : -1;
}

static int memory(long need_kb)
{
    /* malloc maps a block of BLOCK bytes as 4 MB exactly (its header in
     * the last page), so that each step is the same 4 MB of RLIMIT_AS */
    enum { BLOCK = (4 << 20) - 4096, BLOCKS = 16, STACK = 256 * 1024 };
    size_t need = (size_t)need_kb * 1024;
    void *own = need ? mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
    printf("need %ld kB: %s\n", need_kb, own == MAP_FAILED ? "failed" : "ok");
    if (own == MAP_FAILED)
        return 1;
    if (own)
        memset(own, 1, need);
    void *blocks[BLOCKS];
    int n = 0;
    while (n < BLOCKS) {
        blocks[n] = malloc(BLOCK);
        printf("malloc 4 MB block %d: %s\n", n + 1, blocks[n] ? "ok" : "failed");
        if (!blocks[n])
            break;
        memset(blocks[n++], 2, BLOCK);
    }
    pthread_attr_t attr;
    pthread_t t;
    int rc = pthread_attr_init(&attr);
    if (rc == 0)
        rc = pthread_attr_setstacksize(&attr, STACK);
    if (rc == 0)
        rc = pthread_create(&t, &attr, short_worker, NULL);
    printf("thread with a 256 kB stack: %s\n", rc ? strerror(rc) : "started");
    if (rc == 0 && pthread_join(t, NULL) == 0)
        printf("thread: %d calls\n", short_calls);
    while (n > 0)
        free(blocks[--n]);
    printf("freed\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "fds") == 0) {
        thread_ends();
        print_fds("after a thread ended");
        int next = open("/dev/null", O_RDONLY);
        printf("the next open: %d\n", next);
        close(next);
        /* what an exec'd program inherits: ls lists its own (3: its
         * reading of the directory) */
        printf("after exec:\n");
        fflush(stdout);
        execl("/bin/ls", "ls", "/proc/self/fd", (char *)NULL);
        perror("exec");
        return 2;
    }
    if (strcmp(mode, "nofile") == 0 || strcmp(mode, "open3") == 0) {
        struct rlimit rl = { 6, 6 };
        if (strcmp(mode, "nofile") == 0 && setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            perror("setrlimit");
            return 2;
        }
        thread_ends();
        int fds[3];
        for (int i = 0; i < 3; i++) {
            fds[i] = open("/dev/null", O_RDONLY);
            printf("open %d: %s\n", i + 1, fds[i] >= 0 ? "ok" : strerror(errno));
        }
        /* room again for the profile written at exit */
        for (int i = 0; i < 3; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return 0;
    }
    if (strcmp(mode, "title") == 0) {
        /* as setproctitle() does (Redis, nginx, PostgreSQL): the whole
         * argument area rewritten, one string with spaces */
        char *start = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]);
        memset(start, 0, (size_t)(end - start));
        snprintf(start, (size_t)(end - start) + 1, "guest-title: busy");
        for (int i = 0; i < 100; i++)
            work();
        printf("ready\n");
        fflush(stdout);
        char in[8];
        return fgets(in, sizeof in, stdin) ? 0 : 1;
    }
    if (strcmp(mode, "query") == 0) {
        query(SIGUSR1, "SIGUSR1");
        query(SIGPROF, "SIGPROF");
        query(SIGSEGV, "SIGSEGV");
        return 0;
    }
    if (strcmp(mode, "stderr") == 0 && argc > 2) {
        close(2);
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd != 2) {
            printf("the file is fd %d, not 2\n", fd);
            return 2;
        }
        for (int i = 0; i < 50000; i++)
            work();
        static const char line[] = "the program's own line\n";
        if (write(2, line, sizeof line - 1) != (ssize_t)sizeof line - 1)
            return 2;
        printf("done\n");
        return 0;
    }
    if (strcmp(mode, "reuse") == 0 && argc > 2) {
        pthread_t t;
        pthread_mutex_lock(&gate);
        if (pthread_create(&t, NULL, waiter, NULL) != 0)
            return 2;
        while (!waiting)
            pthread_cond_wait(&moved, &gate);
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        char a[4096], b[4096];
        snprintf(a, sizeof a, "%s/a", argv[2]);
        snprintf(b, sizeof b, "%s/b", argv[2]);
        int fa = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644), fb = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        released = 1;
        pthread_cond_broadcast(&moved);
        pthread_mutex_unlock(&gate);
        pthread_join(t, NULL);
        static char data[3100];
        memset(data, 'x', sizeof data);
        ssize_t n = write(fb, data, sizeof data);
        printf("opened a %s, b %s; wrote %zd bytes to b\n", fa >= 0 ? "ok" : "failed", fb >= 0 ? "ok" : "failed", n);
        return 0;
    }
    if (strcmp(mode, "unshare") == 0) {
        thread_ends();
        int rc = unshare(CLONE_NEWUSER);
        printf("unshare(CLONE_NEWUSER): %d%s%s\n", rc, rc ? " " : "", rc ? strerror(errno) : "");
        return 0;
    }
    if (strcmp(mode, "tsanfork") == 0) {
        thread_ends();
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            thread_ends();
            printf("child: a thread ran\n");
            return 0;
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf("child: exit status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return 0;
    }
    if (strcmp(mode, "sigjmp") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = { { 0, 50 }, { 0, 50 } };
        /* The jumps land here (sigsetjmp returns 1); the timer is armed
         * only after the jmp_buf is set. Armed before it, its first signal
         * could come before sigsetjmp had run (50 us: a preemption, or the
         * lazy binding of __sigsetjmp at its first call, is longer), and
         * the handler jumped to an empty jmp_buf: SIGSEGV in __longjmp,
         * with or without cgprof (1 run in a few hundred under load). */
        if (sigsetjmp(jump_back, 1) == 0)
            setitimer(ITIMER_REAL, &it, NULL);
        while (jumps_left > 0)
            counted();
        struct itimerval off;
        memset(&off, 0, sizeof off);
        setitimer(ITIMER_REAL, &off, NULL);
        printf("jumps %d, handler calls %d, counted %lu\n", 3000 - (int)jumps_left, (int)handler_calls,
               counted_calls);
        return 0;
    }
    if (strcmp(mode, "sigfork") == 0 || strcmp(mode, "sigforkexit") == 0) {
        exit_in_handler = strcmp(mode, "sigforkexit") == 0;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm_fork;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = { { 0, 200 }, { 0, 200 } };
        setitimer(ITIMER_REAL, &it, NULL);
        while (forks_left > 0 && !in_child)
            counted();
        if (in_child) {
            for (int i = 0; i < 1000; i++)
                child_work();
            exit(0);
        }
        struct itimerval off;
        memset(&off, 0, sizeof off);
        setitimer(ITIMER_REAL, &off, NULL);
        printf("forked 200\n");
        return 0;
    }
    if (strcmp(mode, "rawfork") == 0) {
        for (int i = 0; i < 10; i++)
            work();
        fflush(stdout);
#ifdef SYS_fork
        long pid = syscall(SYS_fork);
#else
        /* aarch64 has no fork system call: clone without CLONE_VM, which
         * runs no atfork handler either */
        long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
#endif
        if (pid == 0) {
            for (int i = 0; i < 10; i++)
                child_work();
            exit(0);
        }
        int st = 0;
        waitpid((pid_t)pid, &st, 0);
        printf("child: exit status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return 0;
    }
    if (strcmp(mode, "threads") == 0) {
        pthread_t t[2];
        unsigned long sums[2][2] = { { 0, 0 }, { 0, 0 } }, own = 0;
        for (int i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, summer, sums[i]) != 0) {
                fprintf(stderr, "guest: thread failed\n");
                return 2;
            }
        for (unsigned long i = 1; i <= 2000; i++)
            own = add(own, i);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        printf("sums: %lu %lu %lu, squares: %lu %lu\n", sums[0][0], sums[1][0], own, sums[0][1], sums[1][1]);
        return 0;
    }
    if (strcmp(mode, "undumpable") == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        perror("prctl");
        return 2;
    }
    if (strcmp(mode, "sleep") == 0 || strcmp(mode, "undumpable") == 0) {
        for (int i = 0; i < 1000; i++)
            work();
        printf("ready\n");
        fflush(stdout);
        for (;;) {
            struct timespec ts = { 0, 250000000 };
            int rc = nanosleep(&ts, NULL);
            printf("nanosleep: %d (%s)\n", rc, rc ? strerror(errno) : "slept");
            fflush(stdout);
            /* the end of stdin (anything written to it is read past) */
            struct pollfd in = { 0, POLLIN, 0 };
            char buf[64];
            if (poll(&in, 1, 0) > 0 && read(0, buf, sizeof buf) <= 0)
                return 0;
        }
    }
    if (strcmp(mode, "vmsize") == 0) {
        printf("need %d kB: ok\n", 0); /* stdout's buffer, as memory has it */
        printf("vmsize %ld kB\n", vmsize_kb());
        return 0;
    }
    if (strcmp(mode, "memory") == 0 && argc > 2)
        return memory(strtol(argv[2], NULL, 10));
    fprintf(stderr, "usage: guest fds|nofile|query|stderr FILE|reuse DIR|sleep|vmsize|memory NEED\n");
    return 2;
}
