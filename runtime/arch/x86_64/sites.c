/* x86-64's hook call sites (data layer): the forms of patch.h, found at a
 * return address or by decoding a function (x86insn.h), and the opcode that
 * takes each back. Built on x86-64 only (runtime/meson.build); the change
 * itself, and what other architectures have instead, are patch.c's. */
#include "patch.h"

#include <string.h>

#include "x86insn.h"

/* What replaces the opcode of each form: an instruction of the same length
 * that changes nothing the compiler keeps across a call (the flags; %rdx or
 * %r10 with a REX prefix), or a return where the jump was the function's
 * last act. */
static uint8_t patched_opcode(int form)
{
    switch (form) {
    case CG_SITE_CALL:
        return 0x3d;
    case CG_SITE_CALL_GOT:
        return 0x8d;
    default:
        return 0xc3;
    }
}

static void fill(struct cg_site *s, uintptr_t addr, const uint8_t *byte, int form, int hook)
{
    s->addr = addr;
    s->form = (uint8_t)form;
    s->hook = (uint8_t)hook;
    s->old = *byte;
    s->patched = patched_opcode(form);
}

/* x86-64's tail jump becomes the ret itself: nothing else is needed. */
int cg_site_tail_reach(struct cg_site *s, uintptr_t lo, uintptr_t hi)
{
    (void)s, (void)lo, (void)hi;
    return 1;
}

int cg_site_at_return(uintptr_t ret, uintptr_t lo, cg_hook_of_fn hook_of, void *ctx, struct cg_site *out)
{
    if (ret < lo + 5 || ret < 6)
        return 0;
    const uint8_t *p = (const uint8_t *)ret;
    int32_t rel;
    memcpy(&rel, p - 4, sizeof rel);
    if (p[-5] == 0xe8) {
        /* a 66 prefix would make cmp's immediate 16 bits: refused, as
         * compilers never write one before a call (also behind another
         * prefix, as in 66 f2 e8) */
        if ((ret >= lo + 6 && p[-6] == 0x66) || (ret >= lo + 7 && p[-7] == 0x66))
            return 0;
        int hook = hook_of(ctx, ret + (uintptr_t)(intptr_t)rel, 0);
        if (hook < 0)
            return 0;
        fill(out, ret - 5, p - 5, CG_SITE_CALL, hook);
        return 1;
    }
    if (ret >= lo + 6 && p[-6] == 0xff && p[-5] == 0x15) {
        int hook = hook_of(ctx, ret + (uintptr_t)(intptr_t)rel, 1);
        if (hook < 0)
            return 0;
        fill(out, ret - 6, p - 6, CG_SITE_CALL_GOT, hook);
        return 1;
    }
    return 0;
}

/* Whether a legacy operand-size prefix is among the instruction's. */
static int has_66(const uint8_t *p, unsigned op_off)
{
    for (unsigned i = 0; i < op_off; i++)
        if (p[i] == 0x66)
            return 1;
    return 0;
}

int cg_range_scan(uintptr_t begin, uintptr_t end, const unsigned char *copy, cg_hook_of_fn hook_of, void *ctx,
                  struct cg_site *sites, size_t max, struct cg_range_scan *scan)
{
    memset(scan, 0, sizeof *scan);
    int first_call = 1, stopped = 0;
    uintptr_t at = begin;
    while (at < end) {
        struct cg_insn in;
        const uint8_t *p = copy ? copy + (at - begin) : (const uint8_t *)at;
        unsigned len = cg_insn_decode(p, end - at, at, &in);
        if (len == 0)
            return 0; /* not trusted: ok stays 0 */
        int form = CG_SITE_NONE, hook = CG_HOOK_NOT;
        switch (in.kind) {
        case CG_INSN_CALL_REL:
            if (p[in.op_off] == 0xe8 && !has_66(p, in.op_off))
                hook = hook_of(ctx, in.target, 0), form = CG_SITE_CALL;
            break;
        case CG_INSN_CALL_RIP:
            hook = hook_of(ctx, in.mem, 1), form = CG_SITE_CALL_GOT;
            break;
        case CG_INSN_JMP_REL:
            if (p[in.op_off] == 0xe9)
                hook = hook_of(ctx, in.target, 0), form = CG_SITE_TAIL;
            break;
        case CG_INSN_JMP_RIP:
            hook = hook_of(ctx, in.mem, 1), form = CG_SITE_TAIL_GOT;
            break;
        default:
            break;
        }
        hook = cg_scan_judge(scan, &first_call, &stopped, at + in.op_off, form, hook,
                             in.kind == CG_INSN_CALL_REL || in.kind == CG_INSN_CALL_RIP ||
                                 in.kind == CG_INSN_CALL_IND,
                             in.kind == CG_INSN_JMP_REL || in.kind == CG_INSN_JMP_RIP || in.kind == CG_INSN_JMP_IND ||
                                 in.kind == CG_INSN_RET || in.kind == CG_INSN_STOP);
        if (hook != CG_HOOK_NOT) {
            if (scan->nsites < max)
                fill(&sites[scan->nsites], at + in.op_off, p + in.op_off, form, hook);
            scan->nsites++;
        }
        at += len;
    }
    scan->ok = at == end;
    return 0;
}
