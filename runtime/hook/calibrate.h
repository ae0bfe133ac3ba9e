/* Overhead compensation's calibration (entry layer): what a hook pair
 * costs, measured once at start-up with the hooks themselves. */
#ifndef CG_CALIBRATE_H
#define CG_CALIBRATE_H

#include <stdint.h>

struct cg_costs;

/* Measures, on a scratch thread state, what the hooks of a call add inside
 * the callee's measured interval (*in) and in its caller's self time
 * (*out), in ns per call: the least of several rounds (an interrupt only
 * adds). The runtime must be collecting, its fast mode set. Returns 0, or
 * -1 when it could not (no memory: no compensation). */
int cg_calibrate(uint32_t *in, uint32_t *out);
/* The same with the hooks in fast mode `mode` (proc.h; CG_FAST_NONE: every
 * hook by the general path). */
int cg_calibrate_mode(int mode, uint32_t *in, uint32_t *out);

/* Gives a thread's tables the calibrated cost, split over the parts of the
 * two hooks before and after their clock readings (struct cg_costs: comp). */
void cg_calibrate_apply(struct cg_costs *c, uint32_t in, uint32_t out, uint32_t gin, uint32_t gout);

#endif
