/* A program that crashes at depth, in one of several ways (argv[1]):
 * segv (a write through a null pointer), abort, fpe (integer division by
 * zero), kill (raise(SIGSEGV)). Expected, with CGPROF_CRASH=1: the calls
 * in progress are written (main -> crash_at 1, crash_at -> crash_at 4), and
 * the process dies of the same signal as without cgprof. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int zero, seven = 7;
static int *volatile nowhere;

static void crash(const char *how)
{
    fflush(stdout);
    if (strcmp(how, "segv") == 0)
        *nowhere = 1;
    else if (strcmp(how, "abort") == 0)
        abort();
    else if (strcmp(how, "fpe") == 0)
        printf("%d\n", seven / zero); /* not 1 / x: gcc makes that a comparison */
    else if (strcmp(how, "kill") == 0)
        raise(SIGSEGV);
}

static void crash_at(int depth, const char *how)
{
    if (depth == 5) {
        crash(how);
        return;
    }
    crash_at(depth + 1, how);
}

int main(int argc, char **argv)
{
    printf("crasher: going down\n");
    crash_at(1, argc > 1 ? argv[1] : "segv");
    return 0;
}
