/* x86-64 instruction lengths (data layer): the runtime sweeps the machine
 * code of one function, linearly, to find the instructions that call or
 * jump to a hook (docs/internals/takeback.md, "Which hook calls belong to whom").
 * Called from the hooks' slow path, so a pure function of its arguments: no
 * allocation, no lock, no system call, async-signal-safe, and it never reads
 * a byte past the ones it is given.
 *
 * What it knows, in 64-bit mode only: the one-byte and 0f maps (x87, the
 * string operations, SSE to SSE4.2, AES, CLMUL, SHA, BMI, ADX, MOVBE,
 * POPCNT/LZCNT/TZCNT, RDRAND/RDSEED, TSX, CET, the system instructions), the
 * 0f 38 and 0f 3a maps, VEX (c5, c4: maps 1-3, AMX included), EVEX (maps 1,
 * 2, 3, 5 and 6: AVX-512 and AVX512-FP16), AMD's XOP (8f, maps 8-a), 3DNow!
 * (0f 0f) and VIA's PadLock, each after any legacy prefixes and a REX.
 * Where the processor and objdump part, it sides with the processor:
 *  - a near branch after a 66 prefix takes a rel32, as on Intel's processors
 *    (AMD's, and objdump, read a rel16; no compiler emits it);
 *  - a REX followed by another prefix is ignored, within the instruction
 *    (objdump shows it as an instruction of its own);
 *  - a 67 prefix cuts a rip-relative address to 32 bits.
 * And with objdump against the processor on one point: fwait before an x87
 * instruction is part of it (fstsw is 9b df e0 to the manuals and the
 * assemblers too).
 *
 * What returns 0: the opcodes invalid in 64-bit mode (06, 07, 0e, 16, 17,
 * 1e, 1f, 27, 2f, 37, 3f, 60, 61, 82, 9a, ce, d4, d5, d6, ea, and 0f 04,
 * 0f 0a, 0f 0c, 0f 24-27, 0f 36, 0f 39, 0f 3b-3f, 0f 7a, 0f 7b), the unused
 * members of the groups of c6, c7, fe, ff and 8f, a VEX, EVEX or XOP prefix
 * after a 66, f2, f3, f0 or REX prefix (the processor refuses it) or with a
 * map it does not have, EVEX with APX's bits, more than 15 bytes, and bytes
 * cut short by `avail`. Within the 0f 38 and 0f 3a maps and the VEX, EVEX
 * and XOP maps every opcode is taken to exist (all have a ModRM byte, and
 * the immediates follow each map's rule), so their unused ones are not
 * refused. */
#ifndef CG_X86INSN_H
#define CG_X86INSN_H

#include <stddef.h>
#include <stdint.h>

/* The longest instruction the processor accepts, prefixes included. */
#define CG_INSN_MAX 15

enum cg_insn_kind {
    CG_INSN_OTHER,    /* falls through to the next instruction */
    CG_INSN_CALL_REL, /* e8 rel32: target set */
    CG_INSN_CALL_RIP, /* ff /2 with a rip-relative memory operand (ff 15
                       * disp32, any prefixes but fs and gs): mem set */
    CG_INSN_CALL_IND, /* any other indirect call (a register, other memory,
                       * fs: or gs: memory, a far call) */
    CG_INSN_JMP_REL,  /* e9 rel32, eb rel8: target set */
    CG_INSN_JMP_RIP,  /* ff /4 rip-relative (ff 25 disp32): mem set */
    CG_INSN_JMP_IND,  /* any other indirect jmp (far ones too) */
    CG_INSN_JCC,      /* conditional: 70-7f rel8, 0f 80-8f rel32, e0-e3
                       * (loop*, jrcxz), xbegin: target set */
    CG_INSN_RET,      /* c3, c2 imm16, with any prefixes (rep, bnd) */
    CG_INSN_STOP,     /* no fall-through and no target: ud0, ud1, ud2, hlt,
                       * int3, iret, far ret, sysret, sysexit */
};

struct cg_insn {
    uint8_t len;    /* total length, prefixes included, 1..15 */
    uint8_t op_off; /* offset of the first opcode byte: after the legacy
                     * prefixes and the REX; for VEX, EVEX and XOP the
                     * offset of their c4, c5, 62 or 8f; of the fwait when
                     * one is part of the instruction */
    uint8_t kind;   /* enum cg_insn_kind */
    uint8_t modrm;  /* 1 when the instruction has a ModRM byte, at
                     * modrm_off */
    uint8_t modrm_off;
    uintptr_t target; /* JCC, *_REL: addr + len + displacement (0 else) */
    uintptr_t mem;    /* *_RIP: addr + len + disp32, the address of the
                       * memory slot (cut to 32 bits under a 67 prefix, as
                       * the processor does; 0 else) */
};

/* Decodes the instruction at p, whose address in the program is addr, with
 * avail bytes readable at p: its length (1..15), out filled; 0 when the
 * bytes are not a valid 64-bit instruction the decoder knows, or it would
 * need more than avail bytes (out then undefined). */
unsigned cg_insn_decode(const unsigned char *p, size_t avail, uintptr_t addr, struct cg_insn *out);

#endif
