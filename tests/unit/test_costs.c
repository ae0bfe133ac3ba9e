/* Unit tests of the cost tables (runtime/tables/costs*.h and their files):
 * the per-thread shadow stack and cost tables, driven with synthetic
 * function addresses and synthetic times in nanoseconds (no clock), and
 * read back through snapshots (costs_test.h); and of clock.h's TSC
 * conversion. The readings of a running thread and its parts are
 * tested in test_reading.c, the sums of snapshots in test_merge.c. */
#include "costs_test.h"

#include <errno.h>

#include "clock.h"
#include "merge.h"

/* ---- latency histograms (CGPROF_LATENCY) ------------------------------------ */

/* The buckets: each time in the one whose range holds it, the ranges in
 * order and adjacent, exact below 8 ns, each at most a quarter of its
 * least time wide above; the last takes every longer time. */
static void test_lat_buckets(void **state)
{
    (void)state;
    for (uint64_t v = 0; v < 8; v++)
        assert_int_equal(cg_lat_bucket(v), v);
    for (unsigned i = 0; i + 1 < CG_LAT_BUCKETS; i++) {
        uint64_t lo = cg_lat_lower(i), end = cg_lat_lower(i + 1);
        assert_true(end > lo);
        assert_int_equal(cg_lat_bucket(lo), i);
        assert_int_equal(cg_lat_bucket(end - 1), i);
        if (lo >= 4)
            assert_true(4 * (end - lo) <= lo);
    }
    for (uint64_t v = 1; v < 3000000; v = v + 1 + v / 7) {
        unsigned i = cg_lat_bucket(v);
        assert_true(cg_lat_lower(i) <= v && v < cg_lat_lower(i + 1));
    }
    assert_int_equal(cg_lat_bucket((uint64_t)1 << 41), CG_LAT_BUCKETS - 1);
    assert_int_equal(cg_lat_bucket(UINT64_MAX), CG_LAT_BUCKETS - 1);
    assert_int_equal(cg_lat_bucket(cg_lat_lower(CG_LAT_BUCKETS - 1)), CG_LAT_BUCKETS - 1);
}

/* Per arc: each ended call in its bucket, the sum its time, the longest;
 * a call running at a reading in none (it is in the part where it ends);
 * a part is cur - base, its longest exact when it grew in the part and
 * bounded by its highest bucket otherwise; the table grows with the arcs
 * (past the first 1,024); merged parts add up. */
static void test_lat_arcs_parts_merge(void **state)
{
    struct cg_costs *c = *state;
    assert_int_equal(cg_costs_latency_on(c), 0);
    enter(c, MAIN, ROOT_SITE, SP, 0);
    uint64_t t = 10;
    for (int i = 0; i < 9; i++, t += 1000)
        call_f(c, MAIN + 0x10, t, 100);
    call_f(c, MAIN + 0x10, t, 100000);
    t += 200000;
    /* 2,000 more arcs: the rows grow with them */
    for (uintptr_t k = 0; k < 2000; k++, t += 10)
        call_f(c, MAIN + 0x100 + k, t, 5);
    enter(c, F, MAIN + 0x20, SP - 256, t); /* running at the reading */
    struct cg_reading base;
    memset(&base, 0, sizeof base);
    assert_int_equal(cg_reading_take(c, t + 50, &base), 0);
    struct cg_snapshot s;
    assert_int_equal(cg_reading_part(c, &base, NULL, &s), 0);
    const uint64_t *r = lat_of(&s, MAIN, MAIN + 0x10, F);
    assert_int_equal(lat_calls(r), 10);
    assert_int_equal(r[cg_lat_bucket(100)], 9);
    assert_int_equal(r[cg_lat_bucket(100000)], 1);
    assert_int_equal(r[CG_LAT_SUM], 9 * 100 + 100000);
    assert_int_equal(r[CG_LAT_MAX], 100000);
    r = lat_of(&s, MAIN, MAIN + 0x100 + 1999, F);
    assert_int_equal(lat_calls(r), 1);
    assert_int_equal(r[cg_lat_bucket(5)], 1);
    r = lat_of(&s, MAIN, MAIN + 0x20, F); /* counted, not ended */
    assert_int_equal(lat_calls(r), 0);
    assert_int_equal(find_arc(&s, MAIN, MAIN + 0x20, F)->count, 1);
    cg_snapshot_free(&s);
    /* the next part: the running call ends (120 ns), two more of 300 */
    cg_costs_exit(c, F, t + 120);
    t += 200;
    call_f(c, MAIN + 0x10, t, 300);
    call_f(c, MAIN + 0x10, t + 1000, 300);
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    assert_int_equal(cg_reading_take(c, t + 5000, &cur), 0);
    assert_int_equal(cg_reading_part(c, &cur, &base, &s), 0);
    r = lat_of(&s, MAIN, MAIN + 0x10, F);
    assert_int_equal(lat_calls(r), 2);
    assert_int_equal(r[cg_lat_bucket(300)], 2);
    assert_int_equal(r[CG_LAT_SUM], 600);
    /* its longest (100000) was in the earlier part: the top of 300's bucket */
    assert_int_equal(r[CG_LAT_MAX], cg_lat_lower(cg_lat_bucket(300) + 1) - 1);
    r = lat_of(&s, MAIN, MAIN + 0x20, F);
    assert_int_equal(lat_calls(r), 1);
    assert_int_equal(r[CG_LAT_MAX], 120);
    /* merged with the first part's: the sum of both */
    struct cg_snapshot first;
    assert_int_equal(cg_reading_part(c, &base, NULL, &first), 0);
    struct cg_merged m;
    memset(&m, 0, sizeof m);
    assert_int_equal(cg_merged_add(&m, &first), 0);
    assert_int_equal(cg_merged_add(&m, &s), 0);
    r = lat_of(&m.snap, MAIN, MAIN + 0x10, F);
    assert_int_equal(lat_calls(r), 12);
    assert_int_equal(r[CG_LAT_SUM], 9 * 100 + 100000 + 600);
    assert_int_equal(r[CG_LAT_MAX], 100000);
    cg_merged_free(&m);
    cg_snapshot_free(&first);
    cg_snapshot_free(&s);
    /* zeroed: nothing ended since */
    cg_costs_zero(c, t + 6000);
    assert_int_equal(cg_reading_take(c, t + 6000, &cur), 0);
    assert_int_equal(cg_reading_part(c, &cur, NULL, &s), 0);
    for (size_t i = 0; i < s.narcs; i++)
        assert_int_equal(lat_calls(s.lat + i * CG_LAT_ROW), 0);
    cg_snapshot_free(&s);
    cg_reading_free(&cur);
    cg_reading_free(&base);
}

/* Off (the default): no table, no rows in the readings or the parts. */
static void test_lat_off(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    call_f(c, MAIN + 0x10, 10, 100);
    assert_null(c->lat);
    struct cg_snapshot s;
    snap(c, 1000, &s);
    assert_null(s.lat);
    cg_snapshot_free(&s);
}

/* ---- overhead compensation (CGPROF_COMPENSATE) ------------------------------ */

/* The hooks' parts: an enter hook spends 2 ns before its clock reading and
 * 5 after, an exit hook 3 before and 4 after. Each self segment loses the
 * part after the reading of the hook that began it and the part before
 * the reading of the hook that ends it; an inclusive time, every hook
 * part inside it; a segment shorter than that is 0 and the excess is
 * given back, not taken from the next one. */
static void test_overhead_compensation(void **state)
{
    struct cg_costs *c = *state;
    const uintptr_t fa = 0x10000, gb = 0x20000;
    /* cg_costs_hook_time is the general path's: its figures */
    c->comp_gpre[1] = 2;
    c->comp_gpost[1] = 5;
    c->comp_gpre[0] = 3;
    c->comp_gpost[0] = 4;
    uintptr_t root_sp = SP, child_sp = SP - 256;
    enter(c, fa, 0x9000, root_sp, cg_costs_hook_time(c, 1000, 1)); /* at 998 */
    enter(c, gb, fa + 0x10, child_sp, cg_costs_hook_time(c, 1100, 1)); /* fa: 100 - 5 - 2 */
    cg_costs_exit(c, gb, cg_costs_hook_time(c, 1110, 0));              /* gb: 10 - 5 - 3 */
    enter(c, gb, fa + 0x20, child_sp, cg_costs_hook_time(c, 1150, 1)); /* fa: 40 - 4 - 2 */
    uint64_t t = cg_costs_hook_time(c, 1151, 0); /* gb: 1 ns, less than 5 + 3: zero */
    assert_int_equal(t, c->frames[1].t_last);
    cg_costs_exit(c, gb, t);
    cg_costs_exit(c, fa, cg_costs_hook_time(c, 1251, 0)); /* fa: 100 - 4 - 3 */
    assert_int_equal(c->depth, 0);
    struct cg_snapshot s;
    snap(c, cg_costs_time_of(c, 1300), &s);
    ASSERT_SELF(&s, fa, fa, 93);
    ASSERT_SELF(&s, fa, fa + 0x10, 34);
    ASSERT_SELF(&s, fa, fa + 0x20, 93);
    ASSERT_SELF(&s, gb, gb, 2);
    ASSERT_ARC(&s, fa, fa + 0x10, gb, 1, 2);
    ASSERT_ARC(&s, fa, fa + 0x20, gb, 1, 0);
    /* fa's call: 251 ns as the clock read it, less its own enter's part after
     * and exit's part before (5 + 3), two pairs of hooks under it (2 x 14),
     * and 1 ns given back (the second gb had 1, not 8: 7 of them) */
    ASSERT_ARC(&s, 0, 0x9000, fa, 1, 251 - 8 - 28 + 7);
    /* its self and its callees' add up to it */
    assert_int_equal(93 + 34 + 93 + 2 + 0, 251 - 8 - 28 + 7);
    /* what was left out, for the part's desc: line */
    assert_int_equal(s.compensated, 1251 - (998 + 222));
    cg_snapshot_free(&s);
}

/* A clock that steps back (a TSC behind on the core the thread moved to):
 * the time stays where it was and no overhead is taken, not a huge
 * compensation from a negative difference; then it goes on. */
static void test_compensation_clock_back(void **state)
{
    struct cg_costs *c = *state;
    const uintptr_t fa = 0x10000;
    c->comp_gpre[1] = 2;
    c->comp_gpost[1] = 5;
    c->comp_gpre[0] = 3;
    c->comp_gpost[0] = 4;
    enter(c, fa, 0x9000, SP, cg_costs_hook_time(c, 1000, 1)); /* at 998, 2 taken */
    uint64_t was = c->comp;
    assert_int_equal(cg_costs_hook_time(c, 900, 1), 998);
    assert_int_equal(c->comp, was);
    /* the next reading is compensated as before: 1100 less 2, 5 pending
     * from the enter hook of 1000 (the one at 900 took none), and 2 */
    uint64_t t = cg_costs_hook_time(c, 1100, 0);
    assert_true(t >= 998 && t <= 1100);
    assert_true(c->comp < 1100);
}

/* ---- arcs, inclusive and self costs --------------------------------------------- */

static void test_arc_counts_and_inclusive(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    struct cg_snapshot s;
    snap(c, 60, &s);
    assert_int_equal(s.narcs, 4);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 60);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 15);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 1, 20);
    ASSERT_ARC(&s, G, G + 0x08, F, 1, 10);
    assert_int_equal(s.depth, 0);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.unmatched_exits, 0);
    cg_snapshot_free(&s);
}

static void test_self_cost_at_entry_and_return_addresses(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    struct cg_snapshot s;
    snap(c, 60, &s);
    assert_int_equal(s.nselfs, 6);
    ASSERT_SELF(&s, MAIN, MAIN, 10);       /* entry to first call */
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 5); /* after f returned, until g is called */
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 10);/* after g returned, until the exit */
    ASSERT_SELF(&s, F, F, 25);             /* two calls: 15 + 10 */
    ASSERT_SELF(&s, G, G, 5);
    ASSERT_SELF(&s, G, G + 0x08, 5);
    cg_snapshot_free(&s);
}

static void test_root_arc_has_caller_zero(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    struct cg_snapshot s;
    snap(c, 60, &s);
    const struct cg_snap_arc *root = find_arc(&s, 0, ROOT_SITE, MAIN);
    assert_non_null(root);
    assert_int_equal(root->caller, 0);
    assert_int_equal(root->call_pc, ROOT_SITE - 1);
    assert_int_equal(root->runs, 1);
    /* No arc names main as a callee from anything else. */
    for (size_t i = 0; i < s.narcs; i++)
        if (s.arcs[i].callee == MAIN)
            assert_int_equal(s.arcs[i].caller, 0);
    cg_snapshot_free(&s);
}

static void test_call_pc_is_site_minus_one(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    struct cg_snapshot s;
    snap(c, 60, &s);
    for (size_t i = 0; i < s.narcs; i++)
        assert_int_equal(s.arcs[i].call_pc, s.arcs[i].site - 1);
    cg_snapshot_free(&s);
}

static void test_self_costs_sum_to_root_inclusive(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    struct cg_snapshot s;
    snap(c, 60, &s);
    assert_int_equal(sum_self(&s), 60);
    assert_int_equal(find_arc(&s, 0, ROOT_SITE, MAIN)->incl, 60);
    cg_snapshot_free(&s);
}

/* A clock that steps back (a thread moved to a core whose TSC lags): no
 * duration is negative (wrapped to 2^64), and costs still add up. */
static void test_clock_stepping_back(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 100);
    enter(c, F, MAIN + 0x10, SP - 0x40, 90);  /* 10 ns behind: F starts at 100 */
    cg_costs_exit(c, F, 95);                            /* still behind: F took 0 */
    enter(c, G, MAIN + 0x20, SP - 0x40, 120);
    cg_costs_exit(c, G, 118);                           /* 2 ns behind G's start: 0 */
    cg_costs_exit(c, MAIN, 150);
    struct cg_snapshot s;
    snap(c, 150, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 0);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 1, 0);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 50);
    assert_int_equal(sum_self(&s), 50);
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 20); /* from F's return (100) to G's call (120) */
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 30); /* from G's return (120) to the exit (150) */
    cg_snapshot_free(&s);
}

static void test_repeated_calls_accumulate(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    uint64_t t = 5;
    for (uint64_t i = 1; i <= 3; i++) { /* calls lasting 1, 2, 3 ns, 5 apart */
        enter(c, F, MAIN + 0x10, SP - 0x40, t);
        cg_costs_exit(c, F, t + i);
        t += i + 5;
    }
    cg_costs_exit(c, MAIN, t);
    struct cg_snapshot s;
    snap(c, t, &s);
    /* t = 5 + (1+5) + (2+5) + (3+5) = 26 */
    assert_int_equal(t, 26);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 3, 6);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 26);
    ASSERT_SELF(&s, F, F, 6);
    ASSERT_SELF(&s, MAIN, MAIN, 5);
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 15); /* 5 + 5 + 5 between and after the calls */
    assert_int_equal(sum_self(&s), 26);
    cg_snapshot_free(&s);
}

static void test_distinct_sites_are_distinct_arcs(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 1);
    cg_costs_exit(c, F, 3);
    enter(c, F, MAIN + 0x18, SP - 0x40, 4);
    cg_costs_exit(c, F, 9);
    cg_costs_exit(c, MAIN, 10);
    struct cg_snapshot s;
    snap(c, 10, &s);
    assert_int_equal(s.narcs, 3);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 2);
    ASSERT_ARC(&s, MAIN, MAIN + 0x18, F, 1, 5);
    ASSERT_SELF(&s, F, F, 7); /* one entry self per function, whatever the site */
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 1);
    ASSERT_SELF(&s, MAIN, MAIN + 0x18, 1);
    cg_snapshot_free(&s);
}

/* ---- recursion ----------------------------------------------------------------- */

static void test_recursion_inclusive_sums_nested_calls(void **state)
{
    struct cg_costs *c = *state;
    run_fib_until(c, 40);
    struct cg_snapshot s;
    snap(c, 40, &s);
    assert_int_equal(s.narcs, 3);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 40);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, FIB, 1, 20);  /* 10 .. 30 */
    /* Two recursive calls: middle 12..24 (12) and innermost 15..20 (5), the
     * innermost counted again inside the middle one, as Callgrind does. */
    ASSERT_ARC(&s, FIB, FIB + 0x10, FIB, 2, 17);
    cg_snapshot_free(&s);
}

static void test_recursion_self_costs(void **state)
{
    struct cg_costs *c = *state;
    run_fib_until(c, 40);
    struct cg_snapshot s;
    snap(c, 40, &s);
    assert_int_equal(s.nselfs, 4);
    ASSERT_SELF(&s, MAIN, MAIN, 10);
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 10);
    ASSERT_SELF(&s, FIB, FIB, 10);        /* 2 (outer) + 3 (middle) + 5 (innermost) */
    ASSERT_SELF(&s, FIB, FIB + 0x10, 10); /* 4 (middle after return) + 6 (outer) */
    assert_int_equal(sum_self(&s), 40);
    cg_snapshot_free(&s);
}

static void test_recursion_runs_one_per_frame(void **state)
{
    struct cg_costs *c = *state;
    run_fib_until(c, 40);
    struct cg_snapshot s;
    snap(c, 40, &s);
    ASSERT_RUNS(&s, FIB, FIB + 0x10, FIB, 2); /* outer and middle frames each switched to it once */
    ASSERT_RUNS(&s, MAIN, MAIN + 0x10, FIB, 1);
    cg_snapshot_free(&s);
}

/* ---- runs -------------------------------------------------------------------- */

static void test_runs_same_arc_repeated_is_one_run(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    for (uint64_t i = 0; i < 5; i++) {
        enter(c, F, MAIN + 0x10, SP - 0x40, 10 * i + 1);
        cg_costs_exit(c, F, 10 * i + 2);
    }
    cg_costs_exit(c, MAIN, 60);
    struct cg_snapshot s;
    snap(c, 60, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 5, 5);
    ASSERT_RUNS(&s, MAIN, MAIN + 0x10, F, 1);
    cg_snapshot_free(&s);
}

static void test_runs_alternating_arcs_count_each_switch(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    /* f, g, f, g, f: f starts 3 runs, g 2 */
    for (uint64_t i = 0; i < 5; i++) {
        uintptr_t fn = i % 2 ? G : F, site = i % 2 ? MAIN + 0x20 : MAIN + 0x10;
        enter(c, fn, site, SP - 0x40, 10 * i + 1);
        cg_costs_exit(c, fn, 10 * i + 2);
    }
    cg_costs_exit(c, MAIN, 60);
    struct cg_snapshot s;
    snap(c, 60, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 3, 3);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 2, 2);
    ASSERT_RUNS(&s, MAIN, MAIN + 0x10, F, 3);
    ASSERT_RUNS(&s, MAIN, MAIN + 0x20, G, 2);
    cg_snapshot_free(&s);
}

static void test_runs_grouped_calls(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    /* f f f g g f: f starts 2 runs, g 1 */
    static const int seq[] = { 0, 0, 0, 1, 1, 0 };
    for (uint64_t i = 0; i < 6; i++) {
        uintptr_t fn = seq[i] ? G : F, site = seq[i] ? MAIN + 0x20 : MAIN + 0x10;
        enter(c, fn, site, SP - 0x40, 10 * i + 1);
        cg_costs_exit(c, fn, 10 * i + 2);
    }
    cg_costs_exit(c, MAIN, 70);
    struct cg_snapshot s;
    snap(c, 70, &s);
    ASSERT_RUNS(&s, MAIN, MAIN + 0x10, F, 2);
    ASSERT_RUNS(&s, MAIN, MAIN + 0x20, G, 1);
    cg_snapshot_free(&s);
}

static void test_runs_start_afresh_in_each_frame(void **state)
{
    struct cg_costs *c = *state;
    /* main calls g twice; each g frame calls f once: two frames, two runs. */
    enter(c, MAIN, ROOT_SITE, SP, 0);
    for (uint64_t i = 0; i < 2; i++) {
        enter(c, G, MAIN + 0x10, SP - 0x40, 10 * i + 1);
        enter(c, F, G + 0x08, SP - 0x80, 10 * i + 2);
        cg_costs_exit(c, F, 10 * i + 3);
        cg_costs_exit(c, G, 10 * i + 4);
    }
    cg_costs_exit(c, MAIN, 30);
    struct cg_snapshot s;
    snap(c, 30, &s);
    ASSERT_ARC(&s, G, G + 0x08, F, 2, 2);
    ASSERT_RUNS(&s, G, G + 0x08, F, 2);
    ASSERT_RUNS(&s, MAIN, MAIN + 0x10, G, 1);
    cg_snapshot_free(&s);
}

/* ---- exits that do not match the top frame ----------------------------------- */

static void test_exit_of_deeper_frame_pops_frames_above(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 10);
    enter(c, G, F + 0x10, SP - 0x80, 12);
    enter(c, H, G + 0x10, SP - 0xc0, 15);
    /* f exits with g and h still on the stack (a longjmp out of h) */
    cg_costs_exit(c, F, 20);
    assert_int_equal(c->depth, 1);
    assert_int_equal(c->frames[0].fn, MAIN);
    cg_costs_exit(c, MAIN, 30);
    assert_int_equal(c->depth, 0);

    struct cg_snapshot s;
    snap(c, 30, &s);
    assert_int_equal(s.unmatched_exits, 0);
    assert_int_equal(s.narcs, 4);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 30);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 10);
    ASSERT_ARC(&s, F, F + 0x10, G, 1, 8);
    ASSERT_ARC(&s, G, G + 0x10, H, 1, 5);
    assert_int_equal(s.nselfs, 5);
    ASSERT_SELF(&s, MAIN, MAIN, 10);
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 10);
    ASSERT_SELF(&s, F, F, 2);
    ASSERT_SELF(&s, G, G, 3);
    ASSERT_SELF(&s, H, H, 5);
    assert_int_equal(sum_self(&s), 30);
    cg_snapshot_free(&s);
}

static void test_exit_matching_nothing_is_dropped(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 10);
    struct cg_snapshot before, after;
    snap(c, 20, &before);
    cg_costs_exit(c, H, 15); /* h was never entered */
    assert_int_equal(c->depth, 2);
    assert_int_equal(c->unmatched_exits, 1);
    snap(c, 20, &after);
    assert_int_equal(after.unmatched_exits, 1);
    after.unmatched_exits = 0;
    assert_snapshots_equal(&before, &after);
    assert_snapshots_equal(&after, &before);
    cg_snapshot_free(&before);
    cg_snapshot_free(&after);

    /* The stack is intact: the real exits still match. */
    cg_costs_exit(c, F, 20);
    cg_costs_exit(c, MAIN, 25);
    snap(c, 25, &after);
    ASSERT_ARC(&after, MAIN, MAIN + 0x10, F, 1, 10);
    ASSERT_ARC(&after, 0, ROOT_SITE, MAIN, 1, 25);
    assert_int_equal(after.unmatched_exits, 1);
    assert_int_equal(sum_self(&after), 25);
    cg_snapshot_free(&after);
}

static void test_exit_on_empty_stack_is_dropped(void **state)
{
    struct cg_costs *c = *state;
    cg_costs_exit(c, MAIN, 5);
    cg_costs_exit(c, F, 6);
    assert_int_equal(c->depth, 0);
    assert_int_equal(c->unmatched_exits, 2);
    struct cg_snapshot s;
    snap(c, 10, &s);
    assert_int_equal(s.narcs, 0);
    assert_int_equal(s.nselfs, 0);
    assert_int_equal(s.unmatched_exits, 2);
    cg_snapshot_free(&s);
}

/* ---- growth ------------------------------------------------------------------ */

static void test_growth_5000_distinct_callees(void **state)
{
    struct cg_costs *c = *state;
    enum { N = 5000 };
    uint64_t t = 0;
    enter(c, MAIN, ROOT_SITE, SP, t++);
    /* callee i is called (i % 3) + 1 times; each call lasts 1 + i % 7 ns */
    for (unsigned rep = 0; rep < 3; rep++) {
        for (unsigned i = 0; i < N; i++) {
            if (i % 3 < rep)
                continue;
            enter(c, 0x100000 + 0x40 * (uintptr_t)i, MAIN + 0x10, SP - 0x40, t);
            t += 1 + i % 7;
            cg_costs_exit(c, 0x100000 + 0x40 * (uintptr_t)i, t);
            t++;
        }
    }
    cg_costs_exit(c, MAIN, t);
    struct cg_snapshot s;
    snap(c, t, &s);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.narcs, N + 1);
    for (unsigned i = 0; i < N; i++) {
        uintptr_t fn = 0x100000 + 0x40 * (uintptr_t)i;
        uint64_t calls = i % 3 + 1;
        ASSERT_ARC(&s, MAIN, MAIN + 0x10, fn, calls, calls * (1 + i % 7));
        ASSERT_SELF(&s, fn, fn, calls * (1 + i % 7));
    }
    assert_int_equal(s.nselfs, N + 2); /* the callees, main's entry and main's site */
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, t);
    assert_int_equal(sum_self(&s), t);
    cg_snapshot_free(&s);
}

static void test_growth_20000_distinct_arcs(void **state)
{
    struct cg_costs *c = *state;
    enum { SITES = 200, CALLEES = 100, NARCS = SITES * CALLEES };
    uint64_t t = 0;
    enter(c, MAIN, ROOT_SITE, SP, t++);
    /* arc k = (site k / CALLEES, callee k % CALLEES) is called (k % 4) + 1 times, 1 ns each */
    for (unsigned rep = 0; rep < 4; rep++) {
        for (unsigned k = 0; k < NARCS; k++) {
            if (k % 4 < rep)
                continue;
            uintptr_t site = MAIN + 0x10 + 8 * (uintptr_t)(k / CALLEES);
            uintptr_t fn = 0x100000 + 0x40 * (uintptr_t)(k % CALLEES);
            enter(c, fn, site, SP - 0x40, t++);
            cg_costs_exit(c, fn, t++);
        }
    }
    cg_costs_exit(c, MAIN, t);
    struct cg_snapshot s;
    snap(c, t, &s);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.narcs, NARCS + 1);

    unsigned char *seen = calloc(NARCS, 1);
    assert_non_null(seen);
    uint64_t callee_calls[CALLEES] = { 0 };
    for (unsigned k = 0; k < NARCS; k++)
        callee_calls[k % CALLEES] += k % 4 + 1;
    for (size_t i = 0; i < s.narcs; i++) {
        const struct cg_snap_arc *a = &s.arcs[i];
        if (a->caller == 0) {
            assert_int_equal(a->callee, MAIN);
            continue;
        }
        assert_int_equal(a->caller, MAIN);
        assert_true(a->site >= MAIN + 0x10 && (a->site - MAIN - 0x10) % 8 == 0);
        assert_true(a->callee >= 0x100000 && (a->callee - 0x100000) % 0x40 == 0);
        unsigned site_i = (unsigned)((a->site - MAIN - 0x10) / 8), callee_i = (unsigned)((a->callee - 0x100000) / 0x40);
        assert_true(site_i < SITES && callee_i < CALLEES);
        unsigned k = site_i * CALLEES + callee_i;
        assert_int_equal(seen[k], 0);
        seen[k] = 1;
        assert_int_equal(a->count, k % 4 + 1);
        assert_int_equal(a->incl, k % 4 + 1);
    }
    for (unsigned k = 0; k < NARCS; k++)
        assert_int_equal(seen[k], 1);
    free(seen);

    for (unsigned j = 0; j < CALLEES; j++) {
        uintptr_t fn = 0x100000 + 0x40 * (uintptr_t)j;
        ASSERT_SELF(&s, fn, fn, callee_calls[j]);
    }
    for (unsigned si = 0; si < SITES; si++) {
        uint64_t after = 0; /* one ns after each return from this site */
        for (unsigned j = 0; j < CALLEES; j++)
            after += (si * CALLEES + j) % 4 + 1;
        ASSERT_SELF(&s, MAIN, MAIN + 0x10 + 8 * (uintptr_t)si, after);
    }
    assert_int_equal(s.nselfs, CALLEES + SITES + 1);
    ASSERT_SELF(&s, MAIN, MAIN, 1);
    assert_int_equal(sum_self(&s), t);
    cg_snapshot_free(&s);
}

static void test_growth_million_frames_deep(void **state)
{
    struct cg_costs *c = *state;
    enum { N = 1000000 };
    /* frame k (0 = the root call) is entered at t = k and exits at 2N - k */
    enter(c, FIB, ROOT_SITE, SP, 0);
    for (uint64_t k = 1; k < N; k++)
        enter(c, FIB, FIB + 0x10, SP - 0x40 * k, k);
    assert_int_equal(c->depth, N);

    struct cg_snapshot s;
    snap(c, N, &s);
    assert_int_equal(s.depth, N);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.narcs, 2);
    ASSERT_ARC(&s, 0, ROOT_SITE, FIB, 1, N);
    /* sum over k = 1 .. N-1 of (N - k) */
    ASSERT_ARC(&s, FIB, FIB + 0x10, FIB, N - 1, (uint64_t)(N - 1) * N / 2);
    ASSERT_SELF(&s, FIB, FIB, N);
    assert_int_equal(s.nselfs, 1);
    cg_snapshot_free(&s);

    for (uint64_t k = N; k-- > 0;)
        cg_costs_exit(c, FIB, 2 * (uint64_t)N - k);
    assert_int_equal(c->depth, 0);
    snap(c, 2 * (uint64_t)N, &s);
    assert_int_equal(s.depth, 0);
    assert_int_equal(s.unmatched_exits, 0);
    ASSERT_ARC(&s, 0, ROOT_SITE, FIB, 1, 2 * (uint64_t)N);
    /* sum over k = 1 .. N-1 of (2N - 2k) = (N-1) * N */
    ASSERT_ARC(&s, FIB, FIB + 0x10, FIB, N - 1, (uint64_t)(N - 1) * N);
    ASSERT_RUNS(&s, FIB, FIB + 0x10, FIB, N - 1);
    ASSERT_SELF(&s, FIB, FIB, (N - 1) + 2);     /* 1 ns each, the deepest ran 2 */
    ASSERT_SELF(&s, FIB, FIB + 0x10, N - 1);    /* 1 ns after each return */
    assert_int_equal(sum_self(&s), 2 * (uint64_t)N);
    cg_snapshot_free(&s);
}

static void test_new_arcs_preserve_errno(void **state)
{
    struct cg_costs *c = *state;
    /* New arcs and table growth make system calls: errno must not change. */
    errno = 1234;
    uint64_t t = 0;
    enter(c, MAIN, ROOT_SITE, SP, t++);
    for (uintptr_t i = 0; i < 3000; i++) {
        enter(c, 0x100000 + 0x40 * i, MAIN + 0x10, SP - 0x40, t++);
        assert_int_equal(errno, 1234);
        cg_costs_exit(c, 0x100000 + 0x40 * i, t++);
    }
    for (uint64_t k = 0; k < 5000; k++)
        enter(c, FIB, FIB + 0x10, SP, t++);
    assert_int_equal(errno, 1234);
}

/* ---- cg_costs_zero ------------------------------------------------------------- */

static void test_zero_clears_counts_and_costs(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    cg_costs_exit(c, H, 61); /* one unmatched exit */
    uint32_t narcs = c->narcs, nselfs = c->nselfs;
    cg_costs_zero(c, 70);
    assert_int_equal(c->narcs, narcs); /* entries are kept */
    assert_int_equal(c->nselfs, nselfs);
    for (uint32_t i = 0; i < c->narcs; i++) {
        assert_int_equal(c->arcs[i].count, 0);
        assert_int_equal(c->arcs[i].incl, 0);
        assert_int_equal(c->arcs[i].runs, 0);
    }
    for (uint32_t i = 0; i < c->nselfs; i++)
        assert_int_equal(c->selfs[i].cost, 0);
    struct cg_snapshot s;
    snap(c, 80, &s);
    assert_int_equal(s.narcs, 0);
    assert_int_equal(s.nselfs, 0);
    assert_int_equal(s.unmatched_exits, 0);
    cg_snapshot_free(&s);
}

static void test_zero_running_frames_restart_at_now(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 10);
    cg_costs_exit(c, F, 20);
    enter(c, G, MAIN + 0x20, SP - 0x40, 25);
    cg_costs_zero(c, 30);
    assert_int_equal(c->depth, 2);

    struct cg_snapshot s;
    snap(c, 30, &s); /* the running calls, with nothing measured yet */
    assert_int_equal(s.narcs, 2);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 0);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 1, 0);
    assert_int_equal(s.nselfs, 0);
    cg_snapshot_free(&s);

    cg_costs_exit(c, G, 40);
    cg_costs_exit(c, MAIN, 50);
    snap(c, 50, &s);
    assert_int_equal(s.narcs, 2);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 20);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 1, 10);
    assert_null(find_arc(&s, MAIN, MAIN + 0x10, F));
    assert_int_equal(s.nselfs, 2);
    ASSERT_SELF(&s, G, G, 10);
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 10);
    assert_int_equal(sum_self(&s), 20);
    cg_snapshot_free(&s);
}

/* ---- TSC to nanoseconds ----------------------------------------------------- */

/* cg_tsc_to_ns() reads the calibration globals; each test sets its own. */
static void set_tsc(uint64_t base, uint64_t mult)
{
    cg_tsc_base = base;
    cg_tsc_mult = mult;
}

static void test_tsc_to_ns_identity(void **state)
{
    (void)state;
    set_tsc(0, UINT64_C(1) << 32); /* 1 ns per tick */
    assert_int_equal(cg_tsc_to_ns(0), 0);
    assert_int_equal(cg_tsc_to_ns(123456789), 123456789);
}

static void test_tsc_to_ns_subtracts_base(void **state)
{
    (void)state;
    set_tsc(1000000, UINT64_C(1) << 32);
    assert_int_equal(cg_tsc_to_ns(1000000), 0);
    assert_int_equal(cg_tsc_to_ns(1000010), 10);
    set_tsc(1000, UINT64_C(1) << 31); /* 0.5 ns per tick */
    assert_int_equal(cg_tsc_to_ns(1000 + 4000), 2000);
}

static void test_tsc_to_ns_rounds_down(void **state)
{
    (void)state;
    set_tsc(0, UINT64_C(1) << 31);     /* 0.5 ns per tick */
    assert_int_equal(cg_tsc_to_ns(7), 3);   /* 3.5 */
    assert_int_equal(cg_tsc_to_ns(1), 0);   /* 0.5 */
    set_tsc(0, UINT64_C(3) << 30);     /* 0.75 ns per tick */
    assert_int_equal(cg_tsc_to_ns(10), 7);  /* 7.5 */
    assert_int_equal(cg_tsc_to_ns(4), 3);   /* exactly 3 */
    set_tsc(0, UINT64_C(5) << 31);     /* 2.5 ns per tick */
    assert_int_equal(cg_tsc_to_ns(3), 7);   /* 7.5 */
    /* 1/3 ns per tick, as 32.32 fixed point: 1431655765 / 2^32 (just under 1/3) */
    set_tsc(0, UINT64_C(1431655765));
    assert_int_equal(cg_tsc_to_ns(3), 0);   /* 0.99999999977 */
    assert_int_equal(cg_tsc_to_ns(30), 9);  /* 9.9999999977 */
}

static void test_tsc_to_ns_no_intermediate_overflow(void **state)
{
    (void)state;
    /* (tsc - base) * mult exceeds 64 bits */
    set_tsc(0, UINT64_C(3) << 30); /* 0.75 */
    assert_int_equal(cg_tsc_to_ns(UINT64_MAX), UINT64_C(13835058055282163711));
    set_tsc(UINT64_C(1) << 40, UINT64_C(2) << 32); /* 2 ns per tick */
    assert_int_equal(cg_tsc_to_ns((UINT64_C(1) << 40) + (UINT64_C(1) << 61)), UINT64_C(1) << 62);
}

/* ---- sampled time ------------------------------------------------------------- */

#define LIBC_MEMSET ((uintptr_t)0x7f0000001000u)
#define LIBC_INNER  ((uintptr_t)0x7f0000002000u)

/* The sampler, as sample.c drives it: the clock moves by a period, a sample
 * in uninstrumented code is charged to the chain and leaves the top frame's
 * self segment. Costs add up; counts are visits. */
static void test_sample_chain_charges_uninstrumented_code(void **state)
{
    struct cg_costs *c = *state;
    uint64_t now = 0;
    uint32_t last[CG_SAMPLE_DEPTH];
    unsigned nlast = 0;
    enter(c, MAIN, ROOT_SITE, SP, now);
    enter(c, F, MAIN + 0x10, SP - 0x100, now);
    uintptr_t fns[2] = { LIBC_MEMSET, LIBC_INNER }, sites[2] = { F + 0x20, LIBC_MEMSET + 0x30 };
    /* three samples in a row in memset's inner function, no hook between */
    for (int i = 0; i < 3; i++) {
        now += 1000;
        assert_int_equal(cg_costs_sample(c, fns, sites, 2, LIBC_INNER + 0x4, 1000, 0, last, &nlast), 0);
        c->frames[c->depth - 1].t_last += 1000;
    }
    /* a hook ran (a new call of memset), one more sample, and one in F itself */
    now += 1000;
    assert_int_equal(cg_costs_sample(c, fns, sites, 1, LIBC_MEMSET + 0x8, 1000, 1, last, &nlast), 0);
    c->frames[c->depth - 1].t_last += 1000;
    now += 1000; /* F's own time */
    cg_costs_exit(c, F, now);
    enter(c, G, MAIN + 0x20, SP - 0x100, now);
    cg_costs_exit(c, G, now);
    /* a sample in G's prologue, before its enter hook: the chain is a real
     * instrumented call, left alone (no count added) */
    uintptr_t real[1] = { G };
    uintptr_t real_site[1] = { MAIN + 0x20 };
    assert_int_equal(cg_costs_sample(c, real, real_site, 1, G + 4, 1000, 1, last, &nlast), -1);
    cg_costs_exit(c, MAIN, now);
    struct cg_snapshot s;
    snap(c, now, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 5000);
    ASSERT_ARC(&s, F, F + 0x20, LIBC_MEMSET, 2, 4000);
    ASSERT_ARC(&s, LIBC_MEMSET, LIBC_MEMSET + 0x30, LIBC_INNER, 1, 3000);
    ASSERT_SELF(&s, LIBC_INNER, LIBC_INNER + 0x4, 3000);
    ASSERT_SELF(&s, LIBC_MEMSET, LIBC_MEMSET + 0x8, 1000);
    ASSERT_SELF(&s, F, F, 1000);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 1, 0);
    cg_snapshot_free(&s);
}


/* ---- filters: functions left out (CGPROF_SKIP), throttling ---------------------- */

/* A filter whose skip set holds the given functions; cleaned by the caller
 * with filter_free. */
static void filter_with(struct cg_costs *c, struct cg_filter *f, const uintptr_t *skip, size_t n)
{
    memset(f, 0, sizeof *f);
    struct cg_addrset *set = cg_addrset_new(n);
    assert_non_null(set);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(cg_addrset_add(set, skip[i]), 1);
    f->skip = set;
    c->filter = f;
    c->throttle_n = 0;
}

static void filter_free(struct cg_filter *f)
{
    cg_addrset_free((struct cg_addrset *)f->skip);
    cg_addrset_free(f->throttled);
}

static void assert_no_arc_to(const struct cg_snapshot *s, uintptr_t fn)
{
    for (size_t i = 0; i < s->narcs; i++)
        if (s->arcs[i].callee == fn || s->arcs[i].caller == fn)
            fail_msg("an arc names the function left out: %#lx -> %#lx", (unsigned long)s->arcs[i].caller,
                     (unsigned long)s->arcs[i].callee);
    for (size_t i = 0; i < s->nselfs; i++)
        if (s->selfs[i].fn == fn)
            fail_msg("self cost charged to the function left out");
}

/* main calls g (left out) at MAIN+0x20; g calls f twice, at G+0x08 and
 * G+0x18:
 *   t=0 main, t=10 g, t=14 f, t=20 f returns, t=23 f, t=30 f returns,
 *   t=36 g returns, t=40 main returns. */
static void run_skip_g(struct cg_costs *c)
{
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, G, MAIN + 0x20, SP - 0x40, 10);
    enter(c, F, G + 0x08, SP - 0x80, 14);
    cg_costs_exit(c, F, 20);
    enter(c, F, G + 0x18, SP - 0x80, 23);
    cg_costs_exit(c, F, 30);
    cg_costs_exit(c, G, 36);
    cg_costs_exit(c, MAIN, 40);
}

static void test_skipped_function_cost_goes_to_caller(void **state)
{
    struct cg_costs *c = *state;
    struct cg_filter f;
    const uintptr_t skip[] = { G };
    filter_with(c, &f, skip, 1);
    run_skip_g(c);
    struct cg_snapshot s;
    snap(c, 40, &s);
    assert_no_arc_to(&s, G);
    /* g's calls are main's, at the site of the call to g, as one arc */
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, F, 2, 13);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 40);
    assert_int_equal(s.narcs, 2);
    /* main's own: 10 before the call, g's own 4 + 3 + 6 at the call site,
     * 4 after g returned */
    ASSERT_SELF(&s, MAIN, MAIN, 10);
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 4 + 3 + 6 + 4);
    ASSERT_SELF(&s, F, F, 13);
    /* main's inclusive = its self + its callees' */
    assert_int_equal(sum_self(&s), 40);
    cg_snapshot_free(&s);
    filter_free(&f);
}

static void test_skipped_functions_nested(void **state)
{
    /* main -> g (left out) -> h (left out) -> f: f is main's callee */
    struct cg_costs *c = *state;
    struct cg_filter f;
    const uintptr_t skip[] = { G, H };
    filter_with(c, &f, skip, 2);
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, G, MAIN + 0x20, SP - 0x40, 5);
    enter(c, H, G + 0x08, SP - 0x80, 7);
    enter(c, F, H + 0x04, SP - 0xc0, 9);
    cg_costs_exit(c, F, 12);
    cg_costs_exit(c, H, 20);
    cg_costs_exit(c, G, 30);
    cg_costs_exit(c, MAIN, 31);
    struct cg_snapshot s;
    snap(c, 31, &s);
    assert_no_arc_to(&s, G);
    assert_no_arc_to(&s, H);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, F, 1, 3);
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 2 + 2 + 8 + 10 + 1);
    assert_int_equal(sum_self(&s), 31);
    assert_int_equal(s.narcs, 2);
    cg_snapshot_free(&s);
    filter_free(&f);
}

static void test_skipped_call_running_at_snapshot(void **state)
{
    /* a snapshot inside g (left out) and inside f under it: g is not a call
     * in progress; its running time is main's own */
    struct cg_costs *c = *state;
    struct cg_filter f;
    const uintptr_t skip[] = { G };
    filter_with(c, &f, skip, 1);
    run_skip_g(c);
    enter(c, MAIN, ROOT_SITE, SP, 100);
    enter(c, G, MAIN + 0x20, SP - 0x40, 110);
    struct cg_snapshot s;
    snap(c, 115, &s);
    assert_int_equal(s.depth, 1);
    assert_no_arc_to(&s, G);
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 17 + 5);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 2, 40 + 15);
    cg_snapshot_free(&s);
    enter(c, F, G + 0x08, SP - 0x80, 120);
    snap(c, 125, &s);
    assert_int_equal(s.depth, 2);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, F, 3, 13 + 5);
    ASSERT_SELF(&s, MAIN, MAIN + 0x20, 17 + 10);
    ASSERT_SELF(&s, F, F, 13 + 5);
    cg_snapshot_free(&s);
    filter_free(&f);
}

/* ---- inlined calls and frames left ------------------------------------------------
 * The hooks as the general path applies them (cg_costs_resync, then the
 * entry or exit), with the stack pointer and code address the hooks see. A
 * function inlined into another keeps its hooks: called from the host's
 * code, in the host's frame (same sp), with the host's own call site. */

#define F_SITE (MAIN + 0x10) /* where main calls f: f's return address */

static void hook_enter(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, uint64_t t)
{
    if (code != fn + 4) /* an inlined call: in its host's frame, no return address */
        *(uintptr_t *)(sp + sizeof(uintptr_t)) = 0;
    else
        *(uintptr_t *)(sp + sizeof(uintptr_t)) = site;
    cg_costs_resync(c, fn, site, sp, code, 1, t);
    cg_costs_enter(c, fn, site, sp, code, t);
}

static void hook_exit(struct cg_costs *c, uintptr_t fn, uintptr_t sp, uint64_t t)
{
    cg_costs_resync(c, fn, 0, sp, 0, 0, t);
    cg_costs_exit(c, fn, t);
}

/* The only arc from caller to callee (NULL if none). */
static const struct cg_snap_arc *arc_of(const struct cg_snapshot *s, uintptr_t caller, uintptr_t callee)
{
    const struct cg_snap_arc *found = NULL;
    for (size_t i = 0; i < s->narcs; i++)
        if (s->arcs[i].caller == caller && s->arcs[i].callee == callee) {
            assert_null(found);
            found = &s->arcs[i];
        }
    return found;
}

/* The calls from caller to callee, over all its arcs (call sites). */
static uint64_t calls_of(const struct cg_snapshot *s, uintptr_t caller, uintptr_t callee)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->narcs; i++)
        if (s->arcs[i].caller == caller && s->arcs[i].callee == callee)
            n += s->arcs[i].count;
    return n;
}

/* main calls f; g is inlined into f (twice, at two places in f's code) and
 * makes a real call of h: f -> g twice (one arc for each place, named by
 * where its enter hook is called), g -> h twice, nothing left, and g's call
 * of h says that its call site is in f's code. */
static void test_inlined_call_keeps_its_host(void **state)
{
    struct cg_costs *c = *state;
    hook_enter(c, MAIN, ROOT_SITE, SP, MAIN + 4, 0);
    hook_enter(c, F, F_SITE, SP - 0x40, F + 4, 1);
    for (int i = 0; i < 2; i++) {
        uintptr_t t = 2 + 10 * (uintptr_t)i;
        hook_enter(c, G, F_SITE, SP - 0x40, F + 0x20 + 0x40 * (uintptr_t)i, t);
        hook_enter(c, H, F + 0x30 + 0x40 * (uintptr_t)i, SP - 0x80, H + 4, t + 1);
        hook_exit(c, H, SP - 0x80, t + 2);
        hook_exit(c, G, SP - 0x40, t + 3);
    }
    hook_exit(c, F, SP, 30); /* a tail-called exit hook: the frame is gone */
    hook_exit(c, MAIN, SP, 31);
    struct cg_snapshot s;
    snap(c, 31, &s);
    assert_int_equal(s.left, 0);
    assert_int_equal(s.unmatched_exits, 0);
    /* f -> g at each of its two places, g -> h from each copy of g (two
     * call instructions) */
    const struct cg_snap_arc *fg = find_arc(&s, F, F + 0x20, G), *fg2 = find_arc(&s, F, F + 0x60, G);
    const struct cg_snap_arc *gh = find_arc(&s, G, F + 0x30, H), *gh2 = find_arc(&s, G, F + 0x70, H);
    const struct cg_snap_arc *mf = arc_of(&s, MAIN, F);
    assert_non_null(fg);
    assert_non_null(fg2);
    assert_non_null(gh);
    assert_non_null(gh2);
    assert_non_null(mf);
    assert_int_equal(fg->count + fg2->count, 2);
    assert_int_equal(calls_of(&s, F, G), 2);
    assert_int_equal(gh->count + gh2->count, 2);
    assert_true(gh2->caller_inlined);
    assert_true(fg->inlined && fg2->inlined);
    assert_false(fg->caller_inlined);
    /* no call instruction: placed where its enter hook was called */
    assert_int_equal(fg->call_pc, F + 0x20 - 1);
    assert_false(gh->inlined);
    assert_true(gh->caller_inlined);
    assert_false(mf->inlined || mf->caller_inlined);
    assert_null(arc_of(&s, MAIN, G));
    assert_null(arc_of(&s, F, H));
    /* g's time after h returns is at the return address in f's code */
    const struct cg_snap_self *after = find_self(&s, G, F + 0x30);
    assert_non_null(after);
    assert_true(after->inlined);
    assert_int_equal(after->cost, 1);
    assert_int_equal(sum_self(&s), 31);
    cg_snapshot_free(&s);
}

/* A chain: g inlined into f, h inlined into g (the same frame, the same
 * site), and a function inlined into itself a few levels deep (gcc at -O3):
 * each level is a call of the one under it. */
static void test_inlined_chain_and_recursion(void **state)
{
    struct cg_costs *c = *state;
    hook_enter(c, MAIN, ROOT_SITE, SP, MAIN + 4, 0);
    hook_enter(c, F, F_SITE, SP - 0x40, F + 4, 1);
    hook_enter(c, G, F_SITE, SP - 0x40, F + 0x20, 2);
    hook_enter(c, H, F_SITE, SP - 0x40, F + 0x28, 3);
    hook_exit(c, H, SP - 0x40, 4);
    hook_exit(c, G, SP - 0x40, 5);
    /* fib's out-of-line copy, with fib inlined into it twice over */
    hook_enter(c, FIB, F + 0x60, SP - 0x80, FIB + 4, 6);
    hook_enter(c, FIB, F + 0x60, SP - 0x80, FIB + 0x30, 7);
    hook_enter(c, FIB, F + 0x60, SP - 0x80, FIB + 0x50, 8);
    hook_exit(c, FIB, SP - 0x80, 9);
    hook_exit(c, FIB, SP - 0x80, 10);
    hook_exit(c, FIB, SP - 0x80, 11);
    hook_exit(c, F, SP - 0x40, 12);
    hook_exit(c, MAIN, SP, 13);
    struct cg_snapshot s;
    snap(c, 13, &s);
    assert_int_equal(s.left, 0);
    assert_int_equal(arc_of(&s, F, G)->count, 1);
    assert_int_equal(arc_of(&s, G, H)->count, 1);
    assert_true(arc_of(&s, G, H)->inlined);
    assert_true(arc_of(&s, G, H)->caller_inlined);
    assert_int_equal(arc_of(&s, F, FIB)->count, 1);
    assert_false(arc_of(&s, F, FIB)->inlined);
    /* fib inlined into itself at two places */
    assert_int_equal(calls_of(&s, FIB, FIB), 2);
    assert_true(find_arc(&s, FIB, FIB + 0x30, FIB)->inlined);
    assert_true(find_arc(&s, FIB, FIB + 0x50, FIB)->inlined);
    cg_snapshot_free(&s);
}

/* Below the host's stack pointer with the host's own call site: an inlined
 * call made while gcc has not yet popped an earlier call's stack arguments
 * (no return address in between), or a real call of the host's function
 * from the very instruction that made the host's own call (recursion: its
 * return address is there). */
static void test_inlined_below_the_host_and_recursion_from_one_site(void **state)
{
    struct cg_costs *c = *state;
    hook_enter(c, MAIN, ROOT_SITE, SP, MAIN + 4, 0);
    hook_enter(c, F, F_SITE, SP - 0x40, F + 4, 1);
    /* two argument words pushed: g's hook 16 bytes below f's */
    ((uintptr_t *)(SP - 0x50))[0] = 7;
    ((uintptr_t *)(SP - 0x50))[1] = 6;
    cg_costs_resync(c, G, F_SITE, SP - 0x50, F + 0x20, 1, 2);
    cg_costs_enter(c, G, F_SITE, SP - 0x50, F + 0x20, 2);
    hook_exit(c, G, SP - 0x50, 3);
    /* f calls itself from the instruction main called it from (a call
     * through a pointer): f's return address in the new frame */
    hook_enter(c, F, F_SITE, SP - 0x80, F + 4, 4);
    hook_exit(c, F, SP - 0x80, 5);
    hook_exit(c, F, SP - 0x40, 6);
    hook_exit(c, MAIN, SP, 7);
    struct cg_snapshot s;
    snap(c, 7, &s);
    assert_int_equal(s.left, 0);
    const struct cg_snap_arc *fg = arc_of(&s, F, G), *ff = arc_of(&s, F, F);
    assert_non_null(fg);
    assert_non_null(ff);
    assert_true(fg->inlined);
    assert_int_equal(fg->site, F + 0x20);
    assert_false(ff->inlined);
    assert_int_equal(ff->site, F_SITE);
    assert_int_equal(ff->count, 1);
    cg_snapshot_free(&s);
}

/* A sample in uninstrumented code called from an inlined frame: the call
 * into it is made from the host's code (the writer must not take it for a
 * callback from the host). */
static void test_sample_under_an_inlined_frame(void **state)
{
    struct cg_costs *c = *state;
    uint32_t last[CG_SAMPLE_DEPTH];
    unsigned nlast = 0;
    hook_enter(c, MAIN, ROOT_SITE, SP, MAIN + 4, 0);
    hook_enter(c, F, F_SITE, SP - 0x40, F + 4, 1);
    hook_enter(c, G, F_SITE, SP - 0x40, F + 0x20, 2); /* g inlined into f */
    uintptr_t fns[1] = { LIBC_MEMSET }, sites[1] = { F + 0x30 };
    assert_int_equal(cg_costs_sample(c, fns, sites, 1, LIBC_MEMSET + 0x8, 1000, 1, last, &nlast), 0);
    hook_exit(c, G, SP - 0x40, 1003);
    hook_exit(c, F, SP - 0x40, 1004);
    hook_exit(c, MAIN, SP, 1005);
    struct cg_snapshot s;
    snap(c, 1005, &s);
    const struct cg_snap_arc *gm = arc_of(&s, G, LIBC_MEMSET);
    assert_non_null(gm);
    assert_true(gm->caller_inlined);
    assert_int_equal(gm->incl, 1000);
    cg_snapshot_free(&s);
}

/* Frames at the new call's sp that were left: the same inlined call
 * entered again from the same code (a longjmp out of it that the runtime
 * did not see), and a real call at that sp (its site is not the host's
 * return address, so the frames there are not its hosts). */
static void test_frames_at_the_same_sp_left(void **state)
{
    struct cg_costs *c = *state;
    hook_enter(c, MAIN, ROOT_SITE, SP, MAIN + 4, 0);
    hook_enter(c, F, F_SITE, SP - 0x40, F + 4, 1);
    hook_enter(c, G, F_SITE, SP - 0x40, F + 0x20, 2);
    hook_enter(c, H, F + 0x30, SP - 0x80, H + 4, 3);
    /* h and g never exit: g's inlined call is entered again */
    hook_enter(c, G, F_SITE, SP - 0x40, F + 0x20, 5);
    hook_exit(c, G, SP - 0x40, 6);
    struct cg_snapshot s;
    snap(c, 6, &s);
    assert_int_equal(s.left, 2);
    assert_int_equal(arc_of(&s, F, G)->count, 2);
    assert_null(arc_of(&s, G, G));
    cg_snapshot_free(&s);
    /* f never exits either: main calls g (a real call) at f's sp */
    hook_enter(c, G, MAIN + 0x20, SP - 0x40, G + 4, 7);
    hook_exit(c, G, SP - 0x40, 8);
    snap(c, 8, &s);
    assert_int_equal(s.left, 3);
    assert_int_equal(arc_of(&s, MAIN, G)->count, 1);
    assert_false(arc_of(&s, MAIN, G)->inlined);
    assert_int_equal(arc_of(&s, MAIN, F)->count, 1);
    cg_snapshot_free(&s);
}

/* A longjmp back to a depth seen at its setjmp ends the frames above it,
 * inlined ones too; unwinding to a stack pointer ends those below it. Both
 * are counted as ended by a jump, not as repairs. */
static void test_unwind_ends_frames(void **state)
{
    struct cg_costs *c = *state;
    hook_enter(c, MAIN, ROOT_SITE, SP, MAIN + 4, 0);
    hook_enter(c, F, F_SITE, SP - 0x40, F + 4, 1);
    uint32_t at_setjmp = c->depth;
    hook_enter(c, G, F_SITE, SP - 0x40, F + 0x20, 2); /* inlined, after the setjmp */
    hook_enter(c, H, F + 0x30, SP - 0x80, H + 4, 3);
    cg_costs_unwind_to(c, at_setjmp, 10);
    assert_int_equal(c->depth, 2);
    hook_enter(c, H, F + 0x40, SP - 0x80, H + 4, 11); /* f calls h after the jump */
    hook_enter(c, G, H + 0x10, SP - 0xc0, G + 4, 12);
    cg_costs_unwind_below(c, SP - 0x80, 14); /* lands in h */
    assert_int_equal(c->depth, 3);
    hook_exit(c, H, SP - 0x80, 15);
    hook_exit(c, F, SP - 0x40, 16);
    hook_exit(c, MAIN, SP, 17);
    struct cg_snapshot s;
    snap(c, 17, &s);
    assert_int_equal(s.left, 0);
    assert_int_equal(s.jumped, 3);
    assert_int_equal(arc_of(&s, F, G)->count, 1);
    assert_int_equal(arc_of(&s, G, H)->count, 1);
    assert_int_equal(arc_of(&s, F, H)->count, 1);
    assert_int_equal(arc_of(&s, H, G)->count, 1);
    ASSERT_ARC(&s, F, F + 0x20, G, 1, 8); /* 2 .. 10, at the place of its hook */
    assert_int_equal(sum_self(&s), 17);
    cg_snapshot_free(&s);
}

static void test_skipped_frame_is_resynchronised(void **state)
{
    /* a longjmp out of f and g (left out) back into main: the next entry,
     * from main's frame, pops both; f is counted, g is not */
    struct cg_costs *c = *state;
    struct cg_filter f;
    const uintptr_t skip[] = { G };
    filter_with(c, &f, skip, 1);
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, G, MAIN + 0x20, SP - 0x40, 10);
    enter(c, F, G + 0x08, SP - 0x80, 12);
    cg_costs_resync(c, H, MAIN + 0x99, SP - 0x40, H + 4, 1, 20);
    enter(c, H, MAIN + 0x30, SP - 0x40, 20);
    cg_costs_exit(c, H, 21);
    cg_costs_exit(c, MAIN, 22);
    struct cg_snapshot s;
    snap(c, 22, &s);
    assert_no_arc_to(&s, G);
    assert_int_equal(s.left, 2);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, F, 1, 8);
    ASSERT_ARC(&s, MAIN, MAIN + 0x30, H, 1, 1);
    assert_int_equal(sum_self(&s), 22);
    cg_snapshot_free(&s);
    filter_free(&f);
}

static void test_skip_set_checked_only_when_arc_is_made(void **state)
{
    /* the set is consulted by the slow path: an arc made before g was in
     * the set stays counted (the filters apply from their start-up scan) */
    struct cg_costs *c = *state;
    struct cg_filter f;
    const uintptr_t skip[] = { H };
    filter_with(c, &f, skip, 1);
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, G, MAIN + 0x20, SP - 0x40, 1);
    cg_costs_exit(c, G, 2);
    struct cg_addrset *more = cg_addrset_new(2);
    cg_addrset_add(more, H);
    cg_addrset_add(more, G);
    const struct cg_addrset *old = f.skip;
    f.skip = more;
    enter(c, G, MAIN + 0x20, SP - 0x40, 3);
    cg_costs_exit(c, G, 4);
    enter(c, G, MAIN + 0x28, SP - 0x40, 5);
    cg_costs_exit(c, G, 6);
    cg_costs_exit(c, MAIN, 7);
    struct cg_snapshot s;
    snap(c, 7, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 2, 2);
    assert_null(find_arc(&s, MAIN, MAIN + 0x28, G));
    cg_snapshot_free(&s);
    cg_addrset_free((struct cg_addrset *)old);
    filter_free(&f);
}

/* Throttling: N = 4 calls, T = 10 ns. */
static void throttle_with(struct cg_costs *c, struct cg_filter *f)
{
    memset(f, 0, sizeof *f);
    f->throttled = cg_addrset_new(16);
    assert_non_null(f->throttled);
    f->throttle_n = 4;
    f->throttle_ns = 10;
    c->filter = f;
    c->throttle_n = 4;
}

static void test_throttle_short_calls_after_n(void **state)
{
    /* f takes 2 ns a call (under 10): calls 1-4 counted, 5-10 left out,
     * their time main's own at the call site; g takes 50 ns: never */
    struct cg_costs *c = *state;
    struct cg_filter f;
    throttle_with(c, &f);
    uint64_t t = 0;
    enter(c, MAIN, ROOT_SITE, SP, t);
    for (int i = 0; i < 10; i++) {
        enter(c, F, MAIN + 0x10, SP - 0x40, t += 1);
        enter(c, H, F + 0x04, SP - 0x80, t);
        cg_costs_exit(c, H, t += 1);
        cg_costs_exit(c, F, t += 1);
        enter(c, G, MAIN + 0x20, SP - 0x40, t);
        cg_costs_exit(c, G, t += 50);
    }
    cg_costs_exit(c, MAIN, t += 1);
    struct cg_snapshot s;
    snap(c, t, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 4, 8);
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 10, 500);
    /* h was throttled first (its 4th call ended before f's): it is left
     * out of the later calls of f, and of main once f is */
    ASSERT_ARC(&s, F, F + 0x04, H, 4, 4);
    assert_null(find_arc(&s, MAIN, MAIN + 0x10, H));
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 6 * 2); /* calls 5-10 of f, h included */
    assert_int_equal(sum_self(&s), t);
    assert_true(cg_addrset_has(f.throttled, F));
    assert_true(cg_addrset_has(f.throttled, H));
    assert_false(cg_addrset_has(f.throttled, G));
    assert_false(cg_addrset_has(f.throttled, MAIN));
    cg_snapshot_free(&s);
    filter_free(&f);
}

static void test_throttled_elsewhere_applies_to_new_arcs(void **state)
{
    /* f throttled by another thread (in the set): a new arc to f is left
     * out from its first call; an old arc is checked at its Nth call */
    struct cg_costs *c = *state;
    struct cg_filter f;
    throttle_with(c, &f);
    uint64_t t = 0;
    enter(c, MAIN, ROOT_SITE, SP, t);
    enter(c, F, MAIN + 0x10, SP - 0x40, t += 1);
    cg_costs_exit(c, F, t += 100);
    cg_addrset_add(f.throttled, F);
    for (int i = 0; i < 5; i++) {
        enter(c, F, MAIN + 0x10, SP - 0x40, t += 1);
        cg_costs_exit(c, F, t += 100);
        enter(c, F, MAIN + 0x20, SP - 0x40, t += 1);
        cg_costs_exit(c, F, t += 100);
    }
    cg_costs_exit(c, MAIN, t += 1);
    struct cg_snapshot s;
    snap(c, t, &s);
    /* long calls, but f is throttled: the old arc stops at N */
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 4, 400);
    assert_null(find_arc(&s, MAIN, MAIN + 0x20, F));
    assert_int_equal(sum_self(&s), t);
    cg_snapshot_free(&s);
    filter_free(&f);
}

static void test_throttle_off_changes_nothing(void **state)
{
    struct cg_costs *c = *state;
    struct cg_filter f;
    throttle_with(c, &f);
    c->throttle_n = 0;
    f.throttle_n = 0;
    uint64_t t = 0;
    enter(c, MAIN, ROOT_SITE, SP, t);
    for (int i = 0; i < 10; i++) {
        enter(c, F, MAIN + 0x10, SP - 0x40, t += 1);
        cg_costs_exit(c, F, t += 1);
    }
    cg_costs_exit(c, MAIN, t += 1);
    struct cg_snapshot s;
    snap(c, t, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 10, 10);
    assert_int_equal(f.throttled->n, 0);
    cg_snapshot_free(&s);
    filter_free(&f);
}

/* ---- addrset ------------------------------------------------------------------------ */

static void test_addrset_add_has_list(void **state)
{
    (void)state;
    struct cg_addrset *s = cg_addrset_new(100);
    assert_non_null(s);
    assert_false(cg_addrset_has(s, 0x1000));
    assert_false(cg_addrset_has(NULL, 0x1000));
    for (uintptr_t a = 1; a <= 100; a++)
        assert_int_equal(cg_addrset_add(s, a * 0x10), 1);
    assert_int_equal(cg_addrset_add(s, 0x10), 0);
    assert_int_equal(cg_addrset_add(s, 0), -1);
    assert_int_equal(s->n, 100);
    for (uintptr_t a = 1; a <= 100; a++)
        assert_true(cg_addrset_has(s, a * 0x10));
    assert_false(cg_addrset_has(s, 0x11));
    assert_false(cg_addrset_has(s, 0));
    uintptr_t out[100];
    assert_int_equal(cg_addrset_list(s, out, 100), 100);
    uintptr_t sum = 0;
    for (int i = 0; i < 100; i++)
        sum += out[i];
    assert_int_equal(sum, 0x10 * 5050);
    cg_addrset_free(s);
}

static void test_addrset_full_refuses(void **state)
{
    (void)state;
    struct cg_addrset *s = cg_addrset_new(4); /* 16 slots: 8 addresses */
    assert_non_null(s);
    size_t added = 0;
    for (uintptr_t a = 1; a <= 64; a++)
        added += cg_addrset_add(s, a * 8) == 1;
    assert_int_equal(added, (s->mask + 1) / 2);
    assert_int_equal(s->n, added);
    assert_false(cg_addrset_has(s, 64 * 8)); /* refused, and lookups still end */
    cg_addrset_free(s);
}

int main(void)
{
    if (map_stack() != 0)
        return 1;
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_overhead_compensation),
        T(test_compensation_clock_back),
        T(test_arc_counts_and_inclusive),
        T(test_sample_chain_charges_uninstrumented_code),
        T(test_self_cost_at_entry_and_return_addresses),
        T(test_root_arc_has_caller_zero),
        T(test_call_pc_is_site_minus_one),
        T(test_self_costs_sum_to_root_inclusive),
        T(test_clock_stepping_back),
        T(test_repeated_calls_accumulate),
        T(test_distinct_sites_are_distinct_arcs),
        T(test_recursion_inclusive_sums_nested_calls),
        T(test_recursion_self_costs),
        T(test_recursion_runs_one_per_frame),
        T(test_runs_same_arc_repeated_is_one_run),
        T(test_runs_alternating_arcs_count_each_switch),
        T(test_runs_grouped_calls),
        T(test_runs_start_afresh_in_each_frame),
        T(test_exit_of_deeper_frame_pops_frames_above),
        T(test_exit_matching_nothing_is_dropped),
        T(test_exit_on_empty_stack_is_dropped),
        T(test_growth_5000_distinct_callees),
        T(test_growth_20000_distinct_arcs),
        T(test_growth_million_frames_deep),
        T(test_new_arcs_preserve_errno),
        T(test_zero_clears_counts_and_costs),
        T(test_zero_running_frames_restart_at_now),
        cmocka_unit_test(test_tsc_to_ns_identity),
        cmocka_unit_test(test_tsc_to_ns_subtracts_base),
        cmocka_unit_test(test_tsc_to_ns_rounds_down),
        cmocka_unit_test(test_tsc_to_ns_no_intermediate_overflow),
        T(test_skipped_function_cost_goes_to_caller),
        T(test_skipped_functions_nested),
        T(test_skipped_call_running_at_snapshot),
        T(test_skipped_frame_is_resynchronised),
        T(test_inlined_call_keeps_its_host),
        T(test_inlined_chain_and_recursion),
        T(test_inlined_below_the_host_and_recursion_from_one_site),
        T(test_frames_at_the_same_sp_left),
        T(test_sample_under_an_inlined_frame),
        T(test_unwind_ends_frames),
        T(test_skip_set_checked_only_when_arc_is_made),
        T(test_throttle_short_calls_after_n),
        T(test_throttled_elsewhere_applies_to_new_arcs),
        T(test_throttle_off_changes_nothing),
        cmocka_unit_test(test_lat_buckets),
        T(test_lat_arcs_parts_merge),
        T(test_lat_off),
        cmocka_unit_test(test_addrset_add_has_list),
        cmocka_unit_test(test_addrset_full_refuses),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
