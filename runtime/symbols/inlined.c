/* Inlined calls' own positions (cg_syms_inlined_call, symbols.h), in a
 * symbol session (symsession.h). An inlined call has no call instruction:
 * its arc is placed where its enter hook is called in the host's code,
 * which the line table gives a line of the inlined function (its first).
 * The call's own position is in the DW_TAG_inlined_subroutine entry of
 * that copy: DW_AT_call_file (an index into its unit's file table) and
 * DW_AT_call_line. Read at dump time only, once per place (the hooks never
 * see any of it). */
#include "symbols.h"
#include "names.h"
#include "srclines.h"
#include "symsession.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elfutils.h"

struct inlined_call {
    uintptr_t callee;
    const char *file; /* NULL: the debug information does not say */
    unsigned line;
    size_t nlined; /* the objects with lines wanted when it was looked up */
};

/* A function as an inlined entry's origin names it: the abstract instance
 * its out-of-line copy points to (DIE identity, within one Dwarf), and its
 * symbol's name (for an inlined copy from another unit: a header's static
 * inline function, its abstract instance in each unit). */
struct callee_id {
    const void *die; /* the abstract DIE's address in .debug_info; NULL: unknown */
    const char *name;
};

/* The abstract instance of a function's DIE (itself if it is one): where
 * DW_AT_abstract_origin leads. */
static void abstract_of(Dwarf_Die *die, Dwarf_Die *out)
{
    *out = *die;
    Dwarf_Attribute attr;
    Dwarf_Die next;
    for (int i = 0; i < 8 && CG_DW(dwarf_attr)(out, DW_AT_abstract_origin, &attr) &&
                    CG_DW(dwarf_formref_die)(&attr, &next);
         i++)
        *out = next;
}

/* The name an origin DIE gives its function: its linkage name, else its
 * name (a C function's symbol), through its specification if needed. */
static const char *die_symbol_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *n = CG_DW(dwarf_formstring)(CG_DW(dwarf_attr_integrate)(die, DW_AT_linkage_name, &attr));
    if (!n)
        n = CG_DW(dwarf_formstring)(CG_DW(dwarf_attr_integrate)(die, DW_AT_MIPS_linkage_name, &attr));
    return n ? n : CG_DW(dwarf_diename)(die);
}

/* Two symbol names of one function: the same, or mangled names that differ
 * only in a constructor's or destructor's variant (C1, C2 and gcc's C4,
 * which an inlined copy's abstract origin may name; D1, D2, D4). */
static int same_symbol(const char *a, const char *b)
{
    for (size_t i = 0;; i++) {
        if (a[i] == b[i]) {
            if (!a[i])
                return 1;
            continue;
        }
        if (i == 0 || !a[i] || !b[i] || !(a[i - 1] == 'C' || a[i - 1] == 'D') || strncmp(a, "_Z", 2) != 0 ||
            !strchr("124", a[i]) || !strchr("124", b[i]))
            return 0;
    }
}

enum { MAX_SCOPES = 64 };

/* The DIEs whose code holds pc under parent, outermost first, appended to
 * v from v[n] (at most MAX_SCOPES kept); returns the new count. Not
 * libdw's dwarf_getscopes(): it does not look into a namespace, where
 * clang puts the definitions of C++ functions (std::char_traits<char>::
 * length inlined into std::operator+ was in no scope it found). */
static int scopes_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *v, int n, int depth)
{
    Dwarf_Die child;
    if (depth > 256 || CG_DW(dwarf_child)(parent, &child) != 0)
        return n;
    do {
        switch (CG_DW(dwarf_tag)(&child)) {
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type: {
            /* no code of their own: the functions defined in them */
            int m = scopes_at(&child, pc, v, n, depth + 1);
            if (m > n)
                return m;
            break;
        }
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_entry_point:
            if (CG_DW(dwarf_haspc)(&child, pc) == 1) {
                if (n < MAX_SCOPES)
                    v[n] = child;
                return scopes_at(&child, pc, v, n + 1, depth + 1);
            }
            break;
        default:
            break;
        }
    } while (CG_DW(dwarf_siblingof)(&child, &child) == 0);
    return n;
}

/* The scopes holding pc in unit cu, innermost first, in *scopes (malloc'd:
 * the caller frees it); their number. */
static int scopes_of(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes)
{
    *scopes = malloc(MAX_SCOPES * sizeof **scopes);
    if (!*scopes)
        return 0;
    int n = scopes_at(cu, pc, *scopes, 0, 0);
    if (n > MAX_SCOPES)
        n = MAX_SCOPES; /* the outermost ones */
    for (int i = 0; i < n / 2; i++) {
        Dwarf_Die t = (*scopes)[i];
        (*scopes)[i] = (*scopes)[n - 1 - i];
        (*scopes)[n - 1 - i] = t;
    }
    return n;
}

static const struct callee_id *callee_id_of(struct cg_syms *s, uintptr_t callee)
{
    struct cg_ptr_entry *e = cg_sess_ptr_slot(&s->callees, (const void *)callee, 64);
    if (!e)
        return NULL;
    if (e->key)
        return e->value;
    struct callee_id *id = calloc(1, sizeof *id);
    if (!id)
        return NULL;
    Dwfl_Module *mod;
    Dwarf_Addr bias;
    Dwarf_Die *cu = cg_sess_unit_at(s, callee, &mod, &bias);
    uintptr_t start = 0;
    const char *name = mod && !cg_sess_lost(s) ? cg_sess_function_at(s, mod, callee, &start) : NULL;
    if (cg_sess_lost(s)) {
        free(id);
        return NULL;
    }
    if (name && start == callee)
        id->name = name; /* the symbol table's: lives with the session */
    Dwarf_Die *scopes = NULL;
    int n = cu ? scopes_of(cu, callee - bias, &scopes) : 0;
    if (cg_sess_lost(s))
        n = 0;
    for (int i = 0; i < n; i++) {
        if (CG_DW(dwarf_tag)(&scopes[i]) != DW_TAG_subprogram)
            continue;
        Dwarf_Die origin;
        abstract_of(&scopes[i], &origin);
        id->die = origin.addr;
        break;
    }
    free(scopes);
    e->key = (const void *)callee;
    e->value = id;
    s->callees.n++;
    return id;
}

/* Whether an inlined entry's origin is callee's function. */
static int is_callee(Dwarf_Die *inlined, const struct callee_id *id)
{
    Dwarf_Die origin;
    abstract_of(inlined, &origin);
    if (id->die && origin.addr == id->die)
        return 1;
    const char *n = id->name ? die_symbol_name(&origin) : NULL;
    return n && same_symbol(n, id->name);
}

static void find_inlined_call(struct cg_syms *s, uintptr_t addr, struct inlined_call *out)
{
    out->nlined = s->nlined;
    Dwfl_Module *mod;
    Dwarf_Addr bias;
    Dwarf_Die *cu = cg_sess_unit_at(s, addr, &mod, &bias);
    const struct callee_id *id = cu && !cg_sess_lost(s) ? callee_id_of(s, out->callee) : NULL;
    if (!id || (!id->die && !id->name) || cg_sess_lost(s))
        return;
    Dwarf_Die *scopes = NULL;
    int n = scopes_of(cu, addr - bias, &scopes);
    if (cg_sess_lost(s))
        n = 0;
    /* innermost first: for a function inlined into itself (recursion),
     * the copy whose code holds the hook call */
    for (int i = 0; i < n; i++) {
        if (CG_DW(dwarf_tag)(&scopes[i]) != DW_TAG_inlined_subroutine || !is_callee(&scopes[i], id))
            continue;
        Dwarf_Attribute attr;
        Dwarf_Word line = 0, idx = 0;
        Dwarf_Die unit;
        Dwarf_Files *files;
        size_t nfiles;
        const char *raw;
        if (CG_DW(dwarf_formudata)(CG_DW(dwarf_attr)(&scopes[i], DW_AT_call_line, &attr), &line) != 0 || line == 0 ||
            line > UINT32_MAX ||
            CG_DW(dwarf_formudata)(CG_DW(dwarf_attr)(&scopes[i], DW_AT_call_file, &attr), &idx) != 0 ||
            !CG_DW(dwarf_diecu)(&scopes[i], &unit, NULL, NULL) ||
            CG_DW(dwarf_getsrcfiles)(&unit, &files, &nfiles) != 0 ||
            idx >= nfiles || !(raw = CG_DW(dwarf_filesrc)(files, idx, NULL, NULL)) || !*raw || cg_sess_lost(s))
            break;
        const char *path = cg_sess_absolute_path(s, &unit, raw);
        if (cg_sess_lost(s))
            break;
        out->file = path;
        out->line = (unsigned)line;
        break;
    }
    free(scopes);
}

/* find_inlined_call() under a jump point for libdw's out-of-memory handler
 * (see resolve_guarded), errno kept. */
static void find_inlined_call_guarded(struct cg_syms *s, uintptr_t addr, struct inlined_call *out)
{
    int saved = errno;
    cg_cpu_jump_buf here;
    cg_cpu_jump_buf *volatile outer = cg_sess_dw_jump;
    if (cg_cpu_jump_set(here) == 0) {
        cg_sess_dw_jump = &here;
        errno = 0;
        find_inlined_call(s, addr, out);
    } else {
        cg_sess_mark_lost(s);
    }
    if (s->nomem) {
        out->file = NULL;
        out->line = 0;
    }
    cg_sess_dw_jump = outer;
    errno = saved;
}

int cg_syms_inlined_call(struct cg_syms *s, uintptr_t addr, uintptr_t callee, const char **file, unsigned *line)
{
    if (!s || !addr || !callee || s->nomem)
        return 0;
    struct cg_ptr_entry *e = cg_sess_ptr_slot(&s->inlined, (const void *)addr, 64);
    if (!e)
        return 0;
    struct inlined_call *c = e->value;
    if (!e->key) {
        if (!(c = calloc(1, sizeof *c)))
            return 0;
        c->callee = callee;
        find_inlined_call_guarded(s, addr, c);
        e->key = (const void *)addr;
        e->value = c;
        s->inlined.n++;
    } else if (c->callee != callee || (!c->file && c->nlined != s->nlined)) {
        /* one hook call is one function's: another callee there is some
         * other code loaded at the address since; or not found before its
         * object was known to hold instrumented code */
        c->callee = callee;
        c->file = NULL;
        c->line = 0;
        find_inlined_call_guarded(s, addr, c);
    }
    if (!c->file)
        return 0;
    *file = c->file;
    *line = c->line;
    return 1;
}
