/* A symbol session's state (data layer), and the session's own functions
 * (symsession.c: open, close, memory running out inside libdw, the
 * strings and maps it keeps, objects unloaded), shared by the files that
 * make one: symsession.c, names.c (the names of addresses), srclines.c
 * (their source lines), lookup.c (the cached lookups) and inlined.c
 * (inlined calls' own positions). Other modules have symbols.h, which
 * keeps struct cg_syms opaque. */
#ifndef CG_SYMSESSION_H
#define CG_SYMSESSION_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "debuginfo.h"
#include "elfutils.h"
#include "gone.h"
#include "lines.h"
#include "symbols.h"

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

/* An address resolved, cached for the session (lookup.c). */
struct cg_sym_entry {
    uintptr_t addr;
    struct cg_symbol sym;
    int lines;  /* its source lines were looked up (see cg_syms_want_lines) */
};

/* An object's function symbols sorted by address. elfutils'
 * dwfl_module_addrinfo() scans the whole symbol table on every lookup:
 * with 50,000 functions and 150,000 addresses to name, a dump took minutes. */
struct cg_fsym {
    uintptr_t addr; /* run-time address */
    uint64_t size;
    const char *name; /* in the object's string table (lives with the Dwfl) */
    int rank;         /* among aliases at one address: global > weak > local */
};

/* What the session knows of one object (names.c, srclines.c). */
struct cg_modsyms {
    Dwfl_Module *mod;
    struct cg_fsym *v;
    size_t n;
    size_t hint; /* where the last lookup ended (see cg_sess_function_at) */
    /* Its units' ranges, sorted, made when libdwfl finds no unit for an
     * address (srclines.c, unit_of). */
    struct cg_cu_range *cus;
    size_t ncus;
    int cus_made;
    Dwarf_Addr cu_bias;
};

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
 * handler jumps to (symsession.c, "Memory running out inside libdw"): each
 * lookup sets it with cg_cpu_jump_set (cpu.h) and puts back the one
 * before. */
extern __thread cg_cpu_jump_buf *cg_sess_dw_jump;

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

/* "???": an object, file or function not known. */
extern const char cg_sess_unknown[];

/* str (malloc'd) kept for the session, freed with it; NULL (str freed)
 * without memory. */
const char *cg_sess_keep(struct cg_syms *s, char *str);

/* Before the first reading of mod's DWARF: the session's out-of-memory
 * handler on its Dwarf. 0 if the session can go on. */
int cg_sess_dwarf_guarded(struct cg_syms *s, Dwfl_Module *mod);

/* The module of an unloaded object that addr belongs to, or NULL: the
 * object that owned it when it went; else, if nothing is mapped at addr now
 * (current: 0), the last object that was there. */
Dwfl_Module *cg_sess_gone_module(struct cg_syms *s, uintptr_t addr, int current);

#endif
