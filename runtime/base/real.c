#define _GNU_SOURCE
#include "real.h"

#include <stdint.h>

struct cg_real cg_real;

#define CG_REAL_STORE(name, ret, params, value)                                                              \
    do {                                                                                                   \
        ret(*f_) params = (value);                                                                         \
        if (f_)                                                                                            \
            __atomic_store_n(&cg_real.fn_##name, f_, __ATOMIC_RELEASE);                                    \
    } while (0)

#if !CG_STATIC

void cg_real_resolve(void)
{
    void *sym;
#define CG_REAL_LOOKUP(name, handle, kind, ret, params)                                                       \
    if (!__atomic_load_n(&cg_real.fn_##name, __ATOMIC_ACQUIRE) && (sym = dlsym(handle, #name)) != NULL) {      \
        ret(*p_) params;                                                                                     \
        memcpy(&p_, &sym, sizeof sym);                                                                       \
        CG_REAL_STORE(name, ret, params, p_);                                                                \
    }
    CG_REAL_TABLE(CG_REAL_LOOKUP)
#undef CG_REAL_LOOKUP
}

#else

/* The static runtime (see real.h): the weak references __real_NAME, which
 * the linker binds to the C library's NAME in a program linked with
 * -Wl,--wrap=NAME, and leaves null otherwise. */
#define CG_REAL_DECL_WRAP(name, ret, params) extern ret __real_##name params __attribute__((weak));
#define CG_REAL_DECL_OWN(name, ret, params)  CG_REAL_DECL_WRAP(name, ret, params) __typeof__(name) __wrap_##name;
#define CG_REAL_DECL_NONE(name, ret, params)
#define CG_REAL_DECL_WEAK(name, ret, params) extern __typeof__(name) name __attribute__((weak));
#define CG_REAL_DECL(name, handle, kind, ret, params) CG_REAL_DECL_##kind(name, ret, params)
CG_REAL_TABLE(CG_REAL_DECL)
#undef CG_REAL_DECL

/* NAME itself, for the runtime's own calls in a program linked without the
 * wraps; NULL if NAME is in fact the runtime's wrapper (the program was
 * linked with --wrap=NAME, and yet __real_NAME is not there: the wraps
 * without -Wl,-u,cgprof_static_wraps, see runtime/entry/static_wraps.c), which
 * would call itself. The comparison is made through an opaque copy: the
 * compiler would otherwise take two functions' addresses for different. */
static uintptr_t own_fallback(uintptr_t fn, uintptr_t wrapper)
{
    __asm__("" : "+r"(fn));
    return fn == wrapper ? 0 : fn;
}

void cg_real_resolve(void)
{
#define CG_REAL_SET_WRAP(name, ret, params) CG_REAL_STORE(name, ret, params, __real_##name);
#define CG_REAL_SET_OWN(name, ret, params)                                                                    \
    if (__real_##name) {                                                                                     \
        CG_REAL_STORE(name, ret, params, __real_##name);                                                     \
    } else {                                                                                                 \
        ret(*p_) params = name, (*w_) params = __wrap_##name;                                                \
        uintptr_t own_, wrap_;                                                                               \
        memcpy(&own_, &p_, sizeof p_);                                                                       \
        memcpy(&wrap_, &w_, sizeof w_);                                                                      \
        own_ = own_fallback(own_, wrap_);                                                                    \
        memcpy(&p_, &own_, sizeof p_);                                                                       \
        CG_REAL_STORE(name, ret, params, p_);                                                                \
    }
#define CG_REAL_SET_NONE(name, ret, params)
#define CG_REAL_SET_WEAK(name, ret, params) CG_REAL_STORE(name, ret, params, name);
#define CG_REAL_SET(name, handle, kind, ret, params) CG_REAL_SET_##kind(name, ret, params)
    CG_REAL_TABLE(CG_REAL_SET)
#undef CG_REAL_SET
}

#endif

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
