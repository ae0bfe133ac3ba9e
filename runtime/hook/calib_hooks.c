/* The calibration's hooks: see calib_hooks.h. In a file of their own, not
 * calib_target.c: that file is built with -finstrument-functions, and the
 * compiler must not see the hooks' code where it compiles their calls
 * (it would then keep registers across them that a program's calls
 * save). */
#include "calib_hooks.h"

#include "fastpath.h"
#include "guard.h"
#include "thread.h"

/* Never called (the calibration's thread state is always there); a call
 * the compiler cannot see into, as hooks.c's of cg_runtime_ready, so that
 * the general path it measures saves the registers the hooks' does. */
static __attribute__((noipa)) int not_started(const void *arg)
{
    (void)arg;
    return 0;
}

static const char calib_arg;
CG_HOOK_SLOW(calib_slow, not_started, &calib_arg)

CG_HOOK_PAIR(cg_calib_enter, cg_calib_exit, calib_slow)
