/* Calls of known, widely different durations, for CGPROF_LATENCY
 * (tests/integration/test_latency.py). Each spins on clock_gettime until
 * its time has passed: on any machine it takes at least that long, and
 * only a thread switched out makes it longer.
 *
 *   latency ROUNDS [THREADS [dump|zero]]
 *
 * A round: 9 calls of short_call (SHORT_NS), then 1 of long_call (LONG_NS,
 * 500 times longer), both called from round_of_ten(). The main thread runs
 * ROUNDS rounds, then THREADS threads ROUNDS rounds each. dump: the main
 * thread asks for a dump (cgprof_api_dump) after half its rounds; zero: it
 * zeroes the profile there (cgprof_api_zero). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHORT_NS 2200L
#define LONG_NS (500 * SHORT_NS)

/* the runtime's API (include/cgprof.h), absent without it */
extern int cgprof_api_dump(const char *reason) __attribute__((weak));
extern int cgprof_api_zero(void) __attribute__((weak));

static volatile long sink;

__attribute__((no_instrument_function)) static void spin(long ns)
{
    struct timespec a, b;
    long checks = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
        checks++;
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
    sink += checks;
}

__attribute__((noinline)) void short_call(void)
{
    spin(SHORT_NS);
}

__attribute__((noinline)) void long_call(void)
{
    spin(LONG_NS);
}

__attribute__((noinline)) void round_of_ten(void)
{
    for (int i = 0; i < 9; i++)
        short_call();
    long_call();
}

static long rounds;

__attribute__((noinline)) static void *worker(void *arg)
{
    (void)arg;
    for (long r = 0; r < rounds; r++)
        round_of_ten();
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 100;
    int threads = argc > 2 ? atoi(argv[2]) : 0;
    const char *what = argc > 3 ? argv[3] : "";
    for (long r = 0; r < rounds; r++) {
        if (r == rounds / 2 && strcmp(what, "dump") == 0 && cgprof_api_dump)
            cgprof_api_dump("half way");
        if (r == rounds / 2 && strcmp(what, "zero") == 0 && cgprof_api_zero)
            cgprof_api_zero();
        round_of_ten();
    }
    pthread_t t[16];
    if (threads > 16)
        threads = 16;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%ld rounds, %d threads\n", rounds, threads);
    return 0;
}
