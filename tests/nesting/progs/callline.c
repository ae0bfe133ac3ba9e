/* Issue 27 (2): an inlined call is shown at the call, not at its callee's
 * line. Helpers inlined into a host from two lines each (always_inline, so
 * at every level), one inlined into another (the call of `twice` in `outer`
 * is outer's, at its line), a header's static inline helper (its call in
 * this file, its body in the header), all making real calls. Each call is
 * marked `CALL caller callee` on its line: with CGPROF_INLINED=count every
 * arc of these functions is at the line of its mark, an inlined call's as
 * a real call's (tests/integration/test_callline.py).
 * Expected calls: main -> host 1; host -> twice 200 + 34 (two lines),
 * host -> outer 200, host -> nest_checked 200; outer -> twice 200;
 * twice -> leaf 2 per call; nest_checked -> nest_clamp, nest_real_work. */
#include <stdio.h>
#include <stdlib.h>

#include "nest_helpers.h"

__attribute__((noinline)) int leaf(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) int nest_real_work(int x)
{
    return x + 7;
}

static inline __attribute__((always_inline)) int twice(int x)
{
    return leaf(x) + leaf(x + 1); /* CALL twice leaf */
}

static inline __attribute__((always_inline)) int outer(int x)
{
    int y = x ^ 5;
    return twice(y) - 1; /* CALL outer twice */
}

__attribute__((noinline)) int host(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        s += twice(i); /* CALL host twice */
        if (i % 6 == 0)
            s -= twice(s & 7); /* CALL host twice */
        s += outer(i); /* CALL host outer */
        s += nest_checked(i - 50); /* CALL host nest_checked */
    }
    return s;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    printf("%d\n", host(n)); /* CALL main host */
    return 0;
}
