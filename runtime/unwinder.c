#define _GNU_SOURCE
#include "unwinder.h"

#if CG_HAVE_LIBUNWIND
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "real.h"
#include "util.h"

/* the names behind libunwind's macros, e.g. _ULx86_64_step */
#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)

/* libunwind's code, for cg_unwinder_calls_from */
static uintptr_t code_lo, code_hi;

static int find_code(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const struct link_map *lm = data;
    if (info->dlpi_addr != lm->l_addr || !info->dlpi_name || strcmp(info->dlpi_name, lm->l_name) != 0)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            __atomic_store_n(&code_lo, info->dlpi_addr + ph->p_vaddr, __ATOMIC_RELAXED);
            __atomic_store_n(&code_hi, info->dlpi_addr + ph->p_vaddr + ph->p_memsz, __ATOMIC_RELAXED);
        }
    }
    return 1;
}

int cg_unwinder_calls_from(uintptr_t pc)
{
    return pc - __atomic_load_n(&code_lo, __ATOMIC_RELAXED) <
           __atomic_load_n(&code_hi, __ATOMIC_RELAXED) - __atomic_load_n(&code_lo, __ATOMIC_RELAXED);
}

const struct cg_unwinder *cg_unwinder(void)
{
    static struct cg_unwinder u;
    static int state; /* 0: not tried, 1: loaded, 2: not there */
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == 0) {
        void *(*open)(const char *, int) = cg_real_dlopen();
        void *h = open ? open("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : NULL;
        struct link_map *lm = NULL;
        if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
            dl_iterate_phdr(find_code, lm);
        if (h) {
            CG_DLSYM_FN(u.init_local2, h, CG_STR(unw_init_local2));
            CG_DLSYM_FN(u.step, h, CG_STR(unw_step));
            CG_DLSYM_FN(u.get_reg, h, CG_STR(unw_get_reg));
            CG_DLSYM_FN(u.get_proc_info, h, CG_STR(unw_get_proc_info));
            CG_DLSYM_FN(u.get_proc_info_by_ip, h, CG_STR(unw_get_proc_info_by_ip));
            CG_DLSYM_FN(u.set_caching_policy, h, CG_STR(unw_set_caching_policy));
            CG_DLSYM_FN(u.is_signal_frame, h, CG_STR(unw_is_signal_frame));
            u.local_addr_space = dlsym(h, CG_STR(unw_local_addr_space));
        }
        dlerror(); /* leave no error for the program's dlerror() to find */
        s = h ? 1 : 2;
        __atomic_store_n(&state, s, __ATOMIC_RELEASE);
    }
    return s == 1 ? &u : NULL;
}
#else
/* Without libunwind (-Dlibunwind=disabled, or the static runtime): nothing,
 * but ISO C wants a translation unit to declare something. */
typedef int cg_no_unwinder;
#endif
