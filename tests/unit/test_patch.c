/* Unit tests of patch.h (patch.c, arch/x86_64/sites.c and
 * arch/aarch64/a64sites.c): the hook call sites in machine code and the
 * change of one instruction that takes one back (docs/internals/
 * takeback.md, "The sites"): x86-64's first byte, aarch64's word;
 * elsewhere, that none is found.
 *
 * cg_site_at_return and cg_range_scan read code given as bytes (assembled
 * with gcc -c and read back with objdump -d, the rel32 and disp32 fields
 * filled in here), in heap blocks of exactly their size so that a read past
 * them is caught by the sanitizer build; what is a hook is said by a
 * callback of the test's, for made-up addresses around the block (nothing
 * there is ever run). cg_site_write is run on a real page, read-only and
 * executable, and then on code that threads run while its sites are taken
 * back and put back thousands of times (the design's claim: a thread sees
 * the old instruction or the new one, whole, wherever the byte is). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "patch.h"

#if defined(__x86_64__)
/* ---- what is a hook: the test's callback --------------------------------- */

/* Made-up addresses around a code block at blk: the hooks (below and above
 * it, for negative and positive displacements), another function, and GOT
 * slots holding each. */
enum target { T_ENTER, T_EXIT, T_OTHER, T_ENTER_SLOT, T_EXIT_SLOT, T_OTHER_SLOT };

static uintptr_t target_addr(uintptr_t blk, int t)
{
    static const intptr_t off[] = {0x10000, -0x20000, 0x30000, 0x40000, 0x48000, 0x50000};
    return blk + (uintptr_t)off[t];
}

struct hooks {
    uintptr_t blk;
    unsigned asked; /* calls of the callback */
    uintptr_t last_to;
    int last_got;
};

static int hook_of(void *ctx, uintptr_t to, int got)
{
    struct hooks *h = ctx;
    h->asked++;
    h->last_to = to;
    h->last_got = got;
    if (to == target_addr(h->blk, got ? T_ENTER_SLOT : T_ENTER))
        return CG_HOOK_ENTER;
    if (to == target_addr(h->blk, got ? T_EXIT_SLOT : T_EXIT))
        return CG_HOOK_EXIT;
    return CG_HOOK_NOT;
}

/* A rel32 or disp32 field at byte `at` of the code (the last four bytes of
 * its instruction), to be filled so that the instruction reaches `to`. */
struct rel {
    unsigned at;
    int to;
};

/* A heap copy of exactly the n bytes, its fields filled for where it is. */
static unsigned char *code_block(const unsigned char *bytes, size_t n, const struct rel *rels, size_t nrels)
{
    unsigned char *blk = malloc(n);
    assert_non_null(blk);
    memcpy(blk, bytes, n);
    for (size_t i = 0; i < nrels; i++) {
        uintptr_t end = (uintptr_t)blk + rels[i].at + 4;
        int32_t rel = (int32_t)(intptr_t)(target_addr((uintptr_t)blk, rels[i].to) - end);
        memcpy(blk + rels[i].at, &rel, 4);
    }
    return blk;
}

/* ---- cg_site_at_return ---------------------------------------------------- */

/* cg_site_at_return for the return address at the end of a copy of the
 * bytes, whose last four bytes are a field reaching `to`, readable from
 * lo_off bytes into the copy; *ret: the return address. */
static int at_return(const unsigned char *bytes, size_t n, int to, size_t lo_off, struct hooks *h, struct cg_site *out,
                     uintptr_t *ret)
{
    const struct rel rel = {(unsigned)n - 4, to};
    unsigned char *blk = code_block(bytes, n, &rel, 1);
    memset(h, 0, sizeof *h);
    h->blk = (uintptr_t)blk;
    memset(out, 0xa5, sizeof *out);
    *ret = (uintptr_t)blk + n;
    int rc = cg_site_at_return(*ret, (uintptr_t)blk + lo_off, hook_of, h, out);
    free(blk);
    return rc;
}

static const unsigned char RET_E8[] = {
    0x48, 0x8b, 0x74, 0x24, 0x08, /* 00 mov 8(%rsp),%rsi */
    0xe8, 0,    0,    0,    0,    /* 05 call <rel32> */
};

static const unsigned char RET_66_E8[] = {
    0x48, 0x8b, 0x74, 0x24, 0x08,    /* 00 mov 8(%rsp),%rsi */
    0x66, 0xe8, 0,    0,    0,    0, /* 05 data16 call <rel32> (Intel: 6 bytes) */
};

static const unsigned char RET_FF15[] = {
    0x48, 0x8b, 0x74, 0x24, 0x08,    /* 00 mov 8(%rsp),%rsi */
    0xff, 0x15, 0,    0,    0,    0, /* 05 call *<disp32>(%rip) */
};

/* What cg_site_at_return must say of one return address (at_return's
 * arguments first): whether a hook's call is found before it; if so, all
 * of the site; and what the callback was asked. */
enum { ASKED_ANY, ASKED_NOT, ASKED_ONCE };

struct return_row {
    const unsigned char *bytes;
    size_t n;
    int to;
    size_t lo_off;
    int found;
    unsigned len; /* of the call: the site is at ret - len */
    int form, hook;
    uint8_t old, patched;
    int asked; /* ASKED_ONCE: about the field's target, as a slot if it is one */
};

/* A call and a GOT call found, in every field */
#define E8_FOUND(hk) .found = 1, .len = 5, .form = CG_SITE_CALL, .hook = (hk), .old = 0xe8, .patched = 0x3d /* cmp $imm32, %eax */
#define FF15_FOUND(hk) .found = 1, .len = 6, .form = CG_SITE_CALL_GOT, .hook = (hk), .old = 0xff, .patched = 0x8d /* lea disp32(%rip), %edx */
#define ROW(b) .bytes = (b), .n = sizeof(b)

struct return_rows {
    struct return_row row[6];
};

static void run_return_rows(void **state)
{
    const struct return_rows *rows = *state;
    for (unsigned i = 0; i < 6 && rows->row[i].bytes; i++) {
        const struct return_row *r = &rows->row[i];
        struct hooks h;
        struct cg_site s;
        uintptr_t ret;
        assert_int_equal(at_return(r->bytes, r->n, r->to, r->lo_off, &h, &s, &ret), r->found);
        if (r->found) {
            assert_int_equal(s.addr, ret - r->len);
            assert_int_equal(s.form, r->form);
            assert_int_equal(s.hook, r->hook);
            assert_int_equal(s.old, r->old);
            assert_int_equal(s.patched, r->patched);
        }
        if (r->asked == ASKED_NOT)
            assert_int_equal(h.asked, 0);
        if (r->asked == ASKED_ONCE) {
            assert_int_equal(h.asked, 1);
            assert_int_equal(h.last_to, target_addr(h.blk, r->to));
            assert_int_equal(h.last_got, r->to >= T_ENTER_SLOT);
        }
    }
}

/* Asked once, about the call's target */
static const struct return_rows return_call_enter = { {
    { ROW(RET_E8), .to = T_ENTER, E8_FOUND(CG_HOOK_ENTER), .asked = ASKED_ONCE },
} };

/* The exit hook is below the code: a negative rel32 */
static const struct return_rows return_call_exit_below = { {
    { ROW(RET_E8), .to = T_EXIT, E8_FOUND(CG_HOOK_EXIT) },
} };

/* A tail-called hook returns to its function's caller: the call before
 * that return address is the caller's call of the function, no hook */
static const struct return_rows return_call_other = { {
    { ROW(RET_E8), .to = T_OTHER, .asked = ASKED_ONCE },
} };

/* 66 3d would be cmp $imm16, %ax: 4 bytes where the call had 6 */
static const struct return_rows return_call_data16_refused = { {
    { ROW(RET_66_E8), .to = T_ENTER },
} };

/* 66 f2 e8: a data16 bnd call, whose cmp would also lose two bytes */
static const unsigned char RET_66_F2_E8[] = { 0x66, 0xf2, 0xe8, 0, 0, 0, 0 };
static const struct return_rows return_call_data16_behind_another_prefix = { {
    { ROW(RET_66_F2_E8), .to = T_ENTER },
} };

/* Asked about the slot, as a slot */
static const struct return_rows return_call_got = { {
    { ROW(RET_FF15), .to = T_EXIT_SLOT, FF15_FOUND(CG_HOOK_EXIT), .asked = ASKED_ONCE },
    { ROW(RET_FF15), .to = T_ENTER_SLOT, FF15_FOUND(CG_HOOK_ENTER) },
} };

/* The hook's own address taken for a slot is no hook either: a slot is
 * asked about as a slot */
static const struct return_rows return_call_got_other = { {
    { ROW(RET_FF15), .to = T_OTHER_SLOT, .asked = ASKED_ONCE },
    { ROW(RET_FF15), .to = T_ENTER },
} };

/* The call's first byte below lo: not readable, not asked; exactly the
 * call readable: found, and the byte before it (which the copy of only the
 * call does not have) neither read nor needed; a 66 below lo is no prefix
 * of the call (lo is where code begins); ff 15 with its ff below lo, and
 * with it at lo */
static const struct return_rows return_lo_bound = { {
    { ROW(RET_E8), .to = T_ENTER, .lo_off = sizeof RET_E8 - 4, .asked = ASKED_NOT },
    { .bytes = RET_E8 + 5, .n = 5, .to = T_ENTER, E8_FOUND(CG_HOOK_ENTER) },
    { ROW(RET_66_E8), .to = T_ENTER, .lo_off = sizeof RET_66_E8 - 5, E8_FOUND(CG_HOOK_ENTER) },
    { ROW(RET_FF15), .to = T_EXIT_SLOT, .lo_off = sizeof RET_FF15 - 5 },
    { ROW(RET_FF15), .to = T_EXIT_SLOT, .lo_off = sizeof RET_FF15 - 6, FF15_FOUND(CG_HOOK_EXIT) },
} };

/* Registered under the name test_<rows>, as the test it stands for */
#define RETURN_TEST(rows) { "test_" #rows, run_return_rows, NULL, NULL, (void *)&(rows) }

static void test_return_call_register(void **state)
{
    (void)state;
    static const unsigned char bytes[] = {
        0x48, 0x8b, 0x05, 0x10, 0x20, 0x30, 0x00, /* 00 mov 0x302010(%rip),%rax */
        0xff, 0xd0,                               /* 07 call *%rax */
    };
    struct hooks h;
    memset(&h, 0, sizeof h);
    unsigned char *blk = code_block(bytes, sizeof bytes, NULL, 0);
    h.blk = (uintptr_t)blk;
    struct cg_site s;
    assert_int_equal(cg_site_at_return((uintptr_t)blk + sizeof bytes, (uintptr_t)blk, hook_of, &h, &s), 0);
    assert_int_equal(h.asked, 0);
    free(blk);
}

/* ---- cg_range_scan ---------------------------------------------------------- */

/* gcc -O2's shape of an instrumented function: the enter call first, a call
 * of another function, the exit call before a return, and on the other
 * path a tail jump to the exit hook. mov %ebp,%eax is 89 e8: an e8 that is
 * no call. */
static const unsigned char TYPICAL[] = {
    0x55,                                     /* 00 push %rbp */
    0x48, 0x89, 0xfd,                         /* 01 mov %rdi,%rbp */
    0x48, 0x8d, 0x3d, 0xf5, 0xff, 0xff, 0xff, /* 04 lea f(%rip),%rdi */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 0b mov 8(%rsp),%rsi */
    0xe8, 0,    0,    0,    0,                /* 10 call enter */
    0x48, 0x89, 0xef,                         /* 15 mov %rbp,%rdi */
    0xe8, 0,    0,    0,    0,                /* 18 call other */
    0x85, 0xc0,                               /* 1d test %eax,%eax */
    0x74, 0x15,                               /* 1f je 36 */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 21 mov 8(%rsp),%rsi */
    0x48, 0x8d, 0x3d, 0xd3, 0xff, 0xff, 0xff, /* 26 lea f(%rip),%rdi */
    0xe8, 0,    0,    0,    0,                /* 2d call exit */
    0x89, 0xe8,                               /* 32 mov %ebp,%eax */
    0x5d,                                     /* 34 pop %rbp */
    0xc3,                                     /* 35 ret */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 36 mov 8(%rsp),%rsi */
    0x48, 0x8d, 0x3d, 0xbe, 0xff, 0xff, 0xff, /* 3b lea f(%rip),%rdi */
    0x5d,                                     /* 42 pop %rbp */
    0xe9, 0,    0,    0,    0,                /* 43 jmp exit */
};                                            /* 48 */
static const struct rel TYPICAL_RELS[] = {{0x11, T_ENTER}, {0x19, T_OTHER}, {0x2e, T_EXIT}, {0x44, T_EXIT}};

/* The same with -fno-plt: the hooks called and jumped to through their
 * GOT slots. */
static const unsigned char NOPLT[] = {
    0x53,                                     /* 00 push %rbx */
    0x48, 0x8d, 0x3d, 0xf8, 0xff, 0xff, 0xff, /* 01 lea f(%rip),%rdi */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 08 mov 8(%rsp),%rsi */
    0xff, 0x15, 0,    0,    0,    0,          /* 0d call *enter@GOTPCREL(%rip) */
    0xe8, 0,    0,    0,    0,                /* 13 call other */
    0x89, 0xc3,                               /* 18 mov %eax,%ebx */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 1a mov 8(%rsp),%rsi */
    0x48, 0x8d, 0x3d, 0xda, 0xff, 0xff, 0xff, /* 1f lea f(%rip),%rdi */
    0xff, 0x15, 0,    0,    0,    0,          /* 26 call *exit@GOTPCREL(%rip) */
    0x85, 0xdb,                               /* 2c test %ebx,%ebx */
    0x75, 0x13,                               /* 2e jne 43 */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 30 mov 8(%rsp),%rsi */
    0x48, 0x8d, 0x3d, 0xc4, 0xff, 0xff, 0xff, /* 35 lea f(%rip),%rdi */
    0x5b,                                     /* 3c pop %rbx */
    0xff, 0x25, 0,    0,    0,    0,          /* 3d jmp *exit@GOTPCREL(%rip) */
    0x5b,                                     /* 43 pop %rbx */
    0xc3,                                     /* 44 ret */
};                                            /* 45 */
static const struct rel NOPLT_RELS[] = {
    {0x0f, T_ENTER_SLOT}, {0x14, T_OTHER}, {0x28, T_EXIT_SLOT}, {0x3f, T_EXIT_SLOT}};

/* A variadic function: %al says whether vector registers hold arguments,
 * tested (and jumped over) before the enter call. */
static const unsigned char VARIADIC[] = {
    0x55,                                           /* 00 push %rbp */
    0x48, 0x81, 0xec, 0xd0, 0x00, 0x00, 0x00,       /* 01 sub $0xd0,%rsp */
    0x48, 0x89, 0x74, 0x24, 0x28,                   /* 08 mov %rsi,0x28(%rsp) */
    0x48, 0x89, 0x54, 0x24, 0x30,                   /* 0d mov %rdx,0x30(%rsp) */
    0x84, 0xc0,                                     /* 12 test %al,%al */
    0x74, 0x12,                                     /* 14 je 28 */
    0x0f, 0x29, 0x44, 0x24, 0x50,                   /* 16 movaps %xmm0,0x50(%rsp) */
    0x0f, 0x29, 0x4c, 0x24, 0x60,                   /* 1b movaps %xmm1,0x60(%rsp) */
    0x0f, 0x29, 0xbc, 0x24, 0xc0, 0x00, 0x00, 0x00, /* 20 movaps %xmm7,0xc0(%rsp) */
    0x48, 0x8b, 0xb4, 0x24, 0xd8, 0x00, 0x00, 0x00, /* 28 mov 0xd8(%rsp),%rsi */
    0x48, 0x8d, 0x3d, 0xc9, 0xff, 0xff, 0xff,       /* 30 lea v(%rip),%rdi */
    0xe8, 0,    0,    0,    0,                      /* 37 call enter */
    0x48, 0x8b, 0xb4, 0x24, 0xd8, 0x00, 0x00, 0x00, /* 3c mov 0xd8(%rsp),%rsi */
    0x48, 0x8d, 0x3d, 0xb5, 0xff, 0xff, 0xff,       /* 44 lea v(%rip),%rdi */
    0xe8, 0,    0,    0,    0,                      /* 4b call exit */
    0x48, 0x81, 0xc4, 0xd0, 0x00, 0x00, 0x00,       /* 50 add $0xd0,%rsp */
    0x5d,                                           /* 57 pop %rbp */
    0xc3,                                           /* 58 ret */
};                                                  /* 59 */
static const struct rel VARIADIC_RELS[] = {{0x38, T_ENTER}, {0x4c, T_EXIT}};

/* An unconditional jump before the first call: the call is not reached
 * in a straight line from the start, so it is not taken for the own enter. */
static const unsigned char JUMP_FIRST[] = {
    0x55,                                     /* 00 push %rbp */
    0xeb, 0x01,                               /* 01 jmp 04 */
    0xcc,                                     /* 03 int3 */
    0x48, 0x8d, 0x3d, 0xf5, 0xff, 0xff, 0xff, /* 04 lea f(%rip),%rdi */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 0b mov 8(%rsp),%rsi */
    0xe8, 0,    0,    0,    0,                /* 10 call enter */
    0x5d,                                     /* 15 pop %rbp */
    0xc3,                                     /* 16 ret */
};                                            /* 17 */
static const struct rel JUMP_FIRST_RELS[] = {{0x11, T_ENTER}};

/* The first call is of another function: no own enter, though the enter
 * call after it is a site; a tail jump to another function is none. */
static const unsigned char OTHER_FIRST[] = {
    0x48, 0x83, 0xec, 0x08,                   /* 00 sub $8,%rsp */
    0xe8, 0,    0,    0,    0,                /* 04 call other */
    0x48, 0x8d, 0x3d, 0xf0, 0xff, 0xff, 0xff, /* 09 lea f(%rip),%rdi */
    0x48, 0x8b, 0x74, 0x24, 0x08,             /* 10 mov 8(%rsp),%rsi */
    0xe8, 0,    0,    0,    0,                /* 15 call enter */
    0x48, 0x83, 0xc4, 0x08,                   /* 1a add $8,%rsp */
    0xe9, 0,    0,    0,    0,                /* 1e jmp other */
};                                            /* 23 */
static const struct rel OTHER_FIRST_RELS[] = {{0x05, T_OTHER}, {0x16, T_ENTER}, {0x1f, T_OTHER}};

/* Forms that are no site: a call with a 66 prefix (its replacement would
 * be shorter), a call through a register, a tail jump to the enter hook
 * (no compiler writes one). The 66 call is still the first call. */
static const unsigned char REFUSED[] = {
    0x48, 0x83, 0xec, 0x08,       /* 00 sub $8,%rsp */
    0x66, 0xe8, 0,    0,    0, 0, /* 04 data16 call enter (6 bytes, as Intel's CPUs run it) */
    0xff, 0xd0,                   /* 0a call *%rax */
    0xe8, 0,    0,    0,    0,    /* 0c call exit */
    0x48, 0x83, 0xc4, 0x08,       /* 11 add $8,%rsp */
    0xe9, 0,    0,    0,    0,    /* 15 jmp enter */
};                                /* 1a */
static const struct rel REFUSED_RELS[] = {{0x06, T_ENTER}, {0x0d, T_EXIT}, {0x16, T_ENTER}};

struct want {
    unsigned at;
    int form, hook;
    uint8_t old, patched;
};

#define NSITES_MAX 8

/* cg_range_scan over a copy of the whole code: it must be trusted, with
 * the sites wanted (in address order) and the own enter at own (-1:
 * none). */
static void check_scan(const char *name, const unsigned char *bytes, size_t n, const struct rel *rels, size_t nrels,
                       long own, const struct want *want, size_t nwant)
{
    unsigned char *blk = code_block(bytes, n, rels, nrels);
    uintptr_t b = (uintptr_t)blk;
    struct hooks h = {b, 0, 0, 0};
    struct cg_site sites[NSITES_MAX];
    memset(sites, 0xa5, sizeof sites);
    struct cg_range_scan scan;
    memset(&scan, 0xa5, sizeof scan);
    assert_int_equal(cg_range_scan(b, b + n, NULL, hook_of, &h, sites, NSITES_MAX, &scan), 0);
    if (!scan.ok)
        fail_msg("%s: not trusted", name);
    if (scan.own_enter != (own < 0 ? 0 : b + (uintptr_t)own))
        fail_msg("%s: own enter at %+ld, expected %+ld", name, scan.own_enter ? (long)(scan.own_enter - b) : -1L, own);
    if (scan.nsites != nwant)
        fail_msg("%s: %zu sites, expected %zu", name, scan.nsites, nwant);
    for (size_t i = 0; i < nwant; i++) {
        const struct cg_site *s = &sites[i];
        const struct want *w = &want[i];
        if (s->addr != b + w->at || s->form != w->form || s->hook != w->hook || s->old != w->old ||
            s->patched != w->patched)
            fail_msg("%s: site %zu at %+ld form %u hook %u %02x -> %02x, expected at %+d form %d hook %d %02x -> %02x",
                     name, i, (long)(s->addr - b), s->form, s->hook, s->old, s->patched, (int)w->at, w->form, w->hook,
                     w->old, w->patched);
    }
    /* nothing written past the sites found */
    unsigned char untouched[sizeof(struct cg_site)];
    memset(untouched, 0xa5, sizeof untouched);
    for (size_t i = nwant; i < NSITES_MAX; i++)
        assert_memory_equal(&sites[i], untouched, sizeof untouched);
    free(blk);
}

#define CHECK_SCAN(code, own, ...)                                                                                     \
    do {                                                                                                               \
        static const struct want want_[] = {__VA_ARGS__};                                                              \
        check_scan(#code, code, sizeof code, code##_RELS, sizeof code##_RELS / sizeof code##_RELS[0], (own), want_,    \
                   sizeof want_ / sizeof want_[0]);                                                                    \
    } while (0)

#define CALL_ENTER(at)                                                                                                 \
    {                                                                                                                  \
        (at), CG_SITE_CALL, CG_HOOK_ENTER, 0xe8, 0x3d                                                                  \
    }
#define CALL_EXIT(at)                                                                                                  \
    {                                                                                                                  \
        (at), CG_SITE_CALL, CG_HOOK_EXIT, 0xe8, 0x3d                                                                   \
    }

static void test_scan_typical(void **state)
{
    (void)state;
    CHECK_SCAN(TYPICAL, 0x10, CALL_ENTER(0x10), CALL_EXIT(0x2d), {0x43, CG_SITE_TAIL, CG_HOOK_EXIT, 0xe9, 0xc3});
}

/* A range decoded again after some of its sites were taken back (a PLT
 * entry was not bound the first time: registry.c): the changed bytes
 * decode as cmp and ret, not calls; from a copy with them as they were,
 * every site is found at its place, with its original byte. */
static void test_scan_from_a_copy(void **state)
{
    (void)state;
    unsigned char *blk = code_block(TYPICAL, sizeof TYPICAL, TYPICAL_RELS, sizeof TYPICAL_RELS / sizeof TYPICAL_RELS[0]);
    unsigned char *copy = malloc(sizeof TYPICAL);
    assert_non_null(copy);
    memcpy(copy, blk, sizeof TYPICAL);
    blk[0x10] = 0x3d; /* the enter call taken back */
    blk[0x43] = 0xc3; /* the tail jump too */
    uintptr_t b = (uintptr_t)blk;
    struct hooks h = {b, 0, 0, 0};
    struct cg_site sites[NSITES_MAX];
    struct cg_range_scan scan;
    assert_int_equal(cg_range_scan(b, b + sizeof TYPICAL, NULL, hook_of, &h, sites, NSITES_MAX, &scan), 0);
    assert_int_equal(scan.nsites, 1); /* only the exit call is one now */
    assert_int_equal(scan.own_enter, 0);
    assert_int_equal(cg_range_scan(b, b + sizeof TYPICAL, copy, hook_of, &h, sites, NSITES_MAX, &scan), 0);
    assert_true(scan.ok);
    assert_int_equal(scan.nsites, 3);
    assert_int_equal(scan.own_enter, b + 0x10);
    assert_int_equal(sites[0].addr, b + 0x10);
    assert_int_equal(sites[0].old, 0xe8);
    assert_int_equal(sites[2].addr, b + 0x43);
    assert_int_equal(sites[2].old, 0xe9);
    free(copy);
    free(blk);
}

static void test_scan_noplt(void **state)
{
    (void)state;
    CHECK_SCAN(NOPLT, 0x0d, {0x0d, CG_SITE_CALL_GOT, CG_HOOK_ENTER, 0xff, 0x8d},
               {0x26, CG_SITE_CALL_GOT, CG_HOOK_EXIT, 0xff, 0x8d}, {0x3d, CG_SITE_TAIL_GOT, CG_HOOK_EXIT, 0xff, 0xc3});
}

static void test_scan_variadic_prologue(void **state)
{
    (void)state;
    CHECK_SCAN(VARIADIC, 0x37, CALL_ENTER(0x37), CALL_EXIT(0x4b));
}

static void test_scan_jump_before_first_call(void **state)
{
    (void)state;
    CHECK_SCAN(JUMP_FIRST, -1, CALL_ENTER(0x10));
}

static void test_scan_first_call_not_a_hook(void **state)
{
    (void)state;
    CHECK_SCAN(OTHER_FIRST, -1, CALL_ENTER(0x15));
}

static void test_scan_refused_forms(void **state)
{
    (void)state;
    CHECK_SCAN(REFUSED, -1, CALL_EXIT(0x0c));
}

/* cg_range_scan over [blk + from, blk + to) of a copy of TYPICAL. */
static void scan_typical(size_t from, size_t to, uint8_t poke_at, uint8_t poke, struct cg_site *sites, size_t max,
                         struct cg_range_scan *scan)
{
    unsigned char *blk =
        code_block(TYPICAL, sizeof TYPICAL, TYPICAL_RELS, sizeof TYPICAL_RELS / sizeof TYPICAL_RELS[0]);
    if (poke_at)
        blk[poke_at] = poke;
    struct hooks h = {(uintptr_t)blk, 0, 0, 0};
    memset(scan, 0xa5, sizeof *scan);
    assert_int_equal(cg_range_scan((uintptr_t)blk + from, (uintptr_t)blk + to, NULL, hook_of, &h, sites, max, scan), 0);
    free(blk);
}

/* cg_range_scan over [from, to) of TYPICAL with the byte at poke_at (if
 * not 0) set to poke: whether it trusts the range, and if so how many
 * sites it found. */
struct scan_row {
    size_t from, to;
    uint8_t poke_at, poke;
    int ok;
    unsigned nsites;
};

struct scan_rows {
    struct scan_row row[6];
};

static void run_scan_rows(void **state)
{
    const struct scan_rows *rows = *state;
    for (unsigned i = 0; i < 6 && rows->row[i].to; i++) {
        const struct scan_row *r = &rows->row[i];
        struct cg_site sites[NSITES_MAX];
        struct cg_range_scan scan;
        scan_typical(r->from, r->to, r->poke_at, r->poke, sites, NSITES_MAX, &scan);
        assert_int_equal(scan.ok, r->ok);
        if (r->ok)
            assert_int_equal(scan.nsites, r->nsites);
    }
}

static const struct scan_rows scan_end_inside_an_instruction = { {
    { 0, 0x45, 0, 0, 0, 0 },              /* two bytes into the tail jump */
    { 0, 0x2f, 0, 0, 0, 0 },              /* two into the exit call */
    { 0x08, sizeof TYPICAL, 0, 0, 0, 0 }, /* begun inside the lea's displacement (ff ff ...) */
    { 0, 0x36, 0, 0, 1, 2 },              /* ended at an instruction's end: the sites up to there */
} };

static const struct scan_rows scan_bytes_refused = { {
    { 0, sizeof TYPICAL, 0x34, 0x06, 0, 0 }, /* 06 (push %es, invalid in 64-bit mode) for the pop */
    { 0, sizeof TYPICAL, 0x07, 0x06, 1, 3 }, /* the same byte where it is an operand */
} };

/* Registered under the name test_<rows>, as the test it stands for */
#define SCAN_TEST(rows) { "test_" #rows, run_scan_rows, NULL, NULL, (void *)&(rows) }

static void test_scan_more_sites_than_max(void **state)
{
    (void)state;
    struct cg_site sites[NSITES_MAX];
    struct cg_range_scan scan;
    unsigned char untouched[sizeof(struct cg_site)];
    memset(untouched, 0xa5, sizeof untouched);
    memset(sites, 0xa5, sizeof sites);
    scan_typical(0, sizeof TYPICAL, 0, 0, sites, 1, &scan);
    assert_int_equal(scan.ok, 1);
    assert_int_equal(scan.nsites, 3); /* all counted */
    assert_int_equal(sites[0].form, CG_SITE_CALL);
    assert_int_equal(sites[0].hook, CG_HOOK_ENTER); /* the first kept */
    assert_memory_equal(&sites[1], untouched, sizeof untouched);
    assert_true(scan.own_enter != 0);
    memset(sites, 0xa5, sizeof sites);
    scan_typical(0, sizeof TYPICAL, 0, 0, sites, 0, &scan);
    assert_int_equal(scan.nsites, 3);
    assert_memory_equal(&sites[0], untouched, sizeof untouched);
}

static void test_scan_empty_range(void **state)
{
    (void)state;
    struct cg_site sites[NSITES_MAX];
    struct cg_range_scan scan;
    scan_typical(0x10, 0x10, 0, 0, sites, NSITES_MAX, &scan);
    assert_int_equal(scan.ok, 1);
    assert_int_equal(scan.nsites, 0);
    assert_int_equal(scan.own_enter, 0);
}

#endif /* __x86_64__ */

#if CG_CPU_HAVE_TAKEBACK
/* ---- cg_site_write on a real page --------------------------------------------- */

#define SENTINEL 0x5eed

static long page_size(void) { return sysconf(_SC_PAGESIZE); }

/* The permissions /proc/self/maps gives the mapping that holds addr. */
static void perms_of(const void *addr, char perms[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    strcpy(perms, "none");
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char p[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && (uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
            memcpy(perms, p, 5);
            break;
        }
    }
    fclose(f);
}

#define ASSERT_PERMS(addr, want)                                                                                       \
    do {                                                                                                               \
        char perms_[5];                                                                                                \
        perms_of((addr), perms_);                                                                                      \
        assert_string_equal(perms_, (want));                                                                           \
    } while (0)

#define RX (PROT_READ | PROT_EXEC)

/* The site's instruction as cg_site_write changes it (cpu.h's
 * CG_CPU_SITE_BYTES: x86-64's first byte, aarch64's word). */
static uint32_t site_at(const unsigned char *page, unsigned at)
{
    uint32_t v = 0;
    memcpy(&v, page + at, CG_CPU_SITE_BYTES); /* little-endian */
    return v;
}

#if defined(__x86_64__)
/* A page holding a call at 0x100 and a nop at 0x200 (never run), int3
 * elsewhere, read-only and executable. */
static unsigned char *rx_page(unsigned char *copy)
{
    long ps = page_size();
    unsigned char *p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 0xcc, (size_t)ps);
    static const unsigned char call[] = {0xe8, 0x10, 0x20, 0x30, 0x00};
    memcpy(p + 0x100, call, sizeof call);
    p[0x200] = 0x90;
    memcpy(copy, p, (size_t)ps);
    assert_int_equal(mprotect(p, (size_t)ps, PROT_READ | PROT_EXEC), 0);
    ASSERT_PERMS(p, "r-xp");
    return p;
}

/* One cg_site_write on the page and what must follow: its result, errno
 * untouched, the byte at `at` (no other changed) and the page's
 * permissions. */
struct site_write {
    unsigned at;
    uint8_t from, to;
    int prot, ret;
    uint8_t byte;
    const char *perms;
};

/* A test: its writes in order on a fresh rx_page. */
struct site_writes {
    struct site_write step[4];
};

static void run_site_writes(void **state)
{
    const struct site_writes *w = *state;
    long ps = page_size();
    unsigned char *copy = malloc((size_t)ps);
    assert_non_null(copy);
    unsigned char *p = rx_page(copy);
    for (unsigned i = 0; i < 4 && w->step[i].perms; i++) {
        const struct site_write *s = &w->step[i];
        errno = SENTINEL;
        assert_int_equal(cg_site_write((uintptr_t)p + s->at, s->from, s->to, s->prot), s->ret);
        assert_int_equal(errno, SENTINEL);
        assert_int_equal(p[s->at], s->byte);
        copy[s->at] = s->byte;
        assert_memory_equal(p, copy, (size_t)ps);
        ASSERT_PERMS(p, s->perms);
    }
    assert_int_equal(munmap(p, (size_t)ps), 0);
    free(copy);
}

/* The call made writable for the store only, that byte alone; again
 * (already done); and back. */
static const struct site_writes write_on_rx_page = { {
    { 0x100, 0xe8, 0x3d, RX, 0, 0x3d, "r-xp" },
    { 0x100, 0xe8, 0x3d, RX, 0, 0x3d, "r-xp" },
    { 0x100, 0x3d, 0xe8, RX, 0, 0xe8, "r-xp" },
} };

/* A nop where a call was expected: not ours to change */
static const struct site_writes write_neither_byte = { {
    { 0x200, 0xe8, 0x3d, RX, EAGAIN, 0x90, "r-xp" },
} };

/* prot is the page's protection as the caller read it: what the page has
 * after, whatever it had before */
static const struct site_writes write_gives_the_protection_given = { {
    { 0x100, 0xe8, 0x3d, PROT_READ, 0, 0x3d, "r--p" },
} };

/* Registered under the name test_<rows>, as the test it stands for */
#define SITE_WRITES_TEST(rows) { "test_" #rows, run_site_writes, NULL, NULL, (void *)&(rows) }

static void test_write_refused_by_mprotect(void **state)
{
    (void)state;
    /* a shared mapping of a file opened read-only cannot be made writable:
     * mprotect's errno, the byte unchanged */
    long ps = page_size();
    char path[] = "/tmp/cgprof_test_patch_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unsigned char *bytes = calloc(1, (size_t)ps);
    assert_non_null(bytes);
    bytes[0x100] = 0xe8;
    assert_int_equal(write(fd, bytes, (size_t)ps), ps);
    close(fd);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    unlink(path);
    unsigned char *p = mmap(NULL, (size_t)ps, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(p != MAP_FAILED);
    errno = SENTINEL;
    assert_int_equal(cg_site_write((uintptr_t)p + 0x100, 0xe8, 0x3d, PROT_READ), EACCES);
    assert_int_equal(errno, SENTINEL);
    assert_int_equal(p[0x100], 0xe8);
    ASSERT_PERMS(p, "r--s");
    assert_int_equal(munmap(p, (size_t)ps), 0);
    free(bytes);
}

#endif /* __x86_64__ */

/* ---- the sites run by threads while they change ------------------------------ */

#if defined(__x86_64__)
/* Four pieces of code in one page, each calling or jumping to its counter:
 *   STUB_E8    sub $8,%rsp; call counter; add $8,%rsp; ret  (e8 -> 3d)
 *   STUB_FF15  the same with call *slot(%rip)                (ff -> 8d)
 *   STUB_E9    jmp counter                                   (e9 -> c3)
 *   STUB_FF25  jmp *slot(%rip)                               (ff -> c3)
 * each site's first byte the last of a 64-byte cache line, the rest of the
 * instruction in the next line. e8 and e9 need the page within 2 GiB of
 * the counters. */
enum { STUB_E8, STUB_FF15, STUB_E9, STUB_FF25, NSTUBS };

static struct stub {
    const char *name;
    unsigned start, site; /* offsets in the page */
    uint32_t old, patched;
    int near; /* a rel32 to the counter */
} STUBS[NSTUBS] = {
    {"call rel32", 0x07b, 0x07f, 0xe8, 0x3d, 1},
    {"call *slot", 0x0fb, 0x0ff, 0xff, 0x8d, 0},
    {"jmp rel32", 0x13f, 0x13f, 0xe9, 0xc3, 1},
    {"jmp *slot", 0x17f, 0x17f, 0xff, 0xc3, 0},
};
#define SLOT_FF15 0x800
#define SLOT_FF25 0x808
#define SITE_IN_LINE 63        /* the site's offset in its 64-byte line */
#define REACH 0x7f000000L      /* a rel32's, with a margin */
#define REACH_NAME "2 GiB"
#else
/* aarch64: two pieces of code in one page, each calling or jumping to its
 * counter:
 *   STUB_BL  stp x29, x30, [sp, #-16]!; mov x29, sp; bl counter;
 *            ldp x29, x30, [sp], #16; ret        (BL -> NOP)
 *   STUB_B   b counter                           (B -> B to the RET at RET_AT)
 * each site the last word of a 64-byte cache line, BRK around. The forms
 * through the GOT (BLR, BR) are never changed (cpu_aarch64.h). */
enum { STUB_BL, STUB_B, NSTUBS };

static struct stub {
    const char *name;
    unsigned start, site; /* offsets in the page */
    uint32_t old, patched; /* set by put_stubs: they depend on where it is */
    int near;              /* a B or BL to the counter: all of them */
} STUBS[NSTUBS] = {
    {"bl", 0x0f4, 0x0fc, 0, 0, 1},
    {"b (tail)", 0x13c, 0x13c, 0, 0, 1},
};
#define RET_AT 0x200
#define SITE_IN_LINE 60        /* the site's offset in its 64-byte line */
#define REACH 0x7f00000L       /* a B's or BL's 128 MiB, with a margin */
#define REACH_NAME "128 MiB"
#endif

/* Each stub's calls of its counter: by each thread, and by all. */
static _Thread_local unsigned long my_hits[NSTUBS];
static atomic_ulong all_hits[NSTUBS];

static void count(int stub)
{
    my_hits[stub]++;
    atomic_fetch_add_explicit(&all_hits[stub], 1, memory_order_relaxed);
}
#if defined(__x86_64__)
static void counter_e8(void) { count(STUB_E8); }
static void counter_ff15(void) { count(STUB_FF15); }
static void counter_e9(void) { count(STUB_E9); }
static void counter_ff25(void) { count(STUB_FF25); }
static void (*const counters[NSTUBS])(void) = {counter_e8, counter_ff15, counter_e9, counter_ff25};
/* where a page is asked for, around the test's code */
static const long near_off[] = {0x40000000, -0x40000000, 0x10000000, -0x10000000, 0x60000000, -0x60000000, 0x2000000};
#else
static void counter_bl(void) { count(STUB_BL); }
static void counter_b(void) { count(STUB_B); }
static void (*const counters[NSTUBS])(void) = {counter_bl, counter_b};
static const long near_off[] = {0x1000000, -0x1000000, 0x4000000, -0x4000000, 0x6000000, -0x6000000, 0x2000000};
#endif

static int within_reach(uintptr_t from, uintptr_t to)
{
    intptr_t d = (intptr_t)(to - from);
    return d > -REACH && d < REACH;
}

/* A page within a direct call's reach of the counters of the stubs that
 * need it (a hint near the test's own code), or NULL. */
static unsigned char *map_near_counters(void)
{
    long ps = page_size();
    uintptr_t base = (uintptr_t)counters[0] & ~(uintptr_t)0xfffff;
    for (size_t i = 0; i < sizeof near_off / sizeof near_off[0]; i++) {
        void *hint = (void *)(base + (uintptr_t)near_off[i]);
        unsigned char *p = mmap(hint, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            continue;
        int near = 1;
        for (int s = 0; s < NSTUBS; s++)
            if (STUBS[s].near && !within_reach((uintptr_t)p, (uintptr_t)counters[s]))
                near = 0;
        if (near)
            return p;
        munmap(p, (size_t)ps);
    }
    return NULL;
}

#if defined(__x86_64__)
static void put_rel32(unsigned char *page, unsigned at, uintptr_t to)
{
    int32_t rel = (int32_t)(intptr_t)(to - ((uintptr_t)page + at + 4));
    memcpy(page + at, &rel, 4);
}

static void put_stubs(unsigned char *page, int near)
{
    memset(page, 0xcc, (size_t)page_size()); /* int3 around: a stray jump traps */
    static const unsigned char sub[] = {0x48, 0x83, 0xec, 0x08}, add_ret[] = {0x48, 0x83, 0xc4, 0x08, 0xc3};
    unsigned char *s = page + STUBS[STUB_E8].start;
    if (near) {
        memcpy(s, sub, 4);
        s[4] = 0xe8;
        put_rel32(page, STUBS[STUB_E8].site + 1, (uintptr_t)counter_e8);
        memcpy(s + 9, add_ret, 5);
        s = page + STUBS[STUB_E9].start;
        s[0] = 0xe9;
        put_rel32(page, STUBS[STUB_E9].site + 1, (uintptr_t)counter_e9);
    }
    s = page + STUBS[STUB_FF15].start;
    memcpy(s, sub, 4);
    s[4] = 0xff;
    s[5] = 0x15;
    put_rel32(page, STUBS[STUB_FF15].site + 2, (uintptr_t)page + SLOT_FF15);
    memcpy(s + 10, add_ret, 5);
    s = page + STUBS[STUB_FF25].start;
    s[0] = 0xff;
    s[1] = 0x25;
    put_rel32(page, STUBS[STUB_FF25].site + 2, (uintptr_t)page + SLOT_FF25);
    uintptr_t slot = (uintptr_t)counter_ff15;
    memcpy(page + SLOT_FF15, &slot, sizeof slot);
    slot = (uintptr_t)counter_ff25;
    memcpy(page + SLOT_FF25, &slot, sizeof slot);
}
#else
static void put_word(unsigned char *page, unsigned at, uint32_t w) { memcpy(page + at, &w, 4); }

/* B (op 0x14000000) or BL (0x94000000) from page + at to to */
static uint32_t branch(uint32_t op, const unsigned char *page, unsigned at, uintptr_t to)
{
    return op | (uint32_t)(((intptr_t)(to - ((uintptr_t)page + at)) >> 2) & 0x3ffffff);
}

static void put_stubs(unsigned char *page, int near)
{
    assert_true(near); /* both stubs reach their counter directly */
    for (unsigned at = 0; at < (unsigned)page_size(); at += 4)
        put_word(page, at, 0xd4200000u); /* brk #0 around: a stray jump traps */
    unsigned at = STUBS[STUB_BL].start;
    put_word(page, at, 0xa9bf7bfdu);     /* stp x29, x30, [sp, #-16]! */
    put_word(page, at + 4, 0x910003fdu); /* mov x29, sp */
    STUBS[STUB_BL].old = branch(0x94000000u, page, STUBS[STUB_BL].site, (uintptr_t)counter_bl);
    STUBS[STUB_BL].patched = 0xd503201fu; /* nop */
    put_word(page, STUBS[STUB_BL].site, STUBS[STUB_BL].old);
    put_word(page, at + 12, 0xa8c17bfdu); /* ldp x29, x30, [sp], #16 */
    put_word(page, at + 16, 0xd65f03c0u); /* ret */
    STUBS[STUB_B].old = branch(0x14000000u, page, STUBS[STUB_B].site, (uintptr_t)counter_b);
    STUBS[STUB_B].patched = branch(0x14000000u, page, STUBS[STUB_B].site, (uintptr_t)page + RET_AT);
    put_word(page, STUBS[STUB_B].site, STUBS[STUB_B].old);
    put_word(page, RET_AT, 0xd65f03c0u); /* ret: where the tail call taken back goes */
    /* written as data: the instruction cache made to see it */
    __builtin___clear_cache((char *)page, (char *)page + page_size());
}
#endif

#define NTHREADS 4
#define CALLS 20000 /* each thread's calls of each stub before the changes */
#define FLIPS 5000  /* times each site is taken back and put back, at least */
#define FLIP_LIMIT 30.0 /* seconds (times CGPROF_TIMEOUT_MULTIPLIER) to see every thread call every stub */

static void (*stub_fn[NSTUBS])(void);
static int stub_on[NSTUBS];
static atomic_int workers_ready, workers_stop;

struct worker {
    pthread_t thread;
    unsigned long before[NSTUBS]; /* counted for CALLS calls before any change */
    unsigned long calls[NSTUBS];  /* calls while the sites changed */
    unsigned long hits[NSTUBS];   /* counted for them */
    int over;                     /* counted more than called, at some moment */
    /* the calls so far, for the thread that changes the sites: through
     * the old instruction (counted) and through the new one (not) */
    atomic_ulong old_seen[NSTUBS], new_seen[NSTUBS];
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int s = 0; s < NSTUBS; s++) {
        if (!stub_on[s])
            continue;
        unsigned long was = my_hits[s];
        for (int i = 0; i < CALLS; i++)
            stub_fn[s]();
        w->before[s] = my_hits[s] - was;
    }
    memset(my_hits, 0, sizeof my_hits);
    atomic_fetch_add(&workers_ready, 1);
    while (!atomic_load_explicit(&workers_stop, memory_order_relaxed)) {
        for (int s = 0; s < NSTUBS; s++) {
            if (!stub_on[s])
                continue;
            unsigned long was = my_hits[s];
            stub_fn[s]();
            w->calls[s]++;
            if (my_hits[s] > w->calls[s])
                w->over = 1;
            atomic_ulong *seen = my_hits[s] != was ? &w->old_seen[s] : &w->new_seen[s];
            atomic_store_explicit(seen, atomic_load_explicit(seen, memory_order_relaxed) + 1, memory_order_relaxed);
        }
    }
    memcpy(w->hits, my_hits, sizeof w->hits);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What the threads have not done yet of what the test needs (each thread
 * a call of each stub, and some call of each stub through the old
 * instruction and some through the new), said in why; 0 when nothing. */
static int flips_unseen(struct worker *w, char *why, size_t size)
{
    for (int s = 0; s < NSTUBS; s++) {
        if (!stub_on[s])
            continue;
        unsigned long old_calls = 0, new_calls = 0;
        for (int i = 0; i < NTHREADS; i++) {
            unsigned long o = atomic_load_explicit(&w[i].old_seen[s], memory_order_relaxed),
                          n = atomic_load_explicit(&w[i].new_seen[s], memory_order_relaxed);
            if (o + n == 0) {
                snprintf(why, size, "thread %d made no call of %s", i, STUBS[s].name);
                return 1;
            }
            old_calls += o;
            new_calls += n;
        }
        if (old_calls == 0 || new_calls == 0) {
            snprintf(why, size, "%s: %lu calls through the old instruction, %lu through the new", STUBS[s].name,
                     old_calls, new_calls);
            return 1;
        }
    }
    return 0;
}

static void test_sites_changed_under_running_threads(void **state)
{
    (void)state;
    long ps = page_size();
    const int prot = PROT_READ | PROT_EXEC;
    unsigned char *page = map_near_counters();
    int near = page != NULL;
    if (!near) {
        print_message("no page within " REACH_NAME " of the test's code: the direct call and jump not tested\n");
        page = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(page != MAP_FAILED);
    }
    put_stubs(page, near);
    unsigned char *original = malloc((size_t)ps);
    assert_non_null(original);
    memcpy(original, page, (size_t)ps);
    assert_int_equal(mprotect(page, (size_t)ps, prot), 0);
    for (int s = 0; s < NSTUBS; s++) {
        stub_on[s] = near || !STUBS[s].near;
        stub_fn[s] = (void (*)(void))((uintptr_t)page + STUBS[s].start);
        assert_int_equal(STUBS[s].site % 64, SITE_IN_LINE); /* the line's last byte or word */
        assert_int_equal(site_at(page, STUBS[s].site), STUBS[s].old);
        atomic_store(&all_hits[s], 0);
    }

    double t0 = now_s();
    atomic_store(&workers_ready, 0);
    atomic_store(&workers_stop, 0);
    struct worker w[NTHREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
    /* every thread past its exact count and calling in its loop before
     * the first change */
    while (atomic_load(&workers_ready) < NTHREADS)
        sched_yield();
    /* FLIPS times at least, then on until every thread has called every
     * stub and each stub has run both ways (checked after an undoing):
     * on a loaded machine the threads may not run at all during the
     * first FLIPS. Past those, the threads are given the processor after
     * each change and each undoing: where they share one with this
     * thread, they would otherwise run only when it yields, with the
     * sites always in the same state. */
    const char *mult = getenv("CGPROF_TIMEOUT_MULTIPLIER");
    double limit = FLIP_LIMIT * (mult && atof(mult) > 0 ? atof(mult) : 1);
    char unseen[160] = "";
    int failed = 0, flips = 0, late = 0;
    for (int f = 0;; f++) {
        for (int s = 0; s < NSTUBS; s++) {
            if (!stub_on[s])
                continue;
            const struct stub *st = &STUBS[s];
            uint32_t from = f % 2 ? st->patched : st->old, to = f % 2 ? st->old : st->patched;
            if (cg_site_write((uintptr_t)page + st->site, from, to, prot) != 0)
                failed++;
        }
        if (f + 1 < 2 * FLIPS)
            continue;
        if (failed)
            break;
        if (f % 2) {
            flips = (f + 1) / 2;
            if (!flips_unseen(w, unseen, sizeof unseen))
                break;
            if (now_s() - t0 > limit) {
                late = 1;
                break;
            }
        }
        sched_yield();
    }
    atomic_store(&workers_stop, 1);
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    double t1 = now_s();

    assert_int_equal(failed, 0);
    if (late)
        fail_msg("after %d changes and undoings in %.1f s, still %s", flips, t1 - t0, unseen);
    /* every site its old self again, and nothing else changed */
    assert_memory_equal(page, original, (size_t)ps);
    ASSERT_PERMS(page, "r-xp");
    unsigned long calls = 0, hits = 0;
    for (int s = 0; s < NSTUBS; s++) {
        if (!stub_on[s])
            continue;
        unsigned long sum = 0, stub_calls = 0, stub_hits = 0;
        for (int i = 0; i < NTHREADS; i++) {
            if (w[i].before[s] != CALLS)
                fail_msg("%s, thread %d: %lu counted for %d calls", STUBS[s].name, i, w[i].before[s], CALLS);
            if (w[i].over || w[i].hits[s] > w[i].calls[s])
                fail_msg("%s, thread %d: %lu counted for %lu calls", STUBS[s].name, i, w[i].hits[s], w[i].calls[s]);
            assert_true(w[i].calls[s] > 0);
            calls += w[i].calls[s];
            hits += w[i].hits[s];
            sum += CALLS + w[i].hits[s];
            stub_calls += w[i].calls[s];
            stub_hits += w[i].hits[s];
        }
        assert_int_equal(atomic_load(&all_hits[s]), sum);
        /* the threads ran both instructions, the old and the new */
        if (stub_hits == 0 || stub_hits == stub_calls)
            fail_msg("%s: %lu of %lu calls counted while the site changed", STUBS[s].name, stub_hits, stub_calls);
    }
    int nsites = 0;
    for (int s = 0; s < NSTUBS; s++)
        nsites += stub_on[s];
    print_message("%d sites taken back and put back %d times in %.2f s; %lu calls made meanwhile, %lu counted\n",
                  nsites, flips, t1 - t0, calls, hits);

    /* put back for good: every call counted again */
    for (int s = 0; s < NSTUBS; s++) {
        if (!stub_on[s])
            continue;
        unsigned long was = my_hits[s];
        for (int i = 0; i < CALLS; i++)
            stub_fn[s]();
        assert_int_equal(my_hits[s] - was, CALLS);
    }
    /* taken back for good: none */
    for (int s = 0; s < NSTUBS; s++) {
        if (!stub_on[s])
            continue;
        assert_int_equal(cg_site_write((uintptr_t)page + STUBS[s].site, STUBS[s].old, STUBS[s].patched, prot), 0);
        assert_int_equal(site_at(page, STUBS[s].site), STUBS[s].patched);
        unsigned long was = my_hits[s], all = atomic_load(&all_hits[s]);
        for (int i = 0; i < CALLS; i++)
            stub_fn[s]();
        assert_int_equal(my_hits[s] - was, 0);
        assert_int_equal(atomic_load(&all_hits[s]), all);
    }
    ASSERT_PERMS(page, "r-xp");
    assert_int_equal(munmap(page, (size_t)ps), 0);
    free(original);
}

#endif /* CG_CPU_HAVE_TAKEBACK */

#if defined(__aarch64__)
/* ---- aarch64's sites (arch/aarch64/a64sites.c) ---------------------------------
 * On a function made of words here (in a heap block, never run), the hooks
 * and a GOT slot at made-up addresses around it: its own enter (the first
 * call), its sites in the three forms a compiler writes (BL, BLR after
 * ADRP and LDR, a tail B) and what each becomes (NOP; kept; a B to a RET
 * of the range, or of its segment), a call of another function that is
 * none, a first call through a register that makes the range untrusted;
 * and cg_site_write on a real page. */
struct a64_hooks {
    uintptr_t enter, exit, other, slot; /* the slot holds the exit hook */
    unsigned asked;
};

static int a64_hook_of(void *ctx, uintptr_t to, int got)
{
    struct a64_hooks *h = ctx;
    h->asked++;
    if (got)
        return to == h->slot ? CG_HOOK_EXIT : CG_HOOK_NOT;
    return to == h->enter ? CG_HOOK_ENTER : to == h->exit ? CG_HOOK_EXIT : CG_HOOK_NOT;
}

static uint32_t a64_branch(uint32_t op, uintptr_t at, uintptr_t to)
{
    return op | (uint32_t)(((intptr_t)(to - at) >> 2) & 0x3ffffff);
}

static void test_a64_sites(void **state)
{
    (void)state;
    enum { N = 10 };
    uint32_t *w = malloc(N * sizeof *w);
    assert_non_null(w);
    uintptr_t at = (uintptr_t)w;
    struct a64_hooks h = { at + 0x10000, at - 0x20000, at + 0x30000, ((at + 0x40000) & ~(uintptr_t)0xfff) + 0x18, 0 };
    intptr_t pages = (intptr_t)((h.slot & ~(uintptr_t)0xfff) - ((at + 5 * 4) & ~(uintptr_t)0xfff)) >> 12;
    w[0] = 0xa9bf7bfd;                                   /* stp x29, x30, [sp, #-16]! */
    w[1] = 0x910003fd;                                   /* mov x29, sp */
    w[2] = 0xaa1e03e1;                                   /* mov x1, x30 */
    w[3] = a64_branch(0x94000000u, at + 12, h.enter);    /* bl enter: the own enter */
    w[4] = a64_branch(0x94000000u, at + 16, h.other);    /* bl other: no site */
    w[5] = 0x90000010u | (uint32_t)((pages & 3) << 29) | (uint32_t)(((pages >> 2) & 0x7ffff) << 5); /* adrp x16 */
    w[6] = 0xf9400210u | (uint32_t)(((h.slot & 0xfff) / 8) << 10); /* ldr x16, [x16, #off] */
    w[7] = 0xd63f0200;                                   /* blr x16: the exit hook through the GOT */
    w[8] = 0xa8c17bfd;                                   /* ldp x29, x30, [sp], #16 */
    w[9] = a64_branch(0x14000000u, at + 36, h.exit);     /* b exit: a tail call */
    struct cg_site sites[8];
    struct cg_range_scan scan;
    assert_int_equal(cg_range_scan(at, at + N * 4, NULL, a64_hook_of, &h, sites, 8, &scan), 0);
    assert_int_equal(scan.ok, 1);
    assert_int_equal(scan.own_enter, at + 12);
    assert_int_equal(scan.nsites, 3);
    assert_int_equal(sites[0].addr, at + 12);
    assert_int_equal(sites[0].form, CG_SITE_CALL);
    assert_int_equal(sites[0].hook, CG_HOOK_ENTER);
    assert_int_equal(sites[1].addr, at + 28);
    assert_int_equal(sites[1].form, CG_SITE_CALL_GOT);
    assert_int_equal(sites[1].hook, CG_HOOK_EXIT);
    assert_int_equal(sites[2].addr, at + 36);
    assert_int_equal(sites[2].form, CG_SITE_TAIL);
    assert_int_equal(sites[2].hook, CG_HOOK_EXIT);
    /* what each becomes: BL a NOP; BLR kept (not on the Arm ARM's list);
     * the tail B kept for now: no RET in its range */
    assert_int_equal(sites[0].old, w[3]);
    assert_int_equal(sites[0].patched, 0xd503201fu);
    assert_int_equal(sites[1].old, w[7]);
    assert_int_equal(sites[1].patched, w[7]);
    assert_int_equal(sites[2].old, w[9]);
    assert_int_equal(sites[2].patched, w[9]);
    /* ... a RET in the segment, found from the site outward, the nearest
     * (here the block is the segment: one RET before the range, one after
     * is farther) */
    uint32_t *seg = malloc(64 * sizeof *seg);
    assert_non_null(seg);
    for (int i = 0; i < 64; i++)
        seg[i] = 0xd503201fu;
    seg[2] = 0xd65f03c0u;  /* ret, 34 words before the site */
    seg[63] = 0xd65f03c0u; /* ret, 27 words after: the nearest */
    struct cg_site far = sites[2];
    far.addr = (uintptr_t)&seg[36];
    far.old = far.patched = a64_branch(0x14000000u, far.addr, h.exit);
    assert_int_equal(cg_site_tail_reach(&far, (uintptr_t)seg, (uintptr_t)(seg + 64)), 1);
    assert_int_equal(far.patched, a64_branch(0x14000000u, far.addr, (uintptr_t)&seg[63]));
    seg[63] = 0xd503201fu;
    far.patched = far.old;
    assert_int_equal(cg_site_tail_reach(&far, (uintptr_t)seg, (uintptr_t)(seg + 64)), 1);
    assert_int_equal(far.patched, a64_branch(0x14000000u, far.addr, (uintptr_t)&seg[2]));
    /* none in the segment: kept */
    seg[2] = 0xd503201fu;
    far.patched = far.old;
    assert_int_equal(cg_site_tail_reach(&far, (uintptr_t)seg, (uintptr_t)(seg + 64)), 0);
    assert_int_equal(far.patched, far.old);
    free(seg);
    /* the same from a copy: the bytes read there, the addresses the range's */
    uint32_t copy[N];
    memcpy(copy, w, sizeof copy);
    memset(w, 0, N * sizeof *w);
    assert_int_equal(cg_range_scan(at, at + N * 4, (const unsigned char *)copy, a64_hook_of, &h, sites, 8, &scan), 0);
    assert_int_equal(scan.ok, 1);
    assert_int_equal(scan.own_enter, at + 12);
    assert_int_equal(scan.nsites, 3);
    memcpy(w, copy, sizeof copy);
    /* a RET in the range (an early return before the tail call): the tail
     * B becomes a B to it */
    w[8] = 0xd65f03c0u;
    assert_int_equal(cg_range_scan(at, at + N * 4, NULL, a64_hook_of, &h, sites, 8, &scan), 0);
    assert_int_equal(scan.nsites, 3);
    assert_int_equal(sites[2].patched, a64_branch(0x14000000u, at + 36, at + 32));
    w[8] = 0xa8c17bfd;
    /* at return addresses: the calls of hooks, not the other call */
    struct cg_site site;
    assert_int_equal(cg_site_at_return(at + 16, at, a64_hook_of, &h, &site), 1);
    assert_int_equal(site.addr, at + 12);
    assert_int_equal(site.form, CG_SITE_CALL);
    assert_int_equal(site.hook, CG_HOOK_ENTER);
    assert_int_equal(cg_site_at_return(at + 32, at, a64_hook_of, &h, &site), 1);
    assert_int_equal(site.addr, at + 28);
    assert_int_equal(site.form, CG_SITE_CALL_GOT);
    assert_int_equal(cg_site_at_return(at + 20, at, a64_hook_of, &h, &site), 0);
    assert_int_equal(cg_site_at_return(at + 14, at, a64_hook_of, &h, &site), 0); /* misaligned */
    /* a first call through a register not loaded from a GOT slot just
     * before: maybe the enter hook's, the range untrusted */
    w[3] = 0xd63f0060; /* blr x3 */
    assert_int_equal(cg_range_scan(at, at + N * 4, NULL, a64_hook_of, &h, sites, 8, &scan), 0);
    assert_int_equal(scan.ok, 0);
    /* the end inside no instruction: untrusted */
    w[3] = a64_branch(0x94000000u, at + 12, h.enter);
    assert_int_equal(cg_range_scan(at, at + N * 4 - 2, NULL, a64_hook_of, &h, sites, 8, &scan), 0);
    assert_int_equal(scan.ok, 0);
    free(w);
}

/* cg_site_write of a word on a read-only executable page: BL to NOP and
 * back, the page's permissions given back and no other byte changed;
 * refused where the word is neither (EAGAIN), where there is no change
 * (ENOTSUP: BLR) or the address is not an instruction's (EINVAL); errno
 * kept through each. */
static void test_a64_site_writes(void **state)
{
    (void)state;
    long ps = page_size();
    uint32_t *page = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(page != MAP_FAILED);
    const uint32_t bl = 0x94000010u, nop = 0xd503201fu, blr = 0xd63f0200u;
    page[2] = bl;
    page[3] = blr;
    uint32_t *copy = malloc((size_t)ps);
    assert_non_null(copy);
    memcpy(copy, page, (size_t)ps);
    assert_int_equal(mprotect(page, (size_t)ps, RX), 0);
    static const struct {
        unsigned at;
        uint32_t from, to;
        int ret;
        uint32_t word; /* at `at` after */
    } steps[] = {
        {8, 0x94000010u, 0xd503201fu, 0, 0xd503201fu},  /* taken back */
        {8, 0x94000010u, 0xd503201fu, 0, 0xd503201fu},  /* already */
        {8, 0xd503201fu, 0x94000010u, 0, 0x94000010u},  /* put back */
        {12, 0x94000010u, 0xd503201fu, EAGAIN, 0xd63f0200u}, /* neither: not ours */
        {12, 0xd63f0200u, 0xd63f0200u, ENOTSUP, 0xd63f0200u}, /* BLR: no change */
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        errno = SENTINEL;
        assert_int_equal(cg_site_write((uintptr_t)page + steps[i].at, steps[i].from, steps[i].to, RX), steps[i].ret);
        assert_int_equal(errno, SENTINEL);
        assert_int_equal(page[steps[i].at / 4], steps[i].word);
        copy[steps[i].at / 4] = steps[i].word;
        assert_memory_equal(page, copy, (size_t)ps);
        ASSERT_PERMS(page, "r-xp");
    }
    errno = SENTINEL;
    assert_int_equal(cg_site_write((uintptr_t)page + 10, bl, nop, RX), EINVAL);
    assert_int_equal(errno, SENTINEL);
    assert_memory_equal(page, copy, (size_t)ps);
    assert_int_equal(munmap(page, (size_t)ps), 0);
    free(copy);
}
#elif !CG_CPU_HAVE_SITES
/* ---- an architecture without sites (cpu.h, CG_CPU_HAVE_SITES 0) -------------------
 * patch.c's promise there: no hook call is recognised, at a return address
 * or in a function's range, and no byte is ever changed. */
static int every_call_a_hook(void *ctx, uintptr_t to, int got)
{
    (void)to, (void)got;
    ++*(unsigned *)ctx;
    return CG_HOOK_ENTER;
}

static void test_no_site_anywhere(void **state)
{
    (void)state;
    unsigned asked = 0;
    uintptr_t here = (uintptr_t)test_no_site_anywhere;
    struct cg_site site;
    assert_int_equal(cg_site_at_return(here + 64, here, every_call_a_hook, &asked, &site), 0);
    struct cg_site sites[8];
    struct cg_range_scan scan;
    assert_int_equal(cg_range_scan(here, here + 64, NULL, every_call_a_hook, &asked, sites, 8, &scan), 0);
    assert_int_equal(scan.ok, 0);
    assert_int_equal(scan.nsites, 0);
    assert_int_equal(asked, 0);
    errno = 1234;
    assert_int_equal(cg_site_write(here, 0, 1, 0), ENOSYS);
    assert_int_equal(errno, 1234);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#if defined(__x86_64__)
        RETURN_TEST(return_call_enter),
        RETURN_TEST(return_call_exit_below),
        RETURN_TEST(return_call_other),
        RETURN_TEST(return_call_data16_refused),
        RETURN_TEST(return_call_data16_behind_another_prefix),
        RETURN_TEST(return_call_got),
        RETURN_TEST(return_call_got_other),
        RETURN_TEST(return_lo_bound),
        cmocka_unit_test(test_return_call_register),
        cmocka_unit_test(test_scan_typical),
        cmocka_unit_test(test_scan_noplt),
        cmocka_unit_test(test_scan_from_a_copy),
        cmocka_unit_test(test_scan_variadic_prologue),
        cmocka_unit_test(test_scan_jump_before_first_call),
        cmocka_unit_test(test_scan_first_call_not_a_hook),
        cmocka_unit_test(test_scan_refused_forms),
        SCAN_TEST(scan_end_inside_an_instruction),
        SCAN_TEST(scan_bytes_refused),
        cmocka_unit_test(test_scan_more_sites_than_max),
        cmocka_unit_test(test_scan_empty_range),
        SITE_WRITES_TEST(write_on_rx_page),
        SITE_WRITES_TEST(write_neither_byte),
        SITE_WRITES_TEST(write_gives_the_protection_given),
        cmocka_unit_test(test_write_refused_by_mprotect),
#elif defined(__aarch64__)
        cmocka_unit_test(test_a64_sites),
        cmocka_unit_test(test_a64_site_writes),
#elif !CG_CPU_HAVE_SITES
        cmocka_unit_test(test_no_site_anywhere),
#endif
#if CG_CPU_HAVE_TAKEBACK
        cmocka_unit_test(test_sites_changed_under_running_threads),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
