/* Unit tests of writer.c and partmodel.c (cg_write_part): snapshots and
 * symbol tables built by hand, the Callgrind text of the part compared with
 * what the format specification (../shared/spec/callgrind-format.txt) says
 * it must be, to the byte. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "writer.h"

/* ---- helpers ----------------------------------------------------------------- */

/* A function as the symbol lookup would describe it. */
struct fn_def {
    const char *object;
    uintptr_t base;  /* load address of the object */
    const char *name;
    uintptr_t start; /* object-relative */
    const char *file;
    unsigned line;
};

/* Run-time address of the code at offset off in fn. */
static uintptr_t at(const struct fn_def *fn, uintptr_t off)
{
    return fn->base + fn->start + off;
}

struct syms {
    struct cg_symtab_entry v[64];
    struct cg_symbol sym[64]; /* what v[] points to */
    size_t n;
};

/* Adds the symbol of the code at offset off in fn: its source is `file`
 * (NULL: the function's own file) at `line`. */
static void add_sym(struct syms *t, const struct fn_def *fn, uintptr_t off, const char *file, unsigned line)
{
    assert_true(t->n < sizeof t->v / sizeof t->v[0]);
    struct cg_symtab_entry *e = &t->v[t->n];
    struct cg_symbol *sym = &t->sym[t->n++];
    memset(sym, 0, sizeof *sym);
    e->addr = at(fn, off);
    e->sym = sym;
    sym->object = fn->object;
    sym->obj_addr = fn->start + off;
    sym->function = fn->name;
    sym->fn_start = at(fn, 0);
    sym->fn_obj_addr = fn->start;
    sym->fn_file = fn->file;
    sym->fn_line = fn->line;
    sym->file = file ? file : fn->file;
    sym->line = line;
}

/* The entry of fn, at its own line. */
static void add_entry(struct syms *t, const struct fn_def *fn)
{
    add_sym(t, fn, 0, NULL, fn->line);
}

static int cmp_entry(const void *pa, const void *pb)
{
    const struct cg_symtab_entry *a = pa, *b = pb;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The table sorted by address, as the writer requires. */
static struct cg_symtab symtab_of(struct syms *t)
{
    qsort(t->v, t->n, sizeof t->v[0], cmp_entry);
    for (size_t i = 1; i < t->n; i++)
        assert_true(t->v[i - 1].addr < t->v[i].addr);
    struct cg_symtab s = { t->v, t->n };
    return s;
}

#define SNAP(arcs_, selfs_)                                                                                 \
    { .arcs = (arcs_), .narcs = sizeof(arcs_) / sizeof((arcs_)[0]), .selfs = (selfs_),                       \
      .nselfs = sizeof(selfs_) / sizeof((selfs_)[0]) }
#define SNAP_SELFS(selfs_) { .selfs = (selfs_), .nselfs = sizeof(selfs_) / sizeof((selfs_)[0]) }

static const struct cg_part_info test_info = {
    .creator = "cgprof-test",
    .pid = 100,
    .thread = 1,
    .part = 1,
    .cmd = "./prog",
    .trigger = "Program termination",
    .clock = NULL,
    .extra_desc = NULL,
};

/* The header written for test_info. */
#define HEADER(summary)                                                                                     \
    "# callgrind format\n"                                                                                 \
    "version: 1\n"                                                                                         \
    "creator: cgprof-test\n"                                                                               \
    "pid: 100\n"                                                                                           \
    "thread: 1\n"                                                                                          \
    "part: 1\n"                                                                                            \
    "cmd: ./prog\n"                                                                                        \
    "desc: Trigger: Program termination\n"                                                                 \
    "positions: instr line\n"                                                                              \
    "event: ns : Wall-clock time (nanoseconds)\n"                                                          \
    "events: ns\n"                                                                                         \
    "summary: " summary "\n"                                                                               \
    "\n"

/* Writes one part; the caller frees the text. */
static char *write_part(const struct cg_part_info *info, const struct cg_snapshot *snap, const struct cg_symtab *t)
{
    struct cg_buf b;
    cg_buf_init(&b);
    assert_int_equal(cg_write_part(info, snap, t, &b), 0);
    assert_int_equal(b.failed, 0);
    assert_non_null(b.data);
    assert_int_equal(strlen(b.data), b.len);
    return b.data;
}

/* Compares texts, naming the first line that differs. */
static void assert_text(const char *actual, const char *expected)
{
    if (strcmp(actual, expected) == 0)
        return;
    const char *a = actual, *e = expected;
    unsigned line = 1;
    while (*a && *a == *e) {
        if (*a == '\n') {
            line++;
            actual = a + 1;
            expected = e + 1;
        }
        a++;
        e++;
    }
    print_error("first difference at line %u:\n  actual:   \"%.*s\"\n  expected: \"%.*s\"\n", line,
                (int)strcspn(actual, "\n"), actual, (int)strcspn(expected, "\n"), expected);
    fail();
}

/* Checks what every part must satisfy: each calls= line followed at once by
 * a cost line, totals: the last line, equal to summary:, equal to the sum of
 * the self cost lines. */
static void assert_well_formed(const char *text)
{
    unsigned long long summary = 0, totals = 0, self_sum = 0;
    const char *s = strstr(text, "\nsummary: ");
    assert_non_null(s);
    summary = strtoull(s + 10, NULL, 10);
    const char *t = strstr(text, "\ntotals: ");
    assert_non_null(t);
    totals = strtoull(t + 9, NULL, 10);
    const char *end = strchr(t + 1, '\n');
    assert_non_null(end);
    assert_int_equal(end[1], 0); /* totals: is the last line */
    assert_int_equal(summary, totals);

    const char *body = strstr(text, "\n\n");
    assert_non_null(body);
    int after_calls = 0;
    for (const char *l = body + 2; l < t + 1;) {
        size_t len = strcspn(l, "\n");
        int cost_line = len > 0 && strchr("0123456789+-*", l[0]) != NULL;
        if (after_calls && !cost_line)
            fail_msg("calls= not followed by a cost line: \"%.*s\"", (int)len, l);
        if (cost_line) {
            /* "addr line cost": three fields */
            const char *p = l;
            int fields = 0;
            for (const char *q = l; q <= l + len; q++)
                if (q == l + len || *q == ' ') {
                    if (q > p)
                        fields++;
                    p = q + 1;
                }
            if (fields != 3)
                fail_msg("cost line \"%.*s\" has %d fields", (int)len, l, fields);
            if (!after_calls) {
                const char *last = l + len;
                while (last > l && last[-1] != ' ')
                    last--;
                self_sum += strtoull(last, NULL, 10);
            }
        }
        after_calls = strncmp(l, "calls=", 6) == 0;
        l += len + 1;
    }
    assert_int_equal(after_calls, 0);
    assert_int_equal(self_sum, totals);
}

/* ---- cases as tables ----------------------------------------------------------------
 * How to add a writer case: declare its functions (struct fn_def), then a
 * struct wcase with designated initialisers: the symbols the lookup knows
 * (.syms: a function's entry at its own line, or the code at .off in it at
 * .file:.line, .file NULL for the function's own), the snapshot's arcs
 * (.site: the return address, .call: the call instruction, both offsets in
 * the caller) and self costs (.at: an offset in the function), and the file
 * expected to the byte (.expected, from HEADER(summary)) or a line it must
 * hold (.holds); then WCASE(name) in main's list. */

struct wsym {
    const struct fn_def *fn;
    uintptr_t off;
    const char *file; /* NULL: the function's own */
    unsigned line;    /* 0: the function's own (its entry) */
};

struct warc {
    const struct fn_def *caller, *callee;
    uintptr_t site, call; /* offsets in the caller */
    uint64_t count, incl;
};

struct wself {
    const struct fn_def *fn;
    uintptr_t at;
    uint64_t cost;
};

struct wcase {
    struct wsym syms[8];
    struct warc arcs[4];
    struct wself selfs[6];
    const char *expected;  /* the whole file */
    const char *holds;     /* else: a string the file holds */
    const char *absent[2]; /* strings it must not hold */
    int well_formed;       /* assert_well_formed too */
};

/* The test of one case (its struct wcase in *state). */
static void run_wcase(void **state)
{
    const struct wcase *c = *state;
    struct syms sy = { .n = 0 };
    for (size_t i = 0; i < sizeof c->syms / sizeof c->syms[0] && c->syms[i].fn; i++) {
        const struct wsym *w = &c->syms[i];
        add_sym(&sy, w->fn, w->off, w->file, w->line ? w->line : w->fn->line);
    }
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_arc arcs[sizeof c->arcs / sizeof c->arcs[0]];
    struct cg_snap_self selfs[sizeof c->selfs / sizeof c->selfs[0]];
    struct cg_snapshot snap = { .arcs = NULL, .selfs = selfs };
    for (size_t i = 0; i < sizeof c->arcs / sizeof c->arcs[0] && c->arcs[i].caller; i++) {
        const struct warc *a = &c->arcs[i];
        arcs[snap.narcs++] = (struct cg_snap_arc){ .caller = at(a->caller, 0), .site = at(a->caller, a->site),
                                                   .callee = at(a->callee, 0), .call_pc = at(a->caller, a->call),
                                                   .count = a->count, .incl = a->incl, .runs = 1 };
        snap.arcs = arcs;
    }
    for (size_t i = 0; i < sizeof c->selfs / sizeof c->selfs[0] && c->selfs[i].fn; i++) {
        const struct wself *w = &c->selfs[i];
        selfs[snap.nselfs++] = (struct cg_snap_self){ .fn = at(w->fn, 0), .addr = at(w->fn, w->at), .cost = w->cost };
    }
    char *text = write_part(&test_info, &snap, &t);
    assert_true(c->expected || c->holds); /* a case that checks nothing is a mistake */
    if (c->expected)
        assert_text(text, c->expected);
    if (c->holds)
        assert_non_null(strstr(text, c->holds));
    for (size_t i = 0; i < 2 && c->absent[i]; i++)
        assert_null(strstr(text, c->absent[i]));
    if (c->well_formed)
        assert_well_formed(text);
    free(text);
}

#define WCASE(c) { .name = "test_" #c, .test_func = run_wcase, .initial_state = (void *)&(c) }

/* ---- header and totals ---------------------------------------------------------- */

static void test_header_fields_in_order(void **state)
{
    (void)state;
    static const char *const extra[] = { "Lost: 0 calls", "Unmatched exits: 2", NULL };
    const struct cg_part_info info = {
        .creator = "cgprof 0.1.0",
        .pid = 4242,
        .thread = 3,
        .part = 2,
        .cmd = "./basic --n 3",
        .trigger = "Program termination",
        .clock = "tsc, 2995.2 MHz",
        .extra_desc = extra,
    };
    static const struct fn_def f = { "/bin/basic", 0, "work", 0x1000, "basic.c", 5 };
    struct syms sy = { .n = 0 };
    add_entry(&sy, &f);
    add_sym(&sy, &f, 8, NULL, 6);
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_self selfs[] = { { at(&f, 0), at(&f, 0), 25 }, { at(&f, 0), at(&f, 8), 17 } };
    struct cg_snapshot snap = SNAP_SELFS(selfs);
    char *text = write_part(&info, &snap, &t);
    assert_text(text, "# callgrind format\n"
                      "version: 1\n"
                      "creator: cgprof 0.1.0\n"
                      "pid: 4242\n"
                      "thread: 3\n"
                      "part: 2\n"
                      "cmd: ./basic --n 3\n"
                      "desc: Trigger: Program termination\n"
                      "desc: Clock: tsc, 2995.2 MHz\n"
                      "desc: Lost: 0 calls\n"
                      "desc: Unmatched exits: 2\n"
                      "positions: instr line\n"
                      "event: ns : Wall-clock time (nanoseconds)\n"
                      "events: ns\n"
                      "summary: 42\n"
                      "\n"
                      "ob=(1) /bin/basic\n"
                      "fl=(1) basic.c\n"
                      "fn=(1) work\n"
                      "0x1000 5 25\n"
                      "+8 6 17\n"
                      "\n"
                      "totals: 42\n");
    assert_well_formed(text);
    free(text);
}

static void test_header_defaults(void **state)
{
    (void)state;
    const struct cg_part_info info = { .pid = 7, .thread = 1, .part = 1 };
    struct cg_symtab t = { NULL, 0 };
    struct cg_snapshot snap = { 0 };
    char *text = write_part(&info, &snap, &t);
    assert_text(text, "# callgrind format\n"
                      "version: 1\n"
                      "creator: cgprof\n"
                      "pid: 7\n"
                      "thread: 1\n"
                      "part: 1\n"
                      "cmd: \n"
                      "desc: Trigger: Program termination\n"
                      "positions: instr line\n"
                      "event: ns : Wall-clock time (nanoseconds)\n"
                      "events: ns\n"
                      "summary: 0\n"
                      "\n"
                      "totals: 0\n");
    free(text);
}

static void test_header_values_stay_on_one_line(void **state)
{
    (void)state;
    static const char *const extra[] = { "Note: a\nb", NULL };
    const struct cg_part_info info = { .creator = "cg\nprof", .pid = 1, .thread = 1, .part = 1,
                                       .cmd = "./prog 'a\nb'\r", .trigger = "Signal\nUSR1",
                                       .clock = "mono\ntonic", .extra_desc = extra };
    struct cg_symtab t = { NULL, 0 };
    struct cg_snapshot snap = { 0 };
    char *text = write_part(&info, &snap, &t);
    assert_text(text, "# callgrind format\n"
                      "version: 1\n"
                      "creator: cg?prof\n"
                      "pid: 1\n"
                      "thread: 1\n"
                      "part: 1\n"
                      "cmd: ./prog 'a?b'?\n"
                      "desc: Trigger: Signal?USR1\n"
                      "desc: Clock: mono?tonic\n"
                      "desc: Note: a?b\n"
                      "positions: instr line\n"
                      "event: ns : Wall-clock time (nanoseconds)\n"
                      "events: ns\n"
                      "summary: 0\n"
                      "\n"
                      "totals: 0\n");
    free(text);
}

static void test_totals_sum_self_costs_only(void **state)
{
    (void)state;
    /* main (self 3) calls f (self 4) with an inclusive cost of 4: the total is
     * 7, the call's inclusive cost is not added again. */
    static const struct fn_def m = { "/bin/p", 0, "main", 0x100, "p.c", 1 };
    static const struct fn_def f = { "/bin/p", 0, "f", 0x200, "p.c", 9 };
    struct syms sy = { .n = 0 };
    add_entry(&sy, &m);
    add_sym(&sy, &m, 4, NULL, 2);
    add_entry(&sy, &f);
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_arc arcs[] = { { at(&m, 0), at(&m, 5), at(&f, 0), at(&m, 4), 1, 4, 1 } };
    struct cg_snap_self selfs[] = { { at(&m, 0), at(&m, 0), 3 }, { at(&f, 0), at(&f, 0), 4 } };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, HEADER("7") "ob=(1) /bin/p\n"
                                  "fl=(1) p.c\n"
                                  "fn=(1) f\n"
                                  "0x200 9 4\n"
                                  "\n"
                                  "fn=(2) main\n"
                                  "-256 1 3\n"
                                  "cfn=(1)\n"
                                  "calls=1 0x200 9\n"
                                  "+4 2 4\n"
                                  "\n"
                                  "totals: 7\n");
    assert_well_formed(text);
    free(text);
}

/* CGPROF_POSITIONS=line (line_only): the same part as above with one
 * position column, the source line, in the header, the cost lines (still
 * compressed: "*" for the line before's) and the calls= target; two addresses of one
 * line stay two cost lines (the readers add them). */
static void test_line_positions(void **state)
{
    (void)state;
    static const struct fn_def m = { "/bin/p", 0, "main", 0x100, "p.c", 1 };
    static const struct fn_def f = { "/bin/p", 0, "f", 0x200, "p.c", 9 };
    struct syms sy = { .n = 0 };
    add_entry(&sy, &m);
    add_sym(&sy, &m, 4, NULL, 2);
    add_sym(&sy, &m, 9, NULL, 2);
    add_entry(&sy, &f);
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_arc arcs[] = { { at(&m, 0), at(&m, 5), at(&f, 0), at(&m, 4), 1, 4, 1 } };
    struct cg_snap_self selfs[] = { { at(&m, 0), at(&m, 0), 3 }, { at(&m, 0), at(&m, 9), 5 },
                                    { at(&f, 0), at(&f, 0), 4 } };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    struct cg_part_info info = test_info;
    info.line_only = 1;
    char *text = write_part(&info, &snap, &t);
    assert_text(text, "# callgrind format\n"
                      "version: 1\n"
                      "creator: cgprof-test\n"
                      "pid: 100\n"
                      "thread: 1\n"
                      "part: 1\n"
                      "cmd: ./prog\n"
                      "desc: Trigger: Program termination\n"
                      "positions: line\n"
                      "event: ns : Wall-clock time (nanoseconds)\n"
                      "events: ns\n"
                      "summary: 12\n"
                      "\n"
                      "ob=(1) /bin/p\n"
                      "fl=(1) p.c\n"
                      "fn=(1) f\n"
                      "9 4\n"
                      "\n"
                      "fn=(2) main\n"
                      "1 3\n"
                      "cfn=(1)\n"
                      "calls=1 9\n"
                      "2 4\n"
                      "* 5\n"
                      "\n"
                      "totals: 12\n");
    free(text);
}

/* ---- name compression (spec 3.1.5) ---------------------------------------------- */

/* The spec's example: main calls func1 once and func2 three times, func1
 * calls func2 twice; main and func1 are in file1.c, func2 in file2.c. */
static void test_name_compression_spec_example(void **state)
{
    (void)state;
    static const struct fn_def m = { "/bin/prog", 0, "main", 0x1000, "file1.c", 16 };
    static const struct fn_def f1 = { "/bin/prog", 0, "func1", 0x1100, "file1.c", 51 };
    static const struct fn_def f2 = { "/bin/prog", 0, "func2", 0x2000, "file2.c", 20 };
    struct syms sy = { .n = 0 };
    add_entry(&sy, &m);
    add_sym(&sy, &m, 0x10, NULL, 16);
    add_sym(&sy, &m, 0x20, NULL, 16);
    add_entry(&sy, &f1);
    add_sym(&sy, &f1, 0x10, NULL, 51);
    add_entry(&sy, &f2);
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_arc arcs[] = {
        { at(&m, 0), at(&m, 0x15), at(&f1, 0), at(&m, 0x10), 1, 400, 1 },
        { at(&m, 0), at(&m, 0x25), at(&f2, 0), at(&m, 0x20), 3, 400, 1 },
        { at(&f1, 0), at(&f1, 0x15), at(&f2, 0), at(&f1, 0x10), 2, 300, 1 },
    };
    struct cg_snap_self selfs[] = {
        { at(&m, 0), at(&m, 0), 20 },
        { at(&f1, 0), at(&f1, 0), 100 },
        { at(&f2, 0), at(&f2, 0), 700 },
    };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, HEADER("820") "ob=(1) /bin/prog\n"
                                    "fl=(1) file1.c\n"
                                    "fn=(1) func1\n"
                                    "0x1100 51 100\n"
                                    "cfi=(2) file2.c\n"
                                    "cfn=(2) func2\n"
                                    "calls=2 0x2000 20\n"
                                    "+16 * 300\n"
                                    "\n"
                                    "fn=(3) main\n"
                                    "-272 16 20\n"
                                    "cfn=(1)\n"
                                    "calls=1 0x1100 51\n"
                                    "+16 * 400\n"
                                    "cfi=(2)\n"
                                    "cfn=(2)\n"
                                    "calls=3 0x2000 20\n"
                                    "+16 * 400\n"
                                    "\n"
                                    "fl=(2)\n"
                                    "fn=(2)\n"
                                    "+4064 +4 700\n"
                                    "\n"
                                    "totals: 820\n");
    assert_well_formed(text);
    free(text);
}

/* Objects, files and functions are numbered independently, each from 1;
 * cob= and ob= share the object ids, cfi= and fl= the file ids. */
static const struct fn_def w0_m = { "/bin/prog", 0x555555554000, "main", 0x1100, "main.c", 10 };
static const struct fn_def w0_cb = { "/bin/prog", 0x555555554000, "cb", 0x1000, "main.c", 3 };
static const struct fn_def w0_lf = { "/lib/libx.so", 0x7ffff7e00000, "lib_fn", 0x2000, "x.c", 7 };
static const struct wcase name_ids_separate_per_kind = {
    .syms = {
        { .fn = &w0_m },
        { .fn = &w0_m, .off = 8, .line = 11 },
        { .fn = &w0_cb },
        { .fn = &w0_lf },
        { .fn = &w0_lf, .off = 0x10, .line = 8 },
    },
    .arcs = {
        { .caller = &w0_m, .site = 13, .callee = &w0_lf, .call = 8, .count = 1, .incl = 30 },
        { .caller = &w0_lf, .site = 0x15, .callee = &w0_cb, .call = 0x10, .count = 2, .incl = 5 },
    },
    .selfs = {
        { .fn = &w0_cb, .at = 0, .cost = 5 },
        { .fn = &w0_m, .at = 0, .cost = 10 },
        { .fn = &w0_lf, .at = 0, .cost = 20 },
    },
    .expected = HEADER("35") "ob=(1) /bin/prog\n"
                 "fl=(1) main.c\n"
                 "fn=(1) cb\n"
                 "0x1000 3 5\n"
                 "\n"
                 "fn=(2) main\n"
                 "+256 +7 10\n"
                 "cob=(2) /lib/libx.so\n"
                 "cfi=(2) x.c\n"
                 "cfn=(3) lib_fn\n"
                 "calls=1 0x2000 7\n"
                 "+8 +1 30\n"
                 "\n"
                 "ob=(2)\n"
                 "fl=(2)\n"
                 "fn=(3)\n"
                 "+3832 7 20\n"
                 "cob=(1)\n"
                 "cfi=(1)\n"
                 "cfn=(1)\n"
                 "calls=2 0x1000 3\n"
                 "+16 8 5\n"
                 "\n"
                 "totals: 35\n",
    .well_formed = 1,
};

static const struct fn_def w1_ha = { "/bin/prog", 0, "helper", 0x1000, "a.c", 5 };
static const struct fn_def w1_hb = { "/bin/prog", 0, "helper", 0x2000, "b.c", 8 };
static const struct fn_def w1_m = { "/bin/prog", 0, "main", 0x3000, "main.c", 20 };
static const struct wcase static_functions_same_name_get_different_ids = {
    .syms = {
        { .fn = &w1_ha },
        { .fn = &w1_hb },
        { .fn = &w1_m },
        { .fn = &w1_m, .off = 0x10, .line = 21 },
        { .fn = &w1_m, .off = 0x20, .line = 22 },
    },
    .arcs = {
        { .caller = &w1_m, .site = 0x15, .callee = &w1_ha, .call = 0x10, .count = 1, .incl = 7 },
        { .caller = &w1_m, .site = 0x25, .callee = &w1_hb, .call = 0x20, .count = 2, .incl = 9 },
    },
    .selfs = {
        { .fn = &w1_ha, .at = 0, .cost = 7 },
        { .fn = &w1_hb, .at = 0, .cost = 9 },
        { .fn = &w1_m, .at = 0, .cost = 4 },
    },
    .expected = HEADER("20") "ob=(1) /bin/prog\n"
                 "fl=(1) a.c\n"
                 "fn=(1) helper\n"
                 "0x1000 5 7\n"
                 "\n"
                 "fl=(2) b.c\n"
                 "fn=(2) helper\n"
                 "+4096 8 9\n"
                 "\n"
                 "fl=(3) main.c\n"
                 "fn=(3) main\n"
                 "+4096 20 4\n"
                 "cfi=(1)\n"
                 "cfn=(1)\n"
                 "calls=1 0x1000 5\n"
                 "+16 +1 7\n"
                 "cfi=(2)\n"
                 "cfn=(2)\n"
                 "calls=2 0x2000 8\n"
                 "+16 +1 9\n"
                 "\n"
                 "totals: 20\n",
    .well_formed = 1,
};

static const struct fn_def w2_m = { "/bin/p", 0, "main", 0x100, "p.c", 1 };
static const struct fn_def w2_f = { "/bin/p", 0, "f", 0x200, "p.c", 9 };
static const struct wcase call_in_same_object_and_file_has_no_cob_cfi = {
    .syms = {
        { .fn = &w2_m },
        { .fn = &w2_m, .off = 4, .line = 2 },
        { .fn = &w2_f },
    },
    .arcs = {
        { .caller = &w2_m, .site = 5, .callee = &w2_f, .call = 4, .count = 1, .incl = 4 },
    },
    .selfs = {
        { .fn = &w2_m, .at = 0, .cost = 3 }, /* f has no self cost: no block */
    },
    .expected = HEADER("3") "ob=(1) /bin/p\n"
                "fl=(1) p.c\n"
                "fn=(1) main\n"
                "0x100 1 3\n"
                "cfn=(2) f\n"
                "calls=1 0x200 9\n"
                "+4 2 4\n"
                "\n"
                "totals: 3\n",
    .absent = { "cob=", "cfi=" },
    .well_formed = 1,
};

/* A name that looks like a compressed reference is kept apart from it. */
static const struct fn_def w3_f = { "/bin/p", 0, "(1)odd", 0x100, "p.c", 1 };
static const struct wcase name_starting_with_paren_digit = {
    .syms = {
        { .fn = &w3_f },
    },
    .selfs = {
        { .fn = &w3_f, .at = 0, .cost = 3 },
    },
    .holds = "\nfn=(1)  (1)odd\n",
};

/* ---- subposition compression (spec 3.1.6) ---------------------------------------- */

static const struct fn_def w4_f = { "/bin/a", 0, "func", 0x80001234, "a.c", 90 };
static const struct wcase subposition_spec_example = {
    .syms = {
        { .fn = &w4_f },
        { .fn = &w4_f, .off = 3, .line = 90 },
        { .fn = &w4_f, .off = 4, .line = 91 },
    },
    .selfs = {
        { .fn = &w4_f, .at = 0, .cost = 1 },
        { .fn = &w4_f, .at = 3, .cost = 5 },
        { .fn = &w4_f, .at = 4, .cost = 6 },
    },
    .expected = HEADER("12") "ob=(1) /bin/a\n"
                 "fl=(1) a.c\n"
                 "fn=(1) func\n"
                 "0x80001234 90 1\n"
                 "+3 * 5\n"
                 "+1 +1 6\n"
                 "\n"
                 "totals: 12\n",
};

static const struct fn_def w5_alpha = { "/bin/a", 0, "alpha", 0x5000, "a.c", 100 };
static const struct fn_def w5_beta = { "/bin/a", 0, "beta", 0x4000, "a.c", 90 };
static const struct wcase subposition_negative_differences = {
    .syms = {
        { .fn = &w5_alpha },
        { .fn = &w5_alpha, .off = 0x10, .line = 95 }, /* a loop: back to an earlier line */
        { .fn = &w5_beta },
        { .fn = &w5_beta, .off = 8, .line = 92 },
    },
    .selfs = {
        { .fn = &w5_alpha, .at = 0, .cost = 1 },
        { .fn = &w5_alpha, .at = 0x10, .cost = 2 },
        { .fn = &w5_beta, .at = 0, .cost = 3 },
        { .fn = &w5_beta, .at = 8, .cost = 4 },
    },
    .expected = HEADER("10") "ob=(1) /bin/a\n"
                 "fl=(1) a.c\n"
                 "fn=(1) alpha\n"
                 "0x5000 100 1\n"
                 "+16 -5 2\n"
                 "\n"
                 "fn=(2) beta\n"
                 "-4112 -5 3\n"
                 "+8 +2 4\n"
                 "\n"
                 "totals: 10\n",
};

static const struct fn_def w6_g = { "/bin/a", 0, "gamma", 0x10000, "a.c", 1000 };
static const struct fn_def w6_z = { "/bin/a", 0, "zeta", 0x400, "a.c", 5 };
static const struct wcase subposition_absolute_when_shorter = {
    /* "0x400" is shorter than "-64512", "5" than "-995", "15" than "+10" */
    .syms = {
        { .fn = &w6_g },
        { .fn = &w6_z },
        { .fn = &w6_z, .off = 0x10, .line = 15 },
    },
    .selfs = {
        { .fn = &w6_g, .at = 0, .cost = 1 },
        { .fn = &w6_z, .at = 0, .cost = 2 },
        { .fn = &w6_z, .at = 0x10, .cost = 3 },
    },
    .expected = HEADER("6") "ob=(1) /bin/a\n"
                "fl=(1) a.c\n"
                "fn=(1) gamma\n"
                "0x10000 1000 1\n"
                "\n"
                "fn=(2) zeta\n"
                "0x400 5 2\n"
                "+16 15 3\n"
                "\n"
                "totals: 6\n",
};

static const struct fn_def w7_f1 = { "/bin/a", 0, "f1", 0x1000000000, "a.c", 1 };
static const struct fn_def w7_f2 = { "/bin/a", 0, "f2", 0x1000000000 + 0x7fffffff, "a.c", 1 };
static const struct fn_def w7_f3 = { "/bin/a", 0, "f3", 0x1000000000 + 0x7fffffff + 0x80000000, "a.c", 1 };
static const struct wcase subposition_relative_only_below_2_31 = {
    /* Addresses long enough that an 11-character difference is shorter. */
    .syms = {
        { .fn = &w7_f1 },
        { .fn = &w7_f2 },
        { .fn = &w7_f3 },
    },
    .selfs = {
        { .fn = &w7_f1, .at = 0, .cost = 1 },
        { .fn = &w7_f2, .at = 0, .cost = 2 },
        { .fn = &w7_f3, .at = 0, .cost = 3 },
    },
    .expected = HEADER("6") "ob=(1) /bin/a\n"
                "fl=(1) a.c\n"
                "fn=(1) f1\n"
                "0x1000000000 1 1\n"
                "\n"
                "fn=(2) f2\n"
                "+2147483647 * 2\n" /* 2^31 - 1: relative */
                "\n"
                "fn=(3) f3\n"
                "0x10ffffffff * 3\n" /* 2^31: absolute */
                "\n"
                "totals: 6\n",
};

/* ---- inlined code: fi= / fe= ------------------------------------------------------- */

static const struct fn_def w8_f = { "/bin/p", 0, "f", 0x1000, "f.c", 10 };
static const struct fn_def w8_g = { "/bin/p", 0, "g", 0x2000, "f.c", 20 };
static const struct wcase inlined_line_gets_fi_then_fe = {
    .syms = {
        { .fn = &w8_f },
        { .fn = &w8_f, .off = 0x10, .file = "inl.h", .line = 3 },
        { .fn = &w8_f, .off = 0x20, .line = 12 },
        { .fn = &w8_g },
    },
    .selfs = {
        { .fn = &w8_f, .at = 0, .cost = 1 },
        { .fn = &w8_f, .at = 0x10, .cost = 2 },
        { .fn = &w8_f, .at = 0x20, .cost = 3 },
        { .fn = &w8_g, .at = 0, .cost = 4 },
    },
    .expected = HEADER("10") "ob=(1) /bin/p\n"
                 "fl=(1) f.c\n"
                 "fn=(1) f\n"
                 "0x1000 10 1\n"
                 "fi=(2) inl.h\n"
                 "+16 3 2\n"
                 "fe=(1)\n"
                 "+16 +9 3\n"
                 "\n"
                 "fn=(2) g\n"
                 "+4064 +8 4\n"
                 "\n"
                 "totals: 10\n",
};

static const struct fn_def w9_f = { "/bin/p", 0, "f", 0x1000, "f.c", 10 };
static const struct fn_def w9_g = { "/bin/p", 0, "g", 0x2000, "f.c", 20 };
static const struct wcase block_ending_in_inlined_file_returns_with_fe = {
    /* g follows in f.c: no fl= needed, the block of f ended back in f.c */
    .syms = {
        { .fn = &w9_f },
        { .fn = &w9_f, .off = 0x10, .file = "a.h", .line = 3 },
        { .fn = &w9_f, .off = 0x18, .file = "b.h", .line = 40 },
        { .fn = &w9_g },
    },
    .selfs = {
        { .fn = &w9_f, .at = 0, .cost = 1 },
        { .fn = &w9_f, .at = 0x10, .cost = 2 },
        { .fn = &w9_f, .at = 0x18, .cost = 3 },
        { .fn = &w9_g, .at = 0, .cost = 4 },
    },
    .expected = HEADER("10") "ob=(1) /bin/p\n"
                 "fl=(1) f.c\n"
                 "fn=(1) f\n"
                 "0x1000 10 1\n"
                 "fi=(2) a.h\n"
                 "+16 3 2\n"
                 "fi=(3) b.h\n"
                 "+8 40 3\n"
                 "fe=(1)\n"
                 "\n"
                 "fn=(2) g\n"
                 "+4072 20 4\n"
                 "\n"
                 "totals: 10\n",
};

/* ---- callbacks from uninstrumented code ------------------------------------------- */

#define PROG_BASE ((uintptr_t)0x555555554000)
#define LIBC_BASE ((uintptr_t)0x7ffff7c00000)
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

static const struct fn_def sc_main = { "/usr/bin/scores", PROG_BASE, "main", 0x1500, "/src/scores.c", 60 };
static const struct fn_def sc_sort = { "/usr/bin/scores", PROG_BASE, "sort_scores", 0x1400, "/src/scores.c", 30 };
static const struct fn_def sc_cmp = { "/usr/bin/scores", PROG_BASE, "cmp_score", 0x1300, "/src/scores.c", 20 };
static const struct fn_def sc_msort = { LIBC, LIBC_BASE, "msort", 0x3f000, "./stdlib/msort.c", 45 };

static struct cg_symtab scores_symtab(struct syms *sy)
{
    sy->n = 0;
    add_entry(sy, &sc_main);
    add_sym(sy, &sc_main, 0xb, NULL, 62);
    add_sym(sy, &sc_main, 0x10, NULL, 62);
    add_entry(sy, &sc_sort);
    add_entry(sy, &sc_cmp);
    add_entry(sy, &sc_msort);
    add_sym(sy, &sc_msort, 0xa0, NULL, 50); /* call *%rax: the comparator */
    add_sym(sy, &sc_msort, 0xa2, NULL, 50);
    add_sym(sy, &sc_msort, 0xc0, NULL, 55); /* another call of it */
    add_sym(sy, &sc_msort, 0xc2, NULL, 55);
    return symtab_of(sy);
}

/* sort_scores calls qsort (uninstrumented), whose msort calls cmp_score from
 * two places: the hooks see sort_scores -> cmp_score arcs whose call sites
 * are in msort, and sort_scores' self time at msort's return addresses. */
static void test_callback_from_uninstrumented_code(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = scores_symtab(&sy);
    struct cg_snap_arc arcs[] = {
        { at(&sc_main, 0), at(&sc_main, 0x10), at(&sc_sort, 0), at(&sc_main, 0xb), 1, 190, 1 },
        { at(&sc_sort, 0), at(&sc_msort, 0xa2), at(&sc_cmp, 0), at(&sc_msort, 0xa0), 6, 60, 3 },
        { at(&sc_sort, 0), at(&sc_msort, 0xc2), at(&sc_cmp, 0), at(&sc_msort, 0xc0), 3, 30, 2 },
    };
    struct cg_snap_self selfs[] = {
        { at(&sc_main, 0), at(&sc_main, 0), 10 },
        { at(&sc_sort, 0), at(&sc_sort, 0), 40 },
        { at(&sc_sort, 0), at(&sc_msort, 0xa2), 45 },
        { at(&sc_sort, 0), at(&sc_msort, 0xc2), 15 },
        { at(&sc_cmp, 0), at(&sc_cmp, 0), 90 },
    };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    /* sort_scores -> msort: count 3 + 2 runs, inclusive 60 + 30 (callbacks)
     * + 45 + 15 (sort_scores' time in msort) */
    assert_text(text, HEADER("200") "ob=(1) /usr/bin/scores\n"
                                    "fl=(1) /src/scores.c\n"
                                    "fn=(1) cmp_score\n"
                                    "0x1300 20 90\n"
                                    "\n"
                                    "fn=(2) main\n"
                                    "+512 60 10\n"
                                    "cfn=(3) sort_scores\n"
                                    "calls=1 0x1400 30\n"
                                    "+11 +2 190\n"
                                    "\n"
                                    "fn=(3)\n"
                                    "-267 30 40\n"
                                    "cob=(2) " LIBC "\n"
                                    "cfi=(2) ./stdlib/msort.c\n"
                                    "cfn=(4) msort\n"
                                    "calls=5 0x3f000 45\n"
                                    "* * 150\n"
                                    "\n"
                                    "ob=(2)\n"
                                    "fl=(2)\n"
                                    "fn=(4)\n"
                                    "cob=(1)\n"
                                    "cfi=(1)\n"
                                    "cfn=(1)\n"
                                    "calls=6 0x1300 20\n"
                                    "+253088 50 60\n"
                                    "+2 * 45\n"
                                    "cob=(1)\n"
                                    "cfi=(1)\n"
                                    "cfn=(1)\n"
                                    "calls=3 0x1300 20\n"
                                    "+30 +5 30\n"
                                    "+2 * 15\n"
                                    "\n"
                                    /* msort: a call no hook saw, its count the callback's runs */
                                    "# Functions without hooks, called only as seen by sampling or as the code "
                                    "that ran callbacks: their counts are visits, a lower bound\n"
                                    "#visits: (4)\n"
                                    "totals: 200\n");
    assert_well_formed(text);
    free(text);
}

/* Time in uninstrumented code with no callback counted (the arc was zeroed):
 * still one visit of it. */
static void test_time_in_uninstrumented_code_without_callback(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = scores_symtab(&sy);
    struct cg_snap_self selfs[] = {
        { at(&sc_sort, 0), at(&sc_sort, 0), 40 },
        { at(&sc_sort, 0), at(&sc_msort, 0xa2), 45 },
    };
    struct cg_snapshot snap = SNAP_SELFS(selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, HEADER("85") "ob=(1) /usr/bin/scores\n"
                                   "fl=(1) /src/scores.c\n"
                                   "fn=(1) sort_scores\n"
                                   "0x1400 30 40\n"
                                   "cob=(2) " LIBC "\n"
                                   "cfi=(2) ./stdlib/msort.c\n"
                                   "cfn=(2) msort\n"
                                   "calls=1 0x3f000 45\n"
                                   "* * 45\n"
                                   "\n"
                                   "ob=(2)\n"
                                   "fl=(2)\n"
                                   "fn=(2)\n"
                                   "+253090 50 45\n"
                                   "\n"
                                   "# Functions without hooks, called only as seen by sampling or as the code "
                                   "that ran callbacks: their counts are visits, a lower bound\n"
                                   "#visits: (2)\n"
                                   "totals: 85\n");
    assert_well_formed(text);
    free(text);
}

/* A signal handler: its frame was made by the kernel, not by a call, so the
 * dump found no call instruction (call_pc 0). It shows as called from the
 * function it interrupted, at that function's start. */
static void test_frame_without_call_instruction(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = scores_symtab(&sy);
    struct cg_snap_arc arcs[] = {
        { at(&sc_main, 0), at(&sc_msort, 0xc2), at(&sc_cmp, 0), 0, 2, 30, 1 },
    };
    struct cg_snap_self selfs[] = {
        { at(&sc_main, 0), at(&sc_main, 0), 10 },
        { at(&sc_cmp, 0), at(&sc_cmp, 0), 30 },
    };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, HEADER("40") "ob=(1) /usr/bin/scores\n"
                                   "fl=(1) /src/scores.c\n"
                                   "fn=(1) cmp_score\n"
                                   "0x1300 20 30\n"
                                   "\n"
                                   "fn=(2) main\n"
                                   "+512 60 10\n"
                                   "cfn=(1)\n"
                                   "calls=2 0x1300 20\n"
                                   "* * 30\n"
                                   "\n"
                                   "totals: 40\n");
    assert_well_formed(text);
    free(text);
}

/* Two copies of a header's static inline function (the same name and file,
 * two units, two addresses): one function for every reader, one id; their
 * blocks add up. */
static const struct fn_def w10_c1 = { "/bin/prog", 0, "clamp", 0x1000, "util.h", 5 };
static const struct fn_def w10_c2 = { "/bin/prog", 0, "clamp", 0x2000, "util.h", 5 };
static const struct fn_def w10_m = { "/bin/prog", 0, "main", 0x3000, "main.c", 20 };
static const struct wcase copies_of_a_header_function_share_an_id = {
    .syms = {
        { .fn = &w10_c1 },
        { .fn = &w10_c2 },
        { .fn = &w10_m },
        { .fn = &w10_m, .off = 0x10, .line = 21 },
        { .fn = &w10_m, .off = 0x20, .line = 22 },
    },
    .arcs = {
        { .caller = &w10_m, .site = 0x15, .callee = &w10_c1, .call = 0x10, .count = 1, .incl = 7 },
        { .caller = &w10_m, .site = 0x25, .callee = &w10_c2, .call = 0x20, .count = 2, .incl = 9 },
    },
    .selfs = {
        { .fn = &w10_c1, .at = 0, .cost = 7 },
        { .fn = &w10_c2, .at = 0, .cost = 9 },
        { .fn = &w10_m, .at = 0, .cost = 4 },
    },
    .expected = HEADER("20") "ob=(1) /bin/prog\n"
                 "fl=(1) main.c\n"
                 "fn=(1) main\n"
                 "0x3000 20 4\n"
                 "cfi=(2) util.h\n"
                 "cfn=(2) clamp\n"
                 "calls=1 0x1000 5\n"
                 "+16 +1 7\n"
                 "cfi=(2)\n"
                 "cfn=(2)\n"
                 "calls=2 0x2000 5\n"
                 "+16 +1 9\n"
                 "\n"
                 "fl=(2)\n"
                 "fn=(2)\n"
                 "-8224 5 7\n"
                 "\n"
                 "fn=(2)\n"
                 "+4096 * 9\n"
                 "\n"
                 "totals: 20\n",
    .well_formed = 1,
};

/* ---- inlined frames, and parts of functions ---------------------------------------
 * gcc and clang at -O2: is_valid is inlined into pop (its hooks kept) and
 * calls get_kind for real from pop's code; pop's error path is in pop.cold
 * (another symbol), and so is a C++ function's, demangled with
 * "[clone .cold]". None of this code is a callback from uninstrumented
 * code: no synthetic call, no pop.cold function. */

#define JQ "/usr/bin/jq"
#define ROOT (LIBC_BASE + 0x29d90) /* __libc_start_call_main, no symbol here */
static const struct fn_def in_pop = { JQ, PROG_BASE, "pop", 0x2000, "/src/jv.c", 100 };
static const struct fn_def in_pop_cold = { JQ, PROG_BASE, "pop.cold", 0x1000, "/src/jv.c", 110 };
static const struct fn_def in_valid = { JQ, PROG_BASE, "is_valid", 0x2200, "/src/jv.h", 10 };
static const struct fn_def in_kind = { JQ, PROG_BASE, "get_kind", 0x2300, "/src/jv.c", 20 };
static const struct fn_def in_cxx = { JQ, PROG_BASE, "parse(int)", 0x2400, "/src/p.cc", 30 };
static const struct fn_def in_cxx_cold = { JQ, PROG_BASE, "parse(int) [clone .cold]", 0x1100, "/src/p.cc", 40 };

static void test_inlined_frame_and_function_parts(void **state)
{
    (void)state;
    struct syms sy;
    sy.n = 0;
    add_entry(&sy, &in_pop);
    add_entry(&sy, &in_valid);
    add_entry(&sy, &in_kind);
    add_entry(&sy, &in_cxx);
    add_sym(&sy, &in_pop, 0x1f, "/src/jv.h", 11);      /* is_valid's enter hook, inlined */
    add_sym(&sy, &in_pop, 0x3b, "/src/jv.h", 11);      /* is_valid's call of get_kind */
    add_sym(&sy, &in_pop, 0x40, "/src/jv.h", 11);      /* and its return address */
    add_sym(&sy, &in_pop_cold, 0x0b, NULL, 112);       /* pop's call from its cold part */
    add_sym(&sy, &in_pop_cold, 0x10, NULL, 112);
    add_sym(&sy, &in_cxx_cold, 0x0b, NULL, 41);
    add_sym(&sy, &in_cxx_cold, 0x10, NULL, 41);
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_arc arcs[] = {
        { 0, ROOT, at(&in_pop, 0), ROOT - 1, 1, 100, 1, 0, 0 },
        /* inlined: no call instruction, placed where its hook was called */
        { at(&in_pop, 0), ROOT, at(&in_valid, 0), at(&in_pop, 0x1f), 2, 40, 1, 1, 0 },
        /* a real call from the inlined frame, in pop's code */
        { at(&in_valid, 0), at(&in_pop, 0x40), at(&in_kind, 0), at(&in_pop, 0x3b), 2, 20, 1, 0, 1 },
        /* real calls from cold parts */
        { at(&in_pop, 0), at(&in_pop_cold, 0x10), at(&in_kind, 0), at(&in_pop_cold, 0x0b), 1, 10, 1, 0, 0 },
        { 0, ROOT + 8, at(&in_cxx, 0), ROOT + 7, 1, 10, 1, 0, 0 },
        { at(&in_cxx, 0), at(&in_cxx_cold, 0x10), at(&in_kind, 0), at(&in_cxx_cold, 0x0b), 1, 5, 1, 0, 0 },
    };
    struct cg_snap_self selfs[] = {
        { at(&in_pop, 0), at(&in_pop, 0), 30, 0 },
        { at(&in_pop, 0), at(&in_pop_cold, 0x10), 20, 0 },
        { at(&in_valid, 0), at(&in_valid, 0), 15, 0 },
        { at(&in_valid, 0), at(&in_pop, 0x40), 5, 1 },
        { at(&in_kind, 0), at(&in_kind, 0), 35, 0 },
        { at(&in_cxx, 0), at(&in_cxx, 0), 3, 0 },
        { at(&in_cxx, 0), at(&in_cxx_cold, 0x10), 2, 0 },
    };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    /* pop: its call of get_kind and its time in pop.cold, at their own
     * addresses; the inlined call of is_valid where its hook was called,
     * on the header's line. is_valid: its call of get_kind and its time
     * after it, in pop's code. */
    assert_text(text, HEADER("110") "ob=(1) " JQ "\n"
                                    "fl=(1) /src/jv.c\n"
                                    "fn=(1) get_kind\n"
                                    "0x2300 20 35\n"
                                    "\n"
                                    "fn=(2) pop\n"
                                    "cfn=(1)\n"
                                    "calls=1 0x2300 20\n"
                                    "-4853 +92 10\n"
                                    "+5 * 20\n"
                                    "+4080 -12 30\n"
                                    "fi=(2) /src/jv.h\n"
                                    "cfn=(3) is_valid\n"
                                    "calls=2 0x2200 10\n"
                                    "+31 11 40\n"
                                    "fe=(1)\n"
                                    "\n"
                                    "fl=(2)\n"
                                    "fn=(3)\n"
                                    "cfi=(1)\n"
                                    "cfn=(1)\n"
                                    "calls=2 0x2300 20\n"
                                    "+28 * 20\n"
                                    "+5 * 5\n"
                                    "+448 -1 15\n"
                                    "\n"
                                    "fl=(3) /src/p.cc\n"
                                    "fn=(4) parse(int)\n"
                                    "cfi=(1)\n"
                                    "cfn=(1)\n"
                                    "calls=1 0x2300 20\n"
                                    "-4341 41 5\n"
                                    "+5 * 2\n"
                                    "+4848 30 3\n"
                                    "\n"
                                    "ob=(2) ???\n"
                                    "fl=(4) ???\n"
                                    "fn=(5) 0x00007ffff7c29d8f\n"
                                    "cob=(1)\n"
                                    "cfi=(1)\n"
                                    "cfn=(2)\n"
                                    "calls=1 0x2000 100\n"
                                    "0x7ffff7c29d8f 0 100\n"
                                    "\n"
                                    "fn=(6) 0x00007ffff7c29d97\n"
                                    "cob=(1)\n"
                                    "cfi=(3)\n"
                                    "cfn=(4)\n"
                                    "calls=1 0x2400 30\n"
                                    "+8 * 10\n"
                                    "\n"
                                    /* the inlined call, for cgprof's readers (pprof's inlined frames) */
                                    "# Calls the compiler inlined, counted with their hooks: (caller)>(callee)\n"
                                    "#inlined: (2)>(3)\n"
                                    "totals: 110\n");
    assert_well_formed(text);
    free(text);
}

/* ---- functions without symbols ------------------------------------------------ */

static void test_function_without_symbol_named_by_address(void **state)
{
    (void)state;
    /* One known object but no function name (stripped), one not even that. */
    struct cg_symbol sym = { 0 };
    sym.object = "/lib/libx.so";
    sym.obj_addr = 0x2a40;
    sym.function = NULL;
    sym.fn_file = "???";
    sym.file = "???";
    struct cg_symtab_entry v[1] = { { 0x7f0000002a40, &sym } };
    struct cg_symtab t = { v, 1 };
    struct cg_snap_self selfs[] = {
        { 0x7f0000002a40, 0x7f0000002a40, 5 },
        { 0x7f0012345678, 0x7f0012345678, 7 },
    };
    struct cg_snapshot snap = SNAP_SELFS(selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, HEADER("12") "ob=(1) /lib/libx.so\n"
                                   "fl=(1) ???\n"
                                   "fn=(1) 0x0000000000002a40\n"
                                   "0x2a40 0 5\n"
                                   "\n"
                                   "ob=(2) ???\n"
                                   "fn=(2) 0x00007f0012345678\n"
                                   "0x7f0012345678 * 7\n"
                                   "\n"
                                   "totals: 12\n");
    free(text);
}

/* A thread's first function called from code with no symbol at all. */
static void test_root_call_from_unknown_code(void **state)
{
    (void)state;
    static const struct fn_def m = { "/usr/bin/demo", PROG_BASE, "main", 0x1200, "/src/demo/main.c", 20 };
    struct syms sy = { .n = 0 };
    add_entry(&sy, &m);
    struct cg_symtab t = symtab_of(&sy);
    struct cg_snap_arc arcs[] = { { 0, 0x7f00000010a0, at(&m, 0), 0x7f000000109b, 1, 10, 1 } };
    struct cg_snap_self selfs[] = { { at(&m, 0), at(&m, 0), 10 } };
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, HEADER("10") "ob=(1) /usr/bin/demo\n"
                                   "fl=(1) /src/demo/main.c\n"
                                   "fn=(1) main\n"
                                   "0x1200 20 10\n"
                                   "\n"
                                   "ob=(2) ???\n"
                                   "fl=(2) ???\n"
                                   "fn=(2) 0x00007f000000109b\n"
                                   "cob=(1)\n"
                                   "cfi=(1)\n"
                                   "cfn=(1)\n"
                                   "calls=1 0x1200 20\n"
                                   "0x7f000000109b 0 10\n"
                                   "\n"
                                   "totals: 10\n");
    assert_well_formed(text);
    free(text);
}

/* ---- a whole program ------------------------------------------------------------- */

/* main calls compute once; compute calls square three times from line 12
 * and once from code inlined from util.h; main was called by glibc's
 * __libc_start_call_main. Times (ns): main 100 + 50 self, compute 200 + 150
 * + 100 self, square 400 self over its 4 calls. */
static const struct fn_def demo_main = { "/usr/bin/demo", PROG_BASE, "main", 0x1200, "/src/demo/main.c", 20 };
static const struct fn_def demo_compute = { "/usr/bin/demo", PROG_BASE, "compute", 0x1100, "/src/demo/main.c", 10 };
static const struct fn_def demo_square = { "/usr/bin/demo", PROG_BASE, "square", 0x1080, "/src/demo/math.c", 3 };
static const struct fn_def demo_start = { LIBC, LIBC_BASE, "__libc_start_call_main", 0x29d10,
                                          "../sysdeps/nptl/libc_start_call_main.h", 29 };

static struct cg_symtab demo_symtab(struct syms *sy)
{
    sy->n = 0;
    add_entry(sy, &demo_main);
    add_sym(sy, &demo_main, 0x1c, NULL, 22);
    add_sym(sy, &demo_main, 0x21, NULL, 22);
    add_entry(sy, &demo_compute);
    add_sym(sy, &demo_compute, 0x10, NULL, 12);
    add_sym(sy, &demo_compute, 0x15, NULL, 12);
    add_sym(sy, &demo_compute, 0x30, "/src/demo/util.h", 7);
    add_sym(sy, &demo_compute, 0x35, "/src/demo/util.h", 7);
    add_entry(sy, &demo_square);
    add_sym(sy, &demo_start, 0x7e, NULL, 58);
    add_sym(sy, &demo_start, 0x80, NULL, 58);
    return symtab_of(sy);
}

static const struct cg_snap_arc demo_arcs[] = {
    { 0, LIBC_BASE + 0x29d90, PROG_BASE + 0x1200, LIBC_BASE + 0x29d8e, 1, 1000, 1 },
    { PROG_BASE + 0x1200, PROG_BASE + 0x1221, PROG_BASE + 0x1100, PROG_BASE + 0x121c, 1, 850, 1 },
    { PROG_BASE + 0x1100, PROG_BASE + 0x1115, PROG_BASE + 0x1080, PROG_BASE + 0x1110, 3, 300, 1 },
    { PROG_BASE + 0x1100, PROG_BASE + 0x1135, PROG_BASE + 0x1080, PROG_BASE + 0x1130, 1, 100, 1 },
};

static const struct cg_snap_self demo_selfs[] = {
    { PROG_BASE + 0x1200, PROG_BASE + 0x1200, 100 }, { PROG_BASE + 0x1200, PROG_BASE + 0x1221, 50 },
    { PROG_BASE + 0x1100, PROG_BASE + 0x1100, 200 }, { PROG_BASE + 0x1100, PROG_BASE + 0x1115, 150 },
    { PROG_BASE + 0x1100, PROG_BASE + 0x1135, 100 }, { PROG_BASE + 0x1080, PROG_BASE + 0x1080, 400 },
};

static const char demo_expected[] = HEADER("1000") "ob=(1) /usr/bin/demo\n"
                                                   "fl=(1) /src/demo/main.c\n"
                                                   "fn=(1) compute\n"
                                                   "0x1100 10 200\n"
                                                   "cfi=(2) /src/demo/math.c\n"
                                                   "cfn=(2) square\n"
                                                   "calls=3 0x1080 3\n"
                                                   "+16 +2 300\n"
                                                   "+5 * 150\n"
                                                   "fi=(3) /src/demo/util.h\n"
                                                   "cfi=(2)\n"
                                                   "cfn=(2)\n"
                                                   "calls=1 0x1080 3\n"
                                                   "+27 7 100\n"
                                                   "+5 * 100\n"
                                                   "fe=(1)\n"
                                                   "\n"
                                                   "fn=(3) main\n"
                                                   "+203 20 100\n"
                                                   "cfn=(1)\n"
                                                   "calls=1 0x1100 10\n"
                                                   "+28 +2 850\n"
                                                   "+5 * 50\n"
                                                   "\n"
                                                   "fl=(2)\n"
                                                   "fn=(2)\n"
                                                   "-417 3 400\n"
                                                   "\n"
                                                   "ob=(2) " LIBC "\n"
                                                   "fl=(4) ../sysdeps/nptl/libc_start_call_main.h\n"
                                                   "fn=(4) __libc_start_call_main\n"
                                                   /* it only calls: a zero
                                                    * self cost in its file
                                                    * (writer.c, put_anchor) */
                                                   "+167182 58 0\n"
                                                   "cob=(1)\n"
                                                   "cfi=(1)\n"
                                                   "cfn=(3)\n"
                                                   "calls=1 0x1200 20\n"
                                                   "* * 1000\n"
                                                   "\n"
                                                   "totals: 1000\n";

static void test_realistic_program(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = demo_symtab(&sy);
    struct cg_snapshot snap = { .arcs = (struct cg_snap_arc *)demo_arcs, .narcs = 4, .selfs = (struct cg_snap_self *)demo_selfs, .nselfs = 6 };
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, demo_expected);
    assert_well_formed(text);
    free(text);
}

/* CGPROF_LATENCY: each function's histogram, the sum of its arcs' (square's
 * two call sites), after the rest, before totals:; a function no call
 * ended in (__libc_start_call_main) has none. */
static void test_latency_lines(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = demo_symtab(&sy);
    static uint64_t lat[4][CG_LAT_ROW];
    memset(lat, 0, sizeof lat);
    static const uint64_t times[4][3] = { { 1000 }, { 850 }, { 90, 100, 110 }, { 100 } };
    for (int a = 0; a < 4; a++) {
        for (int k = 0; k < 3 && times[a][k]; k++) {
            lat[a][cg_lat_bucket(times[a][k])]++;
            lat[a][CG_LAT_SUM] += times[a][k];
            if (times[a][k] > lat[a][CG_LAT_MAX])
                lat[a][CG_LAT_MAX] = times[a][k];
        }
    }
    struct cg_snapshot snap = { .arcs = (struct cg_snap_arc *)demo_arcs, .narcs = 4,
                                .selfs = (struct cg_snap_self *)demo_selfs, .nselfs = 6, .lat = &lat[0][0] };
    char *text = write_part(&test_info, &snap, &t);
    size_t n = strlen(demo_expected) - strlen("totals: 1000\n");
    char expected[sizeof demo_expected + 1024];
    snprintf(expected, sizeof expected, "%.*s%s", (int)n, demo_expected,
             "# Latency (CGPROF_LATENCY): per function, its calls that ended, by inclusive time (ns): #lat: (fn) "
             "calls sum max lower:count..., in buckets of 4 a power of two (cgprof's docs/latency.md)\n"
             "#latency: 4\n"
             "#lat: (1) 1 850 850 768:1\n"
             "#lat: (3) 1 1000 1000 896:1\n"
             "#lat: (2) 4 400 110 80:1 96:3\n"
             "totals: 1000\n");
    assert_text(text, expected);
    assert_well_formed(text);
    free(text);
}

static void test_output_independent_of_snapshot_order(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = demo_symtab(&sy);
    struct cg_snap_arc arcs[4];
    struct cg_snap_self selfs[6];
    for (size_t i = 0; i < 4; i++)
        arcs[i] = demo_arcs[3 - i];
    for (size_t i = 0; i < 6; i++)
        selfs[i] = demo_selfs[(i + 3) % 6];
    struct cg_snapshot snap = SNAP(arcs, selfs);
    char *text = write_part(&test_info, &snap, &t);
    assert_text(text, demo_expected);
    free(text);
}

static void test_appends_to_buffer(void **state)
{
    (void)state;
    struct syms sy;
    struct cg_symtab t = demo_symtab(&sy);
    struct cg_snapshot snap = { .arcs = (struct cg_snap_arc *)demo_arcs, .narcs = 4, .selfs = (struct cg_snap_self *)demo_selfs, .nselfs = 6 };
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_puts(&b, "previous part\n");
    assert_int_equal(cg_write_part(&test_info, &snap, &t, &b), 0);
    assert_int_equal(strncmp(b.data, "previous part\n", 14), 0);
    assert_text(b.data + 14, demo_expected);
    cg_buf_free(&b);
}

/* ---- cg_symtab_find ----------------------------------------------------------------- */

/* Many functions, each called from the next through two call sites: the
 * writer finds every address's symbol (none confused with a neighbour's:
 * entries 2 bytes apart) and each function once. */
static void test_large_table_every_address_named(void **state)
{
    (void)state;
    enum { N = 1001 };
    struct cg_symbol *sym = calloc(2 * N, sizeof *sym);
    struct cg_symtab_entry *v = calloc(2 * N, sizeof *v);
    char(*names)[16] = calloc(N, sizeof *names);
    struct cg_snap_arc *arcs = calloc(N, sizeof *arcs);
    assert_non_null(sym);
    assert_non_null(v);
    assert_non_null(names);
    assert_non_null(arcs);
    for (size_t i = 0; i < 2 * N; i++) {
        size_t f = i / 2;
        snprintf(names[f], sizeof names[f], "f%zu", f);
        v[i].addr = 0x400000 + 2 * i;
        v[i].sym = &sym[i];
        sym[i] = (struct cg_symbol){ .object = "/bin/p", .obj_addr = 2 * i, .function = names[f],
                                     .fn_start = 0x400000 + 4 * f, .fn_obj_addr = 4 * f, .fn_file = "p.c",
                                     .fn_line = (unsigned)f + 1, .file = "p.c", .line = (unsigned)(1000 + i) };
    }
    for (size_t f = 0; f < N; f++) {
        /* f calls f+1 from its second address (its call instruction) */
        uintptr_t caller = 0x400000 + 4 * f, callee = 0x400000 + 4 * ((f + 1) % N);
        arcs[f] = (struct cg_snap_arc){ caller, caller + 3, callee, caller + 2, f + 1, 10 * (f + 1), 1 };
    }
    struct cg_symtab t = { v, 2 * N };
    struct cg_snapshot snap = { arcs, N, NULL, 0, 0, 0, 0, 0, 0 };
    struct cg_part_info info = { 0 };
    char *text = write_part(&info, &snap, &t);
    for (size_t f = 0; f < N; f++) {
        char want[96];
        /* each function is defined once (its first mention), with its name */
        snprintf(want, sizeof want, ") f%zu\n", f);
        const char *at1 = strstr(text, want);
        assert_non_null(at1);
        assert_null(strstr(at1 + 1, want));
        /* its call: count f+1 to the next function, at the line of its entry */
        size_t g = (f + 1) % N;
        snprintf(want, sizeof want, "\ncalls=%zu 0x%zx %zu\n", f + 1, 4 * g, 1000 + 2 * g);
        assert_non_null(strstr(text, want));
    }
    free(text);
    free(arcs);
    free(names);
    free(v);
    free(sym);
}

/* Functions without a symbol are named by their address; with more
 * functions than the first allocation of records (128), the records move:
 * the names must move with them (they pointed into the old array). */
static void test_unnamed_functions_among_many(void **state)
{
    (void)state;
    enum { N = 300 };
    struct cg_symbol *sym = calloc(N, sizeof *sym);
    struct cg_symtab_entry *v = calloc(N, sizeof *v);
    char(*names)[16] = calloc(N, sizeof *names);
    struct cg_snap_self *selfs = calloc(N, sizeof *selfs);
    assert_non_null(sym);
    assert_non_null(v);
    assert_non_null(names);
    assert_non_null(selfs);
    for (size_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "g%zu", i);
        v[i].addr = 0x500000 + 0x40 * i;
        v[i].sym = &sym[i];
        /* every 7th without a symbol (a stripped library's code) */
        sym[i] = (struct cg_symbol){ .object = "/lib/libs.so", .obj_addr = 0x40 * i,
                                     .function = i % 7 ? names[i] : NULL, .fn_start = i % 7 ? v[i].addr : 0,
                                     .fn_obj_addr = 0x40 * i, .fn_file = "s.c", .fn_line = 1, .file = "s.c",
                                     .line = 1 };
        selfs[i] = (struct cg_snap_self){ v[i].addr, v[i].addr, i + 1 };
    }
    struct cg_symtab t = { v, N };
    struct cg_snapshot snap = { NULL, 0, selfs, N, 0, 0, 0, 0, 0 };
    struct cg_part_info info = { 0 };
    char *text = write_part(&info, &snap, &t);
    for (size_t i = 0; i < N; i++) {
        char want[48];
        if (i % 7)
            snprintf(want, sizeof want, ") g%zu\n", i);
        else
            snprintf(want, sizeof want, ") 0x%016llx\n", (unsigned long long)(0x40 * i));
        assert_non_null(strstr(text, want));
    }
    free(text);
    free(selfs);
    free(names);
    free(v);
    free(sym);
}

/* A function with many cost lines (over the 16 that are sorted in place:
 * the others by radix sorts): its block lists them by address whatever the
 * snapshot's order, a self cost before the calls at the same address, and
 * two arcs that are the same line (same call instruction and callee)
 * merged into one. */
enum { MANY_CALLS = 40, MANY_SELFS = 10 };

static char *write_many_lines(int reversed)
{
    enum { NSYM = 1 + MANY_CALLS + MANY_CALLS };
    static struct cg_symbol sym[NSYM];
    static struct cg_symtab_entry v[NSYM];
    static char names[MANY_CALLS][16];
    const uintptr_t base = 0x400000, disp = base + 0x1000;
    size_t n = 0;
    sym[n] = (struct cg_symbol){ .object = "/bin/p", .obj_addr = 0x1000, .function = "disp", .fn_start = disp,
                                 .fn_obj_addr = 0x1000, .fn_file = "p.c", .fn_line = 10, .file = "p.c", .line = 10 };
    v[n] = (struct cg_symtab_entry){ disp, &sym[n] };
    n++;
    for (size_t i = 0; i < MANY_CALLS; i++) {
        /* the call instructions, 4 bytes apart, one line each */
        sym[n] = sym[0];
        sym[n].obj_addr = 0x1010 + 4 * i;
        sym[n].line = (unsigned)(100 + i);
        v[n] = (struct cg_symtab_entry){ base + sym[n].obj_addr, &sym[n] };
        n++;
    }
    for (size_t i = 0; i < MANY_CALLS; i++) {
        snprintf(names[i], sizeof names[i], "c%zu", i);
        uintptr_t off = 0x2000 + 0x10 * i;
        sym[n] = (struct cg_symbol){ .object = "/bin/p", .obj_addr = off, .function = names[i],
                                     .fn_start = base + off, .fn_obj_addr = off, .fn_file = "p.c",
                                     .fn_line = (unsigned)(200 + i), .file = "p.c", .line = (unsigned)(200 + i) };
        v[n] = (struct cg_symtab_entry){ base + off, &sym[n] };
        n++;
    }
    struct cg_snap_arc arcs[MANY_CALLS + 1];
    for (size_t i = 0; i < MANY_CALLS; i++) {
        uintptr_t pc = base + 0x1010 + 4 * i;
        arcs[i] = (struct cg_snap_arc){ disp, pc + 3, base + 0x2000 + 0x10 * i, pc, i + 1, 1000 + i, 1 };
    }
    /* the same call as arc 5, seen with another return address */
    arcs[MANY_CALLS] = arcs[5];
    arcs[MANY_CALLS].site += 1;
    arcs[MANY_CALLS].count = 7;
    struct cg_snap_self selfs[MANY_SELFS + 1];
    selfs[0] = (struct cg_snap_self){ disp, disp, 50 };
    for (size_t i = 1; i <= MANY_SELFS; i++)
        selfs[i] = (struct cg_snap_self){ disp, base + 0x1010 + 4 * (3 * i), 3 };
    if (reversed) {
        for (size_t i = 0, j = MANY_CALLS; i < j; i++, j--) {
            struct cg_snap_arc x = arcs[i];
            arcs[i] = arcs[j];
            arcs[j] = x;
        }
        for (size_t i = 0, j = MANY_SELFS; i < j; i++, j--) {
            struct cg_snap_self x = selfs[i];
            selfs[i] = selfs[j];
            selfs[j] = x;
        }
    }
    struct cg_symtab t = { v, n };
    struct cg_snapshot snap = { arcs, MANY_CALLS + 1, selfs, MANY_SELFS + 1, 0, 0, 0, 0, 0 };
    struct cg_part_info info = { 0 };
    return write_part(&info, &snap, &t);
}

static void test_many_lines_in_address_order(void **state)
{
    (void)state;
    char *a = write_many_lines(0), *b = write_many_lines(1);
    assert_text(b, a);
    /* the block of disp: from its fn= to the next blank line */
    const char *start = strstr(a, ") disp\n");
    assert_non_null(start);
    const char *end = strstr(start, "\n\n");
    assert_non_null(end);
    size_t calls = 0, selfs = 0;
    for (const char *l = strchr(start, '\n') + 1; l < end; l = strchr(l, '\n') + 1) {
        /* positions only ever go forward: no negative relative address */
        assert_true(l[0] != '-');
        if (strncmp(l, "calls=", 6) == 0) {
            calls++;
            l = strchr(l, '\n') + 1; /* its position line */
        } else if (strncmp(l, "cfn=", 4) != 0) {
            selfs++;
        }
    }
    assert_int_equal(calls, MANY_CALLS);
    assert_int_equal(selfs, 1 + MANY_SELFS);
    /* c5 called 6 + 7 times (costs 1005 + 1005); the self cost at call
     * 3's address right before that call */
    assert_non_null(strstr(start, "cfn=(7) c5\ncalls=13 0x2050 205\n+4 +1 2010\n"));
    assert_non_null(strstr(start, "+4 +1 3\ncfn=(5) c3\ncalls=4 0x2030 203\n* * 1003\n"));
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_lines_in_address_order),
        cmocka_unit_test(test_header_fields_in_order),
        cmocka_unit_test(test_header_defaults),
        cmocka_unit_test(test_header_values_stay_on_one_line),
        cmocka_unit_test(test_totals_sum_self_costs_only),
        cmocka_unit_test(test_name_compression_spec_example),
        WCASE(name_ids_separate_per_kind),
        WCASE(static_functions_same_name_get_different_ids),
        WCASE(call_in_same_object_and_file_has_no_cob_cfi),
        WCASE(name_starting_with_paren_digit),
        WCASE(subposition_spec_example),
        WCASE(subposition_negative_differences),
        WCASE(subposition_absolute_when_shorter),
        WCASE(subposition_relative_only_below_2_31),
        WCASE(inlined_line_gets_fi_then_fe),
        WCASE(block_ending_in_inlined_file_returns_with_fe),
        cmocka_unit_test(test_callback_from_uninstrumented_code),
        cmocka_unit_test(test_inlined_frame_and_function_parts),
        WCASE(copies_of_a_header_function_share_an_id),
        cmocka_unit_test(test_time_in_uninstrumented_code_without_callback),
        cmocka_unit_test(test_frame_without_call_instruction),
        cmocka_unit_test(test_function_without_symbol_named_by_address),
        cmocka_unit_test(test_root_call_from_unknown_code),
        cmocka_unit_test(test_line_positions),
        cmocka_unit_test(test_realistic_program),
        cmocka_unit_test(test_latency_lines),
        cmocka_unit_test(test_output_independent_of_snapshot_order),
        cmocka_unit_test(test_appends_to_buffer),
        cmocka_unit_test(test_large_table_every_address_named),
        cmocka_unit_test(test_unnamed_functions_among_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
