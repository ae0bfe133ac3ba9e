/* elfutils (libdw and the libelf it brings), loaded when first needed
 * (base layer): for the symbols and lines of a dump (runtime/symbols/)
 * and the filters' scan (filter.c). Loaded with dlopen(RTLD_LOCAL), as
 * libunwind is (unwinder.h), not linked: linked, the loader mapped libdw,
 * libelf and their compression libraries (1.2 MB of address space) into
 * every program before its main, which under a tight RLIMIT_AS is memory
 * the program itself needs (issue 39), and most runs only need them at
 * exit. RTLD_NOW: nothing is bound later.
 *
 * Calls go through CG_DW(name)(...): a table of pointers filled by
 * cg_elfutils(), or in the static runtime (libdw linked into the archive)
 * the function itself. A caller calls CG_DW only after cg_elfutils()
 * returned non-NULL (once loaded, the table never changes). */
#ifndef CG_ELFUTILS_H
#define CG_ELFUTILS_H

#include <stddef.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "compiler.h"

/* Every function of libdw and libelf the runtime calls. */
#define CG_ELFUTILS_FUNCTIONS(X)                                                                             \
    X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_child) X(dwarf_cu_getdwarf) X(dwarf_cu_info) X(dwarf_diecu)    \
    X(dwarf_diename) X(dwarf_filesrc) X(dwarf_formref_die) X(dwarf_formstring) X(dwarf_formudata)               \
    X(dwarf_getelf) X(dwarf_getsrc_die) X(dwarf_getsrcfiles) X(dwarf_haspc) X(dwarf_lineno) X(dwarf_linesrc)    \
    X(dwarf_new_oom_handler) X(dwarf_ranges) X(dwarf_siblingof) X(dwarf_tag)                                                             \
    X(dwfl_addrmodule) X(dwfl_begin) X(dwfl_build_id_find_debuginfo) X(dwfl_build_id_find_elf) X(dwfl_end)      \
    X(dwfl_linecu) X(dwfl_lineinfo) X(dwfl_linux_proc_find_elf) X(dwfl_linux_proc_maps_report)                 \
    X(dwfl_module_addrdie) X(dwfl_module_getdwarf) X(dwfl_module_getelf) X(dwfl_module_getsrc) X(dwfl_module_getsym_info)              \
    X(dwfl_module_getsymtab) X(dwfl_module_info) X(dwfl_module_nextcu) X(dwfl_report_begin)                    \
    X(dwfl_report_begin_add) X(dwfl_report_elf) X(dwfl_report_end) X(dwfl_standard_find_debuginfo)             \
    X(elf_begin) X(elf_cntl) X(elf_end) X(elf_getdata) X(elf_getshdrstrndx) X(elf_nextscn) X(elf_strptr)        \
    X(gelf_getehdr) X(gelf_getshdr) X(gelf_getsym)

#define CG_ELFUTILS_FIELD(name) __typeof__(name) *name;
struct cg_elfutils {
    CG_ELFUTILS_FUNCTIONS(CG_ELFUTILS_FIELD)
};
#undef CG_ELFUTILS_FIELD

/* The functions, loaded at the first call (never from a signal handler:
 * dlopen); NULL when they cannot be (the library is not installed, or its
 * mappings did not fit: cg_elfutils_error says why). A failed load is tried
 * again at the next call: memory short at one dump may be free at the
 * next. Thread-safe. */
const struct cg_elfutils *cg_elfutils(void);
/* The same if loaded already, else NULL: never loads them. */
const struct cg_elfutils *cg_elfutils_loaded(void);
/* No load tried from now on: cg_elfutils() is cg_elfutils_loaded(). For
 * the crash copy, forked in a signal handler: its dlopen could wait for
 * ever on a lock held by a thread the copy does not have. */
void cg_elfutils_no_loading(void);
/* Why the last load failed, copied into dst (size bytes): the loader's
 * message, e.g. "libdw.so.1: failed to map segment from shared object";
 * "" if none did. */
void cg_elfutils_error(char *dst, size_t size);

#if CG_STATIC
#define CG_DW(name) name
#else
extern struct cg_elfutils cg_elfutils_table;
#define CG_DW(name) (cg_elfutils_table.name)
#endif

#endif
