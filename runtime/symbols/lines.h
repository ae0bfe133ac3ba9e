/* The line table of one compilation unit, decoded from .debug_line by cgprof
 * itself, for the dump's source lines (srclines.c).
 *
 * libdw's dwarf_getsrclines() made one malloc'd node per row and then
 * qsorted all of them, per unit: a third of a big dump's instructions, for a
 * table of which a dump wants one thing, the row of each of its (ascending)
 * addresses. This decoder keeps the rows in one array, in the order libdw
 * sorts them, sorting only when the program did not emit them in that order,
 * and names files as dwarf_linesrc() does: the rows and names it gives are
 * libdw's. What it does not handle (a form or section layout it does not
 * know, data libdw would reject or read differently) makes it fail, and the
 * caller asks libdw. */
#ifndef CG_LINES_H
#define CG_LINES_H

#include <elfutils/libdw.h>
#include <stddef.h>
#include <stdint.h>

struct cg_line_row {
    uintptr_t addr;     /* the object's address (libdwfl's bias not added) */
    int line;           /* an int, as libdw keeps it */
    unsigned file : 31; /* index into the table's files */
    unsigned end : 1;   /* ends a sequence: the first address after its code */
};

struct cg_line_table {
    struct cg_line_row *rows; /* by address; at one address, ends of sequences first */
    size_t nrows;
    const char **files; /* names as dwarf_linesrc() gives them */
    size_t nfiles;
    char *names; /* their storage */
};

/* The bytes of the sections a line table reads (a section that is missing:
 * NULL, size 0). */
struct cg_line_sections {
    const unsigned char *line, *line_str, *str;
    size_t line_size, line_str_size, str_size;
};

/* Decodes the line program at `offset` in sec->line, for a unit of that
 * address size (4 or 8) and compilation directory (NULL if it has none).
 * Returns 0 with *t filled (cg_lines_free), or -1 (nothing to free): the
 * data is one this decoder leaves to libdw, or memory ran out. Reads nothing
 * outside the sections given. */
int cg_lines_parse(const struct cg_line_sections *sec, uint64_t offset, unsigned address_size, const char *comp_dir,
                   struct cg_line_table *t);

/* The same for a compilation unit's DIE: its DW_AT_stmt_list, in the
 * sections of the ELF file libdw read it from. */
int cg_lines_decode(Dwarf_Die *cudie, struct cg_line_table *t);

void cg_lines_free(struct cg_line_table *t);

/* The row of addr (an object address), as dwarf_getsrc_die() chooses it: the
 * last row at or below addr, unless it ends a sequence; NULL if none.
 * *hint: where to start (any value; a row index left there by the previous
 * lookup makes ascending lookups cheap), updated. */
const struct cg_line_row *cg_lines_find(const struct cg_line_table *t, uintptr_t addr, size_t *hint);

/* The file name of a row: NULL where dwarf_linesrc() gives NULL (an index
 * past the table). */
static inline const char *cg_lines_file(const struct cg_line_table *t, const struct cg_line_row *r)
{
    return r->file < t->nfiles ? t->files[r->file] : NULL;
}

#endif
