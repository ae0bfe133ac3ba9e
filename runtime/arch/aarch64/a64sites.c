/* aarch64's hook call sites (data layer): patch.h's forms, found at a
 * return address or by decoding a function (a64insn.h). Built on aarch64
 * only (runtime/meson.build), as arch/x86_64/sites.c on x86-64.
 *
 * Finding them tells a function's own hook calls from those of the calls
 * inlined into it (its own enter: the first call of its range,
 * docs/internals/takeback.md), and each site found carries its word (old)
 * and the word that takes it back (patched), which patch.c stores: only
 * words the Arm ARM lets a thread replace while others run them
 * (cpu_aarch64.h, CG_CPU_HAVE_TAKEBACK: B2.2.5's B, BL, NOP...).
 *
 * The forms, each one 4-byte instruction, and what each becomes:
 *  - CG_SITE_CALL: BL to the hook or to its PLT entry -> NOP;
 *  - CG_SITE_CALL_GOT: BLR Xn right after ADRP Xn and LDR Xn, [Xn, #off]
 *    (a call through the GOT: -fno-plt) -> kept (BLR is not on the list);
 *  - CG_SITE_TAIL: B to the exit hook or its PLT entry (a tail call) -> B
 *    to a RET: one in the function's own range, else one
 *    cg_site_tail_reach finds in its segment; kept when none is in reach;
 *  - CG_SITE_TAIL_GOT: BR Xn after the same ADRP and LDR -> kept.
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

#define A64_NOP 0xd503201fu
#define A64_RET 0xd65f03c0u /* ret (x30): the return a tail B is sent to */
#define A64_B 0x14000000u

/* B from at to to, or 0 when to is beyond B's reach (+-128 MiB). */
static uint32_t b_to(uintptr_t at, uintptr_t to)
{
    intptr_t d = (intptr_t)(to - at);
    if (d < -(intptr_t)0x8000000 || d >= (intptr_t)0x8000000 || (d & 3))
        return 0;
    return A64_B | (uint32_t)((d >> 2) & 0x3ffffff);
}

/* word is the site's instruction; ret a RET's address, 0 for none known */
static void fill(struct cg_site *s, uintptr_t addr, uint32_t word, int form, int hook, uintptr_t ret)
{
    s->addr = addr;
    s->form = (uint8_t)form;
    s->hook = (uint8_t)hook;
    s->old = s->patched = word;
    if (form == CG_SITE_CALL)
        s->patched = A64_NOP;
    else if (form == CG_SITE_TAIL && ret && b_to(addr, ret))
        s->patched = b_to(addr, ret);
}

/* The first RET of [begin, end), read from p (begin's bytes); 0 when
 * none. Any is in reach of a B from within a function. */
static uintptr_t ret_in(const unsigned char *p, uintptr_t begin, uintptr_t end)
{
    for (uintptr_t a = begin; a + 4 <= end; a += 4)
        if (word_at(p + (a - begin)) == A64_RET)
            return a;
    return 0;
}

int cg_site_tail_reach(struct cg_site *s, uintptr_t lo, uintptr_t hi)
{
    if (s->form != CG_SITE_TAIL || s->patched != s->old)
        return 1;
    /* In place: a RET is never a site, so no word looked at here is one
     * being changed; the segment is mapped whole while its sites are
     * known. Outward from the site, nearest first, within B's reach. */
    uintptr_t reach = 0x8000000 - 4;
    uintptr_t down = s->addr & ~(uintptr_t)3, up = down + 4;
    uintptr_t floor = lo + reach < down ? down - reach : lo, ceil = hi - down > reach ? down + reach : hi;
    while (down >= floor + 4 || up + 4 <= ceil) {
        uintptr_t ret = 0;
        if (down >= floor + 4) {
            down -= 4;
            if (*(const uint32_t *)down == A64_RET)
                ret = down;
        }
        if (!ret && up + 4 <= ceil) {
            if (*(const uint32_t *)up == A64_RET)
                ret = up;
            up += 4;
        }
        uint32_t b = ret ? b_to(s->addr, ret) : 0;
        if (b) {
            s->patched = b;
            return 1;
        }
    }
    return 0; /* patched stays old: refused */
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
    fill(out, ret - 4, word_at(p - 4), form, hook, 0);
    return 1;
}

int cg_range_scan(uintptr_t begin, uintptr_t end, const unsigned char *copy, cg_hook_of_fn hook_of, void *ctx,
                  struct cg_site *sites, size_t max, struct cg_range_scan *scan)
{
    memset(scan, 0, sizeof *scan);
    int first_call = 1, stopped = 0;
    uintptr_t at = begin, ret = 0;
    int ret_looked = 0;
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
            if (form == CG_SITE_TAIL && !ret_looked) {
                ret = ret_in(copy ? copy : (const unsigned char *)begin, begin, end);
                ret_looked = 1;
            }
            if (scan->nsites < max)
                fill(&sites[scan->nsites], at, word_at(p), form, hook, ret);
            scan->nsites++;
        }
        at += 4;
    }
    scan->ok = at == end;
    return 0;
}
