/*
 * demo.h - public interface of libcgdemo.so, a tiny shared library used by
 * the uselib example to show calls that cross object boundaries.
 *
 * The library is built with the same instrumentation flags as the
 * programs, so its functions (including the static helper inside demo.c)
 * appear in the profile next to the program's own functions.
 */
#ifndef CGDEMO_DEMO_H
#define CGDEMO_DEMO_H

#ifdef __cplusplus
extern "C" {
#endif

/* A function of the calling program, called back by demo_map_sum(). */
typedef long (*demo_callback)(long value);

/* Returns 1*1 + 2*2 + ... + n*n (calls the internal helper n times). */
long demo_sum_squares(int n);

/* Returns fn(values[0]) + ... + fn(values[count-1]): calls back into the
 * program count times. */
long demo_map_sum(const long *values, int count, demo_callback fn);

#ifdef __cplusplus
}
#endif

#endif /* CGDEMO_DEMO_H */
