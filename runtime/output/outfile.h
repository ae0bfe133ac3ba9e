/* Output files (data layer): a file written through a temporary file in
 * the same directory that is created exclusively and without following
 * links, then renamed over its path: no reader sees half a file, and
 * nothing planted at either name is followed.
 *
 * The temporary of <dir>/<name> is <dir>/.<name>.cgprof-tmp.<pid>.<n>
 * (<pid> the writing process, <n> a count in it; <name> cut short when
 * the whole would pass NAME_MAX). It starts with a dot, so that no reader
 * takes it for part of a run: KCachegrind loads every file whose name
 * starts with the run's name (<name>* in its directory, hidden files left
 * out), callgrind_annotate without a file the first callgrind.out*, and
 * scripts glob callgrind.out.*; a process killed while writing leaves it
 * behind, and the next run of the prefix removes it (cg_out_clean). */
#ifndef CG_OUTFILE_H
#define CG_OUTFILE_H

#include <stddef.h>

#include "options.h"

struct cg_out_file {
    char tmp[CG_OPT_PATH_MAX + 160];
    int fd;
    int err;      /* the first errno value */
    size_t bytes; /* written so far */
};

/* Creates the temporary file for path. Returns 0 or an errno value. */
int cg_out_open(struct cg_out_file *o, const char *path);
/* Appends data (the shape of cg_buf's flush: arg is the cg_out_file).
 * Returns 0 or the first errno value (EFBIG past the file-size limit,
 * which does not kill the process: cg_write_all). */
int cg_out_write(void *arg, const char *data, size_t len);
/* Closes the file and, if all went well (ok), renames it to path; else
 * removes it. Returns 0 or an errno value (ENOMEM when only !ok). */
int cg_out_close(struct cg_out_file *o, const char *path, int ok);

/* The temporary's name for path (the whole path, in path's directory),
 * written by process pid, count n. Returns 0, or -1 when it does not fit
 * size. */
int cg_out_tmp_name(const char *path, long pid, unsigned n, char *dst, size_t size);
/* Whether name (a file name, without directory) is a temporary as
 * cg_out_tmp_name makes them, of a file whose name starts with one of the
 * nstems stems: then its writer's pid is in *pid. Names that only look
 * alike (no leading dot, another marker, a number that is not one) are
 * not. */
int cg_out_tmp_parse(const char *name, const char *const *stems, unsigned nstems, long *pid);
/* Removes from dir the temporaries that dead processes left there (a
 * process killed while writing): those cg_out_tmp_parse accepts with
 * these stems, that are regular files owned by this user and whose writer
 * no longer exists (kill(pid, 0) fails with ESRCH; a live process with the
 * same prefix, or a pid taken again, keeps its files). Each file removed
 * is told to removed (may be NULL). Returns the number removed. */
unsigned cg_out_clean(const char *dir, const char *const *stems, unsigned nstems,
                      void (*removed)(void *ctx, const char *name, long pid), void *ctx);

#endif
