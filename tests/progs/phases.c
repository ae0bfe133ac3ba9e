/* Deterministic work on three threads for about a second, for the sum rule:
 * the parts of each thread, however many dumps cut them, add up to the same
 * call counts as a run without dumps. Expected per run:
 *   main:     main -> tick 600, tick -> leaf 600*50
 *   worker 1: spin_a -> leaf 500*80    worker 2: spin_b -> leaf 400*90 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile unsigned long sink;

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
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, spin_a, NULL);
    pthread_create(&b, NULL, spin_b, NULL);
    for (int r = 0; r < 600; r++) {
        tick();
        usleep(1200);
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("phases: done\n");
    return 0;
}
