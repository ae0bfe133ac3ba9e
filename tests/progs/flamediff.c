/* Two runs of this program differ in ways known in advance, for the
 * differential flame graph (cgprof flame --diff, test_flamehtml.py):
 * `flamediff K` (K from 1 to 7; the tests run 2, then 6):
 *
 *   main -> steady     the same work in every run (2 units)
 *        -> grow       2K units of work: slower as K grows
 *        -> shrink     2(8 - K) units: faster
 *        -> tick       called 2K times, the same small work each: its
 *                      calls change, everything else's stay
 *        -> legacy     only when K < 4
 *        -> fresh      only when K >= 4
 *
 * No recursion and one caller each: the stacks of a run without path
 * files (estimated from the arcs) are the same as with them. */
#include <stdlib.h>

static volatile unsigned long sink;

#define UNIT 1000000UL

/* a loop, not a call: a function for it would take every function's own
 * time */
#define WORK(n)                                                                                             \
    do {                                                                                                    \
        for (unsigned long i_ = 0; i_ < (n); i_++)                                                          \
            sink += i_;                                                                                     \
    } while (0)

static void steady(void)
{
    WORK(2 * UNIT);
}

static void grow(unsigned long k)
{
    WORK(2 * k * UNIT);
}

static void shrink(unsigned long k)
{
    WORK(2 * (8 - k) * UNIT);
}

static void tick(void)
{
    WORK(UNIT / 20);
}

static void legacy(void)
{
    WORK(UNIT);
}

static void fresh(void)
{
    WORK(UNIT);
}

int main(int argc, char **argv)
{
    unsigned long k = argc > 1 ? strtoul(argv[1], NULL, 10) : 2;
    if (k < 1 || k > 7)
        return 2;
    steady();
    grow(k);
    shrink(k);
    for (unsigned long i = 0; i < 2 * k; i++)
        tick();
    if (k < 4)
        legacy();
    else
        fresh();
    return 0;
}
