/* Deterministic work on three threads for about a second, for the sum rule:
 * the parts of each thread, however many dumps cut them, add up to the same
 * call counts as a run without dumps. Expected per run:
 *   main:     main -> tick 600, tick -> leaf 600*50
 *   worker 1: spin_a -> leaf 500*80    worker 2: spin_b -> leaf 400*90
 * "phases wait": the same calls; then each thread, its work done, waits
 * until stdin ends (uninstrumented: no call added), so that a dump asked
 * for after the work still finds all three threads, however slow the
 * machine. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;
static int wait_mode;
static pthread_barrier_t the_end;

/* In wait mode: a worker waits here for main, which waits for the end of
 * stdin first. */
static void work_done(int is_main) __attribute__((no_instrument_function));
static void work_done(int is_main)
{
    if (!wait_mode)
        return;
    if (is_main) {
        char buf[64];
        ssize_t n;
        while ((n = read(0, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            ;
    }
    pthread_barrier_wait(&the_end);
}

static void leaf(int i)
{
    sink += (unsigned long)i;
}

static void tick(void)
{
    for (int i = 0; i < 50; i++)
        leaf(i);
}

static void *spin_a(void *arg)
{
    (void)arg;
    for (int r = 0; r < 500; r++) {
        for (int i = 0; i < 80; i++)
            leaf(i);
        usleep(1500);
    }
    work_done(0);
    return NULL;
}

static void *spin_b(void *arg)
{
    (void)arg;
    for (int r = 0; r < 400; r++) {
        for (int i = 0; i < 90; i++)
            leaf(i);
        usleep(1900);
    }
    work_done(0);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t a, b;
    wait_mode = argc > 1 && strcmp(argv[1], "wait") == 0;
    if (wait_mode)
        pthread_barrier_init(&the_end, NULL, 3);
    pthread_create(&a, NULL, spin_a, NULL);
    pthread_create(&b, NULL, spin_b, NULL);
    for (int r = 0; r < 600; r++) {
        tick();
        usleep(1200);
    }
    work_done(1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("phases: done\n");
    return 0;
}
