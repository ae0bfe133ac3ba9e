/* Objects gone: see gone.h. */
#include "gone.h"

#include <stdlib.h>

#include "util.h"

static int owns(const struct cg_gone_object *o, uintptr_t addr)
{
    size_t lo = 0, hi = o->nowned;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->owned[mid] < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < o->nowned && o->owned[lo] == addr;
}

int cg_gone_add(struct cg_gone *g, char *path, uintptr_t bias, uintptr_t lo, uintptr_t hi, uintptr_t *addrs,
                size_t n)
{
    pthread_mutex_lock(&g->lock);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int earlier = 0;
        for (size_t k = 0; k < g->n && !earlier; k++)
            earlier = owns(&g->v[k], addrs[i]);
        if (!earlier)
            addrs[m++] = addrs[i];
    }
    if (CG_GROW(g->v, g->cap, g->n + 1, 16) != 0) {
        pthread_mutex_unlock(&g->lock);
        free(path);
        free(addrs);
        return -1;
    }
    g->v[g->n] = (struct cg_gone_object){ path, bias, lo, hi, addrs, m };
    /* published after it is filled: cg_gone_find skips the lock while
     * the list is empty */
    __atomic_store_n(&g->n, g->n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->lock);
    return 0;
}

int cg_gone_find(struct cg_gone *g, uintptr_t addr, int current, const char **path, uintptr_t *base)
{
    if (!__atomic_load_n(&g->n, __ATOMIC_ACQUIRE))
        return 0; /* nothing ever unloaded: no lock for each address */
    pthread_mutex_lock(&g->lock);
    const struct cg_gone_object *o = NULL;
    for (size_t i = 0; i < g->n && !o; i++)
        if (owns(&g->v[i], addr))
            o = &g->v[i];
    for (size_t i = g->n; !o && !current && i-- > 0;)
        if (addr >= g->v[i].lo && addr < g->v[i].hi)
            o = &g->v[i];
    if (o) {
        *path = o->path;
        *base = o->base;
    }
    pthread_mutex_unlock(&g->lock);
    return o != NULL;
}
