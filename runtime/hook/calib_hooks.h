/* The calibration's pair of hooks (entry layer): the exported hooks' code
 * (fastpath.h's cg_hook_enter and cg_hook_exit) under names of their own,
 * which calib_target.c's compiled calls and calibrate.c call. A twin
 * rather than the hooks themselves because the hooks start the runtime,
 * which calibrates: calling them from here would make a circle
 * (docs/internals/design.md, "Layers"). The calibration runs on a scratch
 * thread state, so their first-hook path never runs. */
#ifndef CG_CALIB_HOOKS_H
#define CG_CALIB_HOOKS_H

#include "compiler.h"

CG_HOT void cg_calib_enter(void *fn, void *site);
CG_HOT void cg_calib_exit(void *fn, void *site);

#endif
