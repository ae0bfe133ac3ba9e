#define _GNU_SOURCE
#include "unwinder.h"

#if CG_HAVE_LIBUNWIND
#include <dlfcn.h>

#include "proc.h"
#include "real.h"
#include "util.h"

/* the names behind libunwind's macros, e.g. _ULx86_64_step */
#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)

/* The code of libunwind's two libraries (the local one, the generic one:
 * each keeps a pipe of its own, which went to the bottom of the program's
 * range in ring sampling, test_guest Descriptors), for
 * cg_unwinder_calls_from: each range's bounds are written before `known`
 * says they are (a pipe2 of the program's in another thread meanwhile
 * must not see half of them). */
static struct code_range {
    uintptr_t lo, hi;
    int known;
} code[2];

/* The code of the library that holds fn, into r. */
static void remember_code(struct code_range *r, void (*fn)(void))
{
    int main_program;
    if (fn && cg_proc_code_segment((uintptr_t)fn, &r->lo, &r->hi, &main_program))
        __atomic_store_n(&r->known, 1, __ATOMIC_RELEASE);
}

int cg_unwinder_calls_from(uintptr_t pc)
{
    for (int i = 0; i < 2; i++)
        if (__atomic_load_n(&code[i].known, __ATOMIC_ACQUIRE) && pc - code[i].lo < code[i].hi - code[i].lo)
            return 1;
    return 0;
}

static struct cg_unwinder u;
static int state; /* 0: not tried, 1: loaded, 2: not there */

const struct cg_unwinder *cg_unwinder_loaded(void)
{
    return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == 1 ? &u : NULL;
}

const struct cg_unwinder *cg_unwinder(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == 0) {
        void *(*open)(const char *, int) = cg_real_dlopen();
        /* Not without room for it (about 300 kB with its liblzma; a load
         * that runs out ends the process: cg_proc_room) */
        void *h = open && cg_proc_room(1 << 20) ? open("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h) {
            CG_DLSYM_FN(u.init_local2, h, CG_STR(unw_init_local2));
            CG_DLSYM_FN(u.step, h, CG_STR(unw_step));
            CG_DLSYM_FN(u.get_reg, h, CG_STR(unw_get_reg));
            CG_DLSYM_FN(u.get_proc_info, h, CG_STR(unw_get_proc_info));
            CG_DLSYM_FN(u.get_proc_info_by_ip, h, CG_STR(unw_get_proc_info_by_ip));
            CG_DLSYM_FN(u.set_caching_policy, h, CG_STR(unw_set_caching_policy));
            CG_DLSYM_FN(u.is_signal_frame, h, CG_STR(unw_is_signal_frame));
            u.local_addr_space = dlsym(h, CG_STR(unw_local_addr_space));
            remember_code(&code[0], (void (*)(void))u.step);
        }
        dlerror(); /* leave no error for the program's dlerror() to find */
        s = h ? 1 : 2;
        __atomic_store_n(&state, s, __ATOMIC_RELEASE);
    }
    return s == 1 ? &u : NULL;
}

/* libunwind's generic library (the same Debian package, libunwind8): the
 * local one cannot make an address space of accessors of one's own
 * (unw_create_addr_space returns NULL when built UNW_LOCAL_ONLY), which a
 * walk over a copy of a stack needs (samplering.c). Its cursors are
 * stepped by its own functions, never the local library's. */
#if defined(__x86_64__)
#define CG_UNW_GENERIC "libunwind-x86_64.so.8"
#define CG_UNW_PREFIX "_Ux86_64_"
#elif defined(__aarch64__)
#define CG_UNW_GENERIC "libunwind-aarch64.so.8"
#define CG_UNW_PREFIX "_Uaarch64_"
#endif

#ifdef CG_UNW_GENERIC
static struct cg_unwinder g;
static int g_state;

const struct cg_unwinder *cg_unwinder_generic(void)
{
    int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (s == 0) {
        void *(*open)(const char *, int) = cg_real_dlopen();
        /* not without room for it, as libunwind.so.8 above */
        void *h = open && cg_proc_room(1 << 20) ? open(CG_UNW_GENERIC, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h) {
            CG_DLSYM_FN(g.step, h, CG_UNW_PREFIX "step");
            CG_DLSYM_FN(g.get_reg, h, CG_UNW_PREFIX "get_reg");
            CG_DLSYM_FN(g.get_proc_info, h, CG_UNW_PREFIX "get_proc_info");
            CG_DLSYM_FN(g.set_caching_policy, h, CG_UNW_PREFIX "set_caching_policy");
            CG_DLSYM_FN(g.is_signal_frame, h, CG_UNW_PREFIX "is_signal_frame");
            CG_DLSYM_FN(g.create_addr_space, h, CG_UNW_PREFIX "create_addr_space");
            CG_DLSYM_FN(g.init_remote, h, CG_UNW_PREFIX "init_remote");
            CG_DLSYM_FN(g.get_accessors, h, CG_UNW_PREFIX "get_accessors");
            CG_DLSYM_FN(g.search_unwind_table, h, CG_UNW_PREFIX "dwarf_search_unwind_table");
            g.local_addr_space = dlsym(h, CG_UNW_PREFIX "local_addr_space");
            remember_code(&code[1], (void (*)(void))g.step);
        }
        dlerror();
        s = h && g.step && g.get_reg && g.get_proc_info && g.create_addr_space && g.init_remote &&
                    g.get_accessors && g.local_addr_space
                ? 1
                : 2;
        __atomic_store_n(&g_state, s, __ATOMIC_RELEASE);
    }
    return s == 1 ? &g : NULL;
}
#else
const struct cg_unwinder *cg_unwinder_generic(void)
{
    return NULL;
}
#endif
#else
/* Without libunwind (-Dlibunwind=disabled, or the static runtime): nothing,
 * but ISO C wants a translation unit to declare something. */
typedef int cg_no_unwinder;
#endif
