/* libFuzzer target: the CGPROF_* environment parser and the helpers behind
 * it get arbitrary bytes, as a hostile environment would give them.
 * The input is cut at NUL or newline into up to 32 "NAME=value" strings;
 * every other one is given the CGPROF_ prefix, so that both the known
 * variables and typos are reached. Checks: no crash or sanitizer report,
 * every message is one line of bounded length naming a CGPROF_ variable
 * with no control byte (values are quoted),
 * and the result always holds values the parser itself accepts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static int messages;

static void report(void *ctx, const char *msg, const char *why)
{
    (void)ctx;
    size_t n = strlen(msg);
    if (n == 0 || n >= 1024 || !strstr(msg, "CGPROF_") || !why || !strstr(msg, why))
        abort();
    /* the values it shows are quoted: no control byte gets through */
    for (const char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            abort();
    messages++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *env[33];
    char *owned[32];
    int n = 0;
    for (char *p = buf; n < 32 && p <= buf + size;) {
        size_t len = strcspn(p, "\n");
        p[len] = 0;
        char *s = malloc(len + 8);
        if (!s)
            break;
        if (n % 2 == 0) {
            memcpy(s, "CGPROF_", 7);
            memcpy(s + 7, p, len + 1);
        } else {
            memcpy(s, p, len + 1);
        }
        owned[n] = s;
        env[n++] = s;
        p += len + 1;
    }
    env[n] = NULL;
    messages = 0;
    struct cg_options o;
    int problems = cg_options_parse(&o, env, "/tmp", report, NULL);
    if (problems != messages)
        abort();
    /* what was kept must be usable */
    if (!o.out[0] != !!o.out_refused || strlen(o.out) >= sizeof o.out || (o.clock < 0 || o.clock > 2) || o.signal < 0 ||
        (o.verbose != 0 && o.verbose != 1))
        abort();
    char path[CG_OPT_PATH_MAX + 64];
    if (!o.out_refused && cg_expand_path(o.out, 123456, path, sizeof path) != 0)
        abort();
    cg_expand_path(buf, 42, path, 16); /* any pattern, small buffer: must not overflow */
    char name[24];
    for (int i = 0; i < n; i++) {
        int sig = cg_parse_signal(owned[i]);
        if (sig > 0 && cg_parse_signal(cg_signal_name(sig, name, sizeof name)) != sig)
            abort();
        free(owned[i]);
    }
    free(buf);
    return 0;
}
