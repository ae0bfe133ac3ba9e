/* Objects gone (data layer): a list of objects that dlclose() unmapped,
 * each with the addresses the tables held in its range when it went, so
 * that a later dump names those addresses from the object's file, whatever
 * is mapped there then. A list only grows (its records are never freed: a
 * dump may be using one); it has its own lock, since objects go on any
 * thread while a dump reads. The process's list is unload.c's; symsession.c
 * reads the one its session is given. */
#ifndef CG_GONE_H
#define CG_GONE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct cg_gone_object {
    char *path;
    uintptr_t base, lo, hi; /* load bias; [lo, hi) its segments */
    uintptr_t *owned;       /* addresses the tables held in [lo, hi) when it went, sorted */
    size_t nowned;
};

struct cg_gone {
    pthread_mutex_t lock;
    struct cg_gone_object *v;
    size_t n, cap;
};

#define CG_GONE_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }

/* Records an object as gone: path (malloc'd) and addrs (malloc'd, sorted,
 * each once) become the list's. Addresses an earlier record owns stay its
 * own. Returns 0, or -1 when out of memory (then nothing is kept, and
 * path and addrs are freed). */
int cg_gone_add(struct cg_gone *g, char *path, uintptr_t bias, uintptr_t lo, uintptr_t hi, uintptr_t *addrs,
                size_t n);

/* The object that addr belongs to: the one that owned it when it went;
 * else, unless something is mapped at addr now (current), the last one
 * whose range holds it. Fills *path (the record's, valid for the list's
 * life) and *base, returns 1; 0 when none. */
int cg_gone_find(struct cg_gone *g, uintptr_t addr, int current, const char **path, uintptr_t *base);

#endif
