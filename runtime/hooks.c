/* The two exported hooks that code built with -finstrument-functions calls
 * on every function entry and exit. Nothing else lives here.
 *
 * Rules of the hot path: no malloc, no lock, no stdio, no system call (the
 * clock is RDTSC or the vDSO), errno untouched (the slow paths that make
 * system calls restore it), and a per-thread guard so that a hook re-entered
 * from a signal handler returns at once. */
#include "clock.h"
#include "costs.h"
#include "runtime.h"
#include "thread.h"

/* The extern declarations are in glibc's headers only with _GNU_SOURCE;
 * declare them here with the export attribute. */
CG_EXPORT void __cyg_profile_func_enter(void *fn, void *site);
CG_EXPORT void __cyg_profile_func_exit(void *fn, void *site);

/* The clock as this thread sees it, never going backwards: a thread that
 * migrates to a core whose TSC lags by a few cycles must not charge a
 * negative (wrapped) duration. */
static inline CG_HOT uint64_t thread_now(struct cg_thread *t)
{
    uint64_t now = cg_clock_now();
    if (cg_unlikely(now < t->last_now))
        now = t->last_now;
    t->last_now = now;
    return now;
}

/* The calling thread's state with its guard taken, or NULL when this hook
 * must do nothing: runtime not ready, collection paused, or a hook already
 * running on this thread (this one comes from a signal handler). */
static inline CG_HOT struct cg_thread *hook_begin(void)
{
    struct cg_thread *t = cg_self;
    if (cg_unlikely(!t) && !(t = cg_thread_attach()))
        return NULL;
    if (cg_unlikely(t->guard | !cg_collecting))
        return NULL;
    t->guard = 1;
    cg_signal_fence();
    return t;
}

static inline CG_HOT void hook_end(struct cg_thread *t)
{
    cg_signal_fence();
    t->guard = 0;
}

CG_HOT void __cyg_profile_func_enter(void *fn, void *site)
{
    struct cg_thread *t = hook_begin();
    if (!t)
        return;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    uint64_t now = thread_now(t);
    cg_costs_resync(&t->costs, (uintptr_t)fn, sp, 1, now);
    cg_costs_enter(&t->costs, (uintptr_t)fn, (uintptr_t)site, sp, now);
    hook_end(t);
}

CG_HOT void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    struct cg_thread *t = hook_begin();
    if (!t)
        return;
    uint64_t now = thread_now(t);
    cg_costs_resync(&t->costs, (uintptr_t)fn, (uintptr_t)__builtin_frame_address(0), 0, now);
    cg_costs_exit(&t->costs, (uintptr_t)fn, now);
    hook_end(t);
}
