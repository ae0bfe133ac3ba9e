/* Per-thread state: set up on a thread's first hook, registered process-wide
 * so that a dump can find every thread's tables. */
#ifndef CG_THREAD_H
#define CG_THREAD_H

#include <stdint.h>
#include <sys/types.h>

#include "costs.h"

struct cg_thread {
    /* Nonzero while a hook runs on this thread: a hook entered again from a
     * signal handler that interrupted a hook returns at once instead of
     * touching tables that are half updated. Sentinel threads keep it set. */
    volatile int guard;
    uint64_t last_now; /* latest clock reading of a hook on this thread */
    struct cg_costs costs;

    /* cold */
    struct cg_thread *next; /* registry, newest first */
    uint32_t number;        /* 1 = main thread, then in order of creation */
    pid_t tid;
    int finished;           /* the thread has ended (key destructor ran) */
    uint64_t t_end;         /* time (ns) at which it ended */
};

/* The calling thread's state. initial-exec TLS: one %fs-relative load, no
 * __tls_get_addr call (which may allocate) on the hot path. The library is
 * meant to be preloaded or linked, where static TLS is always available. */
extern __thread struct cg_thread *cg_self __attribute__((tls_model("initial-exec")));

/* Cold path of a thread's first hook: returns the new state, or NULL when
 * this hook must be ignored (runtime not ready, or no memory; in that case
 * the thread stays unprofiled and says so once). */
struct cg_thread *cg_thread_attach(void);

/* Head of the registry (newest first; entries are never removed). */
struct cg_thread *cg_thread_list(void);

/* Marks the calling thread as inside the runtime (a dump), so that hooks
 * reached from the dump's own calls are ignored. Returns what to pass to
 * cg_thread_leave_runtime(). */
struct cg_thread *cg_thread_enter_runtime(void);
void cg_thread_leave_runtime(struct cg_thread *saved);

/* Key destructor hook-up; called once by the process-wide init. */
int cg_thread_init(void);

#endif
