/* CGPROF_TIME=sample: where in a function its self time lands. Two
 * functions burn CPU in loops whose statements are on lines of their own:
 * loop_only calls nothing (its samples used to land on its opening line,
 * the only position a function without calls had), after_call calls
 * prepare() first (its samples used to land on that call's line). The
 * tests find the lines by the marker comments at their ends.
 *
 *   sampled_lines MS [N]
 *                      each of loop_only and after_call burns about MS ms
 *                      of the thread's CPU time, in calls of N rounds
 *                      (200,000 by default). For each it prints the CPU
 *                      time the thread spent in its calls, user and system
 *                      apart (getrusage RUSAGE_THREAD), as tests/progs/
 *                      sampled does: "NAME: U ms user, S ms system", the
 *                      reference the tests compare the sampled time with,
 *                      measured in the same run */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void loop_only(unsigned n)
{ /* entry: loop_only */
    unsigned long a = 0, b = 1;
    for (unsigned i = 0; i < n; i++) { /* loop: loop_only */
        a += i * b;                    /* loop: loop_only */
        b ^= a >> 3;                   /* loop: loop_only */
        sink += a;                     /* loop: loop_only */
    }                                  /* loop: loop_only */
}

__attribute__((noinline)) static unsigned prepare(unsigned n)
{
    return n | 1;
}

__attribute__((noinline)) static void after_call(unsigned n)
{ /* entry: after_call */
    unsigned long a = prepare(n), b = 3; /* call: after_call */
    for (unsigned i = 0; i < n; i++) {   /* loop: after_call */
        a ^= i + b;                      /* loop: after_call */
        b += a << 1;                     /* loop: after_call */
        sink += b;                       /* loop: after_call */
    }                                    /* loop: after_call */
}

static double thread_ms(const struct timeval *tv)
{
    return tv->tv_sec * 1e3 + tv->tv_usec / 1e3;
}

/* "NAME: U ms user, S ms system": the CPU time this thread spent calling
 * NAME(n) until ms ms of its CPU time had passed, printed after (stdio is
 * no part of what is measured). A macro: the calls stay main's, as the
 * tests' arcs say. */
#define MEASURED(name, ms, n)                                                                                       \
    do {                                                                                                            \
        struct rusage a_, b_;                                                                                       \
        getrusage(RUSAGE_THREAD, &a_);                                                                              \
        double end_ = cpu_ms() + (ms);                                                                              \
        while (cpu_ms() < end_)                                                                                     \
            name(n);                                                                                                \
        getrusage(RUSAGE_THREAD, &b_);                                                                              \
        printf("%s: %.3f ms user, %.3f ms system\n", #name, thread_ms(&b_.ru_utime) - thread_ms(&a_.ru_utime),     \
               thread_ms(&b_.ru_stime) - thread_ms(&a_.ru_stime));                                                  \
    } while (0)

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 300;
    /* the rounds from the command line: no clone of the loops for a
     * constant (loop_only.constprop.0), whatever the optimisation */
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 200000;
    MEASURED(loop_only, ms, n);
    MEASURED(after_call, ms, n);
    return 0;
}
