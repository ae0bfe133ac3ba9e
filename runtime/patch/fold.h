/* What the hooks' general path does with a call that keeps no frame
 * (thread layer; docs/internals/takeback.md, "Frames and exits"): an inlined call
 * folded into its host (CGPROF_INLINED=fold), a call of a skipped or
 * throttled function, any call while collection is off. Each is dropped,
 * and its hook call taken back (takeback.h) when nothing can need it. */
#ifndef CG_FOLD_H
#define CG_FOLD_H

#include <stdint.h>

#include "thread.h"

/* Collection off (cgprof_collect(false), CGPROF_COLLECT=off): every hook
 * call met is dropped and taken back; since: when it went off (the
 * runtime's clock, cg_clock_now). Set by the dump service under its lock. */
extern int cg_fold_paused;
extern uint64_t cg_fold_paused_since;
/* Collection goes off (on 0) or on again: the flags above, the hooks'
 * fast path off meanwhile (every hook then comes to the general path,
 * which drops it), and at resumption every site taken back for the pause
 * put back. Not from a hook (it waits for the tables' lock). */
void cg_fold_collect(int on);


/* cg_takeback_call for a hook of thread t, the time it takes left out of
 * t's times. */
int cg_fold_take(struct cg_thread *t, uintptr_t fn, uintptr_t code, int enter, int reason);

/* The event of a hook (its enter or exit of fn; site, sp and code as the
 * hook gives them), t's guard held, at time now (resync: the stack may be
 * re-synchronised first, as generalpath.c's cg_general_apply does):
 * CG_FOLD_DROPPED when it was dropped here (its call keeps no frame),
 * CG_FOLD_KEPT when it goes on to the tables as before,
 * CG_FOLD_INLINED_BELOW when it goes on as an inlined call below the top
 * frame (CGPROF_INLINED=count: cg_costs_enter_as). */
enum { CG_FOLD_KEPT, CG_FOLD_DROPPED, CG_FOLD_INLINED_BELOW };
int cg_fold_event(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter,
                  uint64_t now, int resync);

#endif
