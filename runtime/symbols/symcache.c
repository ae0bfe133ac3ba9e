/* The dumps' symbol session: see symcache.h. */
#define _GNU_SOURCE
#include "symcache.h"
#include "elfutils.h"
#include "unload.h"

#include <link.h>
#include <stddef.h>

static struct cg_syms *syms;
static unsigned long long syms_adds, syms_subs;

static int count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    unsigned long long *v = data;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

struct cg_syms *cg_symcache_session(void)
{
    /* A session without libdw (it could not be loaded: memory was short
     * at a thread's end, say) is not kept: each part tries again. libdw
     * loaded first: the objects are counted with it (its load would make
     * the next dump open the session again). */
    if (syms && cg_syms_without_libdw(syms)) {
        cg_syms_close(syms);
        syms = NULL;
    }
    cg_elfutils();
    unsigned long long v[2] = { 0, 0 };
    dl_iterate_phdr(count_objects, v);
    /* a session in which memory ran out reads nothing more (symsession.c) */
    if (syms && (v[0] != syms_adds || v[1] != syms_subs || cg_syms_lost(syms))) {
        cg_syms_close(syms);
        syms = NULL;
    }
    if (!syms) {
        syms = cg_syms_open(cg_unload_gone());
        syms_adds = v[0];
        syms_subs = v[1];
    }
    return syms;
}

void cg_symcache_close(void)
{
    cg_syms_close(syms);
    syms = NULL;
}

void cg_symcache_release(void)
{
    if (cg_syms_holds_fds(syms))
        cg_symcache_close();
}

/* A forked child does not use its parent's session (a dump of its own
 * opens another) and does not close it either: libdw's teardown would cost
 * every fork of a forking server. It stays reachable from here, for
 * LeakSanitizer, which reports memory that nothing points to when the
 * child exits. */
static struct cg_syms *volatile inherited; /* volatile: a store never read would be dropped */

void cg_symcache_forked(void)
{
    if (syms)
        inherited = syms;
    syms = NULL;
}
