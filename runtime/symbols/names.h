/* The names of addresses in a symbol session (data layer; names.c): the
 * function symbol an address is in, a function without one named by its
 * start, the loader's names where libdw is not there, C++ names demangled.
 * For the session's files (symsession.h); the rest of the runtime asks
 * symbols.h's lookups. */
#ifndef CG_NAMES_H
#define CG_NAMES_H

#include <stdint.h>

#include "symsession.h"

/* An object's function symbols (struct cg_modsyms), read and sorted when
 * first wanted; NULL without memory. */
struct cg_modsyms *cg_sess_modsyms_of(struct cg_syms *s, Dwfl_Module *mod);

/* The function symbol of mod containing addr (the last one at or below
 * it, when its size covers addr or it has none): its name and *start; NULL
 * if none. */
const char *cg_sess_function_at(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, uintptr_t *start);

/* Code with no symbol (a static function of a stripped library, e.g. libc
 * without its debug symbols) is still inside one function, whose range the
 * unwind tables give (libunwind's unw_get_proc_info_by_ip): named by its
 * start address, as Valgrind does, so that all of its addresses are one
 * function. 1 with out's function, fn_start and fn_obj_addr set; 0 when
 * its range is not known (or no memory). */
int cg_sess_unnamed_function(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, struct cg_symbol *out);

/* Without a libdw session (cg_syms_without_libdw): addr's object and the
 * exported symbol that holds it, from the loader's own tables, into out
 * (what is not found left as it is). */
void cg_sess_resolve_loaded(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out);

/* name demangled (C++) and kept for the session, or name itself. */
const char *cg_sess_demangle(struct cg_syms *s, const char *name);

#endif
