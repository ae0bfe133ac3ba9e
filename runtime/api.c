/* The control API of include/cgprof.h: the runtime's side. Programs call
 * these through the header's inline wrappers, which find them through weak
 * references, so that a program runs unchanged without the runtime. */
#include <stdbool.h>
#include <string.h>

#include "compiler.h"
#include "dump.h"
#include "runtime.h"
#include "thread.h"

CG_EXPORT int cgprof_api_dump(const char *reason);
CG_EXPORT int cgprof_api_zero(void);
CG_EXPORT int cgprof_api_collect(bool on);
CG_EXPORT int cgprof_api_set_thread_name(const char *name);

int cgprof_api_dump(const char *reason)
{
    if (!cg_runtime_ready())
        return -1;
    return cg_dump_now(reason);
}

int cgprof_api_zero(void)
{
    if (!cg_runtime_ready())
        return -1;
    cg_dump_zero();
    return 0;
}

int cgprof_api_collect(bool on)
{
    if (!cg_runtime_ready())
        return -1;
    cg_dump_collect(on);
    return 0;
}

/* No lock, no allocation: the name is copied into the thread's state, where
 * a dump may read it while it changes (and then print a mix, once). */
int cgprof_api_set_thread_name(const char *name)
{
    struct cg_thread *t = cg_self;
    if (!t && !(t = cg_thread_attach()))
        return -1;
    if (!t->costs.frames)
        return -1; /* not a profiled thread */
    size_t n = name ? strnlen(name, sizeof t->name - 1) : 0;
    for (size_t i = 0; i < n; i++)
        t->name[i] = name[i] == '\n' ? ' ' : name[i];
    t->name[n] = 0;
    return 0;
}
