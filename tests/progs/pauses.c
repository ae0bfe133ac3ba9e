/* Collection turned off and on by the API around a hot loop: while it is
 * off every hook call met is taken back (docs/internals/takeback.md), the exits once
 * 10 ms have passed, and the sites are put back when it comes on again.
 * Expected with the runtime, over the whole run: main -> mid 2,
 * mid -> leaf 30 (10 before the pause, 20 after), whatever ran while off;
 * a dump taken while off ("off") says how many sites were taken back for
 * it, and one after ("on again") says none are. */
#include <stdio.h>
#include <time.h>

#include "cgprof.h"

static volatile unsigned long sink;

static void leaf(int i)
{
    sink += (unsigned long)i;
}

static void mid(int n)
{
    for (int i = 0; i < n; i++)
        leaf(i);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
    mid(10);
    cgprof_collect(false);
    long loops = 0;
    for (double t0 = now(); now() - t0 < 0.05; loops++)
        mid(100);
    cgprof_dump("off");
    cgprof_collect(true);
    mid(20);
    cgprof_dump("on again");
    printf("pauses: %s\n", loops > 0 ? "ran while off" : "no loop");
    return 0;
}
