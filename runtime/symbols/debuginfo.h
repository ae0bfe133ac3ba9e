/* libdw helpers shared by the symbol sessions (symsession.c, names.c) and the filters'
 * scan (filter.c). libdw's functions are called through CG_DW (elfutils.h),
 * once cg_elfutils() has loaded them. */
#ifndef CG_DEBUGINFO_H
#define CG_DEBUGINFO_H

#include "elfutils.h"

/* libdwfl's find_debuginfo callback for cgprof's sessions: separate debug
 * files by build-id (/usr/lib/debug/.build-id/..), and .gnu_debuglink only
 * when DEBUGINFOD_URLS is unset: with it set, the standard callback would
 * ask a debuginfod server, a network wait inside the user's program. */
int cg_syms_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                           char **debuginfo_file_name);

/* libdwfl's find_elf callback for objects reported offline: its
 * dwfl_build_id_find_elf, called through the loaded table. */
int cg_syms_find_elf_by_build_id(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                 char **file_name, Elf **elfp);

/* A line table's file name made absolute (relative ones are relative to
 * their unit's DW_AT_comp_dir) and normalised; malloc'd, NULL if out of
 * memory. */
char *cg_source_path(Dwarf_Die *cu, const char *raw);

/* Symbol i of mod's table (1 <= i < dwfl_module_getsymtab(mod)) if it is a
 * defined function (or ifunc): its name, with *sym and its run-time *addr;
 * else NULL. */
const char *cg_module_function(Dwfl_Module *mod, int i, GElf_Sym *sym, GElf_Addr *addr);

/* The address range of a compilation unit (run-time addresses). A
 * module's units by their own ranges: libdwfl finds an address's unit
 * through .debug_aranges, which clang does not write (without
 * -gdwarf-aranges), and then finds none; the symbol sessions
 * (srclines.c) and the filters' scan (filter.c) each list the ranges
 * (dwarf_ranges of every unit) and look up in them with these two. */
struct cg_cu_range {
    uintptr_t lo, hi;
    Dwarf_Die *cu;
};

/* Sorts v[n] by the ranges' starts. */
void cg_cu_ranges_sort(struct cg_cu_range *v, size_t n);

/* The unit whose range holds addr, in v[n] as sorted; NULL for none. */
Dwarf_Die *cg_cu_ranges_find(const struct cg_cu_range *v, size_t n, uintptr_t addr);

#endif
