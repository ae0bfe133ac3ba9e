/* For CGPROF_THROTTLE (tests/integration/test_filters.py): tiny is called
 * 1,000,000 times and calls tinier each time; mid 2,000 times, each call
 * long (several microseconds); slow 3 times.
 *
 *   main -> tiny 1000000, tiny -> tinier 1000000, main -> mid 2000,
 *   main -> slow 3 */
#include <stdio.h>

static volatile unsigned long sink;

static void tinier(int i)
{
    sink += (unsigned long)i;
}

static void tiny(int i)
{
    tinier(i);
}

static void mid(void)
{
    for (unsigned i = 0; i < 20000; i++)
        sink += i;
}

static void slow(void)
{
    for (unsigned i = 0; i < 1000000; i++)
        sink += i;
}

int main(void)
{
    for (int i = 0; i < 1000000; i++)
        tiny(i);
    for (int i = 0; i < 2000; i++)
        mid();
    for (int i = 0; i < 3; i++)
        slow();
    printf("throttle: %lu\n", sink);
    return 0;
}
