/* Call instructions found from return addresses: see callsite.h. On x86-64
 * the bytes before the return address are decoded; a site with no call
 * instruction before it is a signal handler's frame, which the writer then
 * shows as called from the function it interrupted (call_pc 0). */
#define _GNU_SOURCE
#include "callsite.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int collect_exec(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct cg_exec_ranges *r = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (CG_GROW(r->v, r->cap, r->n + 1, 32) != 0)
            return 1;
        r->v[r->n][0] = info->dlpi_addr + ph->p_vaddr;
        r->v[r->n][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        r->n++;
    }
    return 0;
}

void cg_exec_ranges_load(struct cg_exec_ranges *r)
{
    dl_iterate_phdr(collect_exec, r);
}

void cg_exec_ranges_free(struct cg_exec_ranges *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

#if defined(__x86_64__)
static int readable(const struct cg_exec_ranges *r, uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < r->n; i++)
        if (lo >= r->v[i][0] && hi <= r->v[i][1])
            return 1;
    return 0;
}

/* Length of an indirect call "FF /2" (without prefix) whose ModRM byte is m
 * and, if present, SIB byte is sib; 0 if m is not a call's ModRM. */
static unsigned ff2_length(unsigned char m, unsigned char sib)
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
#endif

uintptr_t cg_call_instruction(const struct cg_exec_ranges *r, uintptr_t site, uintptr_t callee)
{
#if defined(__x86_64__)
    if (site < 16 || !readable(r, site - 8, site))
        return site - 1;
    const unsigned char *p = (const unsigned char *)site;
    int32_t rel;
    memcpy(&rel, p - 4, sizeof rel);
    int e8 = p[-5] == 0xe8;
    if (e8 && site + (uintptr_t)(intptr_t)rel == callee)
        return site - 5; /* call rel32, straight to the callee */
    for (unsigned len = 2; len <= 7; len++) {
        const unsigned char *op = p - len;
        if (op[0] != 0xff || ff2_length(op[1], len > 2 ? op[2] : 0) != len)
            continue;
        /* an optional REX prefix belongs to the instruction */
        return (op[-1] & 0xf0) == 0x40 ? site - len - 1 : site - len;
    }
    if (e8)
        return site - 5; /* call rel32 through a PLT stub or a thunk */
    return 0;
#else
    (void)r;
    (void)callee;
    return site - 1;
#endif
}
