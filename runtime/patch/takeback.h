/* Taking hook calls back (thread layer): the policy over the site
 * registry (registry.h): which of the program's hook call sites are taken
 * back, why and when, and putting them back. The model is
 * docs/internals/takeback.md; the decisions of which call to take back are
 * fold.c's (the hooks' general path), the record of the sites registry.h's,
 * the sites and their bytes patch.h's, the ranges ehframe.c's.
 *
 * Called from the hooks' slow paths (a thread's guard held, possibly in a
 * signal handler): no malloc, no blocking lock (the registry's lock is only
 * tried: a site whose lock was busy is taken back the next time it is
 * met), errno preserved. The restoring and forgetting functions are not
 * for hooks: they wait for the lock. */
#ifndef CG_TAKEBACK_H
#define CG_TAKEBACK_H

#include <stdint.h>

#include "registry.h"
#include "thread.h"

/* The hooks' own entry points (the targets a site must reach), set once
 * before any hook is taken back; with enabled 0 (CGPROF_TAKEBACK=0) no code
 * is ever changed, and every decision is made as if each site's change had
 * failed. */
void cg_takeback_init(uintptr_t hook_enter, uintptr_t hook_exit, int enabled);

/* Whether the enter hook that returns to code, for fn, is the function's
 * own (1: the first call of its machine function), is in code fn was
 * inlined into (0), or cannot be told (-1: no unwind tables, a range the
 * decoder does not trust). */
int cg_takeback_own(uintptr_t fn, uintptr_t code);
/* The same, and with wait set, when another thread holds the registry's
 * lock (taking another site back), its answer after that thread's work
 * rather than -1: the counting hooks cache the answer in a slot, and a
 * guess taken for a real call there invents arcs for every later call. */
int cg_takeback_own_in(uintptr_t fn, uintptr_t code, int wait);

/* Whether the machine function that begins at addr (its unwind tables'
 * range) calls the hooks but has no enter hook of its own: a part of a
 * function that the compiler split off (gcc's fn.part.0, fn.cold), whose
 * code is that of whichever frame its head runs in, inlined or not (the
 * writer's question, cg_part_info). Decodes the range if it was not yet.
 * Not from a hook: tries the lock a while (a crash's dump may interrupt a
 * hook that holds it), 0 when it cannot tell. */
int cg_takeback_part_code(uintptr_t addr);

/* Takes back the hook call that returns to code (an enter of fn, or an exit
 * of fn called, not tail-called), for reason. 1: taken back (or already);
 * 0: not now (the lock busy); -1: not a site that can be (not a hook call,
 * refused by the system, not known). An enter taken back for inlining is
 * recorded as such in its range, so that the exits of the same function in
 * that range can follow (cg_takeback_exit). */
int cg_takeback_call(uintptr_t fn, uintptr_t code, int enter, int reason);

/* An exit of fn that found no frame of fn to end (its call has none),
 * returning to code: its site (or, for a tail-called exit hook, the tail
 * jumps of fn's own code) taken back when nothing can still need it:
 *  - CG_TB_INLINED: the exit call is in a range where an enter of fn was
 *    folded (the exits of the same inlined call);
 *  - CG_TB_FILTERED, CG_TB_PAUSED: no thread has a frame of fn entered
 *    from the site's range, and fn was taken back (at `since`, the
 *    runtime's clock) at least CG_TB_SETTLE_NS ago when other threads
 *    run (one may be inside an enter hook of fn begun before);
 *  - CG_TB_COUNTING: at once (no frame ever needs an exit then), the
 *    site's or, for a tail-called exit hook, fn's tail jumps.
 * Checks are spaced out per site (they walk every thread's stack). */
#define CG_TB_SETTLE_NS 2000000u
void cg_takeback_exit(uintptr_t fn, uintptr_t code, int reason, uint64_t since);

/* Puts back every site taken back for reason (CG_TB_PAUSED: collection
 * resumes); the number put back. Waits for the lock: not from a hook. */
unsigned long cg_takeback_restore(int reason);
/* An object [lo, hi) is about to be unloaded: its sites are forgotten (not
 * restored: its code goes), so that nothing is ever written into what is
 * loaded at those addresses next. Waits for the lock. */
void cg_takeback_unload(uintptr_t lo, uintptr_t hi);
/* In a forked child: a lock held by a thread that is not there is let go,
 * and the tables, which that thread may have been changing, are no longer
 * trusted (nothing more is taken back in the child). */
void cg_takeback_forked(void);

/* The counters (registry.h), read under the lock (waits a while for it:
 * not from a hook). */
void cg_takeback_stats(struct cg_takeback_stats *out);

#endif
