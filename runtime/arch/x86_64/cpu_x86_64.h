/* What the runtime needs of x86-64 that is not C (base layer), included
 * through cpu.h, which picks the architecture's header. Its counterpart
 * for 64-bit ARM is arch/aarch64/cpu_aarch64.h: the two define the same
 * names, so that the code that uses them says nothing of either.
 *
 *  - the CPU's counter for the exact clock (clock.h): the time-stamp
 *    counter, RDTSC;
 *  - one counter incremented by one instruction (the counting hooks);
 *  - a signal's registers in its ucontext;
 *  - the call instruction that returns to an address (callsite.c);
 *  - glibc's sigreturn trampoline (a signal handler's return address);
 *  - the stubs the runtime wraps vfork and setjmp with, and the stack
 *    pointer a jmp_buf restores (interpose.c, nonlocal.c);
 *  - the runtime's own jump back to a point it set (symbols/symsession.c). */
#ifndef CG_CPU_X86_64_H
#define CG_CPU_X86_64_H

#include <cpuid.h>
#include <stdint.h>
#include <string.h>
#include <x86intrin.h>

#include "compiler.h"

#define CG_CPU_NAME "x86-64"

/* Hook calls are taken back by changing their instructions
 * (arch/x86_64/sites.c, patch.c; docs/internals/takeback.md). */
#define CG_CPU_HAVE_TAKEBACK 1
/* ... by one byte, the instruction's first (patch.h's forms), stored by
 * one locked instruction; the CPU keeps its instruction fetch coherent
 * with stores itself (docs/internals/takeback.md): nothing to do after */
#define CG_CPU_SITE_BYTES 1
#define CG_CPU_SITE_NEEDS_SYNC 0
/* The counting hooks (CGPROF_STACKS=unwind, hook/counting.h) serve here. */
#define CG_CPU_HAVE_COUNTING 1
/* ... and the hook call sites are recognised (arch/x86_64/sites.c) */
#define CG_CPU_HAVE_SITES 1
/* The lengths of a hook call site (patch.h's forms: CG_SITE_CALL, e8 rel32,
 * 5 bytes; the others 6, ff 15 disp32 as the call through the GOT): where
 * the call that returns to an address begins. */
#define CG_CPU_SITE_CALL_MIN 5
#define CG_CPU_SITE_CALL_MAX 6
#define CG_CPU_SITE_CALL_LEN(form) ((form) == CG_SITE_CALL ? 5u : 6u)

/* ---- the counter of the exact clock ----------------------------------------
 * RDTSC: about 11 ns on the KVM guests the benchmarks ran on, against 27 ns
 * for CLOCK_MONOTONIC through the vDSO. Its rate is not given by the CPU in
 * a form the runtime trusts: clock.c measures it against CLOCK_MONOTONIC
 * (cg_cpu_counter_hz() 0). Not serialised (no LFENCE, no RDTSCP): a reading
 * may move by a few instructions, which the clock's users allow for (a
 * segment never shorter than zero). */
#define CG_CPU_HAVE_COUNTER 1
/* the counter as a part's Clock line names it */
#define CG_CPU_COUNTER_NAME "invariant TSC"
/* the register that states its rate (none) */
#define CG_CPU_COUNTER_RATE ""

static inline CG_NOINSTR uint64_t cg_cpu_counter(void)
{
    return __rdtsc();
}

/* Whether the counter runs at a constant rate whatever the core's
 * frequency and power state: the invariant TSC (CPUID 0x80000007 EDX bit
 * 8). Without it, CLOCK_MONOTONIC. */
static inline CG_NOINSTR int cg_cpu_counter_invariant(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return 0;
    return (d >> 8) & 1;
}

/* The counter's rate as the CPU states it, 0 when it does not: measured. */
static inline CG_NOINSTR uint64_t cg_cpu_counter_hz(void)
{
    return 0;
}

/* The counter read where its reading must not move across the code around
 * it (the calibration's pairs of readings). RDTSC as the hooks read it:
 * the pairs of readings are checked for length instead (clock.c). */
static inline CG_NOINSTR uint64_t cg_cpu_counter_ordered(void)
{
    return __rdtsc();
}

/* ---- a count a signal handler may also increment -----------------------------
 * One instruction, so that a handler that interrupts it finds the count
 * before or after it, never in the middle: its own increment is kept. Not
 * a locked one: only this thread writes it. */
static inline CG_NOINSTR void cg_cpu_count_one(uint64_t *count)
{
    __asm__ volatile("incq %0" : "+m"(*count));
}

/* ---- the call frame address ------------------------------------------------------
 * CG_CPU_CFA(): the stack pointer before the call that entered the function
 * this is expanded in (an always-inline function's: its host's), the hooks'
 * frame key: __builtin_dwarf_cfa, the same in gcc and clang here. */
#define CG_CPU_CFA() ((uintptr_t)__builtin_dwarf_cfa())

/* ---- a signal's registers (ucontext_t, <ucontext.h> with _GNU_SOURCE) -------- */
#define CG_UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define CG_UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RSP])
#define CG_UC_FP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RBP])

/* ---- the call before a return address ----------------------------------------
 * Length of an indirect call "FF /2" (without prefix) whose ModRM byte is m
 * and, if present, SIB byte is sib; 0 if m is not a call's ModRM. */
static inline CG_NOINSTR unsigned cg_cpu_ff2_length(unsigned char m, unsigned char sib)
{
    unsigned mod = m >> 6, reg = (m >> 3) & 7, rm = m & 7;
    if (reg != 2)
        return 0;
    if (mod == 3)
        return 2; /* call *%reg */
    unsigned len = 2;
    if (rm == 4) {
        len++; /* SIB */
        if (mod == 0 && (sib & 7) == 5)
            len += 4;
    } else if (mod == 0 && rm == 5) {
        len += 4; /* rip-relative */
    }
    if (mod == 1)
        len += 1;
    else if (mod == 2)
        len += 4;
    return len;
}

/* How many bytes before site cg_cpu_call_before reads. */
#define CG_CPU_CALL_WINDOW 8

/* The address of the call instruction that returns to site (a call of
 * callee), given the CG_CPU_CALL_WINDOW bytes before site (readable), or 0
 * when no call ends there (a signal handler's frame, whose return address
 * is the sigreturn trampoline). The lengths vary: a direct call rel32 (5
 * bytes), or an indirect one with its ModRM, SIB and displacement, an
 * optional REX prefix before it. */
static inline CG_NOINSTR uintptr_t cg_cpu_call_before(uintptr_t site, uintptr_t callee)
{
    const unsigned char *p = (const unsigned char *)site;
    int32_t rel;
    memcpy(&rel, p - 4, sizeof rel);
    int e8 = p[-5] == 0xe8;
    if (e8 && site + (uintptr_t)(intptr_t)rel == callee)
        return site - 5; /* call rel32, straight to the callee */
    for (unsigned len = 2; len <= 7; len++) {
        const unsigned char *op = p - len;
        if (op[0] != 0xff || cg_cpu_ff2_length(op[1], len > 2 ? op[2] : 0) != len)
            continue;
        /* an optional REX prefix belongs to the instruction */
        return (op[-1] & 0xf0) == 0x40 ? site - len - 1 : site - len;
    }
    if (e8)
        return site - 5; /* call rel32 through a PLT stub or a thunk */
    return 0;
}

/* ---- a function's first instructions (hook/sample.c) -------------------------
 * The decoder of one instruction (x86insn.h), a PLT entry's GOT slot, and
 * whether the bytes at a call site are still a call (a hook call taken back
 * is a cmp or a lea: patch.h). */
#define CG_CPU_DECODE cg_insn_decode

/* The bytes cg_cpu_plt_slot reads. */
#define CG_CPU_PLT_BYTES 11

/* The GOT slot that a PLT entry at pc, whose first CG_CPU_PLT_BYTES bytes
 * are b, jumps through ([endbr64] [bnd] jmp *disp32(%rip)), or 0 when pc is
 * not one. */
static inline CG_NOINSTR uintptr_t cg_cpu_plt_slot(const unsigned char *b, uintptr_t pc)
{
    unsigned i = 0;
    if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) /* endbr64 */
        i = 4;
    if (b[i] == 0xf2) /* bnd */
        i++;
    if (b[i] != 0xff || b[i + 1] != 0x25) /* jmp *disp32(%rip) */
        return 0;
    int32_t disp;
    memcpy(&disp, b + i + 2, sizeof disp);
    return pc + i + 6 + (uintptr_t)(intptr_t)disp;
}

/* The bytes cg_cpu_is_call reads, and whether they begin a call (e8 rel32,
 * ff /2). */
#define CG_CPU_CALL_BYTES 1
static inline CG_NOINSTR int cg_cpu_is_call(const unsigned char *b)
{
    return b[0] == 0xe8 || b[0] == 0xff;
}

/* Whether the GOT slot value v (its first CG_CPU_PLT_UNBOUND_BYTES bytes at
 * b) is lazy binding's first target, the PLT entry's own push of its
 * relocation index ([endbr64] push imm32): the slot is not bound yet. */
#define CG_CPU_PLT_UNBOUND_BYTES 9
static inline CG_NOINSTR int cg_cpu_plt_unbound(const unsigned char *b)
{
    unsigned i = b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa ? 4 : 0;
    return b[i] == 0x68;
}

/* ---- glibc's sigreturn trampoline ---------------------------------------------
 * __restore_rt: mov $15, %rax; syscall. The return address the kernel
 * gives a signal handler, which glibc's sigaction installs (SA_RESTORER). */
#define CG_CPU_SIGRETURN {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}

/* ---- vfork -----------------------------------------------------------------------
 * CG_CPU_VFORK_ASM(name): the text of the vfork wrapper `name`, which keeps
 * nothing on the stack across the real vfork (interpose.c says why): the
 * return address goes to cg_vfork_before (which stashes it per thread and
 * returns the real vfork, or NULL), the real vfork is called, then
 * cg_vfork_after(result) gives back the return address (%rax) and the
 * result (%rdx); cg_vfork_refused() the return address when vfork was not
 * called (the result -1, errno set). The CFI says where the return address
 * is at each step (in %rdi, then nowhere an unwinder can find: the end of
 * the stack for a backtrace). */
#define CG_CPU_HAVE_VFORK_STUB 1
#define CG_CPU_VFORK_ASM(name)                                                                               \
    ".text\n"                                                                                                \
    ".globl " name "\n"                                                                                      \
    ".type " name ", @function\n"                                                                            \
    name ":\n"                                                                                               \
    "    .cfi_startproc\n"                                                                                   \
    "    popq %rdi\n"                                                                                        \
    "    .cfi_adjust_cfa_offset -8\n"                                                                        \
    "    .cfi_register %rip, %rdi\n"                                                                         \
    "    call cg_vfork_before\n"                                                                             \
    "    .cfi_undefined %rip\n"                                                                              \
    "    testq %rax, %rax\n"                                                                                 \
    "    jz 1f\n"                                                                                            \
    "    call *%rax\n"                                                                                       \
    "    movq %rax, %rdi\n"                                                                                  \
    "    call cg_vfork_after\n"                                                                              \
    "    .cfi_remember_state\n"                                                                              \
    "    pushq %rax\n"                                                                                       \
    "    .cfi_adjust_cfa_offset 8\n"                                                                         \
    "    .cfi_offset %rip, -8\n"                                                                             \
    "    movq %rdx, %rax\n"                                                                                  \
    "    ret\n"                                                                                              \
    "    .cfi_restore_state\n"                                                                               \
    "1:  call cg_vfork_refused\n"                                                                            \
    "    pushq %rax\n"                                                                                       \
    "    .cfi_adjust_cfa_offset 8\n"                                                                         \
    "    .cfi_offset %rip, -8\n"                                                                             \
    "    movq $-1, %rax\n"                                                                                   \
    "    ret\n"                                                                                              \
    "    .cfi_endproc\n"                                                                                     \
    ".size " name ", .-" name "\n"

/* ---- setjmp ------------------------------------------------------------------------
 * CG_CPU_SETJMP_ASM(prefix): the setjmp stubs prefix setjmp, _setjmp and
 * __sigsetjmp (which = 0, 1, 2), and their common part: save the argument
 * registers, ask cg_setjmp_seen(env, sp, which), restore them and jump to
 * the C library's function it returns, so that it sees its caller's stack
 * and return address as if it had been called directly. The stack pointer
 * the caller will have after the return is the stub's entry one plus 8 (the
 * return address). */
#define CG_CPU_SETJMP_STUB(name, which)                                                                      \
    ".globl " name "\n.type " name ",@function\n" name ":\n"                                                 \
    "\tendbr64\n\tmov $" which ", %edx\n\tjmp cg_setjmp_stub\n"                                                \
    ".size " name ",.-" name "\n"
#define CG_CPU_HAVE_SETJMP_STUB 1
#define CG_CPU_SETJMP_ASM(prefix)                                                                            \
    ".text\n"                                                                                                \
    ".p2align 4\n"                                                                                           \
    CG_CPU_SETJMP_STUB(prefix "setjmp", "0")                                                                 \
    CG_CPU_SETJMP_STUB(prefix "_setjmp", "1")                                                                \
    CG_CPU_SETJMP_STUB(prefix "__sigsetjmp", "2")                                                            \
    ".type cg_setjmp_stub,@function\n"                                                                       \
    "cg_setjmp_stub:\n"                                                                                      \
    "\t.cfi_startproc\n"                                                                                     \
    "\tpush %rdi\n\t.cfi_adjust_cfa_offset 8\n"                                                              \
    "\tpush %rsi\n\t.cfi_adjust_cfa_offset 8\n"                                                              \
    "\tsub $8, %rsp\n\t.cfi_adjust_cfa_offset 8\n"                                                           \
    "\tlea 32(%rsp), %rsi\n"                                                                                 \
    "\tcall cg_setjmp_seen\n"                                                                                \
    "\tadd $8, %rsp\n\t.cfi_adjust_cfa_offset -8\n"                                                          \
    "\tpop %rsi\n\t.cfi_adjust_cfa_offset -8\n"                                                              \
    "\tpop %rdi\n\t.cfi_adjust_cfa_offset -8\n"                                                              \
    "\tjmp *%rax\n"                                                                                          \
    "\t.cfi_endproc\n"                                                                                       \
    ".size cg_setjmp_stub,.-cg_setjmp_stub\n"

/* The stack pointer a glibc x86-64 jmp_buf restores: stored mangled
 * (PTR_MANGLE: xor with the thread's pointer guard at %fs:0x30, then
 * rotated left by 17), in its 7th word (JB_RSP). real_setjmp (the C
 * library's _setjmp, which aarch64 learns its guard with) is not needed. */
static inline CG_NOINSTR uintptr_t cg_cpu_jmp_buf_sp(const void *env, void *real_setjmp)
{
    (void)real_setjmp;
    uintptr_t v, guard;
    memcpy(&v, (const char *)env + 6 * sizeof(long), sizeof v);
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    v = (v >> 17) | (v << (64 - 17));
    return v ^ guard;
}

/* ---- the runtime's own jump -----------------------------------------------------
 * cg_cpu_jump_set(buf) returns 0, and returns again, 1, when
 * cg_cpu_jump_go(buf) is called below it (deeper in the same thread's
 * stack, the setting function not yet returned): a setjmp and longjmp of
 * the runtime's own, for the symbol reader's way out of libdw
 * (symsession.c says why neither the C library's nor __builtin_setjmp).
 * Only registers and the buffer: no signal mask, no system call, no lock,
 * so async-signal-safe. The buffer keeps what a call must keep (the SysV
 * ABI's callee-saved registers: rbx, rbp, r12-r15), the stack pointer and
 * the return address, and the shadow stack pointer (CET): where shadow
 * stacks are on (RDSSP gives 0 where they are not: it is a NOP then), the
 * jump pops the entries of the frames it leaves, as glibc's longjmp does,
 * and one more, the set's own return; then it goes to the return address
 * by a jump, whose target the compiler marks (ENDBR64 after a call of a
 * returns_twice function, with -fcf-protection). Emitted once
 * (CG_CPU_JUMP_ASM, base/util.c). */
#define CG_CPU_HAVE_JUMP 1
typedef uintptr_t cg_cpu_jump_buf[9];
__attribute__((returns_twice, visibility("hidden"))) int cg_cpu_jump_set(cg_cpu_jump_buf buf);
__attribute__((noreturn, visibility("hidden"))) void cg_cpu_jump_go(cg_cpu_jump_buf buf);
#define CG_CPU_JUMP_ASM                                                                                      \
    ".text\n"                                                                                                \
    ".globl cg_cpu_jump_set\n.hidden cg_cpu_jump_set\n.type cg_cpu_jump_set,@function\n"                      \
    ".p2align 4\n"                                                                                           \
    "cg_cpu_jump_set:\n"                                                                                     \
    "\t.cfi_startproc\n"                                                                                     \
    "\tendbr64\n"                                                                                            \
    "\tmov %rbx, 0(%rdi)\n"                                                                                  \
    "\tmov %rbp, 8(%rdi)\n"                                                                                  \
    "\tmov %r12, 16(%rdi)\n"                                                                                 \
    "\tmov %r13, 24(%rdi)\n"                                                                                 \
    "\tmov %r14, 32(%rdi)\n"                                                                                 \
    "\tmov %r15, 40(%rdi)\n"                                                                                 \
    "\tlea 8(%rsp), %rdx\n"                                                                                  \
    "\tmov %rdx, 48(%rdi)\n"                                                                                 \
    "\tmov (%rsp), %rdx\n"                                                                                   \
    "\tmov %rdx, 56(%rdi)\n"                                                                                 \
    "\txor %eax, %eax\n"                                                                                     \
    "\trdsspq %rax\n"                                                                                        \
    "\tmov %rax, 64(%rdi)\n"                                                                                 \
    "\txor %eax, %eax\n"                                                                                     \
    "\tret\n"                                                                                                \
    "\t.cfi_endproc\n"                                                                                       \
    ".size cg_cpu_jump_set,.-cg_cpu_jump_set\n"                                                              \
    ".globl cg_cpu_jump_go\n.hidden cg_cpu_jump_go\n.type cg_cpu_jump_go,@function\n"                         \
    ".p2align 4\n"                                                                                           \
    "cg_cpu_jump_go:\n"                                                                                      \
    "\t.cfi_startproc\n"                                                                                     \
    "\tendbr64\n"                                                                                            \
    "\txor %eax, %eax\n"                                                                                     \
    "\trdsspq %rax\n"                                                                                        \
    "\ttest %rax, %rax\n"                                                                                    \
    "\tjz 3f\n"                                                                                              \
    "\tmov 64(%rdi), %rcx\n"                                                                                 \
    "\tsub %rax, %rcx\n"                                                                                     \
    "\tshr $3, %rcx\n"                                                                                       \
    "\tinc %rcx\n"                                                                                           \
    "\tmov $255, %edx\n"                                                                                     \
    "1:\tcmp %rdx, %rcx\n"                                                                                   \
    "\tjbe 2f\n"                                                                                             \
    "\tincsspq %rdx\n"                                                                                       \
    "\tsub %rdx, %rcx\n"                                                                                     \
    "\tjmp 1b\n"                                                                                             \
    "2:\tincsspq %rcx\n"                                                                                     \
    "3:\tmov 0(%rdi), %rbx\n"                                                                                \
    "\tmov 8(%rdi), %rbp\n"                                                                                  \
    "\tmov 16(%rdi), %r12\n"                                                                                 \
    "\tmov 24(%rdi), %r13\n"                                                                                 \
    "\tmov 32(%rdi), %r14\n"                                                                                 \
    "\tmov 40(%rdi), %r15\n"                                                                                 \
    "\tmov 48(%rdi), %rsp\n"                                                                                 \
    "\tmov $1, %eax\n"                                                                                       \
    "\tjmp *56(%rdi)\n"                                                                                      \
    "\t.cfi_endproc\n"                                                                                       \
    ".size cg_cpu_jump_go,.-cg_cpu_jump_go\n"

#endif
