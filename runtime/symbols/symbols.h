/* Address -> object, function, source file and line, at dump time only:
 * the symbols' interface (data layer), which the files of symbols/ define:
 * symsession.c (a session opened and closed, objects unloaded, memory
 * running out inside libdw), srclines.c (the objects whose lines are
 * wanted), lookup.c (the lookups), inlined.c (inlined calls' own
 * positions); names.c names the addresses.
 *
 * elfutils' libdwfl does most of it: it maps the process's objects from
 * /proc/self/maps, reads .symtab (static functions included) from each object
 * or from its separate debug file (found by build-id under /usr/lib/debug),
 * and finds the compilation unit of an address. The units' line tables are
 * decoded by lines.c (by libdw where lines.c leaves one to it). Each address
 * is resolved once per session and cached. */
#ifndef CG_SYMBOLS_H
#define CG_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "gone.h"

/* What the writer needs to know of one run-time address. Strings belong to
 * the session (or are static) and live until cg_syms_close(). */
struct cg_symbol {
    const char *object;   /* full path of the ELF object, "???" if unknown */
    uintptr_t obj_addr;   /* address as objdump shows it for that object */
    const char *function; /* containing function, demangled; NULL if unknown */
    uintptr_t fn_start;   /* run-time start of that function; 0 if unknown */
    uintptr_t fn_obj_addr;/* its object-relative start */
    const char *fn_file;  /* source file of the function's start, "???" if unknown */
    const char *file;     /* source file of this address, "???" if unknown */
    unsigned fn_line;     /* the line of the function's start, 0 if unknown */
    unsigned line;        /* the line of this address, 0 if unknown */
};                        /* (64 bytes: a dump keeps one per address) */

struct cg_syms;

/* An object about to be unloaded (dlclose): where it is. Returns 0 and
 * fills path (malloc'd), bias and [lo, hi), or -1 if it is not found. */
int cg_syms_object_of(const void *dlopen_handle, char **path, uintptr_t *bias, uintptr_t *lo, uintptr_t *hi);
/* Opens a session over the objects mapped now, and the objects of `gone`
 * (NULL: none) for addresses of objects unloaded since (gone.h); NULL on
 * failure (the dump then writes raw addresses). */
struct cg_syms *cg_syms_open(struct cg_gone *gone);
void cg_syms_close(struct cg_syms *s);
/* Why session s (NULL: none could be opened) names no source lines and
 * only exported functions (libdw could not be loaded, or read no object;
 * the addresses are then named from the loader's tables), or NULL when
 * it has libdw's names and lines. */
const char *cg_syms_without_libdw(const struct cg_syms *s);
/* An assertion failed in this thread, in the function that called
 * __assert_fail from `caller`: if that is libdw's or libelf's code in a
 * symbol lookup, the lookup is given up as when memory runs out in there
 * (libdw asserts where an allocation failed: its hash tables' resize), and
 * this does not return; else it returns (the assertion is someone else's,
 * and ends the process as it would). */
void cg_syms_assert_failed(const void *caller);
/* Whether libdwfl holds descriptors for the session (a separate debug
 * file, an unloaded object's file): the program would see them, so the
 * session is closed when the dump that used it ends. */
int cg_syms_holds_fds(const struct cg_syms *s);
/* Whether memory ran out inside libdw during the session: it makes no more
 * calls into libdw, and is not to be used for another dump. */
int cg_syms_lost(const struct cg_syms *s);

/* Resolves addrs[0..n) (ascending, each once; cached across calls) into
 * out[0..n). Unknown parts are marked as such. The results stay valid until
 * cg_syms_close(). Returns 0, or -1 if out of memory. */
int cg_syms_lookup_sorted(struct cg_syms *s, const uintptr_t *addrs, size_t n, const struct cg_symbol **out);

/* Where the call of callee that the compiler inlined into the code at addr
 * (its enter hook's place in the host's code) was made: the call's own file
 * and line, DW_AT_call_file and DW_AT_call_line of the innermost
 * DW_TAG_inlined_subroutine holding addr whose abstract origin is callee's
 * (for nested inlining, the entry of this callee: the call in its caller's
 * code). The line table gives addr a line of the inlined function instead
 * (its first, where its enter hook is called): every call site of one
 * inlined function would be shown at that one line. Returns 1 with *file
 * (the session's) and *line, or 0 when the debug information does not say
 * (no inlined entry of callee holds addr, no DWARF, lines not wanted in that
 * object). Cached per addr for the session. */
int cg_syms_inlined_call(struct cg_syms *s, uintptr_t addr, uintptr_t callee, const char **file, unsigned *line);

/* Says that the object holding addr has instrumented code (addr is a
 * function the hooks saw). Source lines are looked up only in such objects:
 * the others (libc, where a thread's first call or a callback comes from)
 * would cost the loading of their whole DWARF (tens of ms for libc's debug
 * file, compressed) for the line of one call site. */
void cg_syms_want_lines(struct cg_syms *s, uintptr_t addr);

#endif
