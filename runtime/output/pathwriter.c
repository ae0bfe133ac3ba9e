/* The path file of a part: a thread's calling-context tree as text
 * (docs/internals/paths-format.md). Pure, like writer.c: a snapshot and the symbols
 * of its addresses in, text out. */
#include "pathwriter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The symbol of addr in syms (sorted by address), NULL if absent. */
static const struct cg_symbol *sym_at(const struct cg_symtab *syms, uintptr_t addr)
{
    size_t lo = 0, hi = syms->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (syms->v[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < syms->n && syms->v[lo].addr == addr ? syms->v[lo].sym : NULL;
}

/* A function's name as the Callgrind part gives it (writer.c, rec_of_entry):
 * the symbol's when it starts at fn, else its address in its object as
 * Valgrind names a function without symbol. */
static const char *fn_name(const struct cg_symtab *syms, uintptr_t fn, char anon[24])
{
    if (fn == CG_NODE_BEYOND)
        return "[paths beyond the bound]";
    const struct cg_symbol *s = sym_at(syms, fn);
    if (s && s->function && s->fn_start == fn)
        return s->function;
    snprintf(anon, 24, "0x%016llx", (unsigned long long)(s ? s->obj_addr : fn));
    return anon;
}

/* A value of the header: no line break can end it early. */
static void put_clean(struct cg_buf *b, const char *s)
{
    for (; *s; s++)
        cg_buf_putc(b, *s == '\n' || *s == '\r' ? ' ' : *s);
}

int cg_write_paths(const struct cg_part_info *info, const struct cg_snapshot *snap, const struct cg_symtab *syms,
                   struct cg_buf *out)
{
    /* function ids by address: open addressing, slot = node index + 1 of
     * the first node of that function */
    size_t cap = 64;
    while (cap < 2 * snap->nnodes + 2)
        cap *= 2;
    uint32_t *slots = calloc(cap, sizeof *slots);
    uint32_t *ids = calloc(snap->nnodes ? snap->nnodes : 1, sizeof *ids);
    if (!slots || !ids) {
        free(slots);
        free(ids);
        return -1;
    }
    uint64_t beyond_calls = 0;
    for (size_t i = 0; i < snap->nnodes; i++)
        if (snap->nodes[i].fn == CG_NODE_BEYOND)
            beyond_calls += snap->nodes[i].calls;
    cg_buf_reserve(out, 1024 + 48 * snap->nnodes);
    cg_buf_puts(out, "# cgprof paths: docs/internals/paths-format.md\npaths: 1\n");
    cg_buf_printf(out, "pid: %ld\nthread: %u\npart: %u\ncmd: ", info->pid, info->thread, info->part);
    put_clean(out, info->cmd ? info->cmd : "");
    cg_buf_printf(out, "\nevents: ns\nnodes: %lu of %lu\nfolded: %llu\nbeyond: %llu %llu\n",
                  (unsigned long)snap->tree_nodes, (unsigned long)snap->tree_bound,
                  (unsigned long long)snap->folded, (unsigned long long)beyond_calls,
                  (unsigned long long)snap->beyond_paths);
    uint32_t next_id = 0;
    for (size_t i = 0; i < snap->nnodes; i++) {
        const struct cg_snap_node *n = &snap->nodes[i];
        size_t h = (size_t)cg_hash2(n->fn, 0);
        uint32_t id = 0;
        for (;; h++) {
            uint32_t s = slots[h & (cap - 1)];
            if (!s) {
                slots[h & (cap - 1)] = (uint32_t)i + 1;
                id = ++next_id;
                char anon[24];
                cg_buf_printf(out, "fn %u ", id);
                put_clean(out, fn_name(syms, n->fn, anon));
                cg_buf_putc(out, '\n');
                break;
            }
            if (snap->nodes[s - 1].fn == n->fn) {
                id = ids[s - 1];
                break;
            }
        }
        ids[i] = id;
        cg_buf_puts(out, "node ");
        cg_buf_put_u64(out, i + 1);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, n->parent);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, id);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, n->calls);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, n->incl);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, n->self);
        cg_buf_putc(out, '\n');
    }
    free(slots);
    free(ids);
    return out->failed ? -1 : 0;
}
