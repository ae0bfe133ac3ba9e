/* Call paths with known shapes (tests/integration/test_callpaths.py): a
 * callee shared by two callers and called from two sites of one, direct
 * and mutual recursion, a deep recursion, and a path through a callback
 * called by the C library (qsort). */
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

static int lex(int x) { return x * 3 + 1; }

static int parse(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += lex(i);
    return s + lex(n); /* a second call site of lex */
}

static int eval(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += lex(-i);
    return s;
}

static int is_odd(int n);
static int is_even(int n) { return n == 0 ? 1 : is_odd(n - 1); }
static int is_odd(int n) { return n == 0 ? 0 : is_even(n - 1); }

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int down(int n) { return n == 0 ? lex(0) : 1 + down(n - 1); }

static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void sort(int n)
{
    int *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = (i * 7919) % n;
    qsort(v, n, sizeof *v, cmp);
    sink = v[0];
    free(v);
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 1000;
    sink = parse(10);
    sink = eval(5);
    sink = parse(3);
    sink = is_even(depth);
    sink = fib(15);
    sink = down(depth);
    sort(100);
    printf("paths: done\n");
    return 0;
}
