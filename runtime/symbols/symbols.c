/* Symbols: see symbols.h. A session (symsession.h) over libdwfl: the
 * objects and their separate debug files, memory running out inside libdw,
 * the names of addresses (function symbols, functions without one, objects
 * unloaded, or without libdw the loader's tables) and their source lines
 * (lines.c's tables); the lookups, cached. Inlined calls' own positions
 * are inlined.c's. */
#define _GNU_SOURCE
#include "symbols.h"
#include "debuginfo.h"
#include "demangle.h"
#include "symsession.h"
#include "unwinder.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <errno.h>
#include <link.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "compiler.h"
#include "elfutils.h"
#include "lines.h"
#include "proc.h"
#include "util.h"

static const char unknown[] = "???";

struct cg_sym_entry {
    uintptr_t addr;
    struct cg_symbol sym;
    int lines;  /* its source lines were looked up (see cg_syms_want_lines) */
};

/* An object's function symbols sorted by address. elfutils'
 * dwfl_module_addrinfo() scans the whole symbol table on every lookup:
 * with 50,000 functions and 150,000 addresses to name, a dump took minutes. */
struct fsym {
    uintptr_t addr; /* run-time address */
    uint64_t size;
    const char *name; /* in the object's string table (lives with the Dwfl) */
    int rank;         /* among aliases at one address: global > weak > local */
};

/* The address range of a compilation unit (run-time addresses). */
struct cu_range {
    uintptr_t lo, hi;
    Dwarf_Die *cu;
};

struct cg_modsyms {
    Dwfl_Module *mod;
    struct fsym *v;
    size_t n;
    size_t hint; /* where the last lookup ended (see function_at) */
    /* Its units' ranges, sorted, made when libdwfl finds no unit for an
     * address (see unit_of). */
    struct cu_range *cus;
    size_t ncus;
    int cus_made;
    Dwarf_Addr cu_bias;
};

const char *cg_module_function(Dwfl_Module *mod, int i, GElf_Sym *sym, GElf_Addr *addr)
{
    GElf_Word shndx;
    const char *name = CG_DW(dwfl_module_getsym_info)(mod, i, sym, addr, &shndx, NULL, NULL);
    int type = GELF_ST_TYPE(sym->st_info);
    if (!name || !*name || shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
        return NULL;
    return name;
}

char *cg_source_path(Dwarf_Die *cu, const char *raw)
{
    const char *dir = NULL;
    if (raw[0] != '/') {
        Dwarf_Attribute attr;
        dir = cu ? CG_DW(dwarf_formstring)(CG_DW(dwarf_attr)(cu, DW_AT_comp_dir, &attr)) : NULL;
    }
    char *p = NULL;
    if (dir ? asprintf(&p, "%s/%s", dir, raw) < 0 : !(p = strdup(raw)))
        return NULL;
    cg_path_normalise(p);
    return p;
}

/* ---- descriptors -------------------------------------------------------------
 * libdwfl keeps every file it opens open until dwfl_end(), without
 * FD_CLOEXEC: the program would see them (a shell it execs inherits them;
 * under a low RLIMIT_NOFILE its own open() fails). An object's own ELF file
 * is read whole into memory (libelf maps it) and its descriptor closed at
 * once (find_elf). A separate debug file's descriptor cannot be taken from
 * libdwfl: it is moved to the top of the program's range, close-on-exec
 * (cg_fd_above), where the program's own open() never meets it, and the
 * session keeps it; where there is no room above (RLIMIT_NOFILE under
 * 256) the session that holds one is closed at the end of the dump
 * (cg_syms_holds_fds, symcache.c), at the cost of reading the symbols
 * again at the next (a millisecond or more each thread's end). */
static int debug_fds_given; /* since the last lookup noted them */

/* A descriptor libdwfl keeps: above the program's, or noted. */
static int kept_fd(int fd)
{
    int high = cg_fd_above(fd);
    if (high == fd) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        __atomic_fetch_add(&debug_fds_given, 1, __ATOMIC_RELAXED);
    }
    return high;
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
                    Elf **elfp)
{
    int fd = CG_DW(dwfl_linux_proc_find_elf)(mod, userdata, modname, base, file_name, elfp);
    if (fd < 0 || *elfp)
        return fd;
    Elf *elf = CG_DW(elf_begin)(fd, ELF_C_READ_MMAP, NULL);
    /* FDREAD: the whole file in memory (already so when mapped), and the
     * descriptor never read again (it does what FDDONE does, after which
     * a second elf_cntl fails) */
    if (!elf || CG_DW(elf_cntl)(elf, ELF_C_FDREAD) != 0) {
        if (elf)
            CG_DW(elf_end)(elf);
        return kept_fd(fd); /* libdwfl's way: the descriptor stays open */
    }
    close(fd);
    *elfp = elf;
    return -1;
}

/* Never a debuginfod server: its request would be a network wait in the
 * middle of the user's program exit. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name)
{
    int fd = cg_syms_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                    debuginfo_file_name);
    return fd >= 0 ? kept_fd(fd) : fd;
}

int cg_syms_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                           char **debuginfo_file_name)
{
    int fd = CG_DW(dwfl_build_id_find_debuginfo)(mod, userdata, modname, base, file_name, debuglink_file,
                                                 debuglink_crc, debuginfo_file_name);
    if (fd >= 0)
        return fd;
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (urls && *urls)
        return -1;
    return CG_DW(dwfl_standard_find_debuginfo)(mod, userdata, modname, base, file_name, debuglink_file,
                                               debuglink_crc, debuginfo_file_name);
}

int cg_syms_find_elf_by_build_id(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                 char **file_name, Elf **elfp)
{
    return CG_DW(dwfl_build_id_find_elf)(mod, userdata, modname, base, file_name, elfp);
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo,
};


/* Without /proc (a container or a chroot without it mounted): the objects
 * from the loader's own list, each reported from its file (the program's
 * by the path it was started with, AT_EXECFN, from the start-up
 * directory). The files are opened close-on-exec and held by libdwfl: the
 * session is closed when the dump ends (holds_fds). */
struct report_ctx {
    Dwfl *dwfl;
    int reported;
};

static int report_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct report_ctx *r = data;
    char path[4096];
    const char *name = info->dlpi_name;
    if (!name || !*name) {
        const char *exe = (const char *)getauxval(AT_EXECFN);
        if (!exe || !*exe)
            return 0;
        if (exe[0] == '/')
            snprintf(path, sizeof path, "%s", exe);
        else
            snprintf(path, sizeof path, "%s/%s", cg_proc_cwd(), exe);
        name = path;
    }
    if (name[0] != '/')
        return 0; /* the vDSO (linux-vdso.so.1): no file */
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (CG_DW(dwfl_report_elf)(r->dwfl, name, name, fd, info->dlpi_addr, false))
        r->reported++;
    else
        close(fd);
    return 0;
}

/* ---- memory running out inside libdw ----------------------------------------
 * The error paths of libdw and libelf after a failed allocation are not all
 * sound (elfutils 0.188, found by failing each allocation of a run in turn:
 * tests/progs/failshim.c): dwfl_addrsegment frees its segment table when
 * realloc() has already moved it, and the next call, or dwfl_end(), frees
 * it again; a module's tree of units keeps a null entry that the next
 * search reads through; dwarf_getaranges leaves its ranges half made. And
 * libdw's pool allocator calls its out-of-memory handler, which by default
 * ends the process (exit(1), "libdw: Cannot allocate memory"), here in the
 * middle of a dump that holds the dump lock. So:
 *  - a session that saw an allocation fail in there (errno ENOMEM after a
 *    call) makes no further call into them: the addresses it has not
 *    resolved yet are unknown (the part names them by address), and its
 *    libdw state is left as it is, never ended (leaked: it may hold a block
 *    freed twice). The symbol cache opens a new session for the next dump.
 *  - every Dwarf the session reads gets a handler of ours, which jumps back
 *    to the lookup under way (cg_sess_dw_jump): the session is then in that
 *    state.
 * Said once per process. A separate debug file's supplementary (dwz) file
 * has libdw's handler. The jump is __builtin_setjmp's, not sigsetjmp's:
 * the library's own setjmp and longjmp are the wrappers of the program's
 * (nonlocal.c), and nothing here changes the signal mask. */
__thread cg_sess_jmp_buf *cg_sess_dw_jump;

static __attribute__((noreturn)) void dw_oom(void)
{
    if (cg_sess_dw_jump)
        __builtin_longjmp(*cg_sess_dw_jump, 1);
    /* not reached: every call that reads DWARF is made under a jump */
    cg_warn("out of memory in libdw outside a symbol lookup");
    abort();
}

static int nomem_said;

void cg_sess_mark_lost(struct cg_syms *s)
{
    if (s->nomem)
        return;
    s->nomem = 1;
    if (!__atomic_exchange_n(&nomem_said, 1, __ATOMIC_RELAXED))
        cg_warn("out of memory reading symbols and debug information: the functions not named by then are "
                "named by their addresses, without source lines, in the files of this dump");
}

int cg_sess_lost(struct cg_syms *s)
{
    if (!s->nomem && errno == ENOMEM)
        cg_sess_mark_lost(s);
    return s->nomem;
}

/* Before the first reading of mod's DWARF: our handler on its Dwarf. 0 if
 * the session can go on. */
static int dwarf_guarded(struct cg_syms *s, Dwfl_Module *mod)
{
    Dwarf_Addr bias;
    Dwarf *dw = CG_DW(dwfl_module_getdwarf)(mod, &bias);
    if (dw)
        CG_DW(dwarf_new_oom_handler)(dw, dw_oom);
    return cg_sess_lost(s) ? -1 : 0;
}

void cg_syms_assert_failed(const void *caller)
{
    Dl_info info;
    if (!cg_sess_dw_jump || !dladdr(caller, &info) || !info.dli_fname ||
        !(strstr(info.dli_fname, "/libdw") || strstr(info.dli_fname, "/libelf")))
        return;
    __builtin_longjmp(*cg_sess_dw_jump, 1);
}

int cg_syms_lost(const struct cg_syms *s)
{
    return s && s->nomem;
}

struct cg_syms *cg_syms_open(struct cg_gone *gone)
{
    struct cg_syms *s = calloc(1, sizeof *s);
    if (!s) {
        if (!__atomic_exchange_n(&nomem_said, 1, __ATOMIC_RELAXED))
            cg_warn("out of memory reading symbols: the functions of this dump are named by their addresses");
        return NULL;
    }
    s->gone_list = gone;
    if (!cg_elfutils()) {
        char e[160];
        cg_elfutils_error(e, sizeof e);
        snprintf(s->why, sizeof s->why, "libdw could not be loaded (%s)", e);
        return s;
    }
    int saved = errno;
    errno = 0;
    s->dwfl = CG_DW(dwfl_begin)(&callbacks);
    if (!s->dwfl && errno == ENOMEM)
        cg_sess_mark_lost(s);
    if (s->dwfl) {
        /* The calling thread's view of the mappings: /proc/<pid>/maps reads
         * empty once the main thread has called pthread_exit(), and the dump
         * at exit may then run on another thread. */
        FILE *maps = fopen("/proc/thread-self/maps", "re");
        if (!maps)
            maps = fopen("/proc/self/maps", "re");
        CG_DW(dwfl_report_begin)(s->dwfl);
        int rc = maps ? CG_DW(dwfl_linux_proc_maps_report)(s->dwfl, maps) : -1;
        if (maps)
            fclose(maps);
        if (!maps) {
            struct report_ctx r = { s->dwfl, 0 };
            dl_iterate_phdr(report_loaded, &r);
            rc = r.reported ? 0 : -1;
            s->holds_fds = 1;
        }
        if (rc != 0 || CG_DW(dwfl_report_end)(s->dwfl, NULL, NULL) != 0) {
            /* out of memory: left as it is, and said (see above) */
            if (errno != ENOMEM)
                CG_DW(dwfl_end)(s->dwfl);
            else
                cg_sess_mark_lost(s);
            s->dwfl = NULL;
        }
    }
    if (!s->dwfl)
        snprintf(s->why, sizeof s->why, "libdw could not read the process's objects%s",
                 s->nomem ? " (out of memory)" : "");
    errno = saved;
    return s;
}

const char *cg_syms_without_libdw(const struct cg_syms *s)
{
    return !s ? "no memory for a symbol session" : s->dwfl ? NULL : s->why;
}

void cg_syms_close(struct cg_syms *s)
{
    if (!s)
        return;
    __atomic_store_n(&debug_fds_given, 0, __ATOMIC_RELAXED);
    /* libdw's state after memory ran out in it: left as it is */
    if (s->dwfl && !s->nomem)
        CG_DW(dwfl_end)(s->dwfl);
    if (s->gone && !s->nomem)
        CG_DW(dwfl_end)(s->gone);
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->paths.v);
    free(s->sorted);
    for (size_t i = 0; i < s->nblocks; i++)
        free(s->blocks[i]);
    free(s->blocks);
    free(s->lined);
    for (size_t i = 0; i < s->nmodsyms; i++) {
        free(s->modsyms[i].v);
        free(s->modsyms[i].cus);
    }
    free(s->modsyms);
    for (size_t i = 0; i < s->units.cap; i++) {
        if (s->units.v[i].value) {
            cg_lines_free(s->units.v[i].value);
            free(s->units.v[i].value);
        }
    }
    free(s->units.v);
    for (size_t i = 0; i < s->inlined.cap; i++)
        free(s->inlined.v[i].value);
    free(s->inlined.v);
    for (size_t i = 0; i < s->callees.cap; i++)
        free(s->callees.v[i].value);
    free(s->callees.v);
    free(s);
}

static const char *keep(struct cg_syms *s, char *str)
{
    if (CG_GROW(s->owned, s->owned_cap, s->nowned + 1, 64) != 0) {
        free(str);
        return NULL;
    }
    s->owned[s->nowned++] = str;
    return str;
}

/* C++ names demangled (demangle.c), kept for the session. */
static const char *demangle(struct cg_syms *s, const char *name)
{
    char *d = cg_demangle(name);
    if (!d)
        return name;
    const char *kept = keep(s, d);
    return kept ? kept : name;
}

struct cg_ptr_entry *cg_sess_ptr_slot(struct cg_ptr_map *m, const void *key, size_t first_cap)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : first_cap;
        struct cg_ptr_entry *n = calloc(cap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->v[i].key)
                continue;
            size_t j = (size_t)cg_hash2((uintptr_t)m->v[i].key, 0);
            while (n[j & (cap - 1)].key)
                j++;
            n[j & (cap - 1)] = m->v[i];
        }
        free(m->v);
        m->v = n;
        m->cap = cap;
    }
    for (size_t j = (size_t)cg_hash2((uintptr_t)key, 0);; j++) {
        struct cg_ptr_entry *e = &m->v[j & (m->cap - 1)];
        if (!e->key || e->key == key)
            return e;
    }
}

const char *cg_sess_absolute_path(struct cg_syms *s, Dwarf_Die *cu, const char *raw)
{
    struct cg_ptr_entry *e = cg_sess_ptr_slot(&s->paths, raw, 256);
    if (!e)
        return raw;
    if (e->key)
        return e->value;
    char *p = cg_source_path(cu, raw);
    if (!p)
        return raw;
    const char *kept = keep(s, p);
    if (!kept)
        return raw;
    e->key = raw;
    e->value = p; /* the session's own copy from now on (keep) */
    s->paths.n++;
    return kept;
}

static struct cg_modsyms *modsyms_of(struct cg_syms *s, Dwfl_Module *mod);

static int cmp_cu_range(const void *a, const void *b)
{
    const struct cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The compilation unit of addr from the units' own ranges. libdwfl finds a
 * unit through .debug_aranges, which clang does not write: without this,
 * no source file of a clang-built program was known. */
static Dwarf_Die *unit_of(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, Dwarf_Addr *bias)
{
    struct cg_modsyms *m = modsyms_of(s, mod);
    if (!m || cg_sess_lost(s))
        return NULL;
    if (!m->cus_made) {
        m->cus_made = 1;
        size_t cap = 0;
        Dwarf_Die *cu = NULL;
        Dwarf_Addr b = 0;
        if (dwarf_guarded(s, mod) != 0)
            return NULL;
        while ((cu = CG_DW(dwfl_module_nextcu)(mod, cu, &b)) != NULL && !cg_sess_lost(s)) {
            m->cu_bias = b;
            Dwarf_Addr base, start, end;
            for (ptrdiff_t off = 0; (off = CG_DW(dwarf_ranges)(cu, off, &base, &start, &end)) > 0;) {
                if (start >= end)
                    continue;
                if (CG_GROW(m->cus, cap, m->ncus + 1, 16) != 0)
                    break;
                m->cus[m->ncus++] = (struct cu_range){ start + b, end + b, cu };
            }
        }
        if (cg_sess_lost(s))
            return NULL;
        qsort(m->cus, m->ncus, sizeof *m->cus, cmp_cu_range);
    }
    size_t lo = 0, hi = m->ncus; /* the last range starting at or below addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->cus[mid].lo <= addr)
            lo = mid;
        else
            hi = mid;
    }
    if (!m->ncus || addr < m->cus[lo].lo || addr >= m->cus[lo].hi)
        return NULL;
    *bias = m->cu_bias;
    return m->cus[lo].cu;
}

/* The line table of a compilation unit, decoded when first wanted; NULL
 * where lines.c leaves the unit to libdw (or memory ran out). */
static const struct cg_line_table *lines_of(struct cg_syms *s, Dwarf_Die *cu)
{
    struct cg_ptr_entry *e = cg_sess_ptr_slot(&s->units, cu->addr, 64);
    if (!e)
        return NULL;
    if (e->key)
        return e->value;
    struct cg_line_table *t = malloc(sizeof *t);
    if (t && cg_lines_decode(cu, t) != 0) {
        free(t);
        t = NULL;
    }
    e->key = cu->addr;
    e->value = t;
    s->units.n++;
    return t;
}

/* The source file (as the line table names it) and line of addr in unit
 * cu, if the unit has a row for it: what dwarf_getsrc_die() answers, from
 * the decoded rows, else from libdw's. */
static int row_in(struct cg_syms *s, Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Addr bias,
                  const char **src, int *lineno)
{
    const struct cg_line_table *t = lines_of(s, cu);
    if (cg_sess_lost(s))
        return 0;
    if (!t) {
        Dwarf_Line *l = CG_DW(dwarf_getsrc_die)(cu, addr - bias);
        if (!l || cg_sess_lost(s))
            return 0;
        s->last_line.table = NULL;
        *src = CG_DW(dwarf_linesrc)(l, NULL, NULL);
        if (CG_DW(dwarf_lineno)(l, lineno) != 0)
            *lineno = 0;
        return 1;
    }
    size_t idx = 0;
    const struct cg_line_row *r = cg_lines_find(t, addr - bias, &idx);
    if (!r)
        return 0;
    s->last_line.mod = mod;
    s->last_line.cu = cu;
    s->last_line.table = t;
    s->last_line.idx = idx;
    s->last_line.bias = bias;
    *src = cg_lines_file(t, r);
    *lineno = r->line;
    return 1;
}

/* What dwfl_module_getsrc() answers (the unit that .debug_aranges gives,
 * its row), else the row in the unit whose ranges hold addr (unit_of). The
 * addresses of a dump ascend: one in the rows of the last unit found is
 * looked up there, from the last row, without finding its unit again (a
 * unit's rows cover only its own code). */
static void source_of(struct cg_syms *s, Dwfl_Module *mod, Dwarf_Addr addr, const char **file, unsigned *line)
{
    *file = unknown;
    *line = 0;
    const char *src = NULL;
    int lineno = 0;
    Dwarf_Die *cu = s->last_line.cu;
    const struct cg_line_row *r = NULL;
    if (s->last_line.table && s->last_line.mod == mod)
        r = cg_lines_find(s->last_line.table, addr - s->last_line.bias, &s->last_line.idx);
    if (r) {
        src = cg_lines_file(s->last_line.table, r);
        lineno = r->line;
    } else {
        Dwarf_Addr bias;
        if (s->nomem || dwarf_guarded(s, mod) != 0)
            return;
        /* memory running out at any step ends it (see above) */
        cu = CG_DW(dwfl_module_addrdie)(mod, addr, &bias);
        int found = !cg_sess_lost(s) && cu && row_in(s, mod, cu, addr, bias, &src, &lineno);
        if (!found && !cg_sess_lost(s)) {
            cu = unit_of(s, mod, addr, &bias);
            found = !cg_sess_lost(s) && cu && row_in(s, mod, cu, addr, bias, &src, &lineno);
        }
        if (!found || cg_sess_lost(s))
            return;
    }
    if (src && *src) {
        const char *path = cg_sess_absolute_path(s, cu, src);
        if (cg_sess_lost(s))
            return;
        *file = path;
        *line = lineno > 0 ? (unsigned)lineno : 0;
    }
}

/* ---- functions without a symbol ------------------------------------------
 * Code with no symbol (a static function of a stripped library, e.g. libc
 * without its debug symbols) is still inside one function, whose range the
 * unwind tables give (.eh_frame, through .eh_frame_hdr's sorted index). That
 * lookup is libunwind's unw_get_proc_info_by_ip() (unwinder.c). */
#if CG_HAVE_LIBUNWIND
static int proc_range(uintptr_t addr, uintptr_t *start)
{
    const struct cg_unwinder *u = cg_unwinder();
    if (!u || !u->get_proc_info_by_ip || !u->local_addr_space)
        return -1;
    unw_proc_info_t pi;
    memset(&pi, 0, sizeof pi);
    if (u->get_proc_info_by_ip(*u->local_addr_space, (unw_word_t)addr, &pi, NULL) != 0 || pi.start_ip == 0 ||
        addr < pi.start_ip || addr >= pi.end_ip)
        return -1;
    *start = (uintptr_t)pi.start_ip;
    return 0;
}
#else
static int proc_range(uintptr_t addr, uintptr_t *start)
{
    (void)addr;
    (void)start;
    return -1;
}
#endif

/* Names such a function by its start address, as Valgrind does, so that
 * all of its addresses are one function. */
static void unnamed_function(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, struct cg_symbol *out)
{
    uintptr_t start;
    if (proc_range(addr, &start) != 0)
        return;
    Dwarf_Addr bias = 0;
    CG_DW(dwfl_module_getelf)(mod, &bias);
    char *name = NULL;
    if (cg_sess_lost(s) || asprintf(&name, "0x%016llx", (unsigned long long)(start - bias)) < 0)
        return;
    const char *kept = keep(s, name);
    if (!kept)
        return;
    out->function = kept;
    out->fn_start = start;
    out->fn_obj_addr = start - bias;
    source_of(s, mod, out->fn_start, &out->fn_file, &out->fn_line);
}

/* ---- objects unloaded by dlclose ---------------------------------------------
 * Addresses of an object that is gone are named from its file, reported
 * offline at the address it had (the newest record wins when an address
 * range was used twice). */

struct find_object {
    uintptr_t base;
    const char *name;
    uintptr_t lo, hi;
    int found;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find_object *f = data;
    if (info->dlpi_addr != f->base || !info->dlpi_name || strcmp(info->dlpi_name, f->name) != 0)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!f->found || lo < f->lo)
            f->lo = lo;
        if (!f->found || hi > f->hi)
            f->hi = hi;
        f->found = 1;
    }
    return 1;
}

int cg_syms_object_of(const void *handle, char **path, uintptr_t *bias, uintptr_t *lo, uintptr_t *hi)
{
    struct link_map *lm = NULL;
    if (!handle || dlinfo((void *)handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || lm->l_name[0] != '/')
        return -1;
    struct find_object f = { .base = lm->l_addr, .name = lm->l_name };
    dl_iterate_phdr(find_object, &f);
    if (!f.found || !(*path = strdup(lm->l_name)))
        return -1;
    *bias = f.base;
    *lo = f.lo;
    *hi = f.hi;
    return 0;
}

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = cg_syms_find_elf_by_build_id,
    .find_debuginfo = find_debuginfo,
};

/* The module of an unloaded object that addr belongs to, or NULL: the
 * object that owned it when it went; else, if nothing is mapped at addr now
 * (current: 0), the last object that was there. */
static Dwfl_Module *gone_module(struct cg_syms *s, uintptr_t addr, int current)
{
    const char *path;
    uintptr_t base;
    if (!s->gone_list || !cg_elfutils_loaded() || !cg_gone_find(s->gone_list, addr, current, &path, &base))
        return NULL;
    if (!s->gone)
        s->gone = CG_DW(dwfl_begin)(&offline_callbacks);
    if (!s->gone)
        return NULL;
    s->holds_fds = 1; /* dwfl_report_elf() keeps the file it opens */
    Dwfl_Module *mod = CG_DW(dwfl_addrmodule)(s->gone, addr);
    if (!mod) {
        CG_DW(dwfl_report_begin_add)(s->gone);
        mod = CG_DW(dwfl_report_elf)(s->gone, path, path, -1, base, false);
        CG_DW(dwfl_report_end)(s->gone, NULL, NULL);
        if (mod && CG_DW(dwfl_addrmodule)(s->gone, addr) != mod)
            mod = NULL;
    }
    return mod;
}

static int cmp_fsym(const void *a, const void *b)
{
    const struct fsym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* the preferred alias first: sized, then by binding */
    if ((x->size != 0) != (y->size != 0))
        return x->size ? -1 : 1;
    return y->rank - x->rank;
}

static struct cg_modsyms *modsyms_of(struct cg_syms *s, Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->nmodsyms; i++)
        if (s->modsyms[i].mod == mod)
            return &s->modsyms[i];
    if (CG_GROW(s->modsyms, s->modsyms_cap, s->nmodsyms + 1, 16) != 0)
        return NULL;
    struct cg_modsyms *m = &s->modsyms[s->nmodsyms];
    m->mod = mod;
    m->v = NULL;
    m->n = 0;
    m->hint = 0;
    m->cus = NULL;
    m->ncus = 0;
    m->cus_made = 0;
    int count = CG_DW(dwfl_module_getsymtab)(mod);
    if (count > 0 && (m->v = malloc((size_t)count * sizeof *m->v))) {
        for (int i = 1; i < count; i++) {
            GElf_Sym sym;
            GElf_Addr addr;
            const char *name = cg_module_function(mod, i, &sym, &addr);
            if (!name)
                continue;
            int bind = GELF_ST_BIND(sym.st_info);
            struct fsym *f = &m->v[m->n++];
            f->addr = addr;
            f->size = sym.st_size;
            f->name = name;
            f->rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0;
        }
        /* by address, then one entry per address: the preferred alias
         * (radix and a pass over each address's aliases: a qsort of the
         * 50,000 symbols of a big program was 8% of a dump) */
        if (cg_sort_keyed(m->v, m->n, sizeof *m->v) != 0)
            qsort(m->v, m->n, sizeof *m->v, cmp_fsym);
        size_t k = 0;
        for (size_t i = 0; i < m->n; i++)
            if (k == 0 || m->v[k - 1].addr != m->v[i].addr)
                m->v[k++] = m->v[i];
            else if (cmp_fsym(&m->v[i], &m->v[k - 1]) < 0)
                m->v[k - 1] = m->v[i];
        m->n = k;
    }
    s->nmodsyms++;
    return m;
}

/* The function symbol containing addr: the last one at or below it, when
 * its size covers addr (or it has no size). Returns its name and start. */
const char *cg_sess_function_at(struct cg_syms *s, Dwfl_Module *mod, uintptr_t addr, uintptr_t *start)
{
    struct cg_modsyms *m = modsyms_of(s, mod);
    if (!m || m->n == 0 || addr < m->v[0].addr)
        return NULL;
    /* A dump looks addresses up in ascending order: search forward from
     * the last answer, in steps that double (a binary search over the whole
     * table, at random places in memory, was most of the lookup's time). */
    size_t lo = 0, hi = m->n; /* the answer is in [lo, hi) */
    if (m->v[m->hint].addr <= addr) {
        lo = m->hint;
        for (size_t step = 1; lo + step < m->n; step *= 2) {
            if (m->v[lo + step].addr > addr) {
                hi = lo + step;
                break;
            }
            lo += step;
        }
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    m->hint = lo;
    const struct fsym *f = &m->v[lo];
    if (f->size != 0 && addr - f->addr >= f->size)
        return NULL;
    *start = f->addr;
    return f->name;
}

static int wants_lines(const struct cg_syms *s, Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->nlined; i++)
        if (s->lined[i] == mod)
            return 1;
    return 0;
}

void cg_syms_want_lines(struct cg_syms *s, uintptr_t addr)
{
    if (!s->dwfl || s->nomem)
        return;
    int saved = errno;
    errno = 0;
    Dwfl_Module *mod = CG_DW(dwfl_addrmodule)(s->dwfl, addr);
    int gone = cg_sess_lost(s);
    errno = saved;
    if (!mod || gone || mod == s->last_lined || wants_lines(s, mod))
        return;
    if (CG_GROW(s->lined, s->lined_cap, s->nlined + 1, 16) != 0)
        return;
    s->lined[s->nlined++] = mod;
    s->last_lined = mod;
}

/* ---- without libdw ------------------------------------------------------
 * Where no libdw session could be had (cg_syms_without_libdw), an address
 * is named from the loader's own tables: its object (the program's by
 * /proc/self/exe) and the exported symbol that holds it (the dynamic
 * symbol table: a library's global functions, a program's only if it was
 * linked with -rdynamic). No source file or line; the functions with no
 * such symbol are named by their address, as Valgrind names them. No
 * allocation but the names kept. */
static void resolve_loaded(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out)
{
    Dl_info info;
    struct link_map *map = NULL;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return;
    if (map != s->last_map) {
        char exe[4096];
        const char *path = map->l_name;
        if (!path || !*path) {
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = 0;
            path = exe;
        }
        /* the session's own copy: the object may be unloaded before the
         * session is closed */
        char *copy = *path ? strdup(path) : NULL;
        s->last_map_path = copy ? keep(s, copy) : NULL;
        s->last_map = map;
    }
    if (s->last_map_path)
        out->object = s->last_map_path;
    out->obj_addr = addr - map->l_addr;
    if (!dladdr1((void *)addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !info.dli_sname ||
        !info.dli_saddr)
        return;
    int type = ELF64_ST_TYPE(sym->st_info);
    uintptr_t start = (uintptr_t)info.dli_saddr;
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || addr < start ||
        (sym->st_size && addr - start >= sym->st_size))
        return;
    if (start != s->last_sym) {
        char *name = cg_demangle(info.dli_sname);
        s->last_sym_name = keep(s, name ? name : strdup(info.dli_sname));
        s->last_sym = start;
    }
    out->function = s->last_sym_name;
    out->fn_start = start;
    out->fn_obj_addr = start - map->l_addr;
}

/* lines: look up source lines (else they stay unknown). Objects unloaded
 * (offline modules) always get them: only code that ran is noted there. */
static void resolve(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out, int *lines)
{
    memset(out, 0, sizeof *out);
    out->object = unknown;
    out->obj_addr = addr;
    out->fn_file = out->file = unknown;
    *lines = 1;
    if (s->nomem)
        return;
    errno = 0;
    Dwfl_Module *mod;
    if (s->last_mod.mod && addr >= s->last_mod.lo && addr < s->last_mod.hi && s->last_mod.nlined == s->nlined)
        mod = s->last_mod.mod;
    else
        mod = s->dwfl ? CG_DW(dwfl_addrmodule)(s->dwfl, addr) : NULL;
    Dwfl_Module *gone = cg_sess_lost(s) ? NULL : gone_module(s, addr, mod != NULL);
    if (cg_sess_lost(s))
        return;
    if (gone) {
        mod = gone;
        const char *path = CG_DW(dwfl_module_info)(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        if (path && *path)
            out->object = path;
        Dwarf_Addr bias = 0;
        if (CG_DW(dwfl_module_getelf)(mod, &bias))
            out->obj_addr = addr - bias;
        if (cg_sess_lost(s))
            return;
    } else if (mod) {
        if (mod != s->last_mod.mod || s->last_mod.nlined != s->nlined) {
            s->last_mod.mod = mod;
            s->last_mod.nlined = s->nlined;
            s->last_mod.path =
                CG_DW(dwfl_module_info)(mod, NULL, &s->last_mod.lo, &s->last_mod.hi, NULL, NULL, NULL, NULL);
            s->last_mod.bias = 0;
            s->last_mod.has_elf = CG_DW(dwfl_module_getelf)(mod, &s->last_mod.bias) != NULL;
            s->last_mod.lines = wants_lines(s, mod);
            if (cg_sess_lost(s)) {
                s->last_mod.mod = NULL;
                return;
            }
        }
        *lines = s->last_mod.lines;
        if (s->last_mod.path && *s->last_mod.path)
            out->object = s->last_mod.path; /* a full path, or a name such as [vdso] */
        if (s->last_mod.has_elf)
            out->obj_addr = addr - s->last_mod.bias;
    } else {
        if (!s->dwfl)
            resolve_loaded(s, addr, out);
        return;
    }

    uintptr_t start = 0;
    const char *name = cg_sess_function_at(s, mod, addr, &start);
    if (cg_sess_lost(s))
        return;
    if (name) {
        uintptr_t off = addr - start;
        out->fn_start = addr - off;
        out->fn_obj_addr = out->obj_addr - off;
        if (s->last_fn.mod != mod || s->last_fn.start != start || s->last_fn.lines != *lines) {
            s->last_fn.mod = mod;
            s->last_fn.start = start;
            s->last_fn.lines = *lines;
            s->last_fn.name = demangle(s, name);
            s->last_fn.file = unknown;
            s->last_fn.line = 0;
            if (*lines)
                source_of(s, mod, start, &s->last_fn.file, &s->last_fn.line);
            if (s->nomem)
                s->last_fn.mod = NULL;
        }
        out->function = s->last_fn.name;
        out->fn_file = s->last_fn.file;
        out->fn_line = s->last_fn.line;
    } else {
        unnamed_function(s, mod, addr, out);
    }
    if (*lines && !s->nomem)
        source_of(s, mod, addr, &out->file, &out->line);
}

/* resolve() under a jump point for libdw's out-of-memory handler: a lookup
 * it ends is made again without libdw (the session is lost). */
static void resolve_guarded(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out, int *lines)
{
    cg_sess_jmp_buf here;
    cg_sess_jmp_buf *volatile outer = cg_sess_dw_jump;
    if (__builtin_setjmp(here) == 0) {
        cg_sess_dw_jump = &here;
        resolve(s, addr, out, lines);
    } else {
        cg_sess_mark_lost(s);
        resolve(s, addr, out, lines);
    }
    cg_sess_dw_jump = outer;
}

Dwarf_Die *cg_sess_unit_at(struct cg_syms *s, uintptr_t addr, Dwfl_Module **modp, Dwarf_Addr *bias)
{
    *modp = NULL;
    if (s->nomem)
        return NULL;
    Dwfl_Module *mod = s->dwfl ? CG_DW(dwfl_addrmodule)(s->dwfl, addr) : NULL;
    Dwfl_Module *gone = cg_sess_lost(s) ? NULL : gone_module(s, addr, mod != NULL);
    if (cg_sess_lost(s))
        return NULL;
    *modp = gone ? gone : mod;
    if (gone)
        mod = gone;
    else if (!mod || !wants_lines(s, mod))
        return NULL;
    if (dwarf_guarded(s, mod) != 0)
        return NULL;
    Dwarf_Die *cu = CG_DW(dwfl_module_addrdie)(mod, addr, bias);
    if (cg_sess_lost(s))
        return NULL;
    return cu ? cu : unit_of(s, mod, addr, bias);
}

int cg_syms_holds_fds(const struct cg_syms *s)
{
    return s && (s->holds_fds || __atomic_load_n(&debug_fds_given, __ATOMIC_RELAXED));
}

int cg_syms_lookup_sorted(struct cg_syms *s, const uintptr_t *addrs, size_t n, const struct cg_symbol **out)
{
    int saved = errno;
    /* The entries not cached yet, resolved in ascending order (what makes
     * function_at's hint and the last_fn cache work). */
    size_t misses = 0;
    for (size_t i = 0, k = 0; i < n; i++) {
        while (k < s->nents && s->sorted[k]->addr < addrs[i])
            k++;
        misses += k == s->nents || s->sorted[k]->addr != addrs[i];
    }
    if (misses) {
        struct cg_sym_entry *fresh = malloc(misses * sizeof *fresh);
        struct cg_sym_entry **all = malloc((s->nents + misses) * sizeof *all);
        struct cg_sym_entry **blocks = realloc(s->blocks, (s->nblocks + 1) * sizeof *blocks);
        if (blocks)
            s->blocks = blocks;
        if (!fresh || !all || !blocks) {
            free(fresh);
            free(all);
            errno = saved;
            return -1;
        }
        s->blocks[s->nblocks++] = fresh;
        size_t m = 0;
        for (size_t i = 0, k = 0; i < n; i++) {
            while (k < s->nents && s->sorted[k]->addr < addrs[i])
                k++;
            if (k < s->nents && s->sorted[k]->addr == addrs[i])
                continue;
            fresh[m].addr = addrs[i];
            resolve_guarded(s, addrs[i], &fresh[m].sym, &fresh[m].lines);
            m++;
        }
        size_t a = 0, b = 0, o = 0;
        while (a < s->nents || b < m)
            all[o++] = b == m || (a < s->nents && s->sorted[a]->addr < fresh[b].addr) ? s->sorted[a++] : &fresh[b++];
        free(s->sorted);
        s->sorted = all;
        s->nents += m;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        while (s->sorted[k]->addr < addrs[i])
            k++;
        struct cg_sym_entry *e = s->sorted[k];
        /* resolved without lines, before its object was known to hold
         * instrumented code */
        if (!e->lines && s->nlined && !s->nomem) {
            errno = 0;
            Dwfl_Module *mod = CG_DW(dwfl_addrmodule)(s->dwfl, addrs[i]);
            if (!cg_sess_lost(s) && mod && wants_lines(s, mod)) {
                /* what it had stays if the session is lost meanwhile */
                struct cg_symbol sym;
                int lines;
                resolve_guarded(s, addrs[i], &sym, &lines);
                if (!s->nomem) {
                    e->sym = sym;
                    e->lines = lines;
                }
            }
        }
        out[i] = &e->sym;
    }
    errno = saved;
    return 0;
}
