/* The symbol table of a snapshot (data layer): every address the writer
 * names, looked up in a symbol session at once. */
#ifndef CG_SYMTAB_H
#define CG_SYMTAB_H

#include "snapshot.h"
#include "symbols.h"
#include "partmodel.h"

/* Fills out with the symbols of every address of s (callers, callees,
 * call instructions, self-cost addresses), sorted, each once. syms: the
 * session to look them up in, or NULL for raw addresses ("???"). *storage
 * is what the caller frees once out is no longer used (the session's
 * symbols live until it is closed). Returns 0, or -1 if out of memory. */
int cg_symtab_build(struct cg_syms *syms, const struct cg_snapshot *s, struct cg_symtab *out,
                    struct cg_symtab_entry **storage);

#endif
