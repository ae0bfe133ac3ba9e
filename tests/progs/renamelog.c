/* A preloaded shim, put before libcgprof.so in LD_PRELOAD: every rename()
 * of the process is appended to the file $RENAMELOG as "<old>\t<new>\n",
 * then done. The tests see with it the temporary files' names for real
 * (outfile.c writes each profile under its temporary and renames it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rename(const char *old, const char *new)
{
    int (*real)(const char *, const char *);
    void *sym = dlsym(RTLD_NEXT, "rename");
    memcpy(&real, &sym, sizeof sym);
    int saved = errno;
    const char *log = getenv("RENAMELOG");
    if (log) {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dprintf(fd, "%s\t%s\n", old, new);
            close(fd);
        }
    }
    errno = saved;
    return real(old, new);
}
