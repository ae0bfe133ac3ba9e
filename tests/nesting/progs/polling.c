/* Threads whose calls depend on timing, as a compressor's: workers produce
 * blocks and the main thread polls their progress through inlined helpers
 * that make real calls, so that two runs never make the same calls. Only
 * one run can be compared: the oracle passes each hook on to cgprof
 * (CGNEST_CHAIN=1). */
#include <pthread.h>
#include <stdio.h>

#define WORKERS 3
#define BLOCKS 400

static volatile int done[WORKERS];
volatile unsigned long sink;

__attribute__((noinline)) unsigned long mix(unsigned long x)
{
    for (int i = 0; i < 50; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

__attribute__((noinline)) int progress(int w)
{
    return __atomic_load_n(&done[w], __ATOMIC_ACQUIRE);
}

static int finished(int w)
{
    return progress(w) == BLOCKS;
}

static void block(int w, int b)
{
    sink += mix((unsigned long)(w * BLOCKS + b));
}

static void *worker(void *arg)
{
    int w = (int)(long)arg;
    for (int b = 0; b < BLOCKS; b++) {
        block(w, b);
        __atomic_store_n(&done[w], b + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[WORKERS];
    for (int w = 0; w < WORKERS; w++)
        pthread_create(&t[w], NULL, worker, (void *)(long)w);
    unsigned long polls = 0;
    for (int w = 0; w < WORKERS; w++)
        while (!finished(w))
            polls++;
    for (int w = 0; w < WORKERS; w++)
        pthread_join(t[w], NULL);
    printf("polling done\n");
    return polls == (unsigned long)-1;
}
