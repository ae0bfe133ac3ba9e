/* A part's model (data layer): the function blocks a Callgrind part is
 * made of, built from a snapshot and the symbols of its addresses, in the
 * order writer.c writes them, each block's lines sorted and the lines of
 * one place merged. What the file says, not how it says it: the names'
 * and positions' compression, the header and the comment lines are the
 * writer's. Pure: no I/O, no global state. */
#ifndef CG_PARTMODEL_H
#define CG_PARTMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "addrset.h"
#include "snapshot.h"
#include "symbols.h"

/* Symbols of every address of a snapshot (callers, callees, self-cost
 * addresses, call instructions), sorted by addr, each address once. The
 * symbols are the symbol session's own (not copies: a dump names 100,000s
 * of addresses). */
struct cg_symtab_entry {
    uintptr_t addr;
    const struct cg_symbol *sym;
};

/* The own position of an inlined call (an arc with `inlined` set), whose
 * call_pc is its enter hook's place inside the inlined copy: the line table
 * gives that place a line of the inlined function, the debug information's
 * inlined entry the line of the call (cg_syms_inlined_call). */
struct cg_symtab_call {
    uintptr_t pc, callee;
    const char *file; /* the session's */
    unsigned line;
};

struct cg_symtab {
    const struct cg_symtab_entry *v;
    size_t n;
    /* the inlined calls whose position the debug information gives, sorted
     * by (pc, callee); none without a symbol session */
    const struct cg_symtab_call *calls;
    size_t ncalls;
};

/* One cost line of a function block: self cost at an instruction, or a call
 * made from it. */
struct cg_pm_line {
    uintptr_t addr; /* object-relative */
    const char *file;
    uint64_t count, cost;
    unsigned lineno;
    uint32_t callee;         /* record index, for calls */
    uint32_t rec;            /* the function block it belongs to */
    unsigned char is_call;
    unsigned char synthetic; /* a call into uninstrumented code, inferred */
    unsigned char visits;    /* a call no hook saw: inferred, or walked by the sampler (count: visits) */
    unsigned char inlined;   /* a call the compiler inlined (its hooks kept: CGPROF_INLINED=count) */
};

/* A function as written: one fn= block. A function is its object and its
 * start in that object, not its run-time address: an object unloaded and
 * loaded again elsewhere holds the same functions. */
struct cg_pm_rec {
    const char *object, *file, *name;
    uintptr_t entry;     /* object-relative start */
    unsigned entry_line;
    char anon[24];       /* the name of a function without symbol (name NULL):
                            its address; read through cg_pm_name(), since the
                            records move when their array grows */
    uint32_t *lines;     /* its slice of the model's line order: indexes into its lines */
    size_t n;
    /* the writer's, as it writes the block */
    unsigned id;         /* name-compression id, 0 until first written */
    unsigned char hooked, visited; /* called by a call the hooks saw / inferred (write_visits) */
    size_t inlined_into;           /* write_inlined: the last caller written with it, + 1 */
};

struct cg_partmodel {
    const struct cg_symtab *syms;
    /* syms by address (open addressing: entry index + 1), and the record
     * of each entry as a function entered (index + 1, 0 until known): a dump
     * looks each address up several times, 100,000s of them. */
    uint32_t *sym_slots;
    size_t sym_mask;
    uint32_t *entry_rec; /* record index + 1, 0 until known */
    /* the hash of the object name last hashed: names are shared pointers,
     * one per object */
    const char *hashed_object;
    size_t object_hash;
    struct cg_pm_rec *recs;
    size_t nrecs, cap;
    uint32_t *index; /* open addressing on key: record index + 1 */
    size_t index_cap;
    /* the lines of all records, in the order made, and their indexes grouped
     * by record (one array: 50,000 functions would be 50,000 small arrays;
     * indexes, not copies: fewer fresh pages, each a costly fault) */
    struct cg_pm_line *lines;
    size_t nlines, lines_cap;
    uint32_t *grouped;
    size_t *order;  /* the records in the order their blocks are written */
    uint32_t *rank; /* each record's place in that order */
    uint64_t total; /* the self costs' sum: the part's summary */
    const struct cg_addrset *const *left_out; /* cg_part_info's */
    int (*part_code)(uintptr_t fn_start);     /* cg_part_info's */
};

/* Two names: the same pointer, or the same text. */
static inline int cg_pm_same(const char *a, const char *b)
{
    return a == b || strcmp(a, b) == 0;
}

static inline const char *cg_pm_name(const struct cg_pm_rec *r)
{
    return r->name ? r->name : r->anon;
}

/* Builds the model of snap into m, its addresses named by syms; left_out
 * and part_code as cg_part_info's (writer.h). Returns 0, or -1 if out of
 * memory; either way m is freed with cg_partmodel_free. */
int cg_partmodel_make(struct cg_partmodel *m, const struct cg_snapshot *snap, const struct cg_symtab *syms,
                      const struct cg_addrset *const *left_out, int (*part_code)(uintptr_t fn_start));

/* The record of the function entered at run-time address fn (a hook's
 * argument), made if new; SIZE_MAX if out of memory. */
size_t cg_partmodel_rec_of_entry(struct cg_partmodel *m, uintptr_t fn);

void cg_partmodel_free(struct cg_partmodel *m);

#endif
