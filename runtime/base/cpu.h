/* The architecture's header (base layer): what the runtime needs of the
 * CPU that is not C, one header per architecture under runtime/arch/, each
 * defining the same names (arch/x86_64/cpu_x86_64.h says which). Any other
 * architecture gets none of them: CG_CPU_HAVE_COUNTER 0 (the exact clock is
 * CLOCK_MONOTONIC), no vfork or setjmp stub, the compiler's jump for the
 * runtime's own; the uses below say what each does without
 * (docs/limitations.md). */
#ifndef CG_CPU_H
#define CG_CPU_H

#if defined(__x86_64__)
#include "cpu_x86_64.h"
#elif defined(__aarch64__)
#include "cpu_aarch64.h"
#else
#include <stdint.h>

#define CG_CPU_NAME "this architecture"
#define CG_CPU_HAVE_TAKEBACK 0
#define CG_CPU_SITE_BYTES 1
#define CG_CPU_SITE_NEEDS_SYNC 0
#define CG_CPU_HAVE_COUNTING 1 /* the counting hooks' walk is libunwind's, if built with it */
#define CG_CPU_HAVE_SITES 0
#define CG_CPU_SITE_CALL_MIN 1
#define CG_CPU_SITE_CALL_MAX 0 /* none: no site is ever recorded */
#define CG_CPU_SITE_CALL_LEN(form) ((void)(form), 0u)
#define CG_CPU_HAVE_COUNTER 0
#define CG_CPU_COUNTER_NAME ""
#define CG_CPU_COUNTER_RATE ""
#define CG_CPU_HAVE_VFORK_STUB 0
/* the hooks' frame key: the call frame address, as the compiler gives it */
#define CG_CPU_CFA() ((uintptr_t)__builtin_dwarf_cfa())
#define CG_CPU_HAVE_SETJMP_STUB 0

/* The runtime's own jump (symsession.c): the compiler's __builtin_setjmp
 * and __builtin_longjmp, which save and change no signal mask either, where
 * the compiler has them (gcc on every target, clang on some). */
#define CG_CPU_HAVE_JUMP 0
typedef void *cg_cpu_jump_buf[5];
#define cg_cpu_jump_set(buf) __builtin_setjmp(buf)
#define cg_cpu_jump_go(buf)  __builtin_longjmp(buf, 1)

/* a plain increment: a signal handler's own increment in between may be
 * lost */
static inline void cg_cpu_count_one(uint64_t *count)
{
    __atomic_store_n(count, *count + 1, __ATOMIC_RELAXED);
}

/* no instruction decoded: no function's enter hook call is found */
#define CG_CPU_DECODE(p, avail, addr, out) ((void)(p), (void)(avail), (void)(addr), (void)(out), 0u)
#define CG_CPU_PLT_BYTES 1
static inline uintptr_t cg_cpu_plt_slot(const unsigned char *b, uintptr_t pc)
{
    (void)b, (void)pc;
    return 0;
}
#define CG_CPU_PLT_UNBOUND_BYTES 1
static inline int cg_cpu_plt_unbound(const unsigned char *b)
{
    (void)b;
    return 0;
}
#define CG_CPU_CALL_BYTES 1
static inline int cg_cpu_is_call(const unsigned char *b)
{
    (void)b;
    return 0;
}
#endif

#endif
