#define _GNU_SOURCE
#include "real.h"

struct cg_real cg_real;

void cg_real_resolve(void)
{
    void *sym;
#define CG_REAL_LOOKUP(name, handle, ret, params)                                                             \
    if (!__atomic_load_n(&cg_real.fn_##name, __ATOMIC_ACQUIRE) && (sym = dlsym(handle, #name)) != NULL) {      \
        ret(*f_) params;                                                                                     \
        memcpy(&f_, &sym, sizeof sym);                                                                       \
        __atomic_store_n(&cg_real.fn_##name, f_, __ATOMIC_RELEASE);                                          \
    }
    CG_REAL_TABLE(CG_REAL_LOOKUP)
#undef CG_REAL_LOOKUP
}

void *cg_real_setjmp_target(int which)
{
    int (*f)(struct __jmp_buf_tag *) = which == 0 ? cg_real_setjmp() : which == 1 ? cg_real__setjmp() : NULL;
    int (*g)(struct __jmp_buf_tag *, int) = which == 2 ? cg_real___sigsetjmp() : NULL;
    void *p = NULL;
    if (f)
        memcpy(&p, &f, sizeof p);
    else if (g)
        memcpy(&p, &g, sizeof p);
    return p;
}
