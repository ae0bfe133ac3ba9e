/* Small compiler helpers shared by the runtime. */
#ifndef CG_COMPILER_H
#define CG_COMPILER_H

#define cg_likely(x)   __builtin_expect(!!(x), 1)
#define cg_unlikely(x) __builtin_expect(!!(x), 0)

/* Every runtime function is kept out of instrumentation, even if a user
 * builds the runtime with -finstrument-functions by mistake: a hook that
 * calls itself would recurse forever. */
#define CG_NOINSTR __attribute__((no_instrument_function))
#define CG_HOT     __attribute__((hot)) CG_NOINSTR
#define CG_COLD    __attribute__((cold, noinline)) CG_NOINSTR
/* A function that reads, on purpose, what another thread writes with
 * plain stores (a dump reading a running thread's tables: reading.c, the
 * racy_* functions): ThreadSanitizer leaves its accesses out.
 * Kept out of line so that no other code inherits the exemption; every
 * other access of the hand-offs is still checked (scripts/test). */
#define CG_RACY_READ __attribute__((noinline, no_sanitize("thread"))) CG_NOINSTR
#define CG_EXPORT  __attribute__((visibility("default")))

/* CG_STATIC: the runtime built for libcgprof.a, linked into a static
 * program (runtime/meson.build, docs/install.md, "Static programs"). A static link
 * cannot interpose a C library function by defining it again (libc.a
 * defines it too), so each wrapper is named as the linker's
 * -Wl,--wrap=NAME wants it, __wrap_NAME, and reaches the real function as
 * __real_NAME (real.h). CG_WRAP(name) is the wrapper's name, CG_WRAP_ASM
 * the prefix for the wrappers written in assembly. */
#ifndef CG_STATIC
#define CG_STATIC 0
#endif
#if CG_STATIC
#define CG_WRAP(name) __wrap_##name
#define CG_WRAP_ASM   "__wrap_"
#else
#define CG_WRAP(name) name
#define CG_WRAP_ASM   ""
#endif
/* The static runtime's declaration of a wrapper: its prototype is the C
 * library's (which declares the dynamic runtime's wrappers already). */
#if CG_STATIC
#define CG_WRAPPER_DECL(name) __typeof__(name) CG_WRAP(name)
#else
#define CG_WRAPPER_DECL(name) __typeof__(name) name
#endif
/* The hot path's pieces, inlined into the hooks whatever the compiler's
 * estimate: gcc kept cg_costs_enter out of line (it is also used by the
 * replay of deferred events), a call and six saved registers per hook. */
#define CG_INLINE  __attribute__((always_inline)) inline CG_HOT

/* Orders plain stores against a signal handler running on the same thread;
 * compiles to nothing on x86 but stops the compiler from moving them. */
#define cg_signal_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)

#define CG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CG_CHECK(cond): an invariant of the tables or the guard, checked when
 * the runtime is built with -Dchecks=true (the default of a debug build;
 * scripts/test's sanitizer build of the unit tests): a breach prints the
 * condition and its place on stderr and aborts. In any other build it is
 * nothing at all: cond is not even evaluated, and cg_check_failed does not
 * exist, so a check left outside the macro fails to link. */
#if defined(CG_CHECKS) && CG_CHECKS
void cg_check_failed(const char *cond, const char *file, int line) __attribute__((noreturn, cold));
#define CG_CHECK(cond) (cg_likely(cond) ? (void)0 : cg_check_failed(#cond, __FILE__, __LINE__))
#else
#define CG_CHECK(cond) ((void)0)
#endif

#endif
