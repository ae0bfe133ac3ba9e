/* Objects unloaded: see unload.h. The tables are only read. */
#include "unload.h"

#include <stdint.h>
#include <stdlib.h>

#include "gone.h"
#include "symbols.h"
#include "takeback.h"
#include "util.h"

/* The process's objects gone, named by the dumps' symbol sessions. */
static struct cg_gone gone = CG_GONE_INIT;

struct collect {
    uintptr_t lo, hi; /* the object's range */
    uintptr_t *v;
    size_t n, cap;
};

static void add_addr(void *ctx, uintptr_t a)
{
    struct collect *c = ctx;
    if (a < c->lo || a >= c->hi)
        return;
    if (CG_GROW(c->v, c->cap, c->n + 1, 256) != 0)
        return;
    c->v[c->n++] = a;
}

void cg_unload_note(const void *handle, cg_unload_addresses_fn addresses)
{
    char *path;
    uintptr_t bias;
    struct collect c = { 0 };
    if (cg_syms_object_of(handle, &path, &bias, &c.lo, &c.hi) != 0)
        return;
    /* its hook call sites forgotten: another object may be loaded there */
    cg_takeback_unload(c.lo, c.hi);
    addresses(add_addr, &c);
    cg_sort_uintptr(c.v, c.n);
    size_t m = 0;
    for (size_t i = 0; i < c.n; i++)
        if (m == 0 || c.v[m - 1] != c.v[i])
            c.v[m++] = c.v[i];
    cg_gone_add(&gone, path, bias, c.lo, c.hi, c.v, m);
}

struct cg_gone *cg_unload_gone(void)
{
    return &gone;
}
