/* Unit tests of gone.c, the list of objects unloaded by dlclose(): an
 * address is named from the object that held it in the tables when it
 * went, even when a later object took the same range; other addresses of a
 * range fall to the last object there, unless something is mapped at the
 * address now. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gone.h"

static uintptr_t *addrs(size_t n, const uintptr_t *v)
{
    uintptr_t *a = malloc(n * sizeof *a + 1);
    assert_non_null(a);
    memcpy(a, v, n * sizeof *a);
    return a;
}

static const char *found(struct cg_gone *g, uintptr_t addr, int current, uintptr_t *base)
{
    const char *path = NULL;
    *base = 0;
    return cg_gone_find(g, addr, current, &path, base) ? path : NULL;
}

static void test_empty_list_finds_nothing(void **state)
{
    (void)state;
    struct cg_gone g = CG_GONE_INIT;
    uintptr_t base;
    assert_null(found(&g, 0x1000, 0, &base));
    assert_null(found(&g, 0x1000, 1, &base));
}

static void test_owned_addresses_stay_with_their_object(void **state)
{
    (void)state;
    struct cg_gone g = CG_GONE_INIT;
    const uintptr_t first[] = { 0x1010, 0x1020 }, second[] = { 0x1020, 0x1030 };
    /* plugin A at 0x1000-0x2000 held 0x1010 and 0x1020 when it went */
    assert_int_equal(cg_gone_add(&g, strdup("/a.so"), 0x1000, 0x1000, 0x2000, addrs(2, first), 2), 0);
    /* plugin B later in the same range: 0x1020 stays A's, 0x1030 is B's */
    assert_int_equal(cg_gone_add(&g, strdup("/b.so"), 0x1000, 0x1000, 0x2000, addrs(2, second), 2), 0);
    uintptr_t base;
    assert_string_equal(found(&g, 0x1010, 1, &base), "/a.so");
    assert_int_equal(base, 0x1000);
    assert_string_equal(found(&g, 0x1020, 1, &base), "/a.so");
    assert_string_equal(found(&g, 0x1030, 1, &base), "/b.so");
    /* an address no object held: mapped now (current), not theirs; else
     * the last object whose range holds it */
    assert_null(found(&g, 0x1040, 1, &base));
    assert_string_equal(found(&g, 0x1040, 0, &base), "/b.so");
    /* outside every range */
    assert_null(found(&g, 0x3000, 0, &base));
    for (size_t i = 0; i < g.n; i++) {
        free(g.v[i].path);
        free(g.v[i].owned);
    }
    free(g.v);
}

static void test_many_objects(void **state)
{
    (void)state;
    struct cg_gone g = CG_GONE_INIT;
    /* more records than the first allocation holds */
    for (uintptr_t k = 0; k < 100; k++) {
        uintptr_t lo = 0x100000 * (k + 1), a = lo + 8;
        char name[32];
        snprintf(name, sizeof name, "/p%u.so", (unsigned)k);
        assert_int_equal(cg_gone_add(&g, strdup(name), lo, lo, lo + 0x1000, addrs(1, &a), 1), 0);
    }
    assert_int_equal(g.n, 100);
    uintptr_t base;
    assert_string_equal(found(&g, 0x100000 * 42 + 8, 1, &base), "/p41.so");
    assert_int_equal(base, 0x100000 * 42);
    for (size_t i = 0; i < g.n; i++) {
        free(g.v[i].path);
        free(g.v[i].owned);
    }
    free(g.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_list_finds_nothing),
        cmocka_unit_test(test_owned_addresses_stay_with_their_object),
        cmocka_unit_test(test_many_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
