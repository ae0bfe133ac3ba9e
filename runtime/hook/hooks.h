/* The exported hooks (entry layer, hooks.c), for the entry layer's own
 * use: whoever starts the runtime tells it where they are. The extern
 * declarations are in glibc's headers only with _GNU_SOURCE; these carry
 * the export attribute. */
#ifndef CG_HOOKS_H
#define CG_HOOKS_H

#include "compiler.h"
#include "runtime.h"

CG_EXPORT void __cyg_profile_func_enter(void *fn, void *site);
CG_EXPORT void __cyg_profile_func_exit(void *fn, void *site);

/* Their addresses in this library, through hidden aliases: the exported
 * names' addresses would be taken through the GOT, bound at load time to
 * whichever object defines them first. */
CG_HOT void cg_hook_enter_entry(void *fn, void *site);
CG_HOT void cg_hook_exit_entry(void *fn, void *site);

/* The two, as cg_runtime_ready takes them. */
extern const struct cg_hook_addrs cg_hooks;

#endif
