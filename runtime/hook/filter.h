/* The filters, without a rebuild: CGPROF_SKIP, CGPROF_SKIP_OBJECT,
 * CGPROF_SKIP_FILE (functions left out, found by name, object or source
 * file) and CGPROF_THROTTLE (functions left out once they prove to be many
 * short calls). See docs/filters.md.
 *
 * The patterns are resolved to function entry addresses off the hot path,
 * from the symbol tables of the loaded objects that have instrumented code:
 * at start-up, and after a dlopen. The tables (arcs.c) check the resulting
 * set once per arc, when an arc is made. */
#ifndef CG_FILTER_H
#define CG_FILTER_H

#include <stdint.h>

#include "costs.h"

struct cg_syms;

/* From the runtime's initialisation (options parsed): sets up throttling.
 * No symbol is read here: this may run from a thread's first hook. */
void cg_filter_init(void);
/* Points a new thread's tables at the filters (nothing when none is set). */
void cg_filter_attach(struct cg_costs *c);
/* Resolves the skip patterns in the objects loaded since the last scan and
 * publishes the new set. Never from a hook: reads files, allocates. */
void cg_filter_scan(void);
/* Whether skip patterns are set: objects a dlopen() loads are to be
 * scanned. */
int cg_filter_skipping(void);

/* The functions left out now (the skipped, the throttled), for the
 * writer (writer.h, left_out); either may be NULL. */
void cg_filter_left_out(const struct cg_addrset **skipped, const struct cg_addrset **throttled);

/* Up to max "Name: value" header lines (for desc:) describing the filters,
 * throttled functions named through syms (may be NULL). The strings live
 * until the next call. Returns their number. */
int cg_filter_desc(struct cg_syms *syms, const char **out, int max);
/* At exit: the functions throttled, once on stderr, as a compiler option,
 * when CGPROF_THROTTLE was given (or CGPROF_VERBOSE=1): the default
 * throttle says it in the profile only. */
void cg_filter_report_exit(void);

#endif
