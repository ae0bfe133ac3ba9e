/* Unit tests of outfile.c and of cg_write_all (util.c): the temporary
 * files' names, which no reader may take for part of a run, the clean-up
 * of those that dead processes left, and writes past the file-size limit
 * (RLIMIT_FSIZE), which must fail with EFBIG instead of killing the
 * process with SIGXFSZ.
 *
 * The clean-up is given a temporary directory (mkdtemp, removed at the
 * end) holding temporaries of a dead process (a child that exited and was
 * reaped), of live ones, and files that only look like temporaries. The
 * file-size limit is set in a child process (it is the process's, and a
 * failure is a death by SIGXFSZ, which must not end the test program). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"
#include "util.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cgprof-test-outfile-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A pid that no process has: a child's, exited and reaped. */
static long dead_pid(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return (long)pid;
}

static void touch(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
}

static int exists(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

/* ---- names ------------------------------------------------------------------ */

static void test_tmp_name(void **state)
{
    (void)state;
    char dst[PATH_MAX];
    assert_int_equal(cg_out_tmp_name("/d/callgrind.out.42-01", 42, 3, dst, sizeof dst), 0);
    assert_string_equal(dst, "/d/.callgrind.out.42-01.cgprof-tmp.42.3");
    assert_int_equal(cg_out_tmp_name("/callgrind.total.7", 9, 0, dst, sizeof dst), 0);
    assert_string_equal(dst, "/.callgrind.total.7.cgprof-tmp.9.0");
    /* a relative path (start-up directory unknown): in the same directory */
    assert_int_equal(cg_out_tmp_name("prof.1-01", 1, 4294967295u, dst, sizeof dst), 0);
    assert_string_equal(dst, ".prof.1-01.cgprof-tmp.1.4294967295");
    assert_int_equal(cg_out_tmp_name("/d/callgrind.out.42-01", 42, 3, dst, 20), -1);
}

/* The temporary never starts with its file's name, nor with any run's: a
 * reader globbing <run>* (KCachegrind), callgrind.out* (callgrind_annotate)
 * or callgrind.out.* (scripts) does not see it. */
static void test_tmp_name_starts_with_no_run(void **state)
{
    (void)state;
    static const char *const names[] = { "callgrind.out.42-01", "callgrind.out.42.3-02", ".hidden.42-01", "x" };
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[64], dst[PATH_MAX];
        snprintf(path, sizeof path, "/d/%s", names[i]);
        assert_int_equal(cg_out_tmp_name(path, 42, 0, dst, sizeof dst), 0);
        const char *base = strrchr(dst, '/') + 1;
        assert_int_equal(base[0], '.');
        assert_true(strncmp(base, names[i], strlen(names[i])) != 0);
        assert_true(strncmp(base, "callgrind.out", 13) != 0);
    }
}

/* A final name as long as a name can be: its temporary is cut to fit
 * NAME_MAX, keeping what the clean-up reads. */
static void test_tmp_name_of_longest_name(void **state)
{
    (void)state;
    char path[NAME_MAX + 8], dst[PATH_MAX];
    path[0] = '/';
    memset(path + 1, 'a', NAME_MAX);
    path[NAME_MAX + 1] = 0;
    assert_int_equal(cg_out_tmp_name(path, 4194304, 4294967295u, dst, sizeof dst), 0);
    assert_int_equal(strlen(dst + 1), NAME_MAX);
    assert_int_equal(dst[1], '.');
    const char *end = ".cgprof-tmp.4194304.4294967295";
    assert_string_equal(dst + 1 + NAME_MAX - strlen(end), end);
    const char *stems[] = { "aaa" };
    long pid = 0;
    assert_true(cg_out_tmp_parse(dst + 1, stems, 1, &pid));
    assert_int_equal(pid, 4194304);
}

static void test_tmp_parse(void **state)
{
    (void)state;
    const char *stems[] = { "callgrind.out.", "callgrind.total." };
    long pid = 0;
    assert_true(cg_out_tmp_parse(".callgrind.out.42-01.cgprof-tmp.42.3", stems, 2, &pid));
    assert_int_equal(pid, 42);
    assert_true(cg_out_tmp_parse(".callgrind.total.7.cgprof-tmp.9.0", stems, 2, &pid));
    assert_int_equal(pid, 9);
    /* the crash copy writes under the crashed pid, as its own pid */
    assert_true(cg_out_tmp_parse(".callgrind.out.100.2-03.cgprof-tmp.101.12", stems, 2, &pid));
    assert_int_equal(pid, 101);
    /* names that only look alike */
    static const char *const not_ours[] = {
        "callgrind.out.42-01.cgprof-tmp.42.3",     /* no leading dot */
        "callgrind.out.42-01.tmp.42.3",            /* the old name */
        ".callgrind.out.42-01.tmp.42.3",           /* another marker */
        ".callgrind.out.42-01.cgprof-tmp.42",      /* one number */
        ".callgrind.out.42-01.cgprof-tmp.42.",     /* an empty one */
        ".callgrind.out.42-01.cgprof-tmp..3",      /* an empty pid */
        ".callgrind.out.42-01.cgprof-tmp.0.3",     /* pid 0 */
        ".callgrind.out.42-01.cgprof-tmp.042.3",   /* not as printf writes it */
        ".callgrind.out.42-01.cgprof-tmp.42.03",   /* the same */
        ".callgrind.out.42-01.cgprof-tmp.42.3x",   /* not a number */
        ".callgrind.out.42-01.cgprof-tmp.-42.3",   /* a sign */
        ".callgrind.out.42-01.cgprof-tmp.2147483648.3", /* not a pid */
        ".callgrind.out.42-01.cgprof-tmp.42.4294967296", /* not a count */
        ".callgrind.out.42-01.cgprof-tmp.42.12345678901", /* too long */
        ".other.out.42-01.cgprof-tmp.42.3",        /* another prefix */
        ".callgrind.out.cgprof-tmp.42.3",          /* shorter than the stem ("callgrind.out.") */
        ".cgprof-tmp.42.3",                        /* no file name */
        "",
        ".",
    };
    for (unsigned i = 0; i < sizeof not_ours / sizeof not_ours[0]; i++) {
        pid = -1;
        if (cg_out_tmp_parse(not_ours[i], stems, 2, &pid))
            fail_msg("%s taken for a temporary (pid %ld)", not_ours[i], pid);
        assert_int_equal(pid, -1);
    }
    /* an empty stem (a prefix such as %p, whose name is all pid) takes any
     * file name of the form */
    const char *any[] = { "" };
    assert_true(cg_out_tmp_parse(".4242-01.cgprof-tmp.4242.0", any, 1, &pid));
    assert_false(cg_out_tmp_parse(".4242-01.cgprof-tmp.4242.0", any, 0, &pid));
}

/* ---- the clean-up ------------------------------------------------------------ */

struct removed {
    char names[8][128];
    long pids[8];
    unsigned n;
};

static void on_removed(void *ctx, const char *name, long pid)
{
    struct removed *r = ctx;
    assert_true(r->n < 8);
    snprintf(r->names[r->n], sizeof r->names[0], "%s", name);
    r->pids[r->n++] = pid;
}

static void test_clean_removes_only_dead_processes_temporaries(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/clean", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    long dead = dead_pid(), live = (long)getppid(), self = (long)getpid();
    char dead_part[128], dead_total[128], live_part[128], self_part[128], dead_link[128], dead_dir[128],
        dead_other[128], old_style[128], no_count[128];
    snprintf(dead_part, sizeof dead_part, ".callgrind.out.%ld-01.cgprof-tmp.%ld.0", dead, dead);
    snprintf(dead_total, sizeof dead_total, ".callgrind.total.%ld.cgprof-tmp.%ld.7", dead, dead);
    snprintf(live_part, sizeof live_part, ".callgrind.out.%ld-01.cgprof-tmp.%ld.0", live, live);
    snprintf(self_part, sizeof self_part, ".callgrind.out.%ld-02.cgprof-tmp.%ld.1", self, self);
    snprintf(dead_link, sizeof dead_link, ".callgrind.out.%ld-02.cgprof-tmp.%ld.1", dead, dead);
    snprintf(dead_dir, sizeof dead_dir, ".callgrind.out.%ld-03.cgprof-tmp.%ld.2", dead, dead);
    snprintf(dead_other, sizeof dead_other, ".other.out.%ld-01.cgprof-tmp.%ld.0", dead, dead);
    snprintf(old_style, sizeof old_style, "callgrind.out.%ld-01.tmp.%ld.0", dead, dead);
    snprintf(no_count, sizeof no_count, ".callgrind.out.%ld-01.cgprof-tmp.%ld", dead, dead);
    touch(dir, dead_part);
    touch(dir, dead_total);
    touch(dir, live_part);
    touch(dir, self_part);
    touch(dir, dead_other);
    touch(dir, old_style);
    touch(dir, no_count);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, dead_link);
    assert_int_equal(symlink("/nonexistent", path), 0);
    snprintf(path, sizeof path, "%s/%s", dir, dead_dir);
    assert_int_equal(mkdir(path, 0700), 0);

    const char *stems[] = { "callgrind.out.", "callgrind.total." };
    struct removed r = { .n = 0 };
    assert_int_equal(cg_out_clean(dir, stems, 2, on_removed, &r), 2);
    assert_int_equal(r.n, 2);
    int part_first = strcmp(r.names[0], dead_part) == 0;
    assert_string_equal(r.names[!part_first], dead_part);
    assert_string_equal(r.names[part_first], dead_total);
    assert_int_equal(r.pids[0], dead);
    assert_int_equal(r.pids[1], dead);
    assert_false(exists(dir, dead_part));
    assert_false(exists(dir, dead_total));
    /* kept: a live process's, our own, a link and a directory (not files
     * the runtime makes), another prefix's, names that only look alike */
    assert_true(exists(dir, live_part));
    assert_true(exists(dir, self_part));
    assert_true(exists(dir, dead_link));
    assert_true(exists(dir, dead_dir));
    assert_true(exists(dir, dead_other));
    assert_true(exists(dir, old_style));
    assert_true(exists(dir, no_count));

    /* another user's file is not ours to remove (root only: chown) */
    if (geteuid() == 0) {
        snprintf(path, sizeof path, "%s/%s", dir, dead_part);
        touch(dir, dead_part);
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(cg_out_clean(dir, stems, 2, NULL, NULL), 0);
        assert_true(exists(dir, dead_part));
    }
    /* a directory that cannot be read: nothing, errno untouched */
    errno = 1234;
    assert_int_equal(cg_out_clean("/nonexistent/dir", stems, 2, NULL, NULL), 0);
    assert_int_equal(errno, 1234);
}

/* ---- the file-size limit -------------------------------------------------------- */

static char limited_path[400];
static rlim_t limited_to;

/* Runs fn in a child whose file-size limit is `limit` bytes: it must exit
 * with 0 (any other status is a failed check; a death by SIGXFSZ is the
 * bug). */
static void in_limited_child(void (*fn)(void), rlim_t limit)
{
    limited_to = limit;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = { limit, RLIM_INFINITY };
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(90);
        fn();
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the child died of signal %d", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        fail_msg("check %d failed in the child", WEXITSTATUS(status));
}

#define CHECK(n, cond)                                                                                      \
    do {                                                                                                   \
        if (!(cond))                                                                                       \
            _exit(n);                                                                                      \
    } while (0)

static int xfsz_pending(void)
{
    sigset_t p;
    return sigpending(&p) == 0 && sigismember(&p, SIGXFSZ);
}

static int xfsz_blocked(void)
{
    sigset_t m;
    return pthread_sigmask(SIG_BLOCK, NULL, &m) == 0 && sigismember(&m, SIGXFSZ);
}


/* A file past the limit: EFBIG, the temporary removed, the program alive
 * with its default action for SIGXFSZ, its mask and no signal pending. */
static void past_the_limit(void)
{
    struct sigaction sa;
    CHECK(1, sigaction(SIGXFSZ, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
    struct cg_out_file o;
    CHECK(2, cg_out_open(&o, limited_path) == 0);
    char data[3000];
    memset(data, 'x', sizeof data);
    errno = 77;
    CHECK(3, cg_out_write(&o, data, sizeof data) == EFBIG);
    CHECK(4, errno == 77);
    CHECK(5, cg_out_write(&o, data, sizeof data) == EFBIG); /* the first error stays */
    CHECK(6, cg_out_close(&o, limited_path, 1) == EFBIG);
    CHECK(7, access(o.tmp, F_OK) != 0 && access(limited_path, F_OK) != 0);
    CHECK(8, !xfsz_pending() && !xfsz_blocked());
    CHECK(9, sigaction(SIGXFSZ, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
    if (limited_to < 1000)
        return;
    /* under the limit: written */
    CHECK(10, cg_out_open(&o, limited_path) == 0);
    CHECK(11, cg_out_write(&o, data, 1000) == 0);
    CHECK(12, cg_out_close(&o, limited_path, 1) == 0);
    struct stat st;
    CHECK(13, stat(limited_path, &st) == 0 && st.st_size == 1000);
    unlink(limited_path);
}

static void test_write_past_the_limit_fails_and_lives(void **state)
{
    (void)state;
    snprintf(limited_path, sizeof limited_path, "%s/limited.out", tmpdir);
    in_limited_child(past_the_limit, 2048);
    in_limited_child(past_the_limit, 0);
}

/* The program's own SIGXFSZ, pending (blocked) before the runtime writes,
 * is its own: still pending after, once, and the program's mask (SIGXFSZ
 * blocked) kept. */
static void own_signal_kept(void)
{
    sigset_t x;
    sigemptyset(&x);
    sigaddset(&x, SIGXFSZ);
    CHECK(1, pthread_sigmask(SIG_BLOCK, &x, NULL) == 0);
    CHECK(2, raise(SIGXFSZ) == 0 && xfsz_pending());
    struct cg_out_file o;
    char data[3000];
    memset(data, 'x', sizeof data);
    CHECK(3, cg_out_open(&o, limited_path) == 0);
    CHECK(4, cg_out_write(&o, data, sizeof data) == EFBIG);
    CHECK(5, cg_out_close(&o, limited_path, 1) == EFBIG);
    CHECK(6, xfsz_blocked() && xfsz_pending());
    struct timespec zero = { 0, 0 };
    CHECK(7, sigtimedwait(&x, NULL, &zero) == SIGXFSZ);
    CHECK(8, !xfsz_pending());
}

static void test_programs_own_pending_signal_is_kept(void **state)
{
    (void)state;
    snprintf(limited_path, sizeof limited_path, "%s/own.out", tmpdir);
    in_limited_child(own_signal_kept, 2048);
}

/* The program's handler for SIGXFSZ is not run by the runtime's write,
 * and still runs for the program's own. */
static volatile sig_atomic_t handled;

static void on_xfsz(int sig)
{
    (void)sig;
    handled++;
}

static void own_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_xfsz;
    CHECK(1, sigaction(SIGXFSZ, &sa, NULL) == 0);
    int fd = open(limited_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(2, fd >= 0);
    char data[3000];
    memset(data, 'x', sizeof data);
    CHECK(3, cg_write_all(fd, data, sizeof data) == EFBIG);
    CHECK(4, handled == 0 && !xfsz_pending());
    CHECK(5, write(fd, data, sizeof data) < 0 && errno == EFBIG); /* the program's own write */
    CHECK(6, handled == 1);
    close(fd);
    unlink(limited_path);
}

static void test_programs_handler_is_left_alone(void **state)
{
    (void)state;
    snprintf(limited_path, sizeof limited_path, "%s/handler.out", tmpdir);
    in_limited_child(own_handler, 2048);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmp_name),
        cmocka_unit_test(test_tmp_name_starts_with_no_run),
        cmocka_unit_test(test_tmp_name_of_longest_name),
        cmocka_unit_test(test_tmp_parse),
        cmocka_unit_test(test_clean_removes_only_dead_processes_temporaries),
        cmocka_unit_test(test_write_past_the_limit_fails_and_lives),
        cmocka_unit_test(test_programs_own_pending_signal_is_kept),
        cmocka_unit_test(test_programs_handler_is_left_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
