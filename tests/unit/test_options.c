/* Unit tests of options.c: the CGPROF_* environment variables, parsed from a
 * fake environment, and the %p expansion of the output prefix. */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <unistd.h>

#include "naming.h"
#include "options.h"
#include "outfile.h"

/* Every message the parser reports, and its reason alone, kept for
 * inspection. */
struct reports {
    unsigned n;
    char msg[8][1100];
    char why[8][1100];
};

static void collect(void *ctx, const char *msg, const char *why)
{
    struct reports *r = ctx;
    if (r->n < 8) {
        snprintf(r->msg[r->n], sizeof r->msg[r->n], "%s", msg);
        snprintf(r->why[r->n], sizeof r->why[r->n], "%s", why);
        /* the reason is the message's own words */
        assert_non_null(strstr(msg, why));
    }
    r->n++;
}

/* Parses a NULL-terminated list of "NAME=value" strings, a relative
 * CGPROF_OUT taken from cwd (NULL: unknown). */
static int parse_in(struct cg_options *o, struct reports *r, const char *cwd, const char *const *env)
{
    memset(r, 0, sizeof *r);
    memset(o, 0x5a, sizeof *o); /* the parser must set every field */
    /* environ is char **, but the parser does not write to it */
    return cg_options_parse(o, (char *const *)env, cwd, collect, r);
}

static int parse(struct cg_options *o, struct reports *r, const char *const *env)
{
    return parse_in(o, r, NULL, env);
}

/* Every option at its default but CGPROF_OUT. */
static void assert_defaults_but_out(const struct cg_options *o)
{
    assert_int_equal(o->clock, 0); /* auto */
    assert_int_equal(o->verbose, 0);
    assert_string_equal(o->skip, "");
    assert_string_equal(o->skip_object, "");
    assert_string_equal(o->skip_file, "");
    /* sampled time and a throttle of tiny hot functions (the others of
     * the suite pin exact time and no throttle, whose figures they check) */
    assert_int_equal(o->time, CG_TIME_SAMPLE);
    assert_int_equal(o->throttle.n, 10000);
    assert_int_equal(o->throttle.t, 1000);
    assert_int_equal(o->inlined, CG_INLINED_FOLD);
    assert_int_equal(o->total, 1);
    assert_string_equal(o->control_dir, "");
    assert_int_equal(o->control_dir_refused, 0);
}

static void assert_defaults(const struct cg_options *o)
{
    assert_string_equal(o->out, "callgrind.out");
    assert_int_equal(o->out_refused, 0);
    assert_defaults_but_out(o);
}

/* CGPROF_OUT refused: not replaced by the default (no file is written
 * anywhere), everything else at its default. */
static void assert_out_refused(const struct cg_options *o)
{
    assert_string_equal(o->out, "");
    assert_int_equal(o->out_refused, 1);
    assert_defaults_but_out(o);
}

/* Exactly one problem reported, and its message contains each of the
 * NULL-terminated strings. */
static void assert_one_report_containing(int rc, const struct reports *r, ...)
{
    assert_int_equal(rc, 1);
    assert_int_equal(r->n, 1);
    va_list ap;
    va_start(ap, r);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;)
        if (!strstr(r->msg[0], s))
            fail_msg("report \"%s\" lacks \"%s\"", r->msg[0], s);
    va_end(ap);
}

/* ---- defaults and valid values ------------------------------------------- */

static void test_defaults_when_nothing_set(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(r.n, 0);
    assert_defaults(&o);
}

static void test_defaults_with_null_env(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    assert_int_equal(parse(&o, &r, NULL), 0);
    assert_int_equal(r.n, 0);
    assert_defaults(&o);
}

static void test_non_cgprof_variables_ignored(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "PATH=/usr/bin:/bin", "HOME=/root", "CGPROFOUT=x", "cgprof_out=/tmp/x",
                    "XCGPROF_OUT=/tmp/y", "LD_PRELOAD=/lib/libcgprof.so", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(r.n, 0);
    assert_defaults(&o);
}

static void test_out_valid_prefix(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT=/tmp/prof/run", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(r.n, 0);
    assert_string_equal(o.out, "/tmp/prof/run");
    assert_int_equal(o.clock, 0);
    assert_int_equal(o.verbose, 0);
}

static void test_out_valid_with_pid_and_percent(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT=out.%p.100%%", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(r.n, 0);
    assert_string_equal(o.out, "out.%p.100%%"); /* kept as given, expanded at use */
}

static void test_clock_valid_values(void **state)
{
    (void)state;
    static const struct {
        const char *var;
        int clock;
    } cases[] = { { "CGPROF_CLOCK=auto", 0 }, { "CGPROF_CLOCK=tsc", 1 }, { "CGPROF_CLOCK=monotonic", 2 } };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { cases[i].var, NULL };
        assert_int_equal(parse(&o, &r, env), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(o.clock, cases[i].clock);
        assert_string_equal(o.out, "callgrind.out");
    }
}

static void test_verbose_true_values(void **state)
{
    (void)state;
    static const char *const yes[] = { "CGPROF_VERBOSE=1", "CGPROF_VERBOSE=yes", "CGPROF_VERBOSE=on",
                                       "CGPROF_VERBOSE=true", "CGPROF_VERBOSE=YES", "CGPROF_VERBOSE=True" };
    for (unsigned i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { yes[i], NULL };
        assert_int_equal(parse(&o, &r, env), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(o.verbose, 1);
    }
}

static void test_verbose_false_values(void **state)
{
    (void)state;
    static const char *const no[] = { "CGPROF_VERBOSE=0", "CGPROF_VERBOSE=no", "CGPROF_VERBOSE=off",
                                      "CGPROF_VERBOSE=false", "CGPROF_VERBOSE=OFF" };
    for (unsigned i = 0; i < sizeof no / sizeof no[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { no[i], NULL };
        assert_int_equal(parse(&o, &r, env), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(o.verbose, 0);
    }
}

static void test_all_options_together(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "HOME=/root", "CGPROF_VERBOSE=1", "CGPROF_OUT=prof/cg.%p", "CGPROF_CLOCK=monotonic", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(r.n, 0);
    assert_string_equal(o.out, "prof/cg.%p");
    assert_int_equal(o.clock, 2);
    assert_int_equal(o.verbose, 1);
}

/* ---- malformed values: default kept, one message naming the variable ---- */

static void test_out_empty_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT=", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_OUT=\"\" is refused: it is empty", "accepted: a file name prefix",
                                 "no profile is written", NULL);
    assert_out_refused(&o);
}

static void test_out_without_equals_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_OUT", "accepted: a file name prefix", NULL);
    assert_out_refused(&o);
}

/* A name twice in the environment (execve takes any array): the first is
 * used, as getenv reads it, whether it was refused or accepted; a refused
 * first CGPROF_OUT is not overridden by a later one (the fuzzer's find:
 * the later value was kept with out_refused still set). */
static void test_a_variable_given_twice_keeps_the_first(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *refused_first[] = { "CGPROF_OUT=a\tb", "CGPROF_OUT=prof", NULL };
    int rc = parse(&o, &r, refused_first);
    assert_int_equal(rc, 2);
    assert_int_equal(r.n, 2);
    assert_non_null(strstr(r.msg[0], "CGPROF_OUT="));
    assert_non_null(strstr(r.msg[1], "CGPROF_OUT is set more than once in the environment: the first value is used"));
    assert_out_refused(&o);

    const char *accepted_first[] = { "CGPROF_OUT=prof", "CGPROF_CLOCK=tsc", "CGPROF_OUT=", NULL };
    rc = parse(&o, &r, accepted_first);
    assert_one_report_containing(rc, &r, "CGPROF_OUT is set more than once", NULL);
    assert_string_equal(o.out, "prof");
    assert_int_equal(o.out_refused, 0);
    assert_int_equal(o.clock, 1); /* tsc: the other variable still read */
}

static void test_out_overlong_refused(void **state)
{
    (void)state;
    static char var[1100];
    memcpy(var, "CGPROF_OUT=", 11);
    memset(var + 11, 'a', 1001);
    var[11 + 1001] = 0;
    struct cg_options o;
    struct reports r;
    const char *env[] = { var, NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_OUT", "accepted: a file name prefix", "1001 bytes", "NAME_MAX",
                                 NULL);
    assert_out_refused(&o);
    /* The message quotes the value's first 154 bytes, then says it is cut. */
    char quoted[200] = "=\"";
    memset(quoted + 2, 'a', 154);
    memcpy(quoted + 156, "\"... is refused", 16);
    assert_non_null(strstr(r.msg[0], quoted));
    assert_true(strlen(r.msg[0]) < 800);
}

static void test_out_control_character_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "CGPROF_OUT=/tmp/a\nb", "CGPROF_OUT=/tmp/a\tb", "CGPROF_OUT=/tmp/\x01" };
    /* shown escaped, on one line */
    static const char *const shown[] = { "CGPROF_OUT=\"/tmp/a\\nb\"", "CGPROF_OUT=\"/tmp/a\\tb\"",
                                         "CGPROF_OUT=\"/tmp/\\x01\"" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_OUT", "control character", "accepted: a file name prefix",
                                     shown[i], NULL);
        assert_out_refused(&o);
    }
}

static void test_out_percent_other_than_p_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "CGPROF_OUT=out.%x", "CGPROF_OUT=out.%", "CGPROF_OUT=%d" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_OUT", "'%'", "accepted: a file name prefix", NULL);
        assert_out_refused(&o);
    }
}

static void test_out_directory_means_its_usual_names(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT=/tmp/profiles/", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(r.n, 0);
    assert_string_equal(o.out, "/tmp/profiles/callgrind.out");
    assert_int_equal(o.out_refused, 0);
    /* the length is judged with the name added: 4082 + 13 bytes is over */
    char *big = malloc(4100);
    assert_non_null(big);
    memcpy(big, "CGPROF_OUT=/", 12);
    memset(big + 12, 'd', 4080);
    memcpy(big + 4092, "/", 2);
    const char *env2[] = { big, NULL };
    assert_int_equal(parse(&o, &r, env2), 1);
    assert_out_refused(&o);
    free(big);
}

static void test_clock_unknown_value_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_CLOCK=fast", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_CLOCK=\"fast\" is ignored: it is not one of the accepted values",
                                 "auto|tsc|monotonic", "using the default 'auto'", NULL);
    assert_string_equal(r.why[0], "it is not one of the accepted values");
    assert_defaults(&o);
}

static void test_clock_empty_and_garbage_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "CGPROF_CLOCK=", "CGPROF_CLOCK=ts", "CGPROF_CLOCK=tscc",
                                       "CGPROF_CLOCK=auto|tsc", "CGPROF_CLOCK=\x7f\x01" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_CLOCK", "auto|tsc|monotonic", NULL);
        assert_defaults(&o);
    }
}

static void test_clock_overlong_refused(void **state)
{
    (void)state;
    static char var[1100];
    memcpy(var, "CGPROF_CLOCK=", 13);
    memset(var + 13, 't', 1001);
    var[13 + 1001] = 0;
    struct cg_options o;
    struct reports r;
    const char *env[] = { var, NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_CLOCK", "auto|tsc|monotonic", NULL);
    assert_defaults(&o);
}

static void test_verbose_maybe_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_VERBOSE=maybe", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_VERBOSE=\"maybe\"", "accepted: 0|1", NULL);
    assert_defaults(&o);
}

static void test_verbose_empty_and_garbage_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "CGPROF_VERBOSE=", "CGPROF_VERBOSE=2", "CGPROF_VERBOSE=1 ",
                                       "CGPROF_VERBOSE=y" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_VERBOSE", "accepted: 0|1", NULL);
        assert_defaults(&o);
    }
}

static void test_verbose_overlong_refused(void **state)
{
    (void)state;
    static char var[1100];
    memcpy(var, "CGPROF_VERBOSE=", 15);
    memset(var + 15, '1', 1001);
    var[15 + 1001] = 0;
    struct cg_options o;
    struct reports r;
    const char *env[] = { var, NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_VERBOSE", "accepted: 0|1", NULL);
    assert_defaults(&o);
}

static void test_bad_value_does_not_affect_other_options(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT=/tmp/p", "CGPROF_CLOCK=fast", "CGPROF_VERBOSE=1", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_CLOCK", NULL);
    assert_string_equal(o.out, "/tmp/p");
    assert_int_equal(o.clock, 0);
    assert_int_equal(o.verbose, 1);
}

/* ---- unknown variables ----------------------------------------------------- */

static void test_unknown_variable_reported_as_typo(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUTT=/tmp/x", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "\"CGPROF_OUTT\" is not a cgprof variable", "typo", "CGPROF_OUT",
                                 "CGPROF_CLOCK", "CGPROF_VERBOSE", NULL);
    assert_string_equal(r.why[0], r.msg[0]);
    /* The variable is named without its value. */
    assert_null(strstr(r.msg[0], "/tmp/x"));
    assert_defaults(&o);
}

static void test_problems_are_counted(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUTT=a", "CGPROF_CLOCK=fast", "PATH=/bin", "CGPROF_VERBOSE=maybe", "CGPROF_OUT=x%q",
                    "CGPROF_COLOR=1", NULL };
    assert_int_equal(parse(&o, &r, env), 5);
    assert_int_equal(r.n, 5);
    assert_out_refused(&o);
    assert_non_null(strstr(r.msg[0], "CGPROF_OUTT"));
    assert_non_null(strstr(r.msg[1], "CGPROF_CLOCK"));
    assert_non_null(strstr(r.msg[2], "CGPROF_VERBOSE"));
    assert_non_null(strstr(r.msg[3], "CGPROF_OUT"));
    assert_non_null(strstr(r.msg[4], "CGPROF_COLOR"));
}

/* ---- the option table ----------------------------------------------------- */

static void test_table_lists_the_known_options(void **state)
{
    (void)state;
    static const char *const known[] = { "CGPROF_OUT", "CGPROF_CLOCK", "CGPROF_VERBOSE" };
    for (unsigned k = 0; k < sizeof known / sizeof known[0]; k++) {
        unsigned i = 0;
        while (i < cg_option_count && strcmp(cg_option_table[i].variable, known[k]) != 0)
            i++;
        if (i == cg_option_count)
            fail_msg("%s is not in the option table", known[k]);
    }
}

static void test_table_entries_well_formed(void **state)
{
    (void)state;
    for (unsigned i = 0; i < cg_option_count; i++) {
        const struct cg_option_info *t = &cg_option_table[i];
        assert_non_null(t->variable);
        assert_int_equal(strncmp(t->variable, "CGPROF_", 7), 0);
        assert_true(strlen(t->variable) > 7);
        assert_non_null(t->def);
        assert_non_null(t->accepted);
        assert_true(strlen(t->accepted) > 0);
        assert_non_null(t->help);
        assert_true(strlen(t->help) > 10);
        for (unsigned k = 0; k < i; k++)
            assert_string_not_equal(cg_option_table[k].variable, t->variable);
    }
}

static void test_table_defaults_accepted_by_parser(void **state)
{
    (void)state;
    for (unsigned i = 0; i < cg_option_count; i++) {
        char var[256];
        snprintf(var, sizeof var, "%s=%s", cg_option_table[i].variable, cg_option_table[i].def);
        struct cg_options o;
        struct reports r;
        const char *env[] = { var, NULL };
        assert_int_equal(parse(&o, &r, env), 0);
        assert_int_equal(r.n, 0);
        assert_defaults(&o);
    }
}

static void test_table_enum_values_each_accepted(void **state)
{
    (void)state;
    for (unsigned i = 0; i < cg_option_count; i++) {
        const struct cg_option_info *t = &cg_option_table[i];
        if (t->type != CG_OPT_ENUM && t->type != CG_OPT_BOOL)
            continue;
        /* Every '|'-separated value the table (and so the messages) lists. */
        char copy[256];
        snprintf(copy, sizeof copy, "%s", t->accepted);
        char *save = NULL;
        for (char *v = strtok_r(copy, "|", &save); v; v = strtok_r(NULL, "|", &save)) {
            char var[300];
            snprintf(var, sizeof var, "%s=%s", t->variable, v);
            struct cg_options o;
            struct reports r;
            const char *env[] = { var, NULL };
            if (parse(&o, &r, env) != 0)
                fail_msg("%s refused: %s", var, r.msg[0]);
        }
    }
}


/* ---- GLOBS and THRESHOLD ------------------------------------------------------ */

static int collect_pattern(void *ctx, const char *p, size_t len)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "[%.*s]", (int)len, p);
    return 0;
}

static void test_globs_split_at_unescaped_commas(void **state)
{
    (void)state;
    char out[256] = "";
    assert_int_equal(cg_globs_each("helper,ns::f*,*pair<int\\, int>*", collect_pattern, out), 0);
    assert_string_equal(out, "[helper][ns::f*][*pair<int\\, int>*]");
    out[0] = 0;
    assert_int_equal(cg_globs_each("", collect_pattern, out), 0);
    assert_string_equal(out, "");
    out[0] = 0;
    assert_int_equal(cg_globs_each("trailing\\", collect_pattern, out), 0);
    assert_string_equal(out, "[trailing\\]");
}

static void test_skip_options_valid(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_SKIP=helper,*_internal", "CGPROF_SKIP_OBJECT=*libfoo.so*",
                          "CGPROF_SKIP_FILE=*/vendor/*", "CGPROF_THROTTLE=100000:500", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_string_equal(o.skip, "helper,*_internal");
    assert_string_equal(o.skip_object, "*libfoo.so*");
    assert_string_equal(o.skip_file, "*/vendor/*");
    assert_int_equal(o.throttle.n, 100000);
    assert_int_equal(o.throttle.t, 500);
}

static void test_skip_empty_pattern_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "CGPROF_SKIP=a,,b", "CGPROF_SKIP=,a", "CGPROF_SKIP=a,", "CGPROF_SKIP=," };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_SKIP=", "empty pattern", "comma-separated", NULL);
        assert_string_equal(o.skip, "");
    }
}

static void test_skip_control_character_and_overlong_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_SKIP_FILE=a\tb", NULL };
    assert_one_report_containing(parse(&o, &r, env), &r, "CGPROF_SKIP_FILE=", "control character", NULL);
    assert_string_equal(o.skip_file, "");
    static char big[CG_OPT_GLOBS_MAX + 64];
    int n = snprintf(big, sizeof big, "CGPROF_SKIP_OBJECT=");
    memset(big + n, 'x', sizeof big - (size_t)n - 1);
    const char *env2[] = { big, NULL };
    assert_one_report_containing(parse(&o, &r, env2), &r, "CGPROF_SKIP_OBJECT=", "too long", "...", NULL);
    assert_string_equal(o.skip_object, "");
}

static void test_throttle_off_values(void **state)
{
    (void)state;
    static const char *const off[] = { "CGPROF_THROTTLE=off", "CGPROF_THROTTLE=OFF", "CGPROF_THROTTLE=0" };
    for (unsigned i = 0; i < sizeof off / sizeof off[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { off[i], NULL };
        assert_int_equal(parse(&o, &r, env), 0);
        assert_int_equal(o.throttle.n, 0);
        assert_int_equal(o.throttle.t, 0);
    }
}

static void test_throttle_malformed_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "CGPROF_THROTTLE=100",        "CGPROF_THROTTLE=100:",      "CGPROF_THROTTLE=:5",
        "CGPROF_THROTTLE=100:5:1",    "CGPROF_THROTTLE=-1:5",      "CGPROF_THROTTLE=0:5",
        "CGPROF_THROTTLE=100:0",      "CGPROF_THROTTLE=4000000001:5", "CGPROF_THROTTLE=10:1000000001",
        "CGPROF_THROTTLE=99999999999999999999999:1", "CGPROF_THROTTLE=1e6:5", "CGPROF_THROTTLE=",
        "CGPROF_THROTTLE=10 :5",      "CGPROF_THROTTLE=10:+5",
    };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_THROTTLE=", "N:T", "using the default '10000:1000'", NULL);
        assert_int_equal(o.throttle.n, 10000);
        assert_int_equal(o.throttle.t, 1000);
    }
}

static void test_throttle_bounds_accepted(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_THROTTLE=4000000000:1000000000", NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_int_equal(o.throttle.n, 4000000000ull);
    assert_int_equal(o.throttle.t, 1000000000ull);
    const char *env2[] = { "CGPROF_THROTTLE=1:1", NULL };
    assert_int_equal(parse(&o, &r, env2), 0);
    assert_int_equal(o.throttle.n, 1);
    assert_int_equal(o.throttle.t, 1);
}

/* ---- cg_expand_path -------------------------------------------------------- */

static void test_expand_pid(void **state)
{
    (void)state;
    char dst[64];
    assert_int_equal(cg_expand_path("callgrind.out.%p", 4242, dst, sizeof dst), 0);
    assert_string_equal(dst, "callgrind.out.4242");
}

static void test_expand_pid_twice(void **state)
{
    (void)state;
    char dst[64];
    assert_int_equal(cg_expand_path("%p/run-%p", 7, dst, sizeof dst), 0);
    assert_string_equal(dst, "7/run-7");
}

static void test_expand_double_percent(void **state)
{
    (void)state;
    char dst[64];
    assert_int_equal(cg_expand_path("100%%.%%p", 99, dst, sizeof dst), 0);
    assert_string_equal(dst, "100%.%p");
}

static void test_expand_plain_copied(void **state)
{
    (void)state;
    char dst[64];
    assert_int_equal(cg_expand_path("/tmp/prof", 1, dst, sizeof dst), 0);
    assert_string_equal(dst, "/tmp/prof");
}

static void test_expand_exact_fit(void **state)
{
    (void)state;
    char dst[8];
    /* "out.123" is 7 characters: fits in 8 with its terminator. */
    assert_int_equal(cg_expand_path("out.%p", 123, dst, 8), 0);
    assert_string_equal(dst, "out.123");
}

static void test_expand_too_small_buffer(void **state)
{
    (void)state;
    char dst[16];
    memset(dst, '#', sizeof dst);
    /* "out.1234" needs 9 bytes. */
    assert_int_equal(cg_expand_path("out.%p", 1234, dst, 8), -1);
    assert_int_equal(dst[8], '#'); /* nothing written beyond size */
    assert_int_equal(cg_expand_path("abcdefgh", 1, dst, 8), -1);
    assert_int_equal(dst[8], '#');
}

static void test_expand_zero_size_buffer(void **state)
{
    (void)state;
    char dst[4] = "###";
    /* Even "" needs one byte for its terminator. */
    assert_int_equal(cg_expand_path("", 1, dst, 0), -1);
    assert_int_equal(dst[0], '#');
}

/* ---- CGPROF_TOTAL and the total's name ------------------------------------- */

static void test_total_off_and_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *off[] = { "CGPROF_TOTAL=0", NULL };
    assert_int_equal(parse(&o, &r, off), 0);
    assert_int_equal(o.total, 0);
    const char *bad[] = { "CGPROF_TOTAL=sometimes", NULL };
    assert_one_report_containing(parse(&o, &r, bad), &r, "CGPROF_TOTAL", "sometimes", "default '1'", NULL);
    assert_int_equal(o.total, 1);
}

/* The total's name, and the property that matters: KCachegrind, given the
 * run's name <run> (what the per-thread files start with), loads <run>.*
 * and <run>-* and <run> itself; the total must be none of these. */
static void check_total(const char *pattern, const char *want)
{
    char t[256], total[256], run[256], runpat[256];
    assert_int_equal(cg_total_pattern(pattern, t, sizeof t), 0);
    assert_int_equal(cg_expand_path(t, 4242, total, sizeof total), 0);
    assert_string_equal(total, want);
    snprintf(runpat, sizeof runpat, strstr(pattern, "%p") ? "%s" : "%s.%%p", pattern);
    assert_int_equal(cg_expand_path(runpat, 4242, run, sizeof run), 0);
    size_t n = strlen(run);
    assert_false(strncmp(total, run, n) == 0 && (total[n] == 0 || total[n] == '.' || total[n] == '-'));
}

static void test_total_name(void **state)
{
    (void)state;
    check_total("callgrind.out", "callgrind.total.4242");          /* the default */
    check_total("/tmp/p/callgrind.out", "/tmp/p/callgrind.total.4242");
    check_total("callgrind.out.%p", "callgrind.total.4242");
    check_total("/tmp/run.out/myapp.out", "/tmp/run.out/myapp.total.4242"); /* the file name's */
    check_total("a.out.x.out", "a.out.x.total.4242");              /* the last .out */
    check_total("myapp", "myapp.total.4242");                      /* no .out: before the pid */
    check_total("myapp.output", "myapp.output.total.4242");        /* .output is not .out */
    check_total("/tmp/prof-%p", "/tmp/prof-total.4242");
    check_total("/tmp/%p/run", "/tmp/4242/total.run");             /* pid only in a directory */
    check_total("/tmp/%p/run-%p", "/tmp/4242/run-total.4242");
    check_total("p-%p.out", "p-4242.total");
    check_total("100%%.%p", "100%.total.4242");
}

static void test_total_name_too_long(void **state)
{
    (void)state;
    char t[16];
    assert_int_equal(cg_total_pattern("callgrind.out", t, sizeof t), -1); /* callgrind.total.%p: 18 */
    char t2[19];
    assert_int_equal(cg_total_pattern("callgrind.out", t2, sizeof t2), 0);
    assert_string_equal(t2, "callgrind.total.%p");
}

/* Found by tests/fuzz/fuzz_options.c: a prefix short enough, but whose %p
 * expansions would not fit, is refused up front. */
static void test_out_too_long_once_expanded_refused(void **state)
{
    (void)state;
    char value[1000] = "CGPROF_OUT=";
    for (int i = 0; i < 60; i++)
        strcat(value, "%p");
    struct cg_options o;
    struct reports r;
    const char *env[] = { value, NULL };
    assert_int_equal(parse(&o, &r, env), 1);
    assert_out_refused(&o);
    /* 60 pids of 10 digits in one name */
    assert_non_null(strstr(r.msg[0], "its last name is 600 bytes long (each %p counted as 10 digits)"));
}

/* ---- the lengths of CGPROF_OUT and CGPROF_CONTROL_DIR ----------------------
 * Any path the system takes: a name of PATH_MAX - 1 bytes (4095), each
 * component NAME_MAX (255), counting what the runtime adds to the prefix
 * (the file names' ".<pid>.<part>-<NN>" and the temporary name's suffix:
 * CG_OPT_OUT_SUFFIX_MAX) and, for a relative prefix, the working directory
 * it is taken from. A value refused is refused at start-up: not replaced
 * by the default, no file anywhere. */

/* "NAME=" then a path of `len` bytes: `absolute` ('/' first), components of
 * `comp` bytes ('d') separated by '/', the last one `last` bytes ('f'). */
static char *long_path(const char *name, int absolute, size_t len, size_t comp, size_t last)
{
    size_t n = strlen(name);
    char *v = malloc(n + len + 1);
    assert_non_null(v);
    memcpy(v, name, n);
    char *p = v + n, *end = v + n + len;
    if (absolute)
        *p++ = '/';
    assert_true((size_t)(end - p) >= last);
    char *last_at = end - last;
    while (p < last_at) {
        /* a component, shortened to leave room for its '/' */
        size_t c = (size_t)(last_at - p) - 1;
        if (c > comp)
            c = comp;
        if (c == 0) { /* one byte left: a shorter previous component would do; not needed here */
            fail_msg("long_path: cannot lay out %zu bytes", len);
        }
        memset(p, 'd', c);
        p += c;
        *p++ = '/';
    }
    assert_ptr_equal(p, last_at);
    memset(p, 'f', last);
    *end = 0;
    return v;
}

static void test_out_limits_of_one_name(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    size_t most = CG_OPT_NAME_MAX - CG_OPT_OUT_SUFFIX_MAX; /* 182 */
    assert_int_equal(most, 182);
    char *ok = long_path("CGPROF_OUT=", 1, 1 + most, 200, most);
    const char *env[] = { ok, NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_string_equal(o.out, ok + 11);
    char *bad = long_path("CGPROF_OUT=", 1, 2 + most, 200, most + 1);
    const char *env2[] = { bad, NULL };
    assert_one_report_containing(parse(&o, &r, env2), &r, "CGPROF_OUT=\"/fff", "is refused",
                                 "its last name is 183 bytes long", "up to 73 bytes the runtime adds",
                                 "limit of 255 bytes for one name (NAME_MAX): at most 182", "no profile is written",
                                 NULL);
    assert_out_refused(&o);
    /* a %p counts as the longest pid, 10 digits */
    char withpid[300];
    snprintf(withpid, sizeof withpid, "CGPROF_OUT=/tmp/%0*d%%p", (int)most - 10, 0);
    const char *env3[] = { withpid, NULL };
    assert_int_equal(parse(&o, &r, env3), 0);
    snprintf(withpid, sizeof withpid, "CGPROF_OUT=/tmp/%0*d%%p", (int)most - 9, 0);
    assert_one_report_containing(parse(&o, &r, env3), &r, "183 bytes long (each %p counted as 10 digits)", NULL);
    /* a directory's name: NAME_MAX itself */
    char *dir_ok = long_path("CGPROF_OUT=", 1, 1 + 255 + 1 + 1, 255, 1);
    const char *env4[] = { dir_ok, NULL };
    assert_int_equal(parse(&o, &r, env4), 0);
    char *dir_bad = long_path("CGPROF_OUT=", 1, 1 + 256 + 1 + 1, 256, 1);
    const char *env5[] = { dir_bad, NULL };
    assert_one_report_containing(parse(&o, &r, env5), &r, "a directory name of 256 bytes",
                                 "limit of 255 bytes for one name (NAME_MAX)", NULL);
    assert_out_refused(&o);
    free(ok);
    free(bad);
    free(dir_ok);
    free(dir_bad);
}

static void test_out_limits_of_the_whole_name(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    size_t most = CG_OPT_PATH_MAX - 1 - CG_OPT_OUT_SUFFIX_MAX; /* 4022 */
    assert_int_equal(most, 4022);
    char *ok = long_path("CGPROF_OUT=", 1, most, 250, 100);
    const char *env[] = { ok, NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_string_equal(o.out, ok + 11);
    char *bad = long_path("CGPROF_OUT=", 1, most + 1, 250, 100);
    const char *env2[] = { bad, NULL };
    assert_one_report_containing(parse(&o, &r, env2), &r, "CGPROF_OUT=\"/ddd", "it is 4023 bytes long",
                                 "up to 73 bytes the runtime adds", "would be up to 4096 bytes",
                                 "limit of 4095 (PATH_MAX, 4096 with the final NUL)", "no profile is written", NULL);
    assert_out_refused(&o);
    /* relative: the working directory and its '/' count */
    char cwd[1001];
    memset(cwd, 'w', 1000);
    cwd[0] = '/';
    cwd[1000] = 0;
    char *rel_ok = long_path("CGPROF_OUT=", 0, most - 1001, 250, 100);
    char *rel_bad = long_path("CGPROF_OUT=", 0, most - 1000, 250, 100);
    const char *env3[] = { rel_ok, NULL }, *env4[] = { rel_bad, NULL };
    assert_int_equal(parse_in(&o, &r, cwd, env3), 0);
    assert_one_report_containing(parse_in(&o, &r, cwd, env4), &r,
                                 "it is 3022 bytes long and taken from a working directory of 1000 bytes: with a "
                                 "'/' between them and the up to 73 bytes the runtime adds",
                                 "would be up to 4096 bytes", NULL);
    assert_out_refused(&o);
    /* the same without a known working directory: short enough */
    assert_int_equal(parse_in(&o, &r, "", env4), 0);
    free(ok);
    free(bad);
    free(rel_ok);
    free(rel_bad);
}

/* The names the runtime makes of a prefix accepted at the limits fit
 * them: naming.c's longest suffix (pid, part and thread of 10 digits) and
 * outfile.c's temporary one are within CG_OPT_OUT_SUFFIX_MAX. */
static void test_out_suffix_bound_covers_the_names(void **state)
{
    (void)state;
    const char *patterns[] = { "p", "p.out", "p-%p", "%p/p", "p.output" };
    for (unsigned i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        struct cg_names n = { patterns[i], 2147483647L, "" };
        char prefix[64], name[128], total[128], paths[128];
        int with_pid;
        assert_int_equal(cg_name_prefix(&n, prefix, sizeof prefix, &with_pid), 0);
        assert_int_equal(cg_name_part(&n, 4294967295u, 4294967295u, 1, name, sizeof name), 0);
        assert_int_equal(cg_name_total(&n, total, sizeof total), 0);
        assert_int_equal(cg_name_paths(&n, 4294967295u, 4294967295u, 1, paths, sizeof paths), 0);
        size_t longest = strlen(name) > strlen(total) ? strlen(name) : strlen(total);
        if (strlen(paths) > longest)
            longest = strlen(paths);
        /* the pattern's %p counted as 10 digits, as the checks count it */
        assert_true(longest - strlen(prefix) <= 39);
    }
    /* outfile.c's temporary "<dir>/.<name>.cgprof-tmp.<pid>.<count>": 1 + 12 +
     * 10 + 1 + 10 at most more than the final name */
    char dir[] = "/tmp/cgprof-options-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/x", dir);
    struct cg_out_file f;
    assert_int_equal(cg_out_open(&f, path), 0);
    assert_int_equal(strncmp(f.tmp, dir, strlen(dir)), 0);
    assert_int_equal(strncmp(f.tmp + strlen(dir), "/.x.cgprof-tmp.", 15), 0);
    assert_true(strlen(f.tmp) - strlen(path) <= 34);
    assert_int_equal(cg_out_close(&f, path, 0), ENOMEM);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(39 + 34, CG_OPT_OUT_SUFFIX_MAX);
}

static void test_control_dir_limits(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    size_t most = CG_OPT_PATH_MAX - 1 - CG_OPT_CONTROL_SUFFIX_MAX; /* 4062 */
    assert_int_equal(most, 4062);
    char *ok = long_path("CGPROF_CONTROL_DIR=", 1, most, 255, 100);
    const char *env[] = { ok, NULL };
    assert_int_equal(parse(&o, &r, env), 0);
    assert_string_equal(o.control_dir, ok + 19);
    assert_int_equal(o.control_dir_refused, 0);
    char *bad = long_path("CGPROF_CONTROL_DIR=", 1, most + 1, 255, 100);
    char *bad_name = long_path("CGPROF_CONTROL_DIR=", 1, 1 + 256, 256, 256);
    const char *const *envs[] = { (const char *[]){ bad, NULL }, (const char *[]){ bad_name, NULL },
                                  (const char *[]){ "CGPROF_CONTROL_DIR=rel", NULL } };
    const char *why[] = { "it is 4063 bytes long: with the up to 33 bytes the runtime adds, the control files' full",
                          "it has a directory name of 256 bytes, over the system's limit of 255",
                          "not an absolute path" };
    for (unsigned i = 0; i < 3; i++) {
        assert_one_report_containing(parse(&o, &r, envs[i]), &r, "CGPROF_CONTROL_DIR=\"", "is refused", why[i],
                                     "no control files are kept", NULL);
        /* not the default directory instead: none */
        assert_string_equal(o.control_dir, "");
        assert_int_equal(o.control_dir_refused, 1);
        assert_string_equal(o.out, "callgrind.out");
        assert_int_equal(o.out_refused, 0);
    }
    free(ok);
    free(bad);
    free(bad_name);
}

static void test_signal_names_and_numbers(void **state)
{
    (void)state;
    assert_int_equal(cg_parse_signal("USR2"), SIGUSR2);
    assert_int_equal(cg_parse_signal("sigusr1"), SIGUSR1);
    assert_int_equal(cg_parse_signal("none"), 0);
    assert_int_equal(cg_parse_signal("10"), 10);
    assert_int_equal(cg_parse_signal("RTMIN+2"), SIGRTMIN + 2);
    assert_int_equal(cg_parse_signal("RTMAX-1"), SIGRTMAX - 1);
    /* refused: faults, uncatchable, out of range, garbage; an offset that
     * would overflow (found by tests/fuzz/fuzz_options.c) */
    const char *bad[] = { "SEGV", "KILL", "9", "STOP", "0", "65", "-1", "RTMIN+99", "RTMAX+1",
                          "RTMAX+188888888888888888888888", "RTMIN+", "RTMINX", "USR3", "", "1x" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cg_parse_signal(bad[i]) != -1)
            fail_msg("signal '%s' accepted", bad[i]);
    char buf[24];
    assert_string_equal(cg_signal_name(SIGUSR1, buf, sizeof buf), "USR1");
    assert_int_equal(cg_parse_signal(cg_signal_name(SIGRTMIN + 3, buf, sizeof buf)), SIGRTMIN + 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_when_nothing_set),
        cmocka_unit_test(test_globs_split_at_unescaped_commas),
        cmocka_unit_test(test_skip_options_valid),
        cmocka_unit_test(test_skip_empty_pattern_refused),
        cmocka_unit_test(test_skip_control_character_and_overlong_refused),
        cmocka_unit_test(test_throttle_off_values),
        cmocka_unit_test(test_throttle_malformed_refused),
        cmocka_unit_test(test_throttle_bounds_accepted),
        cmocka_unit_test(test_defaults_with_null_env),
        cmocka_unit_test(test_non_cgprof_variables_ignored),
        cmocka_unit_test(test_out_valid_prefix),
        cmocka_unit_test(test_out_valid_with_pid_and_percent),
        cmocka_unit_test(test_clock_valid_values),
        cmocka_unit_test(test_verbose_true_values),
        cmocka_unit_test(test_verbose_false_values),
        cmocka_unit_test(test_all_options_together),
        cmocka_unit_test(test_out_empty_refused),
        cmocka_unit_test(test_a_variable_given_twice_keeps_the_first),
        cmocka_unit_test(test_out_without_equals_refused),
        cmocka_unit_test(test_out_overlong_refused),
        cmocka_unit_test(test_out_too_long_once_expanded_refused),
        cmocka_unit_test(test_signal_names_and_numbers),
        cmocka_unit_test(test_out_control_character_refused),
        cmocka_unit_test(test_out_percent_other_than_p_refused),
        cmocka_unit_test(test_out_directory_means_its_usual_names),
        cmocka_unit_test(test_clock_unknown_value_refused),
        cmocka_unit_test(test_clock_empty_and_garbage_refused),
        cmocka_unit_test(test_clock_overlong_refused),
        cmocka_unit_test(test_verbose_maybe_refused),
        cmocka_unit_test(test_verbose_empty_and_garbage_refused),
        cmocka_unit_test(test_verbose_overlong_refused),
        cmocka_unit_test(test_bad_value_does_not_affect_other_options),
        cmocka_unit_test(test_unknown_variable_reported_as_typo),
        cmocka_unit_test(test_problems_are_counted),
        cmocka_unit_test(test_table_lists_the_known_options),
        cmocka_unit_test(test_table_entries_well_formed),
        cmocka_unit_test(test_table_defaults_accepted_by_parser),
        cmocka_unit_test(test_table_enum_values_each_accepted),
        cmocka_unit_test(test_expand_pid),
        cmocka_unit_test(test_expand_pid_twice),
        cmocka_unit_test(test_expand_double_percent),
        cmocka_unit_test(test_expand_plain_copied),
        cmocka_unit_test(test_expand_exact_fit),
        cmocka_unit_test(test_expand_too_small_buffer),
        cmocka_unit_test(test_expand_zero_size_buffer),
        cmocka_unit_test(test_total_off_and_refused),
        cmocka_unit_test(test_total_name),
        cmocka_unit_test(test_total_name_too_long),
        cmocka_unit_test(test_out_limits_of_one_name),
        cmocka_unit_test(test_out_limits_of_the_whole_name),
        cmocka_unit_test(test_out_suffix_bound_covers_the_names),
        cmocka_unit_test(test_control_dir_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
