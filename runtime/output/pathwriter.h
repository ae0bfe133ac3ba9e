/* Path file writer (data layer): a part's call paths (struct cg_snapshot's
 * nodes) and the symbols of their functions in, the text of its path file
 * out (docs/internals/paths-format.md). Pure: no I/O, no global state. */
#ifndef CG_PATHWRITER_H
#define CG_PATHWRITER_H

#include "snapshot.h"
#include "util.h"
#include "writer.h"

/* Appends the path file of snap to out (the part's pid, thread, part and
 * cmd from info). Returns 0, or -1 on allocation failure. */
int cg_write_paths(const struct cg_part_info *info, const struct cg_snapshot *snap, const struct cg_symtab *syms,
                   struct cg_buf *out);

#endif
