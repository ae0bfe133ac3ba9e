/* The second member of libcgprof.a (entry layer), next to the runtime's
 * object: what the wraps of a static program need, linked only when the
 * link asks for it with -Wl,-u,cgprof_static_wraps, as
 * `pkg-config --static --libs cgprof` does together with the
 * -Wl,--wrap=NAME options (docs/install.md, "Static programs"):
 *
 *  - a strong reference to each __real_NAME, so that the linker brings the
 *    C library's NAME into the program: with --wrap=NAME every other
 *    reference to NAME goes to the runtime's wrapper, and the runtime's own
 *    references to __real_NAME are weak (real.c), so that a program linked
 *    without the wraps links at all. The personality routine of C++ stays
 *    weak: a C program has none. In a C++ program, the flags' other
 *    -Wl,-u, __cxa_call_unexpected, brings the member of the C++ runtime
 *    that defines it with the personality routine (libstdc++'s
 *    eh_personality.o, libc++abi's cxa_personality.o): nothing else may
 *    reference the real routine once --wrap has sent every reference to
 *    the wrapper, and a -u of the routine itself would make the weak
 *    references strong, and C programs fail to link;
 *  - a reference to the hooks, so that the runtime's object is linked
 *    whatever the order of the command line: with -lcgprof before the
 *    program's objects, nothing would be undefined yet when the linker
 *    reads the archive, and the C library's empty hooks would be taken. */
#define _GNU_SOURCE
#include "real.h"

void __cyg_profile_func_enter(void *fn, void *site);

#define WRAPS_DECL_WRAP(name, ret, params) extern ret __real_##name params;
#define WRAPS_DECL_OWN(name, ret, params)  extern ret __real_##name params;
#define WRAPS_DECL_NONE(name, ret, params)
#define WRAPS_DECL_WEAK(name, ret, params)
#define WRAPS_DECL(name, handle, kind, ret, params) WRAPS_DECL_##kind(name, ret, params)
CG_REAL_TABLE(WRAPS_DECL)
#undef WRAPS_DECL
#pragma weak __real___gxx_personality_v0

typedef void (*any_fn)(void);

#define WRAPS_REF_WRAP(name) (any_fn) __real_##name,
#define WRAPS_REF_OWN(name)  (any_fn) __real_##name,
#define WRAPS_REF_NONE(name)
#define WRAPS_REF_WEAK(name)
#define WRAPS_REF(name, handle, kind, ret, params) WRAPS_REF_##kind(name)

__attribute__((used)) const any_fn cgprof_static_wraps[] = {
    CG_REAL_TABLE(WRAPS_REF)(any_fn) __cyg_profile_func_enter,
};
