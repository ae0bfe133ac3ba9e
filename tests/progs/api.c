/* The control API of cgprof.h, with and without the runtime loaded.
 * Expected with the runtime (parts of thread 01):
 *   part 1 "phase one": main -> work_a 3; worker thread written at its exit
 *   (zeroed: work_b 2)
 *   part 2 "phase two": main -> work_c 4, main -> work_e 6 (work_d 5 paused)
 *   part 3 (exit):      main -> work_f 7
 * Without it every call returns -1 and the program runs the same. */
#include <pthread.h>
#include <stdio.h>

#include "cgprof.h"

static volatile unsigned long sink;

#define WORK(name)                                                                                           \
    static void name(void)                                                                                 \
    {                                                                                                      \
        for (int i = 0; i < 20000; i++)                                                                    \
            sink += (unsigned long)i;                                                                      \
    }
WORK(work_a)
WORK(work_b)
WORK(work_c)
WORK(work_d)
WORK(work_e)
WORK(work_f)
WORK(work_g)

static void repeat(void (*f)(void), int n)
{
    for (int i = 0; i < n; i++)
        f();
}

static void *worker(void *arg)
{
    (void)arg;
    cgprof_set_thread_name("api-worker");
    repeat(work_g, 8);
    return NULL;
}

int main(void)
{
    int loaded = cgprof_loaded();
    int name = cgprof_set_thread_name("api-main");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    repeat(work_a, 3);
    int dump1 = cgprof_dump("phase one");
    repeat(work_b, 2);
    int zero = cgprof_zero();
    repeat(work_c, 4);
    int off = cgprof_collect(false);
    repeat(work_d, 5);
    int on = cgprof_collect(true);
    repeat(work_e, 6);
    int dump2 = cgprof_dump("phase two");
    repeat(work_f, 7);
    printf("api: loaded=%d name=%d dump1=%d zero=%d off=%d on=%d dump2=%d\n", loaded, name, dump1, zero, off, on,
           dump2);
    return 0;
}
