#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

struct cg_options cg_opts;
int cg_collecting;
int cg_sampling;
int cg_fast_mode;

enum { CMDLINE_MAX = 64 * 1024 };
static const char *cmdline = "";
static pid_t pid;
static char cwd[4096];

/* /proc/self/cmdline with its NULs turned into spaces. mmap, not malloc:
 * this may run from the first hook, inside the program's own allocator. */
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
}
