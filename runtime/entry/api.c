/* The control API of include/cgprof.h: the runtime's side. Programs call
 * these through the header's inline wrappers, which find them through weak
 * references, so that a program runs unchanged without the runtime. */
#include <stdbool.h>
#include <string.h>

#include "compiler.h"
#include "dump.h"
#include "hooks.h"
#include "runtime.h"
#include "thread.h"

CG_EXPORT int cgprof_api_dump(const char *reason);
CG_EXPORT int cgprof_api_zero(void);
CG_EXPORT int cgprof_api_collect(bool on);
CG_EXPORT int cgprof_api_set_thread_name(const char *name);

int cgprof_api_dump(const char *reason)
{
    if (!cg_runtime_ready(&cg_hooks))
        return -1;
    return cg_dump_now(reason);
}

int cgprof_api_zero(void)
{
    if (!cg_runtime_ready(&cg_hooks))
        return -1;
    cg_dump_zero();
    return 0;
}

int cgprof_api_collect(bool on)
{
    if (!cg_runtime_ready(&cg_hooks))
        return -1;
    cg_dump_collect(on);
    return 0;
}

/* No lock, no allocation, no system call: async-signal-safe. */
int cgprof_api_set_thread_name(const char *name)
{
    return cg_thread_set_name(name ? name : "");
}
