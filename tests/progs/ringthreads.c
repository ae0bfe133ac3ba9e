/* N threads that run at once (a barrier before and after their work), each
 * spinning in an instrumented function: with CGPROF_SAMPLE_TIMER=ring and
 * a locked-memory limit that holds fewer rings than threads, some threads
 * are refused a ring buffer and sampled with signals; each part's header
 * says which (issue 40). Prints "ringthreads: N threads". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 1024

static pthread_barrier_t barrier;
static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long spin(unsigned long n)
{
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++)
        x += i * i ^ (x >> 3);
    return x;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    sink += spin(20000000);
    pthread_barrier_wait(&barrier);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 8;
    if (n < 1 || n > MAX_THREADS)
        n = 8;
    static pthread_t t[MAX_THREADS];
    pthread_barrier_init(&barrier, NULL, (unsigned)n);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("ringthreads: %d threads\n", n);
    return 0;
}
