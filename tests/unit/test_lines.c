/* Unit tests of lines.c, against libdw: for every compilation unit of real
 * binaries (this test's own executable, which links lines_src.c as gcc
 * writes DWARF 2, 4 and 5 and, when clang is there, as clang writes it; and
 * the binaries given as arguments) and of hand-made line programs (in ELF
 * files made here: DWARF 2 to 5, 64-bit DWARF, 4-byte addresses, VLIW,
 * define_file, the forms of DWARF 5's tables), the decoded rows must be
 * libdw's (address, line, file name, end of sequence, in libdw's order), and
 * so must the row chosen for each row's address, the address below it and
 * addresses inside its range, looked up ascending and descending. The first
 * difference is reported. Then truncated and corrupted copies of a real
 * .debug_line, each in a buffer of its exact size, for AddressSanitizer
 * (the sanitizer build of scripts/test) to catch any read outside. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lines.h"

static char **given_paths; /* the binaries named on the command line */
static int ngiven;

/* ---- comparison with libdw ---------------------------------------------------- */

struct stats {
    size_t units, rows, lookups;
    size_t line_versions[6]; /* units by the version of their line table */
    size_t clang_units;
};

static char difference[2048];

static int differ(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int differ(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(difference, sizeof difference, fmt, ap);
    va_end(ap);
    return 1;
}

static bool same_name(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static const char *shown(const char *s)
{
    return s ? s : "(null)";
}

/* The data of the first section of that name in elf. */
static const unsigned char *section(Elf *elf, const char *name, size_t *size)
{
    size_t shstrndx;
    *size = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *n;
        if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(n, name) != 0)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d)
            return NULL;
        *size = d->d_size;
        return d->d_buf;
    }
    return NULL;
}

/* The version of the line table at offset, read directly. */
static unsigned line_version(Dwarf_Die *cudie)
{
    Dwarf_Attribute attr;
    Dwarf_Word off;
    size_t size;
    const unsigned char *line = section(dwarf_getelf(dwarf_cu_getdwarf(cudie->cu)), ".debug_line", &size);
    if (!line || dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &off) != 0 || off + 14 > size)
        return 0;
    uint32_t len;
    uint16_t v;
    memcpy(&len, line + off, 4);
    memcpy(&v, line + off + (len == 0xffffffff ? 12 : 4), 2);
    return v;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The answer of both for one address: ours from a lookup with *hint. */
static int compare_lookup(Dwarf_Die *cudie, const struct cg_line_table *t, uint64_t addr, size_t *hint,
                          const char *where)
{
    Dwarf_Line *l = dwarf_getsrc_die(cudie, addr);
    const struct cg_line_row *r = cg_lines_find(t, (uintptr_t)addr, hint);
    if (!l || !r) {
        if (l || r)
            return differ("%s: address %#llx: %s has a row, %s none", where, (unsigned long long)addr,
                          l ? "libdw" : "the decoder", l ? "the decoder" : "libdw");
        return 0;
    }
    Dwarf_Addr la = 0;
    int ll = 0;
    dwarf_lineaddr(l, &la);
    dwarf_lineno(l, &ll);
    const char *lf = dwarf_linesrc(l, NULL, NULL), *rf = cg_lines_file(t, r);
    if (la != r->addr || ll != r->line || !same_name(lf, rf))
        return differ("%s: address %#llx: libdw's row %#llx %s:%d, the decoder's %#llx %s:%d", where,
                      (unsigned long long)addr, (unsigned long long)la, shown(lf), ll,
                      (unsigned long long)r->addr, shown(rf), r->line);
    return 0;
}

/* Compares the unit's decoded table with libdw's. must_decode: the decoder
 * failing where libdw reads the unit is a difference (it is for the units of
 * real compilers). Returns 0, or 1 with the difference in `difference`. */
static int compare_unit(Dwarf_Die *cudie, const char *file, bool must_decode, struct stats *st)
{
    char where[512];
    const char *name = dwarf_diename(cudie);
    snprintf(where, sizeof where, "%s, unit %s", file, shown(name));
    Dwarf_Lines *lines;
    size_t n = 0;
    int theirs = dwarf_getsrclines(cudie, &lines, &n);
    struct cg_line_table t;
    if (cg_lines_decode(cudie, &t) != 0) {
        if (theirs == 0 && must_decode)
            return differ("%s: the decoder failed where libdw read %zu rows", where, n);
        return 0;
    }
    int rc = 0;
    uint64_t *q = NULL;
    if (theirs != 0) {
        rc = differ("%s: decoded, where libdw fails (%s)", where, dwarf_errmsg(-1));
        goto out;
    }
    st->units++;
    st->rows += n;
    st->line_versions[line_version(cudie) % 6]++;
    const char *producer = dwarf_formstring(dwarf_attr(cudie, DW_AT_producer, &(Dwarf_Attribute){ 0 }));
    if (producer && strstr(producer, "clang"))
        st->clang_units++;
    if (t.nrows != n) {
        rc = differ("%s: %zu rows, libdw %zu", where, t.nrows, n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a = 0;
        int line = 0;
        bool end = false;
        dwarf_lineaddr(l, &a);
        dwarf_lineno(l, &line);
        dwarf_lineendsequence(l, &end);
        const char *src = dwarf_linesrc(l, NULL, NULL), *ours = cg_lines_file(&t, &t.rows[i]);
        if (a != t.rows[i].addr || line != t.rows[i].line || end != t.rows[i].end || !same_name(src, ours)) {
            rc = differ("%s: row %zu: libdw %#llx %s:%d%s, the decoder %#llx %s:%d%s", where, i, (unsigned long long)a,
                        shown(src), line, end ? " end" : "", (unsigned long long)t.rows[i].addr, shown(ours),
                        t.rows[i].line, t.rows[i].end ? " end" : "");
            goto out;
        }
    }
    /* each row's address, the addresses either side, and two inside the
     * range up to the next row */
    size_t nq = 0;
    if (n && !(q = malloc(5 * n * sizeof *q))) {
        rc = differ("out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t a = t.rows[i].addr;
        q[nq++] = a;
        q[nq++] = a - 1;
        q[nq++] = a + 1;
        if (i + 1 < n && t.rows[i + 1].addr > a + 1) {
            q[nq++] = a + (t.rows[i + 1].addr - a) / 2;
            q[nq++] = t.rows[i + 1].addr - 1;
        }
    }
    if (nq)
        qsort(q, nq, sizeof *q, cmp_u64);
    size_t hint = 0;
    for (size_t i = 0; i < nq && !rc; i++)
        rc = compare_lookup(cudie, &t, q[i], &hint, where);
    for (size_t i = nq; i-- > 0 && !rc;)
        rc = compare_lookup(cudie, &t, q[i], &hint, where);
    st->lookups += 2 * nq;
out:
    free(q);
    cg_lines_free(&t);
    return rc;
}

/* Compares every compilation unit of the file at path. */
static int compare_file(const char *path, bool must_decode, struct stats *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return differ("%s: cannot open", path);
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    int rc = 0;
    if (dw) {
        Dwarf_CU *cu = NULL;
        Dwarf_Half version;
        uint8_t unit_type;
        Dwarf_Die cudie;
        while (!rc && dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0)
            if (unit_type == DW_UT_compile || unit_type == DW_UT_partial)
                rc = compare_unit(&cudie, path, must_decode, st);
        dwarf_end(dw);
    }
    close(fd);
    return rc;
}

static void print_stats(const char *what, const struct stats *st)
{
    print_message("%s: %zu units (line tables v2 %zu, v3 %zu, v4 %zu, v5 %zu; clang %zu), %zu rows, %zu lookups\n",
                  what, st->units, st->line_versions[2], st->line_versions[3], st->line_versions[4],
                  st->line_versions[5], st->clang_units, st->rows, st->lookups);
}

static void test_own_binary_matches_libdw(void **state)
{
    (void)state;
    struct stats st = { 0 };
    if (compare_file("/proc/self/exe", true, &st))
        fail_msg("%s", difference);
    print_stats("own binary", &st);
    /* lines_src.c as -gdwarf-2, -gdwarf-4 and the default (v5) write it,
     * by the compiler that built this test: gcc's DWARF 2 has a v3 line
     * table, clang's a v2 one */
#ifdef __clang__
    assert_true(st.line_versions[2] > 0);
#else
    assert_true(st.line_versions[3] > 0);
#endif
    assert_true(st.line_versions[4] > 0);
    assert_true(st.line_versions[5] > 0);
#ifdef CG_TEST_CLANG
    assert_true(st.clang_units > 0);
#endif
}

static void test_given_binaries_match_libdw(void **state)
{
    (void)state;
    if (ngiven == 0)
        skip();
    struct stats st = { 0 };
    for (int i = 0; i < ngiven; i++)
        if (compare_file(given_paths[i], true, &st))
            fail_msg("%s", difference);
    print_stats("given binaries", &st);
    assert_true(st.units > 0);
}

/* ---- hand-made line programs ---------------------------------------------------
 * Written as DWARF sections of an ELF file (in memory, memfd), each program
 * with a compilation unit that points to it, then read by both. */

struct bytes {
    unsigned char *p;
    size_t n, cap;
};

static void put(struct bytes *b, const void *v, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

static void u8(struct bytes *b, unsigned v)
{
    uint8_t x = (uint8_t)v;
    put(b, &x, 1);
}

static void u16(struct bytes *b, unsigned v)
{
    uint16_t x = (uint16_t)v;
    put(b, &x, 2);
}

static void u32(struct bytes *b, uint32_t v)
{
    put(b, &v, 4);
}

static void u64(struct bytes *b, uint64_t v)
{
    put(b, &v, 8);
}

static void uleb(struct bytes *b, uint64_t v)
{
    do {
        u8(b, (v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void sleb(struct bytes *b, int64_t v)
{
    for (;;) {
        unsigned byte = (unsigned)(v & 0x7f);
        v >>= 7; /* arithmetic on gcc and clang */
        if ((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40))) {
            u8(b, byte);
            return;
        }
        u8(b, byte | 0x80);
    }
}

static void str(struct bytes *b, const char *s)
{
    put(b, s, strlen(s) + 1);
}

/* An offset of offset_size bytes. */
static void off(struct bytes *b, unsigned offset_size, uint64_t v)
{
    if (offset_size == 8)
        u64(b, v);
    else
        u32(b, (uint32_t)v);
}

/* A string put in a string section: its offset. */
static uint64_t strp(struct bytes *sec, const char *s)
{
    uint64_t at = sec->n;
    str(sec, s);
    return at;
}

struct dwarf {
    struct bytes abbrev, info, line, str, line_str;
    unsigned abbrevs; /* one abbreviation a unit */
};

struct line_unit {
    unsigned version, offset_size, address_size;
    unsigned min_inst, max_ops, opcode_base, line_range;
    int line_base;
    const char *comp_dir; /* NULL: the unit has none */
    /* where the lengths are patched */
    size_t unit_start, length_at, header_length_at;
};

/* The unit's DIE: a compile unit with name, comp_dir (if any) and
 * stmt_list; its header in the unit's DWARF version (that of its line
 * table, 3 for a line table of version 2). */
static void compile_unit(struct dwarf *d, const struct line_unit *u)
{
    unsigned version = u->version < 3 ? 3 : u->version;
    unsigned code = ++d->abbrevs;
    uleb(&d->abbrev, code);
    uleb(&d->abbrev, DW_TAG_compile_unit);
    u8(&d->abbrev, DW_CHILDREN_no);
    uleb(&d->abbrev, DW_AT_name);
    uleb(&d->abbrev, DW_FORM_string);
    if (u->comp_dir) {
        uleb(&d->abbrev, DW_AT_comp_dir);
        uleb(&d->abbrev, DW_FORM_string);
    }
    uleb(&d->abbrev, DW_AT_stmt_list);
    uleb(&d->abbrev, version >= 4 ? DW_FORM_sec_offset : DW_FORM_data4);
    u8(&d->abbrev, 0);
    u8(&d->abbrev, 0);
    size_t start = d->info.n;
    u32(&d->info, 0);
    u16(&d->info, version);
    if (version >= 5) {
        u8(&d->info, DW_UT_compile);
        u8(&d->info, u->address_size);
        u32(&d->info, 0);
    } else {
        u32(&d->info, 0);
        u8(&d->info, u->address_size);
    }
    uleb(&d->info, code);
    str(&d->info, "hand-made.c");
    if (u->comp_dir)
        str(&d->info, u->comp_dir);
    u32(&d->info, (uint32_t)u->unit_start);
    uint32_t len = (uint32_t)(d->info.n - start - 4);
    memcpy(d->info.p + start, &len, 4);
}

/* The line table's header up to its directory and file tables; opcodes
 * from 13 to opcode_base - 1 take two operands. */
static void line_header(struct dwarf *d, struct line_unit *u)
{
    struct bytes *b = &d->line;
    u->unit_start = b->n;
    if (u->offset_size == 8)
        u32(b, 0xffffffff);
    u->length_at = b->n;
    off(b, u->offset_size, 0);
    u16(b, u->version);
    if (u->version >= 5) {
        u8(b, u->address_size);
        u8(b, 0);
    }
    u->header_length_at = b->n;
    off(b, u->offset_size, 0);
    u8(b, u->min_inst);
    if (u->version >= 4)
        u8(b, u->max_ops);
    u8(b, 1);
    u8(b, (unsigned)(u->line_base & 0xff));
    u8(b, u->line_range);
    u8(b, u->opcode_base);
    static const unsigned char std[] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
    for (unsigned op = 1; op < u->opcode_base; op++)
        u8(b, op <= sizeof std ? std[op - 1] : 2);
}

static void patch_offset(struct bytes *b, size_t at, unsigned offset_size, uint64_t v)
{
    if (offset_size == 8)
        memcpy(b->p + at, &v, 8);
    else {
        uint32_t x = (uint32_t)v;
        memcpy(b->p + at, &x, 4);
    }
}

/* After the tables: the header's length; after the program: the unit's,
 * and the compilation unit that points to it. */
static void line_program_start(struct dwarf *d, struct line_unit *u)
{
    patch_offset(&d->line, u->header_length_at, u->offset_size, d->line.n - u->header_length_at - u->offset_size);
}

static void line_unit_end(struct dwarf *d, struct line_unit *u)
{
    patch_offset(&d->line, u->length_at, u->offset_size, d->line.n - u->length_at - u->offset_size);
    compile_unit(d, u);
}

static void op_extended(struct bytes *b, unsigned op, const void *args, size_t n)
{
    u8(b, 0);
    uleb(b, 1 + n);
    u8(b, op);
    put(b, args, n);
}

static void op_set_address(struct bytes *b, unsigned address_size, uint64_t a)
{
    uint32_t a4 = (uint32_t)a;
    op_extended(b, DW_LNE_set_address, address_size == 8 ? (const void *)&a : (const void *)&a4, address_size);
}

static void op_end_sequence(struct bytes *b)
{
    op_extended(b, DW_LNE_end_sequence, NULL, 0);
}

static void op_uleb(struct bytes *b, unsigned op, uint64_t v)
{
    u8(b, op);
    uleb(b, v);
}

static void op_advance_line(struct bytes *b, int64_t v)
{
    u8(b, DW_LNS_advance_line);
    sleb(b, v);
}

/* The special opcode for that line and operation advance. */
static void op_special(struct bytes *b, const struct line_unit *u, int line, unsigned adv)
{
    unsigned op = (unsigned)(line - u->line_base) + u->line_range * adv + u->opcode_base;
    assert_true(line >= u->line_base && line < u->line_base + (int)u->line_range && op <= 255);
    u8(b, op);
}

/* An ELF file holding d's sections (by memfd). */
static int elf_file(const struct dwarf *d)
{
    int fd = memfd_create("test_lines", MFD_CLOEXEC);
    assert_true(fd >= 0);
    Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
    assert_non_null(e);
    assert_non_null(gelf_newehdr(e, ELFCLASS64));
    GElf_Ehdr eh;
    assert_non_null(gelf_getehdr(e, &eh));
    eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    struct {
        const char *name;
        const struct bytes *data;
    } secs[] = {
        { ".debug_abbrev", &d->abbrev }, { ".debug_info", &d->info },         { ".debug_line", &d->line },
        { ".debug_str", &d->str },       { ".debug_line_str", &d->line_str },
    };
    struct bytes names = { 0 };
    u8(&names, 0);
    for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++) {
        if (!secs[i].data->n)
            continue;
        Elf_Scn *scn = elf_newscn(e);
        Elf_Data *data = elf_newdata(scn);
        data->d_buf = secs[i].data->p;
        data->d_size = secs[i].data->n;
        data->d_type = ELF_T_BYTE;
        data->d_align = 1;
        GElf_Shdr sh;
        gelf_getshdr(scn, &sh);
        sh.sh_name = (GElf_Word)names.n;
        sh.sh_type = SHT_PROGBITS;
        sh.sh_addralign = 1;
        gelf_update_shdr(scn, &sh);
        str(&names, secs[i].name);
    }
    Elf_Scn *scn = elf_newscn(e);
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    sh.sh_name = (GElf_Word)names.n;
    str(&names, ".shstrtab");
    Elf_Data *data = elf_newdata(scn);
    data->d_buf = names.p;
    data->d_size = names.n;
    data->d_type = ELF_T_BYTE;
    data->d_align = 1;
    sh.sh_type = SHT_STRTAB;
    sh.sh_addralign = 1;
    gelf_update_shdr(scn, &sh);
    eh.e_shstrndx = (GElf_Half)elf_ndxscn(scn);
    gelf_update_ehdr(e, &eh);
    if (elf_update(e, ELF_C_WRITE) < 0)
        fail_msg("elf_update: %s", elf_errmsg(-1));
    elf_end(e);
    free(names.p);
    return fd;
}

static void dwarf_free(struct dwarf *d)
{
    free(d->abbrev.p);
    free(d->info.p);
    free(d->line.p);
    free(d->str.p);
    free(d->line_str.p);
}

/* Compares every unit of d with libdw. must_decode false: each unit must
 * instead be one the decoder refuses. */
static void check_dwarf(struct dwarf *d, const char *what, bool must_decode)
{
    u8(&d->abbrev, 0); /* the end of the abbreviations */
    int fd = elf_file(d);
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    if (!dw)
        fail_msg("%s: libdw: %s", what, dwarf_errmsg(-1));
    struct stats st = { 0 };
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    size_t units = 0;
    while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0) {
        units++;
        if (compare_unit(&cudie, what, must_decode, &st))
            fail_msg("%s", difference);
        if (!must_decode) {
            struct cg_line_table t;
            assert_int_equal(cg_lines_decode(&cudie, &t), -1);
        }
    }
    assert_true(units > 0);
    if (must_decode) {
        assert_int_equal(st.units, units);
        print_stats(what, &st);
    }
    dwarf_end(dw);
    close(fd);
    dwarf_free(d);
}

/* DWARF 2: relative and absolute directories and files, sequences out of
 * address order, a sequence starting where another ends, a row at the
 * address of its own sequence's end (libdw puts the end first), rows at one
 * address, file 0 ("???") and a file past the table. */
static void test_dwarf2_sequences_and_files(void **state)
{
    (void)state;
    struct dwarf d = { 0 };
    struct line_unit u = { .version = 2, .offset_size = 4, .address_size = 8, .min_inst = 1, .max_ops = 1,
                           .opcode_base = 10, .line_base = -5, .line_range = 14, .comp_dir = "/cd" };
    struct bytes *b = &d.line;
    line_header(&d, &u);
    str(b, "inc");
    str(b, "/abs/dir");
    u8(b, 0);
    const char *files[][2] = { { "a.c", "\0" }, { "b.h", "\1" }, { "c.h", "\2" }, { "/abs/d.c", "\1" } };
    for (size_t i = 0; i < 4; i++) {
        str(b, files[i][0]);
        uleb(b, (unsigned char)files[i][1][0]);
        uleb(b, 0);
        uleb(b, 0);
    }
    u8(b, 0);
    line_program_start(&d, &u);
    /* high addresses first */
    op_set_address(b, 8, 0x2000);
    op_advance_line(b, 9);
    u8(b, DW_LNS_copy);
    op_special(b, &u, 2, 3);
    op_uleb(b, DW_LNS_set_file, 2);
    op_uleb(b, DW_LNS_advance_pc, 4);
    u8(b, DW_LNS_copy);
    op_uleb(b, DW_LNS_set_file, 4);
    op_special(b, &u, -3, 5);
    op_uleb(b, DW_LNS_advance_pc, 3);
    op_end_sequence(b);
    /* then lower: two rows at one address, then an end at 0x1010 */
    op_set_address(b, 8, 0x1000);
    u8(b, DW_LNS_copy);
    op_special(b, &u, 1, 0);
    op_special(b, &u, 4, 6);
    op_uleb(b, DW_LNS_advance_pc, 10);
    op_end_sequence(b);
    /* a sequence from that end, with a row at its own end's address */
    op_set_address(b, 8, 0x1010);
    op_advance_line(b, 40);
    u8(b, DW_LNS_copy);
    op_uleb(b, DW_LNS_advance_pc, 0x10);
    u8(b, DW_LNS_copy);
    op_end_sequence(b);
    /* file 0, const_add_pc, fixed_advance_pc, a line going down, a file
     * past the table */
    op_set_address(b, 8, 0x3000);
    op_uleb(b, DW_LNS_set_file, 0);
    u8(b, DW_LNS_copy);
    u8(b, DW_LNS_const_add_pc);
    u8(b, DW_LNS_fixed_advance_pc);
    u16(b, 0x20);
    op_uleb(b, DW_LNS_set_file, 3);
    u8(b, DW_LNS_copy);
    op_advance_line(b, -1);
    op_special(b, &u, 0, 1);
    op_uleb(b, DW_LNS_set_file, 9);
    op_special(b, &u, 1, 2);
    op_uleb(b, DW_LNS_advance_pc, 1);
    op_end_sequence(b);
    line_unit_end(&d, &u);
    check_dwarf(&d, "DWARF 2", true);
}

/* DWARF 3 without a compilation directory: files added by define_file
 * (relative to a directory, absolute, relative to directory 0, which is
 * then no directory), set_discriminator, an extended opcode libdw does not
 * know (skipped by its length), flags, instructions of 2 bytes at least; no
 * end_sequence at the end (libdw marks its last row as one). */
static void test_dwarf3_define_file(void **state)
{
    (void)state;
    struct dwarf d = { 0 };
    struct line_unit u = { .version = 3, .offset_size = 4, .address_size = 8, .min_inst = 2, .max_ops = 1,
                           .opcode_base = 13, .line_base = -5, .line_range = 14 };
    struct bytes *b = &d.line;
    line_header(&d, &u);
    str(b, "sub");
    u8(b, 0);
    str(b, "x.c");
    uleb(b, 0);
    uleb(b, 0);
    uleb(b, 0);
    str(b, "y.c");
    uleb(b, 1);
    uleb(b, 0);
    uleb(b, 0);
    u8(b, 0);
    line_program_start(&d, &u);
    struct bytes arg = { 0 };
    const char *defined[][2] = { { "z.c", "\1" }, { "/abs/w.c", "\0" }, { "q.c", "\0" } };
    for (size_t i = 0; i < 3; i++) {
        arg.n = 0;
        str(&arg, defined[i][0]);
        uleb(&arg, (unsigned char)defined[i][1][0]);
        uleb(&arg, 12345);
        uleb(&arg, 678);
        op_extended(b, DW_LNE_define_file, arg.p, arg.n);
    }
    free(arg.p);
    op_set_address(b, 8, 0x400000);
    for (unsigned f = 1; f <= 5; f++) {
        op_uleb(b, DW_LNS_set_file, f);
        u8(b, DW_LNS_negate_stmt);
        u8(b, DW_LNS_set_basic_block);
        u8(b, DW_LNS_set_prologue_end);
        u8(b, DW_LNS_set_epilogue_begin);
        op_extended(b, DW_LNE_set_discriminator, (const unsigned char[]){ 0x81, 0x01 }, 2);
        op_extended(b, 0x80, "abc", 3);
        op_uleb(b, DW_LNS_set_column, 7 * f);
        op_special(b, &u, (int)f - 2, f);
        op_uleb(b, DW_LNS_advance_pc, f);
        u8(b, DW_LNS_const_add_pc);
        u8(b, DW_LNS_copy);
    }
    line_unit_end(&d, &u);
    check_dwarf(&d, "DWARF 3", true);
}

/* DWARF 4, VLIW: four operations an instruction of 4 bytes (libdw's
 * op_index arithmetic), a standard opcode past DWARF's (two operands,
 * skipped), set_isa, a large advance_pc. */
static void test_dwarf4_vliw(void **state)
{
    (void)state;
    struct dwarf d = { 0 };
    struct line_unit u = { .version = 4, .offset_size = 4, .address_size = 8, .min_inst = 4, .max_ops = 4,
                           .opcode_base = 14, .line_base = -3, .line_range = 12, .comp_dir = "/vliw" };
    struct bytes *b = &d.line;
    line_header(&d, &u);
    u8(b, 0);
    str(b, "v.c");
    uleb(b, 0);
    uleb(b, 0);
    uleb(b, 0);
    u8(b, 0);
    line_program_start(&d, &u);
    op_set_address(b, 8, 0x10000);
    u8(b, DW_LNS_copy);
    for (unsigned i = 0; i < 12; i++) {
        op_special(b, &u, (int)(i % 5) - 2, i % 7);
        if (i % 4 == 1) {
            u8(b, 13); /* the unknown standard opcode */
            uleb(b, 300);
            uleb(b, 5);
        }
        if (i % 4 == 2)
            op_uleb(b, DW_LNS_set_isa, i);
        if (i % 4 == 3)
            u8(b, DW_LNS_const_add_pc);
    }
    op_uleb(b, DW_LNS_advance_pc, 1000003);
    u8(b, DW_LNS_copy);
    op_uleb(b, DW_LNS_advance_pc, 2);
    op_end_sequence(b);
    line_unit_end(&d, &u);
    check_dwarf(&d, "DWARF 4 VLIW", true);
}

/* DWARF 5 tables: paths by line_strp, strp and string; directory indexes
 * by data1 and udata; MD5 (data16), size, timestamp (block) and vendor
 * fields skipped; file 0 used; a directory that is relative. */
static void test_dwarf5_forms(void **state)
{
    (void)state;
    struct dwarf d = { 0 };
    struct line_unit u = { .version = 5, .offset_size = 4, .address_size = 8, .min_inst = 1, .max_ops = 1,
                           .opcode_base = 13, .line_base = -5, .line_range = 14, .comp_dir = "/comp" };
    struct bytes *b = &d.line;
    line_header(&d, &u);
    u8(b, 2); /* directories: path, a vendor string */
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_line_strp);
    uleb(b, 0x2003);
    uleb(b, DW_FORM_string);
    uleb(b, 3);
    const char *dirs[] = { "/comp", "rel", "/abs" };
    for (size_t i = 0; i < 3; i++) {
        off(b, 4, strp(&d.line_str, dirs[i]));
        str(b, "vendor");
    }
    u8(b, 7); /* files */
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_strp);
    uleb(b, DW_LNCT_directory_index);
    uleb(b, DW_FORM_data1);
    uleb(b, DW_LNCT_MD5);
    uleb(b, DW_FORM_data16);
    uleb(b, DW_LNCT_size);
    uleb(b, DW_FORM_udata);
    uleb(b, DW_LNCT_timestamp);
    uleb(b, DW_FORM_block);
    uleb(b, 0x2001);
    uleb(b, DW_FORM_data2);
    uleb(b, 0x2002);
    uleb(b, DW_FORM_data8);
    const char *files[] = { "main.c", "h.h", "/abs/x.h", "sub/y.h" };
    uleb(b, 4);
    for (unsigned i = 0; i < 4; i++) {
        off(b, 4, strp(&d.str, files[i]));
        u8(b, i % 3);
        for (int k = 0; k < 16; k++)
            u8(b, (unsigned)(k * 7 + i));
        uleb(b, 100000 + i);
        uleb(b, 3);
        put(b, "\1\2\3", 3);
        u16(b, 0xbeef);
        u64(b, 42);
    }
    line_program_start(&d, &u);
    op_set_address(b, 8, 0x5000);
    for (unsigned f = 0; f < 6; f++) {
        op_uleb(b, DW_LNS_set_file, f % 5);
        op_special(b, &u, 3, f + 1);
    }
    op_uleb(b, DW_LNS_advance_pc, 9);
    op_end_sequence(b);
    line_unit_end(&d, &u);

    /* a second unit: paths and directory index as string and udata */
    struct line_unit v = u;
    v.comp_dir = NULL;
    line_header(&d, &v);
    u8(b, 1);
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_string);
    uleb(b, 2);
    str(b, "");
    str(b, "d");
    u8(b, 2);
    uleb(b, DW_LNCT_directory_index);
    uleb(b, DW_FORM_udata);
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_string);
    uleb(b, 2);
    uleb(b, 1);
    str(b, "one.c");
    uleb(b, 0);
    str(b, "two.c");
    line_program_start(&d, &v);
    op_set_address(b, 8, 0x6000);
    op_uleb(b, DW_LNS_set_file, 1);
    u8(b, DW_LNS_copy);
    op_uleb(b, DW_LNS_set_file, 0);
    op_special(b, &v, 1, 4);
    op_uleb(b, DW_LNS_advance_pc, 4);
    op_end_sequence(b);
    line_unit_end(&d, &v);
    check_dwarf(&d, "DWARF 5 forms", true);
}

/* 64-bit DWARF, 4-byte addresses; a DWARF 5 table with no files (file 0
 * is libdw's "???"). */
static void test_dwarf5_64bit_and_4byte_addresses(void **state)
{
    (void)state;
    struct dwarf d = { 0 };
    struct line_unit u = { .version = 5, .offset_size = 8, .address_size = 4, .min_inst = 1, .max_ops = 1,
                           .opcode_base = 13, .line_base = -5, .line_range = 14, .comp_dir = "/c64" };
    struct bytes *b = &d.line;
    line_header(&d, &u);
    u8(b, 1);
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_line_strp);
    uleb(b, 1);
    off(b, 8, strp(&d.line_str, "/c64"));
    u8(b, 2);
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_line_strp);
    uleb(b, DW_LNCT_directory_index);
    uleb(b, DW_FORM_udata);
    uleb(b, 2);
    off(b, 8, strp(&d.line_str, "p.c"));
    uleb(b, 0);
    off(b, 8, strp(&d.line_str, "q.c"));
    uleb(b, 0);
    line_program_start(&d, &u);
    op_set_address(b, 4, 0x80001000);
    u8(b, DW_LNS_copy);
    op_special(b, &u, 1, 8);
    op_uleb(b, DW_LNS_advance_pc, 8);
    op_end_sequence(b);
    op_set_address(b, 4, 0x80000000);
    op_uleb(b, DW_LNS_set_file, 1);
    u8(b, DW_LNS_copy);
    op_uleb(b, DW_LNS_advance_pc, 0x1000);
    op_end_sequence(b);
    line_unit_end(&d, &u);

    struct line_unit v = { .version = 5, .offset_size = 4, .address_size = 8, .min_inst = 1, .max_ops = 1,
                           .opcode_base = 13, .line_base = -5, .line_range = 14, .comp_dir = "/none" };
    line_header(&d, &v);
    u8(b, 0);
    uleb(b, 0);
    u8(b, 0);
    uleb(b, 0);
    line_program_start(&d, &v);
    op_set_address(b, 8, 0x9000);
    op_uleb(b, DW_LNS_set_file, 0);
    u8(b, DW_LNS_copy);
    op_uleb(b, DW_LNS_set_file, 1);
    op_special(b, &v, 2, 2);
    op_end_sequence(b);
    line_unit_end(&d, &v);
    check_dwarf(&d, "DWARF 5, 64-bit", true);
}

/* What the decoder leaves to libdw: a path by DW_FORM_strx1 (it needs the
 * unit's string offsets), an extended opcode's length in a ULEB128 of two
 * bytes (libdw reads one byte), a line table of version 6. */
static void test_refusals(void **state)
{
    (void)state;
    struct dwarf d = { 0 };
    struct line_unit u = { .version = 5, .offset_size = 4, .address_size = 8, .min_inst = 1, .max_ops = 1,
                           .opcode_base = 13, .line_base = -5, .line_range = 14, .comp_dir = "/r" };
    struct bytes *b = &d.line;
    line_header(&d, &u);
    u8(b, 1);
    uleb(b, DW_LNCT_path);
    uleb(b, DW_FORM_strx1);
    uleb(b, 1);
    u8(b, 0);
    u8(b, 0);
    uleb(b, 0);
    line_program_start(&d, &u);
    line_unit_end(&d, &u);

    struct line_unit v = u;
    v.version = 4;
    line_header(&d, &v);
    u8(b, 0);
    str(b, "a.c");
    uleb(b, 0);
    uleb(b, 0);
    uleb(b, 0);
    u8(b, 0);
    line_program_start(&d, &v);
    u8(b, 0);
    u8(b, 0x81); /* 1, in two bytes */
    u8(b, 0x00);
    u8(b, DW_LNE_end_sequence);
    line_unit_end(&d, &v);

    struct line_unit w = v;
    w.version = 6;
    line_header(&d, &w);
    line_program_start(&d, &w);
    line_unit_end(&d, &w);
    check_dwarf(&d, "refused", false);
}

/* ---- robustness ------------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A copy in a buffer of exactly n bytes (at least one, for malloc). */
static unsigned char *exact_copy(const unsigned char *src, size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    assert_non_null(p);
    memcpy(p, src, n);
    return p;
}

static void parse_and_free(const struct cg_line_sections *sec, uint64_t offset, unsigned address_size)
{
    struct cg_line_table t;
    if (cg_lines_parse(sec, offset, address_size, "/comp/dir", &t) == 0) {
        /* what was decoded is usable */
        for (size_t i = 0; i < t.nrows; i++)
            if (cg_lines_file(&t, &t.rows[i]))
                assert_true(strlen(cg_lines_file(&t, &t.rows[i])) < 1u << 30);
        size_t hint = 0;
        if (t.nrows)
            cg_lines_find(&t, t.rows[t.nrows / 2].addr, &hint);
        cg_lines_free(&t);
    }
}

static void test_corrupted_tables_stay_in_bounds(void **state)
{
    (void)state;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    assert_non_null(elf);
    size_t line_size, line_str_size, str_size;
    const unsigned char *line = section(elf, ".debug_line", &line_size);
    const unsigned char *line_str = section(elf, ".debug_line_str", &line_str_size);
    const unsigned char *strs = section(elf, ".debug_str", &str_size);
    assert_non_null(line);
    struct cg_line_sections sec = { .line_str = exact_copy(line_str, line_str_size), .line_str_size = line_str_size,
                                    .str = exact_copy(strs, str_size), .str_size = str_size };
    size_t units = 0;
    for (size_t at = 0; at + 4 <= line_size; units++) {
        uint32_t len32;
        memcpy(&len32, line + at, 4);
        if (len32 >= 0xfffffff0 || len32 > line_size - at - 4)
            break; /* (the test's own binary: 32-bit DWARF) */
        size_t total = 4 + len32;
        unsigned char *copy;
        /* cut short, the unit's length made to fit: every read reaches the
         * end of the buffer somewhere */
        for (size_t cut = 0; cut <= total; cut += 1 + total / 400) {
            copy = exact_copy(line + at, cut);
            if (cut >= 4) {
                uint32_t l = (uint32_t)(cut - 4);
                memcpy(copy, &l, 4);
            }
            sec.line = copy;
            sec.line_size = cut;
            parse_and_free(&sec, 0, 8);
            free(copy);
        }
        /* bytes changed at random, address sizes 4 and 8 */
        for (int round = 0; round < 600; round++) {
            copy = exact_copy(line + at, total);
            int flips = 1 + (int)(next_random() % 6);
            for (int k = 0; k < flips; k++) {
                size_t pos = next_random() % total;
                /* the header is where a change matters most */
                if (k == 0 && round % 2 == 0)
                    pos = next_random() % (total < 64 ? total : 64);
                copy[pos] = (unsigned char)next_random();
            }
            sec.line = copy;
            sec.line_size = total;
            parse_and_free(&sec, 0, round % 3 == 0 ? 4 : 8);
            free(copy);
        }
        at += total;
    }
    assert_true(units > 0);
    /* string sections cut short under the tables' offsets, and offsets
     * that are not a unit's start */
    unsigned char *whole = exact_copy(line, line_size);
    sec.line = whole;
    sec.line_size = line_size;
    for (int round = 0; round < 200; round++) {
        free((void *)sec.line_str);
        sec.line_str_size = line_str_size ? next_random() % line_str_size : 0;
        sec.line_str = exact_copy(line_str, sec.line_str_size);
        parse_and_free(&sec, round % 2 ? next_random() % (line_size + 8) : 0, 8);
    }
    free(whole);
    free((void *)sec.line_str);
    free((void *)sec.str);
    elf_end(elf);
    close(fd);
}

int main(int argc, char **argv)
{
    given_paths = argv + 1;
    ngiven = argc - 1;
    elf_version(EV_CURRENT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_binary_matches_libdw),
        cmocka_unit_test(test_given_binaries_match_libdw),
        cmocka_unit_test(test_dwarf2_sequences_and_files),
        cmocka_unit_test(test_dwarf3_define_file),
        cmocka_unit_test(test_dwarf4_vliw),
        cmocka_unit_test(test_dwarf5_forms),
        cmocka_unit_test(test_dwarf5_64bit_and_4byte_addresses),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_corrupted_tables_stay_in_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
