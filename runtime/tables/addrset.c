#include "addrset.h"

#include <sys/mman.h>

struct cg_addrset *cg_addrset_new(size_t capacity)
{
    size_t slots = 16;
    while (slots < 2 * capacity)
        slots *= 2;
    size_t len = sizeof(struct cg_addrset) + slots * sizeof(uintptr_t);
    struct cg_addrset *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return NULL;
    s->mask = slots - 1;
    s->len = len;
    s->n = 0;
    return s;
}

void cg_addrset_free(struct cg_addrset *s)
{
    if (s)
        munmap(s, s->len);
}

int cg_addrset_add(struct cg_addrset *s, uintptr_t a)
{
    if (!s || !a)
        return -1;
    for (size_t i = (size_t)cg_addrset_hash(a);; i++) {
        uintptr_t *slot = &s->slot[i & s->mask];
        uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
        if (v == a)
            return 0;
        if (v != 0)
            continue;
        /* Kept at most half full, so that probes stay short and always end
         * at an empty slot. The count is reserved before the slot is taken:
         * concurrent adds cannot overfill it together. */
        unsigned long n = __atomic_fetch_add(&s->n, 1, __ATOMIC_RELAXED);
        if (n + 1 > (s->mask + 1) / 2) {
            __atomic_fetch_sub(&s->n, 1, __ATOMIC_RELAXED);
            return -1;
        }
        if (__atomic_compare_exchange_n(slot, &v, a, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return 1;
        __atomic_fetch_sub(&s->n, 1, __ATOMIC_RELAXED);
        if (v == a)
            return 0; /* another thread added the same address here */
    }
}

size_t cg_addrset_list(const struct cg_addrset *s, uintptr_t *out, size_t max)
{
    size_t n = 0;
    if (!s)
        return 0;
    for (size_t i = 0; i <= s->mask && n < max; i++) {
        uintptr_t v = __atomic_load_n(&s->slot[i], __ATOMIC_RELAXED);
        if (v)
            out[n++] = v;
    }
    return n;
}
