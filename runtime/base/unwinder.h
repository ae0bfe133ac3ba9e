/* libunwind, loaded once, privately (base layer): for sampling's stack
 * walks (sample.c) and the ranges of functions without a symbol
 * (names.c). Loaded with dlopen(RTLD_LOCAL), not linked: Debian's
 * libunwind.so.8 also exports _Unwind_* functions, and linking it into a
 * preloaded library would put them in front of libgcc's for the program's
 * C++ exceptions. RTLD_NOW: nothing is bound later, in a signal handler. */
#ifndef CG_UNWINDER_H
#define CG_UNWINDER_H

#if CG_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdint.h>

struct cg_unwinder {
    int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*get_proc_info)(unw_cursor_t *, unw_proc_info_t *);
    int (*get_proc_info_by_ip)(unw_addr_space_t, unw_word_t, unw_proc_info_t *, void *);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    int (*is_signal_frame)(unw_cursor_t *);
    unw_addr_space_t *local_addr_space;
    /* walks of a copy of a stack (samplering.c): an address space of
     * cgprof's own accessors */
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    unw_accessors_t *(*get_accessors)(unw_addr_space_t);
    /* the lookup of a function's unwind entry in a table one names
     * (dwarf_search_unwind_table: exported, not declared in libunwind.h;
     * perf's remote walks declare it the same way); NULL when absent */
    int (*search_unwind_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *, int, void *);
};

/* libunwind's functions, loaded at the first call (never from a signal
 * handler); NULL when it cannot be loaded. Each may still be NULL in an
 * older libunwind. */
const struct cg_unwinder *cg_unwinder(void);
/* The same if it was loaded already, else NULL: never loads it (a hook's
 * slow path may ask, inside the program's malloc). */
const struct cg_unwinder *cg_unwinder_loaded(void);
/* libunwind's generic library, whose address spaces may have accessors
 * of one's own (create_addr_space, init_remote, get_accessors filled):
 * loaded at the first call (never from a signal handler), NULL when it
 * cannot be. */
const struct cg_unwinder *cg_unwinder_generic(void);
/* Whether pc is in libunwind's code (once loaded): a descriptor it opens
 * (its pipe for checking addresses) is moved out of the program's way. */
int cg_unwinder_calls_from(uintptr_t pc);
#endif

#endif
