/* cgprof: per-thread call-graph profiles of programs built with
 * -finstrument-functions, written in Callgrind's format.
 *
 * The runtime (libcgprof.so) is used by preloading it:
 *     LD_PRELOAD=/path/to/libcgprof.so ./program
 * It profiles every thread and writes callgrind.out.<pid>-<thread> files at
 * exit (see README.md). This header is the control API: take the profile of
 * one phase of a long-running program, name threads.
 *
 * A program that calls these functions runs unchanged when the runtime is
 * not loaded: each function finds the runtime through a weak reference and
 * returns -1 when it is absent. Nothing needs to be linked.
 *
 * All functions are safe to call from any thread. None is async-signal-safe
 * except cgprof_set_thread_name(). They never change errno on success. */
#ifndef CGPROF_H
#define CGPROF_H

#include <stdbool.h>

#define CGPROF_VERSION_MAJOR 0
#define CGPROF_VERSION_MINOR 2
#define CGPROF_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime's entry points; weak, so that they are NULL without it. */
extern int cgprof_api_dump(const char *reason) __attribute__((weak));
extern int cgprof_api_zero(void) __attribute__((weak));
extern int cgprof_api_collect(bool on) __attribute__((weak));
extern int cgprof_api_set_thread_name(const char *name) __attribute__((weak));

/* The wrappers are never instrumented themselves: they are not the
 * program's functions. */
#define CGPROF_INLINE_ static inline __attribute__((no_instrument_function, unused))

/* Whether the runtime is loaded in this process. */
CGPROF_INLINE_ bool cgprof_loaded(void)
{
    return cgprof_api_dump != 0;
}

/* Writes every thread's costs since the previous dump (or zeroing) as a new
 * part, one file per thread (callgrind.out.<pid>.<part>-<thread>), then
 * starts the next part from zero. Calls still running are included with
 * their cost so far and go on being measured. reason (may be NULL) is
 * written in the files' "desc: Trigger:" line.
 * Synchronous: returns once every file is written. Returns 0 when all were
 * written, -1 if one could not be (the reason was said on stderr) or the
 * runtime is not loaded. Waits for a dump already under way. */
CGPROF_INLINE_ int cgprof_dump(const char *reason)
{
    return cgprof_api_dump ? cgprof_api_dump(reason) : -1;
}

/* Discards every thread's costs since the previous dump or zeroing, without
 * writing anything. Returns 0, or -1 if the runtime is not loaded. */
CGPROF_INLINE_ int cgprof_zero(void)
{
    return cgprof_api_zero ? cgprof_api_zero() : -1;
}

/* Pauses (false) or resumes (true) collection for every thread, like
 * Callgrind's CALLGRIND_TOGGLE_COLLECT: what happens while paused is left
 * out of the profile, calls and time alike. The hooks keep track of calls
 * meanwhile, so functions running across a pause or resume are measured
 * correctly. Pausing does not reduce the overhead. Returns 0, or -1 if the
 * runtime is not loaded. */
CGPROF_INLINE_ int cgprof_collect(bool on)
{
    return cgprof_api_collect ? cgprof_api_collect(on) : -1;
}

/* Names the calling thread in its profile files ("desc: Thread name:"); up
 * to 63 bytes are kept. Without a name, a thread is named by its name in
 * /proc (pthread_setname_np). Async-signal-safe. Returns 0, or -1 if the
 * runtime is not loaded or does not profile this thread. */
CGPROF_INLINE_ int cgprof_set_thread_name(const char *name)
{
    return cgprof_api_set_thread_name ? cgprof_api_set_thread_name(name) : -1;
}

#undef CGPROF_INLINE_

#ifdef __cplusplus
}
#endif

#endif
