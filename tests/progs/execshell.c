/* Works, then replaces itself by a shell, as a program that runs a
 * command at its end does: under sampled time the shell must start and
 * finish (a sampling signal pending across the exec would end it: its
 * action is the default again there). Prints the shell's line. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

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

int main(void)
{
    work(0.03);
    fflush(stdout);
    execl("/bin/sh", "sh", "-c", "echo execshell: the shell ran", (char *)NULL);
    perror("execshell: exec");
    return 1;
}
