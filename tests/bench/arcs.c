/* Memory per thread (scripts/bench): THREADS threads each make the same
 * 1,000 distinct arcs (run() calls f000..f999, each from its own call site),
 * then wait while the main thread reads its resident set size.
 *
 *   arcs THREADS      prints "rss_kb N" with all threads alive */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

#define F(n) __attribute__((noinline)) static void f##n(void) { sink += 1; }
#define F10(p) F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)
#define F100(p) F10(p##0) F10(p##1) F10(p##2) F10(p##3) F10(p##4) F10(p##5) F10(p##6) F10(p##7) F10(p##8) F10(p##9)
F100(0) F100(1) F100(2) F100(3) F100(4) F100(5) F100(6) F100(7) F100(8) F100(9)

#define C(n) f##n();
#define C10(p) C(p##0) C(p##1) C(p##2) C(p##3) C(p##4) C(p##5) C(p##6) C(p##7) C(p##8) C(p##9)
#define C100(p) C10(p##0) C10(p##1) C10(p##2) C10(p##3) C10(p##4) C10(p##5) C10(p##6) C10(p##7) C10(p##8) C10(p##9)

__attribute__((noinline)) static void run(void)
{
    C100(0) C100(1) C100(2) C100(3) C100(4) C100(5) C100(6) C100(7) C100(8) C100(9)
}

static pthread_barrier_t ran, measured;

static void *worker(void *arg)
{
    (void)arg;
    run();
    pthread_barrier_wait(&ran);
    pthread_barrier_wait(&measured);
    return NULL;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100;
    pthread_t *tid = calloc(n, sizeof *tid);
    if (!tid || n == 0)
        return 2;
    pthread_barrier_init(&ran, NULL, n + 1);
    pthread_barrier_init(&measured, NULL, n + 1);
    for (unsigned i = 0; i < n; i++)
        if (pthread_create(&tid[i], NULL, worker, NULL)) {
            perror("pthread_create");
            return 1;
        }
    pthread_barrier_wait(&ran);
    printf("rss_kb %ld\n", rss_kb());
    fflush(stdout);
    pthread_barrier_wait(&measured);
    for (unsigned i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    return 0;
}
