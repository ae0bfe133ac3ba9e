/* The lookups of a dump's addresses in a symbol session (symbols.h's
 * cg_syms_lookup_sorted): each address resolved once per session into its
 * object, function and lines (names.c, srclines.c), under a jump point for
 * libdw's out-of-memory handler (symsession.h), and cached in ascending
 * order, so that a dump's sorted addresses are found by a merge. */
#include "symbols.h"
#include "names.h"
#include "srclines.h"
#include "symsession.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elfutils.h"

/* lines: look up source lines (else they stay unknown). Objects unloaded
 * (offline modules) always get them: only code that ran is noted there. */
static void resolve(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out, int *lines)
{
    memset(out, 0, sizeof *out);
    out->object = cg_sess_unknown;
    out->obj_addr = addr;
    out->fn_file = out->file = cg_sess_unknown;
    *lines = 1;
    if (s->nomem)
        return;
    errno = 0;
    Dwfl_Module *mod;
    if (s->last_mod.mod && addr >= s->last_mod.lo && addr < s->last_mod.hi && s->last_mod.nlined == s->nlined)
        mod = s->last_mod.mod;
    else
        mod = s->dwfl ? CG_DW(dwfl_addrmodule)(s->dwfl, addr) : NULL;
    Dwfl_Module *gone = cg_sess_lost(s) ? NULL : cg_sess_gone_module(s, addr, mod != NULL);
    if (cg_sess_lost(s))
        return;
    if (gone) {
        mod = gone;
        const char *path = CG_DW(dwfl_module_info)(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        if (path && *path)
            out->object = path;
        Dwarf_Addr bias = 0;
        if (CG_DW(dwfl_module_getelf)(mod, &bias))
            out->obj_addr = addr - bias;
        if (cg_sess_lost(s))
            return;
    } else if (mod) {
        if (mod != s->last_mod.mod || s->last_mod.nlined != s->nlined) {
            s->last_mod.mod = mod;
            s->last_mod.nlined = s->nlined;
            s->last_mod.path =
                CG_DW(dwfl_module_info)(mod, NULL, &s->last_mod.lo, &s->last_mod.hi, NULL, NULL, NULL, NULL);
            s->last_mod.bias = 0;
            s->last_mod.has_elf = CG_DW(dwfl_module_getelf)(mod, &s->last_mod.bias) != NULL;
            s->last_mod.lines = cg_sess_wants_lines(s, mod);
            if (cg_sess_lost(s)) {
                s->last_mod.mod = NULL;
                return;
            }
        }
        *lines = s->last_mod.lines;
        if (s->last_mod.path && *s->last_mod.path)
            out->object = s->last_mod.path; /* a full path, or a name such as [vdso] */
        if (s->last_mod.has_elf)
            out->obj_addr = addr - s->last_mod.bias;
    } else {
        if (!s->dwfl)
            cg_sess_resolve_loaded(s, addr, out);
        return;
    }

    uintptr_t start = 0;
    const char *name = cg_sess_function_at(s, mod, addr, &start);
    if (cg_sess_lost(s))
        return;
    if (name) {
        uintptr_t off = addr - start;
        out->fn_start = addr - off;
        out->fn_obj_addr = out->obj_addr - off;
        if (s->last_fn.mod != mod || s->last_fn.start != start || s->last_fn.lines != *lines) {
            s->last_fn.mod = mod;
            s->last_fn.start = start;
            s->last_fn.lines = *lines;
            s->last_fn.name = cg_sess_demangle(s, name);
            s->last_fn.file = cg_sess_unknown;
            s->last_fn.line = 0;
            if (*lines)
                cg_sess_source_of(s, mod, start, &s->last_fn.file, &s->last_fn.line);
            if (s->nomem)
                s->last_fn.mod = NULL;
        }
        out->function = s->last_fn.name;
        out->fn_file = s->last_fn.file;
        out->fn_line = s->last_fn.line;
    } else if (cg_sess_unnamed_function(s, mod, addr, out)) {
        cg_sess_source_of(s, mod, out->fn_start, &out->fn_file, &out->fn_line);
    }
    if (*lines && !s->nomem)
        cg_sess_source_of(s, mod, addr, &out->file, &out->line);
}

/* resolve() under a jump point for libdw's out-of-memory handler: a lookup
 * it ends is made again without libdw (the session is lost). */
static void resolve_guarded(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out, int *lines)
{
    cg_cpu_jump_buf here;
    cg_cpu_jump_buf *volatile outer = cg_sess_dw_jump;
    if (cg_cpu_jump_set(here) == 0) {
        cg_sess_dw_jump = &here;
        resolve(s, addr, out, lines);
    } else {
        cg_sess_mark_lost(s);
        resolve(s, addr, out, lines);
    }
    cg_sess_dw_jump = outer;
}

int cg_syms_lookup_sorted(struct cg_syms *s, const uintptr_t *addrs, size_t n, const struct cg_symbol **out)
{
    int saved = errno;
    /* The entries not cached yet, resolved in ascending order (what makes
     * function_at's hint and the last_fn cache work). */
    size_t misses = 0;
    for (size_t i = 0, k = 0; i < n; i++) {
        while (k < s->nents && s->sorted[k]->addr < addrs[i])
            k++;
        misses += k == s->nents || s->sorted[k]->addr != addrs[i];
    }
    if (misses) {
        struct cg_sym_entry *fresh = malloc(misses * sizeof *fresh);
        struct cg_sym_entry **all = malloc((s->nents + misses) * sizeof *all);
        struct cg_sym_entry **blocks = realloc(s->blocks, (s->nblocks + 1) * sizeof *blocks);
        if (blocks)
            s->blocks = blocks;
        if (!fresh || !all || !blocks) {
            free(fresh);
            free(all);
            errno = saved;
            return -1;
        }
        s->blocks[s->nblocks++] = fresh;
        size_t m = 0;
        for (size_t i = 0, k = 0; i < n; i++) {
            while (k < s->nents && s->sorted[k]->addr < addrs[i])
                k++;
            if (k < s->nents && s->sorted[k]->addr == addrs[i])
                continue;
            fresh[m].addr = addrs[i];
            resolve_guarded(s, addrs[i], &fresh[m].sym, &fresh[m].lines);
            m++;
        }
        size_t a = 0, b = 0, o = 0;
        while (a < s->nents || b < m)
            all[o++] = b == m || (a < s->nents && s->sorted[a]->addr < fresh[b].addr) ? s->sorted[a++] : &fresh[b++];
        free(s->sorted);
        s->sorted = all;
        s->nents += m;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        while (s->sorted[k]->addr < addrs[i])
            k++;
        struct cg_sym_entry *e = s->sorted[k];
        /* resolved without lines, before its object was known to hold
         * instrumented code */
        if (!e->lines && s->nlined && !s->nomem) {
            errno = 0;
            Dwfl_Module *mod = CG_DW(dwfl_addrmodule)(s->dwfl, addrs[i]);
            if (!cg_sess_lost(s) && mod && cg_sess_wants_lines(s, mod)) {
                /* what it had stays if the session is lost meanwhile */
                struct cg_symbol sym;
                int lines;
                resolve_guarded(s, addrs[i], &sym, &lines);
                if (!s->nomem) {
                    e->sym = sym;
                    e->lines = lines;
                }
            }
        }
        out[i] = &e->sym;
    }
    errno = saved;
    return 0;
}
