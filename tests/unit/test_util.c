/* Unit tests of util.c: lexical path normalisation, the quoting of values
 * in messages, and the cg_buf text buffer the writer builds profiles in;
 * the runtime's own jump (cpu.h, emitted in util.c) and cpu.h's call frame
 * address. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "util.h"

/* ---- cg_path_normalise ------------------------------------------------------ */

/* Normalises a copy of `in` and checks the result. */
#define ASSERT_NORMALISED(in, expected)                                                                     \
    do {                                                                                                   \
        char buf_[256];                                                                                    \
        snprintf(buf_, sizeof buf_, "%s", in);                                                             \
        cg_path_normalise(buf_);                                                                           \
        assert_string_equal(buf_, expected);                                                               \
    } while (0)

static void test_normalise_dotdot_after_build_dir(void **state)
{
    (void)state;
    ASSERT_NORMALISED("/work/main/build/../examples/basic.c", "/work/main/examples/basic.c");
}

static void test_normalise_dot_and_double_slash(void **state)
{
    (void)state;
    ASSERT_NORMALISED("/a/./b//c", "/a/b/c");
}

static void test_normalise_dotdot_at_root_stays_root(void **state)
{
    (void)state;
    ASSERT_NORMALISED("/..", "/");
    ASSERT_NORMALISED("/../a", "/a");
}

static void test_normalise_to_current_directory(void **state)
{
    (void)state;
    ASSERT_NORMALISED("a/..", ".");
    ASSERT_NORMALISED(".", ".");
    ASSERT_NORMALISED("./", ".");
}

static void test_normalise_relative_dotdot_beyond_start_is_kept(void **state)
{
    (void)state;
    ASSERT_NORMALISED("a/../../b", "../b");
}

static void test_normalise_leading_dotdots_unchanged(void **state)
{
    (void)state;
    ASSERT_NORMALISED("../../x", "../../x");
}

static void test_normalise_two_dotdots_absolute(void **state)
{
    (void)state;
    ASSERT_NORMALISED("/a/b/../../c", "/c");
}

static void test_normalise_leading_dot_relative(void **state)
{
    (void)state;
    ASSERT_NORMALISED("./x/./y", "x/y");
}

static void test_normalise_already_normal_unchanged(void **state)
{
    (void)state;
    ASSERT_NORMALISED("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6");
    ASSERT_NORMALISED("src/main.c", "src/main.c");
    ASSERT_NORMALISED("/", "/");
}

static void test_normalise_trailing_slash_dropped(void **state)
{
    (void)state;
    ASSERT_NORMALISED("/a/b/", "/a/b");
    ASSERT_NORMALISED("/a/b/..", "/a");
}

static void test_normalise_names_with_dots_are_components(void **state)
{
    (void)state;
    /* "..." and ".hidden" are ordinary names, not "." or "..". */
    ASSERT_NORMALISED("/a/.../b/.hidden/../c", "/a/.../b/c");
}

/* ---- cg_quote --------------------------------------------------------------- */

/* The whole quoted form of len bytes of s. */
static const char *quoted(const char *s, size_t len)
{
    static char buf[1024];
    memset(buf, '#', sizeof buf);
    return cg_quote(buf, sizeof buf, s, len);
}
#define Q(lit) quoted((lit), sizeof(lit) - 1)

static void test_quote_plain_text(void **state)
{
    (void)state;
    assert_string_equal(Q(""), "\"\"");
    assert_string_equal(Q("tsc"), "\"tsc\"");
    assert_string_equal(Q("/tmp/a b/it's %p"), "\"/tmp/a b/it's %p\"");
}

static void test_quote_escapes_what_could_end_the_line(void **state)
{
    (void)state;
    assert_string_equal(Q("tsc\ncgprof: fake"), "\"tsc\\ncgprof: fake\"");
    assert_string_equal(Q("a\tb\rc"), "\"a\\tb\\rc\"");
    assert_string_equal(Q("back\\slash \"quote\""), "\"back\\\\slash \\\"quote\\\"\"");
    assert_string_equal(Q("\x01\x1b[31m\x7f"), "\"\\x01\\x1b[31m\\x7f\"");
    assert_string_equal(Q("a\0b"), "\"a\\x00b\""); /* len bytes, a NUL among them */
    assert_string_equal(quoted("abc", 2), "\"ab\"");
}

static void test_quote_keeps_valid_utf8(void **state)
{
    (void)state;
    assert_string_equal(Q("caf\xc3\xa9"), "\"caf\xc3\xa9\"");                 /* U+00E9 */
    assert_string_equal(Q("\xe2\x82\xac 5"), "\"\xe2\x82\xac 5\"");           /* U+20AC */
    assert_string_equal(Q("\xf0\x9d\x84\x9e"), "\"\xf0\x9d\x84\x9e\"");       /* U+1D11E */
    assert_string_equal(Q("\xef\xbf\xbd\xf4\x8f\xbf\xbf"), "\"\xef\xbf\xbd\xf4\x8f\xbf\xbf\""); /* U+FFFD, U+10FFFF */
}

static void test_quote_escapes_invalid_utf8(void **state)
{
    (void)state;
    assert_string_equal(Q("\xff\xfe"), "\"\\xff\\xfe\"");
    assert_string_equal(Q("a\x80z"), "\"a\\x80z\"");                      /* a lone continuation byte */
    assert_string_equal(Q("\xc0\xaf"), "\"\\xc0\\xaf\"");                  /* overlong '/' */
    assert_string_equal(Q("\xe0\x80\xaf"), "\"\\xe0\\x80\\xaf\"");          /* overlong, 3 bytes */
    assert_string_equal(Q("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");          /* a surrogate */
    assert_string_equal(Q("\xf4\x90\x80\x80"), "\"\\xf4\\x90\\x80\\x80\""); /* past U+10FFFF */
    assert_string_equal(Q("\xe2\x82"), "\"\\xe2\\x82\"");                  /* cut at the end */
    assert_string_equal(Q("\xe2\x82x\xc3\xa9"), "\"\\xe2\\x82x\xc3\xa9\""); /* cut, then a valid one */
}

/* Every size from 0 up: the result fits, is terminated, is the whole form
 * when it fits, else its head (whole escapes and characters only) then
 * "..., and nothing is written past size. */
static void test_quote_cuts_whole_units_only(void **state)
{
    (void)state;
    static const char value[] = "a\xe2\x82\xac\n\xf0\x9d\x84\x9e\xff\"b\xc3\xa9";
    const char *full = "\"a\xe2\x82\xac\\n\xf0\x9d\x84\x9e\\xff\\\"b\xc3\xa9\"";
    /* the boundaries of its units in the quoted form, after the opening quote */
    static const size_t ends[] = { 1, 2, 5, 7, 11, 15, 17, 18, 20 };
    size_t whole = strlen(full);
    for (size_t size = 0; size <= whole + 2; size++) {
        char buf[64];
        memset(buf, '#', sizeof buf);
        cg_quote(buf, size, value, sizeof value - 1);
        for (size_t k = size; k < sizeof buf; k++)
            assert_int_equal(buf[k], '#');
        if (size == 0)
            continue;
        size_t len = strlen(buf);
        assert_true(len < size);
        if (size > whole) {
            assert_string_equal(buf, full);
            continue;
        }
        if (size < CG_QUOTE_MIN)
            continue; /* below the documented minimum: only terminated */
        assert_true(len >= 4);
        assert_string_equal(buf + len - 4, "\"...");
        size_t head = len - 4;
        assert_memory_equal(buf, full, head);
        int at_boundary = 0;
        for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
            at_boundary |= head == ends[k];
        assert_true(at_boundary);
        /* as much as fits: the next unit would not */
        for (size_t k = 0; k + 1 < sizeof ends / sizeof ends[0]; k++)
            if (ends[k] == head)
                assert_true(ends[k + 1] + 5 > size);
    }
}

static void test_quote_cut_at_a_multibyte_boundary(void **state)
{
    (void)state;
    /* "ab" and three U+20AC (3 bytes each), cut: "\"ab", the first one, and
     * "\"..." take 1 + 2 + 3 + 4 + 1 = 11 bytes; in 10 or 9 the character
     * is left out, not split */
    static const char euros[] = "ab\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac";
    char buf[16];
    cg_quote(buf, 11, euros, sizeof euros - 1);
    assert_string_equal(buf, "\"ab\xe2\x82\xac\"...");
    cg_quote(buf, 10, euros, sizeof euros - 1);
    assert_string_equal(buf, "\"ab\"...");
    cg_quote(buf, 9, euros, sizeof euros - 1);
    assert_string_equal(buf, "\"ab\"...");
    cg_quote(buf, 13, euros, sizeof euros - 1); /* two need 14 with "\"... */
    assert_string_equal(buf, "\"ab\xe2\x82\xac\"...");
    cg_quote(buf, 14, euros, sizeof euros - 1); /* the whole form: 13 and the NUL */
    assert_string_equal(buf, "\"ab\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\"");
    /* nor an escape */
    cg_quote(buf, 8, "a\\bcdef", 7);
    assert_string_equal(buf, "\"a\"...");
    cg_quote(buf, 9, "a\\bcdef", 7);
    assert_string_equal(buf, "\"a\\\\\"...");
    /* the whole form in exactly its size */
    cg_quote(buf, 7, "abcd", 4);
    assert_string_equal(buf, "\"abcd\"");
    cg_quote(buf, 7, "abcdef", 6);
    assert_string_equal(buf, "\"a\"...");
    cg_quote(buf, CG_QUOTE_MIN, "abcdef", 6); /* the least that says it was cut */
    assert_string_equal(buf, "\"\"...");
    char small[8];
    assert_string_equal(CG_QUOTE(small, "abcdefgh"), "\"ab\"...");
}

/* ---- cg_buf --------------------------------------------------------------- */

static void test_buf_starts_empty(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.failed, 0);
    cg_buf_free(&b);
}

static void test_buf_put_appends_and_terminates(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_puts(&b, "fn=");
    cg_buf_putc(&b, '(');
    cg_buf_putn(&b, "12345", 2);
    cg_buf_puts(&b, ") main\n");
    assert_int_equal(b.len, strlen("fn=(12) main\n"));
    assert_string_equal(b.data, "fn=(12) main\n");
    assert_int_equal(b.failed, 0);
    cg_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static void test_buf_printf_formats(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_puts(&b, "pid: ");
    cg_buf_printf(&b, "%ld\nthread: %u\n", 4242L, 3u);
    assert_string_equal(b.data, "pid: 4242\nthread: 3\n");
    assert_int_equal(b.len, strlen("pid: 4242\nthread: 3\n"));
    cg_buf_free(&b);
}

static void test_buf_printf_longer_than_initial_capacity(void **state)
{
    (void)state;
    char big[10001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_puts(&b, "<");
    cg_buf_printf(&b, "%s>", big);
    assert_int_equal(b.len, 10002);
    assert_int_equal(b.data[0], '<');
    assert_int_equal(b.data[1], 'x');
    assert_int_equal(b.data[10000], 'x');
    assert_int_equal(b.data[10001], '>');
    assert_int_equal(b.data[10002], 0);
    assert_int_equal(b.failed, 0);
    cg_buf_free(&b);
}

static void test_buf_many_appends_keep_content(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    for (unsigned i = 0; i < 100000; i++)
        cg_buf_putc(&b, (char)('a' + i % 26));
    assert_int_equal(b.len, 100000);
    for (unsigned i = 0; i < 100000; i++)
        if (b.data[i] != (char)('a' + i % 26))
            fail_msg("byte %u is '%c'", i, b.data[i]);
    assert_int_equal(b.data[100000], 0);
    cg_buf_free(&b);
}

static void test_buf_put_u64_zero(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_put_u64(&b, 0);
    assert_string_equal(b.data, "0");
    cg_buf_free(&b);
}

static void test_buf_put_u64_values(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_put_u64(&b, 7);
    cg_buf_putc(&b, ' ');
    cg_buf_put_u64(&b, 10);
    cg_buf_putc(&b, ' ');
    cg_buf_put_u64(&b, 1000000007u);
    assert_string_equal(b.data, "7 10 1000000007");
    cg_buf_free(&b);
}

static void test_buf_put_u64_max(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_put_u64(&b, UINT64_MAX);
    assert_string_equal(b.data, "18446744073709551615");
    cg_buf_free(&b);
}

/* Around every power of ten (where the digit count changes) and at random,
 * against snprintf. */
static void test_buf_put_u64_digit_boundaries(void **state)
{
    (void)state;
    uint64_t p = 1, x = 88172645463325252u;
    for (int k = 0; k < 20; k++, p *= 10) {
        for (int d = -2; d <= 2; d++) {
            uint64_t v = p + (uint64_t)(int64_t)d;
            if (d < 0 && p < (uint64_t)-d)
                continue;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t vals[2] = { v, x >> (k * 3 % 64) };
            for (int j = 0; j < 2; j++) {
                struct cg_buf b;
                char want[32];
                cg_buf_init(&b);
                cg_buf_putc(&b, '<');
                cg_buf_put_u64(&b, vals[j]);
                cg_buf_putc(&b, '>');
                snprintf(want, sizeof want, "<%llu>", (unsigned long long)vals[j]);
                assert_string_equal(b.data, want);
                assert_int_equal(b.len, strlen(want));
                cg_buf_free(&b);
            }
        }
        if (k == 19)
            break;
    }
}

static void test_buf_put_hex_zero(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_put_hex(&b, 0);
    assert_string_equal(b.data, "0x0");
    cg_buf_free(&b);
}

static void test_buf_put_hex_values(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_put_hex(&b, 0x80001234u);
    cg_buf_putc(&b, ' ');
    cg_buf_put_hex(&b, 0xf);
    cg_buf_putc(&b, ' ');
    cg_buf_put_hex(&b, 0x10);
    assert_string_equal(b.data, "0x80001234 0xf 0x10");
    cg_buf_free(&b);
}

static void test_buf_put_hex_max(void **state)
{
    (void)state;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_put_hex(&b, UINT64_MAX);
    assert_string_equal(b.data, "0xffffffffffffffff");
    cg_buf_free(&b);
}

static int collect(void *arg, const char *data, size_t len)
{
    struct cg_buf *all = arg;
    cg_buf_putn(all, data, len);
    return all->failed;
}

static int refuse(void *arg, const char *data, size_t len)
{
    (void)arg;
    (void)data;
    (void)len;
    return 28; /* ENOSPC */
}

/* A flushing buffer hands its content on in pieces, in order, and stays
 * small; a flush that fails marks the content incomplete. */
static void test_buf_flush_in_pieces(void **state)
{
    (void)state;
    struct cg_buf whole, all, b;
    cg_buf_init(&whole);
    cg_buf_init(&all);
    cg_buf_init(&b);
    b.flush = collect;
    b.flush_arg = &all;
    b.data = malloc(64);
    b.cap = 64;
    for (unsigned i = 0; i < 1000; i++) {
        cg_buf_puts(&whole, "calls=");
        cg_buf_put_u64(&whole, i * 7919u);
        cg_buf_putc(&whole, '\n');
        cg_buf_puts(&b, "calls=");
        cg_buf_put_u64(&b, i * 7919u);
        cg_buf_putc(&b, '\n');
        cg_buf_reserve(&b, 1 << 20); /* no growth for a flushing buffer */
        assert_int_equal(b.cap, 64);
    }
    cg_buf_putn(&all, b.data, b.len);
    assert_int_equal(b.failed, 0);
    assert_int_equal(all.len, whole.len);
    assert_memory_equal(all.data, whole.data, whole.len);
    cg_buf_free(&b);

    cg_buf_init(&b);
    b.flush = refuse;
    b.data = malloc(16);
    b.cap = 16;
    for (int i = 0; i < 10; i++)
        cg_buf_puts(&b, "0123456789");
    assert_int_equal(b.failed, 1);
    cg_buf_free(&b);
    cg_buf_free(&all);
    cg_buf_free(&whole);
}

static int cmp_u(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Against qsort: small arrays (qsort path), large ones (radix) with the
 * high bytes shared like addresses of one process, and full-width values. */
static void test_sort_uintptr_matches_qsort(void **state)
{
    (void)state;
    static const size_t sizes[] = { 0, 1, 2, 17, 1023, 1024, 5000, 100000 };
    uint64_t x = 88172645463325252u; /* xorshift */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int wide = 0; wide < 2; wide++) {
            size_t n = sizes[k];
            uintptr_t *v = malloc((n ? n : 1) * sizeof *v), *w = malloc((n ? n : 1) * sizeof *w);
            assert_non_null(v);
            assert_non_null(w);
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                /* duplicates too: a dump's addresses repeat */
                v[i] = wide ? (uintptr_t)x : (uintptr_t)0x55d000000000u + (uintptr_t)(x % 4000000u) * (i % 3 ? 1 : 0x10000);
                w[i] = v[i];
            }
            cg_sort_uintptr(v, n);
            qsort(w, n, sizeof *w, cmp_u);
            assert_memory_equal(v, w, n * sizeof *v);
            free(v);
            free(w);
        }
    }
}

/* Elements larger than their key, sorted by key, equal keys in the order
 * given (stable), high bits shared and not. */
static void test_sort_keyed_stable_by_key(void **state)
{
    (void)state;
    struct elem {
        uintptr_t key;
        uint32_t seq;
        char pad[20];
    };
    enum { N = 30000 };
    struct elem *v = malloc(N * sizeof *v);
    assert_non_null(v);
    uint64_t x = 2463534242u;
    for (int wide = 0; wide < 2; wide++) {
        for (uint32_t i = 0; i < N; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v[i].key = wide ? (uintptr_t)x % 5000u * 0x100000001u : 0x7f0000000000u + (uintptr_t)(x % 5000u);
            v[i].seq = i;
            memset(v[i].pad, (int)(i & 0x7f), sizeof v[i].pad);
        }
        assert_int_equal(cg_sort_keyed(v, N, sizeof *v), 0);
        for (uint32_t i = 1; i < N; i++) {
            assert_true(v[i - 1].key <= v[i].key);
            if (v[i - 1].key == v[i].key)
                assert_true(v[i - 1].seq < v[i].seq);
            assert_int_equal((unsigned char)v[i].pad[19], v[i].seq & 0x7f);
        }
    }
    free(v);
}

/* ---- cg_cpu_jump_set, cg_cpu_jump_go (cpu.h) ------------------------------------- */

/* Where clobber_and_jump jumps to. */
static cg_cpu_jump_buf *jump_point;

/* Writes values of its own into the registers that a call must keep
 * (but the frame pointer), then jumps: the setter's are what the jump
 * restores. */
static __attribute__((noinline)) void clobber_and_jump(void)
{
#if defined(__x86_64__)
    __asm__ volatile("mov $-1, %%rbx\n\tmov $-1, %%r12\n\tmov $-1, %%r13\n\tmov $-1, %%r14\n\tmov $-1, %%r15"
                     : : : "rbx", "r12", "r13", "r14", "r15", "memory");
#elif defined(__aarch64__)
    __asm__ volatile("mov x19, #-1\n\tmov x20, #-1\n\tmov x21, #-1\n\tmov x22, #-1\n\tmov x23, #-1\n\t"
                     "mov x24, #-1\n\tmov x25, #-1\n\tmov x26, #-1\n\tmov x27, #-1\n\tmov x28, #-1\n\t"
                     "movi d8, #0xffffffffffffffff\n\tmovi d9, #0xffffffffffffffff\n\t"
                     "movi d10, #0xffffffffffffffff\n\tmovi d11, #0xffffffffffffffff\n\t"
                     "movi d12, #0xffffffffffffffff\n\tmovi d13, #0xffffffffffffffff\n\t"
                     "movi d14, #0xffffffffffffffff\n\tmovi d15, #0xffffffffffffffff"
                     : : : "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "d8", "d9", "d10",
                       "d11", "d12", "d13", "d14", "d15", "memory");
#endif
    cg_cpu_jump_go(*jump_point);
}

/* n frames deeper (each with a little stack of its own), then the jump. */
static __attribute__((noinline)) void dive(int n)
{
    volatile char pad[48];
    pad[0] = (char)n;
    if (n > 0)
        dive(n - 1);
    else if (jump_point) /* always: a path that returns, for the compiler */
        clobber_and_jump();
    pad[1] = pad[0];
}

/* The stack pointer of a call made from the caller (an address in the
 * callee's frame). */
static __attribute__((noinline)) uintptr_t stack_here(void)
{
    volatile char c = 0;
    return (uintptr_t)&c + (uintptr_t)c;
}

/* The set returns twice, 0 then 1; the values the setter keeps across it,
 * integers and floating-point ones, and its stack pointer are the same
 * after the jump from 20 frames down, again and again. */
static void test_jump_keeps_the_setters_registers_and_stack(void **state)
{
    (void)state;
    volatile uint64_t in[8] = { 3, 5, 7, 11, 13, 17, 19, 23 };
    for (int round = 0; round < 100; round++) {
        uint64_t a = in[0] * 0x9e3779b97f4a7c15u, b = in[1] * a, c = in[2] * b, d = in[3] * c, e = in[4] * d,
                 f = in[5] * e, g = in[6] * f, h = in[7] * g;
        double x = (double)in[0] / 7, y = x * (double)in[1], z = y / (double)in[2], w = z * (double)in[3] + x;
        uintptr_t sp = stack_here();
        volatile int returns = 0;
        cg_cpu_jump_buf here;
        jump_point = &here;
        if (cg_cpu_jump_set(here) == 0) {
            returns++;
            dive(20);
            fail_msg("the jump came back here");
        }
        returns++;
        assert_int_equal(returns, 2);
        assert_true(stack_here() == sp);
        uint64_t a2 = in[0] * 0x9e3779b97f4a7c15u, b2 = in[1] * a2, c2 = in[2] * b2, d2 = in[3] * c2,
                 e2 = in[4] * d2, f2 = in[5] * e2, g2 = in[6] * f2, h2 = in[7] * g2;
        assert_true(a == a2 && b == b2 && c == c2 && d == d2 && e == e2 && f == f2 && g == g2 && h == h2);
        double x2 = (double)in[0] / 7, y2 = x2 * (double)in[1], z2 = y2 / (double)in[2], w2 = z2 * (double)in[3] + x2;
        assert_true(x == x2 && y == y2 && z == z2 && w == w2);
    }
}

static int trail[8], ntrail;

/* As the symbol reader's lookups: a jump point of its own for what it
 * calls, the one before put back after. */
static __attribute__((noinline)) void guarded_dive(void)
{
    cg_cpu_jump_buf here;
    cg_cpu_jump_buf *volatile outer = jump_point;
    if (cg_cpu_jump_set(here) == 0) {
        jump_point = &here;
        trail[ntrail++] = 1;
        dive(3);
    } else {
        trail[ntrail++] = 2;
    }
    jump_point = outer;
}

/* A jump goes to the innermost point set; once that is put back, the next
 * goes to the outer one. */
static void test_jump_points_nest(void **state)
{
    (void)state;
    ntrail = 0;
    cg_cpu_jump_buf top;
    jump_point = &top;
    if (cg_cpu_jump_set(top) == 0) {
        guarded_dive();
        trail[ntrail++] = 3;
        dive(5);
        trail[ntrail++] = 9;
    } else {
        trail[ntrail++] = 4;
    }
    assert_int_equal(ntrail, 4);
    assert_int_equal(trail[0], 1);
    assert_int_equal(trail[1], 2);
    assert_int_equal(trail[2], 3);
    assert_int_equal(trail[3], 4);
}

/* No signal mask is kept or put back (nor any system call made): a signal
 * blocked between the set and the jump is still blocked after it, where
 * siglongjmp would have put back the mask of its sigsetjmp. */
static void test_jump_leaves_the_signal_mask(void **state)
{
    (void)state;
    sigset_t usr2, old, now;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &usr2, &old), 0);
    cg_cpu_jump_buf here;
    jump_point = &here;
    if (cg_cpu_jump_set(here) == 0) {
        assert_int_equal(pthread_sigmask(SIG_BLOCK, &usr2, NULL), 0);
        dive(2);
    }
    assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, &now), 0);
    assert_true(sigismember(&now, SIGUSR2));
}

/* ---- CG_CPU_CFA (cpu.h) ------------------------------------------------------------ */

#if defined(__x86_64__) || defined(__aarch64__)
static volatile long cfa_sink;

/* the call frame address of a function with no frame of its own to speak
 * of, and of one that saves registers and has locals */
static __attribute__((noinline)) uintptr_t cfa_small(void)
{
    return CG_CPU_CFA();
}

static __attribute__((noinline)) long kept(long v)
{
    cfa_sink = v;
    return cfa_sink;
}

static __attribute__((noinline)) uintptr_t cfa_saving(long a, long b, long c, long d)
{
    volatile char pad[40];
    pad[0] = (char)a;
    long s1 = kept(a), s2 = kept(b), s3 = kept(c), s4 = kept(d), s5 = kept(a + b), s6 = kept(c + d);
    uintptr_t cfa = CG_CPU_CFA();
    cfa_sink = kept(s1) + s2 + s3 + s4 + s5 + s6 + pad[0];
    return cfa;
}

/* The callee's CFA less the stack pointer at the call (this function's,
 * constant in its body). */
static __attribute__((noinline)) long cfa_offset(int saving)
{
    uintptr_t sp, cfa;
#if defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#else
    __asm__ volatile("mov %0, sp" : "=r"(sp));
#endif
    cfa = saving ? cfa_saving(1, 2, 3, 4) : cfa_small();
    return (long)(cfa - sp);
}
#endif

/* The hooks' frame key is the stack pointer before the call (clang 14's
 * __builtin_dwarf_cfa on aarch64 gives the frame pointer, 16 bytes or more
 * lower). */
static void test_cfa_is_the_stack_pointer_before_the_call(void **state)
{
    (void)state;
#if defined(__x86_64__) || defined(__aarch64__)
    assert_int_equal(cfa_offset(0), 0);
    assert_int_equal(cfa_offset(1), 0);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalise_dotdot_after_build_dir),
        cmocka_unit_test(test_normalise_dot_and_double_slash),
        cmocka_unit_test(test_normalise_dotdot_at_root_stays_root),
        cmocka_unit_test(test_normalise_relative_dotdot_beyond_start_is_kept),
        cmocka_unit_test(test_normalise_leading_dotdots_unchanged),
        cmocka_unit_test(test_normalise_two_dotdots_absolute),
        cmocka_unit_test(test_normalise_leading_dot_relative),
        cmocka_unit_test(test_normalise_to_current_directory),
        cmocka_unit_test(test_normalise_already_normal_unchanged),
        cmocka_unit_test(test_normalise_trailing_slash_dropped),
        cmocka_unit_test(test_normalise_names_with_dots_are_components),
        cmocka_unit_test(test_quote_plain_text),
        cmocka_unit_test(test_quote_escapes_what_could_end_the_line),
        cmocka_unit_test(test_quote_keeps_valid_utf8),
        cmocka_unit_test(test_quote_escapes_invalid_utf8),
        cmocka_unit_test(test_quote_cuts_whole_units_only),
        cmocka_unit_test(test_quote_cut_at_a_multibyte_boundary),
        cmocka_unit_test(test_buf_starts_empty),
        cmocka_unit_test(test_buf_put_appends_and_terminates),
        cmocka_unit_test(test_buf_printf_formats),
        cmocka_unit_test(test_buf_printf_longer_than_initial_capacity),
        cmocka_unit_test(test_buf_many_appends_keep_content),
        cmocka_unit_test(test_buf_put_u64_zero),
        cmocka_unit_test(test_buf_put_u64_values),
        cmocka_unit_test(test_buf_put_u64_max),
        cmocka_unit_test(test_buf_put_u64_digit_boundaries),
        cmocka_unit_test(test_buf_put_hex_zero),
        cmocka_unit_test(test_buf_put_hex_values),
        cmocka_unit_test(test_buf_put_hex_max),
        cmocka_unit_test(test_buf_flush_in_pieces),
        cmocka_unit_test(test_sort_uintptr_matches_qsort),
        cmocka_unit_test(test_sort_keyed_stable_by_key),
        cmocka_unit_test(test_jump_keeps_the_setters_registers_and_stack),
        cmocka_unit_test(test_jump_points_nest),
        cmocka_unit_test(test_jump_leaves_the_signal_mask),
        cmocka_unit_test(test_cfa_is_the_stack_pointer_before_the_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
