/* A symbol session's state (data layer), shared by the two files that make
 * one: symbols.c (the session itself, and the names and source lines of
 * addresses) and inlined.c (inlined calls' own positions), with the
 * functions of symbols.c that inlined.c calls. Other modules have
 * symbols.h, which keeps struct cg_syms opaque. */
#ifndef CG_SYMSESSION_H
#define CG_SYMSESSION_H

#include <stddef.h>
#include <stdint.h>

#include "elfutils.h"
#include "gone.h"
#include "lines.h"

/* A map of the session keyed by pointers (open addressing, half full at
 * most; keys are never NULL): source file names as the line tables give
 * them -> absolute paths, compilation units -> their decoded line tables. */
struct cg_ptr_entry {
    const void *key;
    void *value;
};

struct cg_ptr_map {
    struct cg_ptr_entry *v;
    size_t cap, n;
};

struct cg_sym_entry; /* symbols.c's: an address resolved */
struct cg_modsyms;   /* symbols.c's: an object's function symbols */

struct cg_syms {
    Dwfl *dwfl;
    /* No libdw session (libdw could not be loaded, or read no object):
     * why, and the addresses are named from the loader's own tables
     * (resolve_loaded); the object of the last one named so. */
    char why[200];
    const void *last_map;
    const char *last_map_path;
    uintptr_t last_sym; /* and the function of the last one, and its name */
    const char *last_sym_name;
    /* memory ran out inside libdw or libelf: no more calls into them (see
     * "Memory running out inside libdw") */
    int nomem;
    int holds_fds; /* libdwfl holds descriptors of this session's */
    Dwfl *gone; /* objects unloaded since they ran: reported offline, on demand */
    struct cg_gone *gone_list; /* which they are (NULL: none looked for) */
    struct cg_ptr_map paths; /* raw file name -> absolute path (kept) */
    /* The cache: entries made in blocks, one a lookup, that never move; and
     * pointers to them sorted by address. A dump looks up its addresses
     * sorted, so finding them is a merge, in order through memory: a hash
     * table, probed at random places, was a third of the lookup's time
     * (a miss in cache and TLB for each of 150,000 addresses). */
    struct cg_sym_entry **sorted;
    size_t nents;
    struct cg_sym_entry **blocks;
    size_t nblocks;
    char **owned; /* strings we allocated (demangled names) */
    size_t nowned, owned_cap;
    struct cg_modsyms *modsyms; /* sorted function symbols, per object */
    size_t nmodsyms, modsyms_cap;
    Dwfl_Module **lined; /* objects with instrumented code: lines wanted */
    size_t nlined, lined_cap;
    Dwfl_Module *last_lined;
    /* The object of the last address resolved, and what resolve() needs of
     * it: the addresses of a dump come in ascending order, thousands in each
     * object. nlined: the objects with lines known when it was filled. */
    struct {
        Dwfl_Module *mod;
        Dwarf_Addr lo, hi, bias;
        const char *path;
        int has_elf, lines;
        size_t nlined;
    } last_mod;
    /* The units' line tables, decoded when first wanted and kept for the
     * session: the unit DIE's address (in .debug_info) -> its
     * cg_line_table, NULL where lines.c leaves the unit to libdw. */
    struct cg_ptr_map units;
    /* Where the last source line was found (see source_of). */
    struct {
        Dwfl_Module *mod;
        Dwarf_Die *cu;                     /* its compilation unit */
        const struct cg_line_table *table; /* its decoded rows; NULL: libdw's */
        size_t idx;                        /* the row */
        Dwarf_Addr bias;
    } last_line;
    /* Inlined calls' own positions (cg_syms_inlined_call): the address of
     * an enter hook's place -> its struct inlined_call; a callee's address
     * -> its struct callee_id. Both malloc'd, kept for the session. */
    struct cg_ptr_map inlined, callees;
    /* The function of the last address resolved: the addresses of a dump
     * come in ascending order, several in each function. */
    struct {
        Dwfl_Module *mod;
        uintptr_t start;
        int lines;
        const char *name, *file;
        unsigned line;
    } last_fn;
};

/* The lookup under way in this thread, where libdw's out-of-memory
 * handler jumps to (symbols.c, "Memory running out inside libdw"): each
 * lookup sets it with __builtin_setjmp and puts back the one before. */
typedef void *cg_sess_jmp_buf[5];
extern __thread cg_sess_jmp_buf *cg_sess_dw_jump;

/* Marks s lost (memory ran out inside libdw): no more calls into it. */
void cg_sess_mark_lost(struct cg_syms *s);
/* Whether memory ran out in the calls since errno was last cleared: the
 * session is marked lost then. */
int cg_sess_lost(struct cg_syms *s);

/* The entry of key in m: its own, or the empty one where it goes (key
 * NULL: the caller fills it and counts it in m->n). NULL when the map
 * could not grow. */
struct cg_ptr_entry *cg_sess_ptr_slot(struct cg_ptr_map *m, const void *key, size_t first_cap);

/* The absolute, normalised form of a line table's file name (a relative
 * one is relative to its compilation unit's DW_AT_comp_dir), kept for the
 * session. */
const char *cg_sess_absolute_path(struct cg_syms *s, Dwarf_Die *cu, const char *raw);

/* The function symbol of mod containing addr: its name and *start; NULL if
 * none. */
const char *cg_sess_function_at(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, uintptr_t *start);

/* The module of addr, as the session's lookups find it (an unloaded
 * object's first; NULL if none), and its unit and DWARF bias: NULL if it
 * has none, or if its object's lines are not wanted. */
Dwarf_Die *cg_sess_unit_at(struct cg_syms *s, uintptr_t addr, Dwfl_Module **modp, Dwarf_Addr *bias);

#endif
