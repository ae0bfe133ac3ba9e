/* The source file and line of an address in a symbol session (see
 * symsession.h): its compilation unit (libdwfl's, from .debug_aranges, or
 * from the units' own ranges, which clang-built objects need), the unit's
 * line table decoded once (lines.c, or libdw's where lines.c leaves it),
 * the row, the file's absolute path; only in the objects whose lines are
 * wanted (instrumented code, cg_syms_want_lines). lines.c decodes one
 * unit's table; this finds an address's unit and row in it. */
#define _GNU_SOURCE
#include "srclines.h"
#include "names.h"
#include "symbols.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>

#include "elfutils.h"
#include "lines.h"
#include "util.h"

/* The compilation unit of addr from the units' own ranges. libdwfl finds a
 * unit through .debug_aranges, which clang does not write: without this,
 * no source file of a clang-built program was known. */
static Dwarf_Die *unit_of(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, Dwarf_Addr *bias)
{
    struct cg_modsyms *m = cg_sess_modsyms_of(s, mod);
    if (!m || cg_sess_lost(s))
        return NULL;
    if (!m->cus_made) {
        m->cus_made = 1;
        size_t cap = 0;
        Dwarf_Die *cu = NULL;
        Dwarf_Addr b = 0;
        if (cg_sess_dwarf_guarded(s, mod) != 0)
            return NULL;
        while ((cu = CG_DW(dwfl_module_nextcu)(mod, cu, &b)) != NULL && !cg_sess_lost(s)) {
            m->cu_bias = b;
            Dwarf_Addr base, start, end;
            for (ptrdiff_t off = 0; (off = CG_DW(dwarf_ranges)(cu, off, &base, &start, &end)) > 0;) {
                if (start >= end)
                    continue;
                if (CG_GROW(m->cus, cap, m->ncus + 1, 16) != 0)
                    break;
                m->cus[m->ncus++] = (struct cg_cu_range){ start + b, end + b, cu };
            }
        }
        if (cg_sess_lost(s))
            return NULL;
        cg_cu_ranges_sort(m->cus, m->ncus);
    }
    Dwarf_Die *cu = cg_cu_ranges_find(m->cus, m->ncus, addr);
    if (cu)
        *bias = m->cu_bias;
    return cu;
}

/* The line table of a compilation unit, decoded when first wanted; NULL
 * where lines.c leaves the unit to libdw (or memory ran out). */
static const struct cg_line_table *lines_of(struct cg_syms *s, Dwarf_Die *cu)
{
    struct cg_ptr_entry *e = cg_sess_ptr_slot(&s->units, cu->addr, 64);
    if (!e)
        return NULL;
    if (e->key)
        return e->value;
    struct cg_line_table *t = malloc(sizeof *t);
    if (t && cg_lines_decode(cu, t) != 0) {
        free(t);
        t = NULL;
    }
    e->key = cu->addr;
    e->value = t;
    s->units.n++;
    return t;
}

/* The source file (as the line table names it) and line of addr in unit
 * cu, if the unit has a row for it: what dwarf_getsrc_die() answers, from
 * the decoded rows, else from libdw's. */
static int row_in(struct cg_syms *s, Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Addr bias,
                  const char **src, int *lineno)
{
    const struct cg_line_table *t = lines_of(s, cu);
    if (cg_sess_lost(s))
        return 0;
    if (!t) {
        Dwarf_Line *l = CG_DW(dwarf_getsrc_die)(cu, addr - bias);
        if (!l || cg_sess_lost(s))
            return 0;
        s->last_line.table = NULL;
        *src = CG_DW(dwarf_linesrc)(l, NULL, NULL);
        if (CG_DW(dwarf_lineno)(l, lineno) != 0)
            *lineno = 0;
        return 1;
    }
    size_t idx = 0;
    const struct cg_line_row *r = cg_lines_find(t, addr - bias, &idx);
    if (!r)
        return 0;
    s->last_line.mod = mod;
    s->last_line.cu = cu;
    s->last_line.table = t;
    s->last_line.idx = idx;
    s->last_line.bias = bias;
    *src = cg_lines_file(t, r);
    *lineno = r->line;
    return 1;
}

/* What dwfl_module_getsrc() answers (the unit that .debug_aranges gives,
 * its row), else the row in the unit whose ranges hold addr (unit_of). The
 * addresses of a dump ascend: one in the rows of the last unit found is
 * looked up there, from the last row, without finding its unit again (a
 * unit's rows cover only its own code). */
void cg_sess_source_of(struct cg_syms *s, Dwfl_Module *mod, Dwarf_Addr addr, const char **file, unsigned *line)
{
    *file = cg_sess_unknown;
    *line = 0;
    const char *src = NULL;
    int lineno = 0;
    Dwarf_Die *cu = s->last_line.cu;
    const struct cg_line_row *r = NULL;
    if (s->last_line.table && s->last_line.mod == mod)
        r = cg_lines_find(s->last_line.table, addr - s->last_line.bias, &s->last_line.idx);
    if (r) {
        src = cg_lines_file(s->last_line.table, r);
        lineno = r->line;
    } else {
        Dwarf_Addr bias;
        if (s->nomem || cg_sess_dwarf_guarded(s, mod) != 0)
            return;
        /* memory running out at any step ends it (symsession.c, "Memory
         * running out inside libdw") */
        cu = CG_DW(dwfl_module_addrdie)(mod, addr, &bias);
        int found = !cg_sess_lost(s) && cu && row_in(s, mod, cu, addr, bias, &src, &lineno);
        if (!found && !cg_sess_lost(s)) {
            cu = unit_of(s, mod, addr, &bias);
            found = !cg_sess_lost(s) && cu && row_in(s, mod, cu, addr, bias, &src, &lineno);
        }
        if (!found || cg_sess_lost(s))
            return;
    }
    if (src && *src) {
        const char *path = cg_sess_absolute_path(s, cu, src);
        if (cg_sess_lost(s))
            return;
        *file = path;
        *line = lineno > 0 ? (unsigned)lineno : 0;
    }
}

int cg_sess_wants_lines(const struct cg_syms *s, Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->nlined; i++)
        if (s->lined[i] == mod)
            return 1;
    return 0;
}

void cg_syms_want_lines(struct cg_syms *s, uintptr_t addr)
{
    if (!s->dwfl || s->nomem)
        return;
    int saved = errno;
    errno = 0;
    Dwfl_Module *mod = CG_DW(dwfl_addrmodule)(s->dwfl, addr);
    int gone = cg_sess_lost(s);
    errno = saved;
    if (!mod || gone || mod == s->last_lined || cg_sess_wants_lines(s, mod))
        return;
    if (CG_GROW(s->lined, s->lined_cap, s->nlined + 1, 16) != 0)
        return;
    s->lined[s->nlined++] = mod;
    s->last_lined = mod;
}

Dwarf_Die *cg_sess_unit_at(struct cg_syms *s, uintptr_t addr, Dwfl_Module **modp, Dwarf_Addr *bias)
{
    *modp = NULL;
    if (s->nomem)
        return NULL;
    Dwfl_Module *mod = s->dwfl ? CG_DW(dwfl_addrmodule)(s->dwfl, addr) : NULL;
    Dwfl_Module *gone = cg_sess_lost(s) ? NULL : cg_sess_gone_module(s, addr, mod != NULL);
    if (cg_sess_lost(s))
        return NULL;
    *modp = gone ? gone : mod;
    if (gone)
        mod = gone;
    else if (!mod || !cg_sess_wants_lines(s, mod))
        return NULL;
    if (cg_sess_dwarf_guarded(s, mod) != 0)
        return NULL;
    Dwarf_Die *cu = CG_DW(dwfl_module_addrdie)(mod, addr, bias);
    if (cg_sess_lost(s))
        return NULL;
    return cu ? cu : unit_of(s, mod, addr, bias);
}
