/* Unit tests of naming.c: the names of the profile files, which the launcher
 * and cgprof-control (python/cgproflib/naming.py) must find again for any
 * pid, and the numbering of parts after those an earlier image of the same
 * pid wrote (a program started by exec()).
 *
 * The functions are pure but for cg_name_last_part, which lists a
 * directory: it is given a temporary directory (mkdtemp, removed at the
 * end) holding files of this pid, of another pid and names that only look
 * like parts. Every expectation is the exact string, written out here by
 * hand from the scheme (naming.h): <prefix>.<pid>-<NN> without dumps on
 * demand, <prefix>.<pid>.<part>-<NN> with them, the pid where %p says when
 * the pattern has one, a relative prefix made absolute against the
 * start-up directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "naming.h"
#include "options.h"

#define PID 4242L

/* ---- helpers ----------------------------------------------------------------- */

static void assert_prefix(const char *out, const char *cwd, const char *expected, int expected_with_pid)
{
    struct cg_names n = { out, PID, cwd };
    char dst[CG_OPT_PATH_MAX + 64];
    int with_pid = -1;
    assert_int_equal(cg_name_prefix(&n, dst, sizeof dst, &with_pid), 0);
    assert_string_equal(dst, expected);
    assert_int_equal(with_pid, expected_with_pid);
}

static void assert_part(const char *out, const char *cwd, unsigned thread, unsigned part, int part_in_name,
                        const char *expected)
{
    struct cg_names n = { out, PID, cwd };
    char dst[CG_OPT_PATH_MAX + 64];
    assert_int_equal(cg_name_part(&n, thread, part, part_in_name, dst, sizeof dst), 0);
    assert_string_equal(dst, expected);
}

static void assert_total(const char *out, const char *cwd, const char *expected)
{
    struct cg_names n = { out, PID, cwd };
    char dst[CG_OPT_PATH_MAX + 64];
    assert_int_equal(cg_name_total(&n, dst, sizeof dst), 0);
    assert_string_equal(dst, expected);
}

/* ---- the prefix ---------------------------------------------------------------- */

static void test_prefix(void **state)
{
    (void)state;
    /* relative: against the start-up directory; the pid is not in it */
    assert_prefix("callgrind.out", "/start/dir", "/start/dir/callgrind.out", 0);
    assert_prefix("sub/prof", "/start/dir", "/start/dir/sub/prof", 0);
    /* the start-up directory unknown: left relative */
    assert_prefix("callgrind.out", "", "callgrind.out", 0);
    assert_prefix("prof-%p", "", "prof-4242", 1);
    /* absolute: as given, whatever the directory */
    assert_prefix("/abs/callgrind.out", "/start/dir", "/abs/callgrind.out", 0);
    assert_prefix("/abs/prof-%p.out", "/start/dir", "/abs/prof-4242.out", 1);
    /* %p anywhere, as often as given; %% is one % */
    assert_prefix("p%p/x%p", "/s", "/s/p4242/x4242", 1);
    assert_prefix("100%%-%p", "/s", "/s/100%-4242", 1);
    assert_prefix("a%%b", "/s", "/s/a%b", 0);
    /* a % before anything else stays */
    assert_prefix("50%x%", "/s", "/s/50%x%", 0);
    /* "%%p" is an escaped % then p, no pid; but the pattern contains "%p",
     * and naming.c (strstr), cg_total_pattern and cgproflib.naming all take
     * that as naming the pid (naming.py's names_pid says so) */
    assert_prefix("a%%p", "/s", "/s/a%p", 1);
}

/* ---- the files of threads and parts -------------------------------------------- */

static void test_part_names(void **state)
{
    (void)state;
    /* no dumps on demand: <prefix>.<pid>-<NN> */
    assert_part("callgrind.out", "/start/dir", 1, 0, 0, "/start/dir/callgrind.out.4242-01");
    assert_part("callgrind.out", "/start/dir", 2, 7, 0, "/start/dir/callgrind.out.4242-02");
    /* with them: <prefix>.<pid>.<part>-<NN> */
    assert_part("callgrind.out", "/start/dir", 1, 1, 1, "/start/dir/callgrind.out.4242.1-01");
    assert_part("callgrind.out", "/start/dir", 12, 345, 1, "/start/dir/callgrind.out.4242.345-12");
    /* part 0 in the name is written as such */
    assert_part("/o/cg", "/start/dir", 3, 0, 1, "/o/cg.4242.0-03");
    /* thread 0: a sum of threads (CGPROF_THREAD_EXIT=merge) */
    assert_part("/o/cg", "", 0, 2, 1, "/o/cg.4242.2-00");
    /* threads from 100 on: more digits, not cut */
    assert_part("/o/cg", "", 100, 0, 0, "/o/cg.4242-100");
    assert_part("/o/cg", "", 12345, 9, 1, "/o/cg.4242.9-12345");
    /* %p in the pattern: the pid is there, not added again */
    assert_part("/o/prof-%p", "", 1, 0, 0, "/o/prof-4242-01");
    assert_part("/o/prof-%p", "", 4, 2, 1, "/o/prof-4242.2-04");
    assert_part("prof.%p.out", "/start", 1, 3, 1, "/start/prof.4242.out.3-01");
    /* %p only in the directory: the file name has no pid */
    assert_part("/o/run-%p/cg", "", 2, 0, 0, "/o/run-4242/cg-02");
    assert_part("/o/run-%p/cg", "", 2, 5, 1, "/o/run-4242/cg.5-02");
    /* %% escapes */
    assert_part("/o/100%%", "", 1, 0, 0, "/o/100%.4242-01");
    /* relative, start-up directory unknown */
    assert_part("cg", "", 1, 1, 1, "cg.4242.1-01");
}

static void test_total_names(void **state)
{
    (void)state;
    /* the last ".out" ending a word becomes ".total", the pid added */
    assert_total("callgrind.out", "/start/dir", "/start/dir/callgrind.total.4242");
    assert_total("/abs/callgrind.out", "/start/dir", "/abs/callgrind.total.4242");
    assert_total("/o/prof.%p.out", "", "/o/prof.4242.total");
    /* no ".out": the first %p becomes total.%p */
    assert_total("/o/prof-%p", "", "/o/prof-total.4242");
    /* neither: the pid added, then "total." before it */
    assert_total("/o/prof", "", "/o/prof.total.4242");
    /* ".output" is no ".out"; ".out" in a directory does not count */
    assert_total("/d.out/x.output", "", "/d.out/x.output.total.4242");
    /* relative, start-up directory unknown */
    assert_total("prof", "", "prof.total.4242");
}

/* The path files (docs/internals/paths-format.md): the part's name with the total's
 * word "paths", so that neither KCachegrind's <run>* nor callgrind.out*
 * takes one for a Callgrind file. */
static void assert_paths(const char *out, unsigned thread, unsigned part, int part_in_name, const char *expected)
{
    struct cg_names n = { out, PID, "/start/dir" };
    char dst[CG_OPT_PATH_MAX + 64];
    assert_int_equal(cg_name_paths(&n, thread, part, part_in_name, dst, sizeof dst), 0);
    assert_string_equal(dst, expected);
}

static void test_paths_names(void **state)
{
    (void)state;
    assert_paths("callgrind.out", 1, 1, 0, "/start/dir/callgrind.paths.4242-01");
    assert_paths("callgrind.out", 3, 2, 1, "/start/dir/callgrind.paths.4242.2-03");
    assert_paths("/tmp/prof", 1, 1, 0, "/tmp/prof.paths.4242-01");
    assert_paths("/o/prof-%p", 12, 1, 0, "/o/prof-paths.4242-12");
    assert_paths("/o/prof.%p.out", 1, 1, 0, "/o/prof.4242.paths-01");
}

/* ---- names that do not fit ------------------------------------------------------ */

static void test_too_long(void **state)
{
    (void)state;
    struct cg_names n = { "/o/cg", PID, "" };
    char dst[64];
    int with_pid;
    /* "/o/cg" is 5 bytes and its NUL: 6 fit, 5 do not */
    assert_int_equal(cg_name_prefix(&n, dst, 6, &with_pid), 0);
    assert_string_equal(dst, "/o/cg");
    assert_int_equal(cg_name_prefix(&n, dst, 5, &with_pid), -1);
    /* "/o/cg.4242.7-03" is 15 bytes */
    assert_int_equal(cg_name_part(&n, 3, 7, 1, dst, 16), 0);
    assert_string_equal(dst, "/o/cg.4242.7-03");
    assert_int_equal(cg_name_part(&n, 3, 7, 1, dst, 15), -1);
    /* "/o/cg.total.4242" is 16 bytes */
    assert_int_equal(cg_name_total(&n, dst, 17), 0);
    assert_string_equal(dst, "/o/cg.total.4242");
    assert_int_equal(cg_name_total(&n, dst, 16), -1);

    /* the start-up directory counts: "/start/cg" is 9 bytes */
    struct cg_names rel = { "cg", PID, "/start" };
    assert_int_equal(cg_name_prefix(&rel, dst, 10, &with_pid), 0);
    assert_string_equal(dst, "/start/cg");
    assert_int_equal(cg_name_prefix(&rel, dst, 9, &with_pid), -1);

    /* no limit of their own (the prefix's length is checked at start-up,
     * options.c): the names of a 4000-byte pattern, %p expanded, are made
     * in the caller's buffer, whose size is the only bound */
    static char big[4100], out[CG_OPT_PATH_MAX + 200];
    memset(big, 'a', 4000);
    big[0] = '/';
    strcpy(big + 4000, "%p");
    struct cg_names huge = { big, PID, "" };
    assert_int_equal(cg_name_prefix(&huge, out, sizeof out, &with_pid), 0);
    assert_int_equal(strlen(out), 4004);
    assert_int_equal(cg_name_prefix(&huge, out, 4005, &with_pid), 0);
    assert_int_equal(cg_name_prefix(&huge, out, 4004, &with_pid), -1);
    assert_int_equal(cg_name_part(&huge, 1, 1, 1, out, sizeof out), 0);
    assert_string_equal(out + 4004, ".1-01");
    assert_int_equal(cg_name_part(&huge, 1, 1, 1, out, 4010), 0);
    assert_int_equal(cg_name_part(&huge, 1, 1, 1, out, 4009), -1);
    assert_int_equal(cg_name_total(&huge, out, sizeof out), 0);
    assert_int_equal(strncmp(out + 3990, "aaaaaaaaaatotal.4242", 21), 0);
}

/* ---- what every run's names start with -------------------------------------------- */

/* The stems, and that every name of the pattern, for any pid, thread and
 * part, starts with one of them (the parts', the total's, the path
 * files'). */
static void assert_stems(const char *out, const char *parts, const char *total, const char *paths)
{
    struct cg_names n = { out, PID, "/s" };
    char p[CG_OPT_PATH_MAX], t[CG_OPT_PATH_MAX], q[CG_OPT_PATH_MAX];
    assert_int_equal(cg_name_stems(&n, p, t, q, sizeof p), 0);
    assert_string_equal(p, parts);
    assert_string_equal(t, total);
    assert_string_equal(q, paths);
    static const long pids[] = { 1, 7, 4242, 4194304 };
    for (unsigned i = 0; i < sizeof pids / sizeof pids[0]; i++) {
        struct cg_names m = { out, pids[i], "/s" };
        char name[CG_OPT_PATH_MAX + 64];
        for (int in_name = 0; in_name < 2; in_name++) {
            assert_int_equal(cg_name_part(&m, 3, 12, in_name, name, sizeof name), 0);
            assert_true(strncmp(strrchr(name, '/') + 1, parts, strlen(parts)) == 0);
            assert_int_equal(cg_name_paths(&m, 3, 12, in_name, name, sizeof name), 0);
            assert_true(strncmp(strrchr(name, '/') + 1, paths, strlen(paths)) == 0);
        }
        assert_int_equal(cg_name_total(&m, name, sizeof name), 0);
        assert_true(strncmp(strrchr(name, '/') + 1, total, strlen(total)) == 0);
    }
}

static void test_stems(void **state)
{
    (void)state;
    assert_stems("callgrind.out", "callgrind.out.", "callgrind.total.", "callgrind.paths.");
    assert_stems("/abs/myapp.out", "myapp.out.", "myapp.total.", "myapp.paths.");
    assert_stems("/tmp/prof", "prof.", "prof.total.", "prof.paths.");
    assert_stems("prof-%p.cg", "prof-", "prof-total.", "prof-paths.");
    /* %p in the directory: the file name has none */
    assert_stems("/tmp/%p/prof", "prof", "total.prof", "paths.prof");
    /* a name that is all pid: every name starts with "" */
    assert_stems("/tmp/%p", "", "total.", "paths.");
    /* %% is a % in the names: the stem stops before it */
    assert_stems("100%%-%p", "100", "100", "100");
    assert_stems("a%%b", "a", "a", "a");
    char dst[8], other[8], third[8];
    struct cg_names n = { "callgrind.out", PID, "" };
    assert_int_equal(cg_name_stems(&n, dst, other, third, sizeof dst), -1);
}

/* ---- the parts already written under this pid ------------------------------------ */

static char tmpdir[64];

static void touch(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static unsigned last_part(const char *out, const char *cwd)
{
    struct cg_names n = { out, PID, cwd };
    return cg_name_last_part(&n);
}

static void test_last_part(void **state)
{
    (void)state;
    char out[256], pct[256];
    snprintf(out, sizeof out, "%s/cg.out", tmpdir);
    snprintf(pct, sizeof pct, "%s/prof-%%p", tmpdir);

    /* empty directory */
    assert_int_equal(last_part(out, ""), 0);
    /* none of these is a part of pid 4242 under cg.out */
    touch("cg.out.4243.50-01");   /* another pid */
    touch("cg.out.42420.60-01");  /* a pid that starts like it */
    touch("cg.out.4242-01");      /* a run without parts */
    touch("cg.out.4242.x-01");    /* no number */
    touch("cg.out.4242.-01");     /* an empty number */
    touch("cg.out.4242.70");      /* no thread */
    touch("cg.out.4242.80_01");   /* not a dash */
    touch("xcg.out.4242.90-01");  /* another prefix */
    touch("cg.out.4242.1000000-01"); /* beyond the numbers parts take */
    touch("cg.out.4242.4294967299-01"); /* beyond unsigned */
    touch("prof-4242.33-01");     /* the other pattern's */
    assert_int_equal(last_part(out, ""), 0);

    /* the highest part of this pid, whatever the thread and the order */
    touch("cg.out.4242.3-01");
    assert_int_equal(last_part(out, ""), 3);
    touch("cg.out.4242.17-02");
    touch("cg.out.4242.9-100");
    assert_int_equal(last_part(out, ""), 17);
    touch("cg.out.4242.999999-01");
    assert_int_equal(last_part(out, ""), 999999);

    /* a relative pattern, in the start-up directory */
    assert_int_equal(last_part("cg.out", tmpdir), 999999);
    /* relative and no start-up directory: no directory to look in */
    assert_int_equal(last_part("cg.out", ""), 0);

    /* with %p: <prefix with the pid>.<part>-NN */
    assert_int_equal(last_part(pct, ""), 33);
    touch("prof-4242.34-02");
    touch("prof-4243.99-01");
    touch("prof-4242-01");
    assert_int_equal(last_part(pct, ""), 34);

    /* a directory that does not exist */
    char missing[256];
    snprintf(missing, sizeof missing, "%s/none/cg.out", tmpdir);
    assert_int_equal(last_part(missing, ""), 0);
}

static void test_scan_unnumbered(void **state)
{
    (void)state;
    char out[256];
    snprintf(out, sizeof out, "%s/sc.out", tmpdir);
    struct cg_names n = { out, PID, "" };
    int unnumbered = -1;
    assert_int_equal(cg_name_scan(&n, &unnumbered), 0);
    assert_int_equal(unnumbered, 0);
    /* parts, another pid that starts alike, a dash without a number */
    touch("sc.out.4242.2-01");
    touch("sc.out.42420-01");
    touch("sc.out.4242-x");
    assert_int_equal(cg_name_scan(&n, &unnumbered), 2);
    assert_int_equal(unnumbered, 0);
    /* a file of this pid without a part number: another process's, when
     * found before this one wrote any (dump.c) */
    touch("sc.out.4242-03");
    assert_int_equal(cg_name_scan(&n, &unnumbered), 2);
    assert_int_equal(unnumbered, 1);
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(tmpdir);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cgprof-test-naming.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_part_names),
        cmocka_unit_test(test_total_names),
        cmocka_unit_test(test_paths_names),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_stems),
        cmocka_unit_test(test_last_part),
        cmocka_unit_test(test_scan_unnumbered),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tmpdir();
    return rc;
}
