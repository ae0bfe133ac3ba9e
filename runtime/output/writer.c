#define _GNU_SOURCE /* qsort_r */
#include "writer.h"
#include "desc.inc"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"

static const char unknown[] = "???";

/* One cost line of a function block: self cost at an instruction, or a call
 * made from it. */
struct line {
    uintptr_t addr; /* object-relative */
    const char *file;
    uint64_t count, cost;
    unsigned lineno;
    uint32_t callee;         /* record index, for calls */
    uint32_t rec;            /* the function block it belongs to */
    unsigned char is_call;
    unsigned char synthetic; /* a call into uninstrumented code, inferred */
    unsigned char visits;    /* a call no hook saw: inferred, or walked by the sampler (count: visits) */
    unsigned char inlined;   /* a call the compiler inlined (its hooks kept: CGPROF_INLINED=count) */
};

/* A function as written: one fn= block. A function is its object and its
 * start in that object, not its run-time address: an object unloaded and
 * loaded again elsewhere holds the same functions. */
struct rec {
    const char *object, *file, *name;
    uintptr_t entry;     /* object-relative start */
    unsigned entry_line;
    char anon[24];       /* the name of a function without symbol (name NULL):
                            its address; read through rec_name(), since the
                            records move when their array grows */
    uint32_t *lines;     /* its slice of the ctx's line order: indexes into its lines */
    size_t n;
    unsigned id;         /* name-compression id, 0 until first written */
    unsigned char hooked, visited; /* called by a call the hooks saw / inferred (write_visits) */
    size_t inlined_into;           /* write_inlined: the last caller written with it, + 1 */
};

struct strmap {
    const char **keys;
    unsigned *ids;
    size_t cap, n;
};

struct ctx {
    const struct cg_symtab *syms;
    /* syms by address (open addressing: entry index + 1), and the record
     * of each entry as a function entered (index + 1, 0 until known): a dump
     * looks each address up several times, 100,000s of them. */
    uint32_t *sym_slots;
    size_t sym_mask;
    uint32_t *entry_rec; /* record index + 1, 0 until known */
    /* the hash of the object name last hashed: names are shared pointers,
     * one per object */
    const char *hashed_object;
    size_t object_hash;
    struct rec *recs;
    size_t nrecs, cap;
    uint32_t *index; /* open addressing on key: record index + 1 */
    size_t index_cap;
    /* the lines of all records, in the order made, and their indexes grouped
     * by record (one array: 50,000 functions would be 50,000 small arrays;
     * indexes, not copies: fewer fresh pages, each a costly fault) */
    struct line *lines;
    size_t nlines, lines_cap;
    uint32_t *grouped;
    uint32_t *rank; /* each record's place in the order the blocks are written */
    const struct cg_addrset *const *left_out; /* cg_part_info's */
    int (*part_code)(uintptr_t fn_start);     /* cg_part_info's */
    int failed;
    struct strmap objects, files;
    /* function ids by "object\1file\1name": the keys are owned here */
    struct strmap fns;
    char **fn_keys;
    size_t nfn_keys, fn_keys_cap;
    unsigned next_fn_id;
};

/* Two names: the same pointer, or the same text. */
static int same(const char *a, const char *b)
{
    return a == b || strcmp(a, b) == 0;
}

/* Keeps order within each 4 MiB of addresses, scattering those blocks: a
 * dump's addresses come mostly in ascending order, and probes that follow
 * through memory cost a fraction of random ones (each of those is a miss in
 * cache and TLB: a third of the writer's time, with 100,000s of them). */
static size_t hash_addr(uintptr_t addr)
{
    return (size_t)(addr >> 2) + (size_t)(cg_hash2(addr >> 22, 0) >> 32);
}

static int index_syms(struct ctx *c)
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
static size_t sym_index(const struct ctx *c, uintptr_t addr)
{
    for (size_t j = hash_addr(addr);; j++) {
        uint32_t slot = c->sym_slots[j & c->sym_mask];
        if (!slot)
            return SIZE_MAX;
        if (c->syms->v[slot - 1].addr == addr)
            return slot - 1;
    }
}

static const struct cg_symbol *sym_of(const struct ctx *c, uintptr_t addr)
{
    size_t i = sym_index(c, addr);
    return i == SIZE_MAX ? NULL : c->syms->v[i].sym;
}

/* ---- function records ----------------------------------------------------- */

static const char *rec_name(const struct rec *r)
{
    return r->name ? r->name : r->anon;
}

static size_t hash_str(const char *s);

static size_t hash_key(struct ctx *c, const char *object, uintptr_t entry)
{
    if (object != c->hashed_object) {
        c->hashed_object = object;
        c->object_hash = hash_str(object);
    }
    return c->object_hash ^ hash_addr(entry);
}

static int index_grow(struct ctx *c)
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
static size_t rec_get(struct ctx *c, const char *object, const char *file, const char *name, uintptr_t entry,
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
        const struct rec *r = &c->recs[slot - 1];
        if (r->entry == entry && same(r->object, object))
            return slot - 1;
    }
    if (c->nrecs >= UINT32_MAX - 1)
        return SIZE_MAX;
    if (CG_GROW(c->recs, c->cap, c->nrecs + 1, 128) != 0)
        return SIZE_MAX;
    struct rec *r = &c->recs[c->nrecs];
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

/* The function entered at run-time address fn (a hook's argument). */
static size_t rec_of_entry(struct ctx *c, uintptr_t fn)
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
static size_t rec_of_code(struct ctx *c, size_t frame, uintptr_t x, const struct cg_symbol *s, int host_code)
{
    /* a function left out runs in its caller's frame: its code is the
     * frame's */
    if (frame != SIZE_MAX && s && s->fn_start &&
        (cg_addrset_has(c->left_out[0], s->fn_start) || cg_addrset_has(c->left_out[1], s->fn_start)))
        host_code = 1;
    if (s && s->function) {
        if (frame != SIZE_MAX &&
            (host_code || (same(c->recs[frame].object, s->object) &&
                           (c->recs[frame].entry == s->fn_obj_addr ||
                            part_of(s->function, rec_name(&c->recs[frame]))))))
            return frame;
        /* a split part of a function whose head was inlined into the
         * frame (or into code inlined into it) */
        if (frame != SIZE_MAX && c->part_code && s->fn_start && c->part_code(s->fn_start))
            return frame;
        return rec_get(c, s->object, s->fn_file, s->function, s->fn_obj_addr, s->fn_line);
    }
    if (frame != SIZE_MAX && (!s || same(s->object, c->recs[frame].object)))
        return frame; /* no symbol: assume the frame's own (stripped) code */
    /* no symbol, in another object (or at a thread's root): a function
     * named by the address, as Valgrind does */
    return s ? rec_get(c, s->object, s->file, NULL, s->obj_addr, s->line) : rec_get(c, NULL, NULL, NULL, x, 0);
}

static int add_line(struct ctx *c, size_t r, const struct line *l)
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
static int group_lines(struct ctx *c)
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
        struct rec *r = &c->recs[c->lines[i].rec];
        r->lines[r->n++] = (uint32_t)i;
    }
    return 0;
}

/* A line at address x (symbol s, NULL if unknown): its object-relative
 * address and source position. */
static struct line line_at(uintptr_t x, const struct cg_symbol *s, const struct rec *owner)
{
    struct line l = { 0 };
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

static int build(struct ctx *c, const struct cg_snapshot *snap)
{
    /* at most two lines an entry: room made once, touched only as used */
    c->lines_cap = 2 * (snap->nselfs + snap->narcs) + 1;
    c->lines = malloc(c->lines_cap * sizeof *c->lines);
    if (!c->lines)
        return -1;
    for (size_t i = 0; i < snap->nselfs; i++) {
        const struct cg_snap_self *sc = &snap->selfs[i];
        size_t f = rec_of_entry(c, sc->fn);
        const struct cg_symbol *sym = sym_of(c, sc->addr);
        size_t g = f == SIZE_MAX ? SIZE_MAX : rec_of_code(c, f, sc->addr, sym, (int)sc->inlined);
        if (g == SIZE_MAX)
            return -1;
        struct line l = line_at(sc->addr, sym, &c->recs[g]);
        l.cost = sc->cost;
        if (add_line(c, g, &l))
            return -1;
        if (g != f) {
            /* Time the frame spent in uninstrumented code: a call to it. */
            struct line s = { .addr = c->recs[f].entry, .lineno = c->recs[f].entry_line, .file = c->recs[f].file,
                              .is_call = 1, .callee = (uint32_t)g, .cost = sc->cost, .synthetic = 1,
                              .visits = 1 };
            if (add_line(c, f, &s))
                return -1;
        }
    }
    for (size_t i = 0; i < snap->narcs; i++) {
        const struct cg_snap_arc *a = &snap->arcs[i];
        size_t callee = rec_of_entry(c, a->callee);
        size_t f = a->caller ? rec_of_entry(c, a->caller) : SIZE_MAX;
        if (callee == SIZE_MAX || (a->caller && f == SIZE_MAX))
            return -1;
        size_t g;
        struct line l;
        if (a->call_pc == 0 && f != SIZE_MAX) {
            /* No call instruction (a signal handler's frame): called from
             * the function it interrupted, at that function's start. */
            g = f;
            l = (struct line){ .addr = c->recs[f].entry, .lineno = c->recs[f].entry_line, .file = c->recs[f].file };
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
            struct line s = { .addr = c->recs[f].entry, .lineno = c->recs[f].entry_line, .file = c->recs[f].file,
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
static int cmp_line(const struct line *a, const struct line *b, const uint32_t *rank)
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
    const struct line *lines;
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

static int sort_by_keys(struct ctx *c, struct rec *r)
{
    struct line_key *k = malloc(r->n * sizeof *k);
    if (!k)
        return -1;
    for (size_t i = 0; i < r->n; i++) {
        const struct line *l = &c->lines[r->lines[i]];
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

static void merge_lines(struct ctx *c, struct rec *r)
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
        struct line *l = &c->lines[r->lines[i]];
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
        struct line *l = &c->lines[r->lines[i]];
        if (l->synthetic && l->count == 0)
            l->count = 1; /* time seen in uninstrumented code, but no callback: one visit */
    }
}

static const struct rec *sort_base;

static int cmp_object_file(const struct rec *a, const struct rec *b)
{
    int d = a->object == b->object ? 0 : strcmp(a->object, b->object);
    return d || a->file == b->file ? d : strcmp(a->file, b->file);
}

static int cmp_rec(const void *pa, const void *pb)
{
    const struct rec *a = &sort_base[*(const size_t *)pa], *b = &sort_base[*(const size_t *)pb];
    int d = cmp_object_file(a, b);
    if (!d && rec_name(a) != rec_name(b))
        d = strcmp(rec_name(a), rec_name(b));
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
static int order_records(struct ctx *c, size_t *order)
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
        const struct rec *r = &c->recs[i];
        size_t h = (size_t)cg_hash2((uintptr_t)r->object, (uintptr_t)r->file);
        for (;; h++) {
            size_t *e = &slot[h & (cap - 1)];
            if (!*e) {
                reps[nreps] = i;
                *e = ++nreps;
                keys[i].group = (uint32_t)(nreps - 1);
                break;
            }
            const struct rec *q = &c->recs[reps[*e - 1]];
            if (q->object == r->object && q->file == r->file) {
                keys[i].group = (uint32_t)(*e - 1);
                break;
            }
        }
        uint64_t p = 0;
        const char *name = rec_name(r);
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

/* ---- name compression ----------------------------------------------------- */

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211u;
    return h;
}

/* Id of name in m; *fresh says whether it was just defined. 0 on failure. */
static unsigned strmap_id(struct strmap *m, const char *name, int *fresh)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = calloc(cap, sizeof *keys);
        unsigned *ids = calloc(cap, sizeof *ids);
        if (!keys || !ids) {
            free(keys);
            free(ids);
            return 0;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = hash_str(m->keys[i]);
            while (keys[j & (cap - 1)])
                j++;
            keys[j & (cap - 1)] = m->keys[i];
            ids[j & (cap - 1)] = m->ids[i];
        }
        free(m->keys);
        free(m->ids);
        m->keys = keys;
        m->ids = ids;
        m->cap = cap;
    }
    size_t j = hash_str(name);
    for (;; j++) {
        size_t k = j & (m->cap - 1);
        if (!m->keys[k]) {
            m->keys[k] = name;
            m->ids[k] = (unsigned)++m->n;
            *fresh = 1;
            return m->ids[k];
        }
        if (strcmp(m->keys[k], name) == 0) {
            *fresh = 0;
            return m->ids[k];
        }
    }
}

/* A name as it may appear after "=": on one line, and not looking like a
 * compressed reference. */
static void put_clean(struct cg_buf *b, const char *s)
{
    if (s[0] == '(' && s[1] >= '0' && s[1] <= '9')
        cg_buf_putc(b, ' ');
    for (;;) {
        size_t n = strcspn(s, "\n\r");
        cg_buf_putn(b, s, n);
        if (!s[n])
            return;
        cg_buf_putc(b, '?');
        s += n + 1;
    }
}

/* "spec=(id)" or, on first use, "spec=(id) name". */
static int put_name(struct cg_buf *b, const char *spec, struct strmap *m, const char *name)
{
    int fresh;
    unsigned id = strmap_id(m, name, &fresh);
    if (!id)
        return -1;
    cg_buf_puts(b, spec);
    cg_buf_putc(b, '(');
    cg_buf_put_u64(b, id);
    cg_buf_putc(b, ')');
    if (fresh) {
        cg_buf_putc(b, ' ');
        put_clean(b, name);
    }
    cg_buf_putc(b, '\n');
    return 0;
}

/* The id of the functions a reader knows as (object, file, name), and
 * whether it is new; 0 when out of memory. */
static unsigned fn_id(struct ctx *c, const struct rec *r, int *fresh)
{
    if (CG_GROW(c->fn_keys, c->fn_keys_cap, c->nfn_keys + 1, 64) != 0)
        return 0;
    size_t lo = strlen(r->object), lf = strlen(r->file), ln = strlen(rec_name(r));
    char *key = malloc(lo + lf + ln + 3);
    if (!key)
        return 0;
    memcpy(key, r->object, lo);
    key[lo] = '\1';
    memcpy(key + lo + 1, r->file, lf);
    key[lo + 1 + lf] = '\1';
    memcpy(key + lo + lf + 2, rec_name(r), ln + 1);
    unsigned id = strmap_id(&c->fns, key, fresh);
    if (id && *fresh)
        c->fn_keys[c->nfn_keys++] = key; /* the map points to it now */
    else
        free(key);
    return id;
}

/* Functions get ids per function as the readers know them: object, file
 * and name. Two static functions with the same name in different files are
 * different functions; two copies of a header's static inline function
 * (the same name in the same file, in two units) are one for any reader
 * (KCachegrind, callgrind_annotate and Callgrind's own files key a
 * function so), so they share an id and their blocks add up. */
static void put_fn(struct ctx *c, struct cg_buf *b, const char *spec, struct rec *r)
{
    cg_buf_puts(b, spec);
    cg_buf_putc(b, '(');
    int fresh = 0;
    if (!r->id) {
        r->id = fn_id(c, r, &fresh);
        if (!r->id) {
            /* out of memory: an id of its own, past the map's */
            r->id = (1u << 30) + ++c->next_fn_id;
            fresh = 1;
        }
    }
    cg_buf_put_u64(b, r->id);
    if (!fresh) {
        cg_buf_puts(b, ")\n");
        return;
    }
    cg_buf_puts(b, ") ");
    put_clean(b, rec_name(r));
    cg_buf_putc(b, '\n');
}

/* ---- subposition compression ---------------------------------------------- */

struct pos {
    uint64_t addr, line;
    int have; /* a cost line was written before in this part */
};

static unsigned digits(uint64_t v, unsigned base)
{
    unsigned n = 1;
    while (v >= base) {
        v /= base;
        n++;
    }
    return n;
}

/* One subposition relative to the previous cost line's ("*", "+N", "-N"),
 * or absolute when that is shorter. Relative differences stay below 2^31:
 * KCachegrind reads them into 32-bit integers. */
static void put_sub(struct cg_buf *b, uint64_t v, uint64_t last, int have, int hex)
{
    if (have) {
        if (v == last) {
            cg_buf_putc(b, '*');
            return;
        }
        uint64_t d = v > last ? v - last : last - v;
        unsigned abs_len = hex ? 2 + digits(v, 16) : digits(v, 10);
        if (d < (1u << 31) && 1 + digits(d, 10) <= abs_len) {
            cg_buf_putc(b, v > last ? '+' : '-');
            cg_buf_put_u64(b, d);
            return;
        }
    }
    if (hex)
        cg_buf_put_hex(b, v);
    else
        cg_buf_put_u64(b, v);
}

static void put_position(struct cg_buf *b, struct pos *p, int line_only, uint64_t addr, uint64_t line)
{
    if (!line_only) {
        put_sub(b, addr, p->addr, p->have, 1);
        cg_buf_putc(b, ' ');
    }
    put_sub(b, line, p->line, p->have, 0);
    p->addr = addr;
    p->line = line;
    p->have = 1;
}

/* ---- the part ------------------------------------------------------------- */

static void write_header(struct cg_buf *b, const struct cg_part_info *info, uint64_t total)
{
    /* callgrind_annotate ends the header at "events:" and wants a blank after
     * each "key:", so every header line but summary: comes before it. */
    cg_buf_puts(b, "# callgrind format\nversion: 1\ncreator: ");
    put_clean(b, info->creator ? info->creator : "cgprof");
    cg_buf_printf(b, "\npid: %ld\nthread: %u\npart: %u\ncmd: ", info->pid, info->thread, info->part);
    put_clean(b, info->cmd ? info->cmd : "");
    cg_buf_puts(b, "\ndesc: " CG_DESC_TRIGGER ": ");
    put_clean(b, info->trigger ? info->trigger : CG_TRIGGER_EXIT);
    cg_buf_putc(b, '\n');
    if (info->clock) {
        cg_buf_puts(b, "desc: Clock: ");
        put_clean(b, info->clock);
        cg_buf_putc(b, '\n');
    }
    for (const char *const *d = info->extra_desc; d && *d; d++) {
        cg_buf_puts(b, "desc: ");
        put_clean(b, *d);
        cg_buf_putc(b, '\n');
    }
    cg_buf_puts(b, info->line_only ? "positions: line\nevent: ns : " : "positions: instr line\nevent: ns : ");
    put_clean(b, info->event ? info->event : "Wall-clock time (nanoseconds)");
    cg_buf_puts(b, "\nevents: ns\n"
                   "summary: ");
    cg_buf_put_u64(b, total);
    cg_buf_puts(b, "\n\n");
}

/* A call counted in an earlier part that ran on into this one: calls=0. */
static int is_continued(const struct line *l)
{
    return l->is_call && l->count == 0;
}

/* Whether a function block has lines of the pass: continued calls (pass 1)
 * or everything else (pass 0). */
static int has_lines_of(const struct ctx *c, const struct rec *r, int continued)
{
    for (size_t i = 0; i < r->n; i++)
        if (is_continued(&c->lines[r->lines[i]]) == continued)
            return 1;
    return 0;
}

/* A zero self cost on a line of the function's own file, for a block
 * that has none there (a function that only calls, or a thread without a
 * sample: every line 0). callgrind_annotate annotates the source of a file
 * whose functions it lists (with --inclusive=yes, or in a part whose total
 * is 0) from the self costs it read for that file's lines, and with none
 * it reads past an empty list: "Use of uninitialized value $line_nums[0]"
 * at its lines 1183, 1199, 1210. Placed at the first line of the block in
 * its own file (a call's), else at the function's entry; a line 0 (no
 * line known) would be dropped by that reader, so none is written then. */
static void put_anchor(const struct ctx *c, struct cg_buf *b, struct pos *pos, int line_only, const struct rec *r)
{
    const struct line *at = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const struct line *l = &c->lines[r->lines[i]];
        if (is_continued(l) || !same(l->file, r->file) || l->lineno == 0)
            continue;
        if (!l->is_call)
            return; /* a self cost of its own there */
        if (!at)
            at = l;
    }
    uint64_t addr = at ? at->addr : r->entry, line = at ? at->lineno : r->entry_line;
    if (line == 0)
        return;
    put_position(b, pos, line_only, addr, line);
    cg_buf_puts(b, " 0\n");
}

struct body_state {
    const char *cur_ob, *cur_fl;
    struct pos pos;
};

/* One pass over the functions: pass 0 writes every line but the continued
 * calls, pass 1 only those (see write_continued). */
static int write_pass(struct ctx *c, struct cg_buf *b, const size_t *order, int line_only, int continued,
                      struct body_state *st)
{
    const char *cur_ob = st->cur_ob, *cur_fl = st->cur_fl;
    struct pos pos = st->pos;
    for (size_t k = 0; k < c->nrecs; k++) {
        struct rec *r = &c->recs[order[k]];
        /* r->n == 0: only ever called, and with no cost of its own */
        if (!has_lines_of(c, r, continued))
            continue;
        if (!cur_ob || !same(cur_ob, r->object)) {
            if (put_name(b, "ob=", &c->objects, r->object))
                return -1;
            cur_ob = r->object;
        }
        /* KCachegrind takes a function's file from the last fl=, and
         * callgrind_annotate from whatever fl=/fi=/fe= came last: a block
         * always starts and ends in its function's own file. */
        if (!cur_fl || !same(cur_fl, r->file)) {
            if (put_name(b, "fl=", &c->files, r->file))
                return -1;
            cur_fl = r->file;
        }
        put_fn(c, b, "fn=", r);
        if (!continued)
            put_anchor(c, b, &pos, line_only, r);
        const char *cur_sub = r->file;
        for (size_t i = 0; i < r->n; i++) {
            const struct line *l = &c->lines[r->lines[i]];
            if (is_continued(l) != continued)
                continue;
            if (!same(l->file, cur_sub)) {
                /* Code from another file (inlined): fi= to it, fe= back. */
                if (put_name(b, same(l->file, r->file) ? "fe=" : "fi=", &c->files, l->file))
                    return -1;
                cur_sub = l->file;
            }
            if (l->is_call) {
                struct rec *callee = &c->recs[l->callee];
                /* cob=/cfi= apply to the next call only and default to the
                 * current object and file; KCachegrind also defines a new
                 * function id in the context they give. */
                if (!same(callee->object, r->object) && put_name(b, "cob=", &c->objects, callee->object))
                    return -1;
                if (!same(callee->file, cur_sub) && put_name(b, "cfi=", &c->files, callee->file))
                    return -1;
                put_fn(c, b, "cfn=", callee);
                /* The target position is absolute: readers differ on what a
                 * relative one there would be relative to. */
                cg_buf_puts(b, "calls=");
                cg_buf_put_u64(b, l->count);
                cg_buf_putc(b, ' ');
                if (!line_only) {
                    cg_buf_put_hex(b, callee->entry);
                    cg_buf_putc(b, ' ');
                }
                cg_buf_put_u64(b, callee->entry_line);
                cg_buf_putc(b, '\n');
            }
            put_position(b, &pos, line_only, l->addr, l->lineno);
            cg_buf_putc(b, ' ');
            cg_buf_put_u64(b, l->cost);
            cg_buf_putc(b, '\n');
        }
        if (!same(cur_sub, r->file) && put_name(b, "fe=", &c->files, r->file))
            return -1;
        cg_buf_putc(b, '\n');
    }
    st->cur_ob = cur_ob;
    st->cur_fl = cur_fl;
    st->pos = pos;
    return 0;
}

/* Calls counted in an earlier part that ran on into this one (a dump in the
 * middle of them, or a fork) have time here but no call: calls=0.
 * callgrind_annotate reads a call line only when its count is above 0 and
 * otherwise adds the cost line to the caller's own cost: main or
 * start_thread took a thread's whole time as their own and a part added up
 * to 200-300%. So these lines are written after everything else, each
 * behind "#> ", a comment for Valgrind's and KCachegrind's readers (self
 * costs and completed calls read right in both; the callers of a continued
 * call do not include its time in their inclusive cost there) and lines
 * for cgprof's reader, which reads them as it reads the rest: a call's time
 * stays on its arc, and parts still add up exactly. Being last, the names
 * they define and the positions they move affect no line a Valgrind or
 * KCachegrind reader sees. */
static int write_continued(struct ctx *c, struct cg_buf *out, const size_t *order, int line_only,
                           struct body_state *st)
{
    int any = 0;
    for (size_t k = 0; k < c->nrecs && !any; k++)
        any = has_lines_of(c, &c->recs[k], 1);
    if (!any)
        return 0;
    struct cg_buf tmp;
    cg_buf_init(&tmp);
    if (write_pass(c, &tmp, order, line_only, 1, st) != 0 || tmp.failed) {
        cg_buf_free(&tmp);
        return -1;
    }
    cg_buf_puts(out, "# Calls continued from an earlier part (calls=0), for cgprof's reader: "
                     "callgrind_annotate would take their time for their callers' own\n");
    size_t start = 0;
    for (size_t i = 0; i < tmp.len; i++) {
        if (tmp.data[i] != '\n')
            continue;
        if (i > start) { /* the blank lines between blocks stay blank */
            cg_buf_puts(out, "#> ");
            cg_buf_putn(out, tmp.data + start, i - start);
        }
        cg_buf_putc(out, '\n');
        start = i + 1;
    }
    cg_buf_free(&tmp);
    return 0;
}

/* A comment line of ids for cgprof's readers, after the rest of a part
 * (#visits:, #inlined:): its header written before the first item, none
 * when there is no item. An item is " (a)", or " (a)>(b)" for a pair. */
struct id_line {
    struct cg_buf *out;
    const char *head; /* the explaining comment and the line's key */
    int any;
};

static void id_line_item(struct id_line *line, uint64_t a, uint64_t b)
{
    if (!line->any)
        cg_buf_puts(line->out, line->head);
    line->any = 1;
    cg_buf_puts(line->out, " (");
    cg_buf_put_u64(line->out, a);
    cg_buf_putc(line->out, ')');
    if (b) {
        cg_buf_puts(line->out, ">(");
        cg_buf_put_u64(line->out, b);
        cg_buf_putc(line->out, ')');
    }
}

static void id_line_end(struct id_line *line)
{
    if (line->any)
        cg_buf_putc(line->out, '\n');
}

/* The functions whose calls are counted as visits, not calls: code
 * without hooks (libc), known only from sampling or as the code that ran
 * callbacks (qsort's msort_with_tmp), called only by calls no hook saw (the
 * sampler's walks, the calls the writer infers). A count there is the number of separate
 * visits seen, a lower bound, and cgprof report marks it so; the other
 * readers show it as a count. One comment line of their ids, after the
 * rest, for cgprof's reader: "#visits: (12) (15)". */
static void write_visits(struct ctx *c, struct cg_buf *out, const size_t *order)
{
    for (size_t i = 0; i < c->nrecs; i++)
        c->recs[i].hooked = c->recs[i].visited = 0;
    for (size_t i = 0; i < c->nrecs; i++) {
        const struct rec *r = &c->recs[i];
        for (size_t k = 0; k < r->n; k++) {
            const struct line *l = &c->lines[r->lines[k]];
            if (!l->is_call)
                continue;
            if (l->visits)
                c->recs[l->callee].visited = 1;
            else
                c->recs[l->callee].hooked = 1;
        }
    }
    struct id_line line = {out, "# Functions without hooks, called only as seen by sampling or as the code that ran "
                                "callbacks: their counts are visits, a lower bound\n#visits:", 0};
    for (size_t k = 0; k < c->nrecs; k++) {
        const struct rec *r = &c->recs[order[k]];
        /* cgprof_off_cpu's calls are made by the sampler's path too, but
         * each is one period off the CPU, counted: not a lower bound */
        if (!r->visited || r->hooked || !r->id || (r->name && strcmp(r->name, "cgprof_off_cpu") == 0))
            continue;
        id_line_item(&line, r->id, 0);
    }
    id_line_end(&line);
}

/* The calls the compiler inlined (counted with their hooks kept,
 * CGPROF_INLINED=count): one comment line of (caller)>(callee) pairs of
 * ids, after the rest, for cgprof's readers (cgprof pprof makes an inlined
 * callee a line of its caller's location, as pprof shows inlined frames):
 * "#inlined: (3)>(7) (3)>(9)". Valgrind's and KCachegrind's readers skip
 * it. */
static void write_inlined(struct ctx *c, struct cg_buf *out, const size_t *order)
{
    struct id_line line = {out, "# Calls the compiler inlined, counted with their hooks: (caller)>(callee)\n#inlined:", 0};
    for (size_t i = 0; i < c->nrecs; i++)
        c->recs[i].inlined_into = 0;
    for (size_t k = 0; k < c->nrecs; k++) {
        const struct rec *r = &c->recs[order[k]];
        if (!r->id)
            continue;
        for (size_t i = 0; i < r->n; i++) {
            const struct line *l = &c->lines[r->lines[i]];
            struct rec *callee = &c->recs[l->callee];
            /* once a pair: a callee may be inlined at many places */
            if (!l->is_call || !l->inlined || !callee->id || callee->inlined_into == order[k] + 1)
                continue;
            callee->inlined_into = order[k] + 1;
            id_line_item(&line, r->id, callee->id);
        }
    }
    id_line_end(&line);
}

/* CGPROF_LATENCY: each function's calls that ended in the part, by
 * inclusive time, the sum of its arcs' histograms (costs.h, "latency
 * histograms"): comment lines after the rest, for cgprof's reader
 * (Valgrind's and KCachegrind's skip '#' lines). First the buckets' scheme,
 * "#latency: 4" (4 buckets of equal width a power of two: a reader needs
 * no rule of ours but that figure), then one line a function:
 *   #lat: (id) CALLS SUM MAX LOWER:COUNT...
 * CALLS the calls (the counts' sum), SUM their times (ns), MAX the longest
 * (or a bound within its bucket, cg_reading_part), then the buckets that are
 * not empty, each by the least time it holds (ns), in increasing order; a
 * bucket ends where the next possible one starts (the last has no end).
 * Two records of one id (copies of a static inline function) each write
 * theirs: a reader adds them up. */
static int write_latency(struct ctx *c, struct cg_buf *out, const size_t *order, const struct cg_snapshot *snap)
{
    if (!snap->lat)
        return 0;
    uint64_t *rows = calloc(c->nrecs ? c->nrecs : 1, CG_LAT_ROW * sizeof *rows);
    if (!rows)
        return -1;
    for (size_t i = 0; i < snap->narcs; i++) {
        const uint64_t *from = snap->lat + i * CG_LAT_ROW;
        if (snap->arcs[i].sampled)
            continue;
        size_t r = rec_of_entry(c, snap->arcs[i].callee);
        if (r == SIZE_MAX)
            continue;
        uint64_t *to = rows + r * CG_LAT_ROW;
        for (unsigned k = 0; k < CG_LAT_MAX; k++)
            to[k] += from[k];
        if (from[CG_LAT_MAX] > to[CG_LAT_MAX])
            to[CG_LAT_MAX] = from[CG_LAT_MAX];
    }
    int any = 0;
    for (size_t k = 0; k < c->nrecs; k++) {
        const struct rec *r = &c->recs[order[k]];
        const uint64_t *row = rows + order[k] * CG_LAT_ROW;
        uint64_t calls = 0;
        for (unsigned b = 0; b < CG_LAT_BUCKETS; b++)
            calls += row[b];
        if (!calls || !r->id)
            continue;
        if (!any)
            cg_buf_puts(out, "# Latency (CGPROF_LATENCY): per function, its calls that ended, by inclusive time "
                             "(ns): #lat: (fn) calls sum max lower:count..., in buckets of 4 a power of two "
                             "(cgprof's docs/latency.md)\n#latency: 4\n");
        any = 1;
        cg_buf_puts(out, "#lat: (");
        cg_buf_put_u64(out, r->id);
        cg_buf_puts(out, ") ");
        cg_buf_put_u64(out, calls);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, row[CG_LAT_SUM]);
        cg_buf_putc(out, ' ');
        cg_buf_put_u64(out, row[CG_LAT_MAX]);
        for (unsigned b = 0; b < CG_LAT_BUCKETS; b++) {
            if (!row[b])
                continue;
            cg_buf_putc(out, ' ');
            cg_buf_put_u64(out, cg_lat_lower(b));
            cg_buf_putc(out, ':');
            cg_buf_put_u64(out, row[b]);
        }
        cg_buf_putc(out, '\n');
    }
    free(rows);
    return 0;
}

static int write_body(struct ctx *c, struct cg_buf *b, const size_t *order, int line_only)
{
    struct body_state st;
    memset(&st, 0, sizeof st);
    if (write_pass(c, b, order, line_only, 0, &st) != 0)
        return -1;
    if (write_continued(c, b, order, line_only, &st) != 0)
        return -1;
    write_visits(c, b, order);
    write_inlined(c, b, order);
    return 0;
}

static void ctx_free(struct ctx *c)
{
    free(c->rank);
    free(c->lines);
    free(c->grouped);
    free(c->recs);
    free(c->index);
    free(c->sym_slots);
    free(c->entry_rec);
    free(c->objects.keys);
    free(c->objects.ids);
    free(c->files.keys);
    free(c->files.ids);
    free(c->fns.keys);
    free(c->fns.ids);
    for (size_t i = 0; i < c->nfn_keys; i++)
        free(c->fn_keys[i]);
    free(c->fn_keys);
}

int cg_write_part(const struct cg_part_info *info, const struct cg_snapshot *snap, const struct cg_symtab *syms,
                  struct cg_buf *out)
{
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.syms = syms;
    c.left_out = info->left_out;
    c.part_code = info->part_code;
    size_t *order = NULL;
    int rc = -1;
    if (index_syms(&c) != 0 || build(&c, snap) != 0 || group_lines(&c) != 0)
        goto done;
    order = malloc((c.nrecs ? c.nrecs : 1) * sizeof *order);
    c.rank = malloc((c.nrecs ? c.nrecs : 1) * sizeof *c.rank);
    if (!order || !c.rank || order_records(&c, order) != 0)
        goto done;
    for (size_t i = 0; i < c.nrecs; i++)
        c.rank[order[i]] = (uint32_t)i;
    uint64_t total = 0;
    for (size_t i = 0; i < c.nrecs; i++) {
        merge_lines(&c, &c.recs[i]);
        for (size_t k = 0; k < c.recs[i].n; k++)
            if (!c.lines[c.recs[i].lines[k]].is_call)
                total += c.lines[c.recs[i].lines[k]].cost;
    }

    /* about 24 bytes a cost line, twice that for calls */
    cg_buf_reserve(out, 4096 + 24 * snap->nselfs + 48 * snap->narcs);
    write_header(out, info, total);
    if (write_body(&c, out, order, info->line_only) != 0 || write_latency(&c, out, order, snap) != 0)
        goto done;
    cg_buf_puts(out, "totals: ");
    cg_buf_put_u64(out, total);
    cg_buf_putc(out, '\n');
    rc = out->failed ? -1 : 0;
done:
    free(order);
    ctx_free(&c);
    return rc;
}
