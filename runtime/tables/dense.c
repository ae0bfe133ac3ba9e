/* The cost tables' memory (data layer): their dense arrays and hash
 * indexes, in anonymous mappings (never malloc: the hooks run inside
 * malloc, in signal handlers and in threads being torn down), grown by
 * doubling, an outgrown array kept until no dump may still read it
 * (cg_readers); and the shadow stack grown. */
#include "costs_inlines.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

unsigned long cg_readers;

CG_NOINSTR void *cg_dense_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Frees outgrown arrays unless a dump may be reading them (see cg_readers). */
static CG_NOINSTR void reclaim(struct cg_costs *c)
{
    if (__atomic_load_n(&cg_readers, __ATOMIC_SEQ_CST) != 0)
        return;
    for (unsigned i = 0; i < c->nretired; i++)
        munmap(c->retired[i].p, c->retired[i].len);
    c->nretired = 0;
}

CG_NOINSTR void cg_dense_retire(struct cg_costs *c, void *p, size_t len)
{
    if (c->nretired < CG_MAX_RETIRED) {
        c->retired[c->nretired].p = p;
        c->retired[c->nretired].len = len;
        c->nretired++;
    } else if (__atomic_load_n(&cg_readers, __ATOMIC_SEQ_CST) == 0) {
        munmap(p, len);
    } /* else: leaked; cannot happen with doubling arrays and 96 slots */
    reclaim(c);
}

/* Replaces a dense array by one twice as large (copying the first n items),
 * publishing the new pointer before the old one is retired. */
CG_NOINSTR int cg_dense_grow(struct cg_costs *c, void **arr, uint32_t *cap, uint32_t n, size_t item)
{
    if (*cap > UINT32_MAX / 2)
        return -1;
    uint32_t ncap = *cap * 2;
    void *p = cg_dense_map((size_t)ncap * item);
    if (!p)
        return -1;
    memcpy(p, *arr, (size_t)n * item);
    void *old = *arr;
    size_t oldlen = (size_t)*cap * item;
    __atomic_store_n(arr, p, __ATOMIC_SEQ_CST);
    *cap = ncap;
    cg_dense_retire(c, old, oldlen);
    return 0;
}

/* Rebuilds a private hash index at `slots` entries from the dense array.
 * The old index is unmapped at once: no other thread ever reads it. */
CG_NOINSTR int cg_dense_index(uint32_t **index, uint32_t *mask, uint32_t slots, uint32_t n,
                              uint64_t (*hash_of)(const struct cg_costs *, uint32_t), const struct cg_costs *c)
{
    uint32_t *ix = cg_dense_map((size_t)slots * sizeof *ix);
    if (!ix)
        return -1;
    for (uint32_t e = 1; e < n; e++) {
        uint32_t i = (uint32_t)hash_of(c, e);
        while (ix[i & (slots - 1)])
            i++;
        ix[i & (slots - 1)] = e;
    }
    if (*index)
        munmap(*index, (size_t)(*mask + 1) * sizeof **index);
    *index = ix;
    *mask = slots - 1;
    return 0;
}

void cg_stack_grow(struct cg_costs *c)
{
    int saved = errno;
    cg_dense_grow(c, (void **)&c->frames, &c->frame_cap, c->depth, sizeof(struct cg_frame));
    errno = saved;
}
