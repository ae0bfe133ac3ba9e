/*
 * uselib.c - a program calling into a shared library of its own
 * (libcgdemo.so, built from libdemo/demo.c), which in turn calls back
 * into the program through a function pointer.
 *
 * Both objects are built with -finstrument-functions, so the profile has
 * arcs in both directions across the object boundary:
 *
 *   program -> library:  main -> demo_sum_squares, main -> demo_map_sum
 *   inside the library:  demo_sum_squares -> square  (a static helper)
 *   library -> program:  demo_map_sum -> triple      (the callback)
 *
 * The executable finds libcgdemo.so in the build tree through its RUNPATH
 * (meson sets it), so no LD_LIBRARY_PATH is needed:
 *
 *   LD_PRELOAD=/path/to/libcgprof.so ./uselib
 *
 * Expected calls (with default arguments; the program takes none):
 *
 *   function            calls   object
 *   main                    1   uselib
 *   triple                  8   uselib         (one per element of values[])
 *   demo_sum_squares        1   libcgdemo.so
 *   square                100   libcgdemo.so   (static, n = 100)
 *   demo_map_sum            1   libcgdemo.so
 *
 *   caller -> callee               calls
 *   main -> demo_sum_squares           1
 *   demo_sum_squares -> square       100
 *   main -> demo_map_sum               1
 *   demo_map_sum -> triple             8
 */
#include <stdio.h>

#include "demo.h"

#define N_SQUARES 100

/* The callback handed to the library. */
static long triple(long value)
{
    return 3 * value;
}

int main(void)
{
    static const long values[] = { 1, 2, 3, 5, 8, 13, 21, 34 };
    const int count = (int)(sizeof values / sizeof values[0]);

    long squares = demo_sum_squares(N_SQUARES);
    long mapped = demo_map_sum(values, count, triple);

    printf("uselib: sum of squares 1..%d = %ld, sum of triples of %d values = %ld\n",
           N_SQUARES, squares, count, mapped);
    return 0;
}
