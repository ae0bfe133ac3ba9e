/* Objects unloaded (service layer): before dlclose() unmaps an object, the
 * addresses the tables hold in its range are noted as its own, so that they
 * keep their names: the range may hold another object later. */
#ifndef CG_UNLOAD_H
#define CG_UNLOAD_H

#include <stdint.h>

#include "gone.h"

/* Calls visit with every address the tables hold (dump.c's
 * cg_dump_addresses: the tables are read by the layer's dump, which names
 * through symcache the objects gone kept here: passed in by the entry
 * layer, not called, so that no file of the layer reaches back to one
 * that reaches it). */
typedef void (*cg_unload_addresses_fn)(void (*visit)(void *ctx, uintptr_t addr), void *ctx);
/* dlclose(handle) is about to happen; addresses lists what the tables hold. */
void cg_unload_note(const void *handle, cg_unload_addresses_fn addresses);
/* The objects gone so far (for cg_syms_open). */
struct cg_gone *cg_unload_gone(void);

#endif
