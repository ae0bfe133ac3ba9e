/* Process-wide state: one-time initialisation, options, the exit trigger. */
#ifndef CG_RUNTIME_H
#define CG_RUNTIME_H

#include <stdint.h>
#include <sys/types.h>

#include "options.h"

/* Nonzero while hooks record; read by every hook. */
extern int cg_collecting;

/* How the hooks' fast paths read the time, set once collection starts:
 * CG_FAST_NONE (not collecting, or CLOCK_MONOTONIC: a call; every hook
 * takes the general path), CG_FAST_TSC, or CG_FAST_SAMPLE (the thread's
 * sampled clock). One load for what would be three flags. */
enum { CG_FAST_NONE, CG_FAST_TSC, CG_FAST_SAMPLE };
extern int cg_fast_mode;

extern struct cg_options cg_opts;

/* Initialises the runtime on first use (from the library constructor or the
 * first hook, whichever comes first). Returns 1 when ready; 0 while another
 * thread is initialising or when the runtime is off (secure-execution mode,
 * failed set-up), in which case hooks do nothing. */
int cg_runtime_ready(void);

/* The command line of the process as read at start-up, arguments separated
 * by spaces, and the working directory at start-up. */
const char *cg_runtime_cmdline(void);
const char *cg_runtime_cwd(void);
/* The process id as the runtime knows it: updated by fork() in the child,
 * not by vfork(), whose child shares the parent's memory. */
pid_t cg_runtime_pid(void);
void cg_runtime_forked(void);

#endif
