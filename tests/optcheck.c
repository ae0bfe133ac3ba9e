/* The runtime's verdict on option values, for the launcher's tests: each
 * argument "CGPROF_NAME=value" is parsed alone by cg_options_parse() (the
 * runtime's own parser), and one line is printed per argument: "ok", or
 * "refused" and the parser's message. tests/integration/test_launcher.py
 * checks that the launcher refuses exactly what this refuses. */
#include <stdio.h>

#include "options.h"

static void report(void *ctx, const char *msg)
{
    *(const char **)ctx = msg;
    /* one line per verdict, whatever the value held */
    printf("refused ");
    for (const char *p = msg; *p; p++)
        if (*p == '\n')
            printf("\\n");
        else
            putchar(*p);
    putchar('\n');
}

int main(int argc, char **argv)
{
    struct cg_options o;
    for (int i = 1; i < argc; i++) {
        char *env[] = { argv[i], NULL };
        const char *msg = NULL;
        if (cg_options_parse(&o, env, report, &msg) == 0)
            printf("ok\n");
    }
    return 0;
}
