/* cgprof-rules: the runtime's own rules, answered by the runtime's own code
 * (runtime/options.c, linked in from cgprof_core), for the Python side
 * (python/cgproflib/rules.py), which must never re-implement them.
 *
 *   cgprof-rules QUESTION...
 *
 * One line of answer per question, in order:
 *
 *   option CGPROF_NAME=VALUE   "ok", or "refused WHY": the verdict of
 *                              cg_options_parse() on that variable alone
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

#include "naming.h"
#include "options.h"

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

static const struct cg_option_info *option_named(const char *name, size_t len)
{
    for (unsigned i = 0; i < cg_option_count; i++)
        if (strlen(cg_option_table[i].variable) == len && strncmp(cg_option_table[i].variable, name, len) == 0)
            return &cg_option_table[i];
    return NULL;
}

static void keep_message(void *ctx, const char *msg)
{
    snprintf(ctx, 1024, "%s", msg);
}

/* cg_options_parse() says why it refuses a value inside a sentence:
 * "NAME='VALUE' is ignored: WHY; accepted: ACCEPTED; using the default
 * 'DEFAULT'" (VALUE cut at 80 bytes). WHY is what lies between that head
 * and tail; a message of another shape (a variable it does not know) is
 * answered whole. */
static void answer_option(char *assignment)
{
    char msg[1024] = "";
    char *env[] = { assignment, NULL };
    struct cg_options o;
    if (cg_options_parse(&o, env, keep_message, msg) == 0) {
        puts("ok");
        return;
    }
    const char *eq = strchr(assignment, '=');
    const struct cg_option_info *info = eq ? option_named(assignment, (size_t)(eq - assignment)) : NULL;
    const char *why = msg;
    size_t why_len = strlen(msg);
    if (info) {
        const char *value = eq + 1;
        size_t vlen = strlen(value);
        char head[256], tail[1024];
        int hn = snprintf(head, sizeof head, "%s='%.*s%s' is ignored: ", info->variable, (int)(vlen > 80 ? 80 : vlen),
                          value, vlen > 80 ? "..." : "");
        int tn = snprintf(tail, sizeof tail, "; accepted: %s; using the default '%s'", info->accepted, info->def);
        size_t mlen = strlen(msg);
        if (hn > 0 && tn > 0 && mlen >= (size_t)hn + (size_t)tn && strncmp(msg, head, (size_t)hn) == 0 &&
            strcmp(msg + mlen - (size_t)tn, tail) == 0) {
            why = msg + hn;
            why_len = mlen - (size_t)hn - (size_t)tn;
        }
    }
    char reason[1024];
    snprintf(reason, sizeof reason, "%.*s", (int)why_len, why);
    fputs("refused ", stdout);
    put_escaped(reason);
    putchar('\n');
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
    } questions[] = { { "option", 1 }, { "signal", 1 }, { "expand", 2 }, { "total", 1 }, { "file", 5 },
                    { "totalfile", 3 },   { "table", 0 } };
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
