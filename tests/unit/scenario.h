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
 *      NULL), then check the files: assert_listing, and each part as a
 *      table, ASSERT_PART(pid, part, thread, { .trigger = ..., .calls =
 *      { { ROOT_FN, MAIN, 1, 20 } }, ... }) or ASSERT_TOTAL (struct
 *      expect_part says what each field checks); what a table cannot say,
 *      with read_part and profile_test.h's ASSERT_CALL and the like.
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


/* <dir>/cg.total.<pid> */
static PT_UNUSED const char *total_path(pid_t pid)
{
    static char path[700];
    snprintf(path, sizeof path, "%s/cg.total.%ld", dir, (long)pid);
    return path;
}

/* ---- a part as it should be, as a table ---------------------------------------------- */

#define ROOT_FN (ROOT_SITE - 1) /* ROOT's address, for the tables below */
#define ROOT_NAME "0x0000000000008fff" /* ROOT, for the tables of named calls */

/* The value of desc: Calls continued for n calls */
#define CONTINUED(n) #n " (started before this part and counted in an earlier one: calls=0, at the end behind #>)"

struct expect_call {
    uintptr_t caller, callee;
    uint64_t count, incl;
};

/* What a file must hold; a field left 0 or NULL is not checked, and each
 * list ends at its first empty row. A thing wrong fails at the line of
 * ASSERT_PART, with the values or the call or desc: line in question. */
/* A call between functions the file names by their symbols */
struct expect_named_call {
    const char *caller, *callee;
    uint64_t count, incl;
};

struct expect_part {
    unsigned part;
    const char *trigger;       /* its desc: Trigger */
    const char *descs[6][2];   /* key, value */
    const char *no_descs[4];   /* keys it has no desc: line of */
    struct expect_call calls[8]; /* with named_calls, all its calls, unless some_calls */
    struct expect_named_call named_calls[10];
    int some_calls;            /* it may have calls besides those (not checked) */
    uintptr_t no_calls[2][2];  /* caller, callee: no such call */
    struct { uintptr_t fn; uint64_t cost; } selfs[8];
    struct { const char *fn; uint64_t cost; } named_selfs[8];
    unsigned nfns;             /* its function blocks, the root's included */
    uint64_t summary;
};

#define CHECK_INT(a, b) _assert_int_equal(cast_to_largest_integral_type(a), cast_to_largest_integral_type(b), file, line)

static PT_UNUSED void assert_prof_at(const struct prof *p, const struct expect_part *e, const char *file, int line)
{
    if (e->part)
        CHECK_INT(p->part, e->part);
    const char *descs[7][2] = { { "Trigger", e->trigger } };
    memcpy(descs + 1, e->descs, sizeof e->descs);
    for (unsigned i = 0; i < 7; i++) {
        if (!descs[i][0] || !descs[i][1])
            continue;
        const char *d = prof_desc(p, descs[i][0]);
        if (!d) {
            print_error("no desc: %s\n", descs[i][0]);
            _fail(file, line);
        }
        _assert_string_equal(d, descs[i][1], file, line);
    }
    for (unsigned i = 0; i < 4 && e->no_descs[i]; i++)
        if (prof_desc(p, e->no_descs[i])) {
            print_error("desc: %s, which should not be there\n", e->no_descs[i]);
            _fail(file, line);
        }
    /* every call by its name (fname keeps only its last 8) */
    char names[8][2][24];
    struct expect_named_call calls[18];
    unsigned ncalls = 0;
    for (; ncalls < 8 && e->calls[ncalls].callee; ncalls++) {
        const struct expect_call *c = &e->calls[ncalls];
        snprintf(names[ncalls][0], sizeof names[0][0], "%s", fname(c->caller));
        snprintf(names[ncalls][1], sizeof names[0][1], "%s", fname(c->callee));
        calls[ncalls] = (struct expect_named_call){ names[ncalls][0], names[ncalls][1], c->count, c->incl };
    }
    for (unsigned i = 0; i < 10 && e->named_calls[i].callee; i++)
        calls[ncalls++] = e->named_calls[i];
    for (unsigned i = 0; i < ncalls; i++) {
        const struct expect_named_call *c = &calls[i];
        const struct prof_call *got = prof_call(p, c->caller, c->callee);
        if (!got) {
            print_error("no call %s -> %s\n", c->caller, c->callee);
            _fail(file, line);
        }
        CHECK_INT(got->count, c->count);
        CHECK_INT(got->incl, c->incl);
    }
    if (!e->some_calls)
        CHECK_INT(p->ncalls, ncalls);
    for (unsigned i = 0; i < 2 && e->no_calls[i][1]; i++)
        if (prof_call(p, fname(e->no_calls[i][0]), fname(e->no_calls[i][1]))) {
            print_error("a call %s -> %s, which should not be there\n", fname(e->no_calls[i][0]),
                        fname(e->no_calls[i][1]));
            _fail(file, line);
        }
    for (unsigned i = 0; i < 8 && e->selfs[i].fn; i++)
        CHECK_INT(prof_self(p, fname(e->selfs[i].fn)), e->selfs[i].cost);
    for (unsigned i = 0; i < 8 && e->named_selfs[i].fn; i++)
        CHECK_INT(prof_self(p, e->named_selfs[i].fn), e->named_selfs[i].cost);
    if (e->nfns)
        CHECK_INT(p->nfns, e->nfns);
    if (e->summary)
        CHECK_INT(p->summary, e->summary);
}

#undef CHECK_INT

/* The file of that part and thread (read_part) as e says. */
#define ASSERT_PART(pid, part, thread, ...)                                                                  \
    do {                                                                                                     \
        struct prof p_;                                                                                      \
        read_part((pid), (part), (thread), &p_);                                                             \
        assert_prof_at(&p_, &(const struct expect_part)__VA_ARGS__, __FILE__, __LINE__);                     \
    } while (0)

/* The total (<dir>/cg.total.<pid>, thread 0) as e says. */
#define ASSERT_TOTAL(pid, ...)                                                                               \
    do {                                                                                                     \
        struct prof p_;                                                                                      \
        prof_read(total_path(pid), &p_);                                                                     \
        assert_int_equal(p_.pid, (pid));                                                                     \
        assert_int_equal(p_.thread, 0);                                                                      \
        assert_prof_at(&p_, &(const struct expect_part)__VA_ARGS__, __FILE__, __LINE__);                     \
    } while (0)

#endif
