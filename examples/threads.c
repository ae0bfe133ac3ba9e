/*
 * threads.c - four worker threads, each doing different work.
 *
 * cgprof writes one profile per thread, so running this program with the
 * runtime preloaded produces five profiles: one for main and one for each
 * worker.  Each worker's profile starts at its thread function (its "root":
 * the thread was started by libc's pthread_create machinery, which is not
 * instrumented, so the worker has no instrumented caller).
 *
 *   primes_worker: counts the primes below PRIMES_LIMIT by trial division,
 *   sort_worker:   fills an array from a fixed-seed generator and qsort()s it,
 *   fib_worker:    recursive Fibonacci,
 *   hash_worker:   hashes a fixed list of words, several rounds.
 *
 * Build:  cc -finstrument-functions -g -O0 -fno-inline -fno-omit-frame-pointer \
 *            -pthread threads.c -o threads
 * Run:    LD_PRELOAD=/path/to/libcgprof.so ./threads
 *
 * Expected calls (with default arguments; the program takes none):
 *
 *   threads in total: 5 (main + 4 workers)
 *
 *   function          calls   thread
 *   main                  1   main
 *   primes_worker         1   worker 1
 *   is_prime           9998   worker 1   (n = 2 .. 9999)
 *   sort_worker           1   worker 2
 *   next_random         100   worker 2   (one per element)
 *   compare_ints        547   worker 2   see the note below
 *   fib_worker            1   worker 3
 *   fib               57313   worker 3   fib(22): 2*F(23) - 1, F(23) = 28657
 *   hash_worker           1   worker 4
 *   hash_string        4000   worker 4   (8 words x 500 rounds)
 *
 *   caller -> callee                calls
 *   primes_worker -> is_prime        9998
 *   sort_worker -> next_random        100
 *   (libc) -> compare_ints            547   (through qsort, see below)
 *   fib_worker -> fib                   1
 *   fib -> fib                      57312
 *   hash_worker -> hash_string       4000
 *
 * main calls none of the program's functions itself: pthread_create() runs
 * each worker function on its new thread.
 *
 * Note on compare_ints: it is called by libc's qsort(), which is not
 * instrumented.  The hooks see each call of compare_ints with a call site
 * inside libc, and cgprof names that call site by the libc function that
 * contains it (msort_with_tmp when libc's symbols are installed), as
 * Valgrind does; the sort_worker -> msort_with_tmp call that the hooks cannot
 * see is shown with the time spent in libc.  The number of comparisons
 * is fixed by the input and by glibc's qsort (a merge sort for small
 * arrays); another C library would give another number.  The program
 * counts them and prints the count, so you can check.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_WORKERS 4

/* ------------------------------------------------------------------ */
/* Worker 1: primes                                                   */
/* ------------------------------------------------------------------ */

#define PRIMES_LIMIT 10000

static int is_prime(int n)
{
    if (n < 2)
        return 0;
    for (int d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

static void *primes_worker(void *arg)
{
    long *result = arg;
    long count = 0;

    for (int n = 2; n < PRIMES_LIMIT; n++)
        count += is_prime(n);
    *result = count;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Worker 2: sorting with qsort and a comparator                      */
/* ------------------------------------------------------------------ */

#define N_SORT 100

/* A linear congruential generator with a fixed seed: same numbers every run. */
static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) & 0x7fff;
}

/* Only the sort thread uses this counter, so it needs no lock. */
static unsigned comparisons;

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    comparisons++;
    return (x > y) - (x < y);
}

static void *sort_worker(void *arg)
{
    long *result = arg;
    int values[N_SORT];
    unsigned seed = 2024;

    for (int i = 0; i < N_SORT; i++)
        values[i] = (int)(next_random(&seed) % 1000);
    qsort(values, N_SORT, sizeof values[0], compare_ints);
    *result = values[N_SORT / 2]; /* the median, more or less */
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Worker 3: recursion                                                */
/* ------------------------------------------------------------------ */

#define FIB_N 22

static long fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

static void *fib_worker(void *arg)
{
    long *result = arg;

    *result = fib(FIB_N);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Worker 4: string hashing                                           */
/* ------------------------------------------------------------------ */

#define HASH_ROUNDS 500

static const char *const words[] = {
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
};
#define N_WORDS (sizeof words / sizeof words[0])

/* FNV-1a, 32 bits. */
static uint32_t hash_string(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void *hash_worker(void *arg)
{
    long *result = arg;
    uint32_t acc = 0;

    for (int round = 0; round < HASH_ROUNDS; round++)
        for (size_t i = 0; i < N_WORDS; i++)
            acc = acc * 31u + hash_string(words[i]);
    *result = acc;
    return NULL;
}

/* ------------------------------------------------------------------ */

int main(void)
{
    static void *(*const workers[N_WORKERS])(void *) = {
        primes_worker, sort_worker, fib_worker, hash_worker,
    };
    pthread_t tids[N_WORKERS];
    long results[N_WORKERS] = { 0 };

    for (int i = 0; i < N_WORKERS; i++) {
        int err = pthread_create(&tids[i], NULL, workers[i], &results[i]);
        if (err != 0) {
            fprintf(stderr, "threads: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    for (int i = 0; i < N_WORKERS; i++)
        pthread_join(tids[i], NULL);

    printf("threads: %ld primes below %d, median of %d sorted values %ld "
           "(%u comparisons), fib(%d)=%ld, hash %08lx\n",
           results[0], PRIMES_LIMIT, N_SORT, results[1], comparisons,
           FIB_N, results[2], (unsigned long)results[3]);
    return 0;
}
