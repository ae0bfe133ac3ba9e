/* How much stack cgprof's dump paths use: a dump runs on the stack of
 * whoever asks for it (the thread calling cgprof_dump(), a thread writing
 * its last part as it ends) and, for a crash (CGPROF_CRASH=1), in a copy of
 * the process on the stack of the signal handler, which may be a small
 * alternate signal stack. Each is run here on memory of our own, painted
 * first; the bytes found changed are the stack it used. Prints
 * "stack: <what> <bytes>" lines.
 *
 *   stackuse threads   a thread's cgprof_dump(), a thread's end, and an
 *                      idle thread (what glibc itself puts on a thread's
 *                      stack: its descriptor, the static TLS)
 *   stackuse crash     a crash handled on a 64 kB alternate signal stack;
 *                      the copy that writes the profile reports from its
 *                      _exit(), which this program defines (exported:
 *                      -rdynamic), so that the runtime's call lands here */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgprof.h"

#define AREA (64 * 1024)
#define PAINT 0xa5

static unsigned char *area; /* the stack being measured */

__attribute__((no_instrument_function)) static size_t used(void)
{
    size_t i = 0;
    while (i < AREA && area[i] == PAINT)
        i++;
    return AREA - i; /* stacks grow down: the lowest byte changed */
}

__attribute__((no_instrument_function)) static void report(const char *what)
{
    char line[96];
    int n = snprintf(line, sizeof line, "stack: %s %zu\n", what, used());
    (void)!write(1, line, (size_t)n);
}

/* The crash copy's end (crash.c calls _exit(0) once the profile is
 * written): report, then end as _exit would. */
__attribute__((no_instrument_function)) void _exit(int status)
{
    report("crash");
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

static int leaf(int x)
{
    return x * 3 + 1;
}

static int work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += leaf(i);
    return s;
}

static void *dumper(void *arg)
{
    work(10);
    return (void *)(intptr_t)cgprof_dump((const char *)arg);
}

static void *ender(void *arg)
{
    (void)arg;
    work(10); /* its last part is written as it ends, on this stack */
    return NULL;
}

__attribute__((no_instrument_function)) static void *idle(void *arg)
{
    return arg;
}

__attribute__((no_instrument_function)) static void on_stack(void *(*fn)(void *), const char *what)
{
    memset(area, PAINT, AREA);
    pthread_attr_t a;
    pthread_t t;
    if (pthread_attr_init(&a) != 0 || pthread_attr_setstack(&a, area, AREA) != 0 ||
        pthread_create(&t, &a, fn, (void *)what) != 0 || pthread_join(t, NULL) != 0) {
        perror("thread");
        exit(2);
    }
    pthread_attr_destroy(&a);
    report(what);
}

static void crash(int depth)
{
    if (depth > 0) {
        crash(depth - 1);
        return;
    }
    volatile int *p = (volatile int *)(uintptr_t)0x10;
    *p = work(5);
}

int main(int argc, char **argv)
{
    area = aligned_alloc(4096, AREA);
    if (!area || argc < 2)
        return 2;
    work(5);
    if (strcmp(argv[1], "crash") == 0) {
        memset(area, PAINT, AREA);
        stack_t ss = { .ss_sp = area, .ss_size = AREA, .ss_flags = 0 };
        if (sigaltstack(&ss, NULL) != 0)
            return 2;
        crash(3);
        return 1;
    }
    on_stack(idle, "idle");
    on_stack(dumper, "dump");
    on_stack(ender, "thread-exit");
    return 0;
}
