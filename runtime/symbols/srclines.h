/* The source file and line of an address in a symbol session (data layer;
 * srclines.c), and which objects' lines are wanted. For the session's
 * files (symsession.h); the rest of the runtime asks symbols.h's lookups. */
#ifndef CG_SRCLINES_H
#define CG_SRCLINES_H

#include <stdint.h>

#include "symsession.h"

/* The source file (the session's absolute path, or cg_sess_unknown) and
 * line (0 if not known) of addr in mod. The addresses of a dump ascend: one
 * in the rows of the last unit found is looked up there, from the last
 * row, without finding its unit again. */
void cg_sess_source_of(struct cg_syms *s, Dwfl_Module *mod, Dwarf_Addr addr, const char **file, unsigned *line);

/* Whether mod's source lines are wanted (it has instrumented code:
 * cg_syms_want_lines). */
int cg_sess_wants_lines(const struct cg_syms *s, Dwfl_Module *mod);

/* The module of addr, as the session's lookups find it (an unloaded
 * object's first; NULL if none), and its unit and DWARF bias: NULL if it
 * has none, or if its object's lines are not wanted. */
Dwarf_Die *cg_sess_unit_at(struct cg_syms *s, uintptr_t addr, Dwfl_Module **modp, Dwarf_Addr *bias);

#endif
