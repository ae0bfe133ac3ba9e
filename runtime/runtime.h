/* The runtime's start: one-time initialisation on first use (entry layer,
 * with the library's constructor and destructor in runtime.c). */
#ifndef CG_RUNTIME_H
#define CG_RUNTIME_H

#include "compiler.h"

/* Initialises the runtime on first use (from the library constructor or the
 * first hook, whichever comes first). Returns 1 when ready; 0 while another
 * thread is initialising or when the runtime is off (secure-execution mode,
 * failed set-up), in which case hooks do nothing. */
int cg_runtime_ready(void);

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
