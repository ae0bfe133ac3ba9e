/* libdw helpers shared by the symbol sessions and the filters' scan: see
 * debuginfo.h. */
#define _GNU_SOURCE
#include "debuginfo.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *cg_module_function(Dwfl_Module *mod, int i, GElf_Sym *sym, GElf_Addr *addr)
{
    GElf_Word shndx;
    const char *name = CG_DW(dwfl_module_getsym_info)(mod, i, sym, addr, &shndx, NULL, NULL);
    int type = GELF_ST_TYPE(sym->st_info);
    if (!name || !*name || shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
        return NULL;
    return name;
}

char *cg_source_path(Dwarf_Die *cu, const char *raw)
{
    const char *dir = NULL;
    if (raw[0] != '/') {
        Dwarf_Attribute attr;
        dir = cu ? CG_DW(dwarf_formstring)(CG_DW(dwarf_attr)(cu, DW_AT_comp_dir, &attr)) : NULL;
    }
    char *p = NULL;
    if (dir ? asprintf(&p, "%s/%s", dir, raw) < 0 : !(p = strdup(raw)))
        return NULL;
    cg_path_normalise(p);
    return p;
}

int cg_syms_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                           char **debuginfo_file_name)
{
    int fd = CG_DW(dwfl_build_id_find_debuginfo)(mod, userdata, modname, base, file_name, debuglink_file,
                                                 debuglink_crc, debuginfo_file_name);
    if (fd >= 0)
        return fd;
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (urls && *urls)
        return -1;
    return CG_DW(dwfl_standard_find_debuginfo)(mod, userdata, modname, base, file_name, debuglink_file,
                                               debuglink_crc, debuginfo_file_name);
}

int cg_syms_find_elf_by_build_id(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                 char **file_name, Elf **elfp)
{
    return CG_DW(dwfl_build_id_find_elf)(mod, userdata, modname, base, file_name, elfp);
}

static int cmp_cu_range(const void *a, const void *b)
{
    const struct cg_cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void cg_cu_ranges_sort(struct cg_cu_range *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_cu_range);
}

Dwarf_Die *cg_cu_ranges_find(const struct cg_cu_range *v, size_t n, uintptr_t addr)
{
    size_t lo = 0, hi = n; /* the last range starting at or below addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].lo <= addr)
            lo = mid;
        else
            hi = mid;
    }
    if (!n || addr < v[lo].lo || addr >= v[lo].hi)
        return NULL;
    return v[lo].cu;
}
