/* Thread scenarios as tables, for the tests that drive the runtime's real
 * thread layer in a child process (test_dump.c, test_total.c, test_crash.c,
 * test_filter.c): the synthetic addresses they share, one driver that plays
 * a table of events on a thread, workers whose tables the main thread plays
 * a step at a time, and the names of a scenario's output directory.
 *
 * How to add a scenario:
 *   1. Write each thread's events as a table, one designated initialiser an
 *      event (every event but .name, .pause and .wake sets the thread's
 *      clock to .t first):
 *        static const struct ev my_main[] = {
 *            { .enter = MAIN, .site = ROOT_SITE, .t = 0 },   MAIN called
 *            { .enter = F, .site = MAIN + 0x10, .t = 5 },
 *            { .exit = F, .t = 9 },                          F returns
 *            { .t = 20, .dump = DUMPS, .why = "one" },       cg_dump_now("one") == 0
 *            { .wake = 1 },                                  worker 1's next step
 *            { .t = 30 },                                    the clock alone
 *        };
 *      A worker's table may start with { .name = "worker" } (its name),
 *      and { .pause = 1 } ends one of its steps; { .end = 1, .t = 20 } ends
 *      the thread as thread.c's key destructor ends it (sim_end).
 *   2. In the scenario function (it runs in the child: profile_test.h),
 *      runtime_init the environment, sim_attach the main thread, start the
 *      workers (worker_start(w_table); they are numbered 1, 2... in the
 *      order started, their thread numbers 2, 3...), then
 *      SIM_RUN(&s, my_main), and end with cg_dump_final or _exit(0). What
 *      the tables cannot say (planting files, REQUIRE on the registry)
 *      goes between two SIM_RUN calls.
 *   3. In the test, set_dir("name") first (CGPROF_OUT=<dir>/cg.out in
 *      out_env, stderr to err_path), run_child(scenario, arg, err_path or
 *      NULL), then read the files back: assert_listing, read_part or
 *      prof_read, and profile_test.h's ASSERT_CALL, ASSERT_SELF,
 *      ASSERT_DESC.
 *
 * How to add a writer case (test_writer.c, which needs no thread): its
 * functions as struct fn_def, then a struct wcase of designated
 * initialisers (the symbols, the snapshot's arcs and self costs, the file
 * expected to the byte) and WCASE(name) in its main; its section "cases
 * as tables" says what each field means.
 *
 * Addresses: the main thread runs MAIN, F, G, H; the other threads WMAIN,
 * WA, WB; every thread's first function is called from ROOT_SITE, which the
 * files show as a function named by the call instruction's address
 * (ROOT_SITE - 1: nothing is mapped there), ROOT. A call site is its
 * caller's address plus an offset (MAIN + 0x10). */
#ifndef CG_SCENARIO_H
#define CG_SCENARIO_H

#include "profile_test.h"

#include <pthread.h>
#include <semaphore.h>

#define ROOT_SITE ((uintptr_t)0x9000)
#define MAIN ((uintptr_t)0x1000)
#define F ((uintptr_t)0x2000)
#define G ((uintptr_t)0x3000)
#define H ((uintptr_t)0x4000)
#define WMAIN ((uintptr_t)0x5000)
#define WA ((uintptr_t)0x6000)
#define WB ((uintptr_t)0x7000)
#define ROOT fname(ROOT_SITE - 1)

/* ---- events ---------------------------------------------------------------------- */

enum { DUMPS = 1, DUMP_FAILS = 2 };

/* One thing a thread does; the first field set says which. */
struct ev {
    const char *name;  /* cg_thread_set_name(name), which must succeed */
    int pause;         /* a worker's step ends here */
    unsigned wake;     /* worker `wake` (from 1) runs its next step */
    uintptr_t enter;   /* enter called at t from site */
    uintptr_t site;
    uintptr_t exit;    /* exit returns at t */
    int end;           /* the thread ends at t */
    int dump;          /* at t, cg_dump_now(why) returns 0 (DUMPS) or -1 (DUMP_FAILS) */
    const char *why;
    uint64_t t;        /* the thread's clock (ns); alone: only set it */
};

#define SIM_RUN(s, table) sim_run((s), (table), sizeof(table) / sizeof((table)[0]))

struct worker;
static PT_UNUSED struct worker *scene_worker(unsigned n);
static PT_UNUSED void worker_step(struct worker *w);

/* Plays ev[0..n) on the thread of s up to a pause; returns how many it
 * played, the pause included. */
static PT_UNUSED size_t sim_run(struct sim *s, const struct ev *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct ev *e = &ev[i];
        if (e->name)
            REQUIRE(cg_thread_set_name(e->name) == 0);
        else if (e->pause)
            return i + 1;
        else if (e->wake)
            worker_step(scene_worker(e->wake));
        else if (e->enter)
            sim_call(s, e->enter, e->site, e->t);
        else if (e->exit)
            sim_ret(s, e->exit, e->t);
        else if (e->end)
            sim_end(s, e->t);
        else {
            sim_at(s, e->t);
            if (e->dump)
                REQUIRE(cg_dump_now(e->why) == (e->dump == DUMPS ? 0 : -1));
        }
    }
    return n;
}

/* ---- workers: threads whose steps the main thread runs one at a time -------------- */

/* The worker attaches itself (its thread number is given in order of
 * attachment) and plays its table up to the first pause before
 * worker_start returns; each worker_step plays it up to the next. It
 * exits when worker_join asks or when its table ended the thread. */
struct worker {
    struct sim s;
    sem_t go, done;
    int leave;
    const struct ev *ev;
    size_t n, next;
    pthread_t th;
    struct cg_thread *t; /* its state, kept to check the registry */
};

static struct worker *scene_workers[8];
static unsigned scene_nworkers;

static PT_UNUSED struct worker *scene_worker(unsigned n)
{
    REQUIRE(n >= 1 && n <= scene_nworkers);
    return scene_workers[n - 1];
}

static PT_UNUSED void *worker_main(void *arg)
{
    struct worker *w = arg;
    sim_attach(&w->s);
    w->t = w->s.t;
    for (;;) {
        while (sem_wait(&w->go) != 0)
            ;
        /* read before done is posted: the main thread may set leave then */
        int leave = w->leave;
        if (!leave)
            w->next += sim_run(&w->s, w->ev + w->next, w->n - w->next);
        int ended = !w->s.t;
        sem_post(&w->done);
        if (leave || ended)
            return NULL; /* asked to, or ended by its table */
    }
}

static PT_UNUSED void worker_step(struct worker *w)
{
    sem_post(&w->go);
    while (sem_wait(&w->done) != 0)
        ;
}

#define worker_start(table) worker_start_n((table), sizeof(table) / sizeof((table)[0]))

/* Starts the worker and plays its first step. */
static PT_UNUSED struct worker *worker_start_n(const struct ev *ev, size_t n)
{
    struct worker *w = calloc(1, sizeof *w);
    REQUIRE(w != NULL && scene_nworkers < sizeof scene_workers / sizeof scene_workers[0]);
    w->ev = ev;
    w->n = n;
    REQUIRE(sem_init(&w->go, 0, 0) == 0 && sem_init(&w->done, 0, 0) == 0);
    REQUIRE(pthread_create(&w->th, NULL, worker_main, w) == 0);
    scene_workers[scene_nworkers++] = w;
    worker_step(w);
    return w;
}

/* Lets the thread function return (the thread exits: its key destructor
 * runs) and joins it. */
static PT_UNUSED void worker_join(struct worker *w)
{
    if (w->s.t) {
        w->leave = 1;
        worker_step(w);
    }
    REQUIRE(pthread_join(w->th, NULL) == 0);
}

/* ---- where a scenario's files go ------------------------------------------------------ */

static char dir[512];      /* the test's output directory */
static char out_env[640];  /* CGPROF_OUT=<dir>/cg.out */
static char err_path[600]; /* <tmpdir>/<name>.err, for run_child's stderr */

static PT_UNUSED void set_dir(const char *name)
{
    subdir(name, dir, sizeof dir);
    snprintf(out_env, sizeof out_env, "CGPROF_OUT=%s/cg.out", dir);
    snprintf(err_path, sizeof err_path, "%s/%s.err", tmpdir, name);
}

static PT_UNUSED void assert_listing(const char *expected)
{
    char got[4096];
    dir_listing(dir, got, sizeof got);
    assert_string_equal(got, expected);
}

static PT_UNUSED void assert_stderr(const char *expected)
{
    char *err = read_text(err_path);
    assert_non_null(err);
    assert_string_equal(err, expected);
    free(err);
}

/* <dir>/cg.out.<pid>.<part>-<NN>, or without ".<part>" when part is 0 */
static PT_UNUSED const char *part_path(pid_t pid, unsigned part, unsigned thread)
{
    static char paths[4][700];
    static unsigned next;
    char *p = paths[next++ % 4];
    if (part)
        snprintf(p, sizeof paths[0], "%s/cg.out.%ld.%u-%02u", dir, (long)pid, part, thread);
    else
        snprintf(p, sizeof paths[0], "%s/cg.out.%ld-%02u", dir, (long)pid, thread);
    return p;
}

/* The file of that part and thread, read and checked to say so. */
static PT_UNUSED void read_part(pid_t pid, unsigned part, unsigned thread, struct prof *p)
{
    prof_read(part_path(pid, part, thread), p);
    assert_int_equal(p->pid, pid);
    assert_int_equal(p->thread, thread);
}

#endif
