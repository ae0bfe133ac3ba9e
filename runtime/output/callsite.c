/* Call instructions found from return addresses: see callsite.h. The
 * bytes before the return address are decoded by the architecture's rule
 * (cpu.h: x86-64's calls of 2 to 8 bytes, aarch64's of 4); a site with no
 * call instruction before it is a signal handler's frame, which the writer
 * then shows as called from the function it interrupted (call_pc 0). */
#define _GNU_SOURCE
#include "callsite.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "proc.h"
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

#if defined(CG_CPU_CALL_WINDOW)
static int readable(const struct cg_exec_ranges *r, uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < r->n; i++)
        if (lo >= r->v[i][0] && hi <= r->v[i][1])
            return 1;
    return 0;
}
#endif

#if defined(CG_CPU_SIGRETURN)
/* Whether site holds the sigreturn trampoline's instructions (cpu.h), read
 * without faulting. */
static int at_sigreturn(uintptr_t site)
{
    static const unsigned char tramp[] = CG_CPU_SIGRETURN;
    unsigned char b[sizeof tramp];
    return cg_proc_peek(site, b, sizeof b) == 0 && memcmp(b, tramp, sizeof b) == 0;
}
#endif

uintptr_t cg_call_instruction(const struct cg_exec_ranges *r, uintptr_t site, uintptr_t callee)
{
#if defined(CG_CPU_CALL_WINDOW)
    /* the bytes before site read only where an object's code is mapped; a
     * site outside every object is taken for a call, unless it is a
     * sigreturn trampoline outside every object (qemu-user's, on a page
     * of its own: the vDSO's and libc's are in objects) */
    if (site < 16 || !readable(r, site - CG_CPU_CALL_WINDOW, site)) {
#if defined(CG_CPU_SIGRETURN)
        if (site >= 16 && at_sigreturn(site))
            return 0;
#endif
        return site - 1;
    }
    return cg_cpu_call_before(site, callee);
#else
    (void)r;
    (void)callee;
    return site - 1;
#endif
}
