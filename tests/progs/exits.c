/* Ways a process ends that the hooks do not see as returns.
 *   exits deep       exit(3) from depth 20: the 20 calls in progress are
 *                    counted once each, with their cost up to the exit.
 *   exits lastthread main calls pthread_exit(); a worker, still running,
 *                    is the last thread and its exit ends the process.
 * Expected (deep): main -> descend 1, descend -> descend 19.
 * Expected (lastthread): 2 files; worker -> spin 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void descend(int level)
{
    if (level > 20)
        return;
    if (level == 20) {
        printf("exits: leaving from depth %d\n", level);
        fflush(stdout);
        exit(3);
    }
    descend(level + 1);
}

static volatile unsigned long spins;

static void spin(void)
{
    for (int i = 0; i < 2000; i++) {
        spins++;
        usleep(10);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    spin();
    printf("exits: last thread done after %lu spins\n", spins);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "deep";
    if (strcmp(mode, "deep") == 0) {
        descend(1);
    } else if (strcmp(mode, "lastthread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_exit(NULL);
    }
    fprintf(stderr, "usage: exits deep|lastthread\n");
    return 2;
}
