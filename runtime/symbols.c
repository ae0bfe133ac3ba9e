#define _GNU_SOURCE
#include "symbols.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "util.h"

static const char unknown[] = "???";

struct entry {
    uintptr_t addr;
    int used;
    struct cg_symbol sym;
};

/* Source file names as the line table gives them -> absolute paths. */
struct path_entry {
    const char *raw;
    const char *path;
};

struct cg_syms {
    Dwfl *dwfl;
    struct path_entry *paths; /* open addressing on the raw pointer */
    size_t paths_cap, paths_n;
    struct entry *cache; /* open addressing on addr */
    size_t cache_cap, cache_n;
    char **owned; /* strings we allocated (demangled names) */
    size_t nowned, owned_cap;
};

/* Separate debug files by build-id only (/usr/lib/debug/.build-id/..). The
 * standard callback would also ask a debuginfod server when DEBUGINFOD_URLS
 * is set: a network request, possibly a long wait, in the middle of the
 * user's program exit. Only when that variable is unset is it used, for its
 * .gnu_debuglink search. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name)
{
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                          debuglink_crc, debuginfo_file_name);
    if (fd >= 0)
        return fd;
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (urls && *urls)
        return -1;
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo,
};

struct cg_syms *cg_syms_open(void)
{
    struct cg_syms *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->dwfl = dwfl_begin(&callbacks);
    if (s->dwfl) {
        /* The calling thread's view of the mappings: /proc/<pid>/maps reads
         * empty once the main thread has called pthread_exit(), and the dump
         * at exit may then run on another thread. */
        FILE *maps = fopen("/proc/thread-self/maps", "re");
        if (!maps)
            maps = fopen("/proc/self/maps", "re");
        dwfl_report_begin(s->dwfl);
        int rc = maps ? dwfl_linux_proc_maps_report(s->dwfl, maps) : -1;
        if (maps)
            fclose(maps);
        if (rc != 0 || dwfl_report_end(s->dwfl, NULL, NULL) != 0) {
            dwfl_end(s->dwfl);
            s->dwfl = NULL;
        }
    }
    s->cache_cap = 1024;
    s->cache = calloc(s->cache_cap, sizeof *s->cache);
    if (!s->cache) {
        cg_syms_close(s);
        return NULL;
    }
    return s;
}

void cg_syms_close(struct cg_syms *s)
{
    if (!s)
        return;
    if (s->dwfl)
        dwfl_end(s->dwfl);
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->paths);
    free(s->cache);
    free(s);
}

static const char *keep(struct cg_syms *s, char *str)
{
    if (s->nowned == s->owned_cap) {
        size_t cap = s->owned_cap ? s->owned_cap * 2 : 64;
        char **p = realloc(s->owned, cap * sizeof *p);
        if (!p) {
            free(str);
            return NULL;
        }
        s->owned = p;
        s->owned_cap = cap;
    }
    s->owned[s->nowned++] = str;
    return str;
}

/* C++ names through the C++ runtime's own demangler: found in the process
 * when it is a C++ program (the only kind with mangled names, in practice),
 * else loaded on demand. Not linked: C programs should not pull in
 * libstdc++ just by being profiled. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn find_demangler(void)
{
    static demangle_fn fn;
    static int tried;
    if (!tried) {
        tried = 1;
        CG_DLSYM_FN(fn, RTLD_DEFAULT, "__cxa_demangle");
        if (!fn) {
            void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
            if (!h)
                h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (h)
                CG_DLSYM_FN(fn, h, "__cxa_demangle");
        }
    }
    return fn;
}

static const char *demangle(struct cg_syms *s, const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return name;
    demangle_fn fn = find_demangler();
    if (!fn)
        return name;
    int status = -1;
    char *d = fn(name, NULL, NULL, &status);
    if (status != 0 || !d) {
        free(d);
        return name;
    }
    const char *kept = keep(s, d);
    return kept ? kept : name;
}

/* The absolute, normalised form of a line table's file name: a relative one
 * is relative to its compilation unit's DW_AT_comp_dir. */
static const char *absolute_path(struct cg_syms *s, Dwfl_Line *l, const char *raw)
{
    if ((s->paths_n + 1) * 2 > s->paths_cap) {
        size_t cap = s->paths_cap ? s->paths_cap * 2 : 256;
        struct path_entry *n = calloc(cap, sizeof *n);
        if (!n)
            return raw;
        for (size_t i = 0; i < s->paths_cap; i++) {
            if (!s->paths[i].raw)
                continue;
            size_t j = ((uintptr_t)s->paths[i].raw * 0x9e3779b97f4a7c15u) >> 20;
            while (n[j & (cap - 1)].raw)
                j++;
            n[j & (cap - 1)] = s->paths[i];
        }
        free(s->paths);
        s->paths = n;
        s->paths_cap = cap;
    }
    size_t j = ((uintptr_t)raw * 0x9e3779b97f4a7c15u) >> 20;
    struct path_entry *e;
    for (;; j++) {
        e = &s->paths[j & (s->paths_cap - 1)];
        if (!e->raw)
            break;
        if (e->raw == raw)
            return e->path;
    }
    const char *dir = NULL;
    if (raw[0] != '/') {
        Dwarf_Die *cu = dwfl_linecu(l);
        Dwarf_Attribute attr;
        dir = cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
    }
    char *p = NULL;
    if (dir ? asprintf(&p, "%s/%s", dir, raw) < 0 : !(p = strdup(raw)))
        return raw;
    cg_path_normalise(p);
    const char *kept = keep(s, p);
    if (!kept)
        return raw;
    e->raw = raw;
    e->path = kept;
    s->paths_n++;
    return kept;
}

static void source_of(struct cg_syms *s, Dwfl_Module *mod, Dwarf_Addr addr, const char **file, unsigned *line)
{
    *file = unknown;
    *line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
    if (!l)
        return;
    int lineno = 0;
    const char *src = dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL);
    if (src && *src) {
        *file = absolute_path(s, l, src);
        *line = lineno > 0 ? (unsigned)lineno : 0;
    }
}

/* ---- functions without a symbol ------------------------------------------
 * Code with no symbol (a static function of a stripped library, e.g. libc
 * without its debug symbols) is still inside one function, whose range the
 * unwind tables give (.eh_frame, through .eh_frame_hdr's sorted index). That
 * lookup is libunwind's unw_get_proc_info_by_ip(). libunwind is loaded
 * privately (RTLD_LOCAL) and only at dump time: Debian's libunwind.so.8 also
 * exports _Unwind_* functions, and linking it into a preloaded library would
 * put them in front of libgcc's for the program's C++ exceptions. */
#if CG_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define CG_STR2(x) #x
#define CG_STR(x) CG_STR2(x)

typedef int (*proc_info_fn)(unw_addr_space_t, unw_word_t, unw_proc_info_t *, void *);

static int proc_range(uintptr_t addr, uintptr_t *start)
{
    static proc_info_fn get_info;
    static unw_addr_space_t *local_as;
    static int tried;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
        if (h) {
            /* the names behind the macros, e.g. _ULx86_64_get_proc_info_by_ip */
            CG_DLSYM_FN(get_info, h, CG_STR(unw_get_proc_info_by_ip));
            local_as = dlsym(h, CG_STR(unw_local_addr_space));
        }
    }
    if (!get_info || !local_as)
        return -1;
    unw_proc_info_t pi;
    memset(&pi, 0, sizeof pi);
    if (get_info(*local_as, (unw_word_t)addr, &pi, NULL) != 0 || pi.start_ip == 0 || addr < pi.start_ip ||
        addr >= pi.end_ip)
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
    dwfl_module_getelf(mod, &bias);
    char *name = NULL;
    if (asprintf(&name, "0x%016llx", (unsigned long long)(start - bias)) < 0)
        return;
    const char *kept = keep(s, name);
    if (!kept)
        return;
    out->function = kept;
    out->fn_start = start;
    out->fn_obj_addr = start - bias;
    source_of(s, mod, out->fn_start, &out->fn_file, &out->fn_line);
}

static void resolve(struct cg_syms *s, uintptr_t addr, struct cg_symbol *out)
{
    memset(out, 0, sizeof *out);
    out->object = unknown;
    out->obj_addr = addr;
    out->fn_file = out->file = unknown;
    Dwfl_Module *mod = s->dwfl ? dwfl_addrmodule(s->dwfl, addr) : NULL;
    if (!mod)
        return;
    const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    if (path && *path)
        out->object = path; /* a full path, or a name such as [vdso] */
    Dwarf_Addr bias = 0;
    if (dwfl_module_getelf(mod, &bias))
        out->obj_addr = addr - bias;

    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    if (name && *name && (sym.st_size == 0 || off < sym.st_size)) {
        out->function = demangle(s, name);
        out->fn_start = addr - off;
        out->fn_obj_addr = out->obj_addr - off;
        source_of(s, mod, out->fn_start, &out->fn_file, &out->fn_line);
    } else {
        unnamed_function(s, mod, addr, out);
    }
    source_of(s, mod, addr, &out->file, &out->line);
}

static int cache_grow(struct cg_syms *s)
{
    size_t cap = s->cache_cap * 2;
    struct entry *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < s->cache_cap; i++) {
        if (!s->cache[i].used)
            continue;
        size_t j = (s->cache[i].addr * 0x9e3779b97f4a7c15u) >> 20;
        while (n[j & (cap - 1)].used)
            j++;
        n[j & (cap - 1)] = s->cache[i];
    }
    free(s->cache);
    s->cache = n;
    s->cache_cap = cap;
    return 0;
}

const struct cg_symbol *cg_syms_lookup(struct cg_syms *s, uintptr_t addr)
{
    static struct cg_symbol fallback;
    if ((s->cache_n + 1) * 2 > s->cache_cap && cache_grow(s) != 0) {
        resolve(s, addr, &fallback);
        return &fallback;
    }
    size_t j = (addr * 0x9e3779b97f4a7c15u) >> 20;
    for (;; j++) {
        struct entry *e = &s->cache[j & (s->cache_cap - 1)];
        if (!e->used) {
            e->used = 1;
            e->addr = addr;
            resolve(s, addr, &e->sym);
            s->cache_n++;
            return &e->sym;
        }
        if (e->addr == addr)
            return &e->sym;
    }
}
