/* Unit tests of reading.c: a running thread's tables read as a dump reads
 * them (from another thread, the thread still writing them): the calls in
 * progress at a reading, counted once with their time so far; what a
 * reading leaves out; parts, a reading minus a baseline (a paused interval
 * left out, a histogram read behind its count). The tables are driven as
 * in test_costs.c (costs_test.h). */
#include "costs_test.h"

/* ---- calls in progress at the snapshot ----------------------------------------- */

/* main (t=0) calls f at t=10 (site MAIN+0x10), f calls g at t=15 (site
 * F+0x10); all three still running. */
static void run_nested_open(struct cg_costs *c)
{
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 10);
    enter(c, G, F + 0x10, SP - 0x80, 15);
}

static void test_snapshot_counts_running_calls_once(void **state)
{
    struct cg_costs *c = *state;
    run_nested_open(c);
    struct cg_snapshot s;
    snap(c, 22, &s);
    assert_int_equal(s.depth, 3);
    assert_int_equal(s.narcs, 3);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 22);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 12);
    ASSERT_ARC(&s, F, F + 0x10, G, 1, 7);
    cg_snapshot_free(&s);
}

static void test_snapshot_adds_only_top_open_self_segment(void **state)
{
    struct cg_costs *c = *state;
    run_nested_open(c);
    struct cg_snapshot s;
    snap(c, 22, &s);
    assert_int_equal(s.nselfs, 3);
    ASSERT_SELF(&s, MAIN, MAIN, 10); /* closed when main called f */
    ASSERT_SELF(&s, F, F, 5);        /* closed when f called g */
    ASSERT_SELF(&s, G, G, 7);        /* open: 15 .. 22 */
    ASSERT_NO_SELF(&s, MAIN, MAIN + 0x10);
    ASSERT_NO_SELF(&s, F, F + 0x10);
    assert_int_equal(sum_self(&s), 22);
    cg_snapshot_free(&s);
}

static void test_snapshot_running_and_completed_calls_on_one_arc(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 2);
    cg_costs_exit(c, F, 6);
    enter(c, F, MAIN + 0x10, SP - 0x40, 8);
    struct cg_snapshot s;
    snap(c, 11, &s);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 2, 4 + 3); /* one completed (4), one running (3 so far) */
    ASSERT_SELF(&s, F, F, 4 + 3);
    ASSERT_SELF(&s, MAIN, MAIN, 2);
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 2);
    assert_int_equal(sum_self(&s), 11);
    cg_snapshot_free(&s);
}

static void test_snapshot_inside_recursion(void **state)
{
    struct cg_costs *c = *state;
    run_fib_until(c, 15); /* main, fib, fib, fib all running */
    struct cg_snapshot s;
    snap(c, 18, &s);
    assert_int_equal(s.depth, 4);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 18);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, FIB, 1, 8);
    ASSERT_ARC(&s, FIB, FIB + 0x10, FIB, 2, (18 - 12) + (18 - 15));
    ASSERT_SELF(&s, MAIN, MAIN, 10);
    ASSERT_SELF(&s, FIB, FIB, 2 + 3 + 3);
    assert_int_equal(s.nselfs, 2);
    assert_int_equal(sum_self(&s), 18);
    cg_snapshot_free(&s);
}

static void test_snapshot_does_not_modify_tables(void **state)
{
    struct cg_costs *c = *state;
    run_nested_open(c);
    size_t arcs_len = c->narcs * sizeof *c->arcs, selfs_len = c->nselfs * sizeof *c->selfs;
    size_t frames_len = c->depth * sizeof *c->frames;
    void *arcs = malloc(arcs_len), *selfs = malloc(selfs_len), *frames = malloc(frames_len);
    assert_non_null(arcs);
    assert_non_null(selfs);
    assert_non_null(frames);
    memcpy(arcs, c->arcs, arcs_len);
    memcpy(selfs, c->selfs, selfs_len);
    memcpy(frames, c->frames, frames_len);
    uint32_t narcs = c->narcs, nselfs = c->nselfs, depth = c->depth;

    struct cg_snapshot s1, s2;
    snap(c, 22, &s1);
    snap(c, 22, &s2);
    assert_snapshots_equal(&s1, &s2);
    assert_snapshots_equal(&s2, &s1);

    assert_int_equal(c->narcs, narcs);
    assert_int_equal(c->nselfs, nselfs);
    assert_int_equal(c->depth, depth);
    assert_memory_equal(c->arcs, arcs, arcs_len);
    assert_memory_equal(c->selfs, selfs, selfs_len);
    assert_memory_equal(c->frames, frames, frames_len);
    free(arcs);
    free(selfs);
    free(frames);
    cg_snapshot_free(&s1);
    cg_snapshot_free(&s2);
}

static void test_exits_after_snapshot_give_final_numbers(void **state)
{
    struct cg_costs *c = *state;
    run_nested_open(c);
    struct cg_snapshot s;
    snap(c, 22, &s);
    cg_snapshot_free(&s);
    snap(c, 28, &s); /* a later snapshot sees the calls run longer */
    ASSERT_ARC(&s, F, F + 0x10, G, 1, 13);
    ASSERT_SELF(&s, G, G, 13);
    cg_snapshot_free(&s);

    cg_costs_exit(c, G, 30);
    cg_costs_exit(c, F, 35);
    cg_costs_exit(c, MAIN, 40);
    snap(c, 40, &s);
    assert_int_equal(s.depth, 0);
    assert_int_equal(s.narcs, 3);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 40);
    ASSERT_ARC(&s, MAIN, MAIN + 0x10, F, 1, 25);
    ASSERT_ARC(&s, F, F + 0x10, G, 1, 15);
    assert_int_equal(s.nselfs, 5);
    ASSERT_SELF(&s, MAIN, MAIN, 10);
    ASSERT_SELF(&s, MAIN, MAIN + 0x10, 5);
    ASSERT_SELF(&s, F, F, 5);
    ASSERT_SELF(&s, F, F + 0x10, 5);
    ASSERT_SELF(&s, G, G, 15);
    assert_int_equal(sum_self(&s), 40);
    cg_snapshot_free(&s);
}

/* ---- what the snapshot leaves out ---------------------------------------------- */

static void test_snapshot_of_empty_tables(void **state)
{
    struct cg_costs *c = *state;
    struct cg_snapshot s;
    snap(c, 100, &s);
    assert_int_equal(s.narcs, 0);
    assert_int_equal(s.nselfs, 0);
    assert_int_equal(s.depth, 0);
    cg_snapshot_free(&s);
}

static void test_snapshot_omits_zero_count_and_zero_cost(void **state)
{
    struct cg_costs *c = *state;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 10);
    cg_costs_exit(c, F, 20);
    cg_costs_zero(c, 20);
    enter(c, G, MAIN + 0x20, SP - 0x40, 20); /* no time since the zero */
    cg_costs_exit(c, G, 25);
    struct cg_snapshot s;
    snap(c, 25, &s);
    assert_null(find_arc(&s, MAIN, MAIN + 0x10, F)); /* count 0 */
    ASSERT_ARC(&s, MAIN, MAIN + 0x20, G, 1, 5);
    ASSERT_ARC(&s, 0, ROOT_SITE, MAIN, 1, 5);
    assert_int_equal(s.narcs, 2);
    /* main's entry and site +0x10 have 0 now, site +0x20 too (main is
     * at its first ns after g returned) */
    ASSERT_NO_SELF(&s, MAIN, MAIN);
    ASSERT_NO_SELF(&s, MAIN, MAIN + 0x10);
    ASSERT_NO_SELF(&s, MAIN, MAIN + 0x20);
    ASSERT_NO_SELF(&s, F, F);
    ASSERT_SELF(&s, G, G, 5);
    assert_int_equal(s.nselfs, 1);
    for (size_t i = 0; i < s.narcs; i++)
        assert_true(s.arcs[i].count > 0);
    for (size_t i = 0; i < s.nselfs; i++)
        assert_true(s.selfs[i].cost > 0);
    cg_snapshot_free(&s);
}

static void test_snapshot_never_includes_sink(void **state)
{
    struct cg_costs *c = *state;
    run_simple(c);
    /* What the hooks charge when memory runs out goes to entry 0. */
    c->arcs[CG_SINK].count = 5;
    c->arcs[CG_SINK].incl = 100;
    c->selfs[CG_SINK].cost = 100;
    struct cg_snapshot s;
    snap(c, 60, &s);
    assert_int_equal(s.narcs, 4);
    assert_int_equal(s.nselfs, 6);
    assert_null(find_arc(&s, 0, 0, 0));
    ASSERT_NO_SELF(&s, 0, 0);
    assert_int_equal(sum_self(&s), 60);
    cg_snapshot_free(&s);
}

/* ---- parts: a reading minus a baseline ------------------------------------------ */

/* main runs across three parts, f across the first two, g within the
 * second: each call is counted once, in the first part that sees it, and
 * each part has only its own time. */
static void test_parts_count_each_call_once_and_split_time(void **state)
{
    struct cg_costs *c = *state;
    struct cg_reading base;
    memset(&base, 0, sizeof base);
    struct cg_snapshot p1, p2, p3;
    enter(c, MAIN, ROOT_SITE, SP, 0);
    enter(c, F, MAIN + 0x10, SP - 0x40, 5);
    take_part(c, 10, &base, &p1);
    cg_costs_exit(c, F, 20);
    enter(c, G, MAIN + 0x20, SP - 0x40, 25);
    cg_costs_exit(c, G, 30);
    take_part(c, 40, &base, &p2);
    cg_costs_exit(c, MAIN, 50);
    take_part(c, 60, &base, &p3);

    ASSERT_ARC(&p1, 0, ROOT_SITE, MAIN, 1, 10);
    ASSERT_ARC(&p1, MAIN, MAIN + 0x10, F, 1, 5);
    ASSERT_SELF(&p1, MAIN, MAIN, 5);
    ASSERT_SELF(&p1, F, F, 5);
    assert_int_equal(p1.continued, 0);

    ASSERT_ARC(&p2, 0, ROOT_SITE, MAIN, 0, 30);
    ASSERT_ARC(&p2, MAIN, MAIN + 0x10, F, 0, 10);
    ASSERT_ARC(&p2, MAIN, MAIN + 0x20, G, 1, 5);
    ASSERT_SELF(&p2, F, F, 10);
    ASSERT_SELF(&p2, MAIN, MAIN + 0x10, 5);
    ASSERT_SELF(&p2, G, G, 5);
    ASSERT_SELF(&p2, MAIN, MAIN + 0x20, 10);
    ASSERT_NO_SELF(&p2, MAIN, MAIN);
    assert_int_equal(sum_self(&p2), 30);
    assert_int_equal(p2.continued, 2);

    ASSERT_ARC(&p3, 0, ROOT_SITE, MAIN, 0, 10);
    assert_int_equal(p3.narcs, 1);
    ASSERT_SELF(&p3, MAIN, MAIN + 0x20, 10);
    assert_int_equal(sum_self(&p3), 10);
    assert_int_equal(p3.depth, 0);

    /* the parts add up to the run seen in one piece */
    struct cg_snapshot whole;
    snap(c, 60, &whole);
    ASSERT_ARC(&whole, 0, ROOT_SITE, MAIN, 1, 50);
    ASSERT_ARC(&whole, MAIN, MAIN + 0x10, F, 1, 15);
    assert_int_equal(sum_self(&p1) + sum_self(&p2) + sum_self(&p3), sum_self(&whole));
    cg_snapshot_free(&whole);
    cg_snapshot_free(&p1);
    cg_snapshot_free(&p2);
    cg_snapshot_free(&p3);
    cg_reading_free(&base);
}

/* Collection paused from 10 to 30: what happened in between is left out of
 * the next part (base += reading at resume - reading at pause), and the stack
 * stays right. */
static void test_skip_leaves_paused_interval_out(void **state)
{
    struct cg_costs *c = *state;
    struct cg_reading base, paused, now;
    memset(&base, 0, sizeof base);
    memset(&paused, 0, sizeof paused);
    memset(&now, 0, sizeof now);
    enter(c, MAIN, ROOT_SITE, SP, 0);
    assert_int_equal(cg_reading_take(c, 10, &paused), 0); /* pause */
    enter(c, F, MAIN + 0x10, SP - 0x40, 12);
    cg_costs_exit(c, F, 18);
    assert_int_equal(cg_reading_take(c, 30, &now), 0); /* resume */
    assert_int_equal(cg_reading_skip(&base, &now, &paused), 0);
    enter(c, G, MAIN + 0x20, SP - 0x40, 35);
    cg_costs_exit(c, G, 38);
    cg_costs_exit(c, MAIN, 40);
    struct cg_snapshot p;
    take_part(c, 50, &base, &p);
    ASSERT_ARC(&p, 0, ROOT_SITE, MAIN, 1, 20); /* 0..10 and 30..40 */
    ASSERT_ARC(&p, MAIN, MAIN + 0x20, G, 1, 3);
    assert_null(find_arc(&p, MAIN, MAIN + 0x10, F));
    assert_int_equal(sum_self(&p), 20);
    cg_snapshot_free(&p);
    cg_reading_free(&base);
    cg_reading_free(&paused);
    cg_reading_free(&now);
}

/* ---- latency histograms (CGPROF_LATENCY) ------------------------------------ */

/* A reading that saw a call's count but not yet its histogram (the exit
 * stores them in that order; a reading runs while the thread does): the
 * next part has the call in its histogram only, on the arc with no call
 * and no time, which is shown (not a call continued), not taken into the
 * base unseen. */
static void test_lat_histogram_behind_its_count(void **state)
{
    struct cg_costs *c = *state;
    assert_int_equal(cg_costs_latency_on(c), 0);
    enter(c, MAIN, ROOT_SITE, SP, 0);
    call_f(c, MAIN + 0x10, 10, 100);
    struct cg_reading base, cur;
    memset(&base, 0, sizeof base);
    memset(&cur, 0, sizeof cur);
    assert_int_equal(cg_reading_take(c, 200, &base), 0);
    uint32_t arc = 0;
    for (uint32_t i = 1; i < c->narcs; i++)
        if (c->arcs[i].callee == F)
            arc = i;
    assert_true(arc != 0);
    base.lat[(size_t)arc * CG_LAT_ROW + cg_lat_bucket(100)]--; /* as if read before the exit stored it */
    assert_int_equal(cg_reading_take(c, 300, &cur), 0);
    struct cg_snapshot s;
    assert_int_equal(cg_reading_part(c, &cur, &base, &s), 0);
    const struct cg_snap_arc *a = find_arc(&s, MAIN, MAIN + 0x10, F);
    assert_non_null(a);
    assert_int_equal(a->count, 0);
    assert_int_equal(a->incl, 0);
    assert_int_equal(lat_calls(lat_of(&s, MAIN, MAIN + 0x10, F)), 1);
    assert_int_equal(s.continued, 1); /* MAIN's own call, running: not F's */
    cg_snapshot_free(&s);
    cg_reading_free(&cur);
    cg_reading_free(&base);
}

int main(void)
{
    if (map_stack() != 0)
        return 1;
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_parts_count_each_call_once_and_split_time),
        T(test_skip_leaves_paused_interval_out),
        T(test_snapshot_counts_running_calls_once),
        T(test_snapshot_adds_only_top_open_self_segment),
        T(test_snapshot_running_and_completed_calls_on_one_arc),
        T(test_snapshot_inside_recursion),
        T(test_snapshot_does_not_modify_tables),
        T(test_exits_after_snapshot_give_final_numbers),
        T(test_snapshot_of_empty_tables),
        T(test_snapshot_omits_zero_count_and_zero_cost),
        T(test_snapshot_never_includes_sink),
        T(test_lat_histogram_behind_its_count),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
