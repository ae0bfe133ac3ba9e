/* Calls that keep no frame: see fold.h and docs/internals/takeback.md. */
#include "fold.h"

#include "clock.h"
#include "costs.h"
#include "proc.h"
#include "takeback.h"

int cg_fold_paused;
uint64_t cg_fold_paused_since;

static int fast_mode_was;

void cg_fold_collect(int on)
{
    if ((!on) == cg_fold_paused)
        return;
    if (!on) {
        cg_fold_paused_since = cg_clock_now();
        __atomic_store_n(&cg_fold_paused, 1, __ATOMIC_SEQ_CST);
        fast_mode_was = cg_fast_mode;
        __atomic_store_n(&cg_fast_mode, CG_FAST_NONE, __ATOMIC_SEQ_CST);
        return;
    }
    __atomic_store_n(&cg_fold_paused, 0, __ATOMIC_SEQ_CST);
    cg_takeback_restore(CG_TB_PAUSED);
    __atomic_store_n(&cg_fast_mode, fast_mode_was, __ATOMIC_SEQ_CST);
}

/* The runtime's own time in a hook, taking a site back (a decoding, a
 * lookup, two mprotect calls: microseconds, the first time a range is
 * seen), is left out of the thread's times as the hooks' own time is:
 * its clock goes back by it (struct cg_costs, comp). Sampled time leaves
 * out the samples in the hooks by itself. */
static uint64_t own_time_begin(void)
{
    return cg_sampling || !cg_opts.compensate ? 0 : cg_clock_now();
}

static void own_time_end(struct cg_thread *t, uint64_t t0, int taking_back)
{
    if (!t0)
        return; /* sampled, or the times as the clock reads them (CGPROF_COMPENSATE=0) */
    uint64_t now = cg_clock_now();
    if (now > t0) {
        __atomic_store_n(&t->costs.comp, t->costs.comp + (now - t0), __ATOMIC_RELAXED);
        /* said apart when it is for taking hook calls back: not
         * CGPROF_INLINED=count's question (inlined_below), which takes
         * none back */
        if (taking_back)
            __atomic_store_n(&t->costs.takeback_ns, t->costs.takeback_ns + (now - t0), __ATOMIC_RELAXED);
    }
}

int cg_fold_take(struct cg_thread *t, uintptr_t fn, uintptr_t code, int enter, int reason)
{
    uint64_t t0 = own_time_begin();
    int rc = cg_takeback_call(fn, code, enter, reason);
    own_time_end(t, t0, 1);
    return rc;
}

static CG_INLINE int own_of(struct cg_thread *t, uintptr_t fn, uintptr_t code)
{
    /* kept per thread (thread.h, own_memo): 1 and 0 are for good, -1 (not
     * known: no unwind tables, the lock busy) is asked again */
    unsigned epoch = __atomic_load_n(&cg_takeback_epoch, __ATOMIC_ACQUIRE);
    __typeof__(t->own_memo[0]) *m = &t->own_memo[((code >> 4) ^ (code >> 11)) & (CG_OWN_MEMO - 1)];
    if (m->code == code && m->fn == fn && m->epoch == epoch && code)
        return m->own;
    uint64_t t0 = own_time_begin();
    int rc = cg_takeback_own(fn, code);
    own_time_end(t, t0, cg_opts.inlined == CG_INLINED_FOLD);
    if (rc >= 0) {
        m->code = code;
        m->fn = fn;
        m->epoch = epoch;
        m->own = rc;
    }
    return rc;
}

static void take_exit(struct cg_thread *t, uintptr_t fn, uintptr_t code, int reason, uint64_t since)
{
    uint64_t t0 = own_time_begin();
    cg_takeback_exit(fn, code, reason, since);
    own_time_end(t, t0, 1);
}

/* Whether fn is left out by the filters (CGPROF_SKIP*, or throttled). */
static int filtered(const struct cg_costs *c, uintptr_t fn)
{
    const struct cg_filter *f = c->filter;
    return f && (cg_addrset_has(f->skip, fn) || (f->throttle_n && cg_addrset_has(f->throttled, fn)));
}

/* The stack-pointer rule of cg_costs_enter, on a stack re-synchronised for
 * this entry: the call runs in the top frame's frame (its host's code). */
static int sp_inlined(const struct cg_costs *c, uintptr_t site, uintptr_t sp)
{
    if (c->depth == 0)
        return 0;
    const struct cg_frame *top = &c->frames[c->depth - 1];
    return top->sp == sp || (top->sp > sp && site == top->host_site && !cg_real_call_below(c, site, sp));
}

/* An arc the fast path finds for this call and drops it by (its hook
 * calls come again where they could not be taken back): keyed as the fast
 * path looks it up, by the hook's return address for a call in the top
 * frame's frame, by the call site otherwise. An inlined call anywhere else
 * (a little below the top frame, or with no host frame) has none: its
 * call site may also make a real call of the same function (a recursion
 * from the instruction that made the host's own call), which the general
 * path alone tells apart. */
static void drop_arc(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int kind)
{
    const struct cg_frame *top = c->depth ? &c->frames[c->depth - 1] : NULL;
    int at_top = top && top->sp == sp;
    if (kind == CG_ARC_FOLDED && !at_top)
        return;
    cg_costs_drop_arc(c, top ? top->fn : 0, at_top ? code : site, fn, at_top, kind);
}

/* CGPROF_INLINED=count: whether a call that the stack-pointer rule takes
 * for a real one, below the top frame, is an inlined call all the same: its
 * enter hook is not the first call of its machine function (the unwind
 * tables' rule, as for folding). Two shapes the stack alone cannot tell
 * (issue 27): gcc's split part of a function (fn.part.0: its head inlined
 * into the callers, its tail a function of its own, with a frame of its
 * own and no enter hook, the calls inlined into it given the part's
 * return address as their call site), and a host whose frame grows after
 * its enter hook (jq's jv_load_file: a variable-length array of 4 KiB
 * between its frame and the hooks of jv_is_valid inlined into it, with the
 * host's own call site, beyond CG_INLINED_REACH). Asked on the general path
 * only; the arc it makes is keyed by the call's place, and these calls
 * stay on the general path (the fast path's lookup by site misses it and
 * gives up: fastpath.h says why it does not look further). */
static int inlined_below(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code,
                         uint64_t now, int resync)
{
    struct cg_costs *c = &t->costs;
    if (resync)
        cg_costs_resync(c, fn, site, sp, code, 1, now);
    if (c->depth == 0 || c->frames[c->depth - 1].sp <= sp || sp_inlined(c, site, sp))
        return 0;
    return own_of(t, fn, code) == 0;
}

static int enter(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, uint64_t now,
                 int resync)
{
    struct cg_costs *c = &t->costs;
    if (cg_fold_paused) {
        cg_fold_take(t, fn, code, 1, CG_TB_PAUSED);
        return CG_FOLD_DROPPED;
    }
    if (filtered(c, fn)) {
        cg_fold_take(t, fn, code, 1, CG_TB_FILTERED);
        drop_arc(c, fn, site, sp, code, CG_ARC_DROPPED);
        return CG_FOLD_DROPPED;
    }
    if (cg_opts.inlined != CG_INLINED_FOLD)
        return inlined_below(t, fn, site, sp, code, now, resync) ? CG_FOLD_INLINED_BELOW : CG_FOLD_KEPT;
    int own = own_of(t, fn, code);
    if (resync)
        cg_costs_resync(c, fn, site, sp, code, 1, now);
    if (own != 0 && !sp_inlined(c, site, sp))
        return CG_FOLD_KEPT;
    /* A copy of the top frame's own function inlined into its code (gcc
     * inlines recursion into itself): its exit is one of the same
     * function, which the frame counts to tell from its own. Its hook
     * calls are never taken back (takeback.c: in a function's own code),
     * so that each enter counted has its exit. */
    if (c->depth && c->frames[c->depth - 1].fn == fn)
        c->frames[c->depth - 1].folded_self++;
    else
        cg_fold_take(t, fn, code, 1, CG_TB_INLINED);
    drop_arc(c, fn, site, sp, code, CG_ARC_FOLDED);
    cg_costs_count(&c->inlined_calls, 1);
    return CG_FOLD_DROPPED;
}

static int exit_(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, uint64_t now,
                 int resync)
{
    struct cg_costs *c = &t->costs;
    int paused = cg_fold_paused, filt = filtered(c, fn);
    if (!paused && !filt && cg_opts.inlined != CG_INLINED_FOLD)
        return CG_FOLD_KEPT;
    if (resync)
        cg_costs_resync(c, fn, site, sp, code, 0, now);
    if (c->overflow)
        return CG_FOLD_KEPT;
    if (c->depth > 0) {
        struct cg_frame *top = &c->frames[c->depth - 1];
        /* the exit of a copy of the frame's function inlined into it */
        if (top->fn == fn && top->folded_self && sp <= top->sp) {
            top->folded_self--;
            cg_costs_count(&c->frameless_exits, 1);
            return CG_FOLD_DROPPED;
        }
        /* its own frame; or one under the top frame's code, which the
         * frames between were left without their exits (a repair) */
        if (top->fn == fn || sp > top->sp)
            return CG_FOLD_KEPT;
    }
    int reason = paused ? CG_TB_PAUSED : filt ? CG_TB_FILTERED : CG_TB_INLINED;
    uint64_t since = paused ? cg_fold_paused_since : filt ? __atomic_load_n(&c->filter->throttled_at, __ATOMIC_RELAXED) : 0;
    take_exit(t, fn, code, reason, since);
    cg_costs_count(&c->frameless_exits, 1);
    return CG_FOLD_DROPPED;
}

int cg_fold_event(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int enter_,
                  uint64_t now, int resync)
{
    if (t->own_calls)
        return CG_FOLD_KEPT;
    return enter_ ? enter(t, fn, site, sp, code, now, resync) : exit_(t, fn, site, sp, code, now, resync);
}
