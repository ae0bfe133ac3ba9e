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

/* A thread's first hook may initialise the runtime (a constructor of a
 * library loaded before ours). */
CG_HOOK_SLOW(hook_slow, cg_runtime_ready, &cg_hooks)

CG_HOOK_PAIR(__cyg_profile_func_enter, __cyg_profile_func_exit, hook_slow)

CG_HOT void cg_hook_enter_entry(void *fn, void *site) __attribute__((alias("__cyg_profile_func_enter"), visibility("hidden")));
CG_HOT void cg_hook_exit_entry(void *fn, void *site) __attribute__((alias("__cyg_profile_func_exit"), visibility("hidden")));

const struct cg_hook_addrs cg_hooks = {(uintptr_t)cg_hook_enter_entry, (uintptr_t)cg_hook_exit_entry};
