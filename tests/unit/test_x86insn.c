/* Unit tests of x86insn.c, the x86-64 instruction-length decoder: byte
 * sequences of known lengths, kinds and targets for each class it knows
 * (the hooks' call and jump forms first), the prefix and immediate rules,
 * ModRM/SIB/displacement, VEX, EVEX and XOP, the opcodes invalid in 64-bit
 * mode, and input cut short. Every sequence is decoded from a heap copy of
 * exactly the bytes given, so that a read past them is caught by the
 * sanitizer build (scripts/test). tests/integration/test_x86insn.py holds
 * the decoder against objdump on real code. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "x86insn.h"

/* Where the instructions are taken to be: high enough for a negative
 * displacement, above 4 GiB for the 32-bit cut of a 67 prefix. */
#define ADDR ((uintptr_t)0x7f0000401000)

struct xcase {
    const char *name;
    unsigned char b[24];
    unsigned n;      /* bytes in b */
    unsigned len;    /* expected length, 0 for refused */
    unsigned op_off; /* expected op_off */
    unsigned kind;
    intptr_t rel; /* target or mem = ADDR + len + rel */
};

/* the bytes, and their number */
#define B(...) { __VA_ARGS__ }, sizeof((unsigned char[]){ __VA_ARGS__ })

/* Decodes the n bytes at b from a heap copy of exactly n bytes. */
static unsigned decode(const unsigned char *b, size_t n, size_t avail, struct cg_insn *out)
{
    unsigned char *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, b, n);
    memset(out, 0xa5, sizeof *out);
    unsigned len = cg_insn_decode(copy, avail, ADDR, out);
    free(copy);
    return len;
}

static void check_case(const struct xcase *c)
{
    struct cg_insn in;
    unsigned len = decode(c->b, c->n, c->n, &in);
    if (len != c->len)
        fail_msg("%s: length %u, expected %u", c->name, len, c->len);
    if (!len)
        return;
    if (in.len != len || in.op_off != c->op_off || in.kind != c->kind)
        fail_msg("%s: len %u op_off %u kind %u, expected %u %u %u", c->name, in.len, in.op_off, in.kind, len, c->op_off,
                 c->kind);
    uintptr_t want = ADDR + len + (uintptr_t)c->rel;
    int has_target = c->kind == CG_INSN_CALL_REL || c->kind == CG_INSN_JMP_REL || c->kind == CG_INSN_JCC;
    int has_mem = c->kind == CG_INSN_CALL_RIP || c->kind == CG_INSN_JMP_RIP;
    if (in.target != (has_target ? want : 0) || in.mem != (has_mem ? want : 0))
        fail_msg("%s: target %#lx mem %#lx, expected %#lx", c->name, (unsigned long)in.target, (unsigned long)in.mem,
                 (unsigned long)want);
    if (in.modrm && in.modrm_off >= len)
        fail_msg("%s: ModRM at %u of %u bytes", c->name, in.modrm_off, len);
}

static void check_cases(const struct xcase *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_case(&v[i]);
}

/* Every shorter piece of a valid sequence is refused: the decoder needs
 * bytes it does not have. But a fwait whose x87 instruction is cut off is
 * an instruction of its own, prefixes before it included (test_fwait). */
static void check_truncated(const struct xcase *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct cg_insn in;
        for (size_t avail = 0; avail < v[i].len; avail++) {
            unsigned len = decode(v[i].b, avail, avail, &in);
            if (len != 0 && v[i].b[len - 1] != 0x9b)
                fail_msg("%s: decoded from %zu of its %u bytes", v[i].name, avail, v[i].len);
        }
    }
}

#define CHECK(cases)                                                                                                   \
    do {                                                                                                               \
        check_cases(cases, sizeof(cases) / sizeof(cases)[0]);                                                          \
        check_truncated(cases, sizeof(cases) / sizeof(cases)[0]);                                                      \
    } while (0)

enum {
    OTHER = CG_INSN_OTHER,
    CALL_REL = CG_INSN_CALL_REL,
    CALL_RIP = CG_INSN_CALL_RIP,
    CALL_IND = CG_INSN_CALL_IND,
    JMP_REL = CG_INSN_JMP_REL,
    JMP_RIP = CG_INSN_JMP_RIP,
    JMP_IND = CG_INSN_JMP_IND,
    JCC = CG_INSN_JCC,
    RET = CG_INSN_RET,
    STOP = CG_INSN_STOP
};

/* ---- the hooks' sites and the other branches ------------------------------- */

static const struct xcase hook_sites[] = {
    { "call rel32", B(0xe8, 0x10, 0, 0, 0), 5, 0, CALL_REL, 0x10 },
    { "call rel32 backwards", B(0xe8, 0xf0, 0xff, 0xff, 0xff), 5, 0, CALL_REL, -0x10 },
    { "call *GOT(%rip)", B(0xff, 0x15, 0x00, 0x10, 0, 0), 6, 0, CALL_RIP, 0x1000 },
    { "call *GOT(%rip) backwards", B(0xff, 0x15, 0x00, 0xf0, 0xff, 0xff), 6, 0, CALL_RIP, -0x1000 },
    { "jmp rel32", B(0xe9, 0xfb, 0xff, 0xff, 0xff), 5, 0, JMP_REL, -5 },
    { "jmp *GOT(%rip)", B(0xff, 0x25, 0xf8, 0x0f, 0, 0), 6, 0, JMP_RIP, 0xff8 },
    { "jmp rel8", B(0xeb, 0xfe), 2, 0, JMP_REL, -2 },
    { "jmp rel8 forward", B(0xeb, 0x7f), 2, 0, JMP_REL, 0x7f },
    { "je rel8 backwards", B(0x74, 0xf0), 2, 0, JCC, -0x10 },
    { "jg rel8", B(0x7f, 0x03), 2, 0, JCC, 3 },
    { "jne rel32 backwards", B(0x0f, 0x85, 0x00, 0xff, 0xff, 0xff), 6, 0, JCC, -0x100 },
    { "jo rel32", B(0x0f, 0x80, 0x00, 0x01, 0, 0), 6, 0, JCC, 0x100 },
    { "ret", B(0xc3), 1, 0, RET, 0 },
    { "rep ret", B(0xf3, 0xc3), 2, 1, RET, 0 },
    { "bnd ret", B(0xf2, 0xc3), 2, 1, RET, 0 },
    { "ret $8", B(0xc2, 0x08, 0x00), 3, 0, RET, 0 },
    { "bnd jmp rel32", B(0xf2, 0xe9, 0x00, 0x01, 0, 0), 6, 1, JMP_REL, 0x100 },
    { "bnd call rel32", B(0xf2, 0xe8, 0x00, 0x01, 0, 0), 6, 1, CALL_REL, 0x100 },
    { "notrack jmp *GOT(%rip)", B(0x3e, 0xff, 0x25, 0x10, 0, 0, 0), 7, 1, JMP_RIP, 0x10 },
    { "bnd jmp *GOT(%rip)", B(0xf2, 0xff, 0x25, 0x10, 0, 0, 0), 7, 1, JMP_RIP, 0x10 },
    { "addr32 call rel32 (ld's relaxed GOT call)", B(0x67, 0xe8, 0, 0, 0, 0), 6, 1, CALL_REL, 0 },
    { "TLS GD: data16 data16 rex.W call", B(0x66, 0x66, 0x48, 0xe8, 0x10, 0, 0, 0), 8, 3, CALL_REL, 0x10 },
    { "data16 call: rel32 as Intel has it", B(0x66, 0xe8, 0x10, 0, 0, 0), 6, 1, CALL_REL, 0x10 },
    { "call *%rax", B(0xff, 0xd0), 2, 0, CALL_IND, 0 },
    { "call *%r11", B(0x41, 0xff, 0xd3), 3, 1, CALL_IND, 0 },
    { "call *(%rax)", B(0xff, 0x10), 2, 0, CALL_IND, 0 },
    { "call *0x10(%rax,%rbx,8)", B(0xff, 0x54, 0xd8, 0x10), 4, 0, CALL_IND, 0 },
    { "call *abs32", B(0xff, 0x14, 0x25, 0x10, 0, 0, 0), 7, 0, CALL_IND, 0 },
    { "call *%fs:x(%rip): not a slot the decoder can name", B(0x64, 0xff, 0x15, 0x10, 0, 0, 0), 7, 1, CALL_IND, 0 },
    { "lcall *(%rax)", B(0xff, 0x18), 2, 0, CALL_IND, 0 },
    { "jmp *%rax", B(0xff, 0xe0), 2, 0, JMP_IND, 0 },
    { "notrack jmp *%rax", B(0x3e, 0xff, 0xe0), 3, 1, JMP_IND, 0 },
    { "jmp *0x10(%rsp)", B(0xff, 0x64, 0x24, 0x10), 4, 0, JMP_IND, 0 },
    { "jmp *table(,%rax,8)", B(0xff, 0x24, 0xc5, 0x00, 0x10, 0, 0), 7, 0, JMP_IND, 0 },
    { "ljmp *(%rax)", B(0xff, 0x28), 2, 0, JMP_IND, 0 },
    { "loop", B(0xe2, 0xfe), 2, 0, JCC, -2 },
    { "loopne", B(0xe0, 0x10), 2, 0, JCC, 0x10 },
    { "jrcxz", B(0xe3, 0x00), 2, 0, JCC, 0 },
    { "addr32 jecxz", B(0x67, 0xe3, 0x05), 3, 1, JCC, 5 },
    { "xbegin rel32", B(0xc7, 0xf8, 0x00, 0x01, 0, 0), 6, 0, JCC, 0x100 },
    { "data16 xbegin rel16", B(0x66, 0xc7, 0xf8, 0xf0, 0xff), 5, 1, JCC, -0x10 },
    { "xabort", B(0xc6, 0xf8, 0x05), 3, 0, OTHER, 0 },
    { "ud2", B(0x0f, 0x0b), 2, 0, STOP, 0 },
    { "ud1", B(0x0f, 0xb9, 0xc8), 3, 0, STOP, 0 },
    { "ud0", B(0x0f, 0xff, 0xc8), 3, 0, STOP, 0 },
    { "hlt", B(0xf4), 1, 0, STOP, 0 },
    { "int3", B(0xcc), 1, 0, STOP, 0 },
    { "iretq", B(0x48, 0xcf), 2, 1, STOP, 0 },
    { "lret", B(0xcb), 1, 0, STOP, 0 },
    { "lret $8", B(0xca, 0x08, 0x00), 3, 0, STOP, 0 },
    { "sysretq", B(0x48, 0x0f, 0x07), 3, 1, STOP, 0 },
    { "int $0x80 returns", B(0xcd, 0x80), 2, 0, OTHER, 0 },
    { "int1", B(0xf1), 1, 0, OTHER, 0 },
    { "syscall", B(0x0f, 0x05), 2, 0, OTHER, 0 },
};

static void test_hook_sites_and_branches(void **state)
{
    (void)state;
    CHECK(hook_sites);
}

static void test_rip_relative_under_addr32_is_cut_to_32_bits(void **state)
{
    (void)state;
    /* addr32 call *disp32(%eip) */
    static const unsigned char b[] = { 0x67, 0xff, 0x15, 0x00, 0x00, 0x00, 0x80 };
    struct cg_insn in;
    assert_int_equal(decode(b, sizeof b, sizeof b, &in), 7);
    assert_int_equal(in.kind, CG_INSN_CALL_RIP);
    assert_int_equal(in.mem, (uint32_t)(ADDR + 7 - 0x80000000u));
    assert_int_equal(in.modrm, 1);
    assert_int_equal(in.modrm_off, 2);
}

static void test_targets_wrap_around(void **state)
{
    (void)state;
    /* a jump backwards from near address 0, forwards from the top */
    static const unsigned char back[] = { 0xeb, 0x80 }, fwd[] = { 0xe9, 0x00, 0x01, 0x00, 0x00 };
    struct cg_insn in;
    assert_int_equal(cg_insn_decode(back, sizeof back, 0x10, &in), 2);
    assert_int_equal(in.target, (uintptr_t)0x10 + 2 - 0x80);
    assert_int_equal(cg_insn_decode(fwd, sizeof fwd, UINTPTR_MAX - 0x10, &in), 5);
    assert_int_equal(in.target, UINTPTR_MAX - 0x10 + 5 + 0x100);
}

/* ---- prefixes and immediates ---------------------------------------------- */

static const struct xcase immediates[] = {
    { "add $imm32, %eax", B(0x05, 0x78, 0x56, 0x34, 0x12), 5, 0, OTHER, 0 },
    { "add $imm16, %ax", B(0x66, 0x05, 0x34, 0x12), 4, 1, OTHER, 0 },
    { "add $imm32, %rax: REX.W over 66", B(0x66, 0x48, 0x05, 0x78, 0x56, 0x34, 0x12), 7, 2, OTHER, 0 },
    { "a REX before a 66 is dropped", B(0x48, 0x66, 0x05, 0x34, 0x12), 5, 2, OTHER, 0 },
    { "add $imm32, %ecx", B(0x81, 0xc1, 0x78, 0x56, 0x34, 0x12), 6, 0, OTHER, 0 },
    { "add $imm16, %cx", B(0x66, 0x81, 0xc1, 0x34, 0x12), 5, 1, OTHER, 0 },
    { "add $imm8, %ecx", B(0x83, 0xc1, 0x01), 3, 0, OTHER, 0 },
    { "add $imm8, %cl", B(0x80, 0xc1, 0x01), 3, 0, OTHER, 0 },
    { "cmp $imm8, %al", B(0x3c, 0x01), 2, 0, OTHER, 0 },
    { "mov $imm32, %eax", B(0xb8, 0x78, 0x56, 0x34, 0x12), 5, 0, OTHER, 0 },
    { "mov $imm16, %ax", B(0x66, 0xb8, 0x34, 0x12), 4, 1, OTHER, 0 },
    { "movabs $imm64, %rax", B(0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8), 10, 1, OTHER, 0 },
    { "movabs $imm64, %r15", B(0x49, 0xbf, 1, 2, 3, 4, 5, 6, 7, 8), 10, 1, OTHER, 0 },
    { "mov $imm8, %al", B(0xb0, 0x12), 2, 0, OTHER, 0 },
    { "movabs moffs64, %eax", B(0xa1, 1, 2, 3, 4, 5, 6, 7, 8), 9, 0, OTHER, 0 },
    { "movabs %rax, moffs64", B(0x48, 0xa3, 1, 2, 3, 4, 5, 6, 7, 8), 10, 1, OTHER, 0 },
    { "data16 movabs: the offset stays 8 bytes", B(0x66, 0xa1, 1, 2, 3, 4, 5, 6, 7, 8), 10, 1, OTHER, 0 },
    { "addr32 mov moffs32, %al", B(0x67, 0xa0, 1, 2, 3, 4), 6, 1, OTHER, 0 },
    { "push $imm32", B(0x68, 0x78, 0x56, 0x34, 0x12), 5, 0, OTHER, 0 },
    { "pushw $imm16", B(0x66, 0x68, 0x34, 0x12), 4, 1, OTHER, 0 },
    { "push $imm8", B(0x6a, 0x12), 2, 0, OTHER, 0 },
    { "imul $imm32", B(0x69, 0xc8, 0x78, 0x56, 0x34, 0x12), 6, 0, OTHER, 0 },
    { "imul $imm16", B(0x66, 0x69, 0xc8, 0x34, 0x12), 5, 1, OTHER, 0 },
    { "imul $imm8", B(0x6b, 0xc8, 0x03), 3, 0, OTHER, 0 },
    { "test $imm8, %al", B(0xa8, 0x12), 2, 0, OTHER, 0 },
    { "test $imm32, %eax", B(0xa9, 0x78, 0x56, 0x34, 0x12), 5, 0, OTHER, 0 },
    { "testb $imm8, (%rax): f6 /0", B(0xf6, 0x00, 0x12), 3, 0, OTHER, 0 },
    { "f6 /1, test's alias", B(0xf6, 0x08, 0x12), 3, 0, OTHER, 0 },
    { "not %al: f6 /2 has no immediate", B(0xf6, 0xd0), 2, 0, OTHER, 0 },
    { "test $imm32, %ecx: f7 /0", B(0xf7, 0xc1, 0x78, 0x56, 0x34, 0x12), 6, 0, OTHER, 0 },
    { "testw $imm16, (%rax)", B(0x66, 0xf7, 0x00, 0x34, 0x12), 5, 1, OTHER, 0 },
    { "test $imm32, %r9", B(0x49, 0xf7, 0xc1, 0x78, 0x56, 0x34, 0x12), 7, 1, OTHER, 0 },
    { "neg %eax: f7 /3", B(0xf7, 0xd8), 2, 0, OTHER, 0 },
    { "idiv %ecx: f7 /7", B(0xf7, 0xf9), 2, 0, OTHER, 0 },
    { "movb $imm8, (%rax)", B(0xc6, 0x00, 0x12), 3, 0, OTHER, 0 },
    { "movl $imm32, (%rax)", B(0xc7, 0x00, 0x78, 0x56, 0x34, 0x12), 6, 0, OTHER, 0 },
    { "movw $imm16, (%rax)", B(0x66, 0xc7, 0x00, 0x34, 0x12), 5, 1, OTHER, 0 },
    { "mov $imm32, %rax (sign-extended)", B(0x48, 0xc7, 0xc0, 0x78, 0x56, 0x34, 0x12), 7, 1, OTHER, 0 },
    { "enter $16, $1", B(0xc8, 0x10, 0x00, 0x01), 4, 0, OTHER, 0 },
    { "leave", B(0xc9), 1, 0, OTHER, 0 },
    { "shl $3, %eax", B(0xc1, 0xe0, 0x03), 3, 0, OTHER, 0 },
    { "shl %eax", B(0xd1, 0xe0), 2, 0, OTHER, 0 },
    { "in $0x60, %al", B(0xe4, 0x60), 2, 0, OTHER, 0 },
    { "out %al, $0x80", B(0xe6, 0x80), 2, 0, OTHER, 0 },
    { "in (%dx), %al", B(0xec), 1, 0, OTHER, 0 },
    { "rep movsq", B(0xf3, 0x48, 0xa5), 3, 2, OTHER, 0 },
    { "rep stosb", B(0xf3, 0xaa), 2, 1, OTHER, 0 },
    { "repne scasb", B(0xf2, 0xae), 2, 1, OTHER, 0 },
    { "lock cmpxchg %rcx, (%rdx)", B(0xf0, 0x48, 0x0f, 0xb1, 0x0a), 5, 2, OTHER, 0 },
    { "lock xadd %eax, 8(%rsp)", B(0xf0, 0x0f, 0xc1, 0x44, 0x24, 0x08), 6, 1, OTHER, 0 },
    { "xlat", B(0xd7), 1, 0, OTHER, 0 },
    { "push %rbp", B(0x55), 1, 0, OTHER, 0 },
    { "push %r12", B(0x41, 0x54), 2, 1, OTHER, 0 },
    { "movsxd", B(0x48, 0x63, 0xc7), 3, 1, OTHER, 0 },
    { "pop (%rax): 8f /0", B(0x8f, 0x00), 2, 0, OTHER, 0 },
    { "pop %rax: 8f /0 on a register", B(0x8f, 0xc0), 2, 0, OTHER, 0 },
    { "pop (%r8)", B(0x41, 0x8f, 0x00), 3, 1, OTHER, 0 },
};

static void test_prefixes_and_immediates(void **state)
{
    (void)state;
    CHECK(immediates);
}

/* ---- ModRM, SIB, displacements --------------------------------------------- */

static const struct xcase addressing[] = {
    { "mov (%rax), %eax", B(0x8b, 0x00), 2, 0, OTHER, 0 },
    { "mov disp8(%rax), %eax", B(0x8b, 0x40, 0x12), 3, 0, OTHER, 0 },
    { "mov disp32(%rax), %eax", B(0x8b, 0x80, 1, 2, 3, 4), 6, 0, OTHER, 0 },
    { "mov (%rsp), %eax: a SIB", B(0x8b, 0x04, 0x24), 3, 0, OTHER, 0 },
    { "mov disp8(%rsp), %eax", B(0x8b, 0x44, 0x24, 0x12), 4, 0, OTHER, 0 },
    { "mov abs32, %eax: SIB without base", B(0x8b, 0x04, 0x25, 1, 2, 3, 4), 7, 0, OTHER, 0 },
    { "lea 0(,%rax,4), %rcx: no base, disp32", B(0x48, 0x8d, 0x0c, 0x85, 0, 0, 0, 0), 8, 1, OTHER, 0 },
    { "mov disp8(%rbp,%rax), %eax: SIB base 101 under mod 01", B(0x8b, 0x44, 0x05, 0x08), 4, 0, OTHER, 0 },
    { "mov disp32(%rbp,%rax), %eax", B(0x8b, 0x84, 0x05, 1, 2, 3, 4), 7, 0, OTHER, 0 },
    { "mov 0(%r13), %eax: r13 as rbp", B(0x41, 0x8b, 0x45, 0x00), 4, 1, OTHER, 0 },
    { "mov (%r12), %eax: r12 as rsp", B(0x41, 0x8b, 0x04, 0x24), 4, 1, OTHER, 0 },
    { "mov x(%rip), %eax", B(0x8b, 0x05, 1, 2, 3, 4), 6, 0, OTHER, 0 },
    { "mov x(%eip), %eax", B(0x67, 0x8b, 0x05, 1, 2, 3, 4), 7, 1, OTHER, 0 },
    { "mov %gs:0x28, %rax", B(0x65, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0), 9, 2, OTHER, 0 },
    { "mov %fs:(%rax,%rbx,8), %rcx", B(0x64, 0x48, 0x8b, 0x0c, 0xd8), 5, 2, OTHER, 0 },
    { "addw $imm16, %fs:x(%rip): disp32 then imm16", B(0x64, 0x66, 0x81, 0x05, 0x10, 0, 0, 0, 0x34, 0x12), 10, 2, OTHER,
      0 },
    { "movl $imm32, x(%rip)", B(0xc7, 0x05, 1, 2, 3, 4, 5, 6, 7, 8), 10, 0, OTHER, 0 },
    { "mov %cr0, %rax", B(0x0f, 0x20, 0xc0), 3, 0, OTHER, 0 },
    { "mov %cr0, %rax written with mod 00: still registers", B(0x0f, 0x20, 0x05), 3, 0, OTHER, 0 },
    { "mov %rax, %dr7", B(0x0f, 0x23, 0xf8), 3, 0, OTHER, 0 },
    { "fnstcw 2(%rsp)", B(0xd9, 0x7c, 0x24, 0x02), 4, 0, OTHER, 0 },
    { "fmulp", B(0xde, 0xc9), 2, 0, OTHER, 0 },
    { "fldt 16(%rsp)", B(0xdb, 0x6c, 0x24, 0x10), 4, 0, OTHER, 0 },
    { "fldl x(%rip)", B(0xdd, 0x05, 1, 2, 3, 4), 6, 0, OTHER, 0 },
    { "fstcw: fwait and fnstcw, one instruction", B(0x9b, 0xd9, 0x7c, 0x24, 0x02), 5, 0, OTHER, 0 },
    { "fstsw %ax", B(0x9b, 0xdf, 0xe0), 3, 0, OTHER, 0 },
    { "fwait, data16, fnstcw", B(0x9b, 0x66, 0xd9, 0x7c, 0x24, 0x02), 6, 0, OTHER, 0 },
};

static void test_modrm_sib_displacement(void **state)
{
    (void)state;
    CHECK(addressing);
}

static void test_fwait(void **state)
{
    (void)state;
    struct cg_insn in;
    /* objdump's reading: fwait is part of the x87 instruction right after
     * it, or after prefixes when none came before it (and through a
     * second fwait); alone before anything else, or when it ends the
     * bytes given */
    static const unsigned char nop[] = { 0x9b, 0x90 }, before[] = { 0x66, 0x9b, 0xd9, 0x7c, 0x24, 0x02 },
                               around[] = { 0x66, 0x9b, 0x66, 0xd9, 0x7c, 0x24, 0x02 },
                               twice[] = { 0x9b, 0x9b, 0xdf, 0xe0 }, apart[] = { 0x9b, 0x9b, 0x66, 0xdf, 0xe0 };
    assert_int_equal(decode(nop, sizeof nop, sizeof nop, &in), 1);
    assert_int_equal(decode(before, sizeof before, sizeof before, &in), 6);
    assert_int_equal(in.op_off, 1);
    assert_int_equal(decode(around, sizeof around, sizeof around, &in), 2);
    assert_int_equal(decode(twice, sizeof twice, sizeof twice, &in), 4);
    assert_int_equal(in.op_off, 0);
    assert_int_equal(decode(apart, sizeof apart, sizeof apart, &in), 1);
    static const unsigned char fstcw[] = { 0x9b, 0xd9, 0x7c, 0x24, 0x02 };
    assert_int_equal(decode(fstcw, 1, 1, &in), 1);
    for (size_t avail = 2; avail < sizeof fstcw; avail++)
        assert_int_equal(decode(fstcw, avail, avail, &in), 0);
}

/* ---- nops and padding -------------------------------------------------------- */

static const struct xcase nops[] = {
    { "nop", B(0x90), 1, 0, OTHER, 0 },
    { "xchg %ax, %ax", B(0x66, 0x90), 2, 1, OTHER, 0 },
    { "pause", B(0xf3, 0x90), 2, 1, OTHER, 0 },
    { "nopl (%rax)", B(0x0f, 0x1f, 0x00), 3, 0, OTHER, 0 },
    { "nopl 0(%rax)", B(0x0f, 0x1f, 0x40, 0x00), 4, 0, OTHER, 0 },
    { "nopl 0(%rax,%rax)", B(0x0f, 0x1f, 0x44, 0x00, 0x00), 5, 0, OTHER, 0 },
    { "nopw 0(%rax,%rax)", B(0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00), 6, 1, OTHER, 0 },
    { "nopl 0L(%rax)", B(0x0f, 0x1f, 0x80, 0, 0, 0, 0), 7, 0, OTHER, 0 },
    { "nopl 0L(%rax,%rax)", B(0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0), 8, 0, OTHER, 0 },
    { "nopw 0L(%rax,%rax)", B(0x66, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0), 9, 1, OTHER, 0 },
    { "cs nopw", B(0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0), 10, 2, OTHER, 0 },
    { "data16 cs nopw", B(0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0), 11, 3, OTHER, 0 },
    { "data16 x4 cs nopw", B(0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0), 14, 6, OTHER, 0 },
    { "endbr64", B(0xf3, 0x0f, 0x1e, 0xfa), 4, 1, OTHER, 0 },
    { "14 prefixes and nop: 15 bytes",
      B(0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90), 15, 14, OTHER, 0 },
};

static void test_nops(void **state)
{
    (void)state;
    CHECK(nops);
}

/* ---- the 0f, 0f 38 and 0f 3a maps ------------------------------------------- */

static const struct xcase map0f[] = {
    { "cpuid", B(0x0f, 0xa2), 2, 0, OTHER, 0 },
    { "rdtsc", B(0x0f, 0x31), 2, 0, OTHER, 0 },
    { "rdtscp", B(0x0f, 0x01, 0xf9), 3, 0, OTHER, 0 },
    { "xgetbv", B(0x0f, 0x01, 0xd0), 3, 0, OTHER, 0 },
    { "xend", B(0x0f, 0x01, 0xd5), 3, 0, OTHER, 0 },
    { "sete %al", B(0x0f, 0x94, 0xc0), 3, 0, OTHER, 0 },
    { "cmove %rcx, %rax", B(0x48, 0x0f, 0x44, 0xc1), 4, 1, OTHER, 0 },
    { "movzbl %al, %eax", B(0x0f, 0xb6, 0xc0), 3, 0, OTHER, 0 },
    { "bswap %eax", B(0x0f, 0xc8), 2, 0, OTHER, 0 },
    { "bswap %rcx", B(0x48, 0x0f, 0xc9), 3, 1, OTHER, 0 },
    { "popcnt", B(0xf3, 0x48, 0x0f, 0xb8, 0xc8), 5, 2, OTHER, 0 },
    { "lzcnt", B(0xf3, 0x0f, 0xbd, 0xc8), 4, 1, OTHER, 0 },
    { "tzcnt (%rax)", B(0xf3, 0x0f, 0xbc, 0x08), 4, 1, OTHER, 0 },
    { "bt $3, %rax", B(0x48, 0x0f, 0xba, 0xe0, 0x03), 5, 1, OTHER, 0 },
    { "shld $3", B(0x48, 0x0f, 0xa4, 0xc1, 0x03), 5, 1, OTHER, 0 },
    { "shld %cl", B(0x0f, 0xa5, 0xc1), 3, 0, OTHER, 0 },
    { "pshufd $imm8", B(0x66, 0x0f, 0x70, 0xc1, 0x1b), 5, 1, OTHER, 0 },
    { "pshufw $imm8", B(0x0f, 0x70, 0xc1, 0x1b), 4, 0, OTHER, 0 },
    { "psrlq $imm8", B(0x66, 0x0f, 0x73, 0xd0, 0x03), 5, 1, OTHER, 0 },
    { "cmpps $imm8", B(0x0f, 0xc2, 0xc1, 0x01), 4, 0, OTHER, 0 },
    { "pinsrw $imm8", B(0x66, 0x0f, 0xc4, 0xc0, 0x02), 5, 1, OTHER, 0 },
    { "pextrw $imm8", B(0x66, 0x0f, 0xc5, 0xc0, 0x02), 5, 1, OTHER, 0 },
    { "shufps $imm8", B(0x0f, 0xc6, 0xc1, 0x1b), 4, 0, OTHER, 0 },
    { "movaps", B(0x0f, 0x28, 0xc1), 3, 0, OTHER, 0 },
    { "movdqu (%rsp)", B(0xf3, 0x0f, 0x6f, 0x04, 0x24), 5, 1, OTHER, 0 },
    { "emms", B(0x0f, 0x77), 2, 0, OTHER, 0 },
    { "rdrand %eax", B(0x0f, 0xc7, 0xf0), 3, 0, OTHER, 0 },
    { "rdseed %rax", B(0x48, 0x0f, 0xc7, 0xf8), 4, 1, OTHER, 0 },
    { "lock cmpxchg16b (%rsi)", B(0xf0, 0x48, 0x0f, 0xc7, 0x0e), 5, 2, OTHER, 0 },
    { "mfence", B(0x0f, 0xae, 0xf0), 3, 0, OTHER, 0 },
    { "clflushopt (%rax)", B(0x66, 0x0f, 0xae, 0x38), 4, 1, OTHER, 0 },
    { "rdfsbase %rax", B(0xf3, 0x48, 0x0f, 0xae, 0xc0), 5, 2, OTHER, 0 },
    { "prefetchw (%rax)", B(0x0f, 0x0d, 0x08), 3, 0, OTHER, 0 },
    { "prefetchnta 64(%rax)", B(0x0f, 0x18, 0x40, 0x40), 4, 0, OTHER, 0 },
    { "vmread", B(0x0f, 0x78, 0xc1), 3, 0, OTHER, 0 },
    { "extrq $4, $8: two imm8", B(0x66, 0x0f, 0x78, 0xc1, 0x08, 0x04), 6, 1, OTHER, 0 },
    { "insertq $4, $8: two imm8", B(0xf2, 0x0f, 0x78, 0xca, 0x08, 0x04), 6, 1, OTHER, 0 },
    { "3DNow! pfadd: its opcode is an imm8", B(0x0f, 0x0f, 0xc1, 0x9e), 4, 0, OTHER, 0 },
    { "PadLock xsha256", B(0xf3, 0x0f, 0xa6, 0xd0), 4, 1, OTHER, 0 },
    { "PadLock xcrypt-cbc", B(0xf3, 0x0f, 0xa7, 0xd0), 4, 1, OTHER, 0 },
    { "pshufb", B(0x66, 0x0f, 0x38, 0x00, 0xc1), 5, 1, OTHER, 0 },
    { "movbe (%rax), %ecx", B(0x0f, 0x38, 0xf0, 0x08), 4, 0, OTHER, 0 },
    { "crc32q (%rax), %rax", B(0xf2, 0x48, 0x0f, 0x38, 0xf1, 0x00), 6, 2, OTHER, 0 },
    { "adcx", B(0x66, 0x48, 0x0f, 0x38, 0xf6, 0xc8), 6, 2, OTHER, 0 },
    { "sha256rnds2", B(0x0f, 0x38, 0xcb, 0xc1), 4, 0, OTHER, 0 },
    { "aesenc", B(0x66, 0x0f, 0x38, 0xdc, 0xc1), 5, 1, OTHER, 0 },
    { "palignr $imm8", B(0x66, 0x0f, 0x3a, 0x0f, 0xc1, 0x03), 6, 1, OTHER, 0 },
    { "pcmpestri $imm8, (%rax)", B(0x66, 0x0f, 0x3a, 0x61, 0x00, 0x1b), 6, 1, OTHER, 0 },
    { "pclmulqdq $imm8", B(0x66, 0x0f, 0x3a, 0x44, 0xc1, 0x11), 6, 1, OTHER, 0 },
    { "roundsd $imm8, x(%rip)", B(0x66, 0x0f, 0x3a, 0x0b, 0x05, 1, 2, 3, 4, 0x04), 10, 1, OTHER, 0 },
};

static void test_0f_maps(void **state)
{
    (void)state;
    CHECK(map0f);
}

/* ---- VEX, EVEX, XOP -------------------------------------------------------- */

static const struct xcase vex[] = {
    { "vzeroupper: no ModRM", B(0xc5, 0xf8, 0x77), 3, 0, OTHER, 0 },
    { "vzeroall", B(0xc5, 0xfc, 0x77), 3, 0, OTHER, 0 },
    { "vzeroupper, 3-byte VEX", B(0xc4, 0xe1, 0x78, 0x77), 4, 0, OTHER, 0 },
    { "vpshufd $imm8 (map 1)", B(0xc5, 0xfd, 0x70, 0xc1, 0x1b), 5, 0, OTHER, 0 },
    { "vpsrld $imm8 (map 1)", B(0xc5, 0xfd, 0x72, 0xd1, 0x03), 5, 0, OTHER, 0 },
    { "vcmpps $imm8 (map 1)", B(0xc5, 0xec, 0xc2, 0xc1, 0x01), 5, 0, OTHER, 0 },
    { "vaddps: no imm8 (map 1)", B(0xc4, 0x41, 0x34, 0x58, 0xd0), 5, 0, OTHER, 0 },
    { "vmovdqa x(%rip)", B(0xc5, 0xf9, 0x6f, 0x05, 1, 2, 3, 4), 8, 0, OTHER, 0 },
    { "kmovw %k1, %eax", B(0xc5, 0xf8, 0x93, 0xc1), 4, 0, OTHER, 0 },
    { "vpermq $imm8 (map 3)", B(0xc4, 0xe3, 0xfd, 0x00, 0xc1, 0x1b), 6, 0, OTHER, 0 },
    { "vpblendd $imm8, (%rax,%rbx,4)", B(0xc4, 0xe3, 0x75, 0x02, 0x04, 0x98, 0x03), 7, 0, OTHER, 0 },
    { "vpextrd $imm8, x(%rip)", B(0xc4, 0xe3, 0x79, 0x16, 0x05, 1, 2, 3, 4, 0x01), 10, 0, OTHER, 0 },
    { "vgatherdps (map 2)", B(0xc4, 0xe2, 0x6d, 0x92, 0x04, 0x88), 6, 0, OTHER, 0 },
    { "vfmadd231pd (map 2)", B(0xc4, 0xe2, 0xf5, 0xb8, 0xc2), 5, 0, OTHER, 0 },
    { "andn (BMI)", B(0xc4, 0xe2, 0x78, 0xf2, 0xc1), 5, 0, OTHER, 0 },
    { "shlx (BMI2)", B(0xc4, 0xe2, 0xf9, 0xf7, 0xc1), 5, 0, OTHER, 0 },
    { "rorx $imm8 (map 3)", B(0xc4, 0xe3, 0xfb, 0xf0, 0xc1, 0x05), 6, 0, OTHER, 0 },
    { "tilezero (AMX)", B(0xc4, 0xe2, 0x7b, 0x49, 0xc8), 5, 0, OTHER, 0 },
    { "cs vzeroupper: a segment prefix may come first", B(0x2e, 0xc5, 0xf8, 0x77), 4, 1, OTHER, 0 },
    { "vmovdqu64 (%rax), %zmm0{%k1}{z}", B(0x62, 0xf1, 0xfe, 0xc9, 0x6f, 0x00), 6, 0, OTHER, 0 },
    { "vaddps (%rax){1to16}", B(0x62, 0xf1, 0x74, 0x58, 0x58, 0x10), 6, 0, OTHER, 0 },
    { "vaddps {rn-sae}", B(0x62, 0xf1, 0x6c, 0x18, 0x58, 0xd9), 6, 0, OTHER, 0 },
    { "vpternlogd $imm8 (map 3)", B(0x62, 0xf3, 0x6d, 0x48, 0x25, 0xd9, 0x96), 7, 0, OTHER, 0 },
    { "vcmpps $imm8, disp8*N (map 1)", B(0x62, 0xf1, 0x6c, 0x48, 0xc2, 0x50, 0x01, 0x01), 8, 0, OTHER, 0 },
    { "vpinsrw $imm8 (map 1)", B(0x62, 0xe1, 0x75, 0x00, 0xc4, 0xd0, 0x02), 7, 0, OTHER, 0 },
    { "vpsrlq $imm8 (map 1)", B(0x62, 0xf1, 0x8d, 0x40, 0x73, 0xd1, 0x03), 7, 0, OTHER, 0 },
    { "vextracti64x4 $imm8, disp8(%rsp)", B(0x62, 0xf3, 0xfd, 0x48, 0x3b, 0x44, 0x24, 0x01, 0x01), 9, 0, OTHER, 0 },
    { "vmovaps x(%rip), %zmm0", B(0x62, 0xf1, 0x7c, 0x48, 0x28, 0x05, 1, 2, 3, 4), 10, 0, OTHER, 0 },
    { "vaddph (FP16, map 5)", B(0x62, 0xf5, 0x6c, 0x48, 0x58, 0xd9), 6, 0, OTHER, 0 },
    { "vmovsh (map 5)", B(0x62, 0xf5, 0x7e, 0x08, 0x10, 0x08), 6, 0, OTHER, 0 },
    { "vfmadd231ph (map 6)", B(0x62, 0xf6, 0x75, 0x48, 0xb8, 0x10), 6, 0, OTHER, 0 },
    { "vcmpph $imm8 (map 3)", B(0x62, 0xf3, 0x6c, 0x48, 0xc2, 0xc9, 0x01), 7, 0, OTHER, 0 },
    { "vaesenc %zmm (map 2)", B(0x62, 0xf2, 0x6d, 0x48, 0xdc, 0xd9), 6, 0, OTHER, 0 },
    { "XOP bextr $imm32 (map a)", B(0x8f, 0xea, 0x78, 0x10, 0xc8, 0x34, 0x12, 0x00, 0x00), 9, 0, OTHER, 0 },
    { "XOP blcfill (map 9)", B(0x8f, 0xe9, 0xf0, 0x01, 0xc8), 5, 0, OTHER, 0 },
    { "XOP vprotd $imm8 (map 8)", B(0x8f, 0xe8, 0x78, 0xc2, 0xd1, 0x03), 6, 0, OTHER, 0 },
    { "XOP vpcmov (map 8)", B(0x8f, 0xe8, 0x60, 0xa2, 0xe2, 0x10), 6, 0, OTHER, 0 },
};

static void test_vex_evex_xop(void **state)
{
    (void)state;
    CHECK(vex);
}

/* ---- refused --------------------------------------------------------------- */

static const struct xcase invalid[] = {
    { "06 push %es", B(0x06), 0, 0, 0, 0 },
    { "07 pop %es", B(0x07), 0, 0, 0, 0 },
    { "0e push %cs", B(0x0e), 0, 0, 0, 0 },
    { "16 push %ss", B(0x16), 0, 0, 0, 0 },
    { "17 pop %ss", B(0x17), 0, 0, 0, 0 },
    { "1e push %ds", B(0x1e), 0, 0, 0, 0 },
    { "1f pop %ds", B(0x1f), 0, 0, 0, 0 },
    { "27 daa", B(0x27), 0, 0, 0, 0 },
    { "2f das", B(0x2f), 0, 0, 0, 0 },
    { "37 aaa", B(0x37), 0, 0, 0, 0 },
    { "3f aas", B(0x3f), 0, 0, 0, 0 },
    { "60 pusha", B(0x60), 0, 0, 0, 0 },
    { "61 popa", B(0x61), 0, 0, 0, 0 },
    { "82 (80's alias)", B(0x82, 0xc0, 0x01), 0, 0, 0, 0 },
    { "9a far call", B(0x9a, 1, 2, 3, 4, 5, 6), 0, 0, 0, 0 },
    { "ce into", B(0xce), 0, 0, 0, 0 },
    { "d4 aam", B(0xd4, 0x0a), 0, 0, 0, 0 },
    { "d5 aad", B(0xd5, 0x0a), 0, 0, 0, 0 },
    { "d6 salc", B(0xd6), 0, 0, 0, 0 },
    { "ea far jmp", B(0xea, 1, 2, 3, 4, 5, 6), 0, 0, 0, 0 },
    { "0f 04", B(0x0f, 0x04), 0, 0, 0, 0 },
    { "0f 0a", B(0x0f, 0x0a), 0, 0, 0, 0 },
    { "0f 24 (mov tr)", B(0x0f, 0x24, 0xc0), 0, 0, 0, 0 },
    { "0f 36", B(0x0f, 0x36), 0, 0, 0, 0 },
    { "0f 39", B(0x0f, 0x39), 0, 0, 0, 0 },
    { "0f 7a", B(0x0f, 0x7a, 0xc0), 0, 0, 0, 0 },
    { "0f a6 on memory", B(0x0f, 0xa6, 0x00), 0, 0, 0, 0 },
    { "fe /2", B(0xfe, 0xd0), 0, 0, 0, 0 },
    { "ff /7", B(0xff, 0x38), 0, 0, 0, 0 },
    { "ff /3 on a register", B(0xff, 0xd8), 0, 0, 0, 0 },
    { "ff /5 on a register", B(0xff, 0xe8), 0, 0, 0, 0 },
    { "c6 /1", B(0xc6, 0xc8, 0x01), 0, 0, 0, 0 },
    { "c6 /7 on memory", B(0xc6, 0x38, 0x01), 0, 0, 0, 0 },
    { "c7 /7 rm 1", B(0xc7, 0xf9, 1, 2, 3, 4), 0, 0, 0, 0 },
    { "8f /2: XOP map 16", B(0x8f, 0x10, 0x78, 0xc2, 0xd1), 0, 0, 0, 0 },
    { "XOP map b", B(0x8f, 0xeb, 0x78, 0xc2, 0xd1, 0x03), 0, 0, 0, 0 },
    { "66 before VEX", B(0x66, 0xc5, 0xf8, 0x77), 0, 0, 0, 0 },
    { "REX before VEX", B(0x48, 0xc5, 0xf8, 0x77), 0, 0, 0, 0 },
    { "f3 before VEX", B(0xf3, 0xc4, 0xe2, 0x78, 0xf2, 0xc1), 0, 0, 0, 0 },
    { "lock before VEX", B(0xf0, 0xc5, 0xf8, 0x77), 0, 0, 0, 0 },
    { "f2 before EVEX", B(0xf2, 0x62, 0xf1, 0x6c, 0x48, 0x58, 0xd9), 0, 0, 0, 0 },
    { "66 before XOP", B(0x66, 0x8f, 0xe8, 0x78, 0xc2, 0xd1, 0x03), 0, 0, 0, 0 },
    { "VEX map 0", B(0xc4, 0xe0, 0x78, 0x58, 0xc1), 0, 0, 0, 0 },
    { "VEX map 4", B(0xc4, 0xe4, 0x78, 0x58, 0xc1), 0, 0, 0, 0 },
    { "EVEX map 0", B(0x62, 0xf0, 0x6c, 0x48, 0x58, 0xd9), 0, 0, 0, 0 },
    { "EVEX map 4 (APX)", B(0x62, 0xf4, 0x6c, 0x48, 0x58, 0xd9), 0, 0, 0, 0 },
    { "EVEX map 7", B(0x62, 0xf7, 0x6c, 0x48, 0x58, 0xd9), 0, 0, 0, 0 },
    { "EVEX with P0 bit 3 (APX)", B(0x62, 0xf9, 0x6c, 0x48, 0x58, 0xd9), 0, 0, 0, 0 },
    { "EVEX without P1 bit 2", B(0x62, 0xf1, 0x68, 0x48, 0x58, 0xd9), 0, 0, 0, 0 },
    { "15 prefixes and nop: 16 bytes",
      B(0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90), 0, 0, 0, 0 },
    { "movabs with 6 prefixes: 16 bytes", B(0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8), 0,
      0, 0, 0 },
    { "prefixes alone", B(0x66, 0xf3, 0x48), 0, 0, 0, 0 },
};

static void test_invalid(void **state)
{
    (void)state;
    check_cases(invalid, sizeof invalid / sizeof invalid[0]);
    struct cg_insn in;
    /* nothing to read: p is not touched */
    assert_int_equal(cg_insn_decode(NULL, 0, ADDR, &in), 0);
}

/* ---- random bytes ---------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random bytes, and random bytes after a common prefix or escape: whatever
 * they are, the length fits what was given and 15, and the same
 * instruction decodes from exactly its own bytes and from none fewer (but
 * a fwait, with its prefixes, is one when what follows it is cut off).
 * Under the sanitizer build, a read past the bytes given fails the test. */
static void test_random_bytes(void **state)
{
    (void)state;
    static const unsigned char starts[][3] = {
        { 0 },    { 0x0f }, { 0x0f, 0x38 }, { 0x0f, 0x3a }, { 0xc5 }, { 0xc4 }, { 0x62 },
        { 0x8f }, { 0x66 }, { 0x48 },       { 0xf3, 0x0f }, { 0xff }, { 0xd9 },
    };
    static const unsigned nstart[] = { 0, 1, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1 };
    unsigned decoded = 0;
    for (unsigned round = 0; round < 200000; round++) {
        unsigned char b[CG_INSN_MAX + 4];
        unsigned s = round % (sizeof nstart / sizeof nstart[0]);
        for (unsigned k = 0; k < sizeof b; k++)
            b[k] = (unsigned char)rng();
        memcpy(b, starts[s], nstart[s]);
        size_t avail = 1 + rng() % sizeof b;
        struct cg_insn in, again;
        unsigned len = decode(b, avail, avail, &in);
        if (!len)
            continue;
        decoded++;
        assert_true(len <= avail && len <= CG_INSN_MAX);
        assert_true(in.op_off < len);
        assert_true(!in.modrm || (in.modrm_off > in.op_off && in.modrm_off < len));
        assert_int_equal(decode(b, len, len, &again), len);
        assert_memory_equal(&in, &again, sizeof in);
        for (size_t shorter = 0; shorter < len; shorter++) {
            unsigned l = decode(b, shorter, shorter, &again);
            assert_true(l == 0 || b[l - 1] == 0x9b);
        }
    }
    /* most of it decodes: the test tested something */
    assert_true(decoded > 100000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_sites_and_branches),
        cmocka_unit_test(test_rip_relative_under_addr32_is_cut_to_32_bits),
        cmocka_unit_test(test_targets_wrap_around),
        cmocka_unit_test(test_prefixes_and_immediates),
        cmocka_unit_test(test_modrm_sib_displacement),
        cmocka_unit_test(test_fwait),
        cmocka_unit_test(test_nops),
        cmocka_unit_test(test_0f_maps),
        cmocka_unit_test(test_vex_evex_xop),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
