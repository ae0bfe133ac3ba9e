/* cgprof-rules: the runtime's own rules, answered by the runtime's own code
 * (runtime/base/options.c, linked in from cgprof_core), for the Python side
 * (python/cgproflib/rules.py), which must never re-implement them.
 *
 *   cgprof-rules QUESTION...
 *
 * One line of answer per question, in order:
 *
 *   option CGPROF_NAME=VALUE   "ok", or "refused WHY": the verdict of
 *                              cg_options_parse() on that variable alone,
 *                              a relative CGPROF_OUT taken from this
 *                              process's working directory (the program's,
 *                              when the launcher runs it)
 *   quote VALUE                "ok QUOTED": cg_quote(), VALUE as the
 *                              runtime's messages show it, whole
 *   signal NAME                cg_parse_signal(): the number, 0 for none,
 *                              -1 for a name the runtime refuses
 *   expand PATTERN PID         "ok PATH": cg_expand_path(); "error" if it
 *                              does not fit
 *   total PATTERN              "ok PATTERN": cg_total_pattern(); "error"
 *   file PATTERN PID CWD THREAD PART
 *                              "ok PATH": cg_name_part(), the file of
 *                              thread THREAD, part PART (0: a run without
 *                              parts), relative names made absolute
 *                              against CWD ("" leaves them relative)
 *   totalfile PATTERN PID CWD  "ok PATH": cg_name_total()
 *   table                      "ok N", then N lines, one per option of the
 *                              runtime's table: field, variable, type,
 *                              default, accepted values, help, tab-separated
 *
 * In an answer a backslash, a newline and a tab are written "\\", "\n" and
 * "\t". Exit status 0, or 2 (and nothing printed) for a question it does not
 * know. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "naming.h"
#include "options.h"
#include "util.h"

/* The table's field and type names, as options.inc spells them (the
 * runtime's own table keeps neither): the compiler's reading of the file,
 * which the Python side's generated table is tested against. */
static const char *const field_names[] = {
#define CG_OPTION(field, var, type, def, accepted, help) #field,
#include "options.inc"
#undef CG_OPTION
};
static const char *const type_names[] = {
#define CG_OPTION(field, var, type, def, accepted, help) #type,
#include "options.inc"
#undef CG_OPTION
};

static void put_escaped(const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", stdout);
        else if (*s == '\n')
            fputs("\\n", stdout);
        else if (*s == '\t')
            fputs("\\t", stdout);
        else
            putchar(*s);
    }
}

/* The reason alone, as cg_options_parse() gives it with its message (the
 * whole message for a variable it does not know). */
static void keep_reason(void *ctx, const char *msg, const char *why)
{
    (void)msg;
    snprintf(ctx, 1024, "%s", why);
}

static void answer_option(char *assignment)
{
    char reason[1024] = "";
    char *env[] = { assignment, NULL };
    static struct cg_options o; /* 20 kB */
    char cwd[CG_OPT_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0; /* as the runtime's start-up (proc.c) */
    if (cg_options_parse(&o, env, cwd, keep_reason, reason) == 0) {
        puts("ok");
        return;
    }
    fputs("refused ", stdout);
    put_escaped(reason);
    putchar('\n');
}

static void answer_quote(const char *value)
{
    size_t len = strlen(value), size = 4 * len + CG_QUOTE_MIN;
    char *q = malloc(size);
    if (!q) {
        puts("error");
        return;
    }
    fputs("ok ", stdout);
    put_escaped(cg_quote(q, size, value, len));
    putchar('\n');
    free(q);
}

static void answer_path(int rc, const char *path)
{
    if (rc != 0) {
        puts("error");
        return;
    }
    fputs("ok ", stdout);
    put_escaped(path);
    putchar('\n');
}

static void answer_table(void)
{
    printf("ok %u\n", cg_option_count);
    for (unsigned i = 0; i < cg_option_count; i++) {
        const struct cg_option_info *o = &cg_option_table[i];
        const char *fields[] = { field_names[i], o->variable, type_names[i], o->def, o->accepted, o->help };
        for (unsigned k = 0; k < sizeof fields / sizeof *fields; k++) {
            if (k)
                putchar('\t');
            put_escaped(fields[k]);
        }
        putchar('\n');
    }
}

/* How many words each question takes after its own. */
static int arity(const char *question)
{
    static const struct {
        const char *word;
        int args;
    } questions[] = { { "option", 1 }, { "quote", 1 },     { "signal", 1 }, { "expand", 2 }, { "total", 1 },
                      { "file", 5 },   { "totalfile", 3 }, { "table", 0 } };
    for (unsigned i = 0; i < sizeof questions / sizeof *questions; i++)
        if (strcmp(question, questions[i].word) == 0)
            return questions[i].args;
    return -1;
}

int main(int argc, char **argv)
{
    /* Every question is checked before any is answered: no partial answer. */
    for (int i = 1; i < argc; i++) {
        int n = arity(argv[i]);
        if (n < 0 || i + n >= argc) {
            fprintf(stderr, "cgprof-rules: %s: %s\n", argv[i], n < 0 ? "not a question" : "too few words");
            return 2;
        }
        i += n;
    }
    /* Long enough for any pattern the runtime accepts and its expansion. */
    char out[4 * CG_OPT_PATH_MAX];
    for (int i = 1; i < argc; i++) {
        const char *q = argv[i];
        if (strcmp(q, "option") == 0) {
            answer_option(argv[++i]);
        } else if (strcmp(q, "quote") == 0) {
            answer_quote(argv[++i]);
        } else if (strcmp(q, "signal") == 0) {
            printf("%d\n", cg_parse_signal(argv[++i]));
        } else if (strcmp(q, "expand") == 0) {
            const char *pattern = argv[++i];
            long pid = strtol(argv[++i], NULL, 10);
            answer_path(cg_expand_path(pattern, pid, out, sizeof out), out);
        } else if (strcmp(q, "total") == 0) {
            answer_path(cg_total_pattern(argv[++i], out, sizeof out), out);
        } else if (strcmp(q, "file") == 0 || strcmp(q, "totalfile") == 0) {
            struct cg_names n = { argv[i + 1], strtol(argv[i + 2], NULL, 10), argv[i + 3] };
            if (q[0] == 't') {
                answer_path(cg_name_total(&n, out, sizeof out), out);
                i += 3;
            } else {
                unsigned thread = (unsigned)strtoul(argv[i + 4], NULL, 10);
                unsigned part = (unsigned)strtoul(argv[i + 5], NULL, 10);
                answer_path(cg_name_part(&n, thread, part, part != 0, out, sizeof out), out);
                i += 5;
            }
        } else {
            answer_table();
        }
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
