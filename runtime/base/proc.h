/* The process's state that every layer reads (base layer): the options,
 * whether the hooks record, how their fast paths read the time, and the
 * process's identity (pid, command line, start-up directory). Set by the
 * runtime's initialisation (runtime.c) and, the pid, after a fork; read
 * everywhere else. */
#ifndef CG_PROC_H
#define CG_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "options.h"

extern struct cg_options cg_opts;

/* Nonzero while hooks record; read by every hook. */
extern int cg_collecting;

/* Nonzero when the hooks use the threads' virtual clocks (CGPROF_TIME=sample
 * and its timer set up: sample.c, sampletimer.c), read by every hook. */
extern int cg_sampling;

/* The most call-path nodes a thread keeps (CGPROF_PATHS_MAX), 0 when no
 * paths are kept (CGPROF_PATHS=0): set before any thread attaches. */
extern uint32_t cg_paths_bound;

/* Nonzero when each thread keeps a latency histogram per arc
 * (CGPROF_LATENCY=1, exact time only): set before any thread attaches. */
extern int cg_latency;

/* Overhead compensation (CGPROF_COMPENSATE): what a hook pair adds, in ns,
 * inside the callee's measured interval and inside its caller's self time,
 * calibrated at start-up (runtime.c); 0 when off. Each thread's tables get
 * it split over the two hooks' parts (struct cg_costs, comp). */
extern uint32_t cg_comp_in, cg_comp_out;
/* the same for hooks that take the general path */
extern uint32_t cg_comp_gin, cg_comp_gout;

/* How the hooks' fast paths read the time, set once collection starts:
 * CG_FAST_NONE (not collecting, or CLOCK_MONOTONIC: a call; every hook
 * takes the general path), CG_FAST_TSC, CG_FAST_SAMPLE (the thread's
 * sampled clock), or CG_FAST_COUNT (CGPROF_STACKS=unwind: the counting
 * hooks, counting.h). One load for what would be three flags. */
enum { CG_FAST_NONE, CG_FAST_TSC, CG_FAST_SAMPLE, CG_FAST_COUNT };
extern int cg_fast_mode;

/* Reads the command line (before the program can rewrite its argv), the
 * working directory and the pid, once at start-up. No malloc: this may run
 * in a thread's first hook, inside the program's allocator. */
void cg_proc_read_identity(void);
/* The command line, arguments separated by spaces, and the working
 * directory at start-up ("" when unknown). */
const char *cg_proc_cmdline(void);
const char *cg_proc_cwd(void);
/* The process id as the runtime knows it: updated by fork() in the child
 * (cg_proc_forked), not by vfork(), whose child shares the parent's
 * memory. */
pid_t cg_proc_pid(void);
void cg_proc_forked(void);

/* The pid the profile's files are named after: this process's, or, in the
 * copy that writes the profile of a crashed process (crash.c), the crashed
 * one's, set there. */
long cg_proc_names_pid(void);
void cg_proc_set_names_pid(long pid);

/* The runtime's own threads (the service thread): counted up when one
 * starts, down when it ends; none in a forked child. */
void cg_proc_internal_threads_add(int delta);
/* The program's threads, as the status file reports them: those the kernel
 * lists less the runtime's own (the thread registry knows only the threads
 * that have made a hook). */
unsigned cg_proc_program_threads(void);

/* /proc's name of thread tid, for a thread the program did not name for
 * cgprof ("" when unknown). */
void cg_proc_thread_comm(pid_t tid, char *dst, size_t size);

/* Whether an object loaded in the process, other than the one holding
 * `own` (the runtime), calls __cyg_profile_func_enter: built with
 * -finstrument-functions. Reads the objects' dynamic sections in memory;
 * takes the loader's lock (dl_iterate_phdr): not from a signal handler. */
int cg_proc_instrumented(const void *own);
/* The executable segment of a loaded object that holds code address addr:
 * 1 with its bounds [*lo, *hi) and whether the object is the program
 * itself (not a shared library), or 0 when none holds it. */
int cg_proc_code_segment(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *main_program);

/* Reads len bytes at addr of this process without faulting (code mapped
 * execute-only, the end of a signal's alternate stack): 0 when all were
 * read (process_vm_readv, or where that is refused a pipe of the
 * runtime's: proc.c; async-signal-safe, errno kept). */
int cg_proc_peek(uintptr_t addr, void *buf, size_t len);
/* Whether `bytes` of address space can be had now (RLIMIT_AS): a mapping
 * of them made and unmapped at once. Asked before each dlopen of the
 * runtime's: glibc ends the process (status 127, "cannot allocate memory
 * for thread-local data: ABORT") when a library with thread-local
 * variables (libdw, libelf, libunwind) is loaded with no memory left for
 * its tables, where the program would have gone on. */
int cg_proc_room(size_t bytes);

#endif
