/* Output files (data layer): a file written through a temporary file in
 * the same directory that is created exclusively and without following
 * links, then renamed over its path: no reader sees half a file, and
 * nothing planted at either name is followed. */
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

#endif
