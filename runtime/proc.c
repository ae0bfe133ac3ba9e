#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

struct cg_options cg_opts;
int cg_collecting;
int cg_sampling;
uint32_t cg_paths_bound;
uint32_t cg_comp_in, cg_comp_out;
uint32_t cg_comp_gin, cg_comp_gout;
int cg_fast_mode;

enum { CMDLINE_MAX = 64 * 1024 };
static const char *cmdline = "";
static pid_t pid;
static char cwd[4096];
static long names_pid;
static int internal_threads;

/* /proc/self/cmdline with its NULs turned into spaces. mmap, not malloc:
 * this may run from the first hook, inside the program's own allocator. */
static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        /* no /proc: the program's path as it was started (AT_EXECFN) */
        const char *exe = (const char *)getauxval(AT_EXECFN);
        if (exe)
            cmdline = (char *)exe;
        return;
    }
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

void cg_proc_read_identity(void)
{
    read_cmdline();
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    pid = getpid();
}

const char *cg_proc_cmdline(void)
{
    return cmdline;
}

const char *cg_proc_cwd(void)
{
    return cwd;
}

pid_t cg_proc_pid(void)
{
    return pid;
}

void cg_proc_forked(void)
{
    pid = getpid();
    internal_threads = 0;
}

long cg_proc_names_pid(void)
{
    return names_pid ? names_pid : (long)getpid();
}

void cg_proc_set_names_pid(long p)
{
    names_pid = p;
}

void cg_proc_internal_threads_add(int delta)
{
    __atomic_fetch_add(&internal_threads, delta, __ATOMIC_ACQ_REL);
}

unsigned cg_proc_program_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    unsigned n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    unsigned internal = (unsigned)__atomic_load_n(&internal_threads, __ATOMIC_ACQUIRE);
    return n > internal ? n - internal : n;
}

void cg_proc_thread_comm(pid_t tid, char *dst, size_t size)
{
    dst[0] = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, dst, size - 1);
    close(fd);
    if (n <= 0) {
        dst[0] = 0;
        return;
    }
    dst[n] = 0;
    dst[strcspn(dst, "\n")] = 0;
}
