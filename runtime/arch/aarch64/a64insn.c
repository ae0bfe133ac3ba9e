/* AArch64 instruction kinds: see a64insn.h. Encodings from the Arm
 * Architecture Reference Manual (DDI 0487), "Branches, Exception Generating
 * and System instructions". */
#include "a64insn.h"

#include <string.h>

/* The signed field of `bits` bits at `lo` of w, times 4 (a branch's word
 * offset in bytes). */
static intptr_t offset(uint32_t w, unsigned lo, unsigned bits)
{
    uint64_t v = (w >> lo) & ((1u << bits) - 1);
    if (v & (1u << (bits - 1)))
        v |= ~(uint64_t)0 << bits;
    return (intptr_t)(v << 2);
}

unsigned cg_a64_decode(const unsigned char *p, size_t avail, uintptr_t addr, struct cg_insn *out)
{
    if (avail < 4 || (addr & 3))
        return 0;
    uint32_t w;
    memcpy(&w, p, sizeof w); /* little-endian code, as Linux runs it */
    memset(out, 0, sizeof *out);
    out->len = 4;
    out->kind = CG_INSN_OTHER;
    if ((w & 0xfc000000u) == 0x94000000u) { /* BL */
        out->kind = CG_INSN_CALL_REL;
        out->target = addr + (uintptr_t)offset(w, 0, 26);
    } else if ((w & 0xfc000000u) == 0x14000000u) { /* B */
        out->kind = CG_INSN_JMP_REL;
        out->target = addr + (uintptr_t)offset(w, 0, 26);
    } else if ((w & 0xff000000u) == 0x54000000u) { /* B.cond (bit 4 0), BC.cond (1) */
        out->kind = CG_INSN_JCC;
        out->target = addr + (uintptr_t)offset(w, 5, 19);
    } else if ((w & 0x7e000000u) == 0x34000000u) { /* CBZ, CBNZ */
        out->kind = CG_INSN_JCC;
        out->target = addr + (uintptr_t)offset(w, 5, 19);
    } else if ((w & 0x7e000000u) == 0x36000000u) { /* TBZ, TBNZ */
        out->kind = CG_INSN_JCC;
        out->target = addr + (uintptr_t)offset(w, 5, 14);
    } else if ((w & 0xfe000000u) == 0xd6000000u) {
        /* unconditional branch (register): opc in bits 21-24, op2 (bits
         * 16-20) 11111; BLR/BR/RET with op3 0 and Rm 0, their
         * pointer-authenticating forms with op3 2 or 3 */
        unsigned opc = (w >> 21) & 0xf, op2 = (w >> 16) & 0x1f, op3 = (w >> 10) & 0x3f;
        if (op2 != 0x1f)
            return 4;
        int plain = op3 == 0 && (w & 0x1f) == 0;
        int auth = op3 == 2 || op3 == 3;
        if (opc == 1 && (plain || auth)) /* BLR; BLRAAZ, BLRABZ */
            out->kind = CG_INSN_CALL_IND;
        else if (opc == 9 && auth) /* BLRAA, BLRAB */
            out->kind = CG_INSN_CALL_IND;
        else if ((opc == 0 && (plain || auth)) || (opc == 8 && auth)) /* BR; BRAAZ, BRABZ; BRAA, BRAB */
            out->kind = CG_INSN_JMP_IND;
        else if (opc == 2 && (plain || (auth && ((w >> 5) & 0x1f) == 0x1f && (w & 0x1f) == 0x1f))) /* RET; RETAA, RETAB */
            out->kind = CG_INSN_RET;
        else if (opc == 4 && (w & 0x3ff) == 0x3e0 && (op3 == 0 || auth)) /* ERET; ERETAA, ERETAB */
            out->kind = CG_INSN_RET;
    } else if ((w & 0xffe0001fu) == 0xd4200000u || (w & 0xffe0001fu) == 0xd4400000u) { /* BRK, HLT */
        out->kind = CG_INSN_STOP;
    } else if ((w & 0xffff0000u) == 0) { /* UDF */
        out->kind = CG_INSN_STOP;
    }
    return 4;
}
