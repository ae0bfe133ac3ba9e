/* The names of addresses in a symbol session (see symsession.h): an
 * object's function symbols, sorted once and searched in the ascending
 * order of a dump's addresses; a function without a symbol named by its
 * unwind range's start, as Valgrind names it; without libdw, the loader's
 * own tables (the exported symbols); C++ names demangled and kept. */
#define _GNU_SOURCE
#include "names.h"
#include "debuginfo.h"
#include "demangle.h"
#include "unwinder.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfutils.h"
#include "util.h"

/* C++ names demangled (demangle.c), kept for the session. */
const char *cg_sess_demangle(struct cg_syms *s, const char *name)
{
    char *d = cg_demangle(name);
    if (!d)
        return name;
    const char *kept = cg_sess_keep(s, d);
    return kept ? kept : name;
}

static int cmp_fsym(const void *a, const void *b)
{
    const struct cg_fsym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* the preferred alias first: sized, then by binding */
    if ((x->size != 0) != (y->size != 0))
        return x->size ? -1 : 1;
    return y->rank - x->rank;
}

struct cg_modsyms *cg_sess_modsyms_of(struct cg_syms *s, Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->nmodsyms; i++)
        if (s->modsyms[i].mod == mod)
            return &s->modsyms[i];
    if (CG_GROW(s->modsyms, s->modsyms_cap, s->nmodsyms + 1, 16) != 0)
        return NULL;
    struct cg_modsyms *m = &s->modsyms[s->nmodsyms];
    m->mod = mod;
    m->v = NULL;
    m->n = 0;
    m->hint = 0;
    m->cus = NULL;
    m->ncus = 0;
    m->cus_made = 0;
    int count = CG_DW(dwfl_module_getsymtab)(mod);
    if (count > 0 && (m->v = malloc((size_t)count * sizeof *m->v))) {
        for (int i = 1; i < count; i++) {
            GElf_Sym sym;
            GElf_Addr addr;
            const char *name = cg_module_function(mod, i, &sym, &addr);
            if (!name)
                continue;
            int bind = GELF_ST_BIND(sym.st_info);
            struct cg_fsym *f = &m->v[m->n++];
            f->addr = addr;
            f->size = sym.st_size;
            f->name = name;
            f->rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0;
        }
        /* by address, then one entry per address: the preferred alias
         * (radix and a pass over each address's aliases: a qsort of the
         * 50,000 symbols of a big program was 8% of a dump) */
        if (cg_sort_keyed(m->v, m->n, sizeof *m->v) != 0)
            qsort(m->v, m->n, sizeof *m->v, cmp_fsym);
        size_t k = 0;
        for (size_t i = 0; i < m->n; i++)
            if (k == 0 || m->v[k - 1].addr != m->v[i].addr)
                m->v[k++] = m->v[i];
            else if (cmp_fsym(&m->v[i], &m->v[k - 1]) < 0)
                m->v[k - 1] = m->v[i];
        m->n = k;
    }
    s->nmodsyms++;
    return m;
}

/* The function symbol containing addr: the last one at or below it, when
 * its size covers addr (or it has no size). Returns its name and start. */
const char *cg_sess_function_at(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, uintptr_t *start)
{
    struct cg_modsyms *m = cg_sess_modsyms_of(s, mod);
    if (!m || m->n == 0 || addr < m->v[0].addr)
        return NULL;
    /* A dump looks addresses up in ascending order: search forward from
     * the last answer, in steps that double (a binary search over the whole
     * table, at random places in memory, was most of the lookup's time). */
    size_t lo = 0, hi = m->n; /* the answer is in [lo, hi) */
    if (m->v[m->hint].addr <= addr) {
        lo = m->hint;
        for (size_t step = 1; lo + step < m->n; step *= 2) {
            if (m->v[lo + step].addr > addr) {
                hi = lo + step;
                break;
            }
            lo += step;
        }
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    m->hint = lo;
    const struct cg_fsym *f = &m->v[lo];
    if (f->size != 0 && addr - f->addr >= f->size)
        return NULL;
    *start = f->addr;
    return f->name;
}

/* ---- functions without a symbol ------------------------------------------
 * Code with no symbol (a static function of a stripped library, e.g. libc
 * without its debug symbols) is still inside one function, whose range the
 * unwind tables give (.eh_frame, through .eh_frame_hdr's sorted index). That
 * lookup is libunwind's unw_get_proc_info_by_ip() (unwinder.c). */
#if CG_HAVE_LIBUNWIND
static int proc_range(uintptr_t addr, uintptr_t *start)
{
    const struct cg_unwinder *u = cg_unwinder();
    if (!u || !u->get_proc_info_by_ip || !u->local_addr_space)
        return -1;
    unw_proc_info_t pi;
    memset(&pi, 0, sizeof pi);
    if (u->get_proc_info_by_ip(*u->local_addr_space, (unw_word_t)addr, &pi, NULL) != 0 || pi.start_ip == 0 ||
        addr < pi.start_ip || addr >= pi.end_ip)
        return -1;
    *start = (uintptr_t)pi.start_ip;
    return 0;
}
#else
static int proc_range(uintptr_t addr, uintptr_t *start)
{
    (void)addr;
    (void)start;
    return -1;
}
#endif

/* Names such a function by its start address, as Valgrind does, so that
 * all of its addresses are one function. */
int cg_sess_unnamed_function(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, struct cg_symbol *out)
{
    uintptr_t start;
    if (proc_range(addr, &start) != 0)
        return 0;
    Dwarf_Addr bias = 0;
    CG_DW(dwfl_module_getelf)(mod, &bias);
    char *name = NULL;
    if (cg_sess_lost(s) || asprintf(&name, "0x%016llx", (unsigned long long)(start - bias)) < 0)
        return 0;
    const char *kept = cg_sess_keep(s, name);
    if (!kept)
        return 0;
    out->function = kept;
    out->fn_start = start;
    out->fn_obj_addr = start - bias;
    return 1;
}

/* ---- without libdw ------------------------------------------------------
 * Where no libdw session could be had (cg_syms_without_libdw), an address
 * is named from the loader's own tables: its object (the program's by
 * /proc/self/exe) and the exported symbol that holds it (the dynamic
 * symbol table: a library's global functions, a program's only if it was
 * linked with -rdynamic). No source file or line; the functions with no
 * such symbol are named by their address, as Valgrind names them. No
 * allocation but the names kept. */
void cg_sess_resolve_loaded(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out)
{
    Dl_info info;
    struct link_map *map = NULL;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return;
    if (map != s->last_map) {
        char exe[4096];
        const char *path = map->l_name;
        if (!path || !*path) {
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = 0;
            path = exe;
        }
        /* the session's own copy: the object may be unloaded before the
         * session is closed */
        char *copy = *path ? strdup(path) : NULL;
        s->last_map_path = copy ? cg_sess_keep(s, copy) : NULL;
        s->last_map = map;
    }
    if (s->last_map_path)
        out->object = s->last_map_path;
    out->obj_addr = addr - map->l_addr;
    if (!dladdr1((void *)addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !info.dli_sname ||
        !info.dli_saddr)
        return;
    int type = ELF64_ST_TYPE(sym->st_info);
    uintptr_t start = (uintptr_t)info.dli_saddr;
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || addr < start ||
        (sym->st_size && addr - start >= sym->st_size))
        return;
    if (start != s->last_sym) {
        char *name = cg_demangle(info.dli_sname);
        s->last_sym_name = cg_sess_keep(s, name ? name : strdup(info.dli_sname));
        s->last_sym = start;
    }
    out->function = s->last_sym_name;
    out->fn_start = start;
    out->fn_obj_addr = start - map->l_addr;
}
