/* Hook call sites and their one-byte change: see patch.h and
 * docs/internals/takeback.md. The change itself is here; which instructions
 * are hook calls, and what replaces the first byte of each, is the
 * architecture's: arch/x86_64/sites.c, arch/aarch64/a64sites.c (each built
 * on its architecture only). Where the change is not written
 * (CG_CPU_HAVE_TAKEBACK 0: aarch64 for now, cpu.h) no byte is changed;
 * where the sites are not known either, none is ever found. */
#include "patch.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu.h"

#if CG_CPU_HAVE_TAKEBACK
/* Not instrumented by ThreadSanitizer (no_sanitize): its shadow memory
 * does not cover the program's code, whose byte this changes; the change
 * is one atomic instruction either way. */
__attribute__((no_sanitize("thread"))) int cg_site_write(uintptr_t addr, uint8_t from, uint8_t to, int prot)
{
    int saved = errno, rc = 0;
    long pagesize = sysconf(_SC_PAGESIZE);
    void *page = (void *)(addr & ~(uintptr_t)(pagesize - 1));
    uint8_t *b = (uint8_t *)addr;
    if (__atomic_load_n(b, __ATOMIC_RELAXED) == to) {
        errno = saved;
        return 0;
    }
    if (mprotect(page, (size_t)pagesize, prot | PROT_WRITE) != 0) {
        rc = errno;
        errno = saved;
        return rc;
    }
    uint8_t expect = from;
    if (!__atomic_compare_exchange_n(b, &expect, to, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED) && expect != to)
        rc = EAGAIN;
    /* The permission given back: a failure here leaves the page writable,
     * which is no danger to the program; the change is made either way. */
    mprotect(page, (size_t)pagesize, prot);
    errno = saved;
    return rc;
}
#else
int cg_site_write(uintptr_t addr, uint8_t from, uint8_t to, int prot)
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
#endif
