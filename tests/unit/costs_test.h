/* What the unit tests of a thread's tables share (test_costs.c,
 * test_reading.c, test_merge.c): the fixture, a thread's tables (struct
 * cg_costs) driven with synthetic function addresses and synthetic times in
 * nanoseconds (no clock), read back through snapshots (reading.c), and the
 * runs several of them play.
 *
 * Addresses used throughout: functions MAIN, F, G, H, FIB; a call site is a
 * return address inside the caller (MAIN + 0x10 ...). ROOT_SITE is the return
 * address into the uninstrumented code that called a thread's first function.
 *
 * Header-only, static functions marked unused: each test uses what it
 * needs. */
#ifndef CG_COSTS_TEST_H
#define CG_COSTS_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "costs.h"
#include "latency.h"
#include "reading.h"

#define CT_UNUSED __attribute__((unused))

#define ROOT_SITE ((uintptr_t)0x7f0000009000u)
#define MAIN ((uintptr_t)0x1000)
#define F    ((uintptr_t)0x2000)
#define G    ((uintptr_t)0x3000)
#define H    ((uintptr_t)0x5000)
#define FIB  ((uintptr_t)0x4000)
/* The stack pointer of a thread's first frame: the top of a region that
 * behaves as a stack where it matters (repair.c reads it to tell a real call
 * from an inlined one: a real callee's frame holds its return address), set
 * up by map_stack(). */
static uintptr_t SP;
#define STACK_BYTES ((size_t)256 << 20)

/* Maps the stack SP points into: each test's main() first. */
static CT_UNUSED int map_stack(void)
{
    void *stack = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED)
        return -1;
    SP = (uintptr_t)stack + STACK_BYTES - 4096;
    return 0;
}

/* A real call's entry: its enter hook called from its own code, just after
 * its start. */
static CT_UNUSED void enter(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uint64_t now)
{
    *(uintptr_t *)(sp + sizeof(uintptr_t)) = site; /* the callee's return address */
    cg_costs_enter(c, fn, site, sp, fn + 4, now);
}

static CT_UNUSED int setup(void **state)
{
    struct cg_costs *c = malloc(sizeof *c);
    if (!c || cg_costs_init(c, 0) != 0) {
        free(c);
        return -1;
    }
    *state = c;
    return 0;
}

static CT_UNUSED int teardown(void **state)
{
    struct cg_costs *c = *state;
    cg_costs_destroy(c);
    free(c);
    return 0;
}

static CT_UNUSED const struct cg_snap_arc *find_arc(const struct cg_snapshot *s, uintptr_t caller, uintptr_t site,
                                                    uintptr_t callee)
{
    const struct cg_snap_arc *found = NULL;
    for (size_t i = 0; i < s->narcs; i++) {
        const struct cg_snap_arc *a = &s->arcs[i];
        if (a->caller == caller && a->site == site && a->callee == callee) {
            if (found)
                fail_msg("arc %#lx -> %#lx at %#lx listed twice", (unsigned long)caller, (unsigned long)callee,
                         (unsigned long)site);
            found = a;
        }
    }
    return found;
}

static CT_UNUSED const struct cg_snap_self *find_self(const struct cg_snapshot *s, uintptr_t fn, uintptr_t addr)
{
    const struct cg_snap_self *found = NULL;
    for (size_t i = 0; i < s->nselfs; i++) {
        if (s->selfs[i].fn == fn && s->selfs[i].addr == addr) {
            if (found)
                fail_msg("self %#lx@%#lx listed twice", (unsigned long)fn, (unsigned long)addr);
            found = &s->selfs[i];
        }
    }
    return found;
}

static CT_UNUSED uint64_t sum_self(const struct cg_snapshot *s)
{
    uint64_t t = 0;
    for (size_t i = 0; i < s->nselfs; i++)
        t += s->selfs[i].cost;
    return t;
}

/* Macros, so that a failure names the line of the test. */
#define ASSERT_ARC(s, caller, site, callee, cnt, inc)                                                        \
    do {                                                                                                   \
        const struct cg_snap_arc *a_ = find_arc((s), (caller), (site), (callee));                          \
        assert_non_null(a_);                                                                               \
        assert_int_equal(a_->count, (cnt));                                                                \
        assert_int_equal(a_->incl, (inc));                                                                 \
    } while (0)

#define ASSERT_RUNS(s, caller, site, callee, r)                                                              \
    do {                                                                                                   \
        const struct cg_snap_arc *a_ = find_arc((s), (caller), (site), (callee));                          \
        assert_non_null(a_);                                                                               \
        assert_int_equal(a_->runs, (r));                                                                   \
    } while (0)

#define ASSERT_SELF(s, fn, addr, c)                                                                          \
    do {                                                                                                   \
        const struct cg_snap_self *s_ = find_self((s), (fn), (addr));                                      \
        assert_non_null(s_);                                                                               \
        assert_int_equal(s_->cost, (c));                                                                   \
    } while (0)

#define ASSERT_NO_SELF(s, fn, addr) assert_null(find_self((s), (fn), (addr)))

static CT_UNUSED void snap(struct cg_costs *c, uint64_t now, struct cg_snapshot *s)
{
    assert_int_equal(cg_reading_snapshot(c, now, s), 0);
}

static CT_UNUSED void assert_snapshots_equal(const struct cg_snapshot *a, const struct cg_snapshot *b)
{
    assert_int_equal(a->narcs, b->narcs);
    assert_int_equal(a->nselfs, b->nselfs);
    assert_int_equal(a->depth, b->depth);
    assert_int_equal(a->lost, b->lost);
    assert_int_equal(a->unmatched_exits, b->unmatched_exits);
    for (size_t i = 0; i < a->narcs; i++) {
        const struct cg_snap_arc *x = &a->arcs[i];
        ASSERT_ARC(b, x->caller, x->site, x->callee, x->count, x->incl);
        ASSERT_RUNS(b, x->caller, x->site, x->callee, x->runs);
    }
    for (size_t i = 0; i < a->nselfs; i++)
        ASSERT_SELF(b, a->selfs[i].fn, a->selfs[i].addr, a->selfs[i].cost);
}

/* The run used by several tests (times in ns):
 *
 *   t=0   main entered from the root
 *   t=10  main calls f            (site MAIN+0x10)
 *   t=25  f returns
 *   t=30  main calls g            (site MAIN+0x20)
 *   t=35    g calls f             (site G+0x08)
 *   t=45    f returns
 *   t=50  g returns
 *   t=60  main returns
 */
static CT_UNUSED void run_simple(struct cg_costs *c)
{
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 10);
    cg_costs_exit(c, F, 25);
    enter(c, G, MAIN + 0x20, SP - 0x40, 30);
    enter(c, F, G + 0x08, SP - 0x80, 35);
    cg_costs_exit(c, F, 45);
    cg_costs_exit(c, G, 50);
    cg_costs_exit(c, MAIN, 60);
}

/* A 3-deep recursion under main:
 *
 *   t=0   main entered
 *   t=10  main calls fib          (site MAIN+0x10)
 *   t=12    fib calls fib         (site FIB+0x10)
 *   t=15      fib calls fib       (site FIB+0x10)
 *   t=20      innermost returns
 *   t=24    middle returns
 *   t=30  outer returns
 *   t=40  main returns
 */
static CT_UNUSED void run_fib_until(struct cg_costs *c, uint64_t stop)
{
    static const struct {
        int enter;
        uintptr_t fn, site;
        uint64_t t;
    } ev[] = {
        { 1, MAIN, ROOT_SITE, 0 },   { 1, FIB, MAIN + 0x10, 10 }, { 1, FIB, FIB + 0x10, 12 },
        { 1, FIB, FIB + 0x10, 15 },  { 0, FIB, 0, 20 },           { 0, FIB, 0, 24 },
        { 0, FIB, 0, 30 },           { 0, MAIN, 0, 40 },
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0] && ev[i].t <= stop; i++) {
        if (ev[i].enter)
            enter(c, ev[i].fn, ev[i].site, SP - 0x40 * i, ev[i].t);
        else
            cg_costs_exit(c, ev[i].fn, ev[i].t);
    }
}

/* part = reading(now) - base, then base = reading(now) */
static CT_UNUSED void take_part(struct cg_costs *c, uint64_t now, struct cg_reading *base, struct cg_snapshot *part)
{
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    assert_int_equal(cg_reading_take(c, now, &cur), 0);
    assert_int_equal(cg_reading_part(c, &cur, base, part), 0);
    assert_int_equal(cg_reading_copy(base, &cur), 0);
    cg_reading_free(&cur);
}

static CT_UNUSED const uint64_t *lat_of(const struct cg_snapshot *s, uintptr_t caller, uintptr_t site, uintptr_t callee)
{
    const struct cg_snap_arc *a = find_arc(s, caller, site, callee);
    assert_non_null(a);
    assert_non_null(s->lat);
    return s->lat + (size_t)(a - s->arcs) * CG_LAT_ROW;
}

static CT_UNUSED uint64_t lat_calls(const uint64_t *row)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < CG_LAT_BUCKETS; k++)
        n += row[k];
    return n;
}

/* One call of f from main, at t, lasting d. */
static CT_UNUSED void call_f(struct cg_costs *c, uintptr_t site, uint64_t t, uint64_t d)
{
    enter(c, F, site, SP - 256, t);
    cg_costs_exit(c, F, t + d);
}

#endif
