/* A part's model: see partmodel.h. First the records and their lines,
 * from the snapshot and its symbols (build); then their order, the blocks'
 * and each block's lines', with the lines of one place merged. */
#define _GNU_SOURCE /* qsort_r */
#include "partmodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char unknown[] = "???";

/* Keeps order within each 4 MiB of addresses, scattering those blocks: a
 * dump's addresses come mostly in ascending order, and probes that follow
 * through memory cost a fraction of random ones (each of those is a miss in
 * cache and TLB: a third of the writer's time, with 100,000s of them). */
static size_t hash_addr(uintptr_t addr)
{
    return (size_t)(addr >> 2) + (size_t)(cg_hash2(addr >> 22, 0) >> 32);
}

static int index_syms(struct cg_partmodel *c)
{
    size_t cap = 64;
    while (cap < 2 * c->syms->n)
        cap *= 2;
    c->sym_slots = calloc(cap, sizeof *c->sym_slots);
    c->entry_rec = calloc(c->syms->n ? c->syms->n : 1, sizeof *c->entry_rec);
    if (!c->sym_slots || !c->entry_rec || c->syms->n >= UINT32_MAX)
        return -1;
    c->sym_mask = cap - 1;
    for (size_t i = 0; i < c->syms->n; i++) {
        size_t j = hash_addr(c->syms->v[i].addr);
        while (c->sym_slots[j & c->sym_mask])
            j++;
        c->sym_slots[j & c->sym_mask] = (uint32_t)i + 1;
    }
    return 0;
}

/* Index of addr in syms, SIZE_MAX if absent. */
static size_t sym_index(const struct cg_partmodel *c, uintptr_t addr)
{
    for (size_t j = hash_addr(addr);; j++) {
        uint32_t slot = c->sym_slots[j & c->sym_mask];
        if (!slot)
            return SIZE_MAX;
        if (c->syms->v[slot - 1].addr == addr)
            return slot - 1;
    }
}

static const struct cg_symbol *sym_of(const struct cg_partmodel *c, uintptr_t addr)
{
    size_t i = sym_index(c, addr);
    return i == SIZE_MAX ? NULL : c->syms->v[i].sym;
}

/* ---- function records ----------------------------------------------------- */

static size_t hash_key(struct cg_partmodel *c, const char *object, uintptr_t entry)
{
    if (object != c->hashed_object) {
        c->hashed_object = object;
        c->object_hash = cg_hash_str(object);
    }
    return c->object_hash ^ hash_addr(entry);
}

static int index_grow(struct cg_partmodel *c)
{
    size_t cap = c->index_cap ? c->index_cap * 2 : 256;
    uint32_t *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return -1;
    for (size_t r = 0; r < c->nrecs; r++) {
        size_t j = hash_key(c, c->recs[r].object, c->recs[r].entry);
        while (ix[j & (cap - 1)])
            j++;
        ix[j & (cap - 1)] = (uint32_t)r + 1;
    }
    free(c->index);
    c->index = ix;
    c->index_cap = cap;
    return 0;
}

/* The record of the function at `entry` in `object`, created from the
 * given description if new. Returns SIZE_MAX on allocation failure. */
static size_t rec_get(struct cg_partmodel *c, const char *object, const char *file, const char *name, uintptr_t entry,
                      unsigned entry_line)
{
    if ((c->nrecs + 1) * 2 > c->index_cap && index_grow(c) != 0)
        return SIZE_MAX;
    if (!object)
        object = unknown;
    size_t j = hash_key(c, object, entry);
    for (;; j++) {
        size_t slot = c->index[j & (c->index_cap - 1)];
        if (!slot)
            break;
        const struct cg_pm_rec *r = &c->recs[slot - 1];
        if (r->entry == entry && cg_pm_same(r->object, object))
            return slot - 1;
    }
    if (c->nrecs >= UINT32_MAX - 1)
        return SIZE_MAX;
    if (CG_GROW(c->recs, c->cap, c->nrecs + 1, 128) != 0)
        return SIZE_MAX;
    struct cg_pm_rec *r = &c->recs[c->nrecs];
    memset(r, 0, sizeof *r);
    r->object = object;
    r->file = file ? file : unknown;
    r->entry = entry;
    r->entry_line = entry_line;
    r->name = name;
    if (!name) /* Valgrind names a function it has no symbol for by its address */
        snprintf(r->anon, sizeof r->anon, "0x%016llx", (unsigned long long)entry);
    c->index[j & (c->index_cap - 1)] = (uint32_t)c->nrecs + 1;
    return c->nrecs++;
}

size_t cg_partmodel_rec_of_entry(struct cg_partmodel *c, uintptr_t fn)
{
    size_t i = sym_index(c, fn);
    if (i == SIZE_MAX)
        return rec_get(c, NULL, NULL, NULL, fn, 0);
    if (c->entry_rec[i])
        return c->entry_rec[i] - 1;
    const struct cg_symbol *s = c->syms->v[i].sym;
    const char *name = s->function && s->fn_start == fn ? s->function : NULL;
    size_t r = rec_get(c, s->object, s->file, name, s->obj_addr, s->line);
    if (r != SIZE_MAX)
        c->entry_rec[i] = (uint32_t)r + 1;
    return r;
}

/* Whether the symbol `part` names code the compiler split off or cloned
 * from function `fn` (gcc's fn.cold, fn.part.0, fn.constprop.0, fn.isra.0;
 * demangled C++ "fn(int) [clone .cold]"): a name with a dot after fn's, which
 * no C or C++ function can have. Their code calls the hooks with fn's
 * address. */
static int part_of(const char *part, const char *fn)
{
    size_t n = strlen(fn);
    return strncmp(part, fn, n) == 0 && (part[n] == '.' || strncmp(part + n, " [clone .", 9) == 0);
}

/* The function that contains the code at address x, which ran in the frame
 * of the instrumented function `frame` (a record index, or SIZE_MAX at a
 * thread's root). Code between the hooks normally belongs to the frame's own
 * function (or to a part of it the compiler made; or, for a frame inlined
 * into another function (host_code), to that function: in any object, since
 * the hooks of a function inlined from a library's header may name the
 * library's own copy, libstdc++'s std::allocator<char>::allocator() say,
 * while its code is the program's); but a callback called from uninstrumented code (qsort calling a
 * comparator) has a call site, and time after its return, in that code: it
 * is named by the function that contains it. */
static size_t rec_of_code(struct cg_partmodel *c, size_t frame, uintptr_t x, const struct cg_symbol *s, int host_code)
{
    /* a function left out runs in its caller's frame: its code is the
     * frame's */
    if (frame != SIZE_MAX && s && s->fn_start &&
        (cg_addrset_has(c->left_out[0], s->fn_start) || cg_addrset_has(c->left_out[1], s->fn_start)))
        host_code = 1;
    if (s && s->function) {
        if (frame != SIZE_MAX &&
            (host_code || (cg_pm_same(c->recs[frame].object, s->object) &&
                           (c->recs[frame].entry == s->fn_obj_addr ||
                            part_of(s->function, cg_pm_name(&c->recs[frame]))))))
            return frame;
        /* a split part of a function whose head was inlined into the
         * frame (or into code inlined into it) */
        if (frame != SIZE_MAX && c->part_code && s->fn_start && c->part_code(s->fn_start))
            return frame;
        return rec_get(c, s->object, s->fn_file, s->function, s->fn_obj_addr, s->fn_line);
    }
    if (frame != SIZE_MAX && (!s || cg_pm_same(s->object, c->recs[frame].object)))
        return frame; /* no symbol: assume the frame's own (stripped) code */
    /* no symbol, in another object (or at a thread's root): a function
     * named by the address, as Valgrind does */
    return s ? rec_get(c, s->object, s->file, NULL, s->obj_addr, s->line) : rec_get(c, NULL, NULL, NULL, x, 0);
}

static int add_line(struct cg_partmodel *c, size_t r, const struct cg_pm_line *l)
{
    if (r == SIZE_MAX)
        return -1;
    if (CG_GROW(c->lines, c->lines_cap, c->nlines + 1, 64) != 0)
        return -1;
    c->lines[c->nlines] = *l;
    c->lines[c->nlines++].rec = (uint32_t)r;
    c->recs[r].n++;
    return 0;
}

/* Gives each record the indexes of its lines, in the order they were made. */
static int group_lines(struct cg_partmodel *c)
{
    if (c->nlines >= UINT32_MAX)
        return -1;
    c->grouped = malloc((c->nlines ? c->nlines : 1) * sizeof *c->grouped);
    if (!c->grouped)
        return -1;
    size_t at = 0;
    for (size_t r = 0; r < c->nrecs; r++) {
        c->recs[r].lines = c->grouped + at;
        at += c->recs[r].n;
        c->recs[r].n = 0;
    }
    for (size_t i = 0; i < c->nlines; i++) {
        struct cg_pm_rec *r = &c->recs[c->lines[i].rec];
        r->lines[r->n++] = (uint32_t)i;
    }
    return 0;
}

/* A line at address x (symbol s, NULL if unknown): its object-relative
 * address and source position. */
static struct cg_pm_line line_at(uintptr_t x, const struct cg_symbol *s, const struct cg_pm_rec *owner)
{
    struct cg_pm_line l = { 0 };
    l.addr = s ? s->obj_addr : x;
    l.lineno = s ? s->line : 0;
    /* Without line information keep the function's own file rather than
     * switching to "???" for one line. */
    l.file = s && s->line ? s->file : owner->file;
    return l;
}

/* The position the debug information gives the inlined call of callee
 * whose enter hook is called at pc; NULL if none. */
static const struct cg_symtab_call *inlined_call(const struct cg_symtab *syms, uintptr_t pc, uintptr_t callee)
{
    size_t lo = 0, hi = syms->ncalls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct cg_symtab_call *m = &syms->calls[mid];
        if (m->pc < pc || (m->pc == pc && m->callee < callee))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < syms->ncalls && syms->calls[lo].pc == pc && syms->calls[lo].callee == callee ? &syms->calls[lo]
                                                                                              : NULL;
}

static int build(struct cg_partmodel *c, const struct cg_snapshot *snap)
{
    /* at most two lines an entry: room made once, touched only as used */
    c->lines_cap = 2 * (snap->nselfs + snap->narcs) + 1;
    c->lines = malloc(c->lines_cap * sizeof *c->lines);
    if (!c->lines)
        return -1;
    for (size_t i = 0; i < snap->nselfs; i++) {
        const struct cg_snap_self *sc = &snap->selfs[i];
        size_t f = cg_partmodel_rec_of_entry(c, sc->fn);
        const struct cg_symbol *sym = sym_of(c, sc->addr);
        size_t g = f == SIZE_MAX ? SIZE_MAX : rec_of_code(c, f, sc->addr, sym, (int)sc->inlined);
        if (g == SIZE_MAX)
            return -1;
        struct cg_pm_line l = line_at(sc->addr, sym, &c->recs[g]);
        l.cost = sc->cost;
        if (add_line(c, g, &l))
            return -1;
        if (g != f) {
            /* Time the frame spent in uninstrumented code: a call to it. */
            struct cg_pm_line s = { .addr = c->recs[f].entry, .lineno = c->recs[f].entry_line, .file = c->recs[f].file,
                              .is_call = 1, .callee = (uint32_t)g, .cost = sc->cost, .synthetic = 1,
                              .visits = 1 };
            if (add_line(c, f, &s))
                return -1;
        }
    }
    for (size_t i = 0; i < snap->narcs; i++) {
        const struct cg_snap_arc *a = &snap->arcs[i];
        size_t callee = cg_partmodel_rec_of_entry(c, a->callee);
        size_t f = a->caller ? cg_partmodel_rec_of_entry(c, a->caller) : SIZE_MAX;
        if (callee == SIZE_MAX || (a->caller && f == SIZE_MAX))
            return -1;
        size_t g;
        struct cg_pm_line l;
        if (a->call_pc == 0 && f != SIZE_MAX) {
            /* No call instruction (a signal handler's frame): called from
             * the function it interrupted, at that function's start. */
            g = f;
            l = (struct cg_pm_line){ .addr = c->recs[f].entry, .lineno = c->recs[f].entry_line,
                                     .file = c->recs[f].file };
        } else {
            uintptr_t pc = a->call_pc ? a->call_pc : a->site;
            const struct cg_symbol *sym = sym_of(c, pc);
            /* an inlined call's place is in the code that runs its
             * caller's frame, whatever function that code belongs to */
            g = rec_of_code(c, f, pc, sym, a->caller_inlined || a->inlined);
            if (g == SIZE_MAX)
                return -1;
            l = line_at(pc, sym, &c->recs[g]);
            /* An inlined call's place is its enter hook's, in the inlined
             * copy: a line of the callee (its first), the same for every
             * call site. Its position is the call's own, from the inlined
             * entry (two call sites, two rows at their lines); its address
             * stays that place. */
            const struct cg_symtab_call *ic = a->inlined ? inlined_call(c->syms, pc, a->callee) : NULL;
            if (ic) {
                l.file = ic->file;
                l.lineno = ic->line;
            }
        }
        l.is_call = 1;
        l.visits = a->sampled;
        l.inlined = a->inlined;
        l.callee = (uint32_t)callee;
        l.count = a->count;
        l.cost = a->incl;
        if (add_line(c, g, &l))
            return -1;
        if (f != SIZE_MAX && g != f) {
            /* The hooks never see the call from the frame into the
             * uninstrumented function; count the runs of callbacks made
             * through it (a lower bound of the real calls). */
            struct cg_pm_line s = { .addr = c->recs[f].entry, .lineno = c->recs[f].entry_line, .file = c->recs[f].file,
                              .is_call = 1, .callee = (uint32_t)g, .count = a->runs, .cost = a->incl, .synthetic = 1,
                              .visits = 1 };
            if (add_line(c, f, &s))
                return -1;
        }
    }
    return 0;
}

/* ---- ordering and merging ------------------------------------------------- */

/* Lines by address; at one address the self cost first, then the calls by
 * their callees' places in the file (rank: a record's position in the
 * order the blocks are written, not the order the records were made, which
 * follows the snapshot's, itself the order in which threads ended for the
 * total: the same profile must be the same text). */
static int cmp_line(const struct cg_pm_line *a, const struct cg_pm_line *b, const uint32_t *rank)
{
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->is_call != b->is_call)
        return a->is_call - b->is_call; /* self cost first, then calls */
    if (a->callee != b->callee)
        return rank[a->callee] < rank[b->callee] ? -1 : 1;
    return a->synthetic - b->synthetic;
}

/* qsort_r's context: the writer keeps no state of its own between calls */
struct line_order {
    const struct cg_pm_line *lines;
    const uint32_t *rank;
};

static int cmp_line_index(const void *pa, const void *pb, void *ctx)
{
    const struct line_order *o = ctx;
    return cmp_line(&o->lines[*(const uint32_t *)pa], &o->lines[*(const uint32_t *)pb], o->rank);
}

/* A function with many lines (a dispatcher calling 50,000 functions from
 * one call site): cmp_line's order by two stable radix sorts, the minor
 * fields first, then the address; a qsort through cmp_line_index was 4% of
 * such a dump. Returns -1 when out of memory (the caller sorts by qsort). */
struct line_key {
    uint64_t key;
    uint32_t line;
};

static int sort_by_keys(struct cg_partmodel *c, struct cg_pm_rec *r)
{
    struct line_key *k = malloc(r->n * sizeof *k);
    if (!k)
        return -1;
    for (size_t i = 0; i < r->n; i++) {
        const struct cg_pm_line *l = &c->lines[r->lines[i]];
        k[i].key = (uint64_t)l->is_call << 40 | (uint64_t)c->rank[l->callee] << 1 | l->synthetic;
        k[i].line = r->lines[i];
    }
    int rc = cg_sort_keyed(k, r->n, sizeof *k);
    if (rc == 0) {
        for (size_t i = 0; i < r->n; i++)
            k[i].key = c->lines[k[i].line].addr;
        rc = cg_sort_keyed(k, r->n, sizeof *k);
    }
    if (rc == 0)
        for (size_t i = 0; i < r->n; i++)
            r->lines[i] = k[i].line;
    free(k);
    return rc;
}

static void merge_lines(struct cg_partmodel *c, struct cg_pm_rec *r)
{
    if (r->n == 0)
        return;
    if (r->n <= 16) {
        /* most functions have a few lines: no qsort, with its calls through
         * a pointer for each comparison (50,000 functions in a dump) */
        for (size_t i = 1; i < r->n; i++) {
            uint32_t x = r->lines[i];
            size_t j = i;
            for (; j > 0 && cmp_line(&c->lines[r->lines[j - 1]], &c->lines[x], c->rank) > 0; j--)
                r->lines[j] = r->lines[j - 1];
            r->lines[j] = x;
        }
    } else if (sort_by_keys(c, r) != 0) {
        struct line_order o = { c->lines, c->rank };
        qsort_r(r->lines, r->n, sizeof *r->lines, cmp_line_index, &o);
    }
    size_t out = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct cg_pm_line *l = &c->lines[r->lines[i]];
        if (out > 0 && cmp_line(&c->lines[r->lines[out - 1]], l, c->rank) == 0) {
            c->lines[r->lines[out - 1]].count += l->count;
            c->lines[r->lines[out - 1]].cost += l->cost;
            c->lines[r->lines[out - 1]].visits &= l->visits; /* a hook saw some */
        } else {
            r->lines[out++] = r->lines[i];
        }
    }
    r->n = out;
    for (size_t i = 0; i < r->n; i++) {
        struct cg_pm_line *l = &c->lines[r->lines[i]];
        if (l->synthetic && l->count == 0)
            l->count = 1; /* time seen in uninstrumented code, but no callback: one visit */
    }
}

static const struct cg_pm_rec *sort_base;

static int cmp_object_file(const struct cg_pm_rec *a, const struct cg_pm_rec *b)
{
    int d = a->object == b->object ? 0 : strcmp(a->object, b->object);
    return d || a->file == b->file ? d : strcmp(a->file, b->file);
}

static int cmp_rec(const void *pa, const void *pb)
{
    const struct cg_pm_rec *a = &sort_base[*(const size_t *)pa], *b = &sort_base[*(const size_t *)pb];
    int d = cmp_object_file(a, b);
    if (!d && cg_pm_name(a) != cg_pm_name(b))
        d = strcmp(cg_pm_name(a), cg_pm_name(b));
    if (!d && a->entry != b->entry)
        d = a->entry < b->entry ? -1 : 1;
    return d;
}

/* The order of the function blocks: by object, file, name and start. A
 * dump of 50,000 functions sorted records through their indexes with three
 * strcmp a comparison, at random places in memory (5% of its time): the
 * object and file become one rank, the name's first 8 bytes a number, in
 * one array; strings are compared only when those are equal. */
struct rec_key {
    uint64_t prefix; /* the name's first 8 bytes, big-endian */
    uint32_t group;  /* rank of (object, file) */
    uint32_t idx;    /* the record */
};

static int cmp_rec_key(const void *pa, const void *pb)
{
    const struct rec_key *a = pa, *b = pb;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->prefix != b->prefix)
        return a->prefix < b->prefix ? -1 : 1;
    size_t x = a->idx, y = b->idx;
    return cmp_rec(&x, &y);
}

static int cmp_group(const void *pa, const void *pb)
{
    return cmp_object_file(&sort_base[*(const size_t *)pa], &sort_base[*(const size_t *)pb]);
}

/* order[0..nrecs) := the records in block order. */
static int order_records(struct cg_partmodel *c, size_t *order)
{
    struct rec_key *keys = malloc((c->nrecs ? c->nrecs : 1) * sizeof *keys);
    /* one representative record per distinct (object, file) pointer pair */
    size_t cap = 16;
    while (cap < 2 * c->nrecs)
        cap *= 2;
    size_t *slot = calloc(cap, sizeof *slot), *reps = malloc((c->nrecs ? c->nrecs : 1) * sizeof *reps);
    uint32_t *rank = malloc((c->nrecs ? c->nrecs : 1) * sizeof *rank);
    int rc = -1;
    if (!keys || !slot || !reps || !rank)
        goto done;
    size_t nreps = 0;
    for (size_t i = 0; i < c->nrecs; i++) {
        const struct cg_pm_rec *r = &c->recs[i];
        size_t h = (size_t)cg_hash2((uintptr_t)r->object, (uintptr_t)r->file);
        for (;; h++) {
            size_t *e = &slot[h & (cap - 1)];
            if (!*e) {
                reps[nreps] = i;
                *e = ++nreps;
                keys[i].group = (uint32_t)(nreps - 1);
                break;
            }
            const struct cg_pm_rec *q = &c->recs[reps[*e - 1]];
            if (q->object == r->object && q->file == r->file) {
                keys[i].group = (uint32_t)(*e - 1);
                break;
            }
        }
        uint64_t p = 0;
        const char *name = cg_pm_name(r);
        for (int k = 0; k < 8 && name[k]; k++)
            p |= (uint64_t)(unsigned char)name[k] << (56 - 8 * k);
        keys[i].prefix = p;
        keys[i].idx = (uint32_t)i;
    }
    /* rank the groups by their text: equal texts, equal ranks */
    size_t *by = malloc((nreps ? nreps : 1) * sizeof *by);
    if (!by)
        goto done;
    sort_base = c->recs;
    for (size_t g = 0; g < nreps; g++)
        by[g] = reps[g];
    qsort(by, nreps, sizeof *by, cmp_group);
    for (size_t k = 0; k < nreps; k++) {
        int same = k > 0 && cmp_group(&by[k - 1], &by[k]) == 0;
        rank[keys[by[k]].group] = same ? rank[keys[by[k - 1]].group] : (uint32_t)k;
    }
    free(by);
    for (size_t i = 0; i < c->nrecs; i++)
        keys[i].group = rank[keys[i].group];
    /* by prefix (radix, stable), then by group (counting sort, stable),
     * then runs of equal keys by the whole comparison */
    if (cg_sort_keyed(keys, c->nrecs, sizeof *keys) != 0) {
        qsort(keys, c->nrecs, sizeof *keys, cmp_rec_key);
    } else if (nreps > 1) {
        struct rec_key *tmp = malloc(c->nrecs * sizeof *tmp);
        size_t *start = calloc(nreps + 1, sizeof *start);
        if (!tmp || !start) {
            free(tmp);
            free(start);
            goto done;
        }
        for (size_t i = 0; i < c->nrecs; i++)
            start[keys[i].group + 1]++;
        for (size_t g = 0; g < nreps; g++)
            start[g + 1] += start[g];
        for (size_t i = 0; i < c->nrecs; i++)
            tmp[start[keys[i].group]++] = keys[i];
        memcpy(keys, tmp, c->nrecs * sizeof *keys);
        free(tmp);
        free(start);
    }
    for (size_t i = 0, j; i < c->nrecs; i = j) {
        for (j = i + 1; j < c->nrecs && keys[j].group == keys[i].group && keys[j].prefix == keys[i].prefix; j++)
            ;
        if (j - i > 1)
            qsort(keys + i, j - i, sizeof *keys, cmp_rec_key);
    }
    for (size_t i = 0; i < c->nrecs; i++)
        order[i] = keys[i].idx;
    rc = 0;
done:
    free(keys);
    free(slot);
    free(reps);
    free(rank);
    return rc;
}

int cg_partmodel_make(struct cg_partmodel *m, const struct cg_snapshot *snap, const struct cg_symtab *syms,
                      const struct cg_addrset *const *left_out, int (*part_code)(uintptr_t fn_start))
{
    memset(m, 0, sizeof *m);
    m->syms = syms;
    m->left_out = left_out;
    m->part_code = part_code;
    if (index_syms(m) != 0 || build(m, snap) != 0 || group_lines(m) != 0)
        return -1;
    m->order = malloc((m->nrecs ? m->nrecs : 1) * sizeof *m->order);
    m->rank = malloc((m->nrecs ? m->nrecs : 1) * sizeof *m->rank);
    if (!m->order || !m->rank || order_records(m, m->order) != 0)
        return -1;
    for (size_t i = 0; i < m->nrecs; i++)
        m->rank[m->order[i]] = (uint32_t)i;
    for (size_t i = 0; i < m->nrecs; i++) {
        merge_lines(m, &m->recs[i]);
        for (size_t k = 0; k < m->recs[i].n; k++)
            if (!m->lines[m->recs[i].lines[k]].is_call)
                m->total += m->lines[m->recs[i].lines[k]].cost;
    }
    return 0;
}

void cg_partmodel_free(struct cg_partmodel *m)
{
    free(m->order);
    free(m->rank);
    free(m->lines);
    free(m->grouped);
    free(m->recs);
    free(m->index);
    free(m->sym_slots);
    free(m->entry_rec);
}
