/* longjmp across 10 instrumented frames, 1000 times: the frames it leaves
 * never see their exit hook.
 * Expected: main -> round_trip 1000, round_trip -> level 1000,
 * level -> level 9000, round_trip -> leaf 1000; 10000 frames left. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile unsigned long sink;

static void level(int n)
{
    if (n > 10)
        return;
    sink += (unsigned long)n;
    if (n == 10)
        longjmp(env, 1);
    level(n + 1);
}

static void leaf(void)
{
    sink++;
}

static void round_trip(void)
{
    if (setjmp(env) == 0)
        level(1);
    leaf();
}

int main(void)
{
    for (int i = 0; i < 1000; i++)
        round_trip();
    printf("jumps: %lu\n", sink);
    return 0;
}
