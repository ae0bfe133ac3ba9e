/* Compiled without -finstrument-functions: the code a sample finds outside
 * the instrumented program (like a library's), for tests/progs/sampled.c. */
#include <time.h>

void spin_outside(double ms);

static volatile unsigned long sink;

__attribute__((noinline)) static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void spin_inner(void)
{
    for (int i = 0; i < 100000; i++)
        sink += (unsigned long)i;
}

__attribute__((noinline)) void spin_outside(double ms)
{
    double end = cpu_ms() + ms;
    while (cpu_ms() < end)
        spin_inner();
}
