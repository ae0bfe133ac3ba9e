/* aarch64's hook call sites (data layer): patch.h's forms, found at a
 * return address or by decoding a function (a64insn.h). Built on aarch64
 * only (runtime/meson.build), as arch/x86_64/sites.c on x86-64.
 *
 * They are not changed yet (cpu_aarch64.h, CG_CPU_HAVE_TAKEBACK 0: the
 * change of a 4-byte instruction is not written), but finding them is
 * what tells a function's own hook calls from those of the calls inlined
 * into it (its own enter: the first call of its range, docs/internals/
 * takeback.md), which folding needs whether or not a site can be taken
 * back. A site's old and patched bytes are 0: there is no one-byte change
 * on aarch64 (patch.c's cg_site_write refuses every change here).
 *
 * The forms, each one 4-byte instruction:
 *  - CG_SITE_CALL: BL to the hook or to its PLT entry;
 *  - CG_SITE_CALL_GOT: BLR Xn right after ADRP Xn and LDR Xn, [Xn, #off]
 *    (a call through the GOT: -fno-plt);
 *  - CG_SITE_TAIL: B to the exit hook or its PLT entry (a tail call);
 *  - CG_SITE_TAIL_GOT: BR Xn after the same ADRP and LDR.
 * Any other indirect call met before the function's first known call makes
 * the range untrusted: it might be the enter hook through a register. */
#include "patch.h"

#include <string.h>

#include "a64insn.h"

static uint32_t word_at(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* The GOT slot that the two words before a BLR Xn or BR Xn (branch), at
 * p - 8 and p - 4 with addresses at - 8 and at - 4, load Xn from: ADRP Xn,
 * page; LDR Xn, [Xn, #off]; 0 when they are not that. */
static uintptr_t got_slot(const unsigned char *p, uintptr_t at, uint32_t branch)
{
    uint32_t n = (branch >> 5) & 0x1f;
    uint32_t adrp = word_at(p - 8), ldr = word_at(p - 4);
    if ((adrp & 0x9f00001fu) != (0x90000000u | n) || (ldr & 0xffc003ffu) != (0xf9400000u | (n << 5) | n))
        return 0;
    uint64_t imm = ((uint64_t)((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3);
    if (imm & (1u << 20))
        imm |= ~(uint64_t)0 << 21;
    uintptr_t page = ((at - 8) & ~(uintptr_t)0xfff) + (uintptr_t)(imm << 12);
    return page + ((ldr >> 10) & 0xfff) * 8;
}

static void fill(struct cg_site *s, uintptr_t addr, int form, int hook)
{
    s->addr = addr;
    s->form = (uint8_t)form;
    s->hook = (uint8_t)hook;
    s->old = s->patched = 0;
}

int cg_site_at_return(uintptr_t ret, uintptr_t lo, cg_hook_of_fn hook_of, void *ctx, struct cg_site *out)
{
    if (ret < lo + 4 || ret < 8 || (ret & 3))
        return 0;
    const unsigned char *p = (const unsigned char *)ret;
    struct cg_insn in;
    if (cg_a64_decode(p - 4, 4, ret - 4, &in) != 4)
        return 0;
    int hook = CG_HOOK_NOT, form = CG_SITE_NONE;
    if (in.kind == CG_INSN_CALL_REL) {
        hook = hook_of(ctx, in.target, 0), form = CG_SITE_CALL;
    } else if (in.kind == CG_INSN_CALL_IND && ret >= lo + 12) {
        uintptr_t slot = got_slot(p - 4, ret - 4, word_at(p - 4));
        if (slot)
            hook = hook_of(ctx, slot, 1), form = CG_SITE_CALL_GOT;
    }
    if (hook < 0)
        return 0;
    fill(out, ret - 4, form, hook);
    return 1;
}

int cg_range_scan(uintptr_t begin, uintptr_t end, const unsigned char *copy, cg_hook_of_fn hook_of, void *ctx,
                  struct cg_site *sites, size_t max, struct cg_range_scan *scan)
{
    memset(scan, 0, sizeof *scan);
    int first_call = 1, stopped = 0;
    uintptr_t at = begin;
    while (at < end) {
        struct cg_insn in;
        const unsigned char *p = copy ? copy + (at - begin) : (const unsigned char *)at;
        if (cg_a64_decode(p, end - at, at, &in) != 4)
            return 0; /* not trusted: ok stays 0 */
        int form = CG_SITE_NONE, hook = CG_HOOK_NOT;
        uintptr_t slot = 0;
        if (in.kind == CG_INSN_CALL_IND || in.kind == CG_INSN_JMP_IND)
            slot = at >= begin + 8 ? got_slot(p, at, word_at(p)) : 0;
        switch (in.kind) {
        case CG_INSN_CALL_REL:
            hook = hook_of(ctx, in.target, 0), form = CG_SITE_CALL;
            break;
        case CG_INSN_CALL_IND:
            if (slot)
                hook = hook_of(ctx, slot, 1), form = CG_SITE_CALL_GOT;
            else if (first_call)
                return 0; /* a first call that may be the enter hook's, through a register */
            break;
        case CG_INSN_JMP_REL:
            hook = hook_of(ctx, in.target, 0), form = CG_SITE_TAIL;
            break;
        case CG_INSN_JMP_IND:
            if (slot)
                hook = hook_of(ctx, slot, 1), form = CG_SITE_TAIL_GOT;
            break;
        default:
            break;
        }
        hook = cg_scan_judge(scan, &first_call, &stopped, at, form, hook,
                             in.kind == CG_INSN_CALL_REL || in.kind == CG_INSN_CALL_IND,
                             in.kind == CG_INSN_JMP_REL || in.kind == CG_INSN_JMP_IND || in.kind == CG_INSN_RET ||
                                 in.kind == CG_INSN_STOP);
        if (hook != CG_HOOK_NOT) {
            if (scan->nsites < max)
                fill(&sites[scan->nsites], at, form, hook);
            scan->nsites++;
        }
        at += 4;
    }
    scan->ok = at == end;
    return 0;
}
