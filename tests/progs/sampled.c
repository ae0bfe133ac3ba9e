/* CGPROF_TIME=sample: instrumented functions that burn CPU themselves
 * (burn_self) and through a function compiled without instrumentation
 * (spin_outside, in sampled_outside.c, called from burn_outside), plus
 * many small calls whose counts must stay exact.
 *
 *   sampled MS    each of burn_self and burn_outside burns about MS ms of
 *                 CPU time; small() is called 100,000 times. For each burn
 *                 it prints the CPU time its thread spent in it, user and
 *                 system apart (getrusage RUSAGE_THREAD): the reference the
 *                 tests compare the sampled time with, measured in the same
 *                 run (a loaded machine changes both alike; the split
 *                 between user and system time is the kernel's)
 *   sampled MS blocked
 *                 the same, with burn_self in a thread started with every
 *                 signal blocked (as xz starts its workers: the process's
 *                 signals then go to the main thread)
 *   sampled MS fds
 *                 the same, then prints how many perf_event fds the
 *                 process has open (CGPROF_SAMPLE_TIMER=perf: its thread's)
 *   sampled MS sys
 *                 the same, then burn_sys: about MS ms of CPU time mostly
 *                 in the kernel (64 KB writes into a memfd, through libc's
 *                 pwrite), its user and system time printed as above */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

void spin_outside(double ms); /* sampled_outside.c: not instrumented */

static volatile unsigned long sink;

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The clock (a system call) read every 100,000 additions, about 0.1 ms:
 * the burn's time is user time but for a fraction of a percent, whichever
 * of the two a timer counts. */
__attribute__((noinline)) static void burn_self(double ms)
{
    double end = cpu_ms() + ms;
    while (cpu_ms() < end)
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i;
}

__attribute__((noinline)) static void burn_outside(double ms)
{
    spin_outside(ms);
}

__attribute__((noinline)) static void burn_sys(double ms)
{
    static char buf[65536];
    int fd = memfd_create("burn_sys", 0);
    if (fd < 0)
        return;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end)
        for (int i = 0; i < 16; i++)
            if (pwrite(fd, buf, sizeof buf, 0) < 0)
                break;
    close(fd);
}

__attribute__((noinline)) static void small(int i)
{
    sink += (unsigned long)i;
}

static int perf_event_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[300], to[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, to, sizeof to - 1);
        if (len > 0) {
            to[len] = '\0';
            n += strcmp(to, "anon_inode:[perf_event]") == 0;
        }
    }
    closedir(d);
    return n;
}

static double thread_ms(const struct timeval *tv)
{
    return tv->tv_sec * 1e3 + tv->tv_usec / 1e3;
}

/* "NAME: U ms user, S ms system": the CPU time this thread spent in
 * NAME(ms), printed after the call (stdio is no part of what is measured).
 * A macro: the call stays main's (or burner's), as the tests' arcs say. */
#define MEASURED(name, ms)                                                                                          \
    do {                                                                                                            \
        struct rusage a_, b_;                                                                                       \
        getrusage(RUSAGE_THREAD, &a_);                                                                              \
        name(ms);                                                                                                   \
        getrusage(RUSAGE_THREAD, &b_);                                                                              \
        printf("%s: %.3f ms user, %.3f ms system\n", #name, thread_ms(&b_.ru_utime) - thread_ms(&a_.ru_utime),     \
               thread_ms(&b_.ru_stime) - thread_ms(&a_.ru_stime));                                                  \
    } while (0)

static void *burner(void *arg)
{
    MEASURED(burn_self, *(double *)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 300;
    if (argc > 2 && strcmp(argv[2], "blocked") == 0) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t th;
        if (pthread_create(&th, NULL, burner, &ms) != 0)
            return 1;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_join(th, NULL);
    } else {
        MEASURED(burn_self, ms);
    }
    MEASURED(burn_outside, ms);
    for (int i = 0; i < 100000; i++)
        small(i);
    if (argc > 2 && strcmp(argv[2], "fds") == 0)
        printf("perf_event fds: %d\n", perf_event_fds());
    if (argc > 2 && strcmp(argv[2], "sys") == 0)
        MEASURED(burn_sys, ms);
    return 0;
}
