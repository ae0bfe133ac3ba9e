/* Overhead compensation's calibration: see calibrate.h.
 *
 * What is measured: a loop of calls of a small function, once plain and
 * once as -finstrument-functions builds it (calib_target.c: the runtime's
 * hooks, on a scratch thread state put in
 * cg_self for the while: the fast path, as a program's calls take it).
 * Written by hand, with the hooks called directly and no argument kept
 * across them, it measured 7 ns a call less than a program's calls cost
 * (a loop of a million calls of a small function, 2026-11-24). The hooks' own tables say
 * how long each call took between its two clock readings: what the hooks
 * add inside the callee (the end of the enter hook, the start of the exit
 * hook; the tiny body is the plain call's too); the loop's time less the
 * plain loop's, less that, is what they add in the caller (the start of
 * the enter hook, the end of the exit hook, the calls of the hooks). Each
 * is the least over ROUNDS rounds of CALLS calls: a preemption or an
 * interrupt only adds to a round. About 2 ms at start-up. */
#include "calibrate.h"

#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "costs.h"
#include "hooks.h"
#include "proc.h"
#include "thread.h"

enum { ROUNDS = 9, CALLS = 4000 };

static volatile double sink;

/* One round on t (in cg_self): the plain loop's time, the hooked loop's
 * (under a root frame, as a program's calls are), and the hooked calls'
 * own time as the tables counted it; each per call, in ns. */
static CG_NOINSTR __attribute__((noinline)) int round_of(struct cg_thread *t, uint64_t *plain, uint64_t *hooked,
                                                        uint64_t *inside)
{
    double acc = 0;
    uint64_t t0 = cg_clock_now();
    for (unsigned i = 0; i < CALLS; i++)
        acc = cg_calib_plain(acc, (int)i);
    uint64_t t1 = cg_clock_now();
    sink = acc;
    cg_hook_enter_entry((void *)(uintptr_t)round_of, __builtin_return_address(0));
    uint64_t t2 = cg_clock_now();
    for (unsigned i = 0; i < CALLS; i++)
        acc = cg_calib_hooked(acc, (int)i);
    uint64_t t3 = cg_clock_now();
    sink = acc;
    cg_hook_exit_entry((void *)(uintptr_t)round_of, __builtin_return_address(0));
    const struct cg_costs *c = &t->costs;
    for (uint32_t a = 1; a < c->narcs; a++)
        if (c->arcs[a].callee == (uintptr_t)cg_calib_hooked && c->arcs[a].count == CALLS) {
            *plain = (t1 - t0) / CALLS;
            *hooked = (t3 - t2) / CALLS;
            *inside = c->arcs[a].incl / CALLS;
            return 0;
        }
    return -1; /* the calls were not counted as made: measure nothing */
}

int cg_calibrate(uint32_t *in, uint32_t *out)
{
    return cg_calibrate_mode(cg_fast_mode, in, out);
}

int cg_calibrate_mode(int mode, uint32_t *in, uint32_t *out)
{
    int mode_was = cg_fast_mode;
    cg_fast_mode = mode;
    struct cg_thread *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED)
        return -1;
    struct cg_thread *saved = cg_self;
    uint64_t best_in = UINT64_MAX, best_out = UINT64_MAX;
    int rounds = 0;
    for (int r = 0; r < ROUNDS; r++) {
        memset(t, 0, sizeof *t);
        if (cg_costs_init(&t->costs, 0) != 0)
            break;
        uint64_t plain = 0, hooked = 0, inside = 0;
        cg_self = t;
        int rc = round_of(t, &plain, &hooked, &inside);
        cg_self = saved;
        cg_costs_destroy(&t->costs);
        if (rc != 0)
            continue;
        rounds++;
        uint64_t added = hooked > plain ? hooked - plain : 0;
        uint64_t o = added > inside ? added - inside : 0;
        if (inside < best_in)
            best_in = inside;
        if (o < best_out)
            best_out = o;
    }
    munmap(t, sizeof *t);
    cg_fast_mode = mode_was;
    if (!rounds)
        return -1;
    *in = (uint32_t)(best_in < 100000 ? best_in : 100000);
    *out = (uint32_t)(best_out < 100000 ? best_out : 100000);
    return 0;
}

void cg_calibrate_apply(struct cg_costs *c, uint32_t in, uint32_t out, uint32_t gin, uint32_t gout)
{
    /* the general path's hooks (a new arc, a recursion from the host's
     * own call site, a frame to repair...) cost more: their own figures */
    c->comp_gpost[1] = gin / 2;
    c->comp_gpre[0] = gin - gin / 2;
    c->comp_gpre[1] = gout / 2;
    c->comp_gpost[0] = gout - gout / 2;
    /* Each hook's part before its clock reading, and after it (the next
     * hook adds that one): the callee's interval holds the enter hook's
     * part after and the exit hook's part before, half each; the caller's
     * self, the rest. */
    c->comp_post[1] = in / 2;
    c->comp_pre[0] = in - in / 2;
    c->comp_pre[1] = out / 2;
    c->comp_post[0] = out - out / 2;
}
