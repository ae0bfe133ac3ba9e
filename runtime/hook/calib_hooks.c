/* The calibration's hooks: see calib_hooks.h. In a file of their own, not
 * calib_target.c: that file is built with -finstrument-functions, and the
 * compiler must not see the hooks' code where it compiles their calls
 * (it would then keep registers across them that a program's calls
 * save). Written as hooks.c's are, on the same bodies (fastpath.h), so
 * that they are the same instructions. */
#include "calib_hooks.h"

#include "fastpath.h"
#include "generalpath.h"
#include "thread.h"

/* Never called (the calibration's thread state is always there); a call
 * the compiler cannot see into, as hooks.c's of cg_runtime_ready, so that
 * the general path it measures saves the registers the hooks' does: gcc's
 * noipa. clang has no noipa, and needs only part of it: it keeps its
 * callers' registers whatever the callee uses (no allocation across
 * functions), but would fold a result it can see (the call gone with it),
 * so its result comes out of an empty asm that may also touch memory. */
#if defined(__clang__)
static __attribute__((noinline)) int not_started(const void *arg)
{
    int started = 0;
    __asm__ volatile("" : "+r"(started) : "r"(arg) : "memory");
    return started;
}
#else
static __attribute__((noipa)) int not_started(const void *arg)
{
    (void)arg;
    return 0;
}
#endif

static const char calib_arg;

/* hooks.c's hook_slow and hook_slow_count, with not_started for
 * cg_runtime_ready. */
static CG_COLD void calib_slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                               int enter)
{
    if (!t && (!not_started(&calib_arg) || !(t = cg_thread_attach())))
        return;
    cg_hook_slow(t, fn, site, sp, code, enter);
}

static CG_COLD void calib_slow_count(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t code, uintptr_t sp)
{
    if (!t && (!not_started(&calib_arg) || !(t = cg_thread_attach())))
        return;
    cg_count_slow(t, fn, site, code, sp);
}

static CG_HOT __attribute__((noinline)) void cg_calib_enter_counting(void *fn, void *site)
{
    cg_hook_count_enter(fn, site, calib_slow_count);
}

/* hooks.c's __cyg_profile_func_enter and __cyg_profile_func_exit, the same
 * text (an inline function taking the counting hook and the general path
 * as arguments made gcc lay the hooks' blocks out otherwise): keep them
 * so. */
CG_HOT void cg_calib_enter(void *fn, void *site)
{
    int mode = cg_fast_mode;
    if (mode == CG_FAST_COUNT) {
        cg_calib_enter_counting(fn, site);
        return;
    }
    cg_hook_enter_body(cg_self, (uintptr_t)fn, (uintptr_t)site, 0, 0, mode, calib_slow);
}

CG_HOT void cg_calib_exit(void *fn, void *site)
{
    int mode = cg_fast_mode;
    if (mode == CG_FAST_COUNT) {
        cg_count_exit(cg_self, (uintptr_t)fn, CG_FAST_RET(0));
        return;
    }
    cg_hook_exit_body(cg_self, (uintptr_t)fn, (uintptr_t)site, 0, 0, mode, calib_slow);
}
