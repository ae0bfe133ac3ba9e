#define _GNU_SOURCE
#include "filter.h"
#include "debuginfo.h"
#include "demangle.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fnmatch.h>
#include <gelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfutils.h"
#include "proc.h"
#include "symbols.h"
#include "util.h"
#include "desc.inc"

static struct cg_filter filter;
static int skipping; /* some CGPROF_SKIP* pattern is set */

/* The throttled functions: 8192 distinct ones are far more than a useful
 * exclude list; more are still left out per arc, only not listed. */
enum { THROTTLED_MAX = 8192 };

/* CGPROF_THROTTLE given (not the default): the functions throttled are
 * said on stderr at exit; by default only in the profile, so that a
 * runtime preloaded into every process of a build prints nothing. */
static int throttle_asked;

void cg_filter_init(void)
{
    skipping = cg_opts.skip[0] || cg_opts.skip_object[0] || cg_opts.skip_file[0];
    throttle_asked = cg_option_given(&cg_opts, "CGPROF_THROTTLE") || cg_opts.verbose;
    if (cg_opts.throttle.n) {
        filter.throttled = cg_addrset_new(THROTTLED_MAX);
        if (filter.throttled) {
            filter.throttle_ns = cg_opts.throttle.t;
            filter.throttle_n = cg_opts.throttle.n;
        } else {
            cg_warn("CGPROF_THROTTLE: out of memory; not throttling");
        }
    }
}

void cg_filter_attach(struct cg_costs *c)
{
    if (!skipping && !filter.throttle_n)
        return; /* no filter: new arcs are not even checked */
    c->filter = &filter;
    c->throttle_n = filter.throttle_n;
}

/* ---- patterns ------------------------------------------------------------ */

struct patterns {
    char **v;
    size_t n, cap;
};

static int add_pattern(void *ctx, const char *p, size_t len)
{
    struct patterns *ps = ctx;
    if (CG_GROW(ps->v, ps->cap, ps->n + 1, 8) != 0 || !(ps->v[ps->n] = strndup(p, len)))
        return -1;
    ps->n++;
    return 0;
}

static int matches(const struct patterns *ps, const char *s)
{
    for (size_t i = 0; s && i < ps->n; i++)
        if (fnmatch(ps->v[i], s, 0) == 0)
            return 1;
    return 0;
}

static void free_patterns(struct patterns *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->v[i]);
    free(ps->v);
    memset(ps, 0, sizeof *ps);
}

/* ---- the objects ------------------------------------------------------------ */

struct object {
    char *path;
    uintptr_t base;
};

struct objects {
    struct object *v;
    size_t n, cap;
};

static int add_object(struct objects *o, const char *path, uintptr_t base)
{
    if (CG_GROW(o->v, o->cap, o->n + 1, 32) != 0 || !(o->v[o->n].path = strdup(path)))
        return -1;
    o->v[o->n++].base = base;
    return 0;
}

static int known(const struct objects *o, const char *path, uintptr_t base)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->v[i].base == base && strcmp(o->v[i].path, path) == 0)
            return 1;
    return 0;
}

static struct objects scanned; /* under scan_lock */

struct collect {
    struct objects fresh;
    char exe[4096];
};

static int collect_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct collect *c = data;
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        /* the main program: reported unnamed */
        ssize_t n = readlink("/proc/self/exe", c->exe, sizeof c->exe - 1);
        if (n <= 0)
            return 0;
        c->exe[n] = 0;
        path = c->exe;
    }
    if (path[0] != '/' || known(&scanned, path, info->dlpi_addr))
        return 0; /* the vDSO, or done */
    add_object(&c->fresh, path, info->dlpi_addr);
    return 0;
}

/* Whether the object calls the hooks: code built with -finstrument-functions
 * imports __cyg_profile_func_enter (the runtime and libc define it). Only
 * such objects are read further; the hooks never see the others' functions. */
static int instrumented(Elf *elf)
{
    Elf_Scn *scn = NULL;
    while ((scn = CG_DW(elf_nextscn)(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!CG_DW(gelf_getshdr)(scn, &sh) || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0)
            continue;
        Elf_Data *d = CG_DW(elf_getdata)(scn, NULL);
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 1; d && i < n; i++) {
            GElf_Sym sym;
            if (!CG_DW(gelf_getsym)(d, (int)i, &sym) || sym.st_shndx != SHN_UNDEF)
                continue;
            const char *name = CG_DW(elf_strptr)(elf, sh.sh_link, sym.st_name);
            if (name && strcmp(name, "__cyg_profile_func_enter") == 0)
                return 1;
        }
    }
    return 0;
}

/* ---- symbols and source files ---------------------------------------------- */

static const Dwfl_Callbacks callbacks = {
    .find_elf = cg_syms_find_elf_by_build_id,
    .find_debuginfo = cg_syms_find_debuginfo,
};

/* A module's compilation units by their own address ranges, sorted
 * (debuginfo.h, cg_cu_ranges_find: clang writes no .debug_aranges, through
 * which libdwfl finds a unit). Made when first needed. */
struct unit_ranges {
    struct cg_cu_range *v;
    size_t n, cap;
    Dwarf_Addr bias;
    int made;
};

static Dwarf_Die *unit_at(Dwfl_Module *mod, uintptr_t addr, struct unit_ranges *u, Dwarf_Addr *bias)
{
    if (!u->made) {
        u->made = 1;
        Dwarf_Die *cu = NULL;
        Dwarf_Addr b = 0;
        while ((cu = CG_DW(dwfl_module_nextcu)(mod, cu, &b)) != NULL) {
            u->bias = b;
            Dwarf_Addr base, start, end;
            for (ptrdiff_t off = 0; (off = CG_DW(dwarf_ranges)(cu, off, &base, &start, &end)) > 0;)
                if (start < end && CG_GROW(u->v, u->cap, u->n + 1, 16) == 0)
                    u->v[u->n++] = (struct cg_cu_range){ start + b, end + b, cu };
        }
        cg_cu_ranges_sort(u->v, u->n);
    }
    Dwarf_Die *cu = cg_cu_ranges_find(u->v, u->n, addr);
    if (cu)
        *bias = u->bias;
    return cu;
}

/* The absolute path of the source file of the code at addr (malloc'd), or
 * NULL: libdwfl's answer, else the row of the unit whose ranges hold addr. */
static char *source_file(Dwfl_Module *mod, uintptr_t addr, struct unit_ranges *units)
{
    Dwfl_Line *l = CG_DW(dwfl_module_getsrc)(mod, addr);
    if (l) {
        const char *src = CG_DW(dwfl_lineinfo)(l, NULL, NULL, NULL, NULL, NULL);
        return src && *src ? cg_source_path(CG_DW(dwfl_linecu)(l), src) : NULL;
    }
    Dwarf_Addr bias;
    Dwarf_Die *cu = unit_at(mod, addr, units, &bias);
    Dwarf_Line *row = cu ? CG_DW(dwarf_getsrc_die)(cu, addr - bias) : NULL;
    const char *src = row ? CG_DW(dwarf_linesrc)(row, NULL, NULL) : NULL;
    return src && *src ? cg_source_path(cu, src) : NULL;
}

struct addrs {
    uintptr_t *v;
    size_t n, cap;
};

static void add_addr(struct addrs *a, uintptr_t x)
{
    if (CG_GROW(a->v, a->cap, a->n + 1, 256) == 0)
        a->v[a->n++] = x;
}

struct scan {
    struct patterns fn, ob, fl;
    struct addrs found;
};

/* Adds the functions of mod that the patterns name. */
static void scan_module(struct scan *sc, Dwfl_Module *mod, const char *path)
{
    Dwarf_Addr bias;
    Elf *elf = CG_DW(dwfl_module_getelf)(mod, &bias);
    if (!elf || !instrumented(elf))
        return;
    int whole = matches(&sc->ob, path);
    if (!whole && sc->fn.n == 0 && sc->fl.n == 0)
        return;
    struct unit_ranges units = { 0 };
    int count = CG_DW(dwfl_module_getsymtab)(mod);
    for (int i = 1; i < count; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *name = cg_module_function(mod, i, &sym, &addr);
        if (!name || !addr)
            continue;
        int hit = whole || matches(&sc->fn, name);
        if (!hit && sc->fn.n && strncmp(name, "_Z", 2) == 0) {
            char *d = cg_demangle(name);
            hit = d && matches(&sc->fn, d);
            free(d);
        }
        if (!hit && sc->fl.n) {
            char *file = source_file(mod, (uintptr_t)addr, &units);
            hit = matches(&sc->fl, file);
            free(file);
        }
        if (hit)
            add_addr(&sc->found, (uintptr_t)addr);
    }
    free(units.v);
}

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
/* A scan that makes the runtime's dlopen wrapper run again (libdw loading a
 * helper) must not wait for itself. */
static __thread int in_scan __attribute__((tls_model("initial-exec")));
static unsigned long functions_skipped;

void cg_filter_scan(void)
{
    if (!skipping || in_scan)
        return;
    int saved = errno;
    in_scan = 1;
    pthread_mutex_lock(&scan_lock);
    struct collect *col = calloc(1, sizeof *col);
    struct scan sc;
    memset(&sc, 0, sizeof sc);
    Dwfl *dwfl = NULL;
    if (!col)
        goto out;
    dl_iterate_phdr(collect_object, col);
    if (col->fresh.n == 0)
        goto out;
    if (cg_globs_each(cg_opts.skip, add_pattern, &sc.fn) || cg_globs_each(cg_opts.skip_object, add_pattern, &sc.ob) ||
        cg_globs_each(cg_opts.skip_file, add_pattern, &sc.fl))
        goto out;
    if (!cg_elfutils()) {
        /* the objects stay unscanned: the next scan (the program's next
         * dlopen) tries again */
        static int said;
        char why[160];
        cg_elfutils_error(why, sizeof why);
        if (!said++)
            cg_warn("CGPROF_SKIP*: libdw could not be loaded (%s): the functions of the objects loaded so far are "
                    "not skipped", why);
        goto out;
    }
    dwfl = CG_DW(dwfl_begin)(&callbacks);
    if (!dwfl)
        goto out;
    CG_DW(dwfl_report_begin)(dwfl);
    Dwfl_Module **mods = calloc(col->fresh.n, sizeof *mods);
    for (size_t i = 0; mods && i < col->fresh.n; i++)
        mods[i] = CG_DW(dwfl_report_elf)(dwfl, col->fresh.v[i].path, col->fresh.v[i].path, -1, col->fresh.v[i].base,
                                         false);
    CG_DW(dwfl_report_end)(dwfl, NULL, NULL);
    for (size_t i = 0; mods && i < col->fresh.n; i++) {
        if (mods[i])
            scan_module(&sc, mods[i], col->fresh.v[i].path);
        add_object(&scanned, col->fresh.v[i].path, col->fresh.v[i].base);
    }
    free(mods);
    if (sc.found.n) {
        const struct cg_addrset *old = filter.skip;
        size_t nold = old ? old->n : 0;
        struct cg_addrset *set = cg_addrset_new(nold + sc.found.n);
        if (set) {
            uintptr_t *prev = nold ? malloc(nold * sizeof *prev) : NULL;
            size_t k = prev ? cg_addrset_list(old, prev, nold) : 0;
            for (size_t i = 0; i < k; i++)
                cg_addrset_add(set, prev[i]);
            free(prev);
            for (size_t i = 0; i < sc.found.n; i++)
                cg_addrset_add(set, sc.found.v[i]);
            functions_skipped = set->n;
            /* The old set is never freed: a hook on another thread may be
             * probing it now, and nothing tells when it is done. One set
             * per dlopen that brings skipped functions. */
            __atomic_store_n(&filter.skip, set, __ATOMIC_RELEASE);
        }
    }
out:
    if (dwfl)
        CG_DW(dwfl_end)(dwfl);
    free_patterns(&sc.fn);
    free_patterns(&sc.ob);
    free_patterns(&sc.fl);
    free(sc.found.v);
    if (col) {
        for (size_t i = 0; i < col->fresh.n; i++)
            free(col->fresh.v[i].path);
        free(col->fresh.v);
        free(col);
    }
    pthread_mutex_unlock(&scan_lock);
    in_scan = 0;
    errno = saved;
}

int cg_filter_skipping(void)
{
    return skipping;
}

/* ---- what the profiles and stderr say ---------------------------------------- */

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the throttled functions, sorted, without duplicates (two
 * addresses may have one name: static functions of different files). */
static char **throttled_names(struct cg_syms *syms, size_t *count)
{
    *count = 0;
    size_t max = filter.throttled ? __atomic_load_n(&filter.throttled->n, __ATOMIC_RELAXED) : 0;
    if (!max)
        return NULL;
    uintptr_t *fns = malloc(max * sizeof *fns);
    char **names = calloc(max, sizeof *names);
    if (!fns || !names) {
        free(fns);
        free(names);
        return NULL;
    }
    size_t n = cg_addrset_list(filter.throttled, fns, max);
    qsort(fns, n, sizeof *fns, cmp_addr);
    const struct cg_symbol **sym = syms ? calloc(n ? n : 1, sizeof *sym) : NULL;
    if (sym && cg_syms_lookup_sorted(syms, fns, n, sym) != 0) {
        free(sym);
        sym = NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct cg_symbol *s = sym ? sym[i] : NULL;
        if (s && s->function)
            names[i] = strdup(s->function);
        else if (asprintf(&names[i], "0x%llx", (unsigned long long)fns[i]) < 0)
            names[i] = NULL;
        if (!names[i])
            names[i] = strdup("???");
    }
    free(fns);
    free(sym);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (names[i])
            names[k++] = names[i];
    qsort(names, k, sizeof *names, cmp_name);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && strcmp(names[m - 1], names[i]) == 0)
            free(names[i]);
        else
            names[m++] = names[i];
    }
    *count = m;
    return names;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static struct cg_buf desc_skip, desc_throttle;
/* The throttled functions' names as of the latest profile, for the message at exit. */
static char **last_names;
static size_t last_count, last_set_n;

void cg_filter_left_out(const struct cg_addrset **skipped, const struct cg_addrset **throttled)
{
    *skipped = __atomic_load_n(&filter.skip, __ATOMIC_ACQUIRE);
    *throttled = filter.throttle_n ? filter.throttled : NULL;
}

int cg_filter_desc(struct cg_syms *syms, const char **out, int max)
{
    int n = 0;
    if (skipping && n < max) {
        cg_buf_free(&desc_skip);
        cg_buf_init(&desc_skip);
        cg_buf_printf(&desc_skip, "Skipped: %lu functions (", functions_skipped);
        const char *sep = "";
        if (cg_opts.skip[0])
            cg_buf_printf(&desc_skip, "%sCGPROF_SKIP=%s", sep, cg_opts.skip), sep = " ";
        if (cg_opts.skip_object[0])
            cg_buf_printf(&desc_skip, "%sCGPROF_SKIP_OBJECT=%s", sep, cg_opts.skip_object), sep = " ";
        if (cg_opts.skip_file[0])
            cg_buf_printf(&desc_skip, "%sCGPROF_SKIP_FILE=%s", sep, cg_opts.skip_file);
        cg_buf_puts(&desc_skip, "): not shown; their time is their callers' own, their calls are shown as "
                                "made by their callers");
        if (!desc_skip.failed)
            out[n++] = desc_skip.data;
    }
    if (filter.throttle_n && n < max) {
        size_t count;
        unsigned long set_n = __atomic_load_n(&filter.throttled->n, __ATOMIC_RELAXED);
        char **names = throttled_names(syms, &count);
        cg_buf_free(&desc_throttle);
        cg_buf_init(&desc_throttle);
        cg_buf_printf(&desc_throttle,
                      CG_DESC_THROTTLED ": %zu functions (CGPROF_THROTTLE=%llu:%llu, process-wide; calls counted until "
                      "then are kept)",
                      count, (unsigned long long)filter.throttle_n, (unsigned long long)filter.throttle_ns);
        for (size_t i = 0; i < count; i++)
            cg_buf_printf(&desc_throttle, "%s%s", i ? ", " : ": ", names[i]);
        if (filter.throttle_full)
            cg_buf_printf(&desc_throttle, " (and more: the list is full at %d)", THROTTLED_MAX);
        if (!desc_throttle.failed)
            out[n++] = desc_throttle.data;
        free_names(last_names, last_count);
        last_names = names;
        last_count = count;
        last_set_n = set_n;
    }
    return n;
}

void cg_filter_report_exit(void)
{
    if (!throttle_asked || !filter.throttle_n || __atomic_load_n(&filter.throttled->n, __ATOMIC_RELAXED) == 0)
        return;
    int saved = errno;
    char **names = last_names;
    size_t count = last_count;
    struct cg_syms *own = NULL;
    if (!names || last_set_n != __atomic_load_n(&filter.throttled->n, __ATOMIC_RELAXED)) {
        /* throttled since the last profile was written: name them now */
        own = cg_syms_open(NULL); /* the patterns name what is loaded now */
        names = throttled_names(own, &count);
    }
    /* gcc matches these as substrings of a function's name as the language
     * prints it (for C++, with its scope, without the parameter list); a
     * name with a comma cannot be written in the list at all. */
    struct cg_buf b;
    cg_buf_init(&b);
    size_t listed = 0, unlisted = 0;
    for (size_t i = 0; i < count; i++) {
        size_t len = strcspn(names[i], "(");
        if (memchr(names[i], ',', len) || len == 0 || names[i][0] == '?' || strncmp(names[i], "0x", 2) == 0) {
            unlisted++;
            continue;
        }
        if (listed++)
            cg_buf_putc(&b, ',');
        cg_buf_putn(&b, names[i], len);
    }
    if (listed && !b.failed) {
        /* longer than cg_warn's line: written whole, as cg_warn writes (cg_write_all) */
        struct cg_buf m;
        cg_buf_init(&m);
        cg_buf_printf(&m,
                      "cgprof: CGPROF_THROTTLE=%llu:%llu throttled %zu functions%s; to leave them out of the "
                      "build, compile with:\n-finstrument-functions-exclude-function-list=",
                      (unsigned long long)filter.throttle_n, (unsigned long long)filter.throttle_ns, count,
                      unlisted ? " (some cannot be listed there: see the profiles' desc: " CG_DESC_THROTTLED ")" : "");
        cg_buf_putn(&m, b.data, b.len);
        cg_buf_putc(&m, '\n');
        if (!m.failed)
            cg_write_stderr(m.data, m.len);
        cg_buf_free(&m);
    }
    cg_buf_free(&b);
    if (own) {
        free_names(names, count);
        cg_syms_close(own);
    }
    errno = saved;
}
