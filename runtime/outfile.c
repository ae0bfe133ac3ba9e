/* Output files written whole or not at all: see outfile.h. */
#define _GNU_SOURCE
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "util.h"

int cg_out_open(struct cg_out_file *o, const char *path)
{
    static unsigned counter;
    o->fd = -1;
    o->err = 0;
    o->bytes = 0;
    /* The thread and a counter make the name unique in this process; the
     * pid is in path. A name taken (by another process, or planted) is
     * tried again with the next count. */
    for (int attempt = 0; attempt < 16 && o->fd < 0; attempt++) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%u", path, (long)gettid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
