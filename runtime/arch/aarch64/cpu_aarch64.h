/* What the runtime needs of 64-bit ARM (AArch64, Linux, glibc) that is
 * not C (base layer), included through cpu.h: the same names as
 * arch/x86_64/cpu_x86_64.h, each with what it means here.
 *
 *  - the CPU's counter for the exact clock (clock.h): the generic timer's
 *    virtual counter, CNTVCT_EL0, at the rate CNTFRQ_EL0 states;
 *  - one counter incremented so that a signal handler cannot break it;
 *  - a signal's registers in its ucontext (uc_mcontext.pc, sp, regs[29]);
 *  - the call instruction that returns to an address (callsite.c): BL,
 *    BLR and the pointer-authenticating BLRAA/BLRAB, 4 bytes before it;
 *  - the kernel's sigreturn trampoline (a signal handler's return
 *    address);
 *  - the stubs the runtime wraps vfork and setjmp with, and the stack
 *    pointer a jmp_buf restores (interpose.c, nonlocal.c);
 *  - taking hook calls back: the rule the change of an instruction relies
 *    on (CG_CPU_HAVE_TAKEBACK below; arch/aarch64/a64sites.c);
 *  - the runtime's own jump back to a point it set (symbols/symsession.c). */
#ifndef CG_CPU_AARCH64_H
#define CG_CPU_AARCH64_H

#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"

#define CG_CPU_NAME "aarch64"

/* Hook calls are taken back by changing one instruction, one aligned
 * 4-byte word (arch/aarch64/a64sites.c says which word becomes which;
 * patch.c stores it). The rule relied on: the Arm ARM's concurrent
 * modification and execution of instructions (DDI 0487, B2.2.5): where
 * both the old and the new instruction are among B, BL, BRK, HVC, ISB,
 * NOP, SMC, SVC, one thread may replace one by the other with one aligned
 * 32-bit store while other threads run it, and each of them runs the old
 * instruction or the new one, whole. So:
 *  - BL to the hook (a call) becomes NOP;
 *  - a tail B to the exit hook becomes a B to a RET (the function's last
 *    act was the jump, so returning is what the hook would have done last;
 *    RET itself is not in the list, so it is reached by a B);
 *  - BLR and BR through the GOT (-fno-plt) are not in the list: they keep
 *    their hooks (cg_site_write refuses them, and the runtime says so once
 *    at exit).
 * After the store the word's data cache line is cleaned and its
 * instruction cache line invalidated (CG_CPU_SITE_NEEDS_SYNC), as the same
 * section asks, so that every core fetches the new word from then on. */
#define CG_CPU_HAVE_TAKEBACK 1
#define CG_CPU_SITE_BYTES 4
#define CG_CPU_SITE_NEEDS_SYNC 1
/* The counting hooks (CGPROF_STACKS=unwind, hook/counting.h) are not used
 * here yet: with sampled time and threads, examples/threads hung in 1 run
 * of 3 under qemu-user (4 of 12 runs, 6 of 12 with CGPROF_TAKEBACK=0; the
 * hooks' stack in the same runs: 0 of 20). The hung thread was sampling
 * and nothing else: strace shows it reading /proc/self/maps and mapping
 * the program's file again and again, which is libunwind's aarch64 build
 * looking for .debug_frame (built in on ARM) for an address its
 * .eh_frame_hdr lookup missed, at every miss. Under qemu the maps file is
 * the emulator's own, slow to make, and a walk outlasted the sampling
 * period. The walks need the runtime's own unwind-table lookup (as the
 * ring's accessors have on x86-64, samplering.c) before this mode serves
 * here; the hooks' stack serves instead, said in one line at start-up
 * (runtime.c). */
#define CG_CPU_HAVE_COUNTING 0
/* The hook call sites are recognised (arch/aarch64/a64sites.c): which hook
 * calls are a function's own, which an inlined call's, and what each
 * becomes. */
#define CG_CPU_HAVE_SITES 1
/* Every hook call site is one 4-byte instruction. */
#define CG_CPU_SITE_CALL_MIN 4
#define CG_CPU_SITE_CALL_MAX 4
#define CG_CPU_SITE_CALL_LEN(form) ((void)(form), 4u)

/* ---- the counter of the exact clock ----------------------------------------
 * CNTVCT_EL0, the virtual count of the generic timer, rather than
 * clock_gettime: the vDSO's CLOCK_MONOTONIC reads this same counter
 * (after an ISB, under a sequence lock, then scales it), so it has the
 * same resolution and cannot be cheaper; where the kernel traps the
 * counter's reads from user space (the workarounds of counter errata), it
 * emulates them, and the vDSO then falls back to a system call itself. The
 * architecture requires the counter to run at a constant rate, the same
 * on every core, whatever the cores' frequencies and power states: always
 * "invariant" in x86-64's terms. Its resolution is coarser than a TSC's:
 * CNTFRQ_EL0 is 24 to 100 MHz on most ARMv8.0-8.5 parts (40 to 10 ns a
 * tick; 1 GHz from ARMv8.6), so the exact clock gives calls shorter than a
 * tick 0 or 1 tick each, which average out over many calls. No aarch64
 * timing has been measured (docs/internals/benchmarks.md).
 *
 * Read without an ISB on the hooks' path, as x86-64's RDTSC is read
 * without a fence: a reading may move by a few instructions, and two
 * readings may even come in the wrong order, which the clock's users allow
 * for (a segment never shorter than zero). */
#define CG_CPU_HAVE_COUNTER 1
/* the counter as a part's Clock line names it, and the register that
 * states its rate */
#define CG_CPU_COUNTER_NAME "CNTVCT_EL0"
#define CG_CPU_COUNTER_RATE "CNTFRQ_EL0"

static inline CG_NOINSTR uint64_t cg_cpu_counter(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

static inline CG_NOINSTR int cg_cpu_counter_invariant(void)
{
    return 1;
}

/* The counter's rate as the firmware set it: clock.c takes it where it
 * agrees with its own measurement against CLOCK_MONOTONIC (firmware that
 * never set the register leaves 0 or a wrong value, which the kernel works
 * around from the device tree: the measurement then). */
static inline CG_NOINSTR uint64_t cg_cpu_counter_hz(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v));
    return v;
}

/* The counter read after every instruction before it has completed (the
 * ISB), as the vDSO reads it: for the calibration's pairs of readings. */
static inline CG_NOINSTR uint64_t cg_cpu_counter_ordered(void)
{
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
}

/* ---- a count a signal handler may also increment -----------------------------
 * AArch64 has no one-instruction increment of memory before the LSE atomics
 * (ARMv8.1): a load-exclusive / store-exclusive pair instead. A signal
 * handler that runs between the two clears the exclusive monitor (an
 * exception return does), so the store fails and the increment is made
 * again from the count the handler left: its own increment is kept, as
 * x86-64's one instruction keeps it. Only this thread writes the count:
 * no barrier. */
static inline CG_NOINSTR void cg_cpu_count_one(uint64_t *count)
{
    uint64_t v;
    uint32_t failed;
    __asm__ volatile("1:\tldxr %0, %2\n"
                     "\tadd %0, %0, #1\n"
                     "\tstxr %w1, %0, %2\n"
                     "\tcbnz %w1, 1b"
                     : "=&r"(v), "=&r"(failed), "+Q"(*count));
}

/* ---- the call frame address ------------------------------------------------------
 * CG_CPU_CFA(): the stack pointer before the call that entered the function
 * this is expanded in (an always-inline function's: its host's), the hooks'
 * frame key. A call pushes nothing, so it is the stack pointer at the
 * function's entry. gcc's __builtin_dwarf_cfa gives it; clang's (14) gives
 * the frame pointer, below the frame record and the registers the function
 * saves (16 to 96 bytes lower, by the function), and the frames of a
 * clang-built runtime's hooks did not match the stack pointers of setjmp
 * and longjmp; clang's __builtin_sponentry is that stack pointer. */
#if defined(__clang__)
#define CG_CPU_CFA() ((uintptr_t)__builtin_sponentry())
#else
#define CG_CPU_CFA() ((uintptr_t)__builtin_dwarf_cfa())
#endif

/* ---- a signal's registers (ucontext_t, <ucontext.h>) ------------------------------ */
#define CG_UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.pc)
#define CG_UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.sp)
#define CG_UC_FP(uc) ((uintptr_t)(uc)->uc_mcontext.regs[29])

/* ---- the call before a return address ----------------------------------------
 * Every instruction is 4 bytes, aligned: the call that returns to site, if
 * any, is the word before it. */
#define CG_CPU_CALL_WINDOW 4

static inline CG_NOINSTR uintptr_t cg_cpu_call_before(uintptr_t site, uintptr_t callee)
{
    (void)callee;
    uint32_t insn;
    if (site & 3)
        return 0;
    memcpy(&insn, (const void *)(site - 4), sizeof insn);
    if ((insn & 0xfc000000u) == 0x94000000u /* BL imm26 */ || (insn & 0xfffffc1fu) == 0xd63f0000u /* BLR Xn */ ||
        (insn & 0xfefff800u) == 0xd63f0800u /* BLRAA, BLRAB, BLRAAZ, BLRABZ */)
        return site - 4;
    return 0;
}

/* ---- a function's first instructions (hook/sample.c) -------------------------
 * The decoder of one instruction (a64insn.h), a PLT entry's GOT slot, and
 * whether the word at a call site is still a call. */
#define CG_CPU_DECODE cg_a64_decode

/* The bytes cg_cpu_plt_slot reads: BTI C and the first two instructions. */
#define CG_CPU_PLT_BYTES 12

/* The GOT slot that a PLT entry at pc, whose first CG_CPU_PLT_BYTES bytes
 * are b, jumps through, or 0 when pc is not one. The linker's entry
 * (binutils' and lld's alike):
 *     [bti c]
 *     adrp x16, slot's page
 *     ldr  x17, [x16, #slot's offset in the page]
 *     add  x16, x16, #the same
 *     br   x17 */
static inline CG_NOINSTR uintptr_t cg_cpu_plt_slot(const unsigned char *b, uintptr_t pc)
{
    uint32_t w[3];
    memcpy(w, b, sizeof w);
    unsigned i = w[0] == 0xd503245fu; /* bti c */
    if ((w[i] & 0x9f00001fu) != 0x90000010u || (w[i + 1] & 0xffc003ffu) != 0xf9400211u)
        return 0;
    uint64_t imm = ((uint64_t)((w[i] >> 5) & 0x7ffff) << 2) | ((w[i] >> 29) & 3);
    if (imm & (1u << 20))
        imm |= ~(uint64_t)0 << 21; /* a page before pc's */
    uintptr_t page = ((pc + 4 * i) & ~(uintptr_t)0xfff) + (uintptr_t)(imm << 12);
    return page + ((w[i + 1] >> 10) & 0xfff) * 8;
}

/* Whether the GOT slot value v (its first CG_CPU_PLT_UNBOUND_BYTES bytes at
 * b) is lazy binding's first target: every slot of the PLT then holds the
 * address of the PLT's header, PLT0 ([bti c] stp x16, x30, [sp, #-16]!). */
#define CG_CPU_PLT_UNBOUND_BYTES 8
static inline CG_NOINSTR int cg_cpu_plt_unbound(const unsigned char *b)
{
    uint32_t w[2];
    memcpy(w, b, sizeof w);
    return w[w[0] == 0xd503245fu] == 0xa9bf7bf0u;
}

/* The bytes cg_cpu_is_call reads, and whether they are a call (BL, BLR
 * and its pointer-authenticating forms). */
#define CG_CPU_CALL_BYTES 4
static inline CG_NOINSTR int cg_cpu_is_call(const unsigned char *b)
{
    uint32_t w;
    memcpy(&w, b, sizeof w);
    return (w & 0xfc000000u) == 0x94000000u || (w & 0xfffffc1fu) == 0xd63f0000u ||
           (w & 0xfefff800u) == 0xd63f0800u;
}

/* ---- the sigreturn trampoline ---------------------------------------------------
 * glibc on aarch64 gives the kernel no restorer: a handler returns to the
 * vDSO's __kernel_rt_sigreturn (mov x8, #139; svc #0), or to qemu-user's
 * copy of it under emulation. The instruction before it is a NOP, not a
 * call, so that cg_cpu_call_before finds none there. */
#define CG_CPU_SIGRETURN {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4}

/* ---- vfork -----------------------------------------------------------------------
 * CG_CPU_VFORK_ASM(name): the text of the vfork wrapper `name`, which keeps
 * nothing on the stack across the real vfork (interpose.c says why). A call
 * leaves its return address in x30, not on the stack, so this wrapper
 * never touches the stack at all: the return address goes to
 * cg_vfork_before (which stashes it per thread and returns the real vfork,
 * or NULL), the real vfork is called, then cg_vfork_after(result) gives
 * back the return address (x0) and the result (x1: a 16-byte structure is
 * returned in x0 and x1); cg_vfork_refused() the return address when vfork
 * was not called (the result -1, errno set). The CFI says where the return
 * address is at each step (x0, then nowhere: the end of the stack for a
 * backtrace). HINT #34 is BTI C, a NOP where branch protection is off. */
#define CG_CPU_HAVE_VFORK_STUB 1
#define CG_CPU_VFORK_ASM(name)                                                                               \
    ".text\n"                                                                                                \
    ".globl " name "\n"                                                                                      \
    ".type " name ", %function\n"                                                                            \
    ".p2align 2\n"                                                                                           \
    name ":\n"                                                                                               \
    "    .cfi_startproc\n"                                                                                   \
    "    hint #34\n"                                                                                         \
    "    mov x0, x30\n"                                                                                      \
    "    .cfi_register x30, x0\n"                                                                            \
    "    bl cg_vfork_before\n"                                                                               \
    "    .cfi_undefined x30\n"                                                                               \
    "    cbz x0, 1f\n"                                                                                       \
    "    blr x0\n"                                                                                           \
    "    bl cg_vfork_after\n"                                                                                \
    "    mov x30, x0\n"                                                                                      \
    "    .cfi_restore x30\n"                                                                                 \
    "    mov x0, x1\n"                                                                                       \
    "    ret\n"                                                                                              \
    "    .cfi_undefined x30\n"                                                                               \
    "1:  bl cg_vfork_refused\n"                                                                              \
    "    mov x30, x0\n"                                                                                      \
    "    .cfi_restore x30\n"                                                                                 \
    "    mov x0, #-1\n"                                                                                      \
    "    ret\n"                                                                                              \
    "    .cfi_endproc\n"                                                                                     \
    ".size " name ", .-" name "\n"

/* ---- setjmp ------------------------------------------------------------------------
 * CG_CPU_SETJMP_ASM(prefix): the stubs prefix setjmp, _setjmp and
 * __sigsetjmp (which = 0, 1, 2) and their common part: a frame that keeps
 * the argument registers and the return address, cg_setjmp_seen(env, sp,
 * which), the frame gone, then a jump to the C library's function it
 * returns (through x16, which a BTI C landing pad accepts), so that it sees
 * its caller's stack and return address as if it had been called
 * directly. The stack pointer the caller will have after the return is the
 * stub's entry one (a call pushes nothing). */
#define CG_CPU_SETJMP_STUB(name, which)                                                                      \
    ".globl " name "\n.type " name ",%function\n.p2align 2\n" name ":\n"                                     \
    "\thint #34\n\tmov w2, #" which "\n\tb cg_setjmp_stub\n"                                                  \
    ".size " name ",.-" name "\n"
#define CG_CPU_HAVE_SETJMP_STUB 1
#define CG_CPU_SETJMP_ASM(prefix)                                                                            \
    ".text\n"                                                                                                \
    CG_CPU_SETJMP_STUB(prefix "setjmp", "0")                                                                 \
    CG_CPU_SETJMP_STUB(prefix "_setjmp", "1")                                                                \
    CG_CPU_SETJMP_STUB(prefix "__sigsetjmp", "2")                                                            \
    ".type cg_setjmp_stub,%function\n"                                                                       \
    ".p2align 2\n"                                                                                           \
    "cg_setjmp_stub:\n"                                                                                      \
    "\t.cfi_startproc\n"                                                                                     \
    "\tstp x29, x30, [sp, #-32]!\n"                                                                          \
    "\t.cfi_def_cfa_offset 32\n"                                                                             \
    "\t.cfi_offset x29, -32\n"                                                                               \
    "\t.cfi_offset x30, -24\n"                                                                               \
    "\tmov x29, sp\n"                                                                                        \
    "\tstp x0, x1, [sp, #16]\n"                                                                              \
    "\tadd x1, sp, #32\n"                                                                                    \
    "\tbl cg_setjmp_seen\n"                                                                                  \
    "\tmov x16, x0\n"                                                                                        \
    "\tldp x0, x1, [sp, #16]\n"                                                                              \
    "\tldp x29, x30, [sp], #32\n"                                                                            \
    "\t.cfi_def_cfa_offset 0\n"                                                                              \
    "\t.cfi_restore x29\n"                                                                                   \
    "\t.cfi_restore x30\n"                                                                                   \
    "\tbr x16\n"                                                                                             \
    "\t.cfi_endproc\n"                                                                                       \
    ".size cg_setjmp_stub,.-cg_setjmp_stub\n"

/* The stack pointer a glibc aarch64 jmp_buf restores: its 14th word
 * (JB_SP), stored mangled (PTR_MANGLE: xor with the pointer guard, one
 * value for the whole process, kept by the dynamic linker under a
 * GLIBC_PRIVATE name). The guard is learned once, without that name: the
 * C library's own _setjmp (real_setjmp) fills a jmp_buf at a stack pointer
 * known here, and the word it stores is that pointer xor the guard. */
enum { CG_CPU_JB_SP = 13 };

static CG_NOINSTR __attribute__((noinline, unused)) uintptr_t cg_cpu_learn_guard(void *real_setjmp)
{
    jmp_buf jb;
    uintptr_t sp;
    /* the stack pointer of this function's body, which is the one the
     * call below passes (a call pushes nothing, and sp moves only in the
     * prologue and epilogue) */
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    int (*fn)(struct __jmp_buf_tag *);
    memcpy(&fn, &real_setjmp, sizeof fn);
    /* called as a plain function: nothing ever jumps back to it */
    fn(jb);
    uint64_t w;
    memcpy(&w, (const char *)jb + CG_CPU_JB_SP * sizeof w, sizeof w);
    return (uintptr_t)w ^ sp;
}

static inline CG_NOINSTR uintptr_t cg_cpu_jmp_buf_sp(const void *env, void *real_setjmp)
{
    static uintptr_t guard;
    static int known;
    if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) {
        if (!real_setjmp)
            return 0;
        /* two threads learning it at once learn the same value */
        __atomic_store_n(&guard, cg_cpu_learn_guard(real_setjmp), __ATOMIC_RELAXED);
        __atomic_store_n(&known, 1, __ATOMIC_RELEASE);
    }
    uint64_t w;
    memcpy(&w, (const char *)env + CG_CPU_JB_SP * sizeof w, sizeof w);
    return (uintptr_t)w ^ __atomic_load_n(&guard, __ATOMIC_RELAXED);
}

/* ---- the runtime's own jump -----------------------------------------------------
 * cg_cpu_jump_set(buf) returns 0, and returns again, 1, when
 * cg_cpu_jump_go(buf) is called below it (deeper in the same thread's
 * stack, the setting function not yet returned): a setjmp and longjmp of
 * the runtime's own, for the symbol reader's way out of libdw
 * (symsession.c says why neither the C library's nor __builtin_setjmp,
 * which clang does not have here). Only registers and the buffer: no
 * signal mask, no system call, no lock, so async-signal-safe. The buffer
 * keeps what a call must keep (AAPCS64: x19-x28, the frame pointer x29,
 * the low halves of v8-v15, d8-d15), the return address (x30) and the
 * stack pointer. The jump returns by RET, which no BTI landing pad
 * guards, to the unsigned return address the set was called with (a
 * function that signs its own with pointer authentication does so in its
 * frame, which the jump does not touch). Emitted once (CG_CPU_JUMP_ASM,
 * base/util.c). */
#define CG_CPU_HAVE_JUMP 1
typedef uint64_t cg_cpu_jump_buf[21];
__attribute__((returns_twice, visibility("hidden"))) int cg_cpu_jump_set(cg_cpu_jump_buf buf);
__attribute__((noreturn, visibility("hidden"))) void cg_cpu_jump_go(cg_cpu_jump_buf buf);
#define CG_CPU_JUMP_ASM                                                                                      \
    ".text\n"                                                                                                \
    ".globl cg_cpu_jump_set\n.hidden cg_cpu_jump_set\n.type cg_cpu_jump_set,%function\n"                      \
    ".p2align 2\n"                                                                                           \
    "cg_cpu_jump_set:\n"                                                                                     \
    "\t.cfi_startproc\n"                                                                                     \
    "\thint #34\n"                                                                                           \
    "\tstp x19, x20, [x0, #0]\n"                                                                             \
    "\tstp x21, x22, [x0, #16]\n"                                                                            \
    "\tstp x23, x24, [x0, #32]\n"                                                                            \
    "\tstp x25, x26, [x0, #48]\n"                                                                            \
    "\tstp x27, x28, [x0, #64]\n"                                                                            \
    "\tstp x29, x30, [x0, #80]\n"                                                                            \
    "\tmov x16, sp\n"                                                                                        \
    "\tstr x16, [x0, #96]\n"                                                                                 \
    "\tstp d8, d9, [x0, #104]\n"                                                                             \
    "\tstp d10, d11, [x0, #120]\n"                                                                           \
    "\tstp d12, d13, [x0, #136]\n"                                                                           \
    "\tstp d14, d15, [x0, #152]\n"                                                                           \
    "\tmov w0, #0\n"                                                                                         \
    "\tret\n"                                                                                                \
    "\t.cfi_endproc\n"                                                                                       \
    ".size cg_cpu_jump_set,.-cg_cpu_jump_set\n"                                                              \
    ".globl cg_cpu_jump_go\n.hidden cg_cpu_jump_go\n.type cg_cpu_jump_go,%function\n"                         \
    ".p2align 2\n"                                                                                           \
    "cg_cpu_jump_go:\n"                                                                                      \
    "\t.cfi_startproc\n"                                                                                     \
    "\thint #34\n"                                                                                           \
    "\tldp x19, x20, [x0, #0]\n"                                                                             \
    "\tldp x21, x22, [x0, #16]\n"                                                                            \
    "\tldp x23, x24, [x0, #32]\n"                                                                            \
    "\tldp x25, x26, [x0, #48]\n"                                                                            \
    "\tldp x27, x28, [x0, #64]\n"                                                                            \
    "\tldp x29, x30, [x0, #80]\n"                                                                            \
    "\tldp d8, d9, [x0, #104]\n"                                                                             \
    "\tldp d10, d11, [x0, #120]\n"                                                                           \
    "\tldp d12, d13, [x0, #136]\n"                                                                           \
    "\tldp d14, d15, [x0, #152]\n"                                                                           \
    "\tldr x16, [x0, #96]\n"                                                                                 \
    "\tmov sp, x16\n"                                                                                        \
    "\tmov w0, #1\n"                                                                                         \
    "\tret\n"                                                                                                \
    "\t.cfi_endproc\n"                                                                                       \
    ".size cg_cpu_jump_go,.-cg_cpu_jump_go\n"

#endif
