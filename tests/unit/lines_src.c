/* Compiled into test_lines several times (DWARF 2, 4 and 5 as gcc writes
 * them, and by clang), each with its own LINES_PREFIX: the line tables
 * test_lines compares with libdw's. A cold function is placed before the
 * unit's other code (.text.unlikely), so that its sequence comes out of
 * address order; the header's function gives rows of a second file. */
#include "lines_src.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(n) CAT(LINES_PREFIX, n)

int NAME(lines_cold)(int x) __attribute__((cold, noinline));
int NAME(lines_loop)(int n);

int NAME(lines_cold)(int x)
{
    if (x < 0)
        return -x;
    return x * 3;
}

int NAME(lines_loop)(int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++) {
        if (i % 7 == 3)
            sum += NAME(lines_cold)(i);
        else
            sum += lines_src_twice(i);
    }
    return sum;
}
