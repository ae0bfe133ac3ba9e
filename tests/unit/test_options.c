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

#include "options.h"

/* Every message the parser reports, kept for inspection. */
struct reports {
    unsigned n;
    char msg[8][1100];
};

static void collect(void *ctx, const char *msg)
{
    struct reports *r = ctx;
    if (r->n < 8)
        snprintf(r->msg[r->n], sizeof r->msg[r->n], "%s", msg);
    r->n++;
}

/* Parses a NULL-terminated list of "NAME=value" strings. */
static int parse(struct cg_options *o, struct reports *r, const char *const *env)
{
    memset(r, 0, sizeof *r);
    memset(o, 0x5a, sizeof *o); /* the parser must set every field */
    /* environ is char **, but the parser does not write to it */
    return cg_options_parse(o, (char *const *)env, collect, r);
}

static void assert_defaults(const struct cg_options *o)
{
    assert_string_equal(o->out, "callgrind.out");
    assert_int_equal(o->clock, 0); /* auto */
    assert_int_equal(o->verbose, 0);
    assert_string_equal(o->skip, "");
    assert_string_equal(o->skip_object, "");
    assert_string_equal(o->skip_file, "");
    assert_int_equal(o->throttle.n, 0);
    assert_int_equal(o->throttle.t, 0);
    assert_int_equal(o->total, 1);
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
    assert_one_report_containing(rc, &r, "CGPROF_OUT", "accepted: a file name prefix", "callgrind.out", NULL);
    assert_defaults(&o);
}

static void test_out_without_equals_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_OUT", "accepted: a file name prefix", NULL);
    assert_defaults(&o);
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
    assert_one_report_containing(rc, &r, "CGPROF_OUT", "accepted: a file name prefix", NULL);
    assert_defaults(&o);
    /* The message quotes the first 80 characters of the value, then "...". */
    char quoted[100] = "='";
    memset(quoted + 2, 'a', 80);
    memcpy(quoted + 82, "...'", 5);
    assert_non_null(strstr(r.msg[0], quoted));
    assert_true(strlen(r.msg[0]) < 400);
}

static void test_out_control_character_refused(void **state)
{
    (void)state;
    static const char *const bad[] = { "CGPROF_OUT=/tmp/a\nb", "CGPROF_OUT=/tmp/a\tb", "CGPROF_OUT=/tmp/\x01" };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct cg_options o;
        struct reports r;
        const char *env[] = { bad[i], NULL };
        int rc = parse(&o, &r, env);
        assert_one_report_containing(rc, &r, "CGPROF_OUT", "control character", "accepted: a file name prefix",
                                     NULL);
        assert_defaults(&o);
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
        assert_defaults(&o);
    }
}

static void test_out_trailing_slash_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUT=/tmp/profiles/", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_OUT", "directory", "accepted: a file name prefix", NULL);
    assert_defaults(&o);
}

static void test_clock_unknown_value_refused(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_CLOCK=fast", NULL };
    int rc = parse(&o, &r, env);
    assert_one_report_containing(rc, &r, "CGPROF_CLOCK", "'fast'", "auto|tsc|monotonic", NULL);
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
    assert_one_report_containing(rc, &r, "CGPROF_VERBOSE", "'maybe'", "accepted: 0|1", NULL);
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
    assert_one_report_containing(rc, &r, "CGPROF_OUTT", "typo", "CGPROF_OUT", "CGPROF_CLOCK", "CGPROF_VERBOSE",
                                 NULL);
    /* The variable is named without its value. */
    assert_null(strstr(r.msg[0], "/tmp/x"));
    assert_defaults(&o);
}

static void test_problems_are_counted(void **state)
{
    (void)state;
    struct cg_options o;
    struct reports r;
    const char *env[] = { "CGPROF_OUTT=a", "CGPROF_CLOCK=fast", "PATH=/bin", "CGPROF_VERBOSE=maybe", "CGPROF_OUT=x/",
                    "CGPROF_COLOR=1", NULL };
    assert_int_equal(parse(&o, &r, env), 5);
    assert_int_equal(r.n, 5);
    assert_defaults(&o);
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
        assert_one_report_containing(rc, &r, "CGPROF_THROTTLE=", "N:T", "using the default 'off'", NULL);
        assert_int_equal(o.throttle.n, 0);
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
    assert_string_equal(o.out, "callgrind.out");
    assert_non_null(strstr(r.msg[0], "too long"));
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
        cmocka_unit_test(test_out_without_equals_refused),
        cmocka_unit_test(test_out_overlong_refused),
        cmocka_unit_test(test_out_too_long_once_expanded_refused),
        cmocka_unit_test(test_signal_names_and_numbers),
        cmocka_unit_test(test_out_control_character_refused),
        cmocka_unit_test(test_out_percent_other_than_p_refused),
        cmocka_unit_test(test_out_trailing_slash_refused),
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
