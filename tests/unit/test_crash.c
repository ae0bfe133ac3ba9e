/* Unit tests of the crash path (crash.c, and dump.c's cg_dump_crash):
 * CGPROF_CRASH=1 writes the profile of a process that dies of a fatal
 * signal, and lets it die of that signal.
 *
 * Why: the crash path runs in a signal handler and a copy of the process
 * made there (_Fork); nothing else exercises it, and what it must keep
 * (the exit status, a handler the program set, nothing written after the
 * exit dump) is what a user of a crashing program depends on. Each
 * scenario is a child process (profile_test.h) that really crashes: a
 * write into the null page, or abort(); the parent checks how it died
 * and what it wrote. The children are made non-dumpable: no core file.
 *
 * The children first give the fatal signals their default action, as a
 * program starts with (cmocka's own handlers are inherited from the test).
 * Where a SIGSEGV handler cannot be given back its default action
 * (AddressSanitizer run with allow_user_segv_handler=0 keeps its own), the
 * SIGSEGV scenario skips itself: cgprof leaves a handler it finds alone,
 * which test_program_handler_is_left_alone checks. The sanitizer build of
 * this project's toolchain lets it run.
 *
 * Addresses are synthetic (see test_dump.c). */
#include "scenario.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "crash.h"

#define CHILD_SKIPPED 77

static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

/* In the child: no core file, the fatal signals at their default action,
 * the runtime with CGPROF_CRASH=1. */
static void crash_init(void)
{
    struct rlimit no_core = { 0, 0 };
    REQUIRE(setrlimit(RLIMIT_CORE, &no_core) == 0 && prctl(PR_SET_DUMPABLE, 0) == 0);
    for (unsigned i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], SIG_DFL);
    const char *env[] = { out_env, "CGPROF_CRASH=1", NULL };
    runtime_init(env);
}

static int handler_is_default(int sig)
{
    struct sigaction cur;
    REQUIRE(sigaction(sig, NULL, &cur) == 0);
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

/* Runs the scenario in a child that must die of SIGABRT. */
static pid_t run_aborting(void (*scenario)(void *))
{
    pid_t pid = child_start(scenario, NULL, NULL);
    int status = child_wait(pid);
    if (!WIFSIGNALED(status))
        assert_exited_ok(status); /* says how it ended */
    assert_int_equal(WTERMSIG(status), SIGABRT);
    return pid;
}

/* A fault at address 0x10, in the page a null pointer points into: the
 * write a null pointer's member at offset 16 makes (the address comes from
 * an integer, so that UBSan does not report the null pointer before the
 * fault happens). */
static __attribute__((noinline)) void fault(void)
{
    volatile uintptr_t at = 0x10;
    *(volatile int *)at = 1;
}

/* A thread blocked with a call in progress while the process crashes. */
static struct sim wsim;
static sem_t wready, wforever;

static void *blocked_thread(void *arg)
{
    (void)arg;
    sim_attach(&wsim);
    cg_thread_set_name("worker");
    sim_call(&wsim, WMAIN, ROOT_SITE, 0);
    sim_at(&wsim, 7);
    sem_post(&wready);
    while (1)
        sem_wait(&wforever);
    return NULL;
}

/* t=0 MAIN; t=10..20 F; t=25 G called; at 40, while thread 2 waits with
 * WMAIN running (its clock at 7), a fault. */
static void segv_scenario(void *arg)
{
    (void)arg;
    crash_init();
    if (!handler_is_default(SIGSEGV))
        _exit(CHILD_SKIPPED);
    struct sim s;
    sim_attach(&s);
    REQUIRE(sem_init(&wready, 0, 0) == 0 && sem_init(&wforever, 0, 0) == 0);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, blocked_thread, NULL) == 0);
    while (sem_wait(&wready) != 0)
        ;
    sim_call(&s, MAIN, ROOT_SITE, 0);
    sim_call(&s, F, MAIN + 0x10, 10);
    sim_ret(&s, F, 20);
    sim_call(&s, G, MAIN + 0x20, 25);
    sim_at(&s, 40);
    cg_crash_install();
    REQUIRE(!handler_is_default(SIGSEGV));
    fault();
}

static void test_segv_writes_the_profile_and_dies_of_it(void **state)
{
    (void)state;
    set_dir("segv");
    pid_t pid = child_start(segv_scenario, NULL, NULL);
    int status = child_wait(pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_SKIPPED)
        skip(); /* a SIGSEGV handler that cannot be replaced (AddressSanitizer's) */
    if (!WIFSIGNALED(status))
        assert_exited_ok(status); /* says how it ended */
    assert_int_equal(WTERMSIG(status), SIGSEGV);
    assert_false(WCOREDUMP(status));

    long p = (long)pid;
    char expected[512];
    snprintf(expected, sizeof expected, "cg.out.%ld-01 cg.out.%ld-02 cg.total.%ld", p, p, p);
    assert_listing(expected);
    /* under the crashed process's pid, not the copy's that wrote it */
    ASSERT_PART(pid, 0, 1, { .part = 1, .trigger = "Crash: SIGSEGV at address 0x10",
                             .descs = { { "Calls in progress", "2 (counted up to the dump)" } },
                             .calls = { { ROOT_FN, MAIN, 1, 40 }, { MAIN, F, 1, 10 }, { MAIN, G, 1, 15 } },
                             .selfs = { { MAIN, 15 }, { F, 10 }, { G, 15 } } });
    /* the other thread, read from its tables in the copy */
    ASSERT_PART(pid, 0, 2, { .trigger = "Crash: SIGSEGV at address 0x10", .descs = { { "Thread name", "worker" } },
                             .calls = { { ROOT_FN, WMAIN, 1, 7 } }, .some_calls = 1 });
    ASSERT_TOTAL(pid, { .trigger = "Crash: SIGSEGV at address 0x10",
                        .descs = { { "Thread name", "total of 2 threads, 2 parts summed (CGPROF_TOTAL)" },
                                   { "Calls in progress", "3 (counted up to the dump)" } },
                        .calls = { { ROOT_FN, MAIN, 1, 40 }, { ROOT_FN, WMAIN, 1, 7 } }, .some_calls = 1,
                        .summary = 47 });
}

/* A dump on demand first (part 1 at 30), then abort() at 50 with MAIN and
 * F running: t=0 MAIN; t=10..20 G; t=40 F called. */
static void abort_scenario(void *arg)
{
    (void)arg;
    crash_init();
    struct sim s;
    sim_attach(&s);
    sim_call(&s, MAIN, ROOT_SITE, 0);
    sim_call(&s, G, MAIN + 0x20, 10);
    sim_ret(&s, G, 20);
    cg_crash_install();
    sim_at(&s, 30);
    REQUIRE(cg_dump_now("before") == 0);
    sim_call(&s, F, MAIN + 0x10, 40);
    sim_at(&s, 50);
    abort();
}

static void test_abort_writes_the_profile_and_dies_of_it(void **state)
{
    (void)state;
    set_dir("abort");
    pid_t pid = run_aborting(abort_scenario);
    long p = (long)pid;
    char expected[512];
    snprintf(expected, sizeof expected, "cg.out.%ld.1-01 cg.out.%ld.2-01 cg.total.%ld", p, p, p);
    assert_listing(expected);
    ASSERT_PART(pid, 2, 1, { .part = 2, .trigger = "Crash: SIGABRT",
                             .descs = { { "Calls in progress", "2 (counted up to the dump)" },
                                        { "Calls continued", CONTINUED(1) } },
                             .calls = { { ROOT_FN, MAIN, 0, 20 }, { MAIN, F, 1, 10 } },
                             .selfs = { { MAIN, 10 }, { F, 10 } } });
    ASSERT_TOTAL(pid, { .part = 2, .trigger = "Crash: SIGABRT",
                        .calls = { { ROOT_FN, MAIN, 1, 50 }, { MAIN, G, 1, 10 }, { MAIN, F, 1, 10 } },
                        .some_calls = 1 });
}

/* The program's own handler, set before the runtime installs its own:
 * left in place, and it runs. */
static char marker[600];

static void own_handler(int sig)
{
    int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        char c = sig == SIGSEGV ? 'S' : sig == SIGABRT ? 'A' : '?';
        if (write(fd, &c, 1) != 1)
            c = 0;
        close(fd);
    }
    _exit(42);
}

static void own_handler_scenario(void *arg)
{
    int sig = *(const int *)arg;
    crash_init();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = own_handler;
    sigemptyset(&sa.sa_mask);
    REQUIRE(sigaction(sig, &sa, NULL) == 0);
    struct sim s;
    sim_attach(&s);
    sim_call(&s, MAIN, ROOT_SITE, 0);
    sim_at(&s, 10);
    cg_crash_install();
    struct sigaction cur;
    REQUIRE(sigaction(sig, NULL, &cur) == 0 && cur.sa_handler == own_handler);
    if (sig == SIGSEGV)
        fault();
    else
        abort();
}

static void program_handler_case(const char *name, int sig, const char *mark)
{
    set_dir(name);
    snprintf(marker, sizeof marker, "%s/marker", dir);
    pid_t pid = child_start(own_handler_scenario, &sig, NULL);
    int status = child_wait(pid);
    if (WIFSIGNALED(status))
        fail_msg("%s: the child died of signal %d: the program's handler did not run", name, WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 42);
    assert_listing("marker");
    char *m = read_text(marker);
    assert_non_null(m);
    assert_string_equal(m, mark);
    free(m);
}

static void test_program_handler_is_left_alone(void **state)
{
    (void)state;
    program_handler_case("own-segv", SIGSEGV, "S");
    program_handler_case("own-abrt", SIGABRT, "A");
}

/* After the exit dump a crash writes nothing more (and still dies of its
 * signal). */
static void after_final_scenario(void *arg)
{
    (void)arg;
    crash_init();
    struct sim s;
    sim_attach(&s);
    sim_call(&s, MAIN, ROOT_SITE, 0);
    sim_at(&s, 10);
    cg_crash_install();
    cg_dump_final("Program termination");
    sim_call(&s, F, MAIN + 0x10, 20);
    sim_at(&s, 30);
    abort();
}

static void test_crash_after_exit_dump_writes_nothing(void **state)
{
    (void)state;
    set_dir("after-final");
    pid_t pid = run_aborting(after_final_scenario);
    long p = (long)pid;
    char expected[512];
    snprintf(expected, sizeof expected, "cg.out.%ld-01 cg.total.%ld", p, p);
    assert_listing(expected);
    ASSERT_PART(pid, 0, 1, { .trigger = "Program termination", .calls = { { ROOT_FN, MAIN, 1, 10 } } });
}

/* CGPROF_CRASH unset (off by default): no handler is installed (under
 * AddressSanitizer some signals have its handlers: those stay too). */
static void off_scenario(void *arg)
{
    (void)arg;
    int before[sizeof fatal / sizeof fatal[0]];
    for (unsigned i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        signal(fatal[i], SIG_DFL);
        before[i] = handler_is_default(fatal[i]);
    }
    REQUIRE(before[4] == 1); /* SIGABRT: the default even under ASan */
    const char *env[] = { out_env, NULL };
    runtime_init(env);
    cg_crash_install();
    for (unsigned i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        REQUIRE(handler_is_default(fatal[i]) == before[i]);
}

static void test_off_by_default(void **state)
{
    (void)state;
    set_dir("off");
    run_child(off_scenario, NULL, NULL);
    assert_listing("");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segv_writes_the_profile_and_dies_of_it),
        cmocka_unit_test(test_abort_writes_the_profile_and_dies_of_it),
        cmocka_unit_test(test_program_handler_is_left_alone),
        cmocka_unit_test(test_crash_after_exit_dump_writes_nothing),
        cmocka_unit_test(test_off_by_default),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
