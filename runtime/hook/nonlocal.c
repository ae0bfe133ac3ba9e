/* Non-local exits: a longjmp, or an exception that clang-built code unwinds
 * (clang calls no exit hook while unwinding; gcc does), leaves frames whose
 * exit hooks never run. The hooks alone can only guess which (a later hook
 * at a higher stack pointer: cg_resync_slow), and an inlined frame, which
 * shares its host's stack pointer, cannot be told from its host that way.
 * So the runtime watches the exits themselves, and ends exactly the frames
 * they leave, when they leave them:
 *  - setjmp (setjmp, _setjmp, __sigsetjmp): the depth of the shadow stack
 *    when a jmp_buf is set, with its top frame, in a small per-thread table
 *    keyed by the jmp_buf's address;
 *  - longjmp (longjmp, _longjmp, siglongjmp, __longjmp_chk): the frames above
 *    that depth end; when the jmp_buf was not seen (set before the thread's
 *    first hook, or by code that calls no libc setjmp), the frames below
 *    the stack pointer the jmp_buf restores (glibc's layout: cpu.h);
 *  - exceptions (the personality routines __gxx_personality_v0 and
 *    __gcc_personality_v0, which the unwinder asks before it enters a
 *    landing pad: a catch or a cleanup): the frames below the landing
 *    frame's stack pointer at its call, which is where the landing pad runs.
 * What is left to guess: frames inlined into the frame an exception lands
 * in, which share its stack pointer (see docs/internals/design.md).
 *
 * Each wrapper passes the call through unchanged; the setjmp stubs jump to
 * glibc's, so that it saves the program's own context. In the static
 * runtime (CG_STATIC) each is __wrap_NAME, for the linker's --wrap=NAME. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "compiler.h"
#include "costs.h"
#include "cpu.h"
#include "generalpath.h"
#include "real.h"
#include "thread.h"
#include "util.h"

static CG_NOINSTR size_t jmp_slot(uintptr_t env)
{
    return (size_t)(cg_hash2(env >> 4, 0) >> 58) & (CG_JMP_SLOTS - 1);
}

/* ---- setjmp -------------------------------------------------------------- */

/* Called by the stubs below with the jmp_buf, the stack pointer that the
 * setjmp's caller will have after it returns, and which setjmp (0: setjmp,
 * 1: _setjmp, 2: __sigsetjmp); returns the C library's function, which the
 * stub then jumps to with the arguments it got. Nothing here may disturb
 * the program: no errno change, no lock. */
CG_NOINSTR __attribute__((used)) void *cg_setjmp_seen(void *env, uintptr_t sp, int which);
CG_NOINSTR __attribute__((used)) void *cg_setjmp_seen(void *env, uintptr_t sp, int which)
{
    void *real = cg_real_setjmp_target(which);
    struct cg_thread *t = cg_self;
    if (t && !t->guard && t->costs.frames) {
        const struct cg_costs *c = &t->costs;
        uint32_t depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
        struct cg_jmp_seen *j = &t->nonlocal.jmps[jmp_slot((uintptr_t)env)];
        j->env = 0; /* a signal handler's setjmp meanwhile never mixes two */
        cg_signal_fence();
        j->depth = depth;
        j->top_fn = depth ? c->frames[depth - 1].fn : 0;
        j->top_sp = depth ? c->frames[depth - 1].sp : 0;
        j->sp = sp;
        cg_signal_fence();
        j->env = (uintptr_t)env;
    }
    return real;
}

#if CG_CPU_HAVE_SETJMP_STUB
/* The stubs (cpu.h, CG_CPU_SETJMP_ASM: x86-64's and aarch64's): save the
 * argument registers, ask cg_setjmp_seen, restore them and jump, so that
 * the C library's setjmp sees its caller's stack and return address as if
 * it had been called directly. */
__asm__(CG_CPU_SETJMP_ASM(CG_WRAP_ASM));

/* The stack pointer a jmp_buf restores, by the architecture's glibc
 * layout (cpu.h). */
static CG_NOINSTR uintptr_t jmp_buf_sp(const void *env)
{
    return cg_cpu_jmp_buf_sp(env, cg_real_setjmp_target(1));
}
#else
static CG_NOINSTR uintptr_t jmp_buf_sp(const void *env)
{
    (void)env;
    return 0;
}
#endif

/* ---- longjmp --------------------------------------------------------------- */

/* Whether a longjmp to env from a signal handler leaves the hook it
 * interrupted (t's guard held by a hook): the hook runs below the top
 * frame's stack pointer (the frame it is entering or leaving, or its
 * caller's: a jump to that frame's body lands at its stack pointer), so
 * a jump to there or above leaves the hook. A jump that stays within the
 * handler lands below it. */
static CG_NOINSTR int leaves_hook(const struct cg_thread *t, const void *env)
{
    const struct cg_costs *c = &t->costs;
    uint32_t depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
    uintptr_t target = jmp_buf_sp(env);
    uintptr_t below = depth ? c->frames[depth - 1].sp : (uintptr_t)__builtin_frame_address(0);
    return target >= below && target - below < (uintptr_t)1 << 30;
}

/* Ends the frames a longjmp to env leaves, before it is made. */
static CG_NOINSTR void longjmp_seen(const void *env)
{
    struct cg_thread *t = cg_self;
    if (!t || !t->costs.frames)
        return;
    /* out of a signal handler that interrupted a hook (a SIGINT or SIGALRM
     * handler of an interpreter, a timeout): the hook never ends */
    if (t->guard == CG_GUARD_HOOK && leaves_hook(t, env))
        cg_guard_abandon(t);
    if (t->guard)
        return;
    const struct cg_costs *c = &t->costs;
    const struct cg_jmp_seen *j = &t->nonlocal.jmps[jmp_slot((uintptr_t)env)];
    uint32_t depth = c->depth;
    if (j->env == (uintptr_t)env && j->depth <= depth &&
        (j->depth == 0 || (c->frames[j->depth - 1].fn == j->top_fn && c->frames[j->depth - 1].sp == j->top_sp))) {
        cg_hook_nonlocal(j->depth, 0);
        return;
    }
    /* Not seen set, or its frame is gone (a jump to a function that has
     * returned is undefined anyway): by the stack pointer, if it is above
     * the current one on this stack (not another stack's: a coroutine). */
    uintptr_t sp = jmp_buf_sp(env), here = (uintptr_t)__builtin_frame_address(0);
    if (sp > here && sp - here < (uintptr_t)1 << 30)
        cg_hook_nonlocal(UINT32_MAX, sp);
}

#define LONGJMP(name)                                                                                        \
    CG_EXPORT CG_NOINSTR __attribute__((noreturn)) void CG_WRAP(name)(struct __jmp_buf_tag env[1], int val);    \
    CG_EXPORT CG_NOINSTR __attribute__((noreturn)) void CG_WRAP(name)(struct __jmp_buf_tag env[1], int val)     \
    {                                                                                                        \
        void (*r)(struct __jmp_buf_tag *, int) = cg_real_##name();                                           \
        longjmp_seen(env);                                                                                   \
        r(env, val);                                                                                         \
        __builtin_unreachable();                                                                             \
    }

LONGJMP(longjmp)
LONGJMP(_longjmp)
LONGJMP(siglongjmp)
LONGJMP(__longjmp_chk)

/* ---- exceptions ------------------------------------------------------------ */

/* The unwinder enters a landing pad in the frame of ctx: every frame below
 * the one it lands in is gone. The context's CFA, after the unwinder stepped
 * into that frame, is the frame's stack pointer at its call (libgcc's
 * uw_update_context), where the landing pad runs. */
static CG_NOINSTR void landing(struct _Unwind_Context *ctx)
{
    /* the unwinder calling us is loaded: no library is loaded here */
    _Unwind_Word (*g)(struct _Unwind_Context *) = cg_real__Unwind_GetCFA();
    if (!g)
        return;
    uintptr_t sp = (uintptr_t)g(ctx);
    if (sp)
        cg_hook_nonlocal(UINT32_MAX, sp);
}

#define PERSONALITY(name)                                                                                    \
    CG_EXPORT CG_NOINSTR _Unwind_Reason_Code CG_WRAP(name)(int version, _Unwind_Action actions,               \
                                                  _Unwind_Exception_Class cls, struct _Unwind_Exception *e,   \
                                                  struct _Unwind_Context *ctx);                               \
    CG_EXPORT CG_NOINSTR _Unwind_Reason_Code CG_WRAP(name)(int version, _Unwind_Action actions,               \
                                                  _Unwind_Exception_Class cls, struct _Unwind_Exception *e,   \
                                                  struct _Unwind_Context *ctx)                                \
    {                                                                                                        \
        cg_personality_fn r = cg_real_##name();                                                              \
        if (!r)                                                                                              \
            return _URC_FATAL_PHASE1_ERROR;                                                                  \
        _Unwind_Reason_Code rc = r(version, actions, cls, e, ctx);                                           \
        if (rc == _URC_INSTALL_CONTEXT && (actions & _UA_CLEANUP_PHASE))                                     \
            landing(ctx);                                                                                    \
        return rc;                                                                                           \
    }

PERSONALITY(__gxx_personality_v0)
PERSONALITY(__gcc_personality_v0)

