/* Output files written whole or not at all: see outfile.h. */
#define _GNU_SOURCE
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* What tells a temporary of ours from any other dot file */
#define TMP_MARK ".cgprof-tmp."

int cg_out_tmp_name(const char *path, long pid, unsigned n, char *dst, size_t size)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    int dirlen = (int)(name - path);
    char suffix[64];
    int slen = snprintf(suffix, sizeof suffix, TMP_MARK "%ld.%u", pid, n);
    /* Within NAME_MAX whatever the final name's length (a final name that
     * fits must not fail for its temporary's): the name is cut, the
     * marker and the numbers, which the clean-up reads, are kept. */
    int room = NAME_MAX - 1 - slen;
    int nlen = (int)strlen(name);
    if (nlen > room)
        nlen = room;
    int len = snprintf(dst, size, "%.*s.%.*s%s", dirlen, path, nlen, name, suffix);
    return len < 0 || (size_t)len >= size ? -1 : 0;
}

/* The decimal number that ends at end (exclusive) and starts after a '.',
 * written as printf writes it (no sign, no leading zero): its start, or
 * NULL. */
static const char *number_before(const char *name, const char *end, unsigned long long *value)
{
    const char *p = end;
    while (p > name && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (p == end || end - p > 10 || p == name || p[-1] != '.' || (p[0] == '0' && end - p > 1))
        return NULL;
    unsigned long long v = 0;
    for (const char *q = p; q < end; q++)
        v = v * 10 + (unsigned)(*q - '0');
    *value = v;
    return p;
}

int cg_out_tmp_parse(const char *name, const char *const *stems, unsigned nstems, long *pid)
{
    if (name[0] != '.')
        return 0;
    unsigned long long n, p;
    const char *end = name + strlen(name);
    const char *at_n = number_before(name, end, &n);
    const char *at_pid = at_n ? number_before(name, at_n - 1, &p) : NULL;
    if (!at_pid || n > UINT_MAX || p < 1 || p > INT_MAX)
        return 0;
    size_t mlen = strlen(TMP_MARK);
    if ((size_t)(at_pid - name) < 1 + mlen || memcmp(at_pid - mlen, TMP_MARK, mlen) != 0)
        return 0;
    const char *file = name + 1; /* the final file's name, up to the mark */
    size_t flen = (size_t)(at_pid - mlen - file);
    for (unsigned i = 0; i < nstems; i++) {
        size_t len = strlen(stems[i]);
        if (flen >= len && strncmp(file, stems[i], len) == 0) {
            *pid = (long)p;
            return 1;
        }
    }
    return 0;
}

unsigned cg_out_clean(const char *dir, const char *const *stems, unsigned nstems,
                      void (*removed)(void *ctx, const char *name, long pid), void *ctx)
{
    int saved = errno;
    DIR *d = opendir(*dir ? dir : ".");
    if (!d) {
        errno = saved;
        return 0;
    }
    int dfd = dirfd(d);
    long self = (long)getpid();
    uid_t uid = geteuid();
    unsigned count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        struct stat st;
        if (e->d_name[0] != '.' || !cg_out_tmp_parse(e->d_name, stems, nstems, &pid) || pid == self)
            continue;
        /* Certainly ours and certainly dead: a regular file (all that
         * cg_out_open makes; a link or anything else at such a name is
         * someone else's) of this user, whose writer is gone. kill()
         * answers EPERM, not ESRCH, for another user's live process. */
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if (unlinkat(dfd, e->d_name, 0) == 0) {
            count++;
            if (removed)
                removed(ctx, e->d_name, pid);
        }
    }
    closedir(d);
    errno = saved;
    return count;
}

/* open(2) of a profile file; where the program's own descriptors fill its
 * RLIMIT_NOFILE (EMFILE), once more with the soft limit raised by one for
 * the call, when the hard limit allows: the descriptor stays valid once
 * the limit is back, and the program's limit is as it was (issue 39: a
 * program holding all its descriptors at exit lost its profile). */
static int open_file(const char *name, int flags, mode_t mode)
{
    int fd = open(name, flags, mode);
    if (fd >= 0 || errno != EMFILE)
        return fd;
    struct rlimit lim, more;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= lim.rlim_max) {
        errno = EMFILE;
        return -1;
    }
    more = lim;
    more.rlim_cur = lim.rlim_cur + 1;
    if (setrlimit(RLIMIT_NOFILE, &more) != 0) {
        errno = EMFILE;
        return -1;
    }
    fd = open(name, flags, mode);
    int saved = errno;
    setrlimit(RLIMIT_NOFILE, &lim);
    errno = saved;
    return fd;
}

int cg_out_open(struct cg_out_file *o, const char *path)
{
    static unsigned counter;
    o->fd = -1;
    o->err = 0;
    o->bytes = 0;
    /* The pid makes the name unique between processes (and tells the
     * clean-up whether the writer lives), the count within this one: the
     * real pid, not the one the files are named after (the crash copy
     * writes under the crashed process's). A name taken (planted) is
     * tried again with the next count. */
    long pid = (long)getpid();
    for (int attempt = 0; attempt < 16 && o->fd < 0; attempt++) {
        if (cg_out_tmp_name(path, pid, __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), o->tmp,
                            sizeof o->tmp) != 0)
            return o->err = ENAMETOOLONG;
        o->fd = open_file(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (o->fd < 0 && errno != EEXIST)
            return o->err = errno;
    }
    return o->fd < 0 ? (o->err = EEXIST) : 0;
}

int cg_out_write(void *arg, const char *data, size_t len)
{
    struct cg_out_file *o = arg;
    if (!o->err)
        o->err = cg_write_all(o->fd, data, len);
    o->bytes += len;
    return o->err;
}

int cg_out_close(struct cg_out_file *o, const char *path, int ok)
{
    if (close(o->fd) != 0 && !o->err)
        o->err = errno;
    if (!o->err && !ok)
        o->err = ENOMEM;
    if (!o->err && rename(o->tmp, path) != 0)
        o->err = errno;
    if (o->err)
        unlink(o->tmp);
    return o->err;
}
