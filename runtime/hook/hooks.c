/* The two exported hooks that code built with -finstrument-functions calls
 * on every function entry and exit (entry layer). Their bodies are
 * fastpath.h's (cg_hook_enter, cg_hook_exit: the fast path, inline); this
 * file gives them their general path, which on a thread's first hook
 * starts the runtime and makes the thread's state, and their counting
 * hook. docs/internals/design.md, "One call, file by file", follows an
 * enter hook from here to the tables.
 *
 * Rules of the hot path: no malloc, no lock, no stdio, no system call (the
 * clock is RDTSC or the vDSO), errno untouched (the slow paths that make
 * system calls restore it), and a per-thread guard so that a hook re-entered
 * from a signal handler returns at once (generalpath.h). */
#include "hooks.h"

#include "fastpath.h"
#include "generalpath.h"
#include "runtime.h"
#include "thread.h"

/* The hooks' general path (fastpath.h, cg_hook_slow_fn). A thread's first
 * hook may start the runtime (a constructor of a library loaded before
 * ours calls a hook before our constructor), then makes the thread's
 * state; both keep errno. */
static CG_COLD void hook_slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                              int enter)
{
    if (!t && (!cg_runtime_ready(&cg_hooks) || !(t = cg_thread_attach())))
        return;
    cg_hook_slow(t, fn, site, sp, code, enter);
}

/* The same for the counting hooks (CGPROF_STACKS=unwind). */
static CG_COLD void hook_slow_count(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t code, uintptr_t sp)
{
    if (!t && (!cg_runtime_ready(&cg_hooks) || !(t = cg_thread_attach())))
        return;
    cg_count_slow(t, fn, site, code, sp);
}

/* The counting enter hook, reached from __cyg_profile_func_enter by a
 * tail jump (its return address and call frame address are the hook's). */
static CG_HOT __attribute__((noinline)) void __cyg_profile_func_enter_counting(void *fn, void *site)
{
    cg_hook_count_enter(fn, site, hook_slow_count);
}

/* The enter hook: the counting hooks' (CGPROF_STACKS=unwind) apart, by a
 * tail jump before this function's prologue (5 registers saved); else the
 * fast path's body on the calling thread (cg_self), in the clock's mode
 * (cg_fast_mode), which goes on to hook_slow when it cannot finish. The
 * stack pointer and return address are read where they are used
 * (CG_FAST_SP, CG_FAST_RET: hence the zeros). calib_hooks.c's twin is the
 * same text: keep them so. */
CG_HOT void __cyg_profile_func_enter(void *fn, void *site)
{
    int mode = cg_fast_mode;
    if (mode == CG_FAST_COUNT) {
        __cyg_profile_func_enter_counting(fn, site);
        return;
    }
    cg_hook_enter_body(cg_self, (uintptr_t)fn, (uintptr_t)site, 0, 0, mode, hook_slow);
}

/* The exit hook: the counting hooks' exit inline, else the fast path's. */
CG_HOT void __cyg_profile_func_exit(void *fn, void *site)
{
    int mode = cg_fast_mode;
    if (mode == CG_FAST_COUNT) {
        cg_count_exit(cg_self, (uintptr_t)fn, CG_FAST_RET(0));
        return;
    }
    cg_hook_exit_body(cg_self, (uintptr_t)fn, (uintptr_t)site, 0, 0, mode, hook_slow);
}

CG_HOT void cg_hook_enter_entry(void *fn, void *site) __attribute__((alias("__cyg_profile_func_enter"), visibility("hidden")));
CG_HOT void cg_hook_exit_entry(void *fn, void *site) __attribute__((alias("__cyg_profile_func_exit"), visibility("hidden")));

const struct cg_hook_addrs cg_hooks = {(uintptr_t)cg_hook_enter_entry, (uintptr_t)cg_hook_exit_entry};
