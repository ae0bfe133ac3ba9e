/* The symbol table of a snapshot: see symtab.h. */
#include "symtab.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static int cmp_call(const void *pa, const void *pb)
{
    const struct cg_symtab_call *a = pa, *b = pb;
    if (a->pc != b->pc)
        return a->pc < b->pc ? -1 : 1;
    return a->callee < b->callee ? -1 : a->callee > b->callee;
}

int cg_symtab_build(struct cg_syms *syms, const struct cg_snapshot *s, struct cg_symtab *out,
                    struct cg_symtab_entry **storage)
{
    size_t max = 3 * s->narcs + s->nselfs + s->nnodes, n = 0;
    uintptr_t *addrs = malloc((max ? max : 1) * sizeof *addrs);
    if (!addrs)
        return -1;
    for (size_t i = 0; i < s->narcs; i++) {
        if (s->arcs[i].caller)
            addrs[n++] = s->arcs[i].caller;
        addrs[n++] = s->arcs[i].callee;
        if (s->arcs[i].call_pc)
            addrs[n++] = s->arcs[i].call_pc;
    }
    for (size_t i = 0; i < s->nselfs; i++)
        addrs[n++] = s->selfs[i].addr;
    /* the functions of the call paths (those of ancestors with nothing in
     * the part may be in no arc of it) */
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->nodes[i].fn != CG_NODE_BEYOND)
            addrs[n++] = s->nodes[i].fn;
    /* The functions the hooks saw are instrumented: lines in their objects.
     * Not those the sampler found (libc's, under a function of the
     * program): their object's line tables are no help to the user, and
     * reading them can cost more than the run (libc6-dbg's compressed
     * DWARF, inflated whole by libdw: 0.1 s of CPU at every exit). */
    if (syms)
        for (size_t i = 0; i < s->narcs; i++)
            if (!s->arcs[i].sampled)
                cg_syms_want_lines(syms, s->arcs[i].callee);
    cg_sort_uintptr(addrs, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || addrs[m - 1] != addrs[i])
            addrs[m++] = addrs[i];
    size_t ninl = 0;
    if (syms)
        for (size_t i = 0; i < s->narcs; i++)
            ninl += s->arcs[i].inlined && s->arcs[i].call_pc;
    /* The entries point to the session's symbols, found into the space
     * that follows the entries; without a session, to raw symbols made in
     * that same space (one or the other: pages never touched cost nothing).
     * The inlined calls' positions after them. */
    struct cg_symtab_entry *v = malloc((m ? m : 1) * (sizeof *v + sizeof(struct cg_symbol)) +
                                       ninl * sizeof(struct cg_symtab_call));
    const struct cg_symbol **found = (const struct cg_symbol **)(v + m);
    if (!v || (syms && cg_syms_lookup_sorted(syms, addrs, m, found) != 0)) {
        free(v);
        free(addrs);
        return -1;
    }
    /* After the lookup: the objects that want lines are known. */
    struct cg_symtab_call *calls = (struct cg_symtab_call *)((char *)v + m * (sizeof *v + sizeof(struct cg_symbol)));
    size_t ncalls = 0;
    for (size_t i = 0; i < s->narcs && ninl; i++) {
        const struct cg_snap_arc *a = &s->arcs[i];
        struct cg_symtab_call c = { a->call_pc, a->callee, NULL, 0 };
        if (a->inlined && a->call_pc && cg_syms_inlined_call(syms, a->call_pc, a->callee, &c.file, &c.line))
            calls[ncalls++] = c;
    }
    qsort(calls, ncalls, sizeof *calls, cmp_call);
    struct cg_symbol *raw = (struct cg_symbol *)(v + m);
    for (size_t i = 0; i < m; i++) {
        v[i].addr = addrs[i];
        if (syms) {
            v[i].sym = found[i];
        } else {
            memset(&raw[i], 0, sizeof raw[i]);
            raw[i].object = raw[i].file = raw[i].fn_file = "???";
            raw[i].obj_addr = addrs[i];
            v[i].sym = &raw[i];
        }
    }
    free(addrs);
    out->v = v;
    out->n = m;
    out->calls = calls;
    out->ncalls = ncalls;
    *storage = v;
    return 0;
}
