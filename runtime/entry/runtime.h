/* The runtime's start: one-time initialisation on first use (entry layer,
 * the library's constructor and destructor are in library.c). */
#ifndef CG_RUNTIME_H
#define CG_RUNTIME_H

#include <stdint.h>

#include "compiler.h"

/* Where the exported hooks are in this library (hooks.h: cg_hooks), for
 * the sampler and the taking back of hook calls. */
struct cg_hook_addrs {
    uintptr_t enter, exit;
};

/* Initialises the runtime on first use (from the library constructor or the
 * first hook, whichever comes first). Returns 1 when ready; 0 while another
 * thread is initialising or when the runtime is off (secure-execution mode,
 * failed set-up), in which case hooks do nothing. Whoever may be first
 * hands the hooks' addresses down: the runtime is below the hooks, which
 * start it (docs/internals/design.md, "Layers"). */
int cg_runtime_ready(const struct cg_hook_addrs *hooks);
/* Whether cg_runtime_ready initialised the runtime; never starts it. */
int cg_runtime_started(void);
/* The constructor's services (library.c): set up now in a process known
 * to be instrumented (returns 1), else left waiting for cg_runtime_wake
 * (returns 0). */
int cg_runtime_services(void);

/* Whether the process's services wait (runtime.c): no instrumented object
 * seen and no hook run yet. */
int cg_runtime_dormant(void);
/* Sets the services up in a waiting process once a hook has run, or, with
 * scan, an object that calls the hooks is loaded (after a dlopen). Called
 * by the wrappers of functions the program calls from its own code
 * (pthread_create, dlopen, dlclose), where starting a thread is safe. */
void cg_runtime_wake(int scan);

#if CG_STATIC
/* The static runtime's mark (static.c: an ELF note, declared here as its
 * bytes), which the constructor refers to so that the linker keeps it. */
extern const char cg_static_note[];
#endif

#endif
