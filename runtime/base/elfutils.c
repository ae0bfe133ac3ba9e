#define _GNU_SOURCE
#include "elfutils.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "proc.h"
#include "real.h"
#include "util.h"

/* The address space a load needs free: libdw, libelf and their compression
 * libraries map 1.2 MB; the rest is for the files a dump reads. */
enum { ROOM = 4 << 20 };

static char why[256]; /* why the last load failed (under load_lock) */

#if CG_STATIC
/* The static runtime has libdw linked in (scripts/static-archive): always
 * there, called directly (CG_DW). */
static const struct cg_elfutils none;

const struct cg_elfutils *cg_elfutils(void)
{
    return &none;
}

const struct cg_elfutils *cg_elfutils_loaded(void)
{
    return &none;
}

void cg_elfutils_error(char *dst, size_t size)
{
    snprintf(dst, size, "%s", why);
}

void cg_elfutils_no_loading(void)
{
}
#else
struct cg_elfutils cg_elfutils_table;
static int state; /* 0: not loaded (not tried, or failed), 1: loaded, 2: not loaded, never to be */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

void cg_elfutils_error(char *dst, size_t size)
{
    pthread_mutex_lock(&load_lock);
    snprintf(dst, size, "%s", why);
    pthread_mutex_unlock(&load_lock);
}

const struct cg_elfutils *cg_elfutils_loaded(void)
{
    return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == 1 ? &cg_elfutils_table : NULL;
}

void cg_elfutils_no_loading(void)
{
    int none = 0;
    __atomic_compare_exchange_n(&state, &none, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

const struct cg_elfutils *cg_elfutils(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s != 0)
        return s == 1 ? &cg_elfutils_table : NULL;
    pthread_mutex_lock(&load_lock);
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 0) {
        void *(*open)(const char *, int) = cg_real_dlopen();
        /* Not loaded without room for them and for what a dump reads
         * (cg_proc_room: a load that runs out ends the process). libdw
         * brings libelf (its dependency): dlsym on its handle finds both. */
        int room = cg_proc_room(ROOM);
        void *h = open && room ? open("libdw.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!room) {
            snprintf(why, sizeof why, "less than %d MB of address space free under RLIMIT_AS", ROOM >> 20);
        } else if (h) {
            struct cg_elfutils t;
            int missing = 0;
#define CG_ELFUTILS_LOAD(name)                                                                                 \
    CG_DLSYM_FN(t.name, h, #name);                                                                             \
    if (!t.name && !missing++)                                                                                 \
        snprintf(why, sizeof why, "libdw.so.1 has no %s", #name);
            CG_ELFUTILS_FUNCTIONS(CG_ELFUTILS_LOAD)
#undef CG_ELFUTILS_LOAD
            int (*close)(void *) = cg_real_dlclose();
            if (missing) {
                if (close)
                    close(h);
            } else {
                cg_elfutils_table = t;
                why[0] = 0;
                __atomic_store_n(&state, 1, __ATOMIC_RELEASE);
            }
        } else {
            const char *e = open ? dlerror() : NULL;
            snprintf(why, sizeof why, "%s", e ? e : "libdw.so.1 cannot be loaded");
        }
        dlerror(); /* leave no error for the program's dlerror() to find */
    }
    pthread_mutex_unlock(&load_lock);
    return cg_elfutils_loaded();
}
#endif
