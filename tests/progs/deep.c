/* Recursion N frames deep (default 1,000,000), run on a thread with a stack
 * large enough for it. Expected: worker -> recurse 1, recurse -> recurse N-1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long depth_reached;

static long recurse(long n, long level)
{
    if (level > depth_reached)
        depth_reached = level;
    if (n <= 1)
        return 1;
    return recurse(n - 1, level + 1) + 1;
}

static void *worker(void *arg)
{
    long n = *(long *)arg;
    static long result;
    result = recurse(n, 1);
    return &result;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* about 100 bytes a frame at -O0 with the hooks' calls: 1 GiB is ample,
     * and only the pages touched are ever backed */
    pthread_attr_setstacksize(&attr, (size_t)1 << 30);
    pthread_t t;
    if (pthread_create(&t, &attr, worker, &n) != 0) {
        perror("pthread_create");
        return 1;
    }
    void *res;
    pthread_join(t, &res);
    printf("deep: depth %ld result %ld\n", depth_reached, *(long *)res);
    return 0;
}
