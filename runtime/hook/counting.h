/* The counting hooks (thread layer; CGPROF_STACKS=unwind, issue 38): the
 * enter hook counts the call, the exit hook does nothing, and no shadow
 * stack is kept. Each thread's sampler unwinds the real stack to charge the
 * calls on it (sample.c), as perf does from outside.
 *
 * Why: two hook calls and a shadow-stack frame cost a real program 14 ns a
 * call in sampled time (SQLite, 62M calls: its thousands of arcs and 72-byte
 * frames do not stay in the cache), where the counter alone costs about 2.6
 * (the prototype of issue 38's note). A call's arc is decided without a
 * stack:
 *  - the callee is the hook's fn;
 *  - the caller is the function whose code holds the call site (the unwind
 *    tables' range of the site): the function with hooks that made the
 *    call, or, where the site is in code without hooks (qsort running a
 *    comparator, a thread's start), 0, which the writer names by the code
 *    the site is in, as it does for the hooks' arcs of such calls;
 *  - an enter hook that is not its function's own (the unwind tables' rule,
 *    cg_takeback_own) is an inlined copy's: folded into its host and its
 *    hook call taken back, as CGPROF_INLINED=fold does;
 *  - a signal handler's site is the sigreturn trampoline: its caller is the
 *    function the signal interrupted, found by unwinding at each such call
 *    (no slot: they come here every time).
 * The key of a slot is (the hook's return address, the site): the return
 * address decides the callee (one call instruction calls one hook for one
 * function) and the site decides the caller, so a slot is an arc. */
#ifndef CG_COUNTING_H
#define CG_COUNTING_H

#include <stdint.h>

#include "compiler.h"
#include "costs.h"
#include "cpu.h"
#include "generalpath.h"
#include "thread.h"

/* A new key, the thread's first hook, a slot beyond the first few probes,
 * or a call from code without hooks (a callback, a signal handler: no
 * slot, they come here every time): the slow path. t is not NULL (the
 * hooks' wrapper attaches the thread first). ret: the hook's return
 * address; sp: its call frame address. */
CG_COLD void cg_count_slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret, uintptr_t sp);

/* The function with hooks, entered on the thread of c, whose frames the
 * machine function that starts at start runs (itself, or the function of
 * a clone or part of it), or 0. From that thread (its sampler too). */
uintptr_t cg_count_function(const struct cg_costs *c, uintptr_t start);

/* Calls of signal handlers kept while the thread is in the slow path. */
#define CG_COUNT_DEFERRED 1024

/* The guard given back by a slow path that is not cg_count_slow's (the
 * exit's, the sampler's): the calls of handlers kept meanwhile counted. */
static CG_INLINE void cg_count_release(struct cg_thread *t)
{
    cg_guard_release(t);
    if (cg_unlikely(t->count_ndeferred))
        cg_count_slow(t, 0, 0, 0, 0);
}

/* Probes the fast path makes before it gives up (the table is at most half
 * full: most keys are in their first slot). */
#define CG_COUNT_PROBES 4

/* The body of the counting enter hook: the slot found, its count one more
 * (one instruction: a hook in a signal handler that interrupts it counts
 * its own call whole), or the slow path. No guard: a slot is complete once
 * its key is there, and only the slow path, under the guard, makes one. */
static CG_INLINE void cg_count_enter(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret,
                                     void (*slow)(struct cg_thread *, uintptr_t, uintptr_t, uintptr_t, uintptr_t))
{
    struct cg_count_table *tab;
    if (cg_likely(t != NULL && (tab = t->costs.count) != NULL)) {
        uint64_t k = cg_count_hash(ret, site);
        for (unsigned i = 0; i < CG_COUNT_PROBES; i++, k++) {
            struct cg_count_slot *s = &tab->slot[k & tab->mask];
            if (cg_likely(s->ret == ret && s->site == site)) {
                cg_cpu_count_one(&s->count);
                return;
            }
            if (!s->ret)
                break;
        }
    }
    slow(t, fn, site, ret, CG_CPU_CFA());
}

/* The exit hook's call sites that came to cg_count_exit_slow on this
 * thread (a power of two): one whose call could not be taken back comes
 * again, and only looks here. */
#define CG_COUNT_EXITS 64

/* An exit hook call met: taken back (CG_TB_COUNTING), and remembered. */
CG_COLD void cg_count_exit_slow(struct cg_thread *t, uintptr_t fn, uintptr_t ret);

/* The body of the counting exit hook: nothing to count; its call site taken
 * back the first time it is met (every thread's next call of it costs the
 * floor), or, where that could not be done, remembered. */
static CG_INLINE void cg_count_exit(struct cg_thread *t, uintptr_t fn, uintptr_t ret)
{
    if (cg_likely(t != NULL) && cg_unlikely(t->count_exits[(ret >> 4 ^ ret >> 10) & (CG_COUNT_EXITS - 1)] != ret))
        cg_count_exit_slow(t, fn, ret);
}

#endif
