/* errno must come out of every hook as it went in, including the hooks that
 * take slow paths: a thread's first hook (its tables are set up) and table
 * growth (1,500 distinct call sites, more than the initial capacity). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

static void check(int expected)
{
    if (errno != expected)
        failures++;
}

#define CALL10 check(42); check(42); check(42); check(42); check(42); \
               check(42); check(42); check(42); check(42); check(42);
#define CALL100 CALL10 CALL10 CALL10 CALL10 CALL10 CALL10 CALL10 CALL10 CALL10 CALL10

static void many_sites(void)
{
    CALL100 CALL100 CALL100 CALL100 CALL100 CALL100 CALL100 CALL100
    CALL100 CALL100 CALL100 CALL100 CALL100 CALL100 CALL100
}

static void *thread_main(void *arg)
{
    (void)arg;
    errno = 42;
    many_sites();
    if (errno != 42)
        failures++;
    return NULL;
}

int main(void)
{
    errno = 42;
    many_sites();
    if (errno != 42)
        failures++;
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    printf("errno_keep: %d failures\n", failures);
    return failures != 0;
}
