/* Inlining shapes, each in a function of its own so that a difference
 * names the shape:
 *  - one helper inlined into several hosts (hosts_a, hosts_b, main);
 *  - chains of inlined helpers (outer -> middle -> inner), the innermost
 *    making a real call;
 *  - static inline helpers from a header (nest_helpers.h) in two files;
 *  - an error path the compiler moves to a .cold section (gcc's fn.cold),
 *    taken one time in 64, running inlined helpers and real calls there;
 *  - a helper inlined into a thread's start routine, in 3 threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "nest_helpers.h"

int other_file(int x); /* shapes2_b.c */

volatile int sink;

__attribute__((noinline)) int leaf(int x)
{
    sink += x;
    return x + 1;
}

__attribute__((noinline, cold)) void report(int x)
{
    if (x == -1)
        fprintf(stderr, "report %d\n", x); /* never: a cold function's own work */
    sink ^= x;
}

static int shared(int x)
{
    return leaf(x) * 2;
}

static int inner(int x)
{
    return leaf(x + 1);
}

static int middle(int x)
{
    return inner(x) + inner(x + 2);
}

static int outer(int x)
{
    return middle(x) - 1;
}

__attribute__((noinline)) int hosts_a(int x)
{
    return shared(x) + shared(x + 1);
}

__attribute__((noinline)) int hosts_b(int x)
{
    return shared(x) + outer(x);
}

/* Cold: the compiler moves the unlikely branch (it calls a cold
 * function) out of line, gcc into hot_and_cold.cold in .text.unlikely:
 * real calls and the hooks of what is inlined there come from that part. */
__attribute__((always_inline)) static inline int tiny(int x)
{
    return leaf(x) - 1;
}

__attribute__((noinline)) int hot_and_cold(int x)
{
    int r = shared(x);
    if (__builtin_expect((x & 63) == 0, 0)) {
        report(x);
        r += shared(x + 1) + tiny(r);
        report(r);
        r += outer(x);
    }
    return r + nest_checked(x);
}

int nest_real_work(int x)
{
    return leaf(x) ^ 1;
}

static void *worker(void *arg)
{
    int n = (int)(long)arg, s = 0;
    for (int i = 0; i < n; i++)
        s += outer(i) + nest_checked(i);
    return (void *)(long)s;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    long s = 0;
    for (int i = 0; i < n; i++) {
        s += hosts_a(i) + hosts_b(i) + shared(i) + outer(i);
        s += hot_and_cold(i) + other_file(i);
    }
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)(1000 * (i + 1)));
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        s += (long)r;
    }
    printf("shapes2 %ld\n", s);
    return 0;
}
