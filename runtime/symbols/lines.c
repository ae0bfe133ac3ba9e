/* A DWARF line-program decoder (versions 2 to 5) whose answers are libdw's:
 * the reference for every choice below is elfutils' read_srclines()
 * (libdw/dwarf_getsrclines.c). Where libdw would reject the data, or read
 * it other than DWARF says, this decoder fails instead of guessing, so that
 * the caller's libdw fallback gives the answer libdw gives. */
#include "lines.h"

#include <dwarf.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "elfutils.h"
#include "util.h"

/* libdw's name for file 0 before DWARF 5 (and in a DWARF 5 table without
 * files). One string for every unit, as in libdw: srclines.c caches the
 * absolute form of a name by its pointer, and answers as it did with libdw
 * only if the pointers are shared alike. */
static const char null_file[] = "???";

/* ---- bounded reads ---------------------------------------------------------
 * Every read checks the bytes are there: the input is a file on disk. Values
 * are in the host's byte order (cg_lines_decode checks the file's is). */

struct rd {
    const unsigned char *p, *end;
};

static int rd_skip(struct rd *r, uint64_t n)
{
    if ((uint64_t)(r->end - r->p) < n)
        return -1;
    r->p += n;
    return 0;
}

/* An unsigned value of n bytes (1, 2, 4 or 8). */
static int rd_uint(struct rd *r, unsigned n, uint64_t *v)
{
    if ((size_t)(r->end - r->p) < n)
        return -1;
    uint8_t v1;
    uint16_t v2;
    uint32_t v4;
    switch (n) {
    case 1:
        memcpy(&v1, r->p, 1);
        *v = v1;
        break;
    case 2:
        memcpy(&v2, r->p, 2);
        *v = v2;
        break;
    case 4:
        memcpy(&v4, r->p, 4);
        *v = v4;
        break;
    case 8:
        memcpy(v, r->p, 8);
        break;
    default:
        return -1;
    }
    r->p += n;
    return 0;
}

/* A ULEB128 that fits 64 bits in at most 10 bytes (a longer or larger one
 * fails: libdw would read it some other way). */
static inline int rd_uleb(struct rd *r, uint64_t *v)
{
    if (cg_likely(r->p < r->end && *r->p < 0x80)) {
        *v = *r->p++;
        return 0;
    }
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p == r->end)
            return -1;
        unsigned b = *r->p++;
        if (shift == 63 && b > 1)
            return -1;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* An SLEB128 that fits 64 bits, in at most 10 bytes. */
static int rd_sleb(struct rd *r, int64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p == r->end)
            return -1;
        unsigned b = *r->p++;
        if (shift == 63 && b != 0 && b != 0x7f) /* only the sign may be left */
            return -1;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (shift + 7 < 64 && (b & 0x40))
                x |= ~(uint64_t)0 << (shift + 7);
            memcpy(v, &x, sizeof x); /* two's complement, without an implementation-defined conversion */
            return 0;
        }
    }
    return -1;
}

/* A NUL-terminated string inside the reader. */
static const char *rd_str(struct rd *r)
{
    const unsigned char *nul = memchr(r->p, 0, (size_t)(r->end - r->p));
    if (!nul)
        return NULL;
    const char *s = (const char *)r->p;
    r->p = nul + 1;
    return s;
}

/* The string at offset off of a string section, if it ends inside it. */
static const char *section_str(const unsigned char *sec, size_t size, uint64_t off)
{
    if (!sec || off >= size || !memchr(sec + off, 0, size - off))
        return NULL;
    return (const char *)sec + off;
}

/* ---- the header ------------------------------------------------------------ */

struct header {
    unsigned version, offset_size, address_size;
    unsigned min_inst, max_ops, opcode_base, line_range;
    const unsigned char *std_len; /* std_len[op - 1]: the operands of standard opcode op */
    /* Special opcodes' increments, computed once: a division per row saved. */
    int16_t special_line[256];
    uint8_t special_adv[256];
    struct rd tables;  /* the directory and file tables */
    struct rd program; /* the opcodes, to the end of the unit */
};

static int read_header(const struct cg_line_sections *sec, uint64_t offset, unsigned address_size, struct header *h)
{
    if (offset >= sec->line_size)
        return -1;
    struct rd r = { sec->line + offset, sec->line + sec->line_size };
    uint64_t len, v;
    if (rd_uint(&r, 4, &len) != 0)
        return -1;
    h->offset_size = 4;
    if (len == 0xffffffff) { /* 64-bit DWARF */
        h->offset_size = 8;
        if (rd_uint(&r, 8, &len) != 0)
            return -1;
    }
    if (len > (uint64_t)(r.end - r.p))
        return -1;
    r.end = r.p + len;
    if (rd_uint(&r, 2, &v) != 0 || v < 2 || v > 5)
        return -1;
    h->version = (unsigned)v;
    h->address_size = address_size;
    if (h->version >= 5) {
        uint64_t asize, seg;
        if (rd_uint(&r, 1, &asize) != 0 || rd_uint(&r, 1, &seg) != 0 || asize != address_size || seg != 0)
            return -1;
    }
    uint64_t header_len;
    if (rd_uint(&r, h->offset_size, &header_len) != 0 || header_len > (uint64_t)(r.end - r.p))
        return -1;
    h->program = (struct rd){ r.p + header_len, r.end };
    r.end = h->program.p; /* the header's fields must end inside it */
    uint64_t min_inst, max_ops = 1, is_stmt, line_base, line_range, opcode_base;
    if (rd_uint(&r, 1, &min_inst) != 0 || (h->version >= 4 && rd_uint(&r, 1, &max_ops) != 0) || max_ops == 0 ||
        rd_uint(&r, 1, &is_stmt) != 0 || rd_uint(&r, 1, &line_base) != 0 || rd_uint(&r, 1, &line_range) != 0 ||
        rd_uint(&r, 1, &opcode_base) != 0)
        return -1;
    /* A line range of 0 fails libdw only at the first special opcode; an
     * opcode base below 10 has libdw read past its standard opcode lengths
     * (set_discriminator checks opcode 4's). Neither comes from compilers. */
    if (line_range == 0 || opcode_base < 10)
        return -1;
    h->min_inst = (unsigned)min_inst;
    h->max_ops = (unsigned)max_ops;
    h->line_range = (unsigned)line_range;
    h->opcode_base = (unsigned)opcode_base;
    h->std_len = r.p;
    if (rd_skip(&r, opcode_base - 1) != 0)
        return -1;
    /* The standard opcodes libdw knows must have the operands it expects
     * (it fails on the first that has not; this decoder, at once). */
    static const unsigned char known[] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
    for (unsigned op = 1; op < opcode_base && op <= CG_ARRAY_SIZE(known); op++)
        if (h->std_len[op - 1] != known[op - 1])
            return -1;
    int base = (int8_t)line_base;
    for (unsigned op = h->opcode_base; op < 256; op++) {
        h->special_line[op] = (int16_t)(base + (int)((op - h->opcode_base) % h->line_range));
        h->special_adv[op] = (uint8_t)((op - h->opcode_base) / h->line_range);
    }
    h->tables = r;
    return 0;
}

/* ---- file names ------------------------------------------------------------
 * Made as libdw makes them: a relative name after its directory and a '/',
 * an absolute one (or one whose directory is unknown) alone. Kept as offsets
 * into one growing buffer while the tables are read, pointers at the end. */

#define NULL_FILE SIZE_MAX /* the offset that stands for null_file */

struct names {
    char *buf;
    size_t len, cap;
    size_t *off;
    size_t n, ncap;
};

static int names_add(struct names *nm, const char *dir, const char *name)
{
    if (CG_GROW(nm->off, nm->ncap, nm->n + 1, 16) != 0)
        return -1;
    if (!name) {
        nm->off[nm->n++] = NULL_FILE;
        return 0;
    }
    size_t dlen = dir && name[0] != '/' ? strlen(dir) + 1 : 0, nlen = strlen(name) + 1;
    if (CG_GROW(nm->buf, nm->cap, nm->len + dlen + nlen, 1024) != 0)
        return -1;
    char *p = nm->buf + nm->len;
    if (dlen) {
        memcpy(p, dir, dlen - 1);
        p[dlen - 1] = '/';
    }
    memcpy(p + dlen, name, nlen);
    nm->off[nm->n++] = nm->len;
    nm->len += dlen + nlen;
    return 0;
}

/* Directories: pointers into the sections (or the unit's comp_dir). */
struct dirs {
    const char **v;
    size_t n, cap;
};

static int dirs_add(struct dirs *d, const char *dir)
{
    if (CG_GROW(d->v, d->cap, d->n + 1, 16) != 0)
        return -1;
    d->v[d->n++] = dir;
    return 0;
}

/* Before DWARF 5: directories, then files (name, directory index, time,
 * size), each list ended by an empty string; directory 0 is the unit's
 * compilation directory, file 0 libdw's "???". */
static int read_tables_v4(const struct header *h, const char *comp_dir, struct dirs *d, struct names *nm)
{
    struct rd r = h->tables;
    if (dirs_add(d, comp_dir) != 0)
        return -1;
    for (;;) {
        const char *dir = rd_str(&r);
        if (!dir)
            return -1;
        if (!*dir)
            break;
        if (dirs_add(d, dir) != 0)
            return -1;
    }
    if (names_add(nm, NULL, NULL) != 0)
        return -1;
    for (;;) {
        const char *name = rd_str(&r);
        uint64_t dir, skip;
        if (!name)
            return -1;
        if (!*name)
            break;
        if (rd_uleb(&r, &dir) != 0 || rd_uleb(&r, &skip) != 0 || rd_uleb(&r, &skip) != 0 || dir >= d->n ||
            names_add(nm, d->v[dir], name) != 0)
            return -1;
    }
    return r.p == r.end ? 0 : -1;
}

/* A DWARF 5 entry format: (content type, form) pairs. */
struct format {
    unsigned n;
    uint16_t content[255], form[255];
};

static int read_format(struct rd *r, struct format *f)
{
    uint64_t n, content, form;
    if (rd_uint(r, 1, &n) != 0)
        return -1;
    f->n = (unsigned)n;
    for (unsigned i = 0; i < f->n; i++) {
        /* libdw keeps both in 16 bits */
        if (rd_uleb(r, &content) != 0 || rd_uleb(r, &form) != 0 || content > 0xffff || form > 0xffff)
            return -1;
        f->content[i] = (uint16_t)content;
        f->form[i] = (uint16_t)form;
    }
    return 0;
}

/* One DWARF 5 directory or file entry: its path, and (dir not NULL) its
 * directory index. Fields of other content types are skipped; a form not
 * handled here fails. As in libdw, the last path or index field counts. */
static int read_entry(struct rd *r, const struct format *f, const struct header *h,
                      const struct cg_line_sections *sec, const char **path, uint64_t *dir)
{
    bool have_dir = false;
    *path = NULL;
    for (unsigned m = 0; m < f->n; m++) {
        const char *str = NULL;
        uint64_t v = 0;
        bool num = false;
        switch (f->form[m]) {
        case DW_FORM_string:
            if (!(str = rd_str(r)))
                return -1;
            break;
        case DW_FORM_line_strp:
        case DW_FORM_strp:
            if (rd_uint(r, h->offset_size, &v) != 0)
                return -1;
            if (f->content[m] == DW_LNCT_path &&
                !(str = f->form[m] == DW_FORM_strp ? section_str(sec->str, sec->str_size, v)
                                                     : section_str(sec->line_str, sec->line_str_size, v)))
                return -1;
            break;
        case DW_FORM_udata:
            if (rd_uleb(r, &v) != 0)
                return -1;
            num = true;
            break;
        case DW_FORM_data1:
        case DW_FORM_data2:
        case DW_FORM_data4:
        case DW_FORM_data8: {
            unsigned size = f->form[m] == DW_FORM_data1 ? 1 : f->form[m] == DW_FORM_data2 ? 2 : f->form[m] == DW_FORM_data4 ? 4 : 8;
            if (rd_uint(r, size, &v) != 0)
                return -1;
            num = true;
            break;
        }
        case DW_FORM_data16:
            if (rd_skip(r, 16) != 0)
                return -1;
            break;
        case DW_FORM_block:
            if (rd_uleb(r, &v) != 0 || rd_skip(r, v) != 0)
                return -1;
            break;
        case DW_FORM_block1:
        case DW_FORM_block2:
        case DW_FORM_block4: {
            unsigned size = f->form[m] == DW_FORM_block1 ? 1 : f->form[m] == DW_FORM_block2 ? 2 : 4;
            if (rd_uint(r, size, &v) != 0 || rd_skip(r, v) != 0)
                return -1;
            break;
        }
        default: /* DW_FORM_strx* and the like: they need the unit's string offsets */
            return -1;
        }
        if (f->content[m] == DW_LNCT_path) {
            if (!str)
                return -1;
            *path = str;
        } else if (dir && f->content[m] == DW_LNCT_directory_index) {
            if (!num)
                return -1;
            *dir = v;
            have_dir = true;
        }
    }
    return *path && (!dir || have_dir) ? 0 : -1;
}

/* DWARF 5: an entry format and a count, for the directories then the files;
 * directory 0 and file 0 are in the tables. */
static int read_tables_v5(const struct header *h, const struct cg_line_sections *sec, struct dirs *d,
                          struct names *nm)
{
    struct rd r = h->tables;
    struct format f;
    uint64_t count;
    if (read_format(&r, &f) != 0 || rd_uleb(&r, &count) != 0)
        return -1;
    /* an entry takes a byte a field at least: no huge count from a few bytes */
    if (f.n ? count > (uint64_t)(r.end - r.p) / f.n : count != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        const char *dir;
        if (read_entry(&r, &f, h, sec, &dir, NULL) != 0 || dirs_add(d, dir) != 0)
            return -1;
    }
    if (read_format(&r, &f) != 0 || rd_uleb(&r, &count) != 0)
        return -1;
    if (f.n ? count > (uint64_t)(r.end - r.p) / f.n : count != 0)
        return -1;
    if (count == 0 && names_add(nm, NULL, NULL) != 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        const char *name;
        uint64_t dir;
        if (read_entry(&r, &f, h, sec, &name, &dir) != 0 || dir >= d->n || names_add(nm, d->v[dir], name) != 0)
            return -1;
    }
    return r.p == r.end ? 0 : -1;
}

/* ---- the line program ------------------------------------------------------ */

struct state {
    uint64_t addr, file, column, isa;
    int64_t line;
    unsigned op_index;
};

struct rows {
    struct cg_line_row *v;
    size_t n, cap;
};

static int rows_grow(struct rows *rs)
{
    return CG_GROW(rs->v, rs->cap, rs->cap + 1, 64);
}

static inline int push(struct rows *rs, const struct state *st, unsigned end)
{
    /* libdw rejects the whole table when a row's value does not fit its
     * Dwarf_Line (an int line, a 16-bit column, an 8-bit isa); the file index
     * is kept to 31 bits when it is set. */
    if (cg_unlikely(st->line < INT_MIN || st->line > INT_MAX || st->column > USHRT_MAX || st->isa > UCHAR_MAX ||
                    (uintptr_t)st->addr != st->addr))
        return -1;
    if (cg_unlikely(rs->n == rs->cap) && rows_grow(rs) != 0)
        return -1;
    rs->v[rs->n++] = (struct cg_line_row){ (uintptr_t)st->addr, (int)st->line, (unsigned)st->file, end };
    return 0;
}

/* libdw's advance, in its unsigned int arithmetic (which wraps at 32 bits
 * before the address is added). */
static inline void advance(struct state *st, const struct header *h, uint32_t adv)
{
    if (h->max_ops == 1) {
        st->addr += (uint32_t)(h->min_inst * adv);
    } else { /* VLIW: op_index counts operations inside an instruction */
        st->addr += (uint32_t)(h->min_inst * ((st->op_index + adv) / h->max_ops));
        st->op_index = (st->op_index + adv) % h->max_ops;
    }
}

static void reset(struct state *st)
{
    *st = (struct state){ .file = 1, .line = 1 };
}

/* libdw keeps a line in 64 bits while it runs, an advance in an int. */
#define LINE_LIMIT ((int64_t)1 << 40)

static int run_program(const struct header *h, struct dirs *d, struct names *nm, struct rows *rs)
{
    const unsigned char *p = h->program.p, *end = h->program.end;
    struct state st;
    reset(&st);
    uint64_t v;
    int64_t sv;
    while (p < end) {
        unsigned op = *p++;
        if (cg_likely(op >= h->opcode_base)) {
            st.line += h->special_line[op];
            advance(&st, h, h->special_adv[op]);
            if (push(rs, &st, 0) != 0)
                return -1;
            continue;
        }
        struct rd r = { p, end };
        switch (op) {
        case 0: { /* extended: a length, then the sub-opcode and its operands */
            /* libdw reads the length as one byte where DWARF has a ULEB128:
             * a longer one it would misread */
            if (end - p < 2 || *p >= 0x80 || *p == 0 || (size_t)(end - p - 1) < *p)
                return -1;
            unsigned len = *p;
            const unsigned char *next = p + 1 + len;
            r = (struct rd){ p + 2, next };
            switch (p[1]) {
            case DW_LNE_end_sequence:
                if (len != 1 || push(rs, &st, 1) != 0)
                    return -1;
                reset(&st);
                break;
            case DW_LNE_set_address:
                /* libdw reads the unit's address size whatever the length */
                if (len != 1 + h->address_size || rd_uint(&r, h->address_size, &st.addr) != 0)
                    return -1;
                st.op_index = 0;
                break;
            case DW_LNE_define_file: {
                const char *name = rd_str(&r);
                uint64_t dir, skip;
                if (!name || rd_uleb(&r, &dir) != 0 || rd_uleb(&r, &skip) != 0 || rd_uleb(&r, &skip) != 0 ||
                    r.p != next || dir >= d->n || names_add(nm, d->v[dir], name) != 0)
                    return -1;
                break;
            }
            case DW_LNE_set_discriminator:
                if (rd_uleb(&r, &v) != 0 || r.p != next)
                    return -1;
                break;
            default: /* unknown: skipped by its length, as libdw does */
                break;
            }
            p = next;
            continue;
        }
        case DW_LNS_copy:
            if (push(rs, &st, 0) != 0)
                return -1;
            break;
        case DW_LNS_advance_pc:
            if (rd_uleb(&r, &v) != 0 || v > UINT32_MAX)
                return -1;
            advance(&st, h, (uint32_t)v);
            break;
        case DW_LNS_advance_line:
            if (rd_sleb(&r, &sv) != 0 || sv < INT_MIN || sv > INT_MAX)
                return -1;
            st.line += sv;
            if (st.line < -LINE_LIMIT || st.line > LINE_LIMIT)
                return -1;
            break;
        case DW_LNS_set_file:
            if (rd_uleb(&r, &v) != 0 || v > 0x7fffffff)
                return -1;
            st.file = v;
            break;
        case DW_LNS_set_column:
            if (rd_uleb(&r, &v) != 0 || v > UINT_MAX)
                return -1;
            st.column = v;
            break;
        case DW_LNS_negate_stmt:
        case DW_LNS_set_basic_block:
        case DW_LNS_set_prologue_end:
        case DW_LNS_set_epilogue_begin:
            break;
        case DW_LNS_const_add_pc:
            advance(&st, h, (255 - h->opcode_base) / h->line_range);
            break;
        case DW_LNS_fixed_advance_pc:
            if (rd_uint(&r, 2, &v) != 0)
                return -1;
            st.addr += v;
            st.op_index = 0;
            break;
        case DW_LNS_set_isa:
            if (rd_uleb(&r, &v) != 0 || v > UINT_MAX)
                return -1;
            st.isa = v;
            break;
        default: /* a standard opcode newer than DWARF 5: its operands skipped */
            for (unsigned n = h->std_len[op - 1]; n > 0; n--)
                if (rd_uleb(&r, &v) != 0)
                    return -1;
            break;
        }
        p = r.p;
    }
    return 0;
}

/* Puts the rows in libdw's order: by address; at one address, rows ending a
 * sequence first; otherwise as the program emitted them. Compilers emit
 * sequences in order unless functions are placed apart from their unit
 * (sections of their own, C++'s inline functions): only then is a sort
 * needed. */
static int sort_rows(struct cg_line_row *v, size_t n)
{
    size_t i = 1;
    while (i < n && (v[i - 1].addr < v[i].addr || (v[i - 1].addr == v[i].addr && v[i - 1].end >= v[i].end)))
        i++;
    if (i >= n)
        return 0;
    /* the ends first, each part in program order; then a stable sort by
     * address gives libdw's order */
    struct cg_line_row *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -1;
    size_t k = 0;
    for (i = 0; i < n; i++)
        if (v[i].end)
            tmp[k++] = v[i];
    for (i = 0; i < n; i++)
        if (!v[i].end)
            tmp[k++] = v[i];
    memcpy(v, tmp, n * sizeof *v);
    free(tmp);
    return cg_sort_keyed(v, n, sizeof *v);
}

int cg_lines_parse(const struct cg_line_sections *sec, uint64_t offset, unsigned address_size, const char *comp_dir,
                   struct cg_line_table *t)
{
    memset(t, 0, sizeof *t);
    if (address_size != 4 && address_size != 8)
        return -1;
    struct header h;
    struct dirs d = { 0 };
    struct names nm = { 0 };
    struct rows rs = { 0 };
    int rc = -1;
    if (read_header(sec, offset, address_size, &h) != 0 ||
        (h.version >= 5 ? read_tables_v5(&h, sec, &d, &nm) : read_tables_v4(&h, comp_dir, &d, &nm)) != 0)
        goto out;
    /* about a row every three bytes of program, in what compilers emit */
    rs.cap = (size_t)(h.program.end - h.program.p) / 3 + 16;
    if (!(rs.v = malloc(rs.cap * sizeof *rs.v)) || run_program(&h, &d, &nm, &rs) != 0 || sort_rows(rs.v, rs.n) != 0)
        goto out;
    /* libdw marks its last row as an end, for a program that did not */
    if (rs.n)
        rs.v[rs.n - 1].end = 1;
    if (!(t->files = malloc(nm.n * sizeof *t->files)))
        goto out;
    for (size_t i = 0; i < nm.n; i++)
        t->files[i] = nm.off[i] == NULL_FILE ? null_file : nm.buf + nm.off[i];
    t->nfiles = nm.n;
    t->names = nm.buf;
    nm.buf = NULL;
    /* the rows live as long as the session: no room kept for more */
    t->rows = rs.v;
    t->nrows = rs.n;
    if (rs.n && rs.n < rs.cap) {
        struct cg_line_row *fit = realloc(rs.v, rs.n * sizeof *rs.v);
        if (fit)
            t->rows = fit;
    }
    rs.v = NULL;
    rc = 0;
out:
    free(rs.v);
    free(d.v);
    free(nm.off);
    free(nm.buf);
    if (rc != 0)
        cg_lines_free(t);
    return rc;
}

/* ---- from a unit's DIE ----------------------------------------------------- */

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

/* The sections of elf, as libdw has them: it decompressed compressed ones
 * in place when it opened the file (one still compressed is left out), and
 * reads the first section of a name. Relocatable files are left to libdw,
 * which relocates their sections. */
static int sections_of(Elf *elf, struct cg_line_sections *sec)
{
    memset(sec, 0, sizeof *sec);
    GElf_Ehdr eh;
    size_t shstrndx;
    if (!elf || !CG_DW(gelf_getehdr)(elf, &eh) || eh.e_ident[EI_DATA] != HOST_ELFDATA || eh.e_type == ET_REL ||
        CG_DW(elf_getshdrstrndx)(elf, &shstrndx) != 0)
        return -1;
    struct {
        const char *name;
        const unsigned char **data;
        size_t *size;
        bool seen;
    } want[] = {
        { ".debug_line", &sec->line, &sec->line_size, false },
        { ".debug_line_str", &sec->line_str, &sec->line_str_size, false },
        { ".debug_str", &sec->str, &sec->str_size, false },
    };
    for (Elf_Scn *scn = NULL; (scn = CG_DW(elf_nextscn)(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *name;
        if (!CG_DW(gelf_getshdr)(scn, &sh) || !(name = CG_DW(elf_strptr)(elf, shstrndx, sh.sh_name)))
            continue;
        for (size_t i = 0; i < CG_ARRAY_SIZE(want); i++) {
            if (want[i].seen || strcmp(name, want[i].name) != 0)
                continue;
            want[i].seen = true;
            Elf_Data *data;
            if (sh.sh_type != SHT_NOBITS && !(sh.sh_flags & SHF_COMPRESSED) && (data = CG_DW(elf_getdata)(scn, NULL)) &&
                data->d_buf) {
                *want[i].data = data->d_buf;
                *want[i].size = data->d_size;
            }
        }
    }
    return 0;
}

int cg_lines_decode(Dwarf_Die *cudie, struct cg_line_table *t)
{
    memset(t, 0, sizeof *t);
    uint8_t unit_type, address_size;
    if (!cudie || !cg_elfutils() ||
        CG_DW(dwarf_cu_info)(cudie->cu, NULL, &unit_type, NULL, NULL, NULL, &address_size, NULL) != 0)
        return -1;
    /* a split unit's lines are its skeleton's, found by libdw */
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial && unit_type != DW_UT_skeleton)
        return -1;
    Dwarf_Attribute attr;
    Dwarf_Word offset;
    if (CG_DW(dwarf_formudata)(CG_DW(dwarf_attr)(cudie, DW_AT_stmt_list, &attr), &offset) != 0)
        return -1;
    /* what libdw joins with directory 0 before DWARF 5 */
    const char *comp_dir = CG_DW(dwarf_formstring)(CG_DW(dwarf_attr)(cudie, DW_AT_comp_dir, &attr));
    struct cg_line_sections sec;
    if (sections_of(CG_DW(dwarf_getelf)(CG_DW(dwarf_cu_getdwarf)(cudie->cu)), &sec) != 0)
        return -1;
    return cg_lines_parse(&sec, offset, address_size, comp_dir, t);
}

void cg_lines_free(struct cg_line_table *t)
{
    free(t->rows);
    free(t->files);
    free(t->names);
    memset(t, 0, sizeof *t);
}

const struct cg_line_row *cg_lines_find(const struct cg_line_table *t, uintptr_t addr, size_t *hint)
{
    const struct cg_line_row *v = t->rows;
    size_t n = t->nrows;
    if (n == 0)
        return NULL;
    /* The last row at or below addr is in [lo, hi): from the hint forward,
     * in steps that double (a dump's addresses ascend), else anywhere. */
    size_t lo = 0, hi = n;
    if (*hint < n && v[*hint].addr <= addr) {
        lo = *hint;
        for (size_t step = 1; lo + step < n; step *= 2) {
            if (v[lo + step].addr > addr) {
                hi = lo + step;
                break;
            }
            lo += step;
        }
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    *hint = lo;
    return v[lo].addr <= addr && !v[lo].end ? &v[lo] : NULL;
}
