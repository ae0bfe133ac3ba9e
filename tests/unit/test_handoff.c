/* The runtime's lock-free hand-offs between threads, under load: threads
 * that register themselves (thread.c's registry, a CAS on its head), fill
 * and grow their tables (an entry published by the count that follows it;
 * an outgrown array kept while a dump may read it: cg_readers) and end
 * (their last part written and their state freed by the dumper's lock),
 * while another thread dumps every live thread's part again and again.
 *
 * What must hold: every call counted exactly once over all the parts of all
 * the threads (the parts add up: docs/cgprof-control.md, "Dumps of running threads"), and
 * nothing read after it was freed. scripts/tsan runs this test again in a
 * ThreadSanitizer build (the reads that are races by the letter of C11 and
 * harmless by design are marked CG_RACY_READ in the runtime). In that
 * build, where a thread can stop anywhere for milliseconds, this test found
 * a call counted twice: a dump that read a call's count after its exit
 * had stored it, and its frame before the exit had taken it off the stack
 * (cg_costs_pop now does the second first).
 *
 * The threads keep their call paths (CGPROF_PATHS): the path files' calls
 * must add up the same, the nodes grown and read under the same rules; and
 * their latency histograms (CGPROF_LATENCY): the calls they hold, over all
 * the parts, the same again (a part's histogram holds the calls that ended
 * in it, its count those that began: they differ by the calls running at
 * its dump, never in the sum), the rows grown with the arcs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "dump.h"
#include "filter.h"
#include "generalpath.h"
#include "options.h"
#include "proc.h"
#include "thread.h"
#include "util.h"

#define WORKERS 3
#define ITER 20000
#define CALLEES 3000 /* distinct arcs per thread: the tables grow past 1024 */
#define ROOT ((uintptr_t)0x400000)
#define FN(i) ((uintptr_t)0x500000 + (uintptr_t)(i) * 0x100)

static char dir[256];
static int workers_done; /* workers that made all their calls */
static unsigned dumps_done;
#define STRIDE 500 /* a worker's calls between two dumps it waits for */

static void on_attached(struct cg_thread *t)
{
    cg_filter_attach(&t->costs);
}

static void on_stopping(struct cg_thread *t)
{
    (void)t;
}

static void on_gone(void)
{
}

static const struct cg_thread_events events = {
    .attached = on_attached,
    .stopping = on_stopping,
    .ended = cg_dump_thread_exit,
    .gone = on_gone,
};

/* A worker: one root call, under it ITER calls over CALLEES callees, made
 * through the hooks' general path on a stack of its own. */
static void *worker(void *arg)
{
    uintptr_t stack_top = (uintptr_t)arg;
    struct cg_thread *t = cg_thread_attach();
    if (!t)
        return (void *)1;
    uintptr_t sp0 = stack_top - 64, sp1 = stack_top - 256;
    *(uintptr_t *)(sp0 + sizeof(uintptr_t)) = 0x7f0000001000u;
    cg_general_hook(t, ROOT, 0x7f0000001000u, sp0, ROOT + 8, 1);
    for (unsigned i = 0; i < ITER; i++) {
        /* Every STRIDE calls, wait for the next dump: dumps fall in the
         * middle of every thread's run however fast the machine is, while
         * its tables grow (the first CALLEES calls) and after. */
        if (i % STRIDE == 0)
            while (__atomic_load_n(&dumps_done, __ATOMIC_ACQUIRE) < i / STRIDE)
                sched_yield();
        uintptr_t fn = FN(i % CALLEES), site = ROOT + 0x40 + 0x10 * (i % 4);
        *(uintptr_t *)(sp1 + sizeof(uintptr_t)) = site;
        cg_general_hook(t, fn, site, sp1, fn + 8, 1);
        cg_general_hook(t, fn, site, sp1, fn + 0x20, 0);
    }
    cg_general_hook(t, ROOT, 0x7f0000001000u, sp0, ROOT + 0x30, 0);
    __atomic_fetch_add(&workers_done, 1, __ATOMIC_ACQ_REL);
    return NULL;
}

/* The sum of every "calls=N" line of the parts in dir (the total, which
 * sums them again, aside), and of the calls of the path files' nodes
 * ("node id parent fn calls incl self") into *paths. */
static unsigned long long calls_written(unsigned *nfiles, unsigned long long *paths, unsigned long long *ended)
{
    unsigned long long sum = 0;
    *nfiles = 0;
    *paths = 0;
    *ended = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strstr(e->d_name, ".total."))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            unsigned long long id, parent, fn, calls;
            if (strncmp(line, "calls=", 6) == 0)
                sum += strtoull(line + 6, NULL, 10);
            else if (sscanf(line, "node %llu %llu %llu %llu", &id, &parent, &fn, &calls) == 4)
                *paths += calls;
            else if (sscanf(line, "#lat: (%llu) %llu", &fn, &calls) == 2)
                *ended += calls;
        }
        fclose(f);
        (*nfiles)++;
    }
    closedir(d);
    return sum;
}

static void test_parts_add_up_under_load(void **state)
{
    (void)state;
    static char out[300];
    snprintf(out, sizeof out, "CGPROF_OUT=%s/h", dir);
    char *env[] = { out, NULL };
    cg_options_parse(&cg_opts, env, NULL, NULL, NULL);
    /* the exact clock and no throttle, not the defaults (sampled time,
     * CGPROF_THROTTLE=10000:1000): the hooks' general path without a
     * filter on the arcs, as the test was written for */
    cg_opts.time = CG_TIME_EXACT;
    cg_opts.throttle = (struct cg_threshold){ 0, 0 };
    const char *why;
    cg_clock_init(CG_CLOCK_MONOTONIC, &why);
    cg_filter_init();
    cg_proc_read_identity();
    assert_int_equal(cg_thread_init(&events), 0);
    cg_collecting = 1;
    cg_paths_bound = 1u << 18;
    cg_latency = 1;

    static char stacks[WORKERS][16384];
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, stacks[i] + sizeof stacks[i]), 0);
    /* dumps while they run, each worker waiting for them (below) */
    unsigned dumps = 0;
    while (__atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) < WORKERS) {
        assert_int_equal(cg_dump_now("stress"), 0);
        dumps++;
        __atomic_store_n(&dumps_done, dumps, __ATOMIC_RELEASE);
    }
    for (int i = 0; i < WORKERS; i++) {
        void *rc;
        assert_int_equal(pthread_join(th[i], &rc), 0);
        assert_null(rc);
    }
    cg_dump_final("end");
    unsigned nfiles;
    unsigned long long paths, ended, calls = calls_written(&nfiles, &paths, &ended);
    printf("%u dumps, %u files, %llu calls, %llu in the paths, %llu in the histograms\n", dumps, nfiles, calls,
           paths, ended);
    assert_true(dumps >= ITER / STRIDE);
    /* each worker's root call and its ITER calls, each once */
    assert_int_equal(calls, (unsigned long long)WORKERS * (ITER + 1));
    assert_int_equal(paths, (unsigned long long)WORKERS * (ITER + 1));
    assert_int_equal(ended, (unsigned long long)WORKERS * (ITER + 1));
    /* every thread's state was freed by its exit */
    assert_null(cg_thread_list());
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cgprof-handoff-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_add_up_under_load),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    /* CGPROF_HANDOFF_KEEP=1: the files stay, to be read */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("CGPROF_HANDOFF_KEEP") && system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
