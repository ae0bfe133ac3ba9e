/* Objects unloaded (service layer): before dlclose() unmaps an object, the
 * addresses the tables hold in its range are noted as its own, so that they
 * keep their names: the range may hold another object later. */
#ifndef CG_UNLOAD_H
#define CG_UNLOAD_H

#include "gone.h"

/* dlclose(handle) is about to happen. */
void cg_unload_note(const void *handle);
/* The objects gone so far (for cg_syms_open). */
struct cg_gone *cg_unload_gone(void);

#endif
