/* AArch64 instructions (data layer), as arch/x86_64/x86insn.h decodes
 * x86-64's, into the same struct cg_insn and kinds: the runtime reads an
 * instrumented function's first instructions to find its enter hook's call
 * (hook/sample.c), by the rule of docs/internals/takeback.md. A pure
 * function of its arguments, as x86insn's: no allocation, no lock, no
 * system call, async-signal-safe, and it never reads a byte past the ones
 * it is given.
 *
 * Every A64 instruction is 4 bytes, 4-aligned: the length needs no
 * decoding, only the kind. What it tells from the others:
 *  - BL imm26: CG_INSN_CALL_REL, target set;
 *  - BLR, BLRAA, BLRAAZ, BLRAB, BLRABZ: CG_INSN_CALL_IND;
 *  - B imm26: CG_INSN_JMP_REL, target set;
 *  - BR, BRAA, BRAAZ, BRAB, BRABZ: CG_INSN_JMP_IND;
 *  - B.cond, BC.cond, CBZ, CBNZ, TBZ, TBNZ: CG_INSN_JCC, target set;
 *  - RET, RETAA, RETAB, ERET, ERETAA, ERETAB: CG_INSN_RET;
 *  - BRK, HLT, UDF: CG_INSN_STOP;
 *  - everything else (SVC included: it returns): CG_INSN_OTHER.
 * No instruction reaches memory the way x86-64's call *disp(%rip) does:
 * -fno-plt's call through the GOT is ADRP, LDR, BLR, three instructions,
 * the last a CG_INSN_CALL_IND (mem is never set). Returns 0 for fewer than
 * 4 bytes or a misaligned address. */
#ifndef CG_A64INSN_H
#define CG_A64INSN_H

#include <stddef.h>
#include <stdint.h>

#include "x86insn.h"

unsigned cg_a64_decode(const unsigned char *p, size_t avail, uintptr_t addr, struct cg_insn *out);

#endif
