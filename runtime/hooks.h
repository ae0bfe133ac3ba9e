/* What the hooks (hooks.c) offer the rest of the runtime. */
#ifndef CG_HOOKS_H
#define CG_HOOKS_H

#include <stdint.h>

/* A non-local exit on the calling thread (a longjmp, or exception
 * unwinding entering a landing pad: nonlocal.c), applied to its shadow stack
 * as a hook would be, under the thread's guard: the frames above depth end
 * now, or, with depth UINT32_MAX, those whose stack pointer is below sp.
 * Does nothing on a thread that is inside a hook (the exit comes from a
 * signal handler that interrupted it) or when nothing is collected. */
void cg_hook_nonlocal(uint32_t depth, uintptr_t sp);

#endif
