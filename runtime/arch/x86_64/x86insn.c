/* x86-64 instruction lengths: see x86insn.h. Table-driven: each opcode of
 * the one-byte and 0f maps has its ModRM and immediate in a table, the few
 * whose operands depend on their prefixes or on ModRM.reg are decided in
 * code. Every byte is read only after its index is checked against what
 * the caller gave (at most 15), so a function's last bytes or an unmapped
 * page after them are never touched. */
#include "x86insn.h"

#include <string.h>

/* An opcode's operands, one byte of a table: the immediate's kind in the
 * low four bits, then flags. */
enum {
    I0,  /* none */
    IB,  /* 1 byte (rel8 too) */
    IW,  /* 2 bytes */
    IZ,  /* 2 bytes under 66 (unless REX.W), 4 else */
    IV,  /* mov r, imm: 8 under REX.W, 2 under 66, 4 else */
    IWB, /* enter: 2 + 1 */
    IMO, /* moffs of a0-a3: an address, 4 bytes under 67, 8 else */
    ID,  /* 4 bytes whatever the prefixes (rel32: see x86insn.h) */
};
/* a ModRM byte, and the SIB and displacement it asks for */
#define M 0x10
/* operands or validity set by ModRM.reg or the prefixes */
#define G 0x20
/* a ModRM byte that names registers whatever its mod */
#define RG 0x40
/* invalid in 64-bit mode; also the prefixes and escapes, which never reach
 * a table lookup */
#define BAD 0x80

/* A row of 16 opcodes a line. */
/* clang-format off */
static const uint8_t map0[256] = {
    /* 00 */ M, M, M, M, IB, IZ, BAD, BAD, M, M, M, M, IB, IZ, BAD, BAD,
    /* 10 */ M, M, M, M, IB, IZ, BAD, BAD, M, M, M, M, IB, IZ, BAD, BAD,
    /* 20 */ M, M, M, M, IB, IZ, BAD, BAD, M, M, M, M, IB, IZ, BAD, BAD,
    /* 30 */ M, M, M, M, IB, IZ, BAD, BAD, M, M, M, M, IB, IZ, BAD, BAD,
    /* 40 */ BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    /* 50 */ I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, I0,
    /* 60 */ BAD, BAD, BAD, M, BAD, BAD, BAD, BAD, IZ, M | IZ, IB, M | IB, I0, I0, I0, I0,
    /* 70 */ IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB, IB,
    /* 80 */ M | IB, M | IZ, BAD, M | IB, M, M, M, M, M, M, M, M, M, M, M, M | G,
    /* 90 */ I0, I0, I0, I0, I0, I0, I0, I0, I0, I0, BAD, I0, I0, I0, I0, I0,
    /* a0 */ IMO, IMO, IMO, IMO, I0, I0, I0, I0, IB, IZ, I0, I0, I0, I0, I0, I0,
    /* b0 */ IB, IB, IB, IB, IB, IB, IB, IB, IV, IV, IV, IV, IV, IV, IV, IV,
    /* c0 */ M | IB, M | IB, IW, I0, BAD, BAD, M | G | IB, M | G | IZ, IWB, I0, IW, I0, I0, IB, BAD, I0,
    /* d0 */ M, M, M, M, BAD, BAD, BAD, I0, M, M, M, M, M, M, M, M,
    /* e0 */ IB, IB, IB, IB, IB, IB, IB, IB, ID, ID, BAD, IB, I0, I0, I0, I0,
    /* f0 */ BAD, I0, BAD, BAD, I0, I0, M | G, M | G, I0, I0, I0, I0, I0, I0, M | G, M | G,
};

static const uint8_t map1[256] = {
    /* 00 */ M, M, M, M, BAD, I0, I0, I0, I0, I0, BAD, I0, BAD, M, I0, M | IB,
    /* 10 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 20 */ RG, RG, RG, RG, BAD, BAD, BAD, BAD, M, M, M, M, M, M, M, M,
    /* 30 */ I0, I0, I0, I0, I0, I0, BAD, I0, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    /* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 50 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 70 */ M | IB, M | IB, M | IB, M | IB, M, M, M, I0, M | G, M, BAD, BAD, M, M, M, M,
    /* 80 */ ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID, ID,
    /* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* a0 */ I0, I0, I0, M, M | IB, M, M | G, M | G, I0, I0, I0, M, M | IB, M, M, M,
    /* b0 */ M, M, M, M, M, M, M, M, M, M, M | IB, M, M, M, M, M,
    /* c0 */ M, M, M | IB, M, M | IB, M | IB, M | IB, M, I0, I0, I0, I0, I0, I0, I0, I0,
    /* d0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* e0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* f0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
};
/* clang-format on */

/* The legacy prefixes seen, as bits. */
enum {
    P66 = 1,
    P67 = 2,
    PF2 = 4,
    PF3 = 8,
    PLOCK = 16,
    PFSGS = 32, /* fs: or gs:, the segments that still have a base */
    POTHERSEG = 64,
};

static unsigned prefix_bit(unsigned b)
{
    switch (b) {
    case 0x66:
        return P66;
    case 0x67:
        return P67;
    case 0xf2:
        return PF2;
    case 0xf3:
        return PF3;
    case 0xf0:
        return PLOCK;
    case 0x64:
    case 0x65:
        return PFSGS;
    case 0x26:
    case 0x2e:
    case 0x36:
    case 0x3e:
        return POTHERSEG;
    default:
        return 0;
    }
}

/* Index just past the ModRM byte at m and the SIB and displacement it asks
 * for; 0 when a byte that decides it is not within the n given. 64-bit mode
 * has no 16-bit addressing: a 67 prefix changes no length. */
static unsigned modrm_end(const unsigned char *p, unsigned m, unsigned n)
{
    if (m >= n)
        return 0;
    unsigned mod = p[m] >> 6, rm = p[m] & 7, e = m + 1;
    if (mod == 3)
        return e;
    if (rm == 4) {
        if (e >= n)
            return 0;
        if (mod == 0 && (p[e] & 7) == 5)
            e += 4; /* no base: a disp32 */
        e++;
    } else if (mod == 0 && rm == 5) {
        e += 4; /* rip-relative */
    }
    if (mod == 1)
        e += 1;
    else if (mod == 2)
        e += 4;
    return e;
}

static unsigned imm_size(unsigned imm, unsigned pfx, unsigned rex)
{
    int w = (rex & 8) != 0;
    switch (imm) {
    case IB:
        return 1;
    case IW:
        return 2;
    case IZ:
        return (pfx & P66) && !w ? 2 : 4;
    case IV:
        return w ? 8 : (pfx & P66) ? 2 : 4;
    case IWB:
        return 3;
    case IMO:
        return (pfx & P67) ? 4 : 8;
    case ID:
        return 4;
    default:
        return 0;
    }
}

static int32_t signed_at(const unsigned char *q, unsigned size)
{
    if (size == 1)
        return (int8_t)q[0];
    if (size == 2)
        return (int16_t)(q[0] | q[1] << 8);
    uint32_t v;
    memcpy(&v, q, sizeof v);
    return (int32_t)v;
}

/* Whether a VEX or EVEX map 1 opcode takes an imm8 (their maps 3 all do;
 * maps 2, 5 and 6 none). */
static int vex_map1_imm8(unsigned op)
{
    return (op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6);
}

/* Whether the fwait at i and the x87 instruction (d8-df) after it are one
 * instruction, as objdump reads them: right after it; or, when nothing
 * came before it (first), after prefixes and at most one more fwait. */
static int fwait_joins(const unsigned char *p, unsigned i, unsigned n, int first)
{
    unsigned j = i + 1;
    if (first) {
        while (j < n && ((p[j] & 0xf0) == 0x40 || prefix_bit(p[j])))
            j++;
        if (j < n && p[j] == 0x9b)
            j++;
    }
    return j < n && p[j] >= 0xd8 && p[j] <= 0xdf;
}

unsigned cg_insn_decode(const unsigned char *p, size_t avail, uintptr_t addr, struct cg_insn *out)
{
    unsigned n = avail < CG_INSN_MAX ? (unsigned)avail : CG_INSN_MAX;
    unsigned i = 0, pfx = 0, rex = 0, fwait = 0;
    for (;; i++) {
        if (i >= n)
            return 0;
        unsigned b = p[i];
        if ((b & 0xf0) == 0x40) {
            rex = b;
            continue;
        }
        unsigned bit = prefix_bit(b);
        if (!bit) {
            /* fwait then an x87 instruction is one instruction to the
             * manuals (fstsw is 9b df e0), the assemblers and objdump,
             * so it is one here too; before anything else, fwait is
             * alone */
            if (b == 0x9b && fwait_joins(p, i, n, !pfx && !rex && !fwait)) {
                if (!fwait)
                    fwait = i + 1;
                continue;
            }
            break;
        }
        pfx |= bit;
        /* a REX counts only right before the opcode */
        rex = 0;
    }
    unsigned op_off = fwait ? fwait - 1 : i, op = p[i], map = 0, at, m;
    switch (op) {
    case 0x0f:
        if (i + 1 >= n)
            return 0;
        op = p[i + 1];
        if (op == 0x38 || op == 0x3a) {
            if (i + 2 >= n)
                return 0;
            map = op == 0x38 ? 2 : 3;
            at = map == 2 ? M : M | IB;
            op = p[i + 2];
            m = i + 3;
        } else {
            map = 1;
            at = map1[op];
            m = i + 2;
        }
        break;
    case 0xc4:
    case 0xc5:
    case 0x62: {
        /* VEX and EVEX carry their own 66, f2, f3 and REX */
        if ((pfx & (P66 | PF2 | PF3 | PLOCK)) || rex)
            return 0;
        unsigned k = op == 0xc5 ? 2 : op == 0xc4 ? 3 : 4;
        if (i + k >= n)
            return 0;
        if (op == 0xc5) {
            map = 1;
        } else if (op == 0xc4) {
            map = p[i + 1] & 0x1f;
            if (map < 1 || map > 3)
                return 0;
        } else {
            /* the bits APX gives a meaning and maps 4 and 7 are left out */
            map = p[i + 1] & 7;
            if ((p[i + 1] & 8) || !(p[i + 2] & 4) || map == 0 || map == 4 || map == 7)
                return 0;
        }
        op = p[i + k];
        m = i + k + 1;
        if (map == 1 && op == 0x77 && p[i] != 0x62)
            at = I0; /* vzeroupper, vzeroall */
        else
            at = M | (map == 3 || (map == 1 && vex_map1_imm8(op)) ? IB : I0);
        map = 0x100 + map; /* no branch, no group: kept apart */
        break;
    }
    case 0x8f:
        if (i + 1 >= n)
            return 0;
        if ((p[i + 1] & 0x1f) >= 8) {
            /* XOP: map 8 has an imm8, map 9 none, map a an imm32 */
            if ((pfx & (P66 | PF2 | PF3 | PLOCK)) || rex || i + 3 >= n)
                return 0;
            unsigned xmap = p[i + 1] & 0x1f;
            if (xmap > 10)
                return 0;
            at = M | (xmap == 8 ? IB : xmap == 10 ? ID : I0);
            op = p[i + 3];
            m = i + 4;
            map = 0x100 + xmap;
            break;
        }
        at = map0[op];
        m = i + 1;
        break;
    default:
        at = map0[op];
        m = i + 1;
        break;
    }
    if (at & BAD)
        return 0;

    unsigned reg = 0, mod = 0, rm = 0;
    if (at & (M | RG)) {
        if (m >= n)
            return 0;
        reg = (p[m] >> 3) & 7;
        mod = p[m] >> 6;
        rm = p[m] & 7;
    }
    unsigned imm = at & 15;
    if (at & G) {
        if (map == 1 && op == 0x78) {
            /* vmread, or under 66 or f2 AMD's extrq and insertq with two
             * imm8 */
            if (pfx & (P66 | PF2))
                imm = IW;
        } else if (map == 1) {
            /* 0f a6, 0f a7: VIA's PadLock, registers only */
            if (mod != 3)
                return 0;
        } else {
            switch (op) {
            case 0xf6:
            case 0xf7:
                /* test r/m, imm; not, neg, mul, imul, div, idiv have none */
                if (reg < 2)
                    imm = op == 0xf6 ? IB : IZ;
                break;
            case 0xfe:
                if (reg > 1)
                    return 0;
                break;
            case 0xff:
                /* far call and jmp take memory only */
                if (reg == 7 || ((reg == 3 || reg == 5) && mod == 3))
                    return 0;
                break;
            case 0xc6:
            case 0xc7:
                /* mov r/m, imm; or xabort imm8, xbegin rel */
                if (reg == 0)
                    break;
                if (reg != 7 || mod != 3 || rm != 0)
                    return 0;
                break;
            case 0x8f:
                if (reg != 0)
                    return 0;
                break;
            default:
                break;
            }
        }
    }

    unsigned end;
    if (at & RG)
        end = m + 1;
    else if (at & M)
        end = modrm_end(p, m, n);
    else
        end = m;
    if (end == 0)
        return 0;
    unsigned isize = imm_size(imm, pfx, rex), len = end + isize;
    if (len > n)
        return 0;

    out->len = (uint8_t)len;
    out->op_off = (uint8_t)op_off;
    out->kind = CG_INSN_OTHER;
    out->modrm = (at & (M | RG)) != 0;
    out->modrm_off = out->modrm ? (uint8_t)m : 0;
    out->target = 0;
    out->mem = 0;
    unsigned rel = 0;
    if (map == 0) {
        if (op == 0xe8) {
            out->kind = CG_INSN_CALL_REL;
            rel = 4;
        } else if (op == 0xe9 || op == 0xeb) {
            out->kind = CG_INSN_JMP_REL;
            rel = isize;
        } else if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
            out->kind = CG_INSN_JCC;
            rel = 1;
        } else if (op == 0xc7 && reg == 7) {
            out->kind = CG_INSN_JCC; /* xbegin: its abort path */
            rel = isize;
        } else if (op == 0xc2 || op == 0xc3) {
            out->kind = CG_INSN_RET;
        } else if (op == 0xca || op == 0xcb || op == 0xcc || op == 0xcf || op == 0xf4) {
            out->kind = CG_INSN_STOP;
        } else if (op == 0xff && reg >= 2 && reg <= 5) {
            int call = reg <= 3;
            /* the slot's address is known when it is rip-relative and in
             * no segment with a base */
            if ((reg == 2 || reg == 4) && mod == 0 && rm == 5 && !(pfx & PFSGS)) {
                uintptr_t slot = addr + len + (uintptr_t)(intptr_t)signed_at(p + m + 1, 4);
                out->mem = (pfx & P67) ? (uint32_t)slot : slot;
                out->kind = call ? CG_INSN_CALL_RIP : CG_INSN_JMP_RIP;
            } else {
                out->kind = call ? CG_INSN_CALL_IND : CG_INSN_JMP_IND;
            }
        }
    } else if (map == 1) {
        if (op >= 0x80 && op <= 0x8f) {
            out->kind = CG_INSN_JCC;
            rel = 4;
        } else if (op == 0x0b || op == 0xb9 || op == 0xff || op == 0x07 || op == 0x35) {
            out->kind = CG_INSN_STOP;
        }
    }
    if (rel)
        out->target = addr + len + (uintptr_t)(intptr_t)signed_at(p + len - rel, rel);
    return len;
}
