/* Time on and off the CPU (CGPROF_OFF_CPU, tests/integration/
 * test_compensation.py): work() spins (on the CPU) then naps 100 ms
 * (off it: usleep blocks), three times; a second thread waits on a pipe
 * that main writes after its naps. Expected: nap -> cgprof_off_cpu at
 * least 3 x 100 ms, exactly as many calls of each function as without.
 * With an argument (`offcpu stuck`), main never writes and exits after its
 * naps: the waiter is still blocked in wait_for_main when the files are
 * written, its wait so far (at least 300 ms) not yet seen by a hook.
 * With `offcpu paused`, main pauses the collection after its first nap and
 * resumes it after its second (cgprof_collect): the waiter is blocked
 * through both; main prints how long the pause lasted at most ("offcpu:
 * paused N ns").
 *
 * Main starts its naps once the waiter says it is about to block (a byte
 * on a second pipe), and prints how long the waiter has been blocked when
 * main writes to it, or exits (`offcpu stuck`): "offcpu: the waiter was
 * blocked N ns", the reference the tests compare the waiter's time off
 * the CPU with, measured in the same run (a loaded machine may start the
 * waiter late). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgprof.h"

static volatile unsigned long sink;
static int fds[2], ready[2];
static long long blocked_at; /* CLOCK_MONOTONIC ns, set by the waiter */

__attribute__((no_instrument_function)) static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* How long the waiter has been blocked, as main writes to it or exits.
 * These two make no calls of the profile (not instrumented): the tests
 * check the whole set of arcs. */
__attribute__((no_instrument_function)) static void report_blocked(void)
{
    long long at = __atomic_load_n(&blocked_at, __ATOMIC_ACQUIRE);
    printf("offcpu: the waiter was blocked %lld ns\n", at ? now_ns() - at : 0);
}

static void spin(void)
{
    for (unsigned long i = 0; i < 2000000; i++)
        sink += i;
}

static void nap(void)
{
    usleep(100000);
}

static void work(void)
{
    spin();
    nap();
}

static void wait_for_main(void)
{
    char c = 'r';
    __atomic_store_n(&blocked_at, now_ns(), __ATOMIC_RELEASE);
    if (write(ready[1], &c, 1) != 1 || read(fds[0], &c, 1) != 1)
        sink = 0;
}

static void *waiter(void *arg)
{
    (void)arg;
    wait_for_main();
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (pipe(fds) != 0 || pipe(ready) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    char c;
    if (read(ready[0], &c, 1) != 1)
        return 1;
    int paused = argc > 1 && strcmp(argv[1], "paused") == 0;
    long long pause_start = 0;
    for (int i = 0; i < 3; i++) {
        work();
        if (paused && i == 0)
            pause_start = now_ns();
        if (paused && i < 2)
            cgprof_collect(i == 1);
        if (paused && i == 1) /* the paused window, at most: the tests' reference */
            printf("offcpu: paused %lld ns\n", now_ns() - pause_start);
    }
    if (argc > 1 && !paused) {
        report_blocked();
        printf("offcpu: the waiter is left blocked\n");
        return 0;
    }
    report_blocked();
    if (write(fds[1], "x", 1) != 1)
        return 1;
    pthread_join(t, NULL);
    printf("offcpu: done\n");
    return 0;
}
