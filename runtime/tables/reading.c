#include "reading.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "latency.h"

static int resize(uint64_t **p, uint32_t n)
{
    void *q = realloc(*p, (n ? n : 1) * sizeof **p);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int reading_fit(struct cg_reading *t, uint32_t narcs, uint32_t nselfs, uint32_t nnodes)
{
    if (resize(&t->count, narcs) || resize(&t->incl, narcs) || resize(&t->runs, narcs) ||
        resize(&t->cost, nselfs) || resize(&t->ncalls, nnodes) || resize(&t->nincl, nnodes) ||
        resize(&t->nself, nnodes))
        return -1;
    t->narcs = narcs;
    t->nselfs = nselfs;
    t->nnodes = nnodes;
    return 0;
}

/* The histograms' rows of t: n, or none (NULL) when n is 0. */
static int lat_fit(struct cg_reading *t, uint32_t n)
{
    if (!n) {
        free(t->lat);
        t->lat = NULL;
        t->nlat = 0;
        return 0;
    }
    void *q = realloc(t->lat, (size_t)n * CG_LAT_ROW * sizeof *t->lat);
    if (!q)
        return -1;
    t->lat = q;
    t->nlat = n;
    return 0;
}

/* Row i of n rows, or NULL past them (an arc made since). */
static const uint64_t *lat_row(const uint64_t *lat, uint32_t n, uint32_t i)
{
    return lat && i < n ? lat + (size_t)i * CG_LAT_ROW : NULL;
}

void cg_reading_free(struct cg_reading *t)
{
    free(t->lat);
    free(t->count);
    free(t->incl);
    free(t->runs);
    free(t->cost);
    free(t->ncalls);
    free(t->nincl);
    free(t->nself);
    memset(t, 0, sizeof *t);
}

/* The reads of a running thread's tables that its owner writes with plain
 * stores (the hot path has no atomics but for the depth, the counts and
 * their times): self costs, runs and the fields of frames. A value read
 * while it changes is the old or the new one (aligned words, x86-64), and
 * the rules of cg_reading_take make either harmless: races by the letter
 * of C11, harmless by design, and so left out of ThreadSanitizer's checks
 * (CG_RACY_READ), they and nothing else. */
static CG_RACY_READ void racy_selfs(const struct cg_self *selfs, uint32_t n, uint64_t *cost)
{
    for (uint32_t i = 0; i < n; i++)
        cost[i] = selfs[i].cost;
}

static CG_RACY_READ void racy_runs(const struct cg_arc *arcs, uint32_t n, uint64_t *runs)
{
    for (uint32_t i = 0; i < n; i++)
        runs[i] = arcs[i].runs;
}

struct frame_view {
    uint32_t arc, self, state, node;
    uint64_t t_enter, t_last;
};

/* Each field once: the thread may be rewriting a frame above its depth (a
 * call that ended, another entered), and a field read twice could give
 * two calls' values. */
static CG_RACY_READ void racy_frame(const struct cg_frame *f, struct frame_view *v)
{
    v->arc = __atomic_load_n(&f->arc, __ATOMIC_RELAXED);
    v->t_enter = __atomic_load_n(&f->t_enter, __ATOMIC_RELAXED);
    v->state = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
    v->self = __atomic_load_n(&f->self, __ATOMIC_RELAXED);
    v->t_last = __atomic_load_n(&f->t_last, __ATOMIC_RELAXED);
    v->node = __atomic_load_n(&f->node, __ATOMIC_RELAXED);
}

static CG_RACY_READ void racy_node_selfs(const struct cg_node *nodes, uint32_t n, uint64_t *self)
{
    for (uint32_t i = 0; i < n; i++)
        self[i] = nodes[i].self;
}

/* The top frame as a reading sees it before and after: equal when no hook
 * (and no sample) changed the thread's stack in between. */
struct top_view {
    const struct cg_frame *frames;
    uint32_t depth;
    struct frame_view f;
};

static void top_read(const struct cg_costs *c, struct top_view *v)
{
    v->depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
    v->frames = __atomic_load_n(&c->frames, __ATOMIC_SEQ_CST);
    memset(&v->f, 0, sizeof v->f);
    if (v->depth)
        racy_frame(&v->frames[v->depth - 1], &v->f);
}

static int top_same(const struct top_view *a, const struct top_view *b)
{
    return a->depth == b->depth && a->frames == b->frames && a->f.arc == b->f.arc && a->f.self == b->f.self &&
           a->f.t_enter == b->f.t_enter && a->f.t_last == b->f.t_last;
}

static int take_once(const struct cg_costs *c, uint64_t now, struct cg_reading *t, int *still);

/* A reading of a running thread is made of reads at different moments: a
 * call that ends between the copy of the self costs and that of the
 * frames has its last self segment in neither the self costs nor the open
 * segment, and one that ends between the copy of the arcs and that of the
 * frames is in neither its count nor its frame. The reading is then short
 * of what the next one will hold, and the part after it gets time from
 * before its start: a function's inclusive time there fell short of its
 * self time plus its callees' (SignalDumps.test_sum_rule, 1 run in 5 on a
 * loaded machine: a thread woke from a sleep, ending a segment of its
 * caller, while it was being read). So the reading is made again, up to
 * READ_TRIES times, until the thread's top frame (depth, times, entries)
 * is the same before and after it: no hook ended and no sample landed
 * meanwhile, and the reading is the thread's state at `now` exactly. A
 * thread that makes calls all the time may change under every try: its
 * last is kept, whose calls in flight are a few short ones (the parts on
 * either side of it may split one: docs/cgprof-control.md). */
#define READ_TRIES 4

int cg_reading_take(const struct cg_costs *c, uint64_t now, struct cg_reading *t)
{
    for (int i = 0;; i++) {
        int still = 0;
        if (take_once(c, now, t, &still) != 0)
            return -1;
        if (still || i + 1 == READ_TRIES)
            return 0;
    }
}

static int take_once(const struct cg_costs *c, uint64_t now, struct cg_reading *t, int *still)
{
    struct top_view before, after;
    top_read(c, &before);
    uint32_t narcs = __atomic_load_n(&c->narcs, __ATOMIC_ACQUIRE);
    uint32_t nselfs = __atomic_load_n(&c->nselfs, __ATOMIC_ACQUIRE);
    const struct cg_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_SEQ_CST);
    const struct cg_self *selfs = __atomic_load_n(&c->selfs, __ATOMIC_SEQ_CST);
    uint32_t nnodes = __atomic_load_n(&c->nnodes, __ATOMIC_ACQUIRE);
    const struct cg_node *nodes = __atomic_load_n(&c->nodes, __ATOMIC_SEQ_CST);
    if (!nodes)
        nnodes = 0;
    const uint64_t *lat = __atomic_load_n(&c->lat, __ATOMIC_SEQ_CST);
    if (reading_fit(t, narcs, nselfs, nnodes) || lat_fit(t, lat ? narcs : 0))
        return -1;
    /* a node's outermost frame on the stack, for its time in progress */
    unsigned char *seen = nnodes ? calloc(nnodes, 1) : NULL;
    if (nnodes && !seen)
        return -1;
    /* Of a thread that runs meanwhile, self costs are read first, then the
     * arcs (each one's time before its count), then the frames, in the
     * reverse of the order a call's exit writes them (cg_costs_pop): a call
     * that ends meanwhile is found in its frame or in its count, or in
     * neither (this reading is one short, the next makes it up), never in
     * both, and its time is never in its frame and its arc at once. The
     * acquire loads keep the reads in that order. */
    racy_selfs(selfs, nselfs, t->cost);
    racy_node_selfs(nodes, nnodes, t->nself);
    racy_runs(arcs, narcs, t->runs);
    for (uint32_t i = 0; i < narcs; i++) {
        t->incl[i] = __atomic_load_n(&arcs[i].incl, __ATOMIC_ACQUIRE);
        t->count[i] = __atomic_load_n(&arcs[i].count, __ATOMIC_ACQUIRE);
    }
    /* The counting hooks' counts (CGPROF_STACKS=unwind) are in their
     * table: a slot's key is stored last, so one whose key is read has
     * its arc and count written. */
    const struct cg_count_table *ct = __atomic_load_n(&c->count, __ATOMIC_SEQ_CST);
    for (uint64_t i = 0; ct && i <= ct->mask; i++) {
        const struct cg_count_slot *s = &ct->slot[i];
        if (!__atomic_load_n(&s->ret, __ATOMIC_ACQUIRE))
            continue;
        uint32_t a = s->arc;
        if (a != CG_SINK && a < narcs)
            t->count[a] += __atomic_load_n(&s->count, __ATOMIC_RELAXED);
    }
    /* the histograms hold the calls that ended: none of the frames'; their
     * sum is the arc's time before the frames' is added */
    for (size_t i = 0; lat && i < (size_t)narcs * CG_LAT_ROW; i++)
        t->lat[i] = __atomic_load_n(&lat[i], __ATOMIC_RELAXED);
    for (uint32_t i = 0; lat && i < narcs; i++)
        t->lat[(size_t)i * CG_LAT_ROW + CG_LAT_SUM] = t->incl[i];
    /* the nodes after the arcs: an exit stores the arc's, then the node's */
    for (uint32_t i = 0; i < nnodes; i++) {
        t->nincl[i] = __atomic_load_n(&nodes[i].incl, __ATOMIC_ACQUIRE);
        t->ncalls[i] = __atomic_load_n(&nodes[i].calls, __ATOMIC_ACQUIRE);
    }
    /* The time is taken before the frames are read: a frame still there
     * ends later than that, so a call in progress is never charged more
     * than it will really cost, and successive readings only grow (parts
     * never lose what a torn read put in the part before). */
    if (now == CG_NOW)
        now = c->vclock ? __atomic_load_n(c->vclock, __ATOMIC_RELAXED) : cg_costs_time_of(c, cg_clock_now());
    uint32_t depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
    const struct cg_frame *frames = __atomic_load_n(&c->frames, __ATOMIC_SEQ_CST);
    /* Calls still running: counted once each, with their cost so far. Only
     * the top frame has a self segment open; the others are waiting on a
     * callee and closed theirs when they called it. */
    uint32_t running = 0;
    after.depth = depth;
    after.frames = frames;
    memset(&after.f, 0, sizeof after.f);
    for (uint32_t i = 0; i < depth; i++) {
        struct frame_view f;
        racy_frame(&frames[i], &f);
        if (i == depth - 1)
            after.f = f;
        if (f.arc >= narcs || now < f.t_enter)
            continue; /* entered after `now`, or a torn read of a frame being pushed */
        if (!f.state) { /* a call left out is no call: its time is its caller's self */
            t->count[f.arc]++;
            t->incl[f.arc] += now - f.t_enter;
            running++;
            if (f.node < nnodes) {
                t->ncalls[f.node]++;
                /* the outermost frame of a node (the first, from the
                 * root) holds its time; nested ones are in it */
                if (!seen[f.node]) {
                    seen[f.node] = 1;
                    t->nincl[f.node] += now - f.t_enter;
                }
            }
        }
        if (i == depth - 1 && f.self < nselfs && now >= f.t_last) {
            t->cost[f.self] += now - f.t_last;
            if (f.node < nnodes)
                t->nself[f.node] += now - f.t_last;
        }
    }
    free(seen);
    *still = top_same(&before, &after);
    t->folded = __atomic_load_n(&c->folded, __ATOMIC_RELAXED);
    t->beyond_paths = __atomic_load_n(&c->beyond_paths, __ATOMIC_RELAXED);
    t->comp = __atomic_load_n(&c->comp, __ATOMIC_RELAXED);
    t->off_pending = 0;
    t->depth = running;
    t->lost = __atomic_load_n(&c->lost, __ATOMIC_RELAXED);
    t->unmatched_exits = __atomic_load_n(&c->unmatched_exits, __ATOMIC_RELAXED);
    t->left = __atomic_load_n(&c->left, __ATOMIC_RELAXED);
    t->jumped = __atomic_load_n(&c->jumped, __ATOMIC_RELAXED);
    t->inlined_calls = __atomic_load_n(&c->inlined_calls, __ATOMIC_RELAXED);
    t->frameless_exits = __atomic_load_n(&c->frameless_exits, __ATOMIC_RELAXED);
    t->takeback_ns = __atomic_load_n(&c->takeback_ns, __ATOMIC_RELAXED);
    t->unplaced = __atomic_load_n(&c->unplaced, __ATOMIC_RELAXED);
    t->ring_lost = __atomic_load_n(&c->ring_lost, __ATOMIC_RELAXED);
    t->ring_refused = __atomic_load_n(&c->ring_refused, __ATOMIC_RELAXED);
    return 0;
}

/* v - base[i], where base may be shorter (entries added since count from
 * zero) and a torn read may have left it behind the base by one call. */
static uint64_t diff(uint64_t v, const uint64_t *base, uint32_t n, uint32_t i)
{
    uint64_t b = base && i < n ? base[i] : 0;
    return v > b ? v - b : 0;
}

/* The part's nodes: those with a call or time in it, and their ancestors
 * (a path is named by them), in the order of the tree's (parents first). */
static int parts_nodes(const struct cg_costs *c, const struct cg_reading *cur, const struct cg_reading *base,
                       struct cg_snapshot *out)
{
    const struct cg_node *nodes = __atomic_load_n(&c->nodes, __ATOMIC_SEQ_CST);
    if (!nodes)
        return 0;
    uint32_t n = cur->nnodes, bn = base ? base->nnodes : 0;
    out->tree_nodes = n ? n - 1 : 0;
    out->tree_bound = c->node_bound;
    out->folded = cur->folded - (base && base->folded <= cur->folded ? base->folded : 0);
    out->beyond_paths = cur->beyond_paths - (base && base->beyond_paths <= cur->beyond_paths ? base->beyond_paths : 0);
    uint32_t *at = calloc(n ? n : 1, sizeof *at); /* snapshot index + 1, or 1 when wanted */
    out->nodes = calloc(n ? n : 1, sizeof *out->nodes);
    if (!at || !out->nodes) {
        free(at);
        return -1;
    }
    for (uint32_t i = n; i-- > 1;) {
        if (diff(cur->ncalls[i], base ? base->ncalls : NULL, bn, i) ||
            diff(cur->nincl[i], base ? base->nincl : NULL, bn, i) ||
            diff(cur->nself[i], base ? base->nself : NULL, bn, i))
            at[i] = 1;
        /* a parent is older than its children: marked before it is reached */
        if (at[i] && nodes[i].parent && nodes[i].parent < i)
            at[nodes[i].parent] = 1;
    }
    for (uint32_t i = 1; i < n; i++) {
        if (!at[i])
            continue;
        struct cg_snap_node *x = &out->nodes[out->nnodes];
        x->fn = nodes[i].fn;
        x->parent = nodes[i].parent < i ? at[nodes[i].parent] : 0;
        x->calls = diff(cur->ncalls[i], base ? base->ncalls : NULL, bn, i);
        x->incl = diff(cur->nincl[i], base ? base->nincl : NULL, bn, i);
        x->self = diff(cur->nself[i], base ? base->nself : NULL, bn, i);
        at[i] = (uint32_t)++out->nnodes;
    }
    free(at);
    return 0;
}

/* A part's histogram row: cur - base, bucket by bucket. The longest call
 * is cur's when it grew since base (it ended in the part); otherwise the
 * part's longest is at most the top of its highest bucket, and at most
 * cur's: the lesser of the two, a bound within the bucket's error. */
static void lat_part(uint64_t *out, const uint64_t *cur, const uint64_t *base)
{
    memset(out, 0, CG_LAT_ROW * sizeof *out);
    if (!cur)
        return;
    int top = -1;
    for (unsigned k = 0; k < CG_LAT_BUCKETS; k++) {
        out[k] = cur[k] - (base && base[k] <= cur[k] ? base[k] : 0);
        if (out[k])
            top = (int)k;
    }
    out[CG_LAT_SUM] = cur[CG_LAT_SUM] - (base && base[CG_LAT_SUM] <= cur[CG_LAT_SUM] ? base[CG_LAT_SUM] : 0);
    if (top < 0)
        out[CG_LAT_MAX] = 0;
    else if (!base || cur[CG_LAT_MAX] > base[CG_LAT_MAX] || top == CG_LAT_BUCKETS - 1)
        out[CG_LAT_MAX] = cur[CG_LAT_MAX];
    else {
        uint64_t upper = cg_lat_lower((unsigned)top + 1) - 1;
        out[CG_LAT_MAX] = upper < cur[CG_LAT_MAX] ? upper : cur[CG_LAT_MAX];
    }
}

/* Whether a histogram row counts calls that base's does not. */
static int lat_moved(const uint64_t *cur, const uint64_t *base)
{
    for (unsigned k = 0; cur && k < CG_LAT_BUCKETS; k++)
        if (cur[k] > (base ? base[k] : 0))
            return 1;
    return 0;
}

int cg_reading_part(const struct cg_costs *c, const struct cg_reading *cur, const struct cg_reading *base,
                    struct cg_snapshot *out)
{
    memset(out, 0, sizeof *out);
    const struct cg_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_SEQ_CST);
    const struct cg_self *selfs = __atomic_load_n(&c->selfs, __ATOMIC_SEQ_CST);
    out->arcs = calloc(cur->narcs ? cur->narcs : 1, sizeof *out->arcs);
    out->selfs = calloc(cur->nselfs ? cur->nselfs : 1, sizeof *out->selfs);
    if (!out->arcs || !out->selfs) {
        cg_snapshot_free(out);
        return -1;
    }
    if (cur->lat && !(out->lat = malloc((size_t)(cur->narcs ? cur->narcs : 1) * CG_LAT_ROW * sizeof *out->lat))) {
        cg_snapshot_free(out);
        return -1;
    }
    uint32_t bn = base ? base->narcs : 0, bs = base ? base->nselfs : 0;
    for (uint32_t i = 1; i < cur->narcs; i++) {
        uint64_t count = diff(cur->count[i], base ? base->count : NULL, bn, i);
        uint64_t incl = diff(cur->incl[i], base ? base->incl : NULL, bn, i);
        /* A reading of a running thread reads an arc's count, then its
         * histogram (cg_reading_take), and an exit stores them in that
         * order: a call that ends in between is in one and not yet in the
         * other, and the next part may have nothing else on the arc. Its
         * histogram is shown all the same, on a line with no call and no
         * time (calls=0, behind #>), not taken into the base unseen: the
         * parts' histograms add up to the calls (tests/unit/test_handoff.c
         * lost 6% of them before, under load). */
        if (count == 0 && incl == 0 &&
            !(cur->lat && lat_moved(lat_row(cur->lat, cur->nlat, i), base ? lat_row(base->lat, base->nlat, i) : NULL)))
            continue;
        if (out->lat)
            lat_part(out->lat + out->narcs * CG_LAT_ROW, lat_row(cur->lat, cur->nlat, i),
                     base ? lat_row(base->lat, base->nlat, i) : NULL);
        struct cg_snap_arc *a = &out->arcs[out->narcs++];
        a->caller = arcs[i].caller;
        a->site = arcs[i].site;
        a->callee = arcs[i].callee;
        /* an inlined call has no call instruction: its place is where its
         * enter hook was called, its site */
        a->inlined = arcs[i].inlined;
        a->caller_inlined = arcs[i].caller_inlined;
        a->sampled = arcs[i].sampled;
        a->call_pc = a->site ? a->site - 1 : 0;
        a->count = count;
        a->incl = incl;
        a->runs = diff(cur->runs[i], base ? base->runs : NULL, bn, i);
        if (a->runs == 0 && count)
            a->runs = 1;
        if (count == 0 && incl != 0)
            out->continued++;
    }
    for (uint32_t i = 1; i < cur->nselfs; i++) {
        uint64_t cost = diff(cur->cost[i], base ? base->cost : NULL, bs, i);
        if (cost == 0)
            continue;
        struct cg_snap_self *s = &out->selfs[out->nselfs++];
        s->fn = selfs[i].fn;
        s->addr = selfs[i].addr;
        s->cost = cost;
        s->inlined = selfs[i].inlined;
    }
    if (parts_nodes(c, cur, base, out) != 0) {
        cg_snapshot_free(out);
        return -1;
    }
    out->depth = cur->depth;
    out->lost = cur->lost - (base && base->lost <= cur->lost ? base->lost : 0);
    out->unmatched_exits =
        cur->unmatched_exits - (base && base->unmatched_exits <= cur->unmatched_exits ? base->unmatched_exits : 0);
    out->left = cur->left - (base && base->left <= cur->left ? base->left : 0);
    out->jumped = cur->jumped - (base && base->jumped <= cur->jumped ? base->jumped : 0);
    out->inlined_calls = cur->inlined_calls -
                         (base && base->inlined_calls <= cur->inlined_calls ? base->inlined_calls : 0);
    out->frameless_exits = cur->frameless_exits -
                           (base && base->frameless_exits <= cur->frameless_exits ? base->frameless_exits : 0);
    out->takeback_ns = cur->takeback_ns - (base && base->takeback_ns <= cur->takeback_ns ? base->takeback_ns : 0);
    out->unplaced = cur->unplaced - (base && base->unplaced <= cur->unplaced ? base->unplaced : 0);
    out->ring_lost = cur->ring_lost - (base && base->ring_lost <= cur->ring_lost ? base->ring_lost : 0);
    out->ring_refused = cur->ring_refused;
    out->compensated = cur->comp - (base && base->comp <= cur->comp ? base->comp : 0);
    out->off_pending = cur->off_pending;
    return 0;
}

int cg_reading_copy(struct cg_reading *dst, const struct cg_reading *src)
{
    if (reading_fit(dst, src->narcs, src->nselfs, src->nnodes) || lat_fit(dst, src->nlat))
        return -1;
    if (src->nlat)
        memcpy(dst->lat, src->lat, (size_t)src->nlat * CG_LAT_ROW * sizeof *dst->lat);
    memcpy(dst->ncalls, src->ncalls, src->nnodes * sizeof *dst->ncalls);
    memcpy(dst->nincl, src->nincl, src->nnodes * sizeof *dst->nincl);
    memcpy(dst->nself, src->nself, src->nnodes * sizeof *dst->nself);
    dst->folded = src->folded;
    dst->beyond_paths = src->beyond_paths;
    memcpy(dst->count, src->count, src->narcs * sizeof *dst->count);
    memcpy(dst->incl, src->incl, src->narcs * sizeof *dst->incl);
    memcpy(dst->runs, src->runs, src->narcs * sizeof *dst->runs);
    memcpy(dst->cost, src->cost, src->nselfs * sizeof *dst->cost);
    dst->depth = src->depth;
    dst->lost = src->lost;
    dst->unmatched_exits = src->unmatched_exits;
    dst->left = src->left;
    dst->jumped = src->jumped;
    dst->inlined_calls = src->inlined_calls;
    dst->frameless_exits = src->frameless_exits;
    dst->takeback_ns = src->takeback_ns;
    dst->unplaced = src->unplaced;
    dst->ring_lost = src->ring_lost;
    dst->ring_refused = src->ring_refused;
    dst->comp = src->comp;
    dst->off_pending = src->off_pending;
    return 0;
}

static void raise_to(uint64_t *v, const uint64_t *floor, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] < floor[i])
            v[i] = floor[i];
}

void cg_reading_raise(struct cg_reading *cur, const struct cg_reading *base)
{
    uint32_t na = cur->narcs < base->narcs ? cur->narcs : base->narcs;
    uint32_t ns = cur->nselfs < base->nselfs ? cur->nselfs : base->nselfs;
    raise_to(cur->count, base->count, na);
    raise_to(cur->incl, base->incl, na);
    raise_to(cur->runs, base->runs, na);
    raise_to(cur->cost, base->cost, ns);
    uint32_t nn = cur->nnodes < base->nnodes ? cur->nnodes : base->nnodes;
    raise_to(cur->ncalls, base->ncalls, nn);
    raise_to(cur->nincl, base->nincl, nn);
    raise_to(cur->nself, base->nself, nn);
    uint32_t nl = cur->nlat < base->nlat ? cur->nlat : base->nlat;
    if (cur->lat && base->lat)
        raise_to(cur->lat, base->lat, nl * CG_LAT_ROW);
}

int cg_reading_skip(struct cg_reading *base, const struct cg_reading *now, const struct cg_reading *since)
{
    uint32_t bn = base->narcs, bs = base->nselfs, bnn = base->nnodes;
    if (reading_fit(base, now->narcs, now->nselfs, now->nnodes))
        return -1;
    for (uint32_t i = bnn; i < now->nnodes; i++)
        base->ncalls[i] = base->nincl[i] = base->nself[i] = 0;
    for (uint32_t i = 0; i < now->nnodes; i++) {
        base->ncalls[i] += diff(now->ncalls[i], since->ncalls, since->nnodes, i);
        base->nincl[i] += diff(now->nincl[i], since->nincl, since->nnodes, i);
        base->nself[i] += diff(now->nself[i], since->nself, since->nnodes, i);
    }
    base->folded += now->folded - (since->folded <= now->folded ? since->folded : now->folded);
    base->beyond_paths +=
        now->beyond_paths - (since->beyond_paths <= now->beyond_paths ? since->beyond_paths : now->beyond_paths);
    for (uint32_t i = bn; i < now->narcs; i++)
        base->count[i] = base->incl[i] = base->runs[i] = 0;
    for (uint32_t i = bs; i < now->nselfs; i++)
        base->cost[i] = 0;
    for (uint32_t i = 0; i < now->narcs; i++) {
        base->count[i] += diff(now->count[i], since->count, since->narcs, i);
        base->incl[i] += diff(now->incl[i], since->incl, since->narcs, i);
        base->runs[i] += diff(now->runs[i], since->runs, since->narcs, i);
    }
    for (uint32_t i = 0; i < now->nselfs; i++)
        base->cost[i] += diff(now->cost[i], since->cost, since->nselfs, i);
    /* the histograms: what ended meanwhile goes to the base; a longer call
     * meanwhile is the base's longest */
    uint32_t bl = base->nlat;
    if (now->nlat > bl) {
        if (lat_fit(base, now->nlat))
            return -1;
        memset(base->lat + (size_t)bl * CG_LAT_ROW, 0, (size_t)(now->nlat - bl) * CG_LAT_ROW * sizeof *base->lat);
    }
    for (uint32_t i = 0; i < now->nlat; i++) {
        uint64_t *b = base->lat + (size_t)i * CG_LAT_ROW;
        const uint64_t *n = now->lat + (size_t)i * CG_LAT_ROW, *s0 = lat_row(since->lat, since->nlat, i);
        for (unsigned k = 0; k < CG_LAT_MAX; k++) {
            uint64_t was = s0 ? s0[k] : 0;
            b[k] += n[k] > was ? n[k] - was : 0;
        }
        if (n[CG_LAT_MAX] > (s0 ? s0[CG_LAT_MAX] : 0) && n[CG_LAT_MAX] > b[CG_LAT_MAX])
            b[CG_LAT_MAX] = n[CG_LAT_MAX];
    }
    base->lost += now->lost - (since->lost <= now->lost ? since->lost : now->lost);
    base->unmatched_exits += now->unmatched_exits -
                             (since->unmatched_exits <= now->unmatched_exits ? since->unmatched_exits : now->unmatched_exits);
    base->left += now->left - (since->left <= now->left ? since->left : now->left);
    base->jumped += now->jumped - (since->jumped <= now->jumped ? since->jumped : now->jumped);
    base->inlined_calls += now->inlined_calls -
                           (since->inlined_calls <= now->inlined_calls ? since->inlined_calls : now->inlined_calls);
    base->frameless_exits += now->frameless_exits - (since->frameless_exits <= now->frameless_exits
                                                         ? since->frameless_exits
                                                         : now->frameless_exits);
    base->unplaced += now->unplaced - (since->unplaced <= now->unplaced ? since->unplaced : now->unplaced);
    base->ring_lost += now->ring_lost - (since->ring_lost <= now->ring_lost ? since->ring_lost : now->ring_lost);
    base->ring_refused = now->ring_refused;
    base->comp += now->comp - (since->comp <= now->comp ? since->comp : now->comp);
    return 0;
}

int cg_reading_snapshot(const struct cg_costs *c, uint64_t now, struct cg_snapshot *out)
{
    struct cg_reading t;
    memset(&t, 0, sizeof t);
    int rc = cg_reading_take(c, now, &t) == 0 ? cg_reading_part(c, &t, NULL, out) : -1;
    if (rc)
        memset(out, 0, sizeof *out);
    cg_reading_free(&t);
    return rc;
}

