/* Unit tests of the filters (filter.c): CGPROF_SKIP, CGPROF_SKIP_OBJECT,
 * CGPROF_SKIP_FILE and CGPROF_THROTTLE, from the environment to the
 * profile.
 *
 * Why: a filter resolves names to addresses once, from the symbol tables
 * and line tables of the objects that call the hooks, and the tables then
 * leave those functions out as costs.h says (their callees shown as called
 * by the nearest kept caller, at its call site; their time that caller's
 * self time). test_costs.c checks the tables with a skip set made by hand;
 * here the set comes from real patterns matched against this test's own
 * functions (the cgft_* below: noinline, with bodies of their own), and
 * the profile written is read back with exact counts and nanoseconds.
 *
 * filter.c reads only objects that import __cyg_profile_func_enter (code
 * built with -finstrument-functions does): this test is not instrumented,
 * so it refers to glibc's (cgft_hook_ref), which makes it such an object.
 * The functions of "vendor/helpers.c" are at the end of this file, under a
 * #line directive that gives them that source file in the debug
 * information (for CGPROF_SKIP_FILE).
 *
 * The times are synthetic (see profile_test.h); the functions are real, the
 * call sites are addresses inside the callers, the threads' first function
 * is called from ROOT_SITE (nothing mapped there). Each scenario runs in a
 * child process: the filters are set up once per process. */
#include "scenario.h"

#include "symbols.h"

/* ---- the functions the patterns match --------------------------------------- */

void __cyg_profile_func_enter(void *fn, void *site);
void (*volatile cgft_hook_ref)(void *, void *) = __cyg_profile_func_enter;

volatile unsigned cgft_sink;

/* Bodies of some size (the call sites below are inside them), each its
 * own (no two folded into one). */
#define BODY(k)                                                                                              \
    do {                                                                                                     \
        for (unsigned i_ = 0; i_ < cgft_sink % 7 + (k); i_++)                                               \
            cgft_sink = cgft_sink * (31 + (k)) + i_ * (k) + 0x1234 * (k);                                    \
    } while (0)

#define DEFINE(name, k)                                                                                      \
    __attribute__((noinline)) void name(void);                                                               \
    __attribute__((noinline)) void name(void)                                                                \
    {                                                                                                        \
        BODY(k);                                                                                             \
        BODY((k) + 100);                                                                                     \
    }

DEFINE(cgft_main, 1)
DEFINE(cgft_work, 2)
DEFINE(cgft_helper, 3)
DEFINE(cgft_helper2, 4)
DEFINE(cgft_leaf, 5)
DEFINE(cgft_log_a, 6)
DEFINE(cgft_log_b, 7)
DEFINE(cgft_tiny, 8)
DEFINE(cgft_long, 9)

/* in vendor/helpers.c, at the end of this file */
void cgft_vendor_a(void);
void cgft_vendor_b(void);

#define A(fn) ((uintptr_t)(fn))
/* a call site: a return address inside the caller */
#define AT(fn, off) (A(fn) + (off))
#define SYNTH ((uintptr_t)0x1000) /* a function in no object */

static void read_profile(pid_t pid, struct prof *p)
{
    prof_read(part_path(pid, 0, 1), p);
}

/* In the child: the runtime with these variables (and no total), the
 * calling thread attached; the tables are the filters' (or not). */
static void start(struct sim *s, const char *a, const char *b)
{
    const char *env[] = { out_env, "CGPROF_TOTAL=0", a, b, NULL };
    runtime_init(env);
    sim_attach(s);
}

/* ---- CGPROF_SKIP ----------------------------------------------------------------- */

/*   t=0  main
 *   t=10   work                       (main+0x20)
 *   t=12     helper       [skipped]   (work+0x20)
 *   t=15       leaf                   (helper+0x20): work -> leaf at work+0x20
 *   t=20       leaf returns
 *   t=24     helper returns
 *   t=25     leaf                     (work+0x30)
 *   t=27     leaf returns
 *   t=30   work returns
 *   t=32   log_a          [skipped]   (main+0x30)
 *   t=35     helper2      [skipped]   (log_a+0x20)
 *   t=36       leaf                   (helper2+0x20): main -> leaf at main+0x30
 *   t=38       leaf returns
 *   t=39     helper2 returns
 *   t=40   log_a returns
 *   t=45   log_b          [skipped]   (main+0x40)
 *   t=47   log_b returns
 *   t=50 main returns */
static void run_skip_sequence(struct sim *s, uintptr_t main_fn)
{
    const struct ev seq[] = {
        { .enter = main_fn, .site = ROOT_SITE, .t = 0 },
        { .enter = A(cgft_work), .site = AT(main_fn, 0x20), .t = 10 },
        { .enter = A(cgft_helper), .site = AT(cgft_work, 0x20), .t = 12 },
        { .enter = A(cgft_leaf), .site = AT(cgft_helper, 0x20), .t = 15 }, { .exit = A(cgft_leaf), .t = 20 },
        { .exit = A(cgft_helper), .t = 24 },
        { .enter = A(cgft_leaf), .site = AT(cgft_work, 0x30), .t = 25 }, { .exit = A(cgft_leaf), .t = 27 },
        { .exit = A(cgft_work), .t = 30 },
        { .enter = A(cgft_log_a), .site = AT(main_fn, 0x30), .t = 32 },
        { .enter = A(cgft_helper2), .site = AT(cgft_log_a, 0x20), .t = 35 },
        { .enter = A(cgft_leaf), .site = AT(cgft_helper2, 0x20), .t = 36 }, { .exit = A(cgft_leaf), .t = 38 },
        { .exit = A(cgft_helper2), .t = 39 },
        { .exit = A(cgft_log_a), .t = 40 },
        { .enter = A(cgft_log_b), .site = AT(main_fn, 0x40), .t = 45 }, { .exit = A(cgft_log_b), .t = 47 },
        { .exit = main_fn, .t = 50 },
    };
    SIM_RUN(s, seq);
}

static void skip_scenario(void *arg)
{
    struct sim s;
    start(&s, arg, NULL);
    REQUIRE(s.t->costs.filter != NULL);
    run_skip_sequence(&s, A(cgft_main));
    sim_at(&s, 60);
    cg_dump_final("Program termination");
}

static void test_skip_by_name(void **state)
{
    (void)state;
    set_dir("skip");
    pid_t pid = run_child(skip_scenario, (void *)"CGPROF_SKIP=cgft_helper*,cgft_log_?", err_path);
    assert_stderr("");
    /* work -> leaf through helper (5 ns) and directly (2 ns): two arcs, at
     * helper's call site and at its own (the file shows both at work's
     * start: no call instruction ends at these synthetic sites); main ->
     * leaf through log_a and helper2. helper's own 7 ns are work's; log_a's,
     * helper2's and log_b's 8 ns main's. The functions: main, work, leaf
     * and the root's caller */
    ASSERT_PART(pid, 0, 1, { .descs = { { "Skipped", "4 functions (CGPROF_SKIP=cgft_helper*,cgft_log_?): not shown; "
                                                     "their time is their callers' own, their calls are shown as "
                                                     "made by their callers" } },
                             .no_descs = { "Throttled" },
                             .named_calls = { { ROOT_NAME, "cgft_main", 1, 50 }, { "cgft_main", "cgft_work", 1, 20 },
                                              { "cgft_work", "cgft_leaf", 2, 7 }, { "cgft_main", "cgft_leaf", 1, 2 } },
                             .named_selfs = { { "cgft_work", 13 }, { "cgft_main", 28 }, { "cgft_leaf", 9 } },
                             .nfns = 4,
                             .summary = 50 });
}

/* The same sequence without a filter: everything counted. */
static void test_no_skip_counts_everything(void **state)
{
    (void)state;
    set_dir("noskip");
    pid_t pid = run_child(skip_scenario, (void *)"CGPROF_SKIP=cgft_nothing", err_path);
    assert_stderr("");
    ASSERT_PART(pid, 0, 1, { .descs = { { "Skipped", "0 functions (CGPROF_SKIP=cgft_nothing): not shown; their time "
                                                     "is their callers' own, their calls are shown as made by their "
                                                     "callers" } },
                             .named_calls = { { ROOT_NAME, "cgft_main", 1, 50 }, { "cgft_main", "cgft_work", 1, 20 },
                                              { "cgft_work", "cgft_helper", 1, 12 }, { "cgft_helper", "cgft_leaf", 1, 5 },
                                              { "cgft_work", "cgft_leaf", 1, 2 }, { "cgft_main", "cgft_log_a", 1, 8 },
                                              { "cgft_log_a", "cgft_helper2", 1, 4 },
                                              { "cgft_helper2", "cgft_leaf", 1, 2 }, { "cgft_main", "cgft_log_b", 1, 2 } },
                             .named_selfs = { { "cgft_helper", 7 }, { "cgft_main", 20 } } });
}

/* ---- CGPROF_SKIP_FILE and CGPROF_SKIP_OBJECT ------------------------------------------ */

/*   t=0  main
 *   t=10   vendor_a     [skipped]   (main+0x20)
 *   t=13     leaf                   (vendor_a+0x20): main -> leaf at main+0x20
 *   t=17     leaf returns
 *   t=18     vendor_b   [skipped]   (vendor_a+0x30)
 *   t=21     vendor_b returns
 *   t=22   vendor_a returns
 *   t=25   work                     (main+0x30)
 *   t=29   work returns
 *   t=30 main returns */
static void file_scenario(void *arg)
{
    struct sim s;
    start(&s, arg, NULL);
    uintptr_t main_fn = strstr(arg, "OBJECT") ? SYNTH : A(cgft_main);
    const struct ev seq[] = {
        { .enter = main_fn, .site = ROOT_SITE, .t = 0 },
        { .enter = A(cgft_vendor_a), .site = AT(main_fn, 0x20), .t = 10 },
        { .enter = A(cgft_leaf), .site = AT(cgft_vendor_a, 0x20), .t = 13 }, { .exit = A(cgft_leaf), .t = 17 },
        { .enter = A(cgft_vendor_b), .site = AT(cgft_vendor_a, 0x30), .t = 18 }, { .exit = A(cgft_vendor_b), .t = 21 },
        { .exit = A(cgft_vendor_a), .t = 22 },
        { .enter = A(cgft_work), .site = AT(main_fn, 0x30), .t = 25 }, { .exit = A(cgft_work), .t = 29 },
        { .exit = main_fn, .t = 30 },
        { .t = 40 },
    };
    SIM_RUN(&s, seq);
    cg_dump_final("Program termination");
}

static void test_skip_by_source_file(void **state)
{
    (void)state;
    set_dir("skipfile");
    pid_t pid = run_child(file_scenario, (void *)"CGPROF_SKIP_FILE=*/vendor/*", err_path);
    assert_stderr("");
    ASSERT_PART(pid, 0, 1, { .descs = { { "Skipped", "2 functions (CGPROF_SKIP_FILE=*/vendor/*): not shown; their "
                                                     "time is their callers' own, their calls are shown as made by "
                                                     "their callers" } },
                             .named_calls = { { ROOT_NAME, "cgft_main", 1, 30 }, { "cgft_main", "cgft_leaf", 1, 4 },
                                              { "cgft_main", "cgft_work", 1, 4 } },
                             .named_selfs = { { "cgft_main", 22 }, { "cgft_leaf", 4 }, { "cgft_work", 4 } } });
}

/* Every function of this test's executable, matched by its path: only the
 * thread's first function, in no object, is left, with all the time. */
static char object_env[700];

static void test_skip_by_object(void **state)
{
    (void)state;
    set_dir("skipobject");
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    snprintf(object_env, sizeof object_env, "CGPROF_SKIP_OBJECT=*/%s", strrchr(exe, '/') + 1);
    pid_t pid = run_child(file_scenario, object_env, err_path);
    assert_stderr("");
    struct prof p;
    read_profile(pid, &p);
    /* how many functions the executable has is the linker's business: at
     * least the eleven of this file */
    const char *d = prof_desc(&p, "Skipped");
    assert_non_null(d);
    unsigned long count;
    int used = 0;
    assert_int_equal(sscanf(d, "%lu functions (%n", &count, &used), 1);
    assert_true(count >= 11);
    char rest[800];
    snprintf(rest, sizeof rest, "%s): not shown; their time is their callers' own, their calls are shown as made by "
             "their callers", object_env);
    assert_string_equal(d + used, rest);
    assert_int_equal(p.ncalls, 1);
    ASSERT_CALL(&p, ROOT, fname(SYNTH), 1, 30);
    ASSERT_SELF(&p, fname(SYNTH), 30);
    assert_int_equal(prof_self(&p, "cgft_leaf"), UINT64_MAX);
    assert_int_equal(prof_self(&p, "cgft_work"), UINT64_MAX);
}

/* ---- CGPROF_THROTTLE ----------------------------------------------------------------- */

/* N = 3, T = 10 ns. main calls tiny (2 ns a call, from main+0x20) and long
 * (50 ns, from main+0x30), 6 times each, 1 ns apart:
 *   iteration i: tiny from t+1 to t+3, long from t+3 to t+53; t += 53
 * main returns 2 ns after the last. After its third call tiny is throttled
 * (mean 2 < 10): calls 4 to 6 are left out, their 2 ns main's own. long's
 * mean is 50: never. */
static void throttle_scenario(void *arg)
{
    (void)arg;
    struct sim s;
    start(&s, "CGPROF_THROTTLE=3:10", NULL);
    REQUIRE(s.t->costs.filter != NULL && s.t->costs.throttle_n == 3);
    uint64_t t = 0;
    sim_call(&s, A(cgft_main), ROOT_SITE, t);
    for (int i = 0; i < 6; i++) {
        sim_call(&s, A(cgft_tiny), AT(cgft_main, 0x20), t + 1);
        sim_ret(&s, A(cgft_tiny), t + 3);
        sim_call(&s, A(cgft_long), AT(cgft_main, 0x30), t + 3);
        sim_ret(&s, A(cgft_long), t + 53);
        t += 53;
    }
    sim_ret(&s, A(cgft_main), t + 2);
    sim_at(&s, t + 10);
    cg_dump_final("Program termination");
    cg_filter_report_exit();
}

static void test_throttle(void **state)
{
    (void)state;
    set_dir("throttle");
    pid_t pid = run_child(throttle_scenario, NULL, err_path);
    assert_stderr("cgprof: CGPROF_THROTTLE=3:10 throttled 1 functions; to leave them out of the build, compile "
                  "with:\n-finstrument-functions-exclude-function-list=cgft_tiny\n");
    ASSERT_PART(pid, 0, 1, { .descs = { { "Throttled", "1 functions (CGPROF_THROTTLE=3:10, process-wide; calls "
                                                       "counted until then are kept): cgft_tiny" } },
                             .no_descs = { "Skipped" },
                             .named_calls = { { ROOT_NAME, "cgft_main", 1, 320 }, { "cgft_main", "cgft_tiny", 3, 6 },
                                              { "cgft_main", "cgft_long", 6, 300 } },
                             .named_selfs = { { "cgft_main", 14 }, { "cgft_tiny", 6 }, { "cgft_long", 300 } } });
}

/* Both: the header says both, skip first. */
static void both_scenario(void *arg)
{
    (void)arg;
    struct sim s;
    start(&s, "CGPROF_THROTTLE=100:5", "CGPROF_SKIP=cgft_log_?");
    const char *lines[2];
    REQUIRE(cg_filter_desc(NULL, lines, 2) == 2);
    REQUIRE(strcmp(lines[0], "Skipped: 2 functions (CGPROF_SKIP=cgft_log_?): not shown; their time is their "
                             "callers' own, their calls are shown as made by their callers") == 0);
    REQUIRE(strcmp(lines[1], "Throttled: 0 functions (CGPROF_THROTTLE=100:5, process-wide; calls counted until "
                             "then are kept)") == 0);
    REQUIRE(cg_filter_desc(NULL, lines, 1) == 1);
    REQUIRE(strncmp(lines[0], "Skipped: ", 9) == 0);
    cg_filter_report_exit(); /* nothing throttled: nothing said */
}

static void test_filter_desc_lines(void **state)
{
    (void)state;
    set_dir("both");
    run_child(both_scenario, NULL, err_path);
    assert_stderr("");
}

/* ---- malformed values ----------------------------------------------------------------- */

/* The variable's problem said once, on stderr, by cg_options_parse's
 * report (runtime.c prints it with cg_warn), and the variable's default
 * used: no pattern, and for CGPROF_THROTTLE its default, 10000:1000 (the
 * other variables' values are those of runtime_init: no throttle). */
static void count_report(void *ctx, const char *msg, const char *why)
{
    (void)msg;
    (void)why;
    ++*(int *)ctx;
}

static void malformed_scenario(void *arg)
{
    /* the parser's own count of problems, and its reports */
    const char *env[] = { arg, NULL };
    struct cg_options o;
    int reports = 0;
    REQUIRE(cg_options_parse(&o, (char *const *)env, NULL, count_report, &reports) == 1 && reports == 1);
    REQUIRE(o.skip[0] == 0 && o.skip_object[0] == 0 && o.skip_file[0] == 0);
    REQUIRE(o.throttle.n == 10000 && o.throttle.t == 1000);
    int throttle = strncmp(arg, "CGPROF_THROTTLE=", 16) == 0;
    struct sim s;
    start(&s, arg, NULL);
    if (throttle)
        REQUIRE(s.t->costs.filter != NULL && s.t->costs.throttle_n == 10000);
    else
        REQUIRE(s.t->costs.filter == NULL && s.t->costs.throttle_n == 0);
    const char *lines[2];
    REQUIRE(cg_filter_desc(NULL, lines, 2) == throttle);
    run_skip_sequence(&s, A(cgft_main));
    cg_dump_final("Program termination");
}

static void malformed_case(const char *name, const char *var, const char *message)
{
    set_dir(name);
    pid_t pid = run_child(malformed_scenario, (void *)var, err_path);
    assert_stderr(message);
    struct prof p;
    read_profile(pid, &p);
    ASSERT_NO_DESC(&p, "Skipped");
    if (strncmp(var, "CGPROF_THROTTLE=", 16) == 0)
        ASSERT_DESC(&p, "Throttled",
                    "0 functions (CGPROF_THROTTLE=10000:1000, process-wide; calls counted until then are kept)");
    else
        ASSERT_NO_DESC(&p, "Throttled");
    assert_int_equal(p.ncalls, 9); /* nothing left out */
}

static void test_malformed_values(void **state)
{
    (void)state;
    malformed_case("bad-skip", "CGPROF_SKIP=cgft_helper,,cgft_log_a",
                   "cgprof: CGPROF_SKIP=\"cgft_helper,,cgft_log_a\" is ignored: it has an empty pattern (two commas "
                   "in a row, or one at an end); accepted: function names or globs, comma-separated; using the "
                   "default ''\n");
    malformed_case("bad-object", "CGPROF_SKIP_OBJECT=*/test_filter,",
                   "cgprof: CGPROF_SKIP_OBJECT=\"*/test_filter,\" is ignored: it has an empty pattern (two commas in "
                   "a row, or one at an end); accepted: globs on object paths, comma-separated; using the default "
                   "''\n");
    malformed_case("bad-file", "CGPROF_SKIP_FILE=,*/vendor/*",
                   "cgprof: CGPROF_SKIP_FILE=\",*/vendor/*\" is ignored: it has an empty pattern (two commas in a "
                   "row, or one at an end); accepted: globs on source file paths, comma-separated; using the "
                   "default ''\n");
    malformed_case("bad-throttle", "CGPROF_THROTTLE=100",
                   "cgprof: CGPROF_THROTTLE=\"100\" is ignored: it is not off or two decimal integers N:T; accepted: "
                   "off, or N:T with N from 1 to 4000000000 and T from 1 to 1000000000; using the default "
                   "'10000:1000'\n");
    malformed_case("bad-throttle-range", "CGPROF_THROTTLE=5:0",
                   "cgprof: CGPROF_THROTTLE=\"5:0\" is ignored: it is out of range; accepted: off, or N:T with N from "
                   "1 to 4000000000 and T from 1 to 1000000000; using the default '10000:1000'\n");
    malformed_case("bad-throttle-text", "CGPROF_THROTTLE=3:10ns",
                   "cgprof: CGPROF_THROTTLE=\"3:10ns\" is ignored: it is not off or two decimal integers N:T; "
                   "accepted: off, or N:T with N from 1 to 4000000000 and T from 1 to 1000000000; using the "
                   "default '10000:1000'\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skip_by_name),
        cmocka_unit_test(test_no_skip_counts_everything),
        cmocka_unit_test(test_skip_by_source_file),
        cmocka_unit_test(test_skip_by_object),
        cmocka_unit_test(test_throttle),
        cmocka_unit_test(test_filter_desc_lines),
        cmocka_unit_test(test_malformed_values),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}

/* ---- vendor/helpers.c --------------------------------------------------------------------- */
/* Everything below is, for the debug information, in another source file:
 * the functions that CGPROF_SKIP_FILE leaves out in test_skip_by_source_file. */
#line 1 "/cgprof-test/vendor/helpers.c"
DEFINE(cgft_vendor_a, 10)
DEFINE(cgft_vendor_b, 11)
/* What the compiler adds at the end of the unit (AddressSanitizer's module
 * constructor and destructor) takes the source file current there: not
 * vendor/. */
#line 1 "/cgprof-test/test_filter_end.c"
