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
#include "util.h"

const struct cg_option_info cg_option_table[] = {
#define CG_OPTION(field, var, type, def, accepted, help) { var, CG_OPT_##type, def, accepted, help },
#include "options.inc"
#undef CG_OPTION
};
const unsigned cg_option_count = CG_ARRAY_SIZE(cg_option_table);
/* given is a 64-bit set of the table's rows */
_Static_assert(CG_ARRAY_SIZE(cg_option_table) <= 64, "cg_options.given holds 64 variables");

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

/* Why a path the runtime opens files under is too long for the system, or
 * NULL (why is written into why, size bytes). The whole name, a relative
 * one made absolute against cwd as naming.c does, with path_suffix more
 * bytes, must be below PATH_MAX; each component must fit NAME_MAX, the
 * last one with name_suffix more bytes. With pct, v is a CGPROF_OUT
 * pattern: a %p counts as the longest pid, "%%" as one byte. what: "its
 * files'" or "the control files'", for the messages. */
static const char *length_problem(const char *v, int pct, const char *cwd, size_t name_suffix, size_t path_suffix,
                                  const char *what, char *why, size_t size)
{
    size_t total = 0, last = 0, longest_dir = 0;
    int with_pid = 0;
    for (const char *p = v; *p; p++) {
        size_t add = 1;
        if (*p == '/') {
            if (last > longest_dir)
                longest_dir = last;
            last = 0;
            total++;
            continue;
        }
        if (pct && p[0] == '%' && (p[1] == 'p' || p[1] == '%')) {
            with_pid |= p[1] == 'p';
            add = p[1] == 'p' ? CG_OPT_PID_DIGITS : 1;
            p++;
        }
        last += add;
        total += add;
    }
    const char *pid_note = with_pid ? " (each %p counted as 10 digits)" : "";
    if (name_suffix == 0 && last > longest_dir) /* the last one names a directory too */
        longest_dir = last;
    if (longest_dir > CG_OPT_NAME_MAX) {
        snprintf(why, size,
                 "it has a directory name of %zu bytes%s, over the system's limit of %d bytes for one name "
                 "(NAME_MAX)",
                 longest_dir, pid_note, CG_OPT_NAME_MAX);
        return why;
    }
    if (last + name_suffix > CG_OPT_NAME_MAX) {
        snprintf(why, size,
                 "its last name is %zu bytes long%s: with the up to %zu bytes the runtime adds to it "
                 "(paths., .<pid>.<part>-<thread> and a temporary suffix), %s names would pass the system's limit of "
                 "%d bytes for one name (NAME_MAX): at most %zu",
                 last, pid_note, name_suffix, what, CG_OPT_NAME_MAX, (size_t)CG_OPT_NAME_MAX - name_suffix);
        return why;
    }
    size_t dir = v[0] != '/' && cwd && cwd[0] ? strlen(cwd) + 1 : 0;
    if (dir + total + path_suffix > CG_OPT_PATH_MAX - 1) {
        char from[96] = "";
        if (dir)
            snprintf(from, sizeof from, " and taken from a working directory of %zu bytes", dir - 1);
        snprintf(why, size,
                 "it is %zu bytes long%s%s: with %sthe up to %zu bytes the runtime adds, %s full names would be up "
                 "to %zu bytes, over the system's limit of %d (PATH_MAX, %d with the final NUL)",
                 total, pid_note, from, dir ? "a '/' between them and " : "", path_suffix, what,
                 dir + total + path_suffix, CG_OPT_PATH_MAX - 1, CG_OPT_PATH_MAX);
        return why;
    }
    return NULL;
}

/* Why a PATH value is refused, or NULL. */
static const char *path_problem(const char *v, const char *cwd, char *why, size_t size)
{
    if (!*v)
        return "it is empty";
    for (const char *p = v; *p; p++) {
        if ((unsigned char)*p < 0x20)
            return "it contains a control character";
        if (*p == '%') {
            if (p[1] != 'p' && p[1] != '%')
                return "'%' may only be followed by 'p' (the pid) or '%'";
            p++;
        }
    }
    return length_problem(v, 1, cwd, CG_OPT_OUT_SUFFIX_MAX, CG_OPT_OUT_SUFFIX_MAX, "its files'", why, size);
}

/* Why a DIR value is refused, or NULL ("" is the default, decided at run
 * time). */
static const char *dir_problem(const char *v, char *why, size_t size)
{
    if (!*v)
        return NULL;
    if (*v != '/')
        return "it is not an absolute path";
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20)
            return "it contains a control character";
    return length_problem(v, 0, NULL, 0, CG_OPT_CONTROL_SUFFIX_MAX, "the control files'", why, size);
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
 * NULL, or the reason the value was refused (maybe written into why, size
 * bytes). */
static const char *set_option(struct cg_options *o, unsigned idx, const char *value, const char *cwd, char *why,
                              size_t size)
{
    const struct cg_option_info *info = &cg_option_table[idx];
    const char *v = value ? value : info->def;
    char *field = (char *)o + fields[idx].offset;
    int n;
    switch (info->type) {
    case CG_OPT_PATH:
    case CG_OPT_DIR: {
        /* A directory (a value ending in '/'): the files with their usual
         * names there, as a user who gives one means. */
        char in_dir[CG_OPT_PATH_MAX + 64];
        size_t vlen = strlen(v);
        if (info->type == CG_OPT_PATH && vlen && v[vlen - 1] == '/') {
            if (vlen + strlen(info->def) >= sizeof in_dir)
                return "it is too long";
            memcpy(in_dir, v, vlen);
            memcpy(in_dir + vlen, info->def, strlen(info->def) + 1);
            v = in_dir;
        }
        const char *bad = info->type == CG_OPT_PATH ? path_problem(v, cwd, why, size) : dir_problem(v, why, size);
        if (bad)
            return bad;
        if (strlen(v) >= fields[idx].size)
            return "it is too long"; /* cannot be: the checks above are stricter */
        memcpy(field, v, strlen(v) + 1);
        return NULL;
    }
    case CG_OPT_GLOBS: {
        const char *bad = globs_problem(v);
        if (bad)
            return bad;
        snprintf(field, fields[idx].size, "%s", v);
        return NULL;
    }
    case CG_OPT_THRESHOLD: {
        struct cg_threshold th;
        const char *bad = parse_threshold(info->accepted, v, &th);
        if (bad)
            return bad;
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

int cg_options_parse(struct cg_options *o, char *const *env, const char *cwd,
                     void (*report)(void *ctx, const char *msg, const char *why), void *ctx)
{
    memset(o, 0, sizeof *o);
    char why_buf[512];
    for (unsigned i = 0; i < cg_option_count; i++)
        set_option(o, i, NULL, cwd, why_buf, sizeof why_buf);

    int problems = 0;
    /* The value shown is cut: the message says what is wrong with it, and a
     * line on a terminal should stay readable. */
    char msg[1024], shown[160];
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
            int len = snprintf(msg, sizeof msg, "%s is not a cgprof variable (a typo?); known ones:",
                               cg_quote(shown, sizeof shown, *e, nlen));
            for (unsigned k = 0; k < cg_option_count && len > 0 && (size_t)len < sizeof msg; k++)
                len += snprintf(msg + len, sizeof msg - (size_t)len, " %s", cg_option_table[k].variable);
            report(ctx, msg, msg);
            problems++;
            continue;
        }
        /* An environment can hold a name twice (execve takes any array).
         * getenv, and so anything else the program or a child reads, sees
         * the first: the first is the one used here too, whether it was
         * accepted or refused. */
        if (o->given & ((uint64_t)1 << i)) {
            snprintf(msg, sizeof msg, "%s is set more than once in the environment: the first value is used, as "
                     "getenv(3) reads it", cg_option_table[i].variable);
            report(ctx, msg, msg);
            problems++;
            continue;
        }
        o->given |= (uint64_t)1 << i;
        const char *why = set_option(o, i, value, cwd, why_buf, sizeof why_buf);
        if (why) {
            const struct cg_option_info *info = &cg_option_table[i];
            char instead[160];
            /* A path refused is not replaced by the default: that would
             * write where the user did not say. */
            if (info->type == CG_OPT_PATH) {
                snprintf(instead, sizeof instead, "no profile is written (the program runs normally)");
                o->out_refused = 1;
            } else if (info->type == CG_OPT_DIR) {
                snprintf(instead, sizeof instead,
                         "no control files are kept: cgprof-control cannot reach this process (the dump signal "
                         "still works)");
                o->control_dir_refused = 1;
            } else {
                snprintf(instead, sizeof instead, "using the default '%s'", info->def);
            }
            snprintf(msg, sizeof msg, "%s=%s is %s: %s; accepted: %s; %s", info->variable,
                     cg_quote(shown, sizeof shown, value, strlen(value)),
                     info->type == CG_OPT_PATH || info->type == CG_OPT_DIR ? "refused" : "ignored", why,
                     info->accepted, instead);
            report(ctx, msg, why);
            problems++;
            if (info->type == CG_OPT_PATH || info->type == CG_OPT_DIR)
                memset((char *)o + fields[i].offset, 0, fields[i].size);
            else
                set_option(o, i, NULL, cwd, why_buf, sizeof why_buf);
        }
    }
    return problems;
}

/* Appends the expansion of len bytes of pattern (%p -> pid, %% -> %) to
 * dst at *n. Returns 0, or -1 if it does not fit in size. */
static int expand_append(const char *pattern, size_t len, long pid, char *dst, unsigned long size, unsigned long *n)
{
    for (size_t i = 0; i < len; i++) {
        char num[24];
        const char *add = num;
        size_t alen;
        if (pattern[i] == '%' && i + 1 < len && pattern[i + 1] == 'p') {
            alen = (size_t)snprintf(num, sizeof num, "%ld", pid);
            i++;
        } else if (pattern[i] == '%' && i + 1 < len && pattern[i + 1] == '%') {
            add = "%";
            alen = 1;
            i++;
        } else {
            add = pattern + i;
            alen = 1;
        }
        if (*n + alen >= size)
            return -1;
        memcpy(dst + *n, add, alen);
        *n += alen;
    }
    dst[*n] = 0;
    return 0;
}

int cg_expand_path(const char *pattern, long pid, char *dst, unsigned long size)
{
    if (size == 0)
        return -1;
    unsigned long n = 0;
    dst[0] = 0;
    return expand_append(pattern, strlen(pattern), pid, dst, size, &n);
}

/* The run's pattern, <pattern> or <pattern>.%p, read where it is: the
 * total's name is made in dump paths, which keep no copy of a path on the
 * stack (the crash copy's may be a small alternate signal stack). */
struct run {
    const char *pattern, *tail;
    size_t len, total;
};

static char run_at(const struct run *r, size_t i)
{
    return i < r->len ? r->pattern[i] : i < r->total ? r->tail[i - r->len] : 0;
}

/* The total's pattern is the run's with run[at, at + cut) replaced by
 * insert (see options.h). */
static void total_cut(const char *pattern, struct run *r, size_t *at_out, size_t *cut_out, const char **insert_out)
{
    r->pattern = pattern;
    r->len = strlen(pattern);
    r->tail = cg_run_tail(pattern);
    r->total = r->len + strlen(r->tail);
    const char *slash = strrchr(pattern, '/'); /* the tail has none */
    size_t base = slash ? (size_t)(slash + 1 - pattern) : 0;
    size_t at = SIZE_MAX, cut = 0;
    const char *insert = "";
    /* The last ".out" ending a word: not the one inside ".output" */
    for (size_t i = base; i + 4 <= r->total; i++)
        if (run_at(r, i) == '.' && run_at(r, i + 1) == 'o' && run_at(r, i + 2) == 'u' && run_at(r, i + 3) == 't' &&
            !isalnum((unsigned char)run_at(r, i + 4))) {
            at = i;
            cut = 4;
            insert = ".total";
        }
    if (at == SIZE_MAX) {
        /* The first %p of the file name that is not an escaped "%%p" */
        for (size_t i = base; i < r->total; i++) {
            if (run_at(r, i) == '%' && run_at(r, i + 1) == 'p') {
                at = i;
                insert = "total.";
                break;
            }
            if (run_at(r, i) == '%' && run_at(r, i + 1) == '%')
                i++;
        }
    }
    if (at == SIZE_MAX) {
        at = base;
        insert = "total.";
    }
    *at_out = at;
    *cut_out = cut;
    *insert_out = insert;
}

/* Appends run[from, to) to dst at *n, expanded (pid >= 0) or as it is.
 * The pieces of the total's name never split a "%p" or "%%": the cut is
 * at a '.', a '%' that starts one, or after a '/'. */
static int run_append(const struct run *r, size_t from, size_t to, long pid, char *dst, unsigned long size,
                      unsigned long *n)
{
    size_t mid = r->len < from ? from : r->len > to ? to : r->len;
    const char *pieces[2] = { r->pattern + from, r->tail + (mid - r->len) };
    size_t lens[2] = { mid - from, to - mid };
    for (int k = 0; k < 2; k++) {
        if (pid >= 0) {
            if (expand_append(pieces[k], lens[k], pid, dst, size, n) != 0)
                return -1;
        } else {
            if (*n + lens[k] >= size)
                return -1;
            memcpy(dst + *n, pieces[k], lens[k]);
            *n += lens[k];
            dst[*n] = 0;
        }
    }
    return 0;
}

/* The total's pattern (pid < 0) or its expansion for pid; word: "total",
 * or "paths" for the path files' run name. */
static int total_name(const char *pattern, long pid, char *dst, unsigned long size, const char *word)
{
    if (size == 0)
        return -1;
    struct run r;
    size_t at, cut;
    const char *insert;
    total_cut(pattern, &r, &at, &cut, &insert);
    unsigned long n = 0;
    dst[0] = 0;
    /* ".total" or "total.": the word with its dot where insert has it */
    char ins[16];
    snprintf(ins, sizeof ins, insert[0] == '.' ? ".%s" : "%s.", word);
    size_t ilen = strlen(ins);
    if (run_append(&r, 0, at, pid, dst, size, &n) != 0 || n + ilen >= size)
        return -1;
    memcpy(dst + n, ins, ilen + 1);
    n += ilen;
    return run_append(&r, at + cut, r.total, pid, dst, size, &n);
}

int cg_total_pattern(const char *pattern, char *dst, unsigned long size)
{
    return total_name(pattern, -1, dst, size, "total");
}

int cg_total_expanded(const char *pattern, long pid, char *dst, unsigned long size)
{
    return total_name(pattern, pid < 0 ? 0 : pid, dst, size, "total");
}

int cg_paths_pattern(const char *pattern, char *dst, unsigned long size)
{
    return total_name(pattern, -1, dst, size, "paths");
}

int cg_paths_expanded(const char *pattern, long pid, char *dst, unsigned long size)
{
    return total_name(pattern, pid < 0 ? 0 : pid, dst, size, "paths");
}

int cg_option_given(const struct cg_options *o, const char *variable)
{
    for (unsigned i = 0; i < cg_option_count && i < 64; i++)
        if (strcmp(cg_option_table[i].variable, variable) == 0)
            return (o->given >> i) & 1;
    return 0;
}
