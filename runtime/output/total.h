/* The sums of parts (service layer): the run's total (CGPROF_TOTAL=1), the
 * parts of threads that ended merged into one (CGPROF_THREAD_EXIT=merge),
 * and the repairs counted over every part written, for the warning at the
 * end of the run. Used under the dump lock. */
#ifndef CG_TOTAL_H
#define CG_TOTAL_H

#include <stdint.h>

#include "snapshot.h"
#include "part.h"

/* Adds a part just written (or merged) to the sums; finished: its thread
 * has ended, this is its last part. part's entries may be taken (it is then
 * empty). */
void cg_total_add(struct cg_snapshot *part, int finished);
/* Writes the total as it stands (nothing unless CGPROF_TOTAL=1), after
 * every running thread's latest part was added: running threads and the
 * calls in progress in them, for its desc: lines. */
void cg_total_write(struct cg_dump *d, unsigned running, uint64_t running_depth);
/* Files of another process with this pid are in the output directory
 * (dump.c): the total is written as <total>.N, N the first number free
 * at its first write, never over the other's. */
void cg_total_keep_others(void);
/* The total so far (empty unless CGPROF_TOTAL=1). */
const struct cg_snapshot *cg_total_snapshot(void);
/* The repairs in the parts written so far: frames left without exit,
 * unmatched exits, calls lost (out[0..2]). */
void cg_total_repairs(uint64_t out[3]);
/* The end of the run: one warning line when a part held a repair. */
void cg_total_warn_repairs(void);

/* CGPROF_THREAD_EXIT=merge: a thread's last part, added to the merge of
 * the threads that ended since the last dump. Returns 0, -1 if out of
 * memory (the part is lost). */
int cg_ended_add(const struct cg_snapshot *part);
/* Writes that merge as thread 0, then starts it again. */
void cg_ended_write(struct cg_dump *d);
const struct cg_snapshot *cg_ended_snapshot(void);

/* In a forked child: the sums are the parent's, the child counts from the
 * fork. */
void cg_total_forked(void);

#endif
