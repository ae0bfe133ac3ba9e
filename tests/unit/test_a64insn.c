/* Unit tests of a64insn.c, the AArch64 instruction kinds: each branch,
 * call, return and stop form the decoder knows, with its target, as the
 * assembler encodes it (binutils' aarch64-linux-gnu-as -march=armv8.3-a,
 * the words copied from its objdump); the instructions around a hook call
 * and a PLT entry, which are no branch; misaligned and cut-short input.
 * Built and run on every architecture: the decoder is a function of bytes.
 * The PLT entry's slot and the call test of the arch header
 * (cpu_aarch64.h) are tested where it is the build's (aarch64). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "a64insn.h"
#include "cpu.h"

/* where the instructions are taken to be */
#define ADDR ((uintptr_t)0x5500401000)

struct acase {
    const char *name;
    uint32_t w;
    unsigned kind;
    intptr_t rel; /* target = ADDR + rel, for the kinds with a target */
};

/* Decodes w from a heap copy of exactly its 4 bytes (a read past them is
 * caught by the sanitizer build). */
static unsigned decode(uint32_t w, size_t avail, uintptr_t addr, struct cg_insn *out)
{
    unsigned char *copy = malloc(4);
    assert_non_null(copy);
    memcpy(copy, &w, 4);
    memset(out, 0xa5, sizeof *out);
    unsigned len = cg_a64_decode(copy, avail, addr, out);
    free(copy);
    return len;
}

static void check(const struct acase *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct cg_insn in;
        unsigned len = decode(v[i].w, 4, ADDR, &in);
        if (len != 4 || in.len != 4 || in.op_off != 0 || in.kind != v[i].kind)
            fail_msg("%s (%08x): len %u kind %u, expected 4 %u", v[i].name, v[i].w, len, in.kind, v[i].kind);
        int has_target = in.kind == CG_INSN_CALL_REL || in.kind == CG_INSN_JMP_REL || in.kind == CG_INSN_JCC;
        uintptr_t want = has_target ? ADDR + (uintptr_t)v[i].rel : 0;
        if (in.target != want || in.mem != 0)
            fail_msg("%s (%08x): target %#lx mem %#lx, expected %#lx", v[i].name, v[i].w, (unsigned long)in.target,
                     (unsigned long)in.mem, (unsigned long)want);
    }
}

static void test_calls_and_branches(void **state)
{
    (void)state;
    static const struct acase v[] = {
        { "bl .", 0x94000000, CG_INSN_CALL_REL, 0 },
        { "bl .+0x80", 0x94000020, CG_INSN_CALL_REL, 0x80 },
        { "bl .-0x1c (the furthest back: imm26 all ones)", 0x97fffff9, CG_INSN_CALL_REL, -0x1c },
        { "bl .+128MiB-4", 0x95ffffff, CG_INSN_CALL_REL, 0x7fffffc },
        { "bl .-128MiB", 0x96000000, CG_INSN_CALL_REL, -0x8000000 },
        { "blr x3", 0xd63f0060, CG_INSN_CALL_IND, 0 },
        { "blraa x3, x4", 0xd73f0864, CG_INSN_CALL_IND, 0 },
        { "blraaz x5", 0xd63f08bf, CG_INSN_CALL_IND, 0 },
        { "blrab x1, sp", 0xd73f0c3f, CG_INSN_CALL_IND, 0 },
        { "blrabz x6", 0xd63f0cdf, CG_INSN_CALL_IND, 0 },
        { "b .-0x1c", 0x17fffff9, CG_INSN_JMP_REL, -0x1c },
        { "b .+4", 0x14000001, CG_INSN_JMP_REL, 4 },
        { "br x17", 0xd61f0220, CG_INSN_JMP_IND, 0 },
        { "braa x1, x2", 0xd71f0822, CG_INSN_JMP_IND, 0 },
        { "braaz x1", 0xd61f083f, CG_INSN_JMP_IND, 0 },
        { "brab x1, x2", 0xd71f0c22, CG_INSN_JMP_IND, 0 },
        { "brabz x1", 0xd61f0c3f, CG_INSN_JMP_IND, 0 },
        { "b.ne .-0x34", 0x54fffe61, CG_INSN_JCC, -0x34 },
        { "cbz w3, .-0x38", 0x34fffe43, CG_INSN_JCC, -0x38 },
        { "cbnz x3, .+0x48", 0xb5000243, CG_INSN_JCC, 0x48 },
        { "tbz w2, #3, .-0x40", 0x361ffe02, CG_INSN_JCC, -0x40 },
        { "tbnz x2, #40, .+0x40", 0xb7400202, CG_INSN_JCC, 0x40 },
        { "ret", 0xd65f03c0, CG_INSN_RET, 0 },
        { "ret x1", 0xd65f0020, CG_INSN_RET, 0 },
        { "retaa", 0xd65f0bff, CG_INSN_RET, 0 },
        { "retab", 0xd65f0fff, CG_INSN_RET, 0 },
        { "eret", 0xd69f03e0, CG_INSN_RET, 0 },
        { "brk #0x3e8", 0xd4207d00, CG_INSN_STOP, 0 },
        { "hlt #0", 0xd4400000, CG_INSN_STOP, 0 },
        { "udf #1", 0x00000001, CG_INSN_STOP, 0 },
    };
    check(v, sizeof v / sizeof v[0]);
}

/* What falls through: the system call (it returns), the hints, and the
 * instructions of gcc's hook call (mov x1, x30; adrp x0; add x0; then the
 * bl) and of a PLT entry before its br. */
static void test_falls_through(void **state)
{
    (void)state;
    static const struct acase v[] = {
        { "svc #0", 0xd4000001, CG_INSN_OTHER, 0 },
        { "nop", 0xd503201f, CG_INSN_OTHER, 0 },
        { "bti c", 0xd503245f, CG_INSN_OTHER, 0 },
        { "paciasp", 0xd503233f, CG_INSN_OTHER, 0 },
        { "mov x1, x30", 0xaa1e03e1, CG_INSN_OTHER, 0 },
        { "stp x29, x30, [sp, #-32]!", 0xa9be7bfd, CG_INSN_OTHER, 0 },
        { "adrp x16, .", 0x90000010, CG_INSN_OTHER, 0 },
        { "ldr x17, [x16, #8]", 0xf9400611, CG_INSN_OTHER, 0 },
        { "add x16, x16, #8", 0x91002210, CG_INSN_OTHER, 0 },
        { "mov x8, #139", 0xd2801168, CG_INSN_OTHER, 0 },
        /* the unconditional-branch-register group's unallocated members */
        { "op2 not 11111", 0xd61e0220, CG_INSN_OTHER, 0 },
        { "br with Rm set", 0xd61f0221 | (1u << 12), CG_INSN_OTHER, 0 },
    };
    check(v, sizeof v / sizeof v[0]);
}

/* Fewer than 4 bytes, or an address no instruction can be at: refused. */
static void test_refused(void **state)
{
    (void)state;
    struct cg_insn in;
    for (size_t avail = 0; avail < 4; avail++)
        assert_int_equal(decode(0x94000000, avail, ADDR, &in), 0);
    for (uintptr_t off = 1; off < 4; off++)
        assert_int_equal(decode(0x94000000, 4, ADDR + off, &in), 0);
}

/* Every word decodes to 4 bytes and one kind, with a target only where
 * the kind has one: a sweep over words spread through the encoding space. */
static void test_every_word(void **state)
{
    (void)state;
    unsigned kinds[CG_INSN_STOP + 1] = { 0 };
    for (uint64_t w = 0; w <= 0xffffffffu; w += 0x10001u) {
        struct cg_insn in;
        assert_int_equal(decode((uint32_t)w, 4, ADDR, &in), 4);
        assert_true(in.kind <= CG_INSN_STOP);
        assert_true(in.kind != CG_INSN_CALL_RIP && in.kind != CG_INSN_JMP_RIP);
        int has_target = in.kind == CG_INSN_CALL_REL || in.kind == CG_INSN_JMP_REL || in.kind == CG_INSN_JCC;
        if (!has_target)
            assert_int_equal(in.target, 0);
        else
            assert_int_equal(in.target & 3, 0);
        kinds[in.kind]++;
    }
    /* the sweep met the common kinds */
    assert_true(kinds[CG_INSN_OTHER] > 0 && kinds[CG_INSN_CALL_REL] > 0 && kinds[CG_INSN_JMP_REL] > 0 &&
                kinds[CG_INSN_JCC] > 0 && kinds[CG_INSN_STOP] > 0);
}

#if defined(__aarch64__)
/* The arch header's PLT entry (binutils' ld: adrp x16, ldr x17, add x16,
 * br x17; lld's with BTI C before) and its call test. */
static void test_plt_and_calls(void **state)
{
    (void)state;
    /* at 0x5500401010: adrp x16, 0x5500412000 (17 pages on); ldr x17,
     * [x16, #504]; add x16, x16, #0x1f8; br x17 (objdump's reading) */
    const uint32_t plt[] = { 0xb0000090, 0xf940fe11, 0x9107e210, 0xd61f0220 };
    assert_int_equal(cg_cpu_plt_slot((const unsigned char *)plt, 0x5500401010), 0x55004121f8);
    const uint32_t bti[] = { 0xd503245f, 0xb0000090, 0xf940fe11, 0x9107e210 };
    assert_int_equal(cg_cpu_plt_slot((const unsigned char *)bti, 0x550040100c), 0x55004121f8);
    /* pages before: adrp x16, 0x55003fc000 (5 pages back); ldr x17, [x16] */
    const uint32_t back[] = { 0xf0ffffd0, 0xf9400211, 0x91000210, 0xd61f0220 };
    assert_int_equal(cg_cpu_plt_slot((const unsigned char *)back, 0x5500401010), 0x55003fc000);
    const uint32_t other[] = { 0xd503201f, 0xf940fe11, 0x9107e210, 0xd61f0220 };
    assert_int_equal(cg_cpu_plt_slot((const unsigned char *)other, 0x5500401010), 0);
    const uint32_t calls[] = { 0x94000020, 0xd63f0060, 0xd73f0864, 0xd63f08bf };
    for (int i = 0; i < 4; i++)
        assert_true(cg_cpu_is_call((const unsigned char *)&calls[i]));
    const uint32_t not_calls[] = { 0xd503201f, 0x14000001, 0xd61f0220, 0xd65f03c0 };
    for (int i = 0; i < 4; i++)
        assert_false(cg_cpu_is_call((const unsigned char *)&not_calls[i]));
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_and_branches),
        cmocka_unit_test(test_falls_through),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_every_word),
#if defined(__aarch64__)
        cmocka_unit_test(test_plt_and_calls),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
