/* Unit tests of merge.c: snapshots summed, as the parts of the threads
 * that ended and the process's total (CGPROF_TOTAL) are: the same keys add
 * up, the others are kept, and parts cut by dumps add up to the whole
 * threads. The tables are driven as in test_costs.c (costs_test.h). */
#include "costs_test.h"
#include "merge.h"

/* Parts of threads that ended, summed: same keys add up, others are kept. */
static void test_merged_parts_add_up(void **state)
{
    (void)state;
    struct cg_snap_arc a1[] = { { 0, ROOT_SITE, F, ROOT_SITE - 1, 1, 100, 1, 0, 0 },
                                { F, F + 0x10, G, F + 0xb, 3, 30, 1, 0, 0 } };
    struct cg_snap_self s1[] = { { F, F, 60, 0 }, { G, G, 30, 0 }, { F, F + 0x10, 10, 0 } };
    struct cg_snap_arc a2[] = { { 0, ROOT_SITE, F, ROOT_SITE - 1, 1, 50, 1, 0, 0 },
                                { F, F + 0x20, H, F + 0x1b, 2, 20, 1, 0, 0 },
                                { F, F + 0x10, G, F + 0xb, 0, 5, 0, 0, 0 } };
    struct cg_snap_self s2[] = { { F, F, 25, 0 }, { H, H, 20, 0 }, { G, G, 5, 0 } };
    struct cg_snapshot p1 = { .arcs = a1, .narcs = 2, .selfs = s1, .nselfs = 3, .lost = 1 };
    struct cg_snapshot p2 = { .arcs = a2, .narcs = 3, .selfs = s2, .nselfs = 3, .unmatched_exits = 2 };
    struct cg_merged m;
    memset(&m, 0, sizeof m);
    assert_int_equal(cg_merged_add(&m, &p1), 0);
    assert_int_equal(cg_merged_add(&m, &p2), 0);
    assert_int_equal(m.threads, 2);
    ASSERT_ARC(&m.snap, 0, ROOT_SITE, F, 2, 150);
    ASSERT_ARC(&m.snap, F, F + 0x10, G, 3, 35);
    ASSERT_ARC(&m.snap, F, F + 0x20, H, 2, 20);
    assert_int_equal(m.snap.narcs, 3);
    ASSERT_SELF(&m.snap, F, F, 85);
    ASSERT_SELF(&m.snap, G, G, 35);
    ASSERT_SELF(&m.snap, H, H, 20);
    ASSERT_SELF(&m.snap, F, F + 0x10, 10);
    assert_int_equal(sum_self(&m.snap), 150);
    assert_int_equal(m.snap.lost, 1);
    assert_int_equal(m.snap.unmatched_exits, 2);
    assert_int_equal(m.snap.continued, 0);
    /* many distinct entries: the index grows */
    struct cg_snap_self many[3000];
    for (unsigned i = 0; i < 3000; i++)
        many[i] = (struct cg_snap_self){ H, H + i, 1, 0 };
    struct cg_snapshot p3 = { .selfs = many, .nselfs = 3000 };
    assert_int_equal(cg_merged_add(&m, &p3), 0);
    assert_int_equal(cg_merged_add(&m, &p3), 0);
    ASSERT_SELF(&m.snap, H, H + 2999, 2);
    ASSERT_SELF(&m.snap, H, H, 22);
    cg_merged_free(&m);
}

/* CGPROF_TOTAL: the parts of two threads, taken at dumps that cut calls in
 * progress, summed as the runtime sums them, are exactly what one reading of
 * each whole thread at its end gives, summed: each call counted once, no
 * time lost or counted twice, no calls=0 left. */
static void test_total_of_parts_is_whole_run(void **state)
{
    struct cg_costs *a = *state, b;
    assert_int_equal(cg_costs_init(&b, 0), 0);
    struct cg_reading base_a, base_b, end;
    memset(&base_a, 0, sizeof base_a);
    memset(&base_b, 0, sizeof base_b);
    memset(&end, 0, sizeof end);
    struct cg_snapshot pa[3], pb[2], whole_a, whole_b;

    enter(a, MAIN, ROOT_SITE, SP, 0);
    enter(&b, MAIN, ROOT_SITE, SP, 2); /* a second thread running main */
    enter(a, F, MAIN + 0x10, SP - 0x40, 5);
    enter(&b, G, MAIN + 0x20, SP - 0x40, 6);
    take_part(a, 10, &base_a, &pa[0]);  /* dump 1: main, f, g all running */
    take_part(&b, 10, &base_b, &pb[0]);
    cg_costs_exit(a, F, 20);
    enter(a, G, MAIN + 0x20, SP - 0x40, 25);
    cg_costs_exit(a, G, 30);
    cg_costs_exit(&b, G, 33);
    enter(&b, F, MAIN + 0x10, SP - 0x40, 34);
    cg_costs_exit(&b, F, 36);
    cg_costs_exit(&b, MAIN, 38);
    take_part(&b, 38, &base_b, &pb[1]); /* b's last part, as it ends */
    take_part(a, 40, &base_a, &pa[1]);  /* dump 2 */
    cg_costs_exit(a, MAIN, 50);
    take_part(a, 60, &base_a, &pa[2]);  /* exit */

    assert_int_equal(cg_reading_take(a, 60, &end), 0);
    assert_int_equal(cg_reading_part(a, &end, NULL, &whole_a), 0);
    assert_int_equal(cg_reading_take(&b, 38, &end), 0);
    assert_int_equal(cg_reading_part(&b, &end, NULL, &whole_b), 0);

    struct cg_merged total, expected;
    memset(&total, 0, sizeof total);
    memset(&expected, 0, sizeof expected);
    /* the first part taken (its arrays become the sum's), the rest added */
    assert_int_equal(cg_merged_take(&total, &pa[0]), 0);
    assert_null(pa[0].arcs);
    assert_int_equal(pa[0].narcs, 0);
    for (int i = 1; i < 3; i++)
        assert_int_equal(cg_merged_take(&total, &pa[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(cg_merged_add(&total, &pb[i]), 0);
    assert_int_equal(cg_merged_add(&expected, &whole_a), 0);
    assert_int_equal(cg_merged_add(&expected, &whole_b), 0);
    assert_int_equal(total.threads, 5); /* parts added */
    assert_snapshots_equal(&expected.snap, &total.snap);
    assert_snapshots_equal(&total.snap, &expected.snap);
    assert_int_equal(total.snap.continued, 0);
    /* by hand: main twice from the root (60 + 36), f twice, g twice */
    ASSERT_ARC(&total.snap, 0, ROOT_SITE, MAIN, 2, 50 + 36);
    ASSERT_ARC(&total.snap, MAIN, MAIN + 0x10, F, 2, 15 + 2);
    ASSERT_ARC(&total.snap, MAIN, MAIN + 0x20, G, 2, 5 + 27);
    assert_int_equal(sum_self(&total.snap), 50 + 36);

    cg_merged_free(&total);
    cg_merged_free(&expected);
    for (int i = 0; i < 3; i++)
        cg_snapshot_free(&pa[i]);
    for (int i = 0; i < 2; i++)
        cg_snapshot_free(&pb[i]);
    cg_snapshot_free(&whole_a);
    cg_snapshot_free(&whole_b);
    cg_reading_free(&base_a);
    cg_reading_free(&base_b);
    cg_reading_free(&end);
    cg_costs_destroy(&b);
}

int main(void)
{
    if (map_stack() != 0)
        return 1;
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_merged_parts_add_up),
        T(test_total_of_parts_is_whole_run),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
