/* File names: see naming.h. */
#include "naming.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* The start-up directory and a '/' in front of a relative name (as the
 * pattern's first byte says: a %p or %% does not expand to a '/'), into
 * dst; *len: their length. The names are built in the caller's buffer, with
 * no copy on the stack: they are made in dump paths, whose stack may be
 * small (the crash copy's alternate signal stack). */
static int dir_part(const struct cg_names *n, char *dst, size_t size, size_t *len)
{
    *len = 0;
    if (size == 0)
        return -1;
    dst[0] = 0;
    if (n->out[0] == '/' || !n->cwd[0])
        return 0;
    int w = snprintf(dst, size, "%s/", n->cwd);
    if (w < 0 || (size_t)w >= size)
        return -1;
    *len = (size_t)w;
    return 0;
}

int cg_name_prefix(const struct cg_names *n, char *dst, size_t size, int *with_pid)
{
    size_t len;
    *with_pid = strstr(n->out, "%p") != NULL;
    if (dir_part(n, dst, size, &len) != 0)
        return -1;
    return cg_expand_path(n->out, n->pid, dst + len, size - len);
}

int cg_name_part(const struct cg_names *n, unsigned thread, unsigned part, int part_in_name, char *dst,
                 size_t size)
{
    int with_pid;
    if (cg_name_prefix(n, dst, size, &with_pid) != 0)
        return -1;
    char pid[24] = "";
    if (!with_pid)
        snprintf(pid, sizeof pid, ".%ld", n->pid);
    char p[24] = "";
    if (part_in_name)
        snprintf(p, sizeof p, ".%u", part);
    size_t at = strlen(dst);
    int len = snprintf(dst + at, size - at, "%s%s-%02u", pid, p, thread);
    return len < 0 || (size_t)len >= size - at ? -1 : 0;
}

int cg_name_paths(const struct cg_names *n, unsigned thread, unsigned part, int part_in_name, char *dst,
                  size_t size)
{
    size_t len;
    if (dir_part(n, dst, size, &len) != 0 || cg_paths_expanded(n->out, n->pid, dst + len, size - len) != 0)
        return -1;
    char p[24] = "";
    if (part_in_name)
        snprintf(p, sizeof p, ".%u", part);
    size_t at = strlen(dst);
    int w = snprintf(dst + at, size - at, "%s-%02u", p, thread);
    return w < 0 || (size_t)w >= size - at ? -1 : 0;
}

int cg_name_total(const struct cg_names *n, char *dst, size_t size)
{
    size_t len;
    if (dir_part(n, dst, size, &len) != 0)
        return -1;
    return cg_total_expanded(n->out, n->pid, dst + len, size - len);
}

/* The file name of pattern (with ".%p" added when it has no %p, as the
 * names add the pid) up to its first %: the same in every pid's names. */
static int stem(const char *pattern, char *dst, size_t size)
{
    char run[CG_OPT_PATH_MAX + 8];
    int n = snprintf(run, sizeof run, "%s%s", pattern, cg_run_tail(pattern));
    if (n < 0 || (size_t)n >= sizeof run)
        return -1;
    const char *slash = strrchr(run, '/');
    const char *base = slash ? slash + 1 : run;
    int len = snprintf(dst, size, "%.*s", (int)strcspn(base, "%"), base);
    return len < 0 || (size_t)len >= size ? -1 : 0;
}

int cg_name_stems(const struct cg_names *n, char *parts, char *total, char *paths, size_t size)
{
    char pattern[CG_OPT_PATH_MAX + 16];
    if (stem(n->out, parts, size) != 0 || cg_total_pattern(n->out, pattern, sizeof pattern) != 0 ||
        stem(pattern, total, size) != 0 || cg_paths_pattern(n->out, pattern, sizeof pattern) != 0)
        return -1;
    return stem(pattern, paths, size);
}

unsigned cg_name_last_part(const struct cg_names *n)
{
    int unnumbered;
    return cg_name_scan(n, &unnumbered);
}

unsigned cg_name_scan(const struct cg_names *n, int *unnumbered)
{
    *unnumbered = 0;
    char prefix[CG_OPT_PATH_MAX + 64];
    int with_pid;
    if (cg_name_prefix(n, prefix, sizeof prefix, &with_pid) != 0)
        return 0;
    char *slash = strrchr(prefix, '/');
    if (!slash)
        return 0;
    *slash = 0;
    /* The files of this pid: <name>.<part>-<NN>, with <name> the prefix's
     * file name and ".<pid>" when it does not name the pid already. */
    const char *name = slash + 1;
    size_t nlen = strlen(name);
    char pid[24] = "";
    if (!with_pid)
        snprintf(pid, sizeof pid, ".%ld", n->pid);
    size_t plen = strlen(pid);
    DIR *d = opendir(*prefix ? prefix : "/");
    if (!d)
        return 0;
    unsigned last = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        if (strncmp(s, name, nlen) != 0 || strncmp(s + nlen, pid, plen) != 0)
            continue;
        if (s[nlen + plen] == '-' && s[nlen + plen + 1] >= '0' && s[nlen + plen + 1] <= '9') {
            /* a profile, a regular file: a link planted at the name is
             * replaced, never followed (outfile.c) */
            struct stat st;
            if (e->d_type == DT_REG ||
                (e->d_type == DT_UNKNOWN && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISREG(st.st_mode)))
                *unnumbered = 1;
            continue;
        }
        if (s[nlen + plen] != '.')
            continue;
        s += nlen + plen + 1;
        char *end;
        unsigned long part = strtoul(s, &end, 10);
        if (end != s && *end == '-' && part > last && part < 1000000)
            last = (unsigned)part;
    }
    closedir(d);
    return last;
}
