/* Overhead compensation's calibration: see calibrate.h.
 *
 * What is measured: a loop of calls of a small function, once plain and
 * once as -finstrument-functions builds it (calib_target.c: the runtime's
 * hooks' code, calib_hooks.h, on a scratch thread state put in
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
 * interrupt only adds to a round. About 4 ms at start-up (docs/costs.md). */
#include "calibrate.h"

#include <string.h>
#include <sys/mman.h>

#include "calib_hooks.h"
#include "calib_target.h"
#include "clock.h"
#include "costs.h"
#include "options.h"
#include "proc.h"
#include "thread.h"

enum { ROUNDS = 9, CALLS = 4000 };
/* Fraction bits of the per-call figures: each is rounded to the nearest ns
 * at the end, not truncated per round (a bias of half a ns a figure). */
enum { FRAC = 8 };

static volatile double sink;

/* One round on t (in cg_self): the plain loop's time, the hooked loop's
 * (under a root frame, as a program's calls are), and the hooked calls'
 * own time as the tables counted it; each per call, in ns << FRAC. */
static CG_NOINSTR __attribute__((noinline)) int round_of(struct cg_thread *t, uint64_t *plain, uint64_t *hooked,
                                                        uint64_t *inside)
{
    double acc = 0;
    uint64_t t0 = cg_clock_now();
    for (unsigned i = 0; i < CALLS; i++)
        acc = cg_calib_plain(acc, (int)i);
    uint64_t t1 = cg_clock_now();
    sink = acc;
    cg_calib_enter((void *)(uintptr_t)round_of, __builtin_return_address(0));
    uint64_t t2 = cg_clock_now();
    for (unsigned i = 0; i < CALLS; i++)
        acc = cg_calib_hooked(acc, (int)i);
    uint64_t t3 = cg_clock_now();
    sink = acc;
    cg_calib_exit((void *)(uintptr_t)round_of, __builtin_return_address(0));
    const struct cg_costs *c = &t->costs;
    for (uint32_t a = 1; a < c->narcs; a++)
        if (c->arcs[a].callee == (uintptr_t)cg_calib_hooked && c->arcs[a].count == CALLS) {
            *plain = ((t1 - t0) << FRAC) / CALLS;
            *hooked = ((t3 - t2) << FRAC) / CALLS;
            *inside = (c->arcs[a].incl << FRAC) / CALLS;
            return 0;
        }
    return -1; /* the calls were not counted as made: measure nothing */
}

/* A scratch thread state with the program's settings (its call paths, its
 * time off the CPU: their hooks do more), so that the hooks measured do
 * what the program's will. */
static int scratch(struct cg_thread *t)
{
    static const volatile uint64_t quiet; /* a ring buffer with nothing new */
    static const volatile uint64_t *const volatile quiet_head = &quiet;
    memset(t, 0, sizeof *t);
    if (cg_costs_init(&t->costs, cg_paths_bound) != 0)
        return -1;
    /* round_of's own hook calls make a root frame: never folded (they are
     * not its first call) nor taken back from the runtime's code */
    t->own_calls = 1;
    if (cg_opts.off_cpu)
        t->costs.switch_head = &quiet_head;
    return 0;
}

static uint64_t least(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint32_t rounded(uint64_t v)
{
    v = (v + (1u << (FRAC - 1))) >> FRAC;
    return (uint32_t)least(v, 100000);
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
    /* Each figure is the least of its rounds, apart: the hooked loop less
     * the plain loop of one round would take a round whose plain loop was
     * slowed (an interrupt) for one whose hooks were fast (it gave 2 ns in
     * the caller, against 11 in the other rounds). */
    uint64_t plain = UINT64_MAX, hooked = UINT64_MAX, inside = UINT64_MAX;
    int rounds = 0;
    for (int r = 0; r < ROUNDS; r++) {
        if (scratch(t) != 0)
            break;
        uint64_t p = 0, h = 0, i = 0;
        cg_self = t;
        int rc = round_of(t, &p, &h, &i);
        cg_self = saved;
        cg_costs_destroy(&t->costs);
        if (rc != 0)
            continue;
        rounds++;
        plain = least(plain, p);
        hooked = least(hooked, h);
        inside = least(inside, i);
    }
    munmap(t, sizeof *t);
    cg_fast_mode = mode_was;
    if (!rounds)
        return -1;
    uint64_t added = hooked > plain ? hooked - plain : 0;
    *in = rounded(inside);
    *out = rounded(added > inside ? added - inside : 0);
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
