/* File names (data layer): Callgrind's scheme, <prefix>.<pid>-<NN> for a
 * run without dumps on demand, <prefix>.<pid>.<part>-<NN> for each part when
 * there are (with %p in the prefix, the pid is where %p says instead), and
 * the total's name. Functions of their arguments and of the directory's
 * listing only. */
#ifndef CG_NAMING_H
#define CG_NAMING_H

#include <stddef.h>

struct cg_names {
    const char *out; /* the CGPROF_OUT pattern, as given */
    long pid;        /* the pid the files are named after */
    const char *cwd; /* the start-up directory relative names are made
                      * absolute against ("" when unknown: left relative) */
};

/* The prefix with %p expanded and made absolute; *with_pid says whether it
 * already names the pid. Returns 0, or -1 when it does not fit size. */
int cg_name_prefix(const struct cg_names *n, char *dst, size_t size, int *with_pid);
/* The file of thread `thread` (NN); part_in_name: with ".<part>". */
int cg_name_part(const struct cg_names *n, unsigned thread, unsigned part, int part_in_name, char *dst,
                 size_t size);
/* The path file of a part (docs/internals/paths-format.md): the part's name with the
 * prefix's last .out made .paths (as the total's makes it .total). */
int cg_name_paths(const struct cg_names *n, unsigned thread, unsigned part, int part_in_name, char *dst,
                  size_t size);
/* The total's file (cg_total_pattern of the prefix, made absolute). */
int cg_name_total(const struct cg_names *n, char *dst, size_t size);
/* What the file names of every run of the pattern start with, whatever
 * its pid: the parts' (the prefix's file name up to its first %, with the
 * "." before the pid when the pattern has no %p), the total's, the
 * same of cg_total_pattern's, and the path files', of its "paths"
 * pattern (cg_paths_pattern). They tell the temporaries of this prefix's
 * files (outfile.h) from those of other prefixes in the directory.
 * Returns 0, or -1 when one does not fit size. */
int cg_name_stems(const struct cg_names *n, char *parts, char *total, char *paths, size_t size);
/* The highest part number of the files already in the prefix's directory
 * under this pid (0 when none): a program started by exec() in this
 * process has the pid of the image that ran before it, and may have
 * written parts under it, after which its own are numbered. */
unsigned cg_name_last_part(const struct cg_names *n);
/* The same, and in *unnumbered whether a file of this pid without a part
 * number (<name>.<pid>-<NN>, a last dump's or a thread's end's) is there. */
unsigned cg_name_scan(const struct cg_names *n, int *unnumbered);

#endif
