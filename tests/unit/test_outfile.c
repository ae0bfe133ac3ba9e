/* Unit tests of writes past the file-size limit (RLIMIT_FSIZE), through
 * outfile.c and cg_write_all (util.c): they must fail with EFBIG instead of
 * killing the process with SIGXFSZ, and leave the program's own SIGXFSZ
 * (its action, a signal of its own pending) alone.
 *
 * The limit is set in a child process (it is the process's, and a failure
 * is a death by SIGXFSZ, which must not end the test program). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
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
        cmocka_unit_test(test_write_past_the_limit_fails_and_lives),
        cmocka_unit_test(test_programs_own_pending_signal_is_kept),
        cmocka_unit_test(test_programs_handler_is_left_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
