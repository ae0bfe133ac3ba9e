/* Time on and off the CPU (CGPROF_OFF_CPU, tests/integration/
 * test_compensation.py): work() spins (on the CPU) then naps 100 ms
 * (off it: usleep blocks), three times; a second thread waits on a pipe
 * that main writes after its naps. Expected: nap -> cgprof_off_cpu at
 * least 3 x 100 ms, exactly as many calls of each function as without.
 * With an argument (`offcpu stuck`), main never writes and exits after its
 * naps: the waiter is still blocked in wait_for_main when the files are
 * written, its wait so far (at least 300 ms) not yet seen by a hook.
 * With `offcpu paused`, main pauses the collection after its first nap and
 * resumes it after its second (cgprof_collect): the waiter is blocked
 * through both. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgprof.h"

static volatile unsigned long sink;
static int fds[2];

static void spin(void)
{
    for (unsigned long i = 0; i < 2000000; i++)
        sink += i;
}

static void nap(void)
{
    usleep(100000);
}

static void work(void)
{
    spin();
    nap();
}

static void wait_for_main(void)
{
    char c;
    if (read(fds[0], &c, 1) != 1)
        sink = 0;
}

static void *waiter(void *arg)
{
    (void)arg;
    wait_for_main();
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (pipe(fds) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    int paused = argc > 1 && strcmp(argv[1], "paused") == 0;
    for (int i = 0; i < 3; i++) {
        work();
        if (paused && i < 2)
            cgprof_collect(i == 1);
    }
    if (argc > 1 && !paused) {
        printf("offcpu: the waiter is left blocked\n");
        return 0;
    }
    if (write(fds[1], "x", 1) != 1)
        return 1;
    pthread_join(t, NULL);
    printf("offcpu: done\n");
    return 0;
}
