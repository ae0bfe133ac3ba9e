/* Unit tests of ehframe.c: the machine function an address is in, from an
 * object's .eh_frame_hdr search table and the FDE it points to.
 *
 * First against the real tables of this test program and of libc, found as
 * the runtime finds them (glibc's _dl_find_object): the range of a function
 * of ours begins at its address and holds none of the others. Then against
 * tables built here byte by byte (the LSB's formats), in a heap block of
 * exactly their size (so that a read past them is caught by the sanitizer
 * build), describing made-up code near the block: each range and each gap
 * between them, the CIE augmentations gcc and clang write ("zR", "zPLR"
 * with either personality encoding), a 64-bit extended length, and the
 * headers and CIEs that must give no answer rather than a guess. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ehframe.h"

/* ---- the test program's own code ------------------------------------------- */

/* Functions of different bodies (so that no pass folds two into one), not
 * inlined, each its own FDE. */
static volatile long sink;

__attribute__((noinline)) static long own_first(long x)
{
    sink = x;
    return sink * 3 + 1;
}

__attribute__((noinline)) static long own_second(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += sink ^ i;
    return s;
}

__attribute__((noinline)) static void own_third(const char *s)
{
    sink = (long)strlen(s);
    if (sink > 3)
        sink = own_first(sink);
}

int main(void);

/* The .eh_frame_hdr of the object that holds addr. */
static const unsigned char *hdr_of(uintptr_t addr, struct dl_find_object *o)
{
    memset(o, 0, sizeof *o);
    assert_int_equal(_dl_find_object((void *)addr, o), 0);
    assert_non_null(o->dlfo_eh_frame);
    return o->dlfo_eh_frame;
}

static void test_own_functions_ranges(void **state)
{
    (void)state;
    /* called once, so that they are plainly part of the program */
    own_third("abcdef");
    sink = own_second(4);
    const uintptr_t fns[] = {(uintptr_t)own_first, (uintptr_t)own_second, (uintptr_t)own_third, (uintptr_t)main};
    const size_t n = sizeof fns / sizeof fns[0];
    struct dl_find_object o;
    const unsigned char *hdr = hdr_of(fns[0], &o);
    for (size_t i = 0; i < n; i++) {
        struct dl_find_object oi;
        assert_ptr_equal(hdr_of(fns[i], &oi), hdr); /* all in the test program */
        uintptr_t b = 0, e = 0;
        assert_int_equal(cg_fde_range(hdr, 0, fns[i], &b, &e), 0);
        assert_int_equal(b, fns[i]);
        assert_true(e > b);
        /* anywhere inside gives the same range: just after the start, the
         * last byte */
        const uintptr_t inside[] = {fns[i] + 1, b + (e - b) / 2, e - 1};
        for (size_t k = 0; k < 3; k++) {
            uintptr_t b2 = 0, e2 = 0;
            assert_int_equal(cg_fde_range(hdr, 0, inside[k], &b2, &e2), 0);
            assert_int_equal(b2, b);
            assert_int_equal(e2, e);
        }
        /* the range is the function's alone: no other of them in it, and
         * what follows its end (the next function, or padding) is not it */
        for (size_t j = 0; j < n; j++)
            if (j != i && fns[j] >= b && fns[j] < e)
                fail_msg("function %zu (%#lx) in the range of function %zu [%#lx, %#lx)", j, (unsigned long)fns[j], i,
                         (unsigned long)b, (unsigned long)e);
        uintptr_t b3 = 0, e3 = 0;
        if (cg_fde_range(hdr, 0, e, &b3, &e3) == 0)
            assert_true(b3 >= e);
    }
}

/* cg_fde_range_loaded: the same ranges, found in whichever object holds
 * the address (the program's, libc's), and none for data */
static void test_loaded_ranges(void **state)
{
    (void)state;
    pid_t (*volatile libc_fn)(void) = getpid;
    const uintptr_t pcs[] = {(uintptr_t)own_second + 1, (uintptr_t)main, (uintptr_t)libc_fn};
    for (size_t i = 0; i < sizeof pcs / sizeof pcs[0]; i++) {
        struct dl_find_object o;
        uintptr_t b = 0, e = 0, b2 = 0, e2 = 0;
        assert_int_equal(cg_fde_range(hdr_of(pcs[i], &o), 0, pcs[i], &b, &e), 0);
        assert_int_equal(cg_fde_range_loaded(pcs[i], &b2, &e2), 0);
        assert_int_equal(b2, b);
        assert_int_equal(e2, e);
    }
    uintptr_t b = 1, e = 2;
    assert_int_equal(cg_fde_range_loaded((uintptr_t)&sink, &b, &e), -1);
    assert_int_equal(cg_fde_range_loaded(0, &b, &e), -1);
}

static void test_own_data_has_no_range(void **state)
{
    (void)state;
    /* a variable of the program: in its object, in no FDE */
    struct dl_find_object o;
    const unsigned char *hdr = hdr_of((uintptr_t)&sink, &o);
    uintptr_t b = 1, e = 2;
    assert_int_equal(cg_fde_range(hdr, 0, (uintptr_t)&sink, &b, &e), -1);
    assert_int_equal(b, 1); /* left alone */
    assert_int_equal(e, 2);
}

static void test_libc_function_range(void **state)
{
    (void)state;
    /* through a pointer the compiler cannot see through: getpid's own
     * address in libc (no sanitizer intercepts it) */
    pid_t (*volatile fn)(void) = getpid;
    uintptr_t pc = (uintptr_t)fn;
    struct dl_find_object own, o;
    hdr_of((uintptr_t)main, &own);
    const unsigned char *hdr = hdr_of(pc, &o);
    assert_ptr_not_equal(o.dlfo_map_start, own.dlfo_map_start);
    assert_non_null(o.dlfo_link_map);
    if (!strstr(o.dlfo_link_map->l_name, "libc.so"))
        fail_msg("getpid is in %s, not libc", o.dlfo_link_map->l_name);
    uintptr_t b = 0, e = 0;
    assert_int_equal(cg_fde_range(hdr, 0, pc, &b, &e), 0);
    assert_true(b <= pc && pc < e);
    assert_int_equal(cg_fde_range(hdr, 0, e - 1, &b, &e), 0);
    assert_true(b <= pc && pc < e);
}

/* ---- hand-built tables ------------------------------------------------------- */

/* The CIEs of the fixture. */
enum { CIE_ZR, CIE_ZPLR_9B, CIE_ZPLR_00, CIE_UNKNOWN, CIE_WIDE, NCIES };

/* The FDEs, in address order: [begin, end) as offsets from the made-up
 * code, the CIE, and whether the FDE has the 64-bit extended length. */
static const struct fde_spec {
    uint32_t begin, end;
    int cie;
    int wide;
} FDES[] = {
    {0x000, 0x040, CIE_ZR, 0},      /* the CIE of most FDEs gcc writes */
    {0x040, 0x0a0, CIE_ZPLR_9B, 0}, /* adjacent to the first */
    {0x100, 0x180, CIE_ZPLR_00, 0}, /* a gap before it */
    {0x200, 0x210, CIE_UNKNOWN, 0}, /* "zQR": no answer */
    {0x300, 0x380, CIE_ZR, 1},      /* 0xffffffff + 8-byte length */
    {0x400, 0x420, CIE_WIDE, 0},    /* its CIE has the extended length */
};
#define NFDES (sizeof FDES / sizeof FDES[0])
/* where the made-up code is: above the block, within an sdata4 of it */
#define CODE_OFFSET ((uintptr_t)0x100000)

struct fixture {
    unsigned char *buf; /* .eh_frame_hdr at buf, then .eh_frame: size bytes */
    size_t size;
    size_t hdr_size; /* the header and its search table */
    uintptr_t code;
    size_t cie_at[NCIES];
    size_t fde_at[NFDES];
};

struct out {
    unsigned char *b; /* NULL: counting only */
    size_t at;
};

static void put(struct out *o, const void *v, size_t n)
{
    if (o->b)
        memcpy(o->b + o->at, v, n);
    o->at += n;
}
static void put1(struct out *o, uint8_t v) { put(o, &v, 1); }
static void put4(struct out *o, uint32_t v) { put(o, &v, 4); }
static void put8(struct out *o, uint64_t v) { put(o, &v, 8); }

/* The length field of a CIE or FDE begun at start (4 bytes, or 12 when
 * wide), now that it ends at o->at, padded with DW_CFA_nop to 4 bytes. */
static void put_length(struct out *o, size_t start, int wide)
{
    while ((o->at - start) % 4)
        put1(o, 0x00);
    if (!o->b)
        return;
    if (wide) {
        uint32_t esc = 0xffffffffu;
        uint64_t len = o->at - start - 12;
        memcpy(o->b + start, &esc, 4);
        memcpy(o->b + start + 4, &len, 8);
    } else {
        uint32_t len = (uint32_t)(o->at - start - 4);
        memcpy(o->b + start, &len, 4);
    }
}

static void put_cie(struct out *o, struct fixture *f, int which)
{
    static const char *const aug[NCIES] = {"zR", "zPLR", "zPLR", "zQR", "zR"};
    int wide = which == CIE_WIDE;
    size_t start = o->at;
    f->cie_at[which] = start;
    o->at += wide ? 12 : 4;
    put4(o, 0); /* CIE id */
    put1(o, 1); /* version */
    put(o, aug[which], strlen(aug[which]) + 1);
    put1(o, 1);    /* code alignment factor */
    put1(o, 0x78); /* data alignment factor: -8 */
    put1(o, 16);   /* return address register (version 1: a byte) */
    switch (which) {
    case CIE_ZPLR_9B:
        put1(o, 7);    /* augmentation data length */
        put1(o, 0x9b); /* P: indirect pcrel sdata4, as gcc writes with -fPIC */
        put4(o, 0x1234);
        put1(o, 0x1b); /* L */
        put1(o, 0x1b); /* R */
        break;
    case CIE_ZPLR_00:
        put1(o, 11);   /* augmentation data length */
        put1(o, 0x00); /* P: absptr, 8 bytes */
        put8(o, 0x1122334455667788u);
        put1(o, 0x1b); /* L */
        put1(o, 0x1b); /* R */
        break;
    case CIE_UNKNOWN:
        put1(o, 2);    /* augmentation data length */
        put1(o, 0x1b); /* Q: no letter anyone defines, its data unknown (a
                        * parser that took Q for data-less would read R here,
                        * and find the range) */
        put1(o, 0x1b); /* R */
        break;
    default:
        put1(o, 1);    /* augmentation data length */
        put1(o, 0x1b); /* R: pcrel sdata4 */
        break;
    }
    put1(o, 0x0c); /* DW_CFA_def_cfa: rsp + 8 */
    put1(o, 0x07);
    put1(o, 0x08);
    put1(o, 0x90); /* DW_CFA_offset: rip at cfa - 8 */
    put1(o, 0x01);
    put_length(o, start, wide);
}

static void put_fde(struct out *o, struct fixture *f, size_t i)
{
    const struct fde_spec *s = &FDES[i];
    size_t start = o->at;
    f->fde_at[i] = start;
    o->at += s->wide ? 12 : 4;
    put4(o, (uint32_t)(o->at - f->cie_at[s->cie])); /* back to the CIE */
    /* pcrel sdata4: from this field */
    put4(o, (uint32_t)(f->code + s->begin - ((uintptr_t)o->b + o->at)));
    put4(o, s->end - s->begin); /* the range: sdata4 */
    if (s->cie == CIE_ZPLR_9B || s->cie == CIE_ZPLR_00) {
        put1(o, 4); /* augmentation data: the LSDA (L: pcrel sdata4), none */
        put4(o, 0);
    } else {
        put1(o, 0);
    }
    put1(o, 0x41); /* DW_CFA_advance_loc 1 */
    put1(o, 0x0e); /* DW_CFA_def_cfa_offset 16 */
    put1(o, 0x10);
    put_length(o, start, s->wide);
}

/* The tables, written at o->b (the first pass counts). */
static void put_tables(struct out *o, struct fixture *f)
{
    o->at = f->hdr_size;
    for (int c = 0; c < NCIES; c++)
        put_cie(o, f, c);
    for (size_t i = 0; i < NFDES; i++)
        put_fde(o, f, i);
    put4(o, 0); /* the terminator */
    if (!o->b)
        return;
    /* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, fde_count
     * udata4, the table datarel sdata4; sorted by initial location */
    struct out h = {o->b, 0};
    put1(&h, 1);
    put1(&h, 0x1b);
    put1(&h, 0x03);
    put1(&h, 0x3b);
    put4(&h, (uint32_t)(f->hdr_size - h.at));
    put4(&h, NFDES);
    for (size_t i = 0; i < NFDES; i++) {
        put4(&h, (uint32_t)(f->code + FDES[i].begin - (uintptr_t)o->b));
        put4(&h, (uint32_t)f->fde_at[i]);
    }
    assert_int_equal(h.at, f->hdr_size);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->hdr_size = 12 + 8 * NFDES;
    struct out o = {NULL, 0};
    put_tables(&o, f);
    f->size = o.at;
    f->buf = malloc(f->size);
    if (!f->buf) {
        free(f);
        return -1;
    }
    f->code = (uintptr_t)f->buf + CODE_OFFSET;
    o.b = f->buf;
    put_tables(&o, f);
    if (o.at != f->size)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    free(f->buf);
    free(f);
    return 0;
}

/* cg_fde_range on the fixture at code + off: -1, or 0 with the range as
 * offsets from the code. */
static int range_at(const struct fixture *f, size_t hdr_size, intptr_t off, intptr_t *b, intptr_t *e)
{
    uintptr_t ub = 0, ue = 0;
    int rc = cg_fde_range(f->buf, hdr_size, f->code + (uintptr_t)off, &ub, &ue);
    *b = (intptr_t)(ub - f->code);
    *e = (intptr_t)(ue - f->code);
    return rc;
}

#define ASSERT_RANGE(f, off, B, E)                                                                                     \
    do {                                                                                                               \
        intptr_t b_, e_;                                                                                               \
        if (range_at((f), 0, (off), &b_, &e_) != 0)                                                                    \
            fail_msg("code + %#lx: no range, expected [%#x, %#x)", (long)(off), (unsigned)(B), (unsigned)(E));         \
        if (b_ != (intptr_t)(B) || e_ != (intptr_t)(E))                                                                \
            fail_msg("code + %#lx: [%#lx, %#lx), expected [%#x, %#x)", (long)(off), (long)b_, (long)e_, (unsigned)(B), \
                     (unsigned)(E));                                                                                   \
    } while (0)

#define ASSERT_NO_RANGE(f, off)                                                                                        \
    do {                                                                                                               \
        intptr_t b_, e_;                                                                                               \
        if (range_at((f), 0, (off), &b_, &e_) != -1)                                                                   \
            fail_msg("code + %#lx: [%#lx, %#lx), expected none", (long)(off), (long)b_, (long)e_);                     \
    } while (0)

static void test_table_each_range(void **state)
{
    const struct fixture *f = *state;
    for (size_t i = 0; i < NFDES; i++) {
        if (FDES[i].cie == CIE_UNKNOWN)
            continue;
        const uint32_t b = FDES[i].begin, e = FDES[i].end;
        ASSERT_RANGE(f, b, b, e);
        ASSERT_RANGE(f, b + 1, b, e);
        ASSERT_RANGE(f, (b + e) / 2, b, e);
        ASSERT_RANGE(f, e - 1, b, e);
    }
    /* the end is not in the range: the next one's start, when adjacent */
    ASSERT_RANGE(f, 0x040, 0x040, 0x0a0);
}

static void test_table_below_first(void **state)
{
    const struct fixture *f = *state;
    ASSERT_NO_RANGE(f, -1);
    ASSERT_NO_RANGE(f, -0x1000);
    uintptr_t b, e;
    assert_int_equal(cg_fde_range(f->buf, 0, 0, &b, &e), -1);
    assert_int_equal(cg_fde_range(f->buf, 0, (uintptr_t)f->buf, &b, &e), -1);
}

static void test_table_gaps(void **state)
{
    const struct fixture *f = *state;
    /* after an FDE's end, before the next one's start */
    ASSERT_NO_RANGE(f, 0x0a0);
    ASSERT_NO_RANGE(f, 0x0ff);
    ASSERT_NO_RANGE(f, 0x180);
    ASSERT_NO_RANGE(f, 0x1ff);
    ASSERT_NO_RANGE(f, 0x210);
    ASSERT_NO_RANGE(f, 0x2ff);
    ASSERT_NO_RANGE(f, 0x380);
    ASSERT_NO_RANGE(f, 0x3ff);
}

static void test_table_past_last(void **state)
{
    const struct fixture *f = *state;
    ASSERT_NO_RANGE(f, 0x420);
    ASSERT_NO_RANGE(f, 0x100000);
    uintptr_t b, e;
    assert_int_equal(cg_fde_range(f->buf, 0, UINTPTR_MAX, &b, &e), -1);
}

static void test_table_null_hdr(void **state)
{
    (void)state;
    uintptr_t b, e;
    assert_int_equal(cg_fde_range(NULL, 0, (uintptr_t)main, &b, &e), -1);
}

/* The header's fields other than gcc's and the linkers': no answer. Each
 * case changes one byte, checks, and puts it back (the range found again
 * shows that the byte was the reason). */
static void check_header_byte(const struct fixture *f, size_t at, uint8_t v)
{
    uint8_t was = f->buf[at];
    f->buf[at] = v;
    intptr_t b, e;
    int rc = range_at(f, 0, 0x140, &b, &e);
    f->buf[at] = was;
    if (rc != -1)
        fail_msg("header byte %zu = %#x: found [%#lx, %#lx), expected none", at, v, (long)b, (long)e);
    ASSERT_RANGE(f, 0x140, 0x100, 0x180);
}

static void test_table_header_version(void **state)
{
    const struct fixture *f = *state;
    check_header_byte(f, 0, 2);
    check_header_byte(f, 0, 0);
}

static void test_table_header_table_enc(void **state)
{
    const struct fixture *f = *state;
    check_header_byte(f, 3, 0x1b); /* pcrel sdata4 */
    check_header_byte(f, 3, 0x3c); /* datarel sdata8 */
    check_header_byte(f, 3, 0x03); /* udata4 */
    check_header_byte(f, 3, 0xff); /* omit: no table */
}

static void test_table_header_count(void **state)
{
    const struct fixture *f = *state;
    check_header_byte(f, 2, 0xff); /* fde_count omitted */
    check_header_byte(f, 2, 0x0f); /* no such format */
    /* a count of 0: nothing to search */
    uint32_t count = 0;
    memcpy(f->buf + 8, &count, 4);
    ASSERT_NO_RANGE(f, 0);
    /* a count of 1: only the first entry is searched */
    count = 1;
    memcpy(f->buf + 8, &count, 4);
    ASSERT_RANGE(f, 0x10, 0x000, 0x040);
    ASSERT_NO_RANGE(f, 0x50);
    count = NFDES;
    memcpy(f->buf + 8, &count, 4);
    ASSERT_RANGE(f, 0x50, 0x040, 0x0a0);
}

/* A block shorter than any header: nothing read past it (ASan's build). */
static void test_short_block(void **state)
{
    (void)state;
    unsigned char *h = malloc(8);
    assert_non_null(h);
    memcpy(h, (unsigned char[]){ 1, 0x1b, 0x03, 0x3b, 0x10, 0, 0, 0 }, 8);
    uintptr_t b, e;
    assert_int_equal(cg_fde_range(h, 8, (uintptr_t)h, &b, &e), -1);
    free(h);
}

static void test_table_hdr_size_bounds_the_table(void **state)
{
    const struct fixture *f = *state;
    intptr_t b, e;
    /* the whole table readable: the last entry found */
    assert_int_equal(range_at(f, f->hdr_size, 0x410, &b, &e), 0);
    assert_int_equal(b, 0x400);
    assert_int_equal(range_at(f, f->size, 0x410, &b, &e), 0);
    /* one byte short of it: not searched at all */
    assert_int_equal(range_at(f, f->hdr_size - 1, 0x410, &b, &e), -1);
    assert_int_equal(range_at(f, f->hdr_size - 1, 0x10, &b, &e), -1);
}

static void test_table_unknown_augmentation(void **state)
{
    const struct fixture *f = *state;
    /* "zQR": the letters after Q cannot be found, so neither can R */
    ASSERT_NO_RANGE(f, 0x200);
    ASSERT_NO_RANGE(f, 0x208);
    /* the same CIE with a letter known in Q's place (L, one byte of data)
     * gives the range: Q was the reason */
    size_t q = f->cie_at[CIE_UNKNOWN] + 4 + 4 + 1 + 1;
    assert_int_equal(f->buf[q], 'Q');
    f->buf[q] = 'L';
    ASSERT_RANGE(f, 0x208, 0x200, 0x210);
    f->buf[q] = 'Q';
    ASSERT_NO_RANGE(f, 0x208);
}

static void test_table_personality_encodings(void **state)
{
    const struct fixture *f = *state;
    /* "zPLR": the personality skipped by its encoding (4 bytes with 0x9b,
     * 8 with absptr) to find R */
    ASSERT_RANGE(f, 0x041, 0x040, 0x0a0);
    ASSERT_RANGE(f, 0x17f, 0x100, 0x180);
    /* P's encoding read from the CIE: absptr taken for udata4 would read R
     * from inside the 8-byte pointer */
    size_t p = f->cie_at[CIE_ZPLR_00] + 4 + 4 + 1 + 5 + 3 + 1;
    assert_int_equal(f->buf[p], 0x00);
    f->buf[p] = 0x03;
    ASSERT_NO_RANGE(f, 0x17f);
    f->buf[p] = 0x00;
    ASSERT_RANGE(f, 0x17f, 0x100, 0x180);
}

static void test_table_extended_length(void **state)
{
    const struct fixture *f = *state;
    uint32_t len32;
    memcpy(&len32, f->buf + f->fde_at[4], 4);
    assert_int_equal(len32, 0xffffffffu);
    ASSERT_RANGE(f, 0x300, 0x300, 0x380);
    ASSERT_RANGE(f, 0x37f, 0x300, 0x380);
    memcpy(&len32, f->buf + f->cie_at[CIE_WIDE], 4);
    assert_int_equal(len32, 0xffffffffu);
    ASSERT_RANGE(f, 0x400, 0x400, 0x420);
    ASSERT_RANGE(f, 0x41f, 0x400, 0x420);
}

static void test_table_entry_pointing_at_a_cie(void **state)
{
    const struct fixture *f = *state;
    /* a table entry whose FDE offset points at a CIE, or at the
     * terminator: no range */
    size_t entry = 12 + 8 * 2 + 4;
    uint32_t was;
    memcpy(&was, f->buf + entry, 4);
    uint32_t to = (uint32_t)f->cie_at[CIE_ZR];
    memcpy(f->buf + entry, &to, 4);
    ASSERT_NO_RANGE(f, 0x140);
    to = (uint32_t)(f->size - 4);
    memcpy(f->buf + entry, &to, 4);
    ASSERT_NO_RANGE(f, 0x140);
    memcpy(f->buf + entry, &was, 4);
    ASSERT_RANGE(f, 0x140, 0x100, 0x180);
}

static void test_table_cie_pointer_at_an_fde(void **state)
{
    const struct fixture *f = *state;
    /* the FDE of [0x100, 0x180) with its CIE pointer moved to the first
     * FDE: what is there is no CIE (its id is not 0) */
    size_t field = f->fde_at[2] + 4;
    uint32_t was, to = (uint32_t)(field - f->fde_at[0]);
    memcpy(&was, f->buf + field, 4);
    memcpy(f->buf + field, &to, 4);
    ASSERT_NO_RANGE(f, 0x140);
    memcpy(f->buf + field, &was, 4);
    ASSERT_RANGE(f, 0x140, 0x100, 0x180);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_functions_ranges),
        cmocka_unit_test(test_loaded_ranges),
        cmocka_unit_test(test_own_data_has_no_range),
        cmocka_unit_test(test_short_block),
        cmocka_unit_test(test_libc_function_range),
        T(test_table_each_range),
        T(test_table_below_first),
        T(test_table_gaps),
        T(test_table_past_last),
        cmocka_unit_test(test_table_null_hdr),
        T(test_table_header_version),
        T(test_table_header_table_enc),
        T(test_table_header_count),
        T(test_table_hdr_size_bounds_the_table),
        T(test_table_unknown_augmentation),
        T(test_table_personality_encodings),
        T(test_table_extended_length),
        T(test_table_entry_pointing_at_a_cie),
        T(test_table_cie_pointer_at_an_fde),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
