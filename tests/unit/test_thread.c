/* Unit tests of thread.c: the registry of threads' states, as the entry
 * layer drives it (runtime.c registers the events, hooks.c attaches a
 * thread on its first hook, interpose.c's pthread_create numbers threads,
 * service.c marks its own thread internal, dump.c enters the runtime and
 * releases threads that ended, runtime.c's fork handler calls
 * cg_thread_forked). The entry layer is not linked: the test does the
 * minimum of runtime.c's initialisation itself, and registers events that
 * record what they were called with, in order, so that each event can be
 * checked exactly: which thread, its state's fields at that moment, and
 * on which thread the event ran.
 *
 * Threads are real pthreads ("workers") that do one script each (take a
 * number as the pthread_create wrapper hands it, name themselves before
 * or after their first hook, attach, fork...), then wait until the test
 * lets them end, so that the registry is checked while they live and their
 * end events after they are joined. No sleep: semaphores and joins.
 *
 * The thread layer is process-wide state: the tests run in the order
 * given in main(), and each leaves the registry as it found it (the main
 * thread's state only), releasing the states of the threads it ended. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "costs.h"
#include "reading.h"
#include "generalpath.h"
#include "options.h"
#include "proc.h"
#include "thread.h"

/* Synthetic functions and call sites (see costs_test.h). */
#define ROOT_SITE ((uintptr_t)0x7f0000009000u)
#define MAIN ((uintptr_t)0x1000)
#define F    ((uintptr_t)0x2000)
#define G    ((uintptr_t)0x3000)

/* ---- the events, recorded ------------------------------------------------------ */

enum { EV_ATTACHED = 1, EV_STOPPING, EV_ENDED, EV_GONE };

struct event {
    int kind;
    struct cg_thread *t; /* NULL for gone */
    pid_t tid;           /* the thread the event ran on */
    int finished;        /* t->finished then */
    uint64_t t_end;      /* t->t_end then */
    int self_is_t;       /* cg_self == t then */
};

#define MAX_EVENTS 256
static struct event events_log[MAX_EVENTS];
static unsigned nevents;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void record(int kind, struct cg_thread *t)
{
    pthread_mutex_lock(&log_lock);
    if (nevents < MAX_EVENTS) {
        struct event *e = &events_log[nevents];
        e->kind = kind;
        e->t = t;
        e->tid = gettid();
        e->finished = t ? __atomic_load_n(&t->finished, __ATOMIC_ACQUIRE) : -1;
        e->t_end = t ? t->t_end : 0;
        e->self_is_t = t && cg_self == t;
    }
    nevents++;
    pthread_mutex_unlock(&log_lock);
}

static void ev_attached(struct cg_thread *t) { record(EV_ATTACHED, t); }
static void ev_stopping(struct cg_thread *t) { record(EV_STOPPING, t); }
static void ev_ended(struct cg_thread *t) { record(EV_ENDED, t); }
static void ev_gone(void) { record(EV_GONE, NULL); }

static const struct cg_thread_events test_events = {
    .attached = ev_attached,
    .stopping = ev_stopping,
    .ended = ev_ended,
    .gone = ev_gone,
};

static unsigned events_now(void)
{
    pthread_mutex_lock(&log_lock);
    unsigned n = nevents;
    pthread_mutex_unlock(&log_lock);
    return n;
}

/* Event i is of this kind, for state t (NULL: gone), on thread tid. */
static const struct event *assert_event(unsigned i, int kind, struct cg_thread *t, pid_t tid)
{
    assert_true(i < events_now());
    const struct event *e = &events_log[i];
    assert_int_equal(e->kind, kind);
    assert_ptr_equal(e->t, t);
    assert_int_equal(e->tid, tid);
    return e;
}

/* ---- workers ------------------------------------------------------------------ */

struct worker {
    pthread_t th;
    /* the script */
    uint32_t number;         /* handed as the pthread_create wrapper does; 0: none */
    int watch;               /* cg_thread_watch_exit() first */
    int internal;            /* cg_thread_mark_internal() first */
    const char *name_before; /* cg_thread_set_name() before attaching */
    int attach;
    const char *name_after;  /* cg_thread_set_name() after */
    int watch_after;         /* cg_thread_watch_exit() after attaching */
    void (*body)(struct worker *); /* more, on the thread, before it is ready */
    uint64_t vclock_at_end;  /* with cg_sampling: the thread's clock when it ends */
    /* what it saw */
    pid_t tid;
    struct cg_thread *t, *self;
    int before_rc, after_rc;
    uint64_t clock_at_end; /* cg_clock_now() just before it returned */
    char msg[256];         /* a body's verdict */
    sem_t ready, go;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    w->tid = gettid();
    if (w->number)
        cg_thread_assign_number(w->number);
    if (w->watch)
        cg_thread_watch_exit();
    if (w->internal)
        cg_thread_mark_internal();
    if (w->name_before)
        w->before_rc = cg_thread_set_name(w->name_before);
    if (w->attach)
        w->t = cg_thread_attach();
    if (w->name_after)
        w->after_rc = cg_thread_set_name(w->name_after);
    if (w->watch_after)
        cg_thread_watch_exit();
    if (w->body)
        w->body(w);
    w->self = cg_self;
    sem_post(&w->ready);
    while (sem_wait(&w->go) != 0)
        ;
    if (w->t && cg_sampling)
        w->t->vclock = w->vclock_at_end;
    w->clock_at_end = cg_clock_now();
    return NULL;
}

/* Starts w and waits until it has done its script. */
static void start(struct worker *w)
{
    assert_int_equal(sem_init(&w->ready, 0, 0), 0);
    assert_int_equal(sem_init(&w->go, 0, 0), 0);
    assert_int_equal(pthread_create(&w->th, NULL, worker_main, w), 0);
    while (sem_wait(&w->ready) != 0)
        ;
}

/* Lets w end and joins it. */
static void finish(struct worker *w)
{
    sem_post(&w->go);
    assert_int_equal(pthread_join(w->th, NULL), 0);
    sem_destroy(&w->ready);
    sem_destroy(&w->go);
}

/* ---- the registry ---------------------------------------------------------------- */

static struct cg_thread *main_t; /* the main thread's state (test_main_thread) */

/* The registry is exactly these states, in this order (NULL-terminated). */
static void assert_list(struct cg_thread *first, ...)
{
    va_list ap;
    va_start(ap, first);
    struct cg_thread *p = cg_thread_list();
    for (struct cg_thread *want = first; want; want = va_arg(ap, struct cg_thread *)) {
        assert_ptr_equal(p, want);
        p = p->next;
    }
    va_end(ap);
    assert_null(p);
}

/* Whether the page at p is mapped (msync fails with ENOMEM when not). */
static int mapped(const void *p)
{
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
    return msync((void *)page, 4096, MS_ASYNC) == 0 || errno != ENOMEM;
}

/* Releases the states of threads that ended (the test's ended event, unlike
 * the runtime's, leaves them registered). */
static void release_ended(void)
{
    for (struct cg_thread *t = cg_thread_list(), *next; t; t = next) {
        next = t->next;
        if (t->finished)
            cg_thread_release(t);
    }
    assert_list(main_t, NULL);
}

/* ---- the main thread ----------------------------------------------------------- */

static void test_main_thread(void **state)
{
    (void)state;
    assert_null(cg_self);
    assert_null(cg_thread_list());
    /* named before its first hook: kept until it is set up */
    assert_int_equal(cg_thread_set_name("main\nthread"), 0);
    assert_null(cg_self);
    assert_null(cg_thread_list());
    unsigned ev0 = events_now();

    struct cg_thread *t = cg_thread_attach();
    assert_non_null(t);
    main_t = t;
    assert_ptr_equal(cg_self, t);
    assert_list(t, NULL);
    assert_int_equal(t->tid, getpid());
    assert_int_equal(t->number, 1);
    assert_string_equal(t->name, "main thread");
    assert_int_equal(t->finished, 0);
    assert_int_equal(t->guard, 0);
    assert_non_null(t->costs.frames);
    assert_int_equal(t->costs.depth, 0);
    assert_null(t->costs.vclock); /* not sampling: the clock */

    /* one attached event, on this thread */
    assert_int_equal(events_now(), ev0 + 1);
    assert_event(ev0, EV_ATTACHED, t, getpid());

    /* named again, after */
    assert_int_equal(cg_thread_set_name("renamed"), 0);
    assert_string_equal(t->name, "renamed");
}

/* ---- numbers ------------------------------------------------------------------- */

static void test_numbers(void **state)
{
    (void)state;
    assert_list(main_t, NULL);
    unsigned ev0 = events_now();
    /* created in the order A, B, as the pthread_create wrapper numbers
     * them (in the creating thread), but B makes its first hook first */
    struct worker a = { .attach = 1 }, b = { .attach = 1 }, c = { .attach = 1 }, d = { .attach = 1 };
    a.number = cg_thread_take_number();
    b.number = cg_thread_take_number();
    assert_int_equal(a.number, 2);
    assert_int_equal(b.number, 3);
    start(&b);
    start(&a);
    /* a thread not created through the wrapper (no number handed): the
     * next number when it attaches */
    start(&c);
    d.number = cg_thread_take_number();
    start(&d);

    assert_int_equal(a.t->number, 2);
    assert_int_equal(b.t->number, 3);
    assert_int_equal(c.t->number, 4);
    assert_int_equal(d.t->number, 5);
    /* newest first, in the order they attached */
    assert_list(d.t, c.t, a.t, b.t, main_t, NULL);
    struct worker *all[] = { &b, &a, &c, &d };
    for (unsigned i = 0; i < 4; i++) {
        struct worker *w = all[i];
        assert_ptr_equal(w->self, w->t);
        assert_int_equal(w->t->tid, w->tid);
        assert_string_equal(w->t->name, ""); /* no name: not another thread's */
        assert_int_equal(w->t->finished, 0);
        /* attached once each, on its own thread, in the order they attached */
        assert_event(ev0 + i, EV_ATTACHED, w->t, w->tid);
    }
    assert_int_equal(events_now(), ev0 + 4);

    for (unsigned i = 0; i < 4; i++)
        finish(all[i]);
    assert_int_equal(events_now(), ev0 + 4 + 4 * 3);
    release_ended();
}

/* ---- names --------------------------------------------------------------------- */

static void test_names(void **state)
{
    (void)state;
    char long_name[128], cut[64];
    /* "a\nb" then x's: 100 bytes */
    memset(long_name, 'x', 100);
    long_name[0] = 'a';
    long_name[1] = '\n';
    long_name[2] = 'b';
    long_name[100] = 0;
    memcpy(cut, "a b", 3);
    memset(cut + 3, 'x', 60);
    cut[63] = 0; /* 63 bytes kept */
    char exact[64];
    memset(exact, 'y', 63);
    exact[63] = 0;

    struct worker before = { .name_before = long_name, .attach = 1 };
    struct worker after = { .attach = 1, .name_after = long_name };
    struct worker both = { .name_before = "first", .attach = 1, .name_after = "se\ncond\n" };
    struct worker fits = { .name_before = exact, .attach = 1 };
    struct worker empty = { .name_before = "gone", .attach = 1, .name_after = "" };
    struct worker *all[] = { &before, &after, &both, &fits, &empty };
    for (unsigned i = 0; i < 5; i++)
        start(all[i]);

    assert_string_equal(before.t->name, cut);
    assert_string_equal(after.t->name, cut);
    assert_string_equal(both.t->name, "se cond ");
    assert_string_equal(fits.t->name, exact);
    assert_string_equal(empty.t->name, "");
    for (unsigned i = 0; i < 5; i++) {
        assert_int_equal(all[i]->before_rc, 0);
        assert_int_equal(all[i]->after_rc, 0);
    }
    /* the main thread's is its own */
    assert_string_equal(main_t->name, "renamed");

    for (unsigned i = 0; i < 5; i++)
        finish(all[i]);
    release_ended();
}

/* ---- a thread's end --------------------------------------------------------------- */

static void test_thread_end(void **state)
{
    (void)state;
    unsigned ev0 = events_now();

    /* attached: stopping, then ended, then gone, on the thread itself */
    struct worker w = { .attach = 1 };
    start(&w);
    assert_int_equal(events_now(), ev0 + 1);
    finish(&w);
    uint64_t after = cg_clock_now();
    assert_int_equal(events_now(), ev0 + 4);
    const struct event *e = assert_event(ev0 + 1, EV_STOPPING, w.t, w.tid);
    assert_int_equal(e->finished, 0);
    assert_int_equal(e->self_is_t, 0); /* its hooks no longer record */
    assert_true(e->t_end >= w.clock_at_end && e->t_end <= after); /* set before stopping */
    e = assert_event(ev0 + 2, EV_ENDED, w.t, w.tid);
    assert_int_equal(e->finished, 1);
    assert_int_equal(e->t_end, w.t->t_end);
    assert_int_equal(e->self_is_t, 0);
    assert_event(ev0 + 3, EV_GONE, NULL, w.tid);
    /* still registered (the runtime's ended releases it), finished */
    assert_list(w.t, main_t, NULL);
    assert_int_equal(w.t->finished, 1);
    release_ended();

    /* never attached, but watched: only gone */
    ev0 = events_now();
    struct worker watched = { .watch = 1 };
    start(&watched);
    assert_null(watched.self);
    finish(&watched);
    assert_int_equal(events_now(), ev0 + 1);
    assert_event(ev0, EV_GONE, NULL, watched.tid);
    assert_list(main_t, NULL);

    /* neither: nothing */
    ev0 = events_now();
    struct worker plain = { 0 };
    start(&plain);
    finish(&plain);
    assert_int_equal(events_now(), ev0);

    /* watched, then attached; attached, then watched: one end each */
    static const struct worker both[] = { { .watch = 1, .attach = 1 }, { .attach = 1, .watch_after = 1 } };
    for (unsigned i = 0; i < 2; i++) {
        struct worker one = both[i];
        unsigned e0 = ev0 + 4 * i;
        start(&one);
        finish(&one);
        assert_int_equal(events_now(), e0 + 4);
        assert_event(e0 + 0, EV_ATTACHED, one.t, one.tid);
        assert_event(e0 + 1, EV_STOPPING, one.t, one.tid);
        assert_event(e0 + 2, EV_ENDED, one.t, one.tid);
        assert_event(e0 + 3, EV_GONE, NULL, one.tid);
    }
    release_ended();

    /* with the sampled clock, the thread ends at its own clock's time */
    ev0 = events_now();
    cg_sampling = 1;
    struct worker s = { .attach = 1, .vclock_at_end = 123456789 };
    start(&s);
    assert_ptr_equal(s.t->costs.vclock, &s.t->vclock);
    finish(&s);
    cg_sampling = 0;
    assert_int_equal(events_now(), ev0 + 4);
    assert_int_equal(s.t->t_end, 123456789);
    e = assert_event(ev0 + 1, EV_STOPPING, s.t, s.tid);
    assert_int_equal(e->t_end, 123456789);
    e = assert_event(ev0 + 2, EV_ENDED, s.t, s.tid);
    assert_int_equal(e->finished, 1);
    release_ended();
}

/* ---- release -------------------------------------------------------------------- */

static void test_release(void **state)
{
    (void)state;
    struct worker w[3] = { { .attach = 1 }, { .attach = 1 }, { .attach = 1 } };
    for (unsigned i = 0; i < 3; i++)
        start(&w[i]);
    for (unsigned i = 0; i < 3; i++)
        finish(&w[i]);
    struct cg_thread *a = w[0].t, *b = w[1].t, *c = w[2].t;
    assert_list(c, b, a, main_t, NULL);
    const void *b_frames = b->costs.frames, *b_arcs = b->costs.arcs;
    assert_true(mapped(b) && mapped(b_frames) && mapped(b_arcs));

    /* from the middle: unlinked, its state and tables unmapped */
    cg_thread_release(b);
    assert_list(c, a, main_t, NULL);
    assert_false(mapped(b));
    assert_false(mapped(b_frames));
    assert_false(mapped(b_arcs));
    /* the head */
    const void *c_frames = c->costs.frames;
    cg_thread_release(c);
    assert_list(a, main_t, NULL);
    assert_false(mapped(c));
    assert_false(mapped(c_frames));
    /* the last one but the main thread */
    cg_thread_release(a);
    assert_list(main_t, NULL);
    assert_false(mapped(a));

    /* a state that is not registered is left alone (not freed) */
    struct cg_thread *stray = calloc(1, sizeof *stray);
    assert_non_null(stray);
    cg_thread_release(stray);
    assert_list(main_t, NULL);
    free(stray);
}

/* ---- internal threads ----------------------------------------------------------- */

static void internal_body(struct worker *w)
{
    struct cg_thread *s = cg_self;
    /* not attached and never will be: the hooks attach a thread only when
     * cg_self is NULL; this one is a sentinel whose guard never clears */
    if (!s || s == w->t || s->guard == 0 || s->costs.frames != NULL) {
        snprintf(w->msg, sizeof w->msg, "cg_self %p is not a sentinel", (void *)s);
        return;
    }
    /* a hook's general path on it does nothing */
    cg_general_hook(s, F, MAIN + 0x10, 0x1000, 0, 1);
    if (s->ndeferred != 0 || cg_self != s) {
        snprintf(w->msg, sizeof w->msg, "a hook changed the sentinel");
        return;
    }
    /* entering the runtime and leaving it gives it back */
    struct cg_thread *saved = cg_thread_enter_runtime();
    struct cg_thread *inside = cg_self;
    cg_thread_leave_runtime(saved);
    if (saved != s || !inside || inside->guard == 0 || cg_self != s) {
        snprintf(w->msg, sizeof w->msg, "enter/leave runtime: saved %p inside %p after %p", (void *)saved,
                 (void *)inside, (void *)cg_self);
        return;
    }
    snprintf(w->msg, sizeof w->msg, "ok");
}

static void test_internal(void **state)
{
    (void)state;
    unsigned ev0 = events_now();
    struct worker w = { .internal = 1, .name_before = "service", .body = internal_body };
    start(&w);
    assert_string_equal(w.msg, "ok");
    assert_int_equal(w.before_rc, -1); /* no name for a thread not profiled */
    assert_non_null(w.self);
    assert_list(main_t, NULL);
    finish(&w);
    assert_int_equal(events_now(), ev0);

    /* marked after watching its end: still seen gone, nothing more */
    struct worker v = { .watch = 1, .internal = 1, .name_after = "x" };
    start(&v);
    assert_int_equal(v.after_rc, -1);
    finish(&v);
    assert_int_equal(events_now(), ev0 + 1);
    assert_event(ev0, EV_GONE, NULL, v.tid);
    assert_list(main_t, NULL);
}

/* ---- inside the runtime ---------------------------------------------------------- */

static void unattached_runtime_body(struct worker *w)
{
    struct cg_thread *saved = cg_thread_enter_runtime();
    struct cg_thread *inside = cg_self;
    /* named while inside the runtime: kept for the first hook */
    int rc = cg_thread_set_name("named inside");
    cg_thread_leave_runtime(saved);
    if (saved != NULL || !inside || inside->guard == 0 || inside->costs.frames != NULL || rc != 0 ||
        cg_self != NULL) {
        snprintf(w->msg, sizeof w->msg, "saved %p inside %p (guard %d) rc %d after %p", (void *)saved,
                 (void *)inside, inside ? inside->guard : -1, rc, (void *)cg_self);
        return;
    }
    w->t = cg_thread_attach();
    snprintf(w->msg, sizeof w->msg, "ok");
}

static void test_runtime_guard(void **state)
{
    (void)state;
    /* an attached thread: its own guard says so */
    struct cg_thread *t = main_t;
    assert_ptr_equal(cg_self, t);
    struct cg_thread *saved = cg_thread_enter_runtime();
    assert_ptr_equal(saved, t);
    assert_ptr_equal(cg_self, t);
    assert_int_equal(t->guard, CG_GUARD_RUNTIME);
    /* a hook meanwhile (the runtime's own calls) is ignored, not deferred */
    uint32_t depth = t->costs.depth;
    cg_general_hook(t, F, MAIN + 0x10, 0x1000, 0, 1);
    assert_int_equal(t->ndeferred, 0);
    assert_int_equal(t->costs.depth, depth);
    cg_thread_leave_runtime(saved);
    assert_ptr_equal(cg_self, t);
    assert_int_equal(t->guard, 0);

    /* a thread not attached: a sentinel meanwhile, then not attached again */
    struct worker w = { .body = unattached_runtime_body };
    start(&w);
    assert_string_equal(w.msg, "ok");
    assert_non_null(w.t);
    assert_string_equal(w.t->name, "named inside");
    finish(&w);
    release_ended();
}

/* ---- fork ------------------------------------------------------------------------ */

static uint8_t fake_stack[1 << 16];
#define STACK_TOP ((uintptr_t)(fake_stack + sizeof fake_stack - 256))

/* A real call (costs_test.h's enter): the callee's return address on the
 * stack. */
static void enter(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uint64_t now)
{
    *(uintptr_t *)(sp + sizeof(uintptr_t)) = site;
    cg_costs_enter(c, fn, site, sp, fn + 4, now);
}

static int find_arc(const struct cg_costs *c, uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    for (uint32_t i = 1; i < c->narcs; i++)
        if (c->arcs[i].caller == caller && c->arcs[i].site == site && c->arcs[i].callee == callee)
            return (int)i;
    return -1;
}

/* In the child: the first check that fails is written to fd, the child
 * exits 1; "ok" and 0 when all pass. */
#define CHILD_CHECK(cond)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            dprintf(fd, "line %d: %s", __LINE__, #cond);                                                     \
            _exit(1);                                                                                        \
        }                                                                                                    \
    } while (0)

/* The child of a thread whose state is t (NULL: not attached), whose tid
 * in the parent was old_tid. */
static void child_checks(int fd, struct cg_thread *t, pid_t old_tid)
{
    if (t) {
        /* sampled clock in the child only: the frames restart at an exact
         * time */
        cg_sampling = 1;
        t->vclock = 5000;
    }
    cg_thread_forked();
    CHILD_CHECK(cg_self == t);
    if (!t) {
        CHILD_CHECK(cg_thread_list() == NULL);
        dprintf(fd, "ok");
        _exit(0);
    }
    /* only the forking thread; its tid the child's */
    CHILD_CHECK(cg_thread_list() == t);
    CHILD_CHECK(t->next == NULL);
    CHILD_CHECK(t->tid == getpid());
    CHILD_CHECK(t->tid != old_tid);
    /* its shadow stack kept, restarting now; its tables zeroed, entries kept */
    struct cg_costs *c = &t->costs;
    CHILD_CHECK(c->depth == 2);
    CHILD_CHECK(c->frames[0].fn == MAIN && c->frames[1].fn == G);
    for (uint32_t i = 0; i < 2; i++)
        CHILD_CHECK(c->frames[i].t_enter == 5000 && c->frames[i].t_last == 5000);
    CHILD_CHECK(c->narcs == 4); /* sink, root->MAIN, MAIN->F, MAIN->G */
    for (uint32_t i = 0; i < c->narcs; i++)
        CHILD_CHECK(c->arcs[i].count == 0 && c->arcs[i].incl == 0 && c->arcs[i].runs == 0);
    for (uint32_t i = 0; i < c->nselfs; i++)
        CHILD_CHECK(c->selfs[i].cost == 0);
    CHILD_CHECK(c->lost == 0 && c->unmatched_exits == 0 && c->left == 0 && c->jumped == 0);
    CHILD_CHECK(t->dumper.paused.count == NULL);
    int g = find_arc(c, MAIN, MAIN + 0x20, G), m = find_arc(c, 0, ROOT_SITE, MAIN);
    int f = find_arc(c, MAIN, MAIN + 0x10, F);
    CHILD_CHECK(g > 0 && m > 0 && f > 0);
    /* the calls in progress were the parent's: taken as reported already
     * (the base), one call each and no time */
    CHILD_CHECK(t->dumper.base.count != NULL && t->dumper.base.narcs == c->narcs && t->dumper.base.depth == 2);
    CHILD_CHECK(t->dumper.base.count[g] == 1 && t->dumper.base.count[m] == 1 && t->dumper.base.count[f] == 0);
    CHILD_CHECK(t->dumper.base.incl[g] == 0 && t->dumper.base.incl[m] == 0);
    /* its returns are real: G, then MAIN end in the child's counts */
    cg_costs_exit(c, G, 5100);
    cg_costs_exit(c, MAIN, 5300);
    CHILD_CHECK(c->arcs[g].count == 1 && c->arcs[g].incl == 100);
    CHILD_CHECK(c->arcs[m].count == 1 && c->arcs[m].incl == 300);
    CHILD_CHECK(c->arcs[f].count == 0);
    /* the child's part: their time from the fork, no call */
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    CHILD_CHECK(cg_reading_take(c, 5300, &cur) == 0);
    CHILD_CHECK(cur.count[g] - t->dumper.base.count[g] == 0 && cur.incl[g] - t->dumper.base.incl[g] == 100);
    CHILD_CHECK(cur.count[m] - t->dumper.base.count[m] == 0 && cur.incl[m] - t->dumper.base.incl[m] == 300);
    cg_reading_free(&cur);
    dprintf(fd, "ok");
    _exit(0);
}

/* Forks from the calling thread (state t, or NULL), checks in the child;
 * the child's verdict into msg. */
static void fork_and_check(struct cg_thread *t, char *msg, size_t size)
{
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(msg, size, "pipe: %s", strerror(errno));
        return;
    }
    pid_t old_tid = gettid();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_checks(fds[1], t, old_tid);
        _exit(2);
    }
    close(fds[1]);
    ssize_t n = pid < 0 ? -1 : read(fds[0], msg, size - 1);
    close(fds[0]);
    msg[n > 0 ? n : 0] = 0;
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(msg + strlen(msg), size - strlen(msg), " (child status %#x)", status);
}

/* MAIN from the root, F called and returned, G running: 2 frames. */
static void some_calls(struct cg_thread *t)
{
    struct cg_costs *c = &t->costs;
    enter(c, MAIN, ROOT_SITE, STACK_TOP, 0);
    enter(c, F, MAIN + 0x10, STACK_TOP - 64, 10);
    cg_costs_exit(c, F, 30);
    enter(c, G, MAIN + 0x20, STACK_TOP - 64, 40);
}

static void fork_body(struct worker *w)
{
    some_calls(w->t);
    fork_and_check(w->t, w->msg, sizeof w->msg);
}

static void fork_unattached_body(struct worker *w)
{
    fork_and_check(NULL, w->msg, sizeof w->msg);
}

static void test_fork(void **state)
{
    (void)state;
    /* from a thread that is not the main thread, while others live */
    struct worker other = { .attach = 1 };
    start(&other);
    struct worker w = { .attach = 1, .body = fork_body };
    start(&w);
    assert_string_equal(w.msg, "ok");
    /* the parent's registry and tables as they were */
    assert_list(w.t, other.t, main_t, NULL);
    assert_int_equal(w.t->costs.depth, 2);
    assert_int_equal(w.t->tid, w.tid);
    int f = find_arc(&w.t->costs, MAIN, MAIN + 0x10, F);
    assert_true(f > 0);
    assert_int_equal(w.t->costs.arcs[f].count, 1);
    assert_int_equal(w.t->costs.arcs[f].incl, 20);
    assert_int_equal(cg_sampling, 0);

    /* from a thread with no state: the child has none */
    struct worker u = { .body = fork_unattached_body };
    start(&u);
    assert_string_equal(u.msg, "ok");

    finish(&w);
    finish(&other);
    finish(&u);
    release_ended();

    /* from the main thread */
    some_calls(main_t);
    char msg[256];
    fork_and_check(main_t, msg, sizeof msg);
    assert_string_equal(msg, "ok");
    assert_list(main_t, NULL);
}

static void report(void *ctx, const char *msg, const char *why)
{
    (void)ctx;
    (void)why;
    fprintf(stderr, "option: %s\n", msg);
}

int main(void)
{
    /* runtime.c's initialisation, the minimum of it */
    static char out[] = "CGPROF_OUT=/nonexistent/cg";
    char *env[] = { out, NULL };
    if (cg_options_parse(&cg_opts, env, NULL, report, NULL) != 0)
        return 1;
    cg_proc_read_identity();
    if (cg_thread_init(&test_events) != 0)
        return 1;
    cg_collecting = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_main_thread),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_thread_end),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_internal),
        cmocka_unit_test(test_runtime_guard),
        cmocka_unit_test(test_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
