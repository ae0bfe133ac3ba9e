/* A symbol session over libdwfl (see symsession.h and symbols.h): opened
 * over the process's objects (from /proc, or the loader's list without
 * it) and closed; the descriptors libdwfl keeps; memory running out inside
 * libdw; the strings and maps the session keeps; the objects unloaded,
 * reported offline. The names and lines of addresses are names.c's and
 * srclines.c's, the cached lookups lookup.c's. */
#define _GNU_SOURCE
#include "symsession.h"
#include "debuginfo.h"
#include "symbols.h"

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

const char cg_sess_unknown[] = "???";

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
 * has libdw's handler. The jump is the runtime's own (cpu.h,
 * cg_cpu_jump_set and cg_cpu_jump_go: registers only), not sigsetjmp's:
 * the library's own setjmp and longjmp are the wrappers of the program's
 * (nonlocal.c), and nothing here changes the signal mask. Nor the
 * compiler's __builtin_setjmp, which clang has on x86-64 but not on
 * aarch64. */
__thread cg_cpu_jump_buf *cg_sess_dw_jump;

static __attribute__((noreturn)) void dw_oom(void)
{
    if (cg_sess_dw_jump)
        cg_cpu_jump_go(*cg_sess_dw_jump);
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
int cg_sess_dwarf_guarded(struct cg_syms *s, Dwfl_Module *mod)
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
    cg_cpu_jump_go(*cg_sess_dw_jump);
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

const char *cg_sess_keep(struct cg_syms *s, char *str)
{
    if (CG_GROW(s->owned, s->owned_cap, s->nowned + 1, 64) != 0) {
        free(str);
        return NULL;
    }
    s->owned[s->nowned++] = str;
    return str;
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
    const char *kept = cg_sess_keep(s, p);
    if (!kept)
        return raw;
    e->key = raw;
    e->value = p; /* the session's own copy from now on (keep) */
    s->paths.n++;
    return kept;
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
Dwfl_Module *cg_sess_gone_module(struct cg_syms *s, uintptr_t addr, int current)
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

int cg_syms_holds_fds(const struct cg_syms *s)
{
    return s && (s->holds_fds || __atomic_load_n(&debug_fds_given, __ATOMIC_RELAXED));
}
