/* Unit tests of the sums of parts (total.c): the run's total
 * (CGPROF_TOTAL), the merge of the threads that ended
 * (CGPROF_THREAD_EXIT=merge), and the repairs counted over the run for the
 * warning at its end.
 *
 * Why: the total is what callgrind_annotate users read for the whole
 * program, and docs/cgprof-control.md promises that its counts are exactly the sums of the
 * parts; the warning is the only place a user learns that a profile holds
 * repairs. Most tests hand total.c parts made here (snapshots with known
 * entries) and read back the file it writes; the last ones let the dumps
 * (dump.c) make the parts and check the total against the sum of the part
 * files as written. Each scenario runs in a child process of its own
 * (profile_test.h): the sums are once per process.
 *
 * Addresses are synthetic, as in test_dump.c, and the threads of a run are
 * tables of events (scenario.h says how to add one). */
#include "scenario.h"

#include "naming.h"
#include "part.h"
#include "total.h"

/* ---- parts made by hand -------------------------------------------------------- */

struct arc_spec {
    uintptr_t caller, site, callee;
    uint64_t count, incl;
};

struct self_spec {
    uintptr_t fn, addr;
    uint64_t cost;
};

struct part_spec {
    struct arc_spec arcs[8];
    struct self_spec selfs[8];
    uint32_t depth;
    uint64_t left, unmatched, lost;
};

/* A part as cg_reading_part makes one (malloc'd arrays: total.c may take
 * them). */
static struct cg_snapshot make_part(const struct part_spec *spec)
{
    struct cg_snapshot s;
    memset(&s, 0, sizeof s);
    s.arcs = calloc(8, sizeof *s.arcs);
    s.selfs = calloc(8, sizeof *s.selfs);
    REQUIRE(s.arcs && s.selfs);
    for (size_t i = 0; i < 8 && spec->arcs[i].callee; i++) {
        const struct arc_spec *a = &spec->arcs[i];
        s.arcs[s.narcs++] = (struct cg_snap_arc){ .caller = a->caller, .site = a->site, .callee = a->callee,
                                                  .call_pc = a->site - 1, .count = a->count, .incl = a->incl,
                                                  .runs = a->count ? 1 : 0 };
        s.continued += a->count == 0;
    }
    for (size_t i = 0; i < 8 && spec->selfs[i].fn; i++)
        s.selfs[s.nselfs++] = (struct cg_snap_self){ .fn = spec->selfs[i].fn, .addr = spec->selfs[i].addr,
                                                     .cost = spec->selfs[i].cost };
    s.depth = spec->depth;
    s.left = spec->left;
    s.unmatched_exits = spec->unmatched;
    s.lost = spec->lost;
    return s;
}

/* Thread 1's first part: MAIN and G running (40 ns). */
static const struct part_spec P1 = {
    .arcs = { { 0, ROOT_SITE, MAIN, 1, 40 }, { MAIN, MAIN + 0x10, F, 1, 15 }, { MAIN, MAIN + 0x20, G, 1, 10 } },
    .selfs = { { MAIN, MAIN, 10 }, { MAIN, MAIN + 0x10, 5 }, { F, F, 15 }, { G, G, 10 } },
    .depth = 2,
};

/* Its second part: MAIN and G continued, H and F called (40 ns). */
static const struct part_spec P2 = {
    .arcs = { { 0, ROOT_SITE, MAIN, 0, 40 }, { MAIN, MAIN + 0x20, G, 0, 15 }, { G, G + 0x08, H, 1, 5 },
              { MAIN, MAIN + 0x10, F, 1, 10 } },
    .selfs = { { G, G, 5 }, { G, G + 0x08, 5 }, { H, H, 5 }, { MAIN, MAIN + 0x20, 5 }, { MAIN, MAIN + 0x10, 10 },
               { F, F, 10 } },
    .depth = 1,
};

/* The last part of thread 2, which ended with WMAIN and WB running (20 ns). */
static const struct part_spec P3 = {
    .arcs = { { 0, ROOT_SITE, WMAIN, 1, 20 }, { WMAIN, WMAIN + 0x10, WA, 1, 4 }, { WMAIN, WMAIN + 0x20, WB, 1, 10 } },
    .selfs = { { WMAIN, WMAIN, 5 }, { WMAIN, WMAIN + 0x10, 1 }, { WA, WA, 4 }, { WB, WB, 10 } },
    .depth = 2,
};

/* The last part of thread 3, whose WMAIN started in an earlier part (12 ns). */
static const struct part_spec P4 = {
    .arcs = { { 0, ROOT_SITE, WMAIN, 0, 12 }, { WMAIN, WMAIN + 0x10, WA, 2, 7 } },
    .selfs = { { WMAIN, WMAIN + 0x10, 5 }, { WA, WA, 7 } },
};

static void add(const struct part_spec *spec, int finished)
{
    struct cg_snapshot s = make_part(spec);
    cg_total_add(&s, finished);
    cg_snapshot_free(&s);
}

/* The runtime with out_env and the extra variables given. */
static void init_with(const char *a, const char *b)
{
    const char *env[] = { out_env, a, b, NULL };
    runtime_init(env);
}

/* ---- the total's name -------------------------------------------------------------- */

/* cg_name_total, a function of its arguments: the last ".out" of the file
 * name becomes ".total", else "total." goes before the pid; absolute
 * against the start-up directory. */
static void test_total_names(void **state)
{
    (void)state;
    static const struct {
        const char *out, *cwd, *total;
    } cases[] = {
        { "callgrind.out", "/work", "/work/callgrind.total.4242" },
        { "/tmp/x/myapp.out", "/work", "/tmp/x/myapp.total.4242" },
        { "/tmp/prof", "/work", "/tmp/prof.total.4242" },
        { "prof-%p.cg", "/work", "/work/prof-total.4242.cg" },
        { "/a.out/b.out.c", "", "/a.out/b.total.c.4242" },
        { "rel", "", "rel.total.4242" },
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct cg_names n = { cases[i].out, 4242, cases[i].cwd };
        char got[256];
        assert_int_equal(cg_name_total(&n, got, sizeof got), 0);
        assert_string_equal(got, cases[i].total);
    }
    struct cg_names n = { "/tmp/prof", 4242, "" };
    char small[16];
    assert_int_equal(cg_name_total(&n, small, sizeof small), -1);
}

/* ---- the sums ----------------------------------------------------------------------- */

static void sums_scenario(void *arg)
{
    (void)arg;
    init_with("CGPROF_TOTAL=1", NULL);
    add(&P1, 0);
    add(&P2, 0);
    add(&P3, 1);
    const struct cg_snapshot *t = cg_total_snapshot();
    REQUIRE(t->narcs == 7 && t->nselfs == 11);
    /* one thread still running, with one call in progress */
    struct cg_dump d;
    cg_part_begin(&d, "Program termination", 3, 1, 0);
    cg_total_write(&d, 1, 1);
    REQUIRE(cg_part_end(&d) == 0);
    /* the file is where cg_name_total says */
    struct cg_names names = { cg_opts.out, getpid(), cg_proc_cwd() };
    char path[700], expected[700];
    REQUIRE(cg_name_total(&names, path, sizeof path) == 0);
    snprintf(expected, sizeof expected, "%s/cg.total.%ld", dir, (long)getpid());
    REQUIRE(strcmp(path, expected) == 0);
    REQUIRE(strcmp(cg_part_files(), expected) == 0);
}

static void test_total_is_the_exact_sum_of_the_parts(void **state)
{
    (void)state;
    set_dir("sums");
    pid_t pid = run_child(sums_scenario, NULL, NULL);
    char expected[128];
    snprintf(expected, sizeof expected, "cg.total.%ld", (long)pid);
    assert_listing(expected);
    /* threads: the one that ended and the one running; parts: all added;
     * in progress: 2 when thread 2 ended, 1 in the running thread; a call
     * running across parts is counted once: no calls=0 left */
    ASSERT_TOTAL(pid, { .part = 3, .trigger = "Program termination",
                        .descs = { { "Thread name", "total of 2 threads, 3 parts summed (CGPROF_TOTAL)" },
                                   { "Calls in progress", "3 (counted up to the dump)" } },
                        .no_descs = { "Calls continued" },
                        .calls = { { ROOT_FN, MAIN, 1, 80 }, { MAIN, F, 2, 25 }, { MAIN, G, 1, 25 }, { G, H, 1, 5 },
                                   { ROOT_FN, WMAIN, 1, 20 }, { WMAIN, WA, 1, 4 }, { WMAIN, WB, 1, 10 } },
                        .selfs = { { MAIN, 30 }, { F, 25 }, { G, 20 }, { H, 5 }, { WMAIN, 6 }, { WA, 4 }, { WB, 10 } },
                        .summary = 100 });
}

/* CGPROF_TOTAL=0: nothing summed, nothing written; CGPROF_TOTAL unset: the
 * default, 1, writes it. */
static void off_scenario(void *arg)
{
    const char *value = arg;
    init_with(value, NULL);
    add(&P1, 0);
    add(&P3, 1);
    REQUIRE((cg_total_snapshot()->narcs == 0) == (cg_opts.total == 0));
    struct cg_dump d;
    cg_part_begin(&d, "Program termination", 1, 0, 0);
    cg_total_write(&d, 1, 2);
    REQUIRE(cg_part_end(&d) == 0);
}

static void test_total_off_writes_nothing(void **state)
{
    (void)state;
    set_dir("off");
    run_child(off_scenario, (void *)"CGPROF_TOTAL=0", err_path);
    assert_listing("");
    assert_stderr("");
    set_dir("default");
    pid_t pid = run_child(off_scenario, NULL, err_path);
    char expected[128];
    snprintf(expected, sizeof expected, "cg.total.%ld", (long)pid);
    assert_listing(expected);
    ASSERT_TOTAL(pid, { .part = 1,
                        .descs = { { "Thread name", "total of 2 threads, 2 parts summed (CGPROF_TOTAL)" },
                                   { "Calls in progress", "4 (counted up to the dump)" } },
                        .calls = { { ROOT_FN, MAIN, 1, 40 }, { ROOT_FN, WMAIN, 1, 20 } }, .some_calls = 1,
                        .summary = 60 });
}

/* ---- the warning about repairs -------------------------------------------------------- */

struct repairs {
    const char *var;                  /* an extra variable, or NULL */
    uint64_t left[2], unmatched[2], lost[2]; /* in two parts */
};

static void repairs_scenario(void *arg)
{
    const struct repairs *r = arg;
    init_with(r->var, NULL);
    for (int i = 0; i < 2; i++) {
        struct part_spec spec = P1;
        spec.left = r->left[i];
        spec.unmatched = r->unmatched[i];
        spec.lost = r->lost[i];
        add(&spec, 0);
    }
    cg_total_warn_repairs();
}

static void warn_case(const char *name, const struct repairs *r, const char *expected)
{
    char d[64];
    snprintf(d, sizeof d, "warn-%s", name);
    set_dir(d);
    run_child(repairs_scenario, (void *)r, err_path);
    assert_stderr(expected);
}

static void test_repair_warning(void **state)
{
    (void)state;
    static const struct repairs clean = { NULL, { 0, 0 }, { 0, 0 }, { 0, 0 } };
    warn_case("clean", &clean, "");
    static const struct repairs all = { NULL, { 2, 1 }, { 1, 0 }, { 0, 2 } };
    warn_case("all", &all,
              "cgprof: warning: the profile holds repairs: 3 frames found left without exit (each counted as "
              "ending when found: calls made meanwhile may be shown under it), 1 exit that matched no frame "
              "(dropped), 2 calls not recorded (counts that much too low); see its desc: lines and docs/internals/design.md, "
              "\"Repairs\"\n");
    static const struct repairs other = { NULL, { 1, 0 }, { 1, 1 }, { 0, 1 } };
    warn_case("plural", &other,
              "cgprof: warning: the profile holds repairs: 1 frame found left without exit (each counted as "
              "ending when found: calls made meanwhile may be shown under it), 2 exits that matched no frame "
              "(dropped), 1 call not recorded (counts that much too low); see its desc: lines and docs/internals/design.md, "
              "\"Repairs\"\n");
    static const struct repairs lost = { NULL, { 0, 0 }, { 0, 0 }, { 0, 5 } };
    warn_case("lost", &lost,
              "cgprof: warning: the profile holds repairs: 5 calls not recorded (counts that much too low); see its "
              "desc: lines and docs/internals/design.md, \"Repairs\"\n");
    /* counted whatever CGPROF_TOTAL says */
    static const struct repairs nototal = { "CGPROF_TOTAL=0", { 0, 0 }, { 0, 1 }, { 0, 0 } };
    warn_case("nototal", &nototal,
              "cgprof: warning: the profile holds repairs: 1 exit that matched no frame (dropped); see its desc: "
              "lines and docs/internals/design.md, \"Repairs\"\n");
    static const struct repairs off = { "CGPROF_REPAIR_WARNING=0", { 2, 1 }, { 1, 0 }, { 0, 2 } };
    warn_case("off", &off, "");
}

/* The repairs as the total's desc: lines say them. */
static void repairs_desc_scenario(void *arg)
{
    (void)arg;
    init_with(NULL, NULL);
    struct part_spec spec = P1;
    spec.left = 2;
    spec.unmatched = 1;
    add(&spec, 0);
    spec = P2;
    spec.left = 1;
    spec.lost = 2;
    add(&spec, 0);
    struct cg_dump d;
    cg_part_begin(&d, "Program termination", 3, 1, 0);
    cg_total_write(&d, 1, 1);
}

static void test_total_says_the_repairs(void **state)
{
    (void)state;
    set_dir("repairs-desc");
    pid_t pid = run_child(repairs_desc_scenario, NULL, NULL);
    ASSERT_TOTAL(pid, { .descs = { { "Frames left without exit",
                                     "3 (repaired: found gone by a later hook, counted as ending then)" },
                                   { "Unmatched exits", "1 (dropped)" },
                                   { "Lost", "2 calls not recorded (out of memory, signal handlers nested too deep, "
                                             "or hooks left by a signal handler's siglongjmp)" },
                                   { "Calls in progress", "1 (counted up to the dump)" } },
                        .some_calls = 1 });
}

/* ---- fork ----------------------------------------------------------------------------- */

/* A forked child forgets the parent's sums (total, repairs, threads that
 * ended) and counts from the fork. */
static void forked_scenario(void *arg)
{
    (void)arg;
    init_with(NULL, NULL);
    struct part_spec spec = P1;
    spec.left = 4;
    add(&spec, 0);
    add(&P3, 1);
    struct cg_snapshot ended = make_part(&P3);
    REQUIRE(cg_ended_add(&ended) == 0);
    cg_snapshot_free(&ended);
    cg_total_forked();
    REQUIRE(cg_total_snapshot()->narcs == 0 && cg_ended_snapshot()->narcs == 0);
    struct cg_dump d;
    cg_part_begin(&d, "Program termination", 1, 1, 0);
    cg_total_write(&d, 1, 0); /* nothing added since: no total */
    cg_ended_write(&d);       /* nothing ended since: no thread 00 */
    cg_total_warn_repairs();  /* the parent's repairs are the parent's */
    REQUIRE(cg_part_end(&d) == 0);
    add(&P2, 0);
    cg_part_begin(&d, "Program termination", 2, 1, 0);
    cg_total_write(&d, 1, 1);
    REQUIRE(cg_part_end(&d) == 0);
}

static void test_total_forked_forgets(void **state)
{
    (void)state;
    set_dir("forked");
    pid_t pid = run_child(forked_scenario, NULL, err_path);
    assert_stderr("");
    char expected[128];
    snprintf(expected, sizeof expected, "cg.total.%ld", (long)pid);
    assert_listing(expected);
    ASSERT_TOTAL(pid, { .part = 2,
                        .descs = { { "Thread name", "total of 1 thread, 1 part summed (CGPROF_TOTAL)" },
                                   { "Calls in progress", "1 (counted up to the dump)" },
                                   { "Calls continued", CONTINUED(2) } },
                        .calls = { { ROOT_FN, MAIN, 0, 40 }, { MAIN, G, 0, 15 }, { G, H, 1, 5 }, { MAIN, F, 1, 10 } },
                        .no_calls = { { ROOT_FN, WMAIN } },
                        .summary = 40 });
}

/* ---- the merge of threads that ended ------------------------------------------------------ */

static void ended_scenario(void *arg)
{
    (void)arg;
    init_with("CGPROF_THREAD_EXIT=merge", "CGPROF_TOTAL=0");
    struct cg_snapshot a = make_part(&P3), b = make_part(&P4);
    REQUIRE(cg_ended_add(&a) == 0);
    REQUIRE(cg_ended_add(&b) == 0);
    REQUIRE(a.narcs == 3 && b.narcs == 2); /* copied, not taken */
    REQUIRE(cg_ended_snapshot()->narcs == 3);
    struct cg_dump d;
    cg_part_begin(&d, "Client request: one", 1, 1, 0);
    cg_ended_write(&d);
    REQUIRE(cg_part_end(&d) == 0);
    REQUIRE(cg_ended_snapshot()->narcs == 0 && cg_ended_snapshot()->nselfs == 0);
    /* the merge starts again: thread 3's part alone */
    REQUIRE(cg_ended_add(&b) == 0);
    cg_part_begin(&d, "Client request: two", 2, 1, 0);
    cg_ended_write(&d);
    REQUIRE(cg_part_end(&d) == 0);
    /* nothing ended since */
    cg_part_begin(&d, "Client request: three", 3, 1, 0);
    cg_ended_write(&d);
    REQUIRE(cg_part_end(&d) == 0);
    REQUIRE(strcmp(cg_part_files(), "") == 0);
    cg_snapshot_free(&a);
    cg_snapshot_free(&b);
}

static void test_ended_threads_merged(void **state)
{
    (void)state;
    set_dir("ended");
    pid_t pid = run_child(ended_scenario, NULL, NULL);
    char expected[128];
    snprintf(expected, sizeof expected, "cg.out.%ld.1-00 cg.out.%ld.2-00", (long)pid, (long)pid);
    assert_listing(expected);
    ASSERT_PART(pid, 1, 0, { .part = 1, .trigger = "Client request: one",
                             .descs = { { "Thread name", "2 threads that ended, merged (CGPROF_THREAD_EXIT=merge)" } },
                             .no_descs = { "Calls in progress", "Calls continued" },
                             .calls = { { ROOT_FN, WMAIN, 1, 32 }, { WMAIN, WA, 3, 11 }, { WMAIN, WB, 1, 10 } },
                             .selfs = { { WMAIN, 11 }, { WA, 11 }, { WB, 10 } },
                             .summary = 32 });
    ASSERT_PART(pid, 2, 0, { .part = 2, .trigger = "Client request: two",
                             .descs = { { "Thread name", "1 threads that ended, merged (CGPROF_THREAD_EXIT=merge)" },
                                        { "Calls continued", CONTINUED(1) } },
                             .calls = { { ROOT_FN, WMAIN, 0, 12 }, { WMAIN, WA, 2, 7 } } });
}

/* ---- the total of a run, against its part files ---------------------------------------------- */

/* A thread that ends with WB running */
static const struct ev ending_thread[] = {
    { .enter = WMAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = WA, .site = WMAIN + 0x10, .t = 1 }, { .exit = WA, .t = 3 },
    { .enter = WB, .site = WMAIN + 0x20, .t = 4 },
    { .end = 1, .t = 9 },
};

/* main: dump 1 at 20, then thread 2 runs and ends; dump 2 at 40; the exit
 * dump at 60 (MAIN and F running) */
static const struct ev run_before[] = {
    { .enter = MAIN, .site = ROOT_SITE, .t = 0 },
    { .enter = F, .site = MAIN + 0x10, .t = 5 }, { .exit = F, .t = 9 },
    { .enter = G, .site = MAIN + 0x20, .t = 10 },
    { .t = 20, .dump = DUMPS, .why = "one" },
};

static const struct ev run_after[] = {
    { .exit = G, .t = 25 },
    { .enter = F, .site = MAIN + 0x10, .t = 30 },
    { .t = 40, .dump = DUMPS, .why = "two" },
    { .exit = F, .t = 45 },
    { .enter = F, .site = MAIN + 0x10, .t = 50 },
    { .t = 60 },
};

static void run_scenario(void *arg)
{
    init_with(arg, NULL);
    struct sim s;
    sim_attach(&s);
    SIM_RUN(&s, run_before);
    worker_join(worker_start(ending_thread));
    SIM_RUN(&s, run_after);
    cg_dump_final("Program termination");
}

/* Every part file of the run in dir summed, call by call and function by
 * function, against the total file. */
static void check_total_against_parts(pid_t pid, unsigned nparts)
{
    char listing[4096], total_name[64];
    dir_listing(dir, listing, sizeof listing);
    snprintf(total_name, sizeof total_name, "cg.total.%ld", (long)pid);
    static struct prof sum, p;
    memset(&sum, 0, sizeof sum);
    unsigned files = 0;
    for (char *save = NULL, *name = strtok_r(listing, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
        if (strcmp(name, total_name) == 0)
            continue;
        char path[700];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        prof_read(path, &p);
        files++;
        for (unsigned i = 0; i < p.ncalls; i++) {
            struct prof_call *c = prof_call_get(&sum, p.calls[i].caller, p.calls[i].callee);
            c->count += p.calls[i].count;
            c->incl += p.calls[i].incl;
        }
        for (unsigned i = 0; i < p.nfns; i++)
            prof_fn_get(&sum, p.fns[i].name)->self += p.fns[i].self;
        sum.summary += p.summary;
    }
    assert_int_equal(files, nparts);
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, total_name);
    prof_read(path, &p);
    assert_int_equal(p.ncalls, sum.ncalls);
    for (unsigned i = 0; i < sum.ncalls; i++)
        ASSERT_CALL(&p, sum.calls[i].caller, sum.calls[i].callee, sum.calls[i].count, sum.calls[i].incl);
    assert_int_equal(p.nfns, sum.nfns);
    for (unsigned i = 0; i < sum.nfns; i++)
        ASSERT_SELF(&p, sum.fns[i].name, sum.fns[i].self);
    assert_int_equal(p.summary, sum.summary);
}

/* WMAIN and WB in progress when thread 2 ended, MAIN and F at exit */
static void check_run_total(pid_t pid)
{
    ASSERT_TOTAL(pid, { .part = 3, .trigger = "Program termination",
                        .descs = { { "Thread name", "total of 2 threads, 4 parts summed (CGPROF_TOTAL)" },
                                   { "Calls in progress", "4 (counted up to the dump)" } },
                        .no_descs = { "Calls continued" },
                        .calls = { { ROOT_FN, MAIN, 1, 60 }, { MAIN, F, 3, 29 }, { MAIN, G, 1, 15 },
                                   { ROOT_FN, WMAIN, 1, 9 }, { WMAIN, WA, 1, 2 }, { WMAIN, WB, 1, 5 } },
                        .some_calls = 1,
                        .summary = 69 });
}

static void test_run_total_is_the_sum_of_its_part_files(void **state)
{
    (void)state;
    set_dir("run");
    pid_t pid = run_child(run_scenario, NULL, NULL);
    /* parts 1, 2 and 3 of thread 1, thread 2's last part */
    check_total_against_parts(pid, 4);
    check_run_total(pid);
}

/* CGPROF_THREAD_EXIT=merge: the part of the thread that ended is in the
 * total once, not again with thread 00. */
static void test_run_total_with_merge(void **state)
{
    (void)state;
    set_dir("run-merge");
    pid_t pid = run_child(run_scenario, (void *)"CGPROF_THREAD_EXIT=merge", NULL);
    char expected[512];
    snprintf(expected, sizeof expected, "cg.out.%ld.1-01 cg.out.%ld.2-00 cg.out.%ld.2-01 cg.out.%ld.3-01 cg.total.%ld",
             (long)pid, (long)pid, (long)pid, (long)pid, (long)pid);
    assert_listing(expected);
    check_total_against_parts(pid, 4);
    check_run_total(pid);
}

/* A repair made by the tables reaches the warning at the end of the run
 * (dump.c's exit dump): an exit with no frame. */
static const struct ev unmatched_main[] = {
    { .exit = F, .t = 1 },
    { .enter = MAIN, .site = ROOT_SITE, .t = 2 }, { .exit = MAIN, .t = 3 },
};

static void unmatched_scenario(void *arg)
{
    (void)arg;
    init_with(NULL, NULL);
    struct sim s;
    sim_attach(&s);
    SIM_RUN(&s, unmatched_main);
    cg_dump_final("Program termination");
}

static void test_run_repairs_warned_at_exit(void **state)
{
    (void)state;
    set_dir("run-unmatched");
    pid_t pid = run_child(unmatched_scenario, NULL, err_path);
    assert_stderr("cgprof: warning: the profile holds repairs: 1 exit that matched no frame (dropped); see its "
                  "desc: lines and docs/internals/design.md, \"Repairs\"\n");
    ASSERT_PART(pid, 0, 1, { .descs = { { "Unmatched exits", "1 (dropped)" } },
                             .calls = { { ROOT_FN, MAIN, 1, 1 } }, .some_calls = 1 });
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_total_names),
        cmocka_unit_test(test_total_is_the_exact_sum_of_the_parts),
        cmocka_unit_test(test_total_off_writes_nothing),
        cmocka_unit_test(test_repair_warning),
        cmocka_unit_test(test_total_says_the_repairs),
        cmocka_unit_test(test_total_forked_forgets),
        cmocka_unit_test(test_ended_threads_merged),
        cmocka_unit_test(test_run_total_is_the_sum_of_its_part_files),
        cmocka_unit_test(test_run_total_with_merge),
        cmocka_unit_test(test_run_repairs_warned_at_exit),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
