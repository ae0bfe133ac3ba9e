/*
 * demo.c - implementation of libcgdemo.so (see demo.h).
 *
 * square() is static: it is not exported from the library, but it is still
 * instrumented and still has a symbol in the library's symbol table, so the
 * profile shows it by name.
 *
 * Expected calls: see the comment at the top of ../uselib.c.
 */
#include "demo.h"

/* Internal helper, not visible outside the library. */
static long square(long x)
{
    return x * x;
}

long demo_sum_squares(int n)
{
    long total = 0;

    for (int i = 1; i <= n; i++)
        total += square(i);
    return total;
}

long demo_map_sum(const long *values, int count, demo_callback fn)
{
    long total = 0;

    for (int i = 0; i < count; i++)
        total += fn(values[i]); /* library -> program */
    return total;
}
