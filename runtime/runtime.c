#define _GNU_SOURCE
#include "runtime.h"
#include "sample.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "dump.h"
#include "filter.h"
#include "thread.h"
#include "nonlocal.h"
#include "util.h"

extern char **environ;

int cg_collecting;
int cg_fast_mode;
struct cg_options cg_opts;

enum { INIT_NONE, INIT_RUNNING, INIT_DONE, INIT_OFF };
static int init_state;

enum { CMDLINE_MAX = 64 * 1024 };
static const char *cmdline = "";
static pid_t pid;
static char cwd[4096];

static void report_option(void *ctx, const char *msg)
{
    (void)ctx;
    cg_warn("%s", msg);
}

/* /proc/self/cmdline with its NULs turned into spaces. Read at start-up,
 * before the program can rewrite its argv. mmap, not malloc: this may run
 * from the first hook, inside the program's own allocator. */
static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char *buf = mmap(NULL, CMDLINE_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        close(fd);
        return;
    }
    size_t len = 0;
    ssize_t n;
    while (len < CMDLINE_MAX - 1 && (n = read(fd, buf + len, CMDLINE_MAX - 1 - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    while (len > 0 && buf[len - 1] == 0)
        len--;
    for (size_t i = 0; i < len; i++)
        if (buf[i] == 0 || buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ' ';
    buf[len] = 0;
    cmdline = buf;
}

static int initialise(void)
{
    /* A set-user-ID or otherwise privileged program: files named by the
     * environment of an unprivileged user must not be written. */
    if (getauxval(AT_SECURE))
        return -1;
    cg_options_parse(&cg_opts, environ, report_option, NULL);
    const char *why;
    cg_clock_init((enum cg_clock_kind)cg_opts.clock, &why);
    if (why)
        cg_warn("CGPROF_CLOCK=tsc is not possible (%s); using monotonic", why);
    cg_filter_init();
    read_cmdline();
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    if (cg_thread_init() != 0 || cg_dump_init() != 0 || cg_sample_init() != 0) {
        cg_warn("cannot set up thread and fork handling; not profiling");
        return -1;
    }
    pid = getpid();
    cg_collecting = 1;
    cg_fast_mode = cg_sampling ? CG_FAST_SAMPLE : cg_clock_use_tsc ? CG_FAST_TSC : CG_FAST_NONE;
    return 0;
}

int cg_runtime_ready(void)
{
    int s = __atomic_load_n(&init_state, __ATOMIC_ACQUIRE);
    if (cg_likely(s == INIT_DONE))
        return 1;
    if (s != INIT_NONE)
        return 0;
    if (!__atomic_compare_exchange_n(&init_state, &s, INIT_RUNNING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s == INIT_DONE;
    int saved = errno;
    int rc = initialise();
    errno = saved;
    __atomic_store_n(&init_state, rc == 0 ? INIT_DONE : INIT_OFF, __ATOMIC_RELEASE);
    return rc == 0;
}

const char *cg_runtime_cmdline(void)
{
    return cmdline;
}

const char *cg_runtime_cwd(void)
{
    return cwd;
}

pid_t cg_runtime_pid(void)
{
    return pid;
}

void cg_runtime_forked(void)
{
    pid = getpid();
}

/* The service thread is started here, never from a hook: a thread's first
 * hook may run inside the program's allocator or a signal handler. */
__attribute__((constructor)) static void cg_constructor(void)
{
    if (cg_runtime_ready()) {
        /* Not from initialise(): it may run in a thread's first hook, and
         * resolving the skip patterns reads symbol tables. Arcs made before
         * this point (by constructors of libraries that ran before ours)
         * are not filtered. */
        cg_filter_scan();
        cg_nonlocal_init();
        cg_thread_watch_exit();
        cg_dump_start_service();
    }
}

/* Runs from exit() (return from main, exit() anywhere, or the last thread
 * ending) after the program's atexit handlers and its own destructors. */
__attribute__((destructor)) static void cg_destructor(void)
{
    if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE)
        return;
    int saved = errno;
    cg_dump_final("Program termination");
    cg_filter_report_exit();
    errno = saved;
}
