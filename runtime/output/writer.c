/* The Callgrind encoding of a part: see writer.h. What the part says is
 * its model's (partmodel.h: the function blocks, their lines, their
 * order); this file writes it: the header, the names and positions
 * compressed, and the comment lines for cgprof's readers after the rest
 * (continued calls, visits, inlined calls, latency). */
#include "writer.h"
#include "desc.inc"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"

struct strmap {
    const char **keys;
    unsigned *ids;
    size_t cap, n;
};

/* The model, and the names' ids as they are written. */
struct ctx {
    struct cg_partmodel m;
    struct strmap objects, files;
    /* function ids by "object\1file\1name": the keys are owned here */
    struct strmap fns;
    char **fn_keys;
    size_t nfn_keys, fn_keys_cap;
    unsigned next_fn_id;
};

/* ---- name compression ----------------------------------------------------- */

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
            size_t j = cg_hash_str(m->keys[i]);
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
    size_t j = cg_hash_str(name);
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
static unsigned fn_id(struct ctx *c, const struct cg_pm_rec *r, int *fresh)
{
    if (CG_GROW(c->fn_keys, c->fn_keys_cap, c->nfn_keys + 1, 64) != 0)
        return 0;
    size_t lo = strlen(r->object), lf = strlen(r->file), ln = strlen(cg_pm_name(r));
    char *key = malloc(lo + lf + ln + 3);
    if (!key)
        return 0;
    memcpy(key, r->object, lo);
    key[lo] = '\1';
    memcpy(key + lo + 1, r->file, lf);
    key[lo + 1 + lf] = '\1';
    memcpy(key + lo + lf + 2, cg_pm_name(r), ln + 1);
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
static void put_fn(struct ctx *c, struct cg_buf *b, const char *spec, struct cg_pm_rec *r)
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
    put_clean(b, cg_pm_name(r));
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
static int is_continued(const struct cg_pm_line *l)
{
    return l->is_call && l->count == 0;
}

/* Whether a function block has lines of the pass: continued calls (pass 1)
 * or everything else (pass 0). */
static int has_lines_of(const struct ctx *c, const struct cg_pm_rec *r, int continued)
{
    for (size_t i = 0; i < r->n; i++)
        if (is_continued(&c->m.lines[r->lines[i]]) == continued)
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
static void put_anchor(const struct ctx *c, struct cg_buf *b, struct pos *pos, int line_only, const struct cg_pm_rec *r)
{
    const struct cg_pm_line *at = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const struct cg_pm_line *l = &c->m.lines[r->lines[i]];
        if (is_continued(l) || !cg_pm_same(l->file, r->file) || l->lineno == 0)
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
    for (size_t k = 0; k < c->m.nrecs; k++) {
        struct cg_pm_rec *r = &c->m.recs[order[k]];
        /* r->n == 0: only ever called, and with no cost of its own */
        if (!has_lines_of(c, r, continued))
            continue;
        if (!cur_ob || !cg_pm_same(cur_ob, r->object)) {
            if (put_name(b, "ob=", &c->objects, r->object))
                return -1;
            cur_ob = r->object;
        }
        /* KCachegrind takes a function's file from the last fl=, and
         * callgrind_annotate from whatever fl=/fi=/fe= came last: a block
         * always starts and ends in its function's own file. */
        if (!cur_fl || !cg_pm_same(cur_fl, r->file)) {
            if (put_name(b, "fl=", &c->files, r->file))
                return -1;
            cur_fl = r->file;
        }
        put_fn(c, b, "fn=", r);
        if (!continued)
            put_anchor(c, b, &pos, line_only, r);
        const char *cur_sub = r->file;
        for (size_t i = 0; i < r->n; i++) {
            const struct cg_pm_line *l = &c->m.lines[r->lines[i]];
            if (is_continued(l) != continued)
                continue;
            if (!cg_pm_same(l->file, cur_sub)) {
                /* Code from another file (inlined): fi= to it, fe= back. */
                if (put_name(b, cg_pm_same(l->file, r->file) ? "fe=" : "fi=", &c->files, l->file))
                    return -1;
                cur_sub = l->file;
            }
            if (l->is_call) {
                struct cg_pm_rec *callee = &c->m.recs[l->callee];
                /* cob=/cfi= apply to the next call only and default to the
                 * current object and file; KCachegrind also defines a new
                 * function id in the context they give. */
                if (!cg_pm_same(callee->object, r->object) && put_name(b, "cob=", &c->objects, callee->object))
                    return -1;
                if (!cg_pm_same(callee->file, cur_sub) && put_name(b, "cfi=", &c->files, callee->file))
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
        if (!cg_pm_same(cur_sub, r->file) && put_name(b, "fe=", &c->files, r->file))
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
    for (size_t k = 0; k < c->m.nrecs && !any; k++)
        any = has_lines_of(c, &c->m.recs[k], 1);
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
    for (size_t i = 0; i < c->m.nrecs; i++)
        c->m.recs[i].hooked = c->m.recs[i].visited = 0;
    for (size_t i = 0; i < c->m.nrecs; i++) {
        const struct cg_pm_rec *r = &c->m.recs[i];
        for (size_t k = 0; k < r->n; k++) {
            const struct cg_pm_line *l = &c->m.lines[r->lines[k]];
            if (!l->is_call)
                continue;
            if (l->visits)
                c->m.recs[l->callee].visited = 1;
            else
                c->m.recs[l->callee].hooked = 1;
        }
    }
    struct id_line line = {out, "# Functions without hooks, called only as seen by sampling or as the code that ran "
                                "callbacks: their counts are visits, a lower bound\n#visits:", 0};
    for (size_t k = 0; k < c->m.nrecs; k++) {
        const struct cg_pm_rec *r = &c->m.recs[order[k]];
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
    for (size_t i = 0; i < c->m.nrecs; i++)
        c->m.recs[i].inlined_into = 0;
    for (size_t k = 0; k < c->m.nrecs; k++) {
        const struct cg_pm_rec *r = &c->m.recs[order[k]];
        if (!r->id)
            continue;
        for (size_t i = 0; i < r->n; i++) {
            const struct cg_pm_line *l = &c->m.lines[r->lines[i]];
            struct cg_pm_rec *callee = &c->m.recs[l->callee];
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
 * inclusive time, the sum of its arcs' histograms (costs_structs.h, the
 * latency histograms): comment lines after the rest, for cgprof's reader
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
    uint64_t *rows = calloc(c->m.nrecs ? c->m.nrecs : 1, CG_LAT_ROW * sizeof *rows);
    if (!rows)
        return -1;
    for (size_t i = 0; i < snap->narcs; i++) {
        const uint64_t *from = snap->lat + i * CG_LAT_ROW;
        if (snap->arcs[i].sampled)
            continue;
        size_t r = cg_partmodel_rec_of_entry(&c->m, snap->arcs[i].callee);
        if (r == SIZE_MAX)
            continue;
        uint64_t *to = rows + r * CG_LAT_ROW;
        for (unsigned k = 0; k < CG_LAT_MAX; k++)
            to[k] += from[k];
        if (from[CG_LAT_MAX] > to[CG_LAT_MAX])
            to[CG_LAT_MAX] = from[CG_LAT_MAX];
    }
    int any = 0;
    for (size_t k = 0; k < c->m.nrecs; k++) {
        const struct cg_pm_rec *r = &c->m.recs[order[k]];
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
    cg_partmodel_free(&c->m);
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
    int rc = -1;
    if (cg_partmodel_make(&c.m, snap, syms, info->left_out, info->part_code) != 0)
        goto done;

    /* about 24 bytes a cost line, twice that for calls */
    cg_buf_reserve(out, 4096 + 24 * snap->nselfs + 48 * snap->narcs);
    write_header(out, info, c.m.total);
    if (write_body(&c, out, c.m.order, info->line_only) != 0 || write_latency(&c, out, c.m.order, snap) != 0)
        goto done;
    cg_buf_puts(out, "totals: ");
    cg_buf_put_u64(out, c.m.total);
    cg_buf_putc(out, '\n');
    rc = out->failed ? -1 : 0;
done:
    ctx_free(&c);
    return rc;
}
