/* The shape of jq 1.6's jv_load_file (issue 27): a function whose frame
 * grows after its enter hook (a variable-length array: jq's
 * `const int max_utf8_len = 4; char buf[4096+max_utf8_len];` is one in
 * C), and a static helper from a header (jv.h's jv_is_valid), inlined into
 * it and into main, that makes a real call (jv_get_kind). The inlined
 * helper's hooks are called with the host's own call site (its return
 * address into main), 4 KiB below the host's enter hook: neither at the
 * host's stack pointer nor just below it.
 *
 * main loads two "files" (main.c's jv_load_file(program, 1) of the filter
 * program, raw, and a data file parsed value by value, as --slurpfile or
 * `import "f" as $d;` do), each checked by is_valid as jq's main checks
 * what jv_load_file gave. Expected, whatever the compiler inlined:
 * main -> load_file 2, load_file -> is_valid 1,201 (1,200 values and the
 * end), is_valid -> get_kind 1,203, main -> is_valid 2,
 * load_file -> parser_next 1,201, load_file -> array_append 1,200,
 * load_file -> string_append 10, and the read calls. */
#include <stdio.h>
#include <string.h>

typedef struct {
    int kind; /* 0: invalid */
    int n;
} jv;

__attribute__((noinline)) int get_kind(jv x)
{
    return x.kind;
}

/* jv.h's: static (not inline), in every file that includes it */
static int is_valid(jv x)
{
    return get_kind(x) != 0;
}

static const char *text;
static size_t text_len, text_pos;

__attribute__((noinline)) size_t read_some(char *buf, size_t max)
{
    size_t n = text_len - text_pos < max ? text_len - text_pos : max;
    memcpy(buf, text + text_pos, n);
    text_pos += n;
    return n;
}

struct parser {
    const char *buf;
    size_t len, pos;
};

__attribute__((noinline)) jv parser_next(struct parser *p)
{
    /* one value per digit */
    while (p->pos < p->len) {
        char ch = p->buf[p->pos++];
        if (ch >= '0' && ch <= '9')
            return (jv){ 1, ch - '0' };
    }
    return (jv){ 0, 0 };
}

__attribute__((noinline)) jv array_append(jv a, jv v)
{
    a.n += v.n;
    return a;
}

__attribute__((noinline)) jv string_append(jv s, const char *buf, size_t n)
{
    s.n += (int)n + (buf[0] == '\n');
    return s;
}

__attribute__((noinline)) jv load_file(const char *contents, int raw)
{
    text = contents;
    text_len = strlen(contents);
    text_pos = 0;
    jv data = { raw ? 2 : 3, 0 };
    /* a variable-length array in C, as jq's (a const int is no constant) */
    const int max_utf8_len = 4;
    char buf[4096 + max_utf8_len];
    size_t n;
    while ((n = read_some(buf, sizeof buf - max_utf8_len)) > 0) {
        if (raw) {
            data = string_append(data, buf, n);
        } else {
            struct parser p = { buf, n, 0 };
            jv value;
            while (is_valid((value = parser_next(&p))))
                data = array_append(data, value);
        }
    }
    return data;
}

static char program[4096 * 10];
static char values[1200 * 2 + 1];

int main(void)
{
    memset(program, ' ', sizeof program - 1);
    for (int i = 0; i < 1200; i++) {
        values[2 * i] = (char)('0' + i % 10);
        values[2 * i + 1] = ',';
    }
    jv prog = load_file(program, 1);
    if (!is_valid(prog))
        return 2;
    jv data = load_file(values, 0);
    if (!is_valid(data))
        return 2;
    printf("%d %d\n", prog.n, data.n);
    return 0;
}
