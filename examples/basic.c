/*
 * basic.c - a single-threaded tour of what cgprof records.
 *
 * The program does four small, unrelated jobs so that the profile shows a
 * little of everything:
 *
 *   - fib():          plain recursion (shows up as fib -> fib arcs),
 *   - parse_config(): a small call tree, main -> parse_config -> parse_line
 *                     -> { tokenize, trim, checksum },
 *   - sort_scores():  qsort() with a comparator callback, i.e. a call that
 *                     goes out into (uninstrumented) libc and back in again,
 *   - crunch():       a plain loop with no calls at all, so that nearly all
 *                     of its time is "self" cost.
 *
 * Build it with instrumentation (meson does this for you):
 *
 *   cc -finstrument-functions -g -O0 -fno-inline -fno-omit-frame-pointer \
 *      basic.c -o basic
 *
 * and run it with the runtime preloaded:
 *
 *   LD_PRELOAD=/path/to/libcgprof.so ./basic [N]
 *
 * N is the argument of fib() (default 20).  Without LD_PRELOAD the program
 * still runs: glibc contains empty __cyg_profile_func_enter/exit hooks.
 *
 * Expected calls (with default arguments):
 *
 *   function          calls
 *   main                  1
 *   fib               21891   fib(n) makes 2*F(n+1) - 1 calls; F(21) = 10946
 *   parse_config          1
 *   parse_line            6   one per line of config_lines[]
 *   tokenize              6   one per line
 *   trim                 12   two per line (key and value)
 *   checksum              6   one per line
 *   sort_scores           1
 *   compare_ints         49   see the note below
 *   crunch                1
 *
 *   caller -> callee             calls
 *   main -> fib                      1
 *   fib -> fib                   21890
 *   main -> parse_config             1
 *   parse_config -> parse_line       6
 *   parse_line -> tokenize           6
 *   parse_line -> trim              12
 *   parse_line -> checksum           6
 *   main -> sort_scores              1
 *   (libc) -> compare_ints          49   (through qsort, see below)
 *   main -> crunch                   1
 *
 * Note on compare_ints: it is called by libc's qsort(), which is not
 * instrumented.  The hooks see each call of compare_ints with a call site
 * inside libc, and cgprof names that call site by the libc function that
 * contains it (msort_with_tmp when libc's symbols are installed), as
 * Valgrind does; the sort_scores -> msort_with_tmp call that the hooks cannot
 * see is shown with the time spent in libc.  The number of comparisons
 * is fixed by the input and by glibc's qsort (a merge sort for small
 * arrays); another C library would give another number.  The program
 * counts them and prints the count, so you can check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Recursion                                                          */
/* ------------------------------------------------------------------ */

/* The classic exponential Fibonacci: fib(n) calls itself 2*F(n+1) - 2 times. */
static long fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

/* ------------------------------------------------------------------ */
/* A small call tree: parse "key = value" lines                       */
/* ------------------------------------------------------------------ */

#define FIELD_SIZE 32

struct entry {
    char key[FIELD_SIZE];
    char value[FIELD_SIZE];
};

static const char *const config_lines[] = {
    "name = cgprof",
    "threads = 4",
    "output = callgrind.out",
    "  depth =   64  ",
    "verbose=yes",
    "format = callgrind",
};
#define N_LINES (sizeof config_lines / sizeof config_lines[0])

/* Split "key = value" at the first '=' into two buffers (untrimmed). */
static void tokenize(const char *line, char *key, char *value)
{
    size_t i = 0, k = 0, v = 0;

    while (line[i] != '\0' && line[i] != '=' && k < FIELD_SIZE - 1)
        key[k++] = line[i++];
    key[k] = '\0';
    if (line[i] == '=')
        i++;
    while (line[i] != '\0' && v < FIELD_SIZE - 1)
        value[v++] = line[i++];
    value[v] = '\0';
}

/* Remove leading and trailing spaces, in place. */
static void trim(char *s)
{
    size_t start = 0, len = strlen(s);

    while (len > 0 && s[len - 1] == ' ')
        s[--len] = '\0';
    while (s[start] == ' ')
        start++;
    memmove(s, s + start, len - start + 1);
}

/* A simple string checksum (FNV-1a), looped a little to cost some time. */
static unsigned long checksum(const char *s)
{
    unsigned long h = 2166136261UL;

    for (int round = 0; round < 1000; round++)
        for (const char *p = s; *p != '\0'; p++)
            h = (h ^ (unsigned char)*p) * 16777619UL;
    return h;
}

static unsigned long parse_line(const char *line, struct entry *e)
{
    tokenize(line, e->key, e->value);
    trim(e->key);
    trim(e->value);
    return checksum(e->value);
}

static unsigned long parse_config(struct entry *entries)
{
    unsigned long sum = 0;

    for (size_t i = 0; i < N_LINES; i++)
        sum ^= parse_line(config_lines[i], &entries[i]);
    return sum;
}

/* ------------------------------------------------------------------ */
/* A callback called from libc: qsort()                               */
/* ------------------------------------------------------------------ */

static int scores[] = { 42, 7, 93, 15, 64, 3, 88, 21, 56, 97, 34, 70, 12, 81, 29, 50 };
#define N_SCORES (sizeof scores / sizeof scores[0])

static unsigned comparisons; /* counted only to print it */

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    comparisons++;
    return (x > y) - (x < y);
}

static void sort_scores(void)
{
    qsort(scores, N_SCORES, sizeof scores[0], compare_ints);
}

/* ------------------------------------------------------------------ */
/* Pure self time: a loop without calls                               */
/* ------------------------------------------------------------------ */

static double crunch(long iterations)
{
    double sum = 0.0;

    for (long i = 1; i <= iterations; i++)
        sum += 1.0 / ((double)i * (double)i);
    return sum; /* tends to pi^2/6 */
}

int main(int argc, char **argv)
{
    int n = 20;
    struct entry entries[N_LINES];

    if (argc > 1) {
        n = atoi(argv[1]);
        if (n < 0 || n > 40) {
            fprintf(stderr, "usage: %s [N]   (0 <= N <= 40, default 20)\n", argv[0]);
            return 2;
        }
    }

    long f = fib(n);
    unsigned long sum = parse_config(entries);
    sort_scores();
    double c = crunch(5000000);

    printf("basic: fib(%d)=%ld, %zu config entries (%s=%s, checksum %08lx), "
           "%zu scores sorted %d..%d with %u comparisons, crunch=%.6f\n",
           n, f, N_LINES, entries[3].key, entries[3].value, sum & 0xffffffffUL,
           N_SCORES, scores[0], scores[N_SCORES - 1], comparisons, c);
    return 0;
}
