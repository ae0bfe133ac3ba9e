/* Taking hook calls back: the policy (see takeback.h and
 * docs/internals/takeback.md): which recorded site may be changed, for
 * which reason and when (an enter inlined, an exit no frame can still
 * need, collection off), the change itself, putting sites back, and the
 * counters. The record of the sites is registry.c's; everything here runs
 * under its lock. */
#include "takeback.h"

#include <errno.h>
#include <sched.h>

#include "clock.h"
#include "cpu.h"
#include "patch.h"
#include "registry.h"

static int enabled, untrusted_child;

void cg_takeback_init(uintptr_t enter, uintptr_t exit, int on)
{
    cg_reg_init(enter, exit);
    enabled = on;
}

int cg_takeback_own(uintptr_t fn, uintptr_t code)
{
    return cg_takeback_own_in(fn, code, 0);
}

int cg_takeback_own_in(uintptr_t fn, uintptr_t code, int wait)
{
    if (untrusted_child || !(wait ? cg_reg_trylock_a_while() : cg_reg_trylock()))
        return -1;
    int saved = errno, own = -1;
    struct cg_reg_seg s;
    struct cg_reg_range *r;
    struct cg_reg_site *x = cg_reg_site_of_return(code, &s, &r);
    if (x && x->hook == CG_HOOK_ENTER) {
        x->fn = fn;
        if (r && r->ok)
            own = x->addr == r->own_enter;
    }
    cg_reg_unlock();
    errno = saved;
    return own;
}

int cg_takeback_part_code(uintptr_t addr)
{
    /* not from a hook, but maybe from a handler that interrupted one on
     * this thread (a crash's dump): the lock is tried a while */
    if (!cg_reg_trylock_a_while())
        return 0;
    int saved = errno, part = 0;
    struct cg_reg_seg s;
    if (!untrusted_child && cg_reg_segment_of(addr, &s) == 0 && !s.own) {
        struct cg_reg_range *r = cg_reg_range_of(addr, &s);
        cg_reg_refresh(r);
        part = r && r->ok && r->begin == addr && r->n > 0 && !r->own_enter;
    }
    cg_reg_unlock();
    errno = saved;
    return part;
}

/* Whether range r is fn's own code (its own enter was seen for fn): a
 * copy of fn inlined there is recursion inlined into itself, whose hook
 * calls a frame of fn counts (fold.c) and which are never taken back for
 * inlining. */
static int own_code_of(const struct cg_reg_range *r, uintptr_t fn)
{
    if (!r || !r->own_enter)
        return 0;
    const struct cg_reg_site *own = cg_reg_site_find(r->own_enter);
    return own && own->fn == fn;
}

/* Changes site x (segment s) for reason: 1 done, -1 refused. */
static int take(struct cg_reg_site *x, const struct cg_reg_seg *s, int reason)
{
    if (x->taken)
        return 1;
    if (x->refused || !enabled || s->prot <= 0)
        return -1;
    int rc = cg_site_write(x->addr, x->old, x->patched, s->prot);
    if (rc != 0) {
        x->refused = 1;
        if (CG_TB_STAT_GET(cg_reg_stats.refused) == 0) {
            __atomic_store_n(&cg_reg_stats.refused_errno, rc, __ATOMIC_RELAXED);
            __atomic_store_n(&cg_reg_stats.refused_at, x->addr, __ATOMIC_RELAXED);
        }
        CG_TB_STAT_ADD(cg_reg_stats.refused, 1);
        return -1;
    }
    x->taken = (uint8_t)(reason + 1);
    CG_TB_STAT_ADD(cg_reg_stats.sites[reason], 1);
    if (x->form == CG_SITE_TAIL || x->form == CG_SITE_TAIL_GOT)
        CG_TB_STAT_ADD(cg_reg_stats.tails[reason], 1);
    return 1;
}

int cg_takeback_call(uintptr_t fn, uintptr_t code, int enter, int reason)
{
    if (untrusted_child)
        return -1;
    if (!cg_reg_trylock())
        return 0;
    int saved = errno, rc = -1;
    struct cg_reg_seg s;
    struct cg_reg_range *r;
    struct cg_reg_site *x = cg_reg_site_of_return(code, &s, &r);
    if (x && x->hook == (enter ? CG_HOOK_ENTER : CG_HOOK_EXIT)) {
        x->fn = fn;
        if (enter && reason == CG_TB_INLINED)
            x->folded = 1;
        if (reason != CG_TB_INLINED || !own_code_of(r, fn))
            rc = take(x, &s, reason);
    }
    cg_reg_unlock();
    errno = saved;
    return rc;
}

/* Whether an exit site of fn in range r may go: no thread has a frame of
 * fn entered from r's code (or from code not known), checked at most at
 * x's next_check, spaced out after each failure. */
static int quiescent(struct cg_reg_site *x, uintptr_t fn, const struct cg_reg_range *r, uint64_t since)
{
    uint64_t now = cg_clock_now();
    if (now < x->next_check)
        return 0;
    unsigned running = 0;
    if (cg_thread_any_frame(fn, r ? r->begin : 0, r ? r->end : 0, &running)) {
        x->next_check = now + (uint64_t)x->wait * 100000u;
        if (x->wait < 10000)
            x->wait *= 2;
        return 0;
    }
    /* Another thread may be inside an enter hook of fn that began before
     * fn was taken back, its frame not pushed yet: alone, the thread
     * asking is not; with others, the check waits until none can be
     * (a hook takes well under a microsecond). */
    if (running > 1 && now < since + CG_TB_SETTLE_NS) {
        x->next_check = since + CG_TB_SETTLE_NS; /* for waiting(), until then */
        return 0;
    }
    return 1;
}

/* An inlined call's exit: its range holds an enter of fn that was folded. */
static int folded_in(const struct cg_reg_range *r, uintptr_t fn)
{
    for (uint32_t i = 0; i < r->n; i++) {
        const struct cg_reg_site *e = &cg_reg_sites[r->first + i];
        if (e->hook == CG_HOOK_ENTER && e->folded && e->fn == fn)
            return 1;
    }
    return 0;
}

/* Whether a frameless exit of fn returning to code must wait before its
 * site is looked at again: its site known (a call ending at code) and
 * taken back already, or due for a check later; for a tail-called exit,
 * fn's own range due later. Lookups of the tables alone, not of the code:
 * the exits of a function throttled a moment ago keep coming until then,
 * and each went through a decoding of its caller's call. */
static int waiting(uintptr_t fn, uintptr_t code, int reason)
{
    uint64_t now = cg_clock_now();
    for (uintptr_t len = CG_CPU_SITE_CALL_MIN; len <= CG_CPU_SITE_CALL_MAX; len++) {
        const struct cg_reg_site *x = cg_reg_site_find(code - len);
        if (x && x->hook == CG_HOOK_EXIT && CG_CPU_SITE_CALL_LEN(x->form) == len)
            return x->taken || x->refused || (reason != CG_TB_INLINED && now < x->next_check);
    }
    if (reason == CG_TB_INLINED || reason == CG_TB_COUNTING)
        return 0;
    const struct cg_reg_range *r = cg_reg_range_find(fn);
    const struct cg_reg_site *own = r && r->own_enter ? cg_reg_site_find(r->own_enter) : NULL;
    return own && now < own->next_check;
}

void cg_takeback_exit(uintptr_t fn, uintptr_t code, int reason, uint64_t since)
{
    if (untrusted_child || !cg_reg_trylock())
        return;
    if (waiting(fn, code, reason)) {
        cg_reg_unlock();
        return;
    }
    int saved = errno;
    struct cg_reg_seg s;
    struct cg_reg_range *r;
    struct cg_reg_site *x = cg_reg_site_of_return(code, &s, &r);
    if (x) {
        if (x->hook == CG_HOOK_EXIT && !x->taken) {
            x->fn = fn;
            if (reason == CG_TB_COUNTING ||
                (reason == CG_TB_INLINED ? r && r->ok && folded_in(r, fn) && !own_code_of(r, fn)
                                         : quiescent(x, fn, r, since)))
                take(x, &s, reason);
        }
    } else if (reason != CG_TB_INLINED && cg_reg_segment_of(fn, &s) == 0) {
        /* A tail-called exit hook: its return address is the function's
         * caller's. The tail jumps of fn's own code are its own exits (an
         * inlined call's exit is never one: its host's exit comes after
         * it); only the function's main range is known from fn. */
        r = s.own ? NULL : cg_reg_range_of(fn, &s);
        cg_reg_refresh(r);
        if (r && r->ok && r->begin == fn && r->own_enter) {
            struct cg_reg_site *own = cg_reg_site_find(r->own_enter);
            if (own && (reason == CG_TB_COUNTING || quiescent(own, fn, r, since)))
                for (uint32_t i = 0; i < r->n; i++) {
                    struct cg_reg_site *t = &cg_reg_sites[r->first + i];
                    if ((t->form == CG_SITE_TAIL || t->form == CG_SITE_TAIL_GOT) && !t->taken) {
                        t->fn = fn;
                        take(t, &s, reason);
                    }
                }
        }
    }
    cg_reg_unlock();
    errno = saved;
}

unsigned long cg_takeback_restore(int reason)
{
    cg_reg_lock_wait();
    int saved = errno;
    unsigned long n = 0;
    for (size_t i = 0; i < cg_reg_nsites; i++) {
        struct cg_reg_site *x = &cg_reg_sites[i];
        if (x->dead || x->taken != reason + 1)
            continue;
        struct cg_reg_seg s;
        if (cg_reg_segment_of(x->addr, &s) == 0 && s.prot > 0 && cg_site_write(x->addr, x->patched, x->old, s.prot) == 0) {
            x->taken = 0;
            x->next_check = 0;
            x->wait = 10;
            CG_TB_STAT_ADD(cg_reg_stats.sites[reason], -1UL);
            if (x->form == CG_SITE_TAIL || x->form == CG_SITE_TAIL_GOT)
                CG_TB_STAT_ADD(cg_reg_stats.tails[reason], -1UL);
            n++;
        }
    }
    CG_TB_STAT_ADD(cg_reg_stats.restored, n);
    cg_reg_unlock();
    errno = saved;
    return n;
}

void cg_takeback_unload(uintptr_t lo, uintptr_t hi)
{
    cg_reg_lock_wait();
    cg_reg_new_epoch();
    cg_reg_forget(lo, hi);
    cg_reg_unlock();
}

void cg_takeback_forked(void)
{
    if (cg_reg_forked()) {
        untrusted_child = 1;
        cg_reg_new_epoch();
    }
}

void cg_takeback_stats(struct cg_takeback_stats *out)
{
    /* Under the lock, as the hooks change them; a crash's dump may run on
     * a thread that holds it (it crashed there), and another thread may
     * hold it long (decoding under TSan): tried a while, then read as they
     * are, each counter whole. */
    for (int i = 0; i < 1000; i++) {
        if (cg_reg_trylock()) {
            *out = cg_reg_stats;
            cg_reg_unlock();
            return;
        }
        sched_yield();
    }
    for (int i = 0; i < CG_TB_NREASONS; i++) {
        out->sites[i] = CG_TB_STAT_GET(cg_reg_stats.sites[i]);
        out->tails[i] = CG_TB_STAT_GET(cg_reg_stats.tails[i]);
    }
    out->restored = CG_TB_STAT_GET(cg_reg_stats.restored);
    out->refused = CG_TB_STAT_GET(cg_reg_stats.refused);
    out->refused_errno = CG_TB_STAT_GET(cg_reg_stats.refused_errno);
    out->refused_at = CG_TB_STAT_GET(cg_reg_stats.refused_at);
    out->ranges = CG_TB_STAT_GET(cg_reg_stats.ranges);
    out->untrusted = CG_TB_STAT_GET(cg_reg_stats.untrusted);
}
