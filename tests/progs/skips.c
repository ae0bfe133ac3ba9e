/* Functions to leave out with CGPROF_SKIP, CGPROF_SKIP_FILE and
 * CGPROF_SKIP_OBJECT (tests/integration/test_filters.py).
 *
 *   main -> work 1
 *   work -> helper 10, work -> leaf 5, work -> vendor_fn 4
 *   helper -> spin 10, helper -> leaf 20 (2 per call), helper -> other 10,
 *   helper -> nested_helper 10
 *   other -> spin 10, nested_helper -> leaf 10
 *   vendor_fn (vendor/vendored.c) -> leaf 4
 *
 * With CGPROF_SKIP=helper: work -> spin 10, work -> leaf 25, work -> other 10,
 * work -> nested_helper 10, nested_helper -> leaf 10. With
 * CGPROF_SKIP='*helper': work -> leaf 35, work -> other 10. */
#include <stdio.h>

void vendor_fn(int n);
void leaf(int n);
static volatile unsigned long sink;

/* Some time of its own, so that where it goes can be checked. */
static void spin(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        sink += i;
}

void leaf(int n)
{
    sink += (unsigned long)n;
}

static void other(void)
{
    spin(1000);
}

static void nested_helper(void)
{
    leaf(3);
}

static void helper(int i)
{
    spin(20000);
    leaf(i);
    leaf(i + 1);
    other();
    nested_helper();
}

static void work(void)
{
    for (int i = 0; i < 10; i++)
        helper(i);
    for (int i = 0; i < 5; i++)
        leaf(i);
    for (int i = 0; i < 4; i++)
        vendor_fn(i);
}

int main(void)
{
    work();
    printf("skips: %lu\n", sink);
    return 0;
}
