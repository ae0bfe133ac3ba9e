/* The hooks' two paths against each other (fastpath.h, generalpath.c). The fast
 * path is a specialised copy of cg_costs_enter and cg_costs_pop; it must
 * leave the tables exactly as the general path does, or give up before it
 * changes anything. Two threads' states get the same random sequences of
 * hook events, one with the fast mode off (every hook takes the general
 * path), the other as the hooks run with the TSC or the sampled clock, and
 * every table is compared: frames, arcs, self entries and the counters of
 * repairs (frames left, unmatched exits, lost events).
 *
 * The sequences are those of real programs, on a simulated stack whose
 * memory the runtime reads (cg_real_call_below): real calls (their return
 * address on the stack), calls inlined into their caller (same stack
 * pointer, the host's call site, their own hook's return address), inlined
 * calls below the host's stack pointer (gcc's deferred pop), recursion from
 * the host's own call instruction, exit hooks called as tail calls from
 * above the frame, frames left without exit (longjmp), exits that match no
 * frame, signal handlers whose hooks arrive while a hook runs (deferred,
 * then replayed), stacks deeper than the first shadow stack, and filters
 * (a function left out, CGPROF_THROTTLE). With the sampled clock, times are
 * compared too; with the TSC (when the machine has an invariant one), the
 * counts and structure only, since the two threads read the clock at
 * different moments.
 *
 * CGPROF_FASTPATH_SEEDS=N runs N sequences of the sampled clock instead of
 * 6; CGPROF_FASTPATH_FULL=1 compares every table after every event (else
 * now and then: compare_all_now); CGPROF_FASTPATH_DEBUG=1 prints both
 * stacks' top frames where they part. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The bodies take the stack pointer and return address they are given. */
#define CG_FAST_RET(ret) (ret)
#define CG_FAST_SP(sp) (sp)
#include "fastpath.h"

#include "addrset.h"
#include "clock.h"
#include "costs.h"
#include "generalpath.h"
#include "proc.h"
#include "thread.h"

/* ---- the general path given up to, counted (-Wl,--wrap) ------------------ */

static unsigned long held_calls, slow_calls;

void __real_cg_general_hook_held(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                 int enter);
void __wrap_cg_general_hook_held(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                                 int enter)
{
    held_calls++;
    __real_cg_general_hook_held(t, fn, site, sp, code, enter);
}

static void slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter)
{
    slow_calls++;
    cg_general_hook(t, fn, site, sp, code, enter);
}

/* ---- two threads' states ---------------------------------------------------- */

struct side {
    struct cg_thread *t;
    struct cg_filter filter;
    int mode;
};

static void side_init(struct side *s, int mode, int throttle, uint32_t paths)
{
    s->t = calloc(1, sizeof *s->t);
    assert_non_null(s->t);
    assert_int_equal(cg_costs_init(&s->t->costs, paths), 0);
    s->t->costs.vclock = &s->t->vclock;
    /* overhead compensation's parts (CGPROF_COMPENSATE): with the TSC, both
     * paths subtract them; with the sampled clock, neither */
    s->t->costs.comp_pre[1] = s->t->costs.comp_gpre[1] = 7;
    s->t->costs.comp_post[1] = s->t->costs.comp_gpost[1] = 6;
    s->t->costs.comp_pre[0] = s->t->costs.comp_gpre[0] = 5;
    s->t->costs.comp_post[0] = s->t->costs.comp_gpost[0] = 8;
    s->mode = mode;
    memset(&s->filter, 0, sizeof s->filter);
    struct cg_addrset *skip = cg_addrset_new(16);
    assert_non_null(skip);
    s->filter.skip = skip;
    s->filter.throttled = cg_addrset_new(64);
    assert_non_null(s->filter.throttled);
    s->filter.throttle_n = throttle ? 25 : 0;
    s->filter.throttle_ns = 400;
    s->t->costs.filter = &s->filter;
    s->t->costs.throttle_n = s->filter.throttle_n;
}

static void side_free(struct side *s)
{
    cg_costs_destroy(&s->t->costs);
    cg_addrset_free((struct cg_addrset *)s->filter.skip);
    cg_addrset_free(s->filter.throttled);
    free(s->t);
}

static void hook(struct side *s, int enter, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t ret)
{
    if (enter)
        cg_hook_enter_body(s->t, fn, site, sp, ret, s->mode, slow);
    else
        cg_hook_exit_body(s->t, fn, site, sp, ret, s->mode, slow);
}

/* ---- the comparison ----------------------------------------------------------- */

static char where[160];

#define SAME(field)                                                                                          \
    do {                                                                                                     \
        if ((a)->field != (b)->field) {                                                                      \
            fail_msg("%s: %s differs: general %llu, fast %llu", where, #field,                             \
                     (unsigned long long)(a)->field, (unsigned long long)(b)->field);                       \
        }                                                                                                    \
    } while (0)

static void compare(const struct side *sa, const struct side *sb, int times, int all)
{
    const struct cg_costs *a = &sa->t->costs, *b = &sb->t->costs;
    if (getenv("CGPROF_FASTPATH_DEBUG") && (a->narcs != b->narcs || a->depth != b->depth)) {
        const struct cg_arc *x = &a->arcs[a->narcs - 1];
        fprintf(stderr, "A last arc: caller %#lx site %#lx callee %#lx inlined %u state %u\n", (unsigned long)x->caller,
                (unsigned long)x->site, (unsigned long)x->callee, x->inlined, x->state);
        for (uint32_t i = a->depth > 4 ? a->depth - 4 : 0; i < a->depth; i++)
            fprintf(stderr, "A frame %u fn %#lx sp %#lx arc %u state %u\n", i, (unsigned long)a->frames[i].fn,
                    (unsigned long)a->frames[i].sp, a->frames[i].arc, a->frames[i].state);
        for (uint32_t i = b->depth > 4 ? b->depth - 4 : 0; i < b->depth; i++)
            fprintf(stderr, "B frame %u fn %#lx sp %#lx arc %u state %u\n", i, (unsigned long)b->frames[i].fn,
                    (unsigned long)b->frames[i].sp, b->frames[i].arc, b->frames[i].state);
        const struct cg_arc *y = &b->arcs[b->frames[b->depth - 1].arc];
        fprintf(stderr, "B top arc: caller %#lx site %#lx callee %#lx inlined %u\n", (unsigned long)y->caller,
                (unsigned long)y->site, (unsigned long)y->callee, y->inlined);
    }
    SAME(depth);
    SAME(narcs);
    SAME(nselfs);
    SAME(lost);
    SAME(unmatched_exits);
    SAME(left);
    SAME(jumped);
    SAME(overflow);
    SAME(nnodes);
    SAME(comp_pending); /* set by the last hook's kind, on either path */
    if (times)
        SAME(comp); /* the sampled clock: never compensated */
    SAME(folded);
    SAME(beyond_paths);
    {
        const struct cg_thread *ta = sa->t, *tb = sb->t;
        if (ta->ndeferred != tb->ndeferred || ta->guard != tb->guard)
            fail_msg("%s: guard or deferred events differ", where);
        if (times && ta->nhooks != tb->nhooks)
            fail_msg("%s: nhooks differs: %llu, %llu", where, (unsigned long long)ta->nhooks,
                     (unsigned long long)tb->nhooks);
    }
    for (uint32_t i = all || a->depth == 0 ? 0 : a->depth - 1; i < a->depth; i++) {
        const struct cg_frame *fa = &a->frames[i], *fb = &b->frames[i];
        if (fa->fn != fb->fn || fa->sp != fb->sp || fa->arc != fb->arc || fa->self != fb->self ||
            fa->last_arc != fb->last_arc || fa->state != fb->state || fa->node != fb->node ||
            (times && (fa->t_enter != fb->t_enter || fa->t_last != fb->t_last)))
            fail_msg("%s: frame %u differs (fn %#lx/%#lx arc %u/%u self %u/%u last_arc %u/%u state %u/%u "
                     "t_enter %llu/%llu t_last %llu/%llu)",
                     where, i, (unsigned long)fa->fn, (unsigned long)fb->fn, fa->arc, fb->arc, fa->self, fb->self,
                     fa->last_arc, fb->last_arc, fa->state, fb->state, (unsigned long long)fa->t_enter,
                     (unsigned long long)fb->t_enter, (unsigned long long)fa->t_last,
                     (unsigned long long)fb->t_last);
    }
    if (!all)
        return;
    for (uint32_t i = 0; i < a->narcs; i++) {
        const struct cg_arc *x = &a->arcs[i], *y = &b->arcs[i];
        if (x->caller != y->caller || x->site != y->site || x->callee != y->callee || x->count != y->count ||
            x->runs != y->runs || x->entry_self != y->entry_self || x->ret_self != y->ret_self ||
            x->sampled != y->sampled || x->inlined != y->inlined || x->caller_inlined != y->caller_inlined ||
            x->state != y->state || x->code_off != y->code_off || (times && x->incl != y->incl))
            fail_msg("%s: arc %u differs (callee %#lx/%#lx count %llu/%llu runs %llu/%llu incl %llu/%llu "
                     "state %u/%u)",
                     where, i, (unsigned long)x->callee, (unsigned long)y->callee, (unsigned long long)x->count,
                     (unsigned long long)y->count, (unsigned long long)x->runs, (unsigned long long)y->runs,
                     (unsigned long long)x->incl, (unsigned long long)y->incl, x->state, y->state);
    }
    /* the histograms: the same calls ended on each arc, in the same buckets
     * when the times are the same */
    if ((a->lat == NULL) != (b->lat == NULL))
        fail_msg("%s: one side keeps latency histograms, the other not", where);
    for (uint32_t i = 0; a->lat && i < a->narcs; i++) {
        const uint64_t *x = a->lat + (size_t)i * CG_LAT_ROW, *y = b->lat + (size_t)i * CG_LAT_ROW;
        uint64_t nx = 0, ny = 0;
        for (unsigned k = 0; k < CG_LAT_BUCKETS; k++) {
            nx += x[k];
            ny += y[k];
            if (times && x[k] != y[k])
                fail_msg("%s: arc %u's bucket %u differs: %llu, %llu", where, i, k, (unsigned long long)x[k],
                         (unsigned long long)y[k]);
        }
        if (nx != ny || (times && x[CG_LAT_MAX] != y[CG_LAT_MAX]))
            fail_msg("%s: arc %u's histogram differs: %llu, %llu calls", where, i, (unsigned long long)nx,
                     (unsigned long long)ny);
    }
    for (uint32_t i = 0; i < a->nnodes; i++) {
        const struct cg_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->fn != y->fn || x->parent != y->parent || x->calls != y->calls || x->active != y->active ||
            (times && (x->incl != y->incl || x->self != y->self)))
            fail_msg("%s: node %u differs (fn %#lx/%#lx parent %u/%u calls %llu/%llu active %u/%u incl %llu/%llu "
                     "self %llu/%llu)",
                     where, i, (unsigned long)x->fn, (unsigned long)y->fn, x->parent, y->parent,
                     (unsigned long long)x->calls, (unsigned long long)y->calls, x->active, y->active,
                     (unsigned long long)x->incl, (unsigned long long)y->incl, (unsigned long long)x->self,
                     (unsigned long long)y->self);
    }
    /* The paths' self time is the self entries', charged at the same
     * moments: the two sums are equal, sinks included. */
    if (a->nodes && times) {
        uint64_t nodes_self = 0, selfs = 0;
        for (uint32_t i = 0; i < a->nnodes; i++)
            nodes_self += a->nodes[i].self;
        for (uint32_t i = 0; i < a->nselfs; i++)
            selfs += a->selfs[i].cost;
        if (nodes_self != selfs)
            fail_msg("%s: the paths' self time %llu is not the self entries' %llu", where,
                     (unsigned long long)nodes_self, (unsigned long long)selfs);
    }
    for (uint32_t i = 0; i < a->nselfs; i++) {
        const struct cg_self *x = &a->selfs[i], *y = &b->selfs[i];
        if (x->fn != y->fn || x->addr != y->addr || x->inlined != y->inlined || (times && x->cost != y->cost))
            fail_msg("%s: self entry %u differs (fn %#lx/%#lx addr %#lx/%#lx cost %llu/%llu)", where, i,
                     (unsigned long)x->fn, (unsigned long)y->fn, (unsigned long)x->addr, (unsigned long)y->addr,
                     (unsigned long long)x->cost, (unsigned long long)y->cost);
    }
}

/* ---- the program simulated ---------------------------------------------------- */

#define NFN 10
#define FN(i) ((uintptr_t)0x400000 + (uintptr_t)(i) * 0x1000)
#define ROOT_SITE ((uintptr_t)0x7f0000009000u)
#define HANDLER ((uintptr_t)0x500000)
#define SIGRETURN ((uintptr_t)0x7f000000a000u)
#define PERIOD 1000

struct mframe {
    uintptr_t fn, sp, site, host_fn, host_site;
    int inlined;
};

static uintptr_t stack_top;
static struct mframe *model;
static unsigned mdepth;
#define MAX_MODEL 4096

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

struct run {
    struct side *a, *b;
    int times;   /* the clock is the sampled one: times compared */
    unsigned long events, fast_ok;
    unsigned long next_all; /* the event after which every table is compared next */
};

/* Every entry of every table, compared at every 16th event as they once
 * were, made the test quadratic: the call paths grow to tens of thousands
 * of nodes, and the comparison took 94% of its time (11 s, 40 s under
 * AddressSanitizer, beyond its limit on a loaded machine). A difference
 * stays in the tables, so a later comparison finds it all the same: the
 * whole comparison comes after at least 16 events and at least an eighth
 * of the tables' entries (a latency histogram's buckets each one), which
 * keeps its cost per event bounded.
 * CGPROF_FASTPATH_FULL=1 compares everything after every event, to find
 * the first event where the paths part. */
static int compare_all_now(struct run *r)
{
    static int every = -1;
    if (every < 0)
        every = getenv("CGPROF_FASTPATH_FULL") != NULL;
    if (!every && r->events < r->next_all)
        return 0;
    const struct cg_costs *c = &r->a->t->costs;
    unsigned long entries = (unsigned long)c->narcs * (c->lat ? 1 + CG_LAT_ROW : 1) + c->nnodes + c->nselfs + c->depth;
    r->next_all = r->events + 16 + entries / 8;
    return 1;
}

/* One hook event on both sides, then the tables compared. */
static void event(struct run *r, int enter, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t ret)
{
    if (r->times && rnd(3) == 0) {
        r->a->t->vclock += PERIOD;
        r->b->t->vclock += PERIOD;
    }
    hook(r->a, enter, fn, site, sp, ret);
    unsigned long slow0 = slow_calls, held0 = held_calls;
    hook(r->b, enter, fn, site, sp, ret);
    if (slow_calls == slow0 && held_calls == held0)
        r->fast_ok++;
    r->events++;
    snprintf(where, sizeof where, "event %lu (%s %#lx site %#lx sp %#lx)", r->events, enter ? "enter" : "exit",
             (unsigned long)fn, (unsigned long)site, (unsigned long)sp);
    /* The counts and the top frame at every event, everything now and
     * then (compare_all_now). */
    compare(r->a, r->b, r->times, compare_all_now(r));
}

static uintptr_t top_sp(void)
{
    return mdepth ? model[mdepth - 1].sp : stack_top;
}

static void push(uintptr_t fn, uintptr_t sp, uintptr_t site, int inlined)
{
    struct mframe *f = &model[mdepth];
    f->fn = fn;
    f->sp = sp;
    f->site = site;
    f->inlined = inlined;
    if (inlined) {
        f->host_fn = model[mdepth - 1].host_fn;
        f->host_site = model[mdepth - 1].host_site;
    } else {
        f->host_fn = fn;
        f->host_site = site;
    }
    mdepth++;
}

/* A real call: its frame below, its return address on the stack. */
static void real_call(struct run *r, uintptr_t fn, uintptr_t site)
{
    uintptr_t sp = top_sp() - 32 - 16 * rnd(rnd(8) == 0 ? 200 : 12);
    memset((void *)sp, 0, top_sp() - sp);
    *(uintptr_t *)(sp + sizeof(uintptr_t)) = site;
    push(fn, sp, site, 0);
    event(r, 1, fn, site, sp, fn + 8);
}

/* A call inlined into the top frame: at its sp, or just below it (the
 * host's pushed arguments), with no return address of its own. */
static void inlined_call(struct run *r, uintptr_t fn, int below)
{
    const struct mframe *top = &model[mdepth - 1];
    uintptr_t sp = top->sp;
    if (below) {
        sp -= 16;
        memset((void *)sp, 0, 16);
    }
    /* its enter hook's place in the host's code: one place is one inlined
     * call of one function */
    uintptr_t ret = top->host_fn + 0x200 + (fn - FN(0)) / 0x1000 * 0x40 + 0x10 * rnd(4);
    uintptr_t site = top->host_site;
    push(fn, sp, site, 1);
    event(r, 1, fn, site, sp, ret);
}

static void ret_from_top(struct run *r, int tail)
{
    struct mframe f = model[--mdepth];
    uintptr_t sp = f.sp;
    if (tail && !f.inlined && mdepth > 0 && top_sp() > f.sp + 16)
        sp = f.sp + 16; /* the exit hook as a tail call, the frame gone */
    uintptr_t ret = f.inlined ? f.host_fn + 0x300 + 0x10 * rnd(2) : f.fn + 0x40;
    event(r, 0, f.fn, f.site, sp, ret);
}

static void step(struct run *r)
{
    if (mdepth == 0) {
        real_call(r, FN(0), ROOT_SITE);
        return;
    }
    const struct mframe *top = &model[mdepth - 1];
    uint32_t k = rnd(100);
    if (mdepth >= MAX_MODEL - 8)
        k = 50;
    if (k < 30) {
        /* a real call from one of the caller's call sites; FN(9) is left out */
        uint32_t callee = rnd(NFN);
        real_call(r, FN(callee), top->host_fn + 0x40 + 0x10 * rnd(4));
    } else if (k < 40) {
        inlined_call(r, FN(rnd(NFN)), 0);
    } else if (k < 43) {
        inlined_call(r, FN(rnd(NFN)), 1);
    } else if (k < 45 && top->inlined) {
        /* recursion from the instruction that made the host's own call */
        real_call(r, top->host_fn, top->host_site);
    } else if (k < 80) {
        ret_from_top(r, rnd(4) == 0);
    } else if (k < 82 && mdepth > 2) {
        /* a longjmp: frames left without their exits */
        unsigned n = 1 + rnd(mdepth - 1 < 3 ? mdepth - 1 : 3);
        mdepth -= n;
    } else if (k < 84) {
        /* an exit that matches no frame */
        event(r, 0, FN(rnd(NFN)) + 0x800, top->site, top->sp, 0x999);
    } else if (k < 86) {
        /* a signal handler whose hooks arrive while a hook runs: deferred
         * on both sides, replayed when the interrupted hook ends */
        r->a->t->guard = r->b->t->guard = CG_GUARD_HOOK;
        uintptr_t hsp = top->sp - 4096;
        event(r, 1, HANDLER, SIGRETURN, hsp, HANDLER + 8);
        if (rnd(2))
            event(r, 1, FN(rnd(NFN)), HANDLER + 0x40, hsp - 64, 0);
        if (rnd(2))
            event(r, 0, FN(rnd(NFN)), HANDLER + 0x40, hsp - 64, 0);
        event(r, 0, HANDLER, SIGRETURN, hsp, HANDLER + 0x40);
        cg_guard_release(r->a->t);
        cg_guard_release(r->b->t);
        snprintf(where, sizeof where, "after a deferred handler, event %lu", r->events);
        compare(r->a, r->b, r->times, 1);
    } else if (k < 87) {
        /* a deep recursion: beyond the first shadow stack's 1024 frames */
        unsigned n = 1100 + rnd(200);
        if (mdepth + n < MAX_MODEL - 8)
            for (unsigned i = 0; i < n; i++)
                real_call(r, FN(3), model[mdepth - 1].host_fn + 0x40);
    } else {
        /* a signal handler between two hooks: an ordinary call from the
         * kernel's trampoline */
        uintptr_t hsp = top->sp - 4096;
        memset((void *)hsp, 0, 64);
        push(HANDLER, hsp, SIGRETURN, 0);
        event(r, 1, HANDLER, SIGRETURN, hsp, HANDLER + 8);
    }
}

/* paths: the call paths' bound, 0 for none (CGPROF_PATHS=0); lat: latency
 * histograms kept (CGPROF_LATENCY) */
static void run_sequence(int mode, uint64_t seed, unsigned long nevents, int throttle, uint32_t paths, int lat)
{
    struct side a, b;
    side_init(&a, CG_FAST_NONE, throttle, paths);
    side_init(&b, mode, throttle, paths);
    if (lat) {
        assert_int_equal(cg_costs_latency_on(&a.t->costs), 0);
        assert_int_equal(cg_costs_latency_on(&b.t->costs), 0);
    }
    /* FN(9): a function left out (CGPROF_SKIP) on both sides */
    assert_int_equal(cg_addrset_add((struct cg_addrset *)a.filter.skip, FN(9)), 1);
    assert_int_equal(cg_addrset_add((struct cg_addrset *)b.filter.skip, FN(9)), 1);
    struct run r = { &a, &b, mode == CG_FAST_SAMPLE, 0, 0, 0 };
    rng = seed;
    mdepth = 0;
    while (r.events < nevents)
        step(&r);
    /* The fast path was taken often (half the events, with these seeds): a
     * sequence that sent everything to the general path would prove
     * nothing. */
    printf("seed %llu, %s clock: %lu events, %lu by the fast path, %u arcs, %u path nodes (bound %u, %llu "
           "folded, %llu beyond)\n",
           (unsigned long long)seed, mode == CG_FAST_SAMPLE ? "sampled" : "TSC", r.events, r.fast_ok,
           a.t->costs.narcs, a.t->costs.nnodes, paths, (unsigned long long)a.t->costs.folded,
           (unsigned long long)a.t->costs.beyond_paths);
    snprintf(where, sizeof where, "the end");
    compare(&a, &b, r.times, 1);
    assert_true(r.fast_ok * 3 > r.events);
    if (cg_opts.inlined == CG_INLINED_COUNT) {
        assert_true(a.t->costs.left > 0 && a.t->costs.unmatched_exits > 0);
    } else {
        /* folded calls dropped by both paths, and the exits of calls that
         * keep no frame (fold.h); frames still left by jumps */
        assert_true(a.t->costs.inlined_calls > 0 && a.t->costs.frameless_exits > 0 && a.t->costs.left > 0);
        assert_int_equal(a.t->costs.inlined_calls, b.t->costs.inlined_calls);
        assert_int_equal(a.t->costs.frameless_exits, b.t->costs.frameless_exits);
    }
    side_free(&a);
    side_free(&b);
}

static void test_sampled_clock(void **state)
{
    (void)state;
    cg_sampling = 1;
    cg_collecting = 1;
    /* CGPROF_FASTPATH_SEEDS=N: more sequences, to search for a difference */
    const char *more = getenv("CGPROF_FASTPATH_SEEDS");
    uint64_t nseeds = more ? strtoull(more, NULL, 10) : 6;
    /* paths off, on, and on with a bound small enough to be reached */
    static const uint32_t paths[3] = { 0, 1u << 18, 64 };
    /* CGPROF_INLINED=count (every inlined call a frame) and fold (none,
     * the default) */
    for (int fold = 0; fold <= 1; fold++) {
        cg_opts.inlined = fold ? CG_INLINED_FOLD : CG_INLINED_COUNT;
        for (uint64_t seed = 1; seed <= nseeds; seed++)
            run_sequence(CG_FAST_SAMPLE, seed * 0x9e3779b97f4a7c15u, 60000, seed % 2, paths[seed % 3], seed % 4 < 2);
    }
}

static void test_tsc_clock(void **state)
{
    (void)state;
    cg_sampling = 0;
    cg_collecting = 1;
    const char *why = NULL;
    if (cg_clock_init(CG_CLOCK_TSC, &why) != CG_CLOCK_TSC || !cg_clock_use_tsc) {
        printf("no invariant TSC here (%s): the sampled clock's runs cover the paths\n", why ? why : "?");
        skip();
    }
    for (int fold = 0; fold <= 1; fold++) {
        cg_opts.inlined = fold ? CG_INLINED_FOLD : CG_INLINED_COUNT;
        for (uint64_t seed = 11; seed <= 13; seed++)
            run_sequence(CG_FAST_TSC, seed * 0x9e3779b97f4a7c15u, 60000, 0, seed == 12 ? 1u << 18 : 0, seed % 2);
    }
}

int main(void)
{
    size_t bytes = (size_t)64 << 20;
    void *stack = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED)
        return 1;
    stack_top = (uintptr_t)stack + bytes - 4096;
    model = calloc(MAX_MODEL, sizeof *model);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampled_clock),
        cmocka_unit_test(test_tsc_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
