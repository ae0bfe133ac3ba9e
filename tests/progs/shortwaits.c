/* Short waits between bits of work, as a server's loop makes them: under
 * sampled time (CGPROF_TIME=sample) none may fail with EINTR, which the
 * program never sees without cgprof. Prints the EINTRs seen.
 *     shortwaits [rounds]   (default 20,000 rounds of 50 us of work,
 *                            nanosleep(1 us) and poll(0)) */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void work(double seconds)
{
    for (double t0 = now(); now() - t0 < seconds;)
        sink++;
}

static int wait_briefly(void)
{
    int eintr = 0;
    struct timespec ts = { 0, 1000 };
    if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
        eintr++;
    if (poll(NULL, 0, 0) < 0 && errno == EINTR)
        eintr++;
    return eintr;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20000;
    long eintr = 0;
    for (int r = 0; r < rounds; r++) {
        work(50e-6);
        eintr += wait_briefly();
    }
    printf("shortwaits: %ld EINTR in %d rounds\n", eintr, rounds);
    return 0;
}
