/* The symbol session the dumps share (service layer): opening one reads
 * every object's symbol table, so it is kept from dump to dump while no
 * object is loaded or unloaded. Used under the dump lock. */
#ifndef CG_SYMCACHE_H
#define CG_SYMCACHE_H

#include "symbols.h"

/* The session, opened again when objects were loaded or unloaded since it
 * was opened; NULL when none can be opened. */
struct cg_syms *cg_symcache_session(void);
/* Closes it (the exit dump is done). */
void cg_symcache_close(void);
/* At the end of a dump: the session closed if libdwfl holds descriptors
 * for it (cg_syms_holds_fds), kept otherwise (it holds memory only). */
void cg_symcache_release(void);
/* In a forked child: the session's memory is the parent's copy, left
 * alone (leaked, not closed). */
void cg_symcache_forked(void);

#endif
