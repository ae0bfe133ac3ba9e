/* Hook call sites and the change of one instruction: see patch.h and
 * docs/internals/takeback.md. The store itself is here; which instructions
 * are hook calls, and what replaces each (x86-64's first byte, aarch64's
 * word), is the architecture's: arch/x86_64/sites.c, arch/aarch64/a64sites.c (each built
 * on its architecture only). Where the change is not written
 * (CG_CPU_HAVE_TAKEBACK 0, cpu.h) no byte is changed; where the sites are
 * not known either, none is ever found. */
#include "patch.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu.h"

#if CG_CPU_HAVE_TAKEBACK
#if CG_CPU_SITE_BYTES == 1
typedef uint8_t site_unit;
#else
typedef uint32_t site_unit;
#endif

/* Not instrumented by ThreadSanitizer (no_sanitize): its shadow memory
 * does not cover the program's code, which this changes; the change is
 * one atomic instruction either way. */
__attribute__((no_sanitize("thread"))) int cg_site_write(uintptr_t addr, uint32_t from, uint32_t to, int prot)
{
    int saved = errno, rc = 0;
    if (addr % sizeof(site_unit))
        return EINVAL; /* an instruction the CPU would not run (aarch64's are aligned) */
    if ((site_unit)to == (site_unit)from)
        return ENOTSUP; /* the form has no change a running thread may see (patch.h) */
    long pagesize = sysconf(_SC_PAGESIZE);
    void *page = (void *)(addr & ~(uintptr_t)(pagesize - 1));
    site_unit *w = (site_unit *)addr;
    if (__atomic_load_n(w, __ATOMIC_RELAXED) == (site_unit)to) {
        errno = saved;
        return 0;
    }
    if (mprotect(page, (size_t)pagesize, prot | PROT_WRITE) != 0) {
        rc = errno;
        errno = saved;
        return rc;
    }
    site_unit expect = (site_unit)from;
    if (!__atomic_compare_exchange_n(w, &expect, (site_unit)to, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED) &&
        expect != (site_unit)to)
        rc = EAGAIN;
#if CG_CPU_SITE_NEEDS_SYNC
    /* aarch64: the data cache cleaned and the instruction cache invalidated
     * for the word, to the point of unification, with the barriers between
     * (DC CVAU, DSB ISH, IC IVAU, DSB ISH, ISB: what the builtin does), so
     * that every core fetches the new word once it next looks (the Arm
     * ARM's concurrent modification rule, cpu_aarch64.h, gives it the old
     * or the new one whole until then) */
    else
        __builtin___clear_cache((char *)addr, (char *)addr + sizeof(site_unit));
#endif
    /* The permission given back: a failure here leaves the page writable,
     * which is no danger to the program; the change is made either way. */
    mprotect(page, (size_t)pagesize, prot);
    errno = saved;
    return rc;
}
#else
int cg_site_write(uintptr_t addr, uint32_t from, uint32_t to, int prot)
{
    (void)addr, (void)from, (void)to, (void)prot;
    return ENOSYS;
}
#endif

#if !CG_CPU_HAVE_SITES
int cg_site_at_return(uintptr_t ret, uintptr_t lo, cg_hook_of_fn hook_of, void *ctx, struct cg_site *out)
{
    (void)ret, (void)lo, (void)hook_of, (void)ctx, (void)out;
    return 0;
}

int cg_range_scan(uintptr_t begin, uintptr_t end, const unsigned char *copy, cg_hook_of_fn hook_of, void *ctx,
                  struct cg_site *sites, size_t max, struct cg_range_scan *scan)
{
    (void)begin, (void)end, (void)copy, (void)hook_of, (void)ctx, (void)sites, (void)max;
    memset(scan, 0, sizeof *scan);
    return 0;
}

int cg_site_tail_reach(struct cg_site *s, uintptr_t lo, uintptr_t hi)
{
    (void)s, (void)lo, (void)hi;
    return 0;
}
#endif
