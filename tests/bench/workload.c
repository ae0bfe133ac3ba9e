/* The benchmark's call-heavy workload (scripts/bench): recursive fib plus a
 * three-level call tree, in units of work that the threads share.
 *
 *   workload UNITS THREADS
 *
 * One unit is fib(20) (21,891 calls) and 200 calls of level1, each calling
 * level2 10 times, each calling level3 10 times (22,200 calls): 44,091
 * calls of instrumented functions. The units are split evenly over the
 * threads. Prints the number of calls made by construction and the time
 * the work took (from before the threads start to after they are joined),
 * so that start-up and the exit dump are not in the figure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* -DBENCH_INLINE: the compiler may inline the helpers (at -O2: level3 into
 * level2 and so on, fib partly into itself), whose hooks stay: the same
 * calls for the hooks, made from fewer real frames (scripts/bench's
 * "inlined calls"). */
#ifdef BENCH_INLINE
#define NOINLINE
#else
#define NOINLINE __attribute__((noinline))
#endif

/* Per thread: a shared variable written by both threads would make the
 * plain build itself slower with two threads than with one. */
static __thread volatile unsigned long sink;

NOINLINE static unsigned long fib(unsigned n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

NOINLINE static void level3(unsigned i)
{
    sink += i;
}

NOINLINE static void level2(unsigned i)
{
    for (unsigned j = 0; j < 10; j++)
        level3(i + j);
}

NOINLINE static void level1(unsigned i)
{
    for (unsigned j = 0; j < 10; j++)
        level2(i * j);
}

NOINLINE static void unit(void)
{
    sink += fib(20);
    for (unsigned i = 0; i < 200; i++)
        level1(i);
}

#define CALLS_PER_UNIT (21891ul + 200ul * 111ul + 1ul)

static void *worker(void *arg)
{
    unsigned long n = (unsigned long)arg;
    for (unsigned long i = 0; i < n; i++)
        unit();
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    unsigned long units = argc > 1 ? strtoul(argv[1], NULL, 10) : 560;
    unsigned long threads = argc > 2 ? strtoul(argv[2], NULL, 10) : 1;
    if (threads < 1 || threads > 64 || units % threads) {
        fprintf(stderr, "usage: workload UNITS THREADS (1-64 threads dividing UNITS)\n");
        return 2;
    }
    pthread_t tid[64];
    double t0 = now_ms();
    if (threads == 1) {
        worker((void *)units);
    } else {
        for (unsigned long i = 0; i < threads; i++)
            if (pthread_create(&tid[i], NULL, worker, (void *)(units / threads))) {
                perror("pthread_create");
                return 1;
            }
        for (unsigned long i = 0; i < threads; i++)
            pthread_join(tid[i], NULL);
    }
    double t1 = now_ms();
    /* main, now_ms twice, and worker once per thread */
    printf("calls %lu\nms %.3f\n", units * CALLS_PER_UNIT + 3 + threads, t1 - t0);
    return 0;
}
