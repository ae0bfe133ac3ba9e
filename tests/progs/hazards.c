/* The cases of issue 14, one per mode; each says what it must leave, by
 * construction or from figures the program prints.
 *
 *   forktree N    main -> spawn_child N times, each child process runs
 *                 child -> work, and every 10th child also forks a
 *                 grandchild (child -> fork_grandchild, which runs
 *                 fork_grandchild -> work in the grandchild). Summed over
 *                 all processes every call is counted once: main ->
 *                 spawn_child N, spawn_child -> child N, child -> work N,
 *                 child -> fork_grandchild N/10, fork_grandchild -> work
 *                 N/10, main -> work 1, main itself once.
 *   vfork N       main -> spawn_vfork N times; each vfork child calls
 *                 setup() twice, then execs /bin/true; the parent runs
 *                 spawn_vfork -> after_child. The children's setup() calls
 *                 are no calls of the parent's.
 *   quick_exit    main -> work 3, then quick_exit(3): the program's own
 *                 at_quick_exit handler (on_quick_exit -> work) runs, and
 *                 the profile must be written.
 *   overflow main|thread FILE
 *                 recurse() until the stack ends (SIGSEGV on the guard
 *                 page), in the main thread or in a thread with a 1 MB
 *                 stack; the depth reached is kept in FILE (a shared
 *                 mapping, which outlives the crash): caller -> recurse 1,
 *                 recurse -> recurse depth - 1.
 *   sigwait       every signal blocked in every thread, as a server that
 *                 waits for SIGTERM with sigwait(): a worker thread calls
 *                 work() until SIGTERM, then prints how many times.
 *   waitusr1      the program takes SIGUSR1 itself with sigwait(): it
 *                 says each SIGUSR1 it gets ("hazards: got SIGUSR1 N")
 *                 and how many until SIGTERM.
 *   mask          prints whether SIGUSR1 is blocked in main and whether
 *                 _CGPROF_UNBLOCK_SIGNAL is in the environment. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(void)
{
    for (int i = 0; i < 2000; i++)
        sink += (unsigned long)i;
}

/* ---- forktree ---- */

static void fork_grandchild(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        work();
        exit(0);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static void child(int i)
{
    work();
    if (i % 10 == 0)
        fork_grandchild();
    exit(0);
}

static void spawn_child(int i)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        child(i);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* ---- vfork ---- */

static volatile int setups;

static void setup(void)
{
    setups++;
}

static void after_child(void)
{
    work();
}

static void spawn_vfork(void)
{
    static char name[] = "true";
    static char *argv[] = { name, NULL };
    pid_t pid = vfork();
    if (pid == 0) {
        setup();
        setup();
        execv("/bin/true", argv);
        _exit(127);
    }
    int status = -1;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        printf("hazards: vfork child status %d\n", status);
    after_child();
}

/* ---- quick_exit ---- */

static void on_quick_exit(void)
{
    work();
}

/* ---- overflow ---- */

static volatile unsigned long *depth_reached;

static unsigned long recurse(unsigned long n)
{
    volatile char pad[64];
    if (n == 0)
        return 0; /* never: n starts at 1 (but the recursion is not infinite to the compiler) */
    pad[0] = (char)n;
    *depth_reached = n;
    return recurse(n + 1) + pad[0]; /* not a tail call: the stack must end */
}

static void *overflow_thread(void *arg)
{
    (void)arg;
    recurse(1);
    return NULL;
}

/* ---- sigwait ---- */

static volatile int stop;
static unsigned long worked;

static void *worker(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        work();
        worked++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "forktree") == 0 && argc > 2) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++)
            spawn_child(i);
        work();
        printf("hazards: %d children, %d grandchildren\n", n, (n + 9) / 10);
        return 0;
    }
    if (strcmp(mode, "vfork") == 0 && argc > 2) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++)
            spawn_vfork();
        printf("hazards: %d vfork children, setup() ran %d times\n", n, setups);
        return 0;
    }
    if (strcmp(mode, "quick_exit") == 0) {
        at_quick_exit(on_quick_exit);
        for (int i = 0; i < 3; i++)
            work();
        printf("hazards: quick_exit\n");
        fflush(stdout);
        quick_exit(3);
    }
    if (strcmp(mode, "overflow") == 0 && argc > 3) {
        int fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, 4096) != 0)
            return 2;
        depth_reached = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (depth_reached == MAP_FAILED)
            return 2;
        if (strcmp(argv[2], "thread") == 0) {
            pthread_attr_t attr;
            pthread_t t;
            pthread_attr_init(&attr);
            pthread_attr_setstacksize(&attr, 1 << 20);
            if (pthread_create(&t, &attr, overflow_thread, NULL) != 0)
                return 2;
            pthread_join(t, NULL);
        } else {
            recurse(1);
        }
        return 1; /* not reached */
    }
    if (strcmp(mode, "sigwait") == 0 || strcmp(mode, "waitusr1") == 0) {
        sigset_t all, wanted;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        sigemptyset(&wanted);
        sigaddset(&wanted, SIGTERM);
        int usr1 = strcmp(mode, "waitusr1") == 0;
        if (usr1)
            sigaddset(&wanted, SIGUSR1);
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return 2;
        if (usr1) {
            /* The runtime steps aside at the program's first wait for the
             * signal: a poll here, so that no SIGUSR1 the test sends after
             * "ready" is taken as a dump request. */
            struct timespec zero = { 0, 0 };
            sigtimedwait(&wanted, NULL, &zero);
        }
        printf("hazards: ready\n");
        fflush(stdout);
        int sig = 0, got = 0;
        while (sigwait(&wanted, &sig) == 0 && sig != SIGTERM) {
            got++;
            printf("hazards: got SIGUSR1 %d\n", got);
            fflush(stdout);
        }
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        pthread_join(t, NULL);
        if (usr1)
            printf("hazards: SIGUSR1 %d\n", got);
        printf("hazards: work %lu\n", worked);
        return 0;
    }
    if (strcmp(mode, "mask") == 0) {
        sigset_t cur;
        pthread_sigmask(SIG_BLOCK, NULL, &cur);
        work();
        printf("hazards: SIGUSR1 blocked %d, _CGPROF_UNBLOCK_SIGNAL %s\n", sigismember(&cur, SIGUSR1),
               getenv("_CGPROF_UNBLOCK_SIGNAL") ? "present" : "absent");
        return 0;
    }
    fprintf(stderr, "usage: hazards forktree N | vfork N | quick_exit | overflow main|thread FILE | sigwait | "
                    "waitusr1 | mask\n");
    return 2;
}
