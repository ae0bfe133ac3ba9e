/* Known calls, then every thread parked at a known stack until stdin
 * closes, for cgprof-control's -b, -e and -s (tests/integration/
 * test_control.py): what they show of a running program is known exactly.
 *
 *   parked [DEPTH]     (DEPTH: worker 2's recursion, default 10)
 *
 * Thread 1 (main):  main -> start_workers 1, main -> work 1, work -> leaf 100,
 *                   then parked in main -> park.
 * Thread 2 "alpha" (cgprof_set_thread_name): worker_a -> leaf 50, then
 *                   parked in worker_a -> level1 -> level2 -> level3 -> park.
 * Thread 3 "beta" (its /proc name): worker_b -> recurse, recurse -> recurse
 *                   DEPTH-1 times, parked in the deepest recurse -> park.
 * Calls in progress while parked: 2, 5 and DEPTH+2; calls made since the
 * start (those in progress included): 104, 55 and DEPTH+2.
 *
 * It prints "parked" once the three threads are in park(), and ends when
 * its standard input closes. The lines marked CALL: are where the calls in
 * progress are made (the test reads their numbers from here). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cgprof.h"

static volatile unsigned long sink;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int parked_count, released;

static void leaf(int i)
{
    sink += (unsigned long)i;
}

/* PARK: waits, counted as parked, until the main thread releases all */
static void park(void) /* DEF:park */
{
    pthread_mutex_lock(&lock);
    parked_count++;
    pthread_cond_broadcast(&changed);
    while (!released)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
}

static void level3(void)
{
    park(); /* CALL:level3-park */
}

static void level2(void)
{
    level3(); /* CALL:level2-level3 */
}

static void level1(void)
{
    level2(); /* CALL:level1-level2 */
}

static void *worker_a(void *arg)
{
    (void)arg;
    cgprof_set_thread_name("alpha");
    for (int i = 0; i < 50; i++)
        leaf(i);
    level1(); /* CALL:worker_a-level1 */
    return NULL;
}

static void recurse(long n)
{
    if (n <= 1)
        park(); /* CALL:recurse-park */
    else
        recurse(n - 1); /* CALL:recurse-recurse */
}

static long depth = 10;

static void *worker_b(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "beta");
    recurse(depth); /* CALL:worker_b-recurse */
    return NULL;
}

static pthread_t a, b;

static void start_workers(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* room for a deep recursion */
    pthread_attr_setstacksize(&attr, (size_t)64 << 20);
    if (pthread_create(&a, &attr, worker_a, NULL) != 0 || pthread_create(&b, &attr, worker_b, NULL) != 0) {
        perror("pthread_create");
        exit(1);
    }
    pthread_attr_destroy(&attr);
}

static void work(void)
{
    for (int i = 0; i < 100; i++)
        leaf(i);
}

/* The helpers below are no functions of the profile: their threads make
 * no hook, and the profile has three threads. */

/* Releases the threads when stdin closes. */
static void *releaser(void *arg) __attribute__((no_instrument_function));
static void *releaser(void *arg)
{
    (void)arg;
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    pthread_mutex_lock(&lock);
    released = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void announce(void) __attribute__((no_instrument_function));
static void announce(void)
{
    pthread_mutex_lock(&lock);
    while (parked_count < 2)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    /* the main thread parks next: "parked" is said by a thread of its own
     * once all three are in */
}

static void *sayer(void *arg) __attribute__((no_instrument_function));
static void *sayer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (parked_count < 3)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    printf("parked\n");
    fflush(stdout);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        depth = atol(argv[1]);
    start_workers();
    work();
    announce();
    /* helper threads made after the workers: thread numbers 4 and 5 */
    pthread_t r, s;
    if (pthread_create(&r, NULL, releaser, NULL) != 0 || pthread_create(&s, NULL, sayer, NULL) != 0)
        return 1;
    park(); /* CALL:main-park */
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(r, NULL);
    pthread_join(s, NULL);
    return 0;
}
