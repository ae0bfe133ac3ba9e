#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "compiler.h"

const struct cg_option_info cg_option_table[] = {
#define CG_OPTION(field, var, type, def, accepted, help) { var, CG_OPT_##type, def, accepted, help },
#include "options.inc"
#undef CG_OPTION
};
const unsigned cg_option_count = CG_ARRAY_SIZE(cg_option_table);

/* Index of `value` among the '|'-separated `accepted`, or -1. */
static int enum_index(const char *accepted, const char *value)
{
    size_t vlen = strlen(value);
    int i = 0;
    for (const char *p = accepted; *p; i++) {
        const char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == vlen && strncasecmp(p, value, len) == 0)
            return i;
        if (!end)
            break;
        p = end + 1;
    }
    return -1;
}

static int parse_bool(const char *v)
{
    static const char *const no[] = { "0", "no", "off", "false" };
    static const char *const yes[] = { "1", "yes", "on", "true" };
    for (unsigned i = 0; i < CG_ARRAY_SIZE(no); i++) {
        if (strcasecmp(v, no[i]) == 0)
            return 0;
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
    }
    return -1;
}

/* Why a PATH value is refused, or NULL. */
static const char *path_problem(const char *v)
{
    if (!*v)
        return "it is empty";
    /* Its expansion (each %p becomes a pid of up to 20 digits) must fit,
     * with the .<pid>.<part>-<thread> the file names add. */
    size_t expanded = 0;
    for (const char *p = v; *p; p++) {
        if (*p == '\n' || (unsigned char)*p < 0x20)
            return "it contains a control character";
        if (*p == '%') {
            if (p[1] != 'p' && p[1] != '%')
                return "'%' may only be followed by 'p' (the pid) or '%'";
            expanded += p[1] == 'p' ? 20 : 1;
            p++;
        } else {
            expanded++;
        }
    }
    if (expanded >= CG_OPT_PATH_MAX - 64)
        return "it is too long";
    size_t len = strlen(v);
    if (v[len - 1] == '/')
        return "it names a directory, not a file name prefix";
    return NULL;
}

int cg_globs_each(const char *globs, int (*fn)(void *ctx, const char *pattern, size_t len), void *ctx)
{
    if (!*globs)
        return 0;
    for (const char *p = globs;;) {
        const char *e = p;
        while (*e && *e != ',')
            e += e[0] == '\\' && e[1] ? 2 : 1;
        int rc = fn(ctx, p, (size_t)(e - p));
        if (rc || !*e)
            return rc;
        p = e + 1;
    }
}

static int glob_problem(void *ctx, const char *pattern, size_t len)
{
    (void)pattern;
    *(const char **)ctx = len == 0 ? "it has an empty pattern (two commas in a row, or one at an end)" : NULL;
    return len == 0;
}

/* Why a GLOBS value is refused, or NULL. */
static const char *globs_problem(const char *v)
{
    if (strlen(v) >= CG_OPT_GLOBS_MAX)
        return "it is too long";
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20)
            return "it contains a control character";
    const char *why = NULL;
    cg_globs_each(v, glob_problem, &why);
    return why;
}

/* A decimal integer in [lo, hi] ending at *end, or -1 with *why set. */
static int parse_bounded(const char *v, char **end, unsigned long long lo, unsigned long long hi,
                         unsigned long long *out, const char **why)
{
    if (*v < '0' || *v > '9') {
        *why = "it is not off or two decimal integers N:T";
        return -1;
    }
    errno = 0;
    *out = strtoull(v, end, 10);
    if (errno == ERANGE || *out < lo || *out > hi) {
        *why = "it is out of range";
        return -1;
    }
    return 0;
}

/* Parses a THRESHOLD value into *th. Returns NULL, or why it is refused. */
static const char *parse_threshold(const char *accepted, const char *v, struct cg_threshold *th)
{
    unsigned long long nlo, nhi, tlo, thi;
    if (sscanf(accepted, "off, or N:T with N from %llu to %llu and T from %llu to %llu", &nlo, &nhi, &tlo,
               &thi) != 4)
        return "the option table gives no range"; /* a bug of options.inc */
    if (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0) {
        th->n = th->t = 0;
        return NULL;
    }
    const char *why = NULL;
    char *end;
    if (parse_bounded(v, &end, nlo, nhi, &th->n, &why) != 0)
        return why;
    if (*end != ':')
        return "it is not off or two decimal integers N:T";
    if (parse_bounded(end + 1, &end, tlo, thi, &th->t, &why) != 0)
        return why;
    if (*end != 0)
        return "it is not off or two decimal integers N:T";
    return NULL;
}

static const struct {
    const char *name;
    int number;
} signal_names[] = {
    { "HUP", SIGHUP },   { "INT", SIGINT },     { "QUIT", SIGQUIT },     { "USR1", SIGUSR1 },
    { "USR2", SIGUSR2 }, { "PIPE", SIGPIPE },   { "ALRM", SIGALRM },     { "TERM", SIGTERM },
    { "CHLD", SIGCHLD }, { "CONT", SIGCONT },   { "TSTP", SIGTSTP },     { "TTIN", SIGTTIN },
    { "TTOU", SIGTTOU }, { "URG", SIGURG },     { "XCPU", SIGXCPU },     { "XFSZ", SIGXFSZ },
    { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH }, { "IO", SIGIO },
    { "PWR", SIGPWR },   { "SYS", SIGSYS },
    /* named, never accepted (see signal_usable) */
    { "SEGV", SIGSEGV }, { "BUS", SIGBUS },     { "FPE", SIGFPE },       { "ILL", SIGILL },
    { "ABRT", SIGABRT }, { "TRAP", SIGTRAP },   { "KILL", SIGKILL },     { "STOP", SIGSTOP },
};

/* Signals that cannot be caught, or that report a fault of the program
 * itself: never a dump request. */
static int signal_usable(int sig)
{
    switch (sig) {
    case SIGKILL: case SIGSTOP: case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGABRT:
        return 0;
    default:
        return sig > 0 && sig <= SIGRTMAX;
    }
}

int cg_parse_signal(const char *value)
{
    if (strcasecmp(value, "none") == 0)
        return 0;
    const char *v = strncasecmp(value, "SIG", 3) == 0 ? value + 3 : value;
    int sig = -1;
    char *end;
    if (*v >= '0' && *v <= '9') {
        long n = strtol(v, &end, 10);
        if (*end == 0 && n > 0 && n <= SIGRTMAX)
            sig = (int)n;
    } else if (strncasecmp(v, "RTMIN", 5) == 0 || strncasecmp(v, "RTMAX", 5) == 0) {
        int base = strncasecmp(v, "RTMIN", 5) == 0 ? SIGRTMIN : SIGRTMAX;
        long off = 0;
        if (v[5] == '+' || v[5] == '-') {
            off = strtol(v + 5, &end, 10);
            /* bounded before the addition: an offset like +1888...8 would
             * overflow (found by tests/fuzz/fuzz_options.c) */
            if (*end != 0 || v[6] < '0' || v[6] > '9' || off < -SIGRTMAX || off > SIGRTMAX)
                return -1;
        } else if (v[5] != 0) {
            return -1;
        }
        if (base + off >= SIGRTMIN && base + off <= SIGRTMAX)
            sig = base + (int)off;
    } else {
        for (unsigned i = 0; i < CG_ARRAY_SIZE(signal_names); i++)
            if (strcasecmp(v, signal_names[i].name) == 0)
                sig = signal_names[i].number;
    }
    return signal_usable(sig) ? sig : -1;
}

const char *cg_signal_name(int sig, char *buf, unsigned long size)
{
    for (unsigned i = 0; i < CG_ARRAY_SIZE(signal_names); i++)
        if (signal_names[i].number == sig)
            return signal_names[i].name;
    if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, size, "RTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, size, "%d", sig);
    return buf;
}

/* Where each option is stored in struct cg_options, in table order. */
static const struct {
    size_t offset, size;
} fields[] = {
#define CG_OPTION(field, var, type, def, accepted, help)                                                  \
    { offsetof(struct cg_options, field), sizeof(((struct cg_options *)0)->field) },
#include "options.inc"
#undef CG_OPTION
};

/* Stores value (or the default, when value is NULL) into the field. Returns
 * NULL, or the reason the value was refused. */
static const char *set_option(struct cg_options *o, unsigned idx, const char *value)
{
    const struct cg_option_info *info = &cg_option_table[idx];
    const char *v = value ? value : info->def;
    char *field = (char *)o + fields[idx].offset;
    int n;
    switch (info->type) {
    case CG_OPT_PATH: {
        const char *why = path_problem(v);
        if (why)
            return why;
        snprintf(field, fields[idx].size, "%s", v);
        return NULL;
    }
    case CG_OPT_DIR:
        if (!*v) { /* the default: decided at run time */
            field[0] = 0;
            return NULL;
        }
        if (*v != '/')
            return "it is not an absolute path";
        if (strlen(v) >= CG_OPT_PATH_MAX - 64)
            return "it is too long";
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x20)
                return "it contains a control character";
        snprintf(field, fields[idx].size, "%s", v);
        return NULL;
    case CG_OPT_GLOBS: {
        const char *why = globs_problem(v);
        if (why)
            return why;
        snprintf(field, fields[idx].size, "%s", v);
        return NULL;
    }
    case CG_OPT_THRESHOLD: {
        struct cg_threshold th;
        const char *why = parse_threshold(info->accepted, v, &th);
        if (why)
            return why;
        memcpy(field, &th, sizeof th);
        return NULL;
    }
    case CG_OPT_SIGNAL:
        if ((n = cg_parse_signal(v)) < 0)
            return "it is not a signal that can ask for dumps";
        break;
    case CG_OPT_UINT: {
        unsigned long lo = 0, hi = 0, x;
        char *end;
        if (sscanf(info->accepted, "an integer from %lu to %lu", &lo, &hi) != 2)
            return "the option table gives no range"; /* a bug of options.inc */
        if (*v < '0' || *v > '9')
            return "it is not a decimal integer";
        errno = 0;
        x = strtoul(v, &end, 10);
        if (*end != 0)
            return "it is not a decimal integer";
        if (errno == ERANGE || x < lo || x > hi)
            return "it is out of range";
        n = (int)x;
        break;
    }
    case CG_OPT_ENUM:
        if ((n = enum_index(info->accepted, v)) < 0)
            return "it is not one of the accepted values";
        break;
    case CG_OPT_BOOL:
    default:
        if ((n = parse_bool(v)) < 0)
            return "it is not a boolean";
        break;
    }
    memcpy(field, &n, sizeof n);
    return NULL;
}

int cg_options_parse(struct cg_options *o, char *const *env, void (*report)(void *ctx, const char *msg),
                     void *ctx)
{
    memset(o, 0, sizeof *o);
    for (unsigned i = 0; i < cg_option_count; i++)
        set_option(o, i, NULL);

    int problems = 0;
    char msg[1024];
    for (char *const *e = env; e && *e; e++) {
        if (strncmp(*e, "CGPROF_", 7) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        size_t nlen = eq ? (size_t)(eq - *e) : strlen(*e);
        const char *value = eq ? eq + 1 : "";
        unsigned i;
        for (i = 0; i < cg_option_count; i++)
            if (strlen(cg_option_table[i].variable) == nlen &&
                strncmp(cg_option_table[i].variable, *e, nlen) == 0)
                break;
        if (i == cg_option_count) {
            int len = snprintf(msg, sizeof msg, "%.*s is not a cgprof variable (a typo?); known ones:",
                               (int)(nlen > 100 ? 100 : nlen), *e);
            for (unsigned k = 0; k < cg_option_count && len > 0 && (size_t)len < sizeof msg; k++)
                len += snprintf(msg + len, sizeof msg - (size_t)len, " %s", cg_option_table[k].variable);
            report(ctx, msg);
            problems++;
            continue;
        }
        const char *why = set_option(o, i, value);
        if (why) {
            const struct cg_option_info *info = &cg_option_table[i];
            size_t vlen = strlen(value);
            snprintf(msg, sizeof msg, "%s='%.*s%s' is ignored: %s; accepted: %s; using the default '%s'",
                     info->variable, (int)(vlen > 80 ? 80 : vlen), value, vlen > 80 ? "..." : "", why,
                     info->accepted, info->def);
            set_option(o, i, NULL);
            report(ctx, msg);
            problems++;
        }
    }
    return problems;
}

int cg_expand_path(const char *pattern, long pid, char *dst, unsigned long size)
{
    if (size == 0)
        return -1;
    unsigned long n = 0;
    for (const char *p = pattern; *p; p++) {
        char num[24];
        const char *add = num;
        size_t alen;
        if (p[0] == '%' && p[1] == 'p') {
            alen = (size_t)snprintf(num, sizeof num, "%ld", pid);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            add = "%";
            alen = 1;
            p++;
        } else {
            add = p;
            alen = 1;
        }
        if (n + alen >= size)
            return -1;
        memcpy(dst + n, add, alen);
        n += alen;
    }
    dst[n] = 0;
    return 0;
}

int cg_total_pattern(const char *pattern, char *dst, unsigned long size)
{
    char run[CG_OPT_PATH_MAX + 8];
    /* Same test as the file names' (naming.c): a pattern with %p names the pid */
    int n = snprintf(run, sizeof run, strstr(pattern, "%p") ? "%s" : "%s.%%p", pattern);
    if (n < 0 || (size_t)n >= sizeof run)
        return -1;
    const char *slash = strrchr(run, '/');
    size_t base = slash ? (size_t)(slash + 1 - run) : 0;
    size_t at = SIZE_MAX, cut = 0;
    const char *insert = "";
    /* The last ".out" ending a word: not the one inside ".output" */
    for (size_t i = base; run[i]; i++)
        if (strncmp(run + i, ".out", 4) == 0 && !isalnum((unsigned char)run[i + 4])) {
            at = i;
            cut = 4;
            insert = ".total";
        }
    if (at == SIZE_MAX) {
        /* The first %p of the file name that is not an escaped "%%p" */
        for (size_t i = base; run[i]; i++) {
            if (run[i] == '%' && run[i + 1] == 'p') {
                at = i;
                insert = "total.";
                break;
            }
            if (run[i] == '%' && run[i + 1] == '%')
                i++;
        }
    }
    if (at == SIZE_MAX) {
        at = base;
        insert = "total.";
    }
    n = snprintf(dst, size, "%.*s%s%s", (int)at, run, insert, run + at + cut);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}
