/* Two runs of this program differ in ways known in advance, for the
 * differential flame graph (cgprof flame --diff, test_flamehtml.py):
 * `flamediff K` (K from 1 to 7; the tests run 2, then 6):
 *
 *   main -> steady     the same work in every run (2 units)
 *        -> grow       K * K units of work: slower as K grows (2 -> 6:
 *                      4 -> 36, 9 times the work)
 *        -> shrink     (8 - K) * (8 - K) units: faster (36 -> 4)
 *        -> tick       called 2K times, the same small work each (a
 *                      twentieth of a unit): its calls change, everything
 *                      else's stay
 *        -> legacy     only when K < 4 (1 unit)
 *        -> fresh      only when K >= 4 (1 unit)
 *
 * A unit is 10,000,000 additions, some 10 ms: at CGPROF_SAMPLE_HZ=10000
 * (the test's) a hundred samples of CPU time. From 2 to 6, grow's and
 * shrink's changes (32 units each) are 16 times steady's whole work and
 * 32 times fresh's: no machine's noise (a run's CPU time slowed by half by
 * a loaded neighbour) makes another frame's change the largest, or turns
 * grow's or shrink's the other way.
 *
 * No recursion and one caller each: the stacks of a run without path
 * files (estimated from the arcs) are the same as with them. No call into
 * the C library either (K read by hand): in sampled time a sample there
 * is a frame of its own (main > strtoul), in one run and not the other. */

static volatile unsigned long sink;

#define UNIT 10000000UL

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
    WORK(k * k * UNIT);
}

static void shrink(unsigned long k)
{
    WORK((8 - k) * (8 - k) * UNIT);
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
    unsigned long k = 2;
    if (argc > 1) {
        if (argv[1][0] < '1' || argv[1][0] > '7' || argv[1][1] != '\0')
            return 2;
        k = (unsigned long)(argv[1][0] - '0');
    }
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
