/* Callgrind format writer: a thread's snapshot and the symbols of its
 * addresses in (struct cg_symtab: partmodel.h), the text of one part out.
 * Pure: no I/O, no global state.
 *
 * The format is Callgrind's version 1 (../shared/spec/callgrind-format.txt)
 * with name compression for every ob=, fl=, fi=, fe=, fn=, cob=, cfi=, cfn=
 * and subposition compression for addresses and lines. Details that the
 * readers (callgrind_annotate, KCachegrind) depend on, and that the spec
 * leaves open, are commented where they are written. */
#ifndef CG_WRITER_H
#define CG_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "addrset.h"
#include "partmodel.h"
#include "snapshot.h"
#include "util.h"

struct cg_part_info {
    const char *creator;
    long pid;
    unsigned thread;
    unsigned part;
    const char *cmd;
    const char *trigger;  /* desc: Trigger: ... */
    const char *clock;    /* how the time was measured, for a desc: line */
    const char *event;    /* the event's long name; NULL: wall-clock time */
    const char *const *extra_desc; /* more "Name: value" desc lines, NULL-terminated, or NULL */
    /* 0: "positions: instr line", each cost line and calls= target gives the
     * address and the source line; 1: "positions: line", the source line
     * alone (CGPROF_POSITIONS=line: for readers that take one position
     * column, speedscope's among them). */
    int line_only;
    /* Functions whose calls keep no frame (skipped, throttled: fold.h), by
     * their run-time entry address; NULL for none. The code of such a
     * function runs in its caller's frame: a call made from it, and the time
     * after that call returns, are the caller's, at their places in that
     * code (as for an inlined call), not a call into the function. */
    const struct cg_addrset *left_out[2];
    /* Whether the machine function that begins at an address (a symbol's
     * run-time start) is a part the compiler split off an instrumented
     * function (it calls the hooks, with no enter hook of its own: gcc's
     * fn.part.0, whose head was inlined into its callers): its code, and
     * the calls made from it, are then the frame's it runs in, wherever
     * its head was inlined. NULL: none is. Asked only of code that is not
     * the frame's own by its name. */
    int (*part_code)(uintptr_t fn_start);
};

/* Appends one part to out. Returns 0, or -1 on allocation failure (out then
 * holds an incomplete text that must not be written). */
int cg_write_part(const struct cg_part_info *info, const struct cg_snapshot *snap, const struct cg_symtab *syms,
                  struct cg_buf *out);

#endif
