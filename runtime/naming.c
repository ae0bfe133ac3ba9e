/* File names: see naming.h. */
#include "naming.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* name made absolute against the start-up directory */
static int absolute(const struct cg_names *n, const char *name, char *dst, size_t size)
{
    const char *dir = name[0] == '/' || !n->cwd[0] ? "" : n->cwd;
    int len = snprintf(dst, size, "%s%s%s", dir, *dir ? "/" : "", name);
    return len < 0 || (size_t)len >= size ? -1 : 0;
}

int cg_name_prefix(const struct cg_names *n, char *dst, size_t size, int *with_pid)
{
    char prefix[CG_OPT_PATH_MAX];
    if (cg_expand_path(n->out, n->pid, prefix, sizeof prefix) != 0)
        return -1;
    *with_pid = strstr(n->out, "%p") != NULL;
    return absolute(n, prefix, dst, size);
}

int cg_name_part(const struct cg_names *n, unsigned thread, unsigned part, int part_in_name, char *dst,
                 size_t size)
{
    char prefix[CG_OPT_PATH_MAX + 64];
    int with_pid;
    if (cg_name_prefix(n, prefix, sizeof prefix, &with_pid) != 0)
        return -1;
    char pid[24] = "";
    if (!with_pid)
        snprintf(pid, sizeof pid, ".%ld", n->pid);
    char p[24] = "";
    if (part_in_name)
        snprintf(p, sizeof p, ".%u", part);
    int len = snprintf(dst, size, "%s%s%s-%02u", prefix, pid, p, thread);
    return len < 0 || (size_t)len >= size ? -1 : 0;
}

int cg_name_total(const struct cg_names *n, char *dst, size_t size)
{
    char pattern[CG_OPT_PATH_MAX + 16], name[CG_OPT_PATH_MAX + 64];
    if (cg_total_pattern(n->out, pattern, sizeof pattern) != 0 ||
        cg_expand_path(pattern, n->pid, name, sizeof name) != 0)
        return -1;
    return absolute(n, name, dst, size);
}

/* The file name of pattern (with ".%p" added when it has no %p, as the
 * names add the pid) up to its first %: the same in every pid's names. */
static int stem(const char *pattern, char *dst, size_t size)
{
    char run[CG_OPT_PATH_MAX + 8];
    int n = snprintf(run, sizeof run, strstr(pattern, "%p") ? "%s" : "%s.%%p", pattern);
    if (n < 0 || (size_t)n >= sizeof run)
        return -1;
    const char *slash = strrchr(run, '/');
    const char *base = slash ? slash + 1 : run;
    int len = snprintf(dst, size, "%.*s", (int)strcspn(base, "%"), base);
    return len < 0 || (size_t)len >= size ? -1 : 0;
}

int cg_name_stems(const struct cg_names *n, char *parts, char *total, size_t size)
{
    char pattern[CG_OPT_PATH_MAX + 16];
    if (stem(n->out, parts, size) != 0 || cg_total_pattern(n->out, pattern, sizeof pattern) != 0)
        return -1;
    return stem(pattern, total, size);
}

unsigned cg_name_last_part(const struct cg_names *n)
{
    char prefix[CG_OPT_PATH_MAX + 64];
    int with_pid;
    if (cg_name_prefix(n, prefix, sizeof prefix, &with_pid) != 0)
        return 0;
    char *slash = strrchr(prefix, '/');
    if (!slash)
        return 0;
    *slash = 0;
    char base[CG_OPT_PATH_MAX + 64];
    if (with_pid)
        snprintf(base, sizeof base, "%s.", slash + 1);
    else
        snprintf(base, sizeof base, "%s.%ld.", slash + 1, n->pid);
    DIR *d = opendir(*prefix ? prefix : "/");
    if (!d)
        return 0;
    unsigned last = 0;
    size_t blen = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, blen) != 0)
            continue;
        char *end;
        unsigned long part = strtoul(e->d_name + blen, &end, 10);
        if (end != e->d_name + blen && *end == '-' && part > last && part < 1000000)
            last = (unsigned)part;
    }
    closedir(d);
    return last;
}
