/* A set of function entry addresses, for the filters (filter.c): read by
 * the hooks' slow paths, so a lookup takes no lock and allocates nothing.
 *
 * Open addressing with linear probing, at most half full, 0 marking an empty
 * slot (no function starts at address 0). Two uses:
 *  - built whole off the hot path and then published, never changed (the
 *    functions CGPROF_SKIP* name);
 *  - filled while the program runs, from any thread (the functions
 *    CGPROF_THROTTLE throttled): a slot goes from 0 to an address once, with
 *    a compare-and-swap, so a lookup sees each slot either empty or final.
 * The memory comes from mmap: the hooks run inside malloc. */
#ifndef CG_ADDRSET_H
#define CG_ADDRSET_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "util.h"

struct cg_addrset {
    size_t mask;      /* slots - 1 */
    size_t len;       /* bytes mapped, this header included */
    unsigned long n;  /* addresses in the set */
    uintptr_t slot[];
};

static inline CG_NOINSTR uint64_t cg_addrset_hash(uintptr_t a)
{
    return cg_hash2(a, 0);
}

/* Whether a is in s (s may be NULL: the empty set). */
static inline CG_NOINSTR int cg_addrset_has(const struct cg_addrset *s, uintptr_t a)
{
    if (!s || !a)
        return 0;
    for (size_t i = (size_t)cg_addrset_hash(a);; i++) {
        uintptr_t v = __atomic_load_n(&s->slot[i & s->mask], __ATOMIC_RELAXED);
        if (v == a)
            return 1;
        if (v == 0)
            return 0;
    }
}

/* An empty set with room for `capacity` addresses; NULL if out of memory. */
struct cg_addrset *cg_addrset_new(size_t capacity);
void cg_addrset_free(struct cg_addrset *s);
/* Adds a, safely against concurrent adds and lookups. Returns 1 if added,
 * 0 if it was there, -1 if the set is full (it stays as it was). */
int cg_addrset_add(struct cg_addrset *s, uintptr_t a);
/* The addresses of s, in no order, into out (room for s->n); their number. */
size_t cg_addrset_list(const struct cg_addrset *s, uintptr_t *out, size_t max);

#endif
