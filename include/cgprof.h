/* cgprof: per-thread call-graph profiles of programs built with
 * -finstrument-functions, written in Callgrind's format.
 *
 * The runtime (libcgprof.so) is used by preloading it:
 *     LD_PRELOAD=/path/to/libcgprof.so ./program
 * It profiles every thread and writes callgrind.out.<pid>-<thread> files at
 * exit; see README.md. This header carries the version; the control API
 * (dumps on demand, zeroing, pausing) is declared here as it lands. */
#ifndef CGPROF_H
#define CGPROF_H

#define CGPROF_VERSION_MAJOR 0
#define CGPROF_VERSION_MINOR 1
#define CGPROF_VERSION_PATCH 0

#endif
