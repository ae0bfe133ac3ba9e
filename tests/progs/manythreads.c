/* Threads created and joined one after another: each ends, its part is
 * written and its memory released, so the process's memory stays flat.
 * Prints the resident size after the first 1,000 threads and at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

static void step(int i)
{
    sink += (unsigned long)i;
}

static void *body(void *arg)
{
    for (int i = 0; i < 10; i++)
        step(i);
    return arg;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    long at1000 = -1;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, body, NULL) != 0)
            return 1;
        pthread_join(t, NULL);
        if (i + 1 == 1000)
            at1000 = rss_kb();
    }
    printf("manythreads: %d threads, rss after 1000: %ld kB, at the end: %ld kB\n", n, at1000, rss_kb());
    return 0;
}
