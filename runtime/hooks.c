/* The two exported hooks that code built with -finstrument-functions calls
 * on every function entry and exit (entry layer). Their bodies are
 * fastpath.h's; this file gives them the calling thread, the hook's stack
 * pointer and return address, and a thread's first hook.
 *
 * Rules of the hot path: no malloc, no lock, no stdio, no system call (the
 * clock is RDTSC or the vDSO), errno untouched (the slow paths that make
 * system calls restore it), and a per-thread guard so that a hook re-entered
 * from a signal handler returns at once (guard.h). */
#include "hooks.h"

#include "fastpath.h"
#include "guard.h"
#include "runtime.h"
#include "thread.h"

/* The general path from the start; t NULL: the thread's first hook, which
 * may initialise the runtime (a constructor of a library loaded before
 * ours) and makes the thread's state. */
static CG_COLD void hook_slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                              int enter)
{
    /* both keep errno */
    if (!t && (!cg_runtime_ready() || !(t = cg_thread_attach())))
        return;
    cg_guard_hook(t, fn, site, sp, code, enter);
}

/* The hook's stack pointer (where its caller's stack pointer was before
 * its call: the frames' sp, compared across hooks by cg_costs_resync and
 * with a hook called from the same frame, inlined calls) and its return
 * address are read where they are used, by CG_FAST_SP and CG_FAST_RET:
 * the call frame address needs no frame pointer, unlike
 * __builtin_frame_address. */
#define HOOK_SP() 0
#define HOOK_RET() 0

CG_HOT void __cyg_profile_func_enter(void *fn, void *site)
{
    cg_hook_enter_body(cg_self, (uintptr_t)fn, (uintptr_t)site, HOOK_SP(), HOOK_RET(), cg_fast_mode, hook_slow);
}

CG_HOT void __cyg_profile_func_exit(void *fn, void *site)
{
    cg_hook_exit_body(cg_self, (uintptr_t)fn, (uintptr_t)site, HOOK_SP(), HOOK_RET(), cg_fast_mode, hook_slow);
}

CG_HOT void cg_hook_enter_entry(void *fn, void *site) __attribute__((alias("__cyg_profile_func_enter"), visibility("hidden")));
CG_HOT void cg_hook_exit_entry(void *fn, void *site) __attribute__((alias("__cyg_profile_func_exit"), visibility("hidden")));
