#define _GNU_SOURCE
#include "dump.h"
#include "sample.h"

#include <dirent.h>
#include <sys/wait.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "control.h"
#include "costs.h"
#include "filter.h"
#include "proc.h"
#include "real.h"
#include "symbols.h"
#include "thread.h"
#include "util.h"
#include "writer.h"

#ifndef CG_VERSION
#define CG_VERSION "unknown"
#endif

/* ---- call instructions -----------------------------------------------------
 * The hooks give the return address of a call; Callgrind files name a call
 * by the address of its call instruction (that is where KCachegrind draws
 * the arrow, and its line is the line of the call even when the return
 * address already starts the next line). On x86-64 the bytes before the
 * return address are decoded. Where no call instruction ends there, the
 * frame was not made by a call: it is a signal handler, "called" by the
 * kernel with libc's sigreturn trampoline as its return address; the writer
 * then shows it as called from the function it interrupted (call_pc 0). */

struct exec_ranges {
    uintptr_t (*v)[2];
    size_t n, cap;
};

static int collect_exec(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct exec_ranges *r = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (CG_GROW(r->v, r->cap, r->n + 1, 32) != 0)
            return 1;
        r->v[r->n][0] = info->dlpi_addr + ph->p_vaddr;
        r->v[r->n][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        r->n++;
    }
    return 0;
}

static int readable(const struct exec_ranges *r, uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < r->n; i++)
        if (lo >= r->v[i][0] && hi <= r->v[i][1])
            return 1;
    return 0;
}

#if defined(__x86_64__)
/* Length of an indirect call "FF /2" (without prefix) whose ModRM byte is m
 * and, if present, SIB byte is sib; 0 if m is not a call's ModRM. */
static unsigned ff2_length(unsigned char m, unsigned char sib)
{
    unsigned mod = m >> 6, reg = (m >> 3) & 7, rm = m & 7;
    if (reg != 2)
        return 0;
    if (mod == 3)
        return 2; /* call *%reg */
    unsigned len = 2;
    if (rm == 4) {
        len++; /* SIB */
        if (mod == 0 && (sib & 7) == 5)
            len += 4;
    } else if (mod == 0 && rm == 5) {
        len += 4; /* rip-relative */
    }
    if (mod == 1)
        len += 1;
    else if (mod == 2)
        len += 4;
    return len;
}
#endif

/* Address of the call instruction that returns to `site`, or 0 when there
 * is none (see above). */
static uintptr_t call_instruction(const struct exec_ranges *r, uintptr_t site, uintptr_t callee)
{
#if defined(__x86_64__)
    if (site < 16 || !readable(r, site - 8, site))
        return site - 1;
    const unsigned char *p = (const unsigned char *)site;
    int32_t rel;
    memcpy(&rel, p - 4, sizeof rel);
    int e8 = p[-5] == 0xe8;
    if (e8 && site + (uintptr_t)(intptr_t)rel == callee)
        return site - 5; /* call rel32, straight to the callee */
    for (unsigned len = 2; len <= 7; len++) {
        const unsigned char *op = p - len;
        if (op[0] != 0xff || ff2_length(op[1], len > 2 ? op[2] : 0) != len)
            continue;
        /* an optional REX prefix belongs to the instruction */
        return (op[-1] & 0xf0) == 0x40 ? site - len - 1 : site - len;
    }
    if (e8)
        return site - 5; /* call rel32 through a PLT stub or a thunk */
    return 0;
#else
    (void)r;
    (void)callee;
    return site - 1;
#endif
}

/* ---- symbol table of a snapshot -------------------------------------------- */

/* storage: what the caller frees, the entries then the symbols when
 * there is no symbol session. */
static int build_symtab(struct cg_syms *syms, const struct cg_snapshot *s, struct cg_symtab *out,
                        struct cg_symtab_entry **storage)
{
    size_t max = 3 * s->narcs + s->nselfs, n = 0;
    uintptr_t *addrs = malloc((max ? max : 1) * sizeof *addrs);
    if (!addrs)
        return -1;
    for (size_t i = 0; i < s->narcs; i++) {
        if (s->arcs[i].caller)
            addrs[n++] = s->arcs[i].caller;
        addrs[n++] = s->arcs[i].callee;
        if (s->arcs[i].call_pc)
            addrs[n++] = s->arcs[i].call_pc;
    }
    for (size_t i = 0; i < s->nselfs; i++)
        addrs[n++] = s->selfs[i].addr;
    /* The functions the hooks saw are instrumented: lines in their objects */
    if (syms)
        for (size_t i = 0; i < s->narcs; i++)
            cg_syms_want_lines(syms, s->arcs[i].callee);
    cg_sort_uintptr(addrs, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || addrs[m - 1] != addrs[i])
            addrs[m++] = addrs[i];
    /* The entries point to the session's symbols, found into the space
     * that follows the entries; without a session, to raw symbols made in
     * that same space (one or the other: pages never touched cost nothing). */
    struct cg_symtab_entry *v = malloc((m ? m : 1) * (sizeof *v + sizeof(struct cg_symbol)));
    const struct cg_symbol **found = (const struct cg_symbol **)(v + m);
    if (!v || (syms && cg_syms_lookup_sorted(syms, addrs, m, found) != 0)) {
        free(v);
        free(addrs);
        return -1;
    }
    struct cg_symbol *raw = (struct cg_symbol *)(v + m);
    for (size_t i = 0; i < m; i++) {
        v[i].addr = addrs[i];
        if (syms) {
            v[i].sym = found[i];
        } else {
            memset(&raw[i], 0, sizeof raw[i]);
            raw[i].object = raw[i].file = raw[i].fn_file = "???";
            raw[i].obj_addr = addrs[i];
            v[i].sym = &raw[i];
        }
    }
    free(addrs);
    out->v = v;
    out->n = m;
    *storage = v;
    return 0;
}

/* ---- files ---------------------------------------------------------------- */

/* A file written through a temporary file in the same directory that is
 * created exclusively and without following links, then renamed over its
 * path: no reader sees half a file, and nothing planted at either name is
 * followed. */
struct out_file {
    char tmp[CG_OPT_PATH_MAX + 160];
    int fd;
    int err;      /* the first errno value */
    size_t bytes; /* written so far */
};

static int out_open(struct out_file *o, const char *path)
{
    static unsigned counter;
    o->fd = -1;
    o->err = 0;
    o->bytes = 0;
    for (int attempt = 0; attempt < 16 && o->fd < 0; attempt++) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%u", path, (long)gettid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (o->fd < 0 && errno != EEXIST)
            return o->err = errno;
    }
    return o->fd < 0 ? (o->err = EEXIST) : 0;
}

/* cg_buf's flush: appends data to the file. */
static int out_write(void *arg, const char *data, size_t len)
{
    struct out_file *o = arg;
    for (size_t off = 0; off < len && !o->err;) {
        ssize_t w = write(o->fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->err = w < 0 ? errno : EIO;
        else
            off += (size_t)w;
    }
    o->bytes += len;
    return o->err;
}

/* Closes the file and, if all went well (ok), renames it to path; else
 * removes it. Returns 0 or an errno value (ENOMEM when only !ok). */
static int out_close(struct out_file *o, const char *path, int ok)
{
    if (close(o->fd) != 0 && !o->err)
        o->err = errno;
    if (!o->err && !ok)
        o->err = ENOMEM;
    if (!o->err && rename(o->tmp, path) != 0)
        o->err = errno;
    if (o->err)
        unlink(o->tmp);
    return o->err;
}

/* ---- state ----------------------------------------------------------------
 * Every dump, zeroing, pause and thread's last part happens under one lock,
 * taken by the thread that asks (the API, a thread ending, exit) or by the
 * service thread that serves the dump signal. A thread's tables are only
 * read, never written, by another thread (see struct cg_totals). */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned parts;       /* parts written on demand so far */
static int parts_scanned;    /* parts of an earlier image of this pid counted */
static int paused;           /* collection paused (cgprof_collect(false)) */
static int final_done;       /* the exit dump has run: nothing more */
static struct cg_syms *syms; /* reused while no object is loaded or unloaded */
static unsigned long long syms_adds, syms_subs;
static struct cg_buf last_files; /* files of the latest dump, for the status */

/* The real sigaction and pthread_create (real.h), resolved once, in the
 * process that loaded the runtime: a forked child restarts the service, and
 * a crash handler restores a default action, without calling dlsym(). */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct dump {
    const char *trigger;
    unsigned part;      /* header part: number */
    int part_in_name;   /* name the file <prefix>.<pid>.<part>-NN */
    struct exec_ranges exec;
    char clock_desc[320];
    unsigned failed;
    char first_failure[CG_OPT_PATH_MAX + 64];
    int first_errno;
    unsigned coalesced; /* signals served by this one dump */
};

static int count_objects(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    unsigned long long *v = data;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

/* The symbol session, opened again when objects were loaded or unloaded. */
static struct cg_syms *symbols(void)
{
    unsigned long long v[2] = { 0, 0 };
    dl_iterate_phdr(count_objects, v);
    if (syms && (v[0] != syms_adds || v[1] != syms_subs)) {
        cg_syms_close(syms);
        syms = NULL;
    }
    if (!syms) {
        syms = cg_syms_open();
        syms_adds = v[0];
        syms_subs = v[1];
    }
    return syms;
}

/* ---- file names ------------------------------------------------------------- */

/* The pid the files are named after: this process's, or, in the copy that
 * writes the profile of a crashed process, the crashed one's. */
static long crashed_pid;

static long names_pid(void)
{
    return crashed_pid ? crashed_pid : (long)getpid();
}

/* The prefix with %p expanded and made absolute against the start-up
 * directory; *with_pid says whether it already names the pid. */
static int prefix_of(char *dst, size_t size, int *with_pid)
{
    char prefix[CG_OPT_PATH_MAX];
    if (cg_expand_path(cg_opts.out, names_pid(), prefix, sizeof prefix) != 0)
        return -1;
    *with_pid = strstr(cg_opts.out, "%p") != NULL;
    const char *dir = prefix[0] == '/' || !cg_proc_cwd()[0] ? "" : cg_proc_cwd();
    int n = snprintf(dst, size, "%s%s%s", dir, *dir ? "/" : "", prefix);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Callgrind's names: <prefix>.<pid>-<NN> for a run without dumps on demand,
 * <prefix>.<pid>.<part>-<NN> for each part when there are (with %p in the
 * prefix, the pid is where %p says instead). */
static int file_name(char *dst, size_t size, unsigned thread, unsigned part, int part_in_name)
{
    char prefix[CG_OPT_PATH_MAX + 64];
    int with_pid;
    if (prefix_of(prefix, sizeof prefix, &with_pid) != 0)
        return -1;
    char pid[24] = "";
    if (!with_pid)
        snprintf(pid, sizeof pid, ".%ld", names_pid());
    char p[24] = "";
    if (part_in_name)
        snprintf(p, sizeof p, ".%u", part);
    int n = snprintf(dst, size, "%s%s%s-%02u", prefix, pid, p, thread);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* A program started by exec() in this process has the pid of the image that
 * ran before it and may have written parts under it: number after them. */
static void scan_earlier_parts(void)
{
    char prefix[CG_OPT_PATH_MAX + 64];
    int with_pid;
    if (parts_scanned || prefix_of(prefix, sizeof prefix, &with_pid) != 0)
        return;
    parts_scanned = 1;
    char *slash = strrchr(prefix, '/');
    if (!slash)
        return;
    *slash = 0;
    char base[CG_OPT_PATH_MAX + 64];
    if (with_pid)
        snprintf(base, sizeof base, "%s.", slash + 1);
    else
        snprintf(base, sizeof base, "%s.%ld.", slash + 1, names_pid());
    DIR *d = opendir(*prefix ? prefix : "/");
    if (!d)
        return;
    size_t blen = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, blen) != 0)
            continue;
        char *end;
        unsigned long n = strtoul(e->d_name + blen, &end, 10);
        if (end != e->d_name + blen && *end == '-' && n > parts && n < 1000000)
            parts = (unsigned)n;
    }
    closedir(d);
}

/* ---- one thread's part ------------------------------------------------------ */

/* /proc's name of a thread, when the program did not name it for cgprof. */
static void thread_comm(const struct cg_thread *t, char *dst, size_t size)
{
    dst[0] = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)t->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, dst, size - 1);
    close(fd);
    if (n <= 0) {
        dst[0] = 0;
        return;
    }
    dst[n] = 0;
    dst[strcspn(dst, "\n")] = 0;
}

/* Writes one thread's part (or, as thread 0, the merged parts of threads
 * that ended, or the total) to its file, or to own_path when not NULL.
 * snap's call_pc are filled in here. */
static void write_snapshot(struct dump *d, unsigned number, const char *name, struct cg_snapshot *s,
                           const char *own_path)
{
    struct cg_snapshot snap = *s;
    for (size_t i = 0; i < snap.narcs; i++)
        /* call_pc 0: a signal handler's frame, no call; an inlined call has
         * none either, call_pc is already its place */
        if (snap.arcs[i].site && snap.arcs[i].call_pc && !snap.arcs[i].inlined)
            snap.arcs[i].call_pc = call_instruction(&d->exec, snap.arcs[i].site, snap.arcs[i].callee);

    struct cg_symtab symtab;
    struct cg_symtab_entry *storage = NULL;
    struct cg_buf buf;
    cg_buf_init(&buf);
    struct out_file file;
    file.bytes = 0;
    char path[CG_OPT_PATH_MAX + 128];
    path[0] = 0;
    int err = ENOMEM;
    /* One session for both: the symbol table points into it, and asking
     * symbols() again after the filters' names (which may load libunwind)
     * would open a new one. */
    struct cg_syms *session = symbols();
    const char *filter_desc[2];
    int nfilter = cg_filter_desc(session, filter_desc, 2);
    if (build_symtab(session, &snap, &symtab, &storage) == 0) {
        char extra[10][160];
        const char *desc[13];
        int nd = 0;
        if (name && name[0])
            snprintf(extra[nd++], sizeof extra[0], "Thread name: %.100s", name);
        if (d->coalesced > 1)
            snprintf(extra[nd++], sizeof extra[0], "Requests: %u signals served by this one dump", d->coalesced);
        if (snap.depth)
            snprintf(extra[nd++], sizeof extra[0], "Calls in progress: %u (counted up to the dump)", snap.depth);
        if (snap.continued)
            snprintf(extra[nd++], sizeof extra[0],
                     "Calls continued: %llu (started before this part and counted in an earlier one: calls=0)",
                     (unsigned long long)snap.continued);
        if (snap.jumped)
            snprintf(extra[nd++], sizeof extra[0],
                     "Frames ended by longjmp or exception: %llu (no exit hook; ended when the jump or the "
                     "unwinding left them)",
                     (unsigned long long)snap.jumped);
        if (snap.left)
            snprintf(extra[nd++], sizeof extra[0],
                     "Frames left without exit: %llu (repaired: found gone by a later hook, counted as ending then)",
                     (unsigned long long)snap.left);
        if (snap.unmatched_exits)
            snprintf(extra[nd++], sizeof extra[0], "Unmatched exits: %llu (dropped)",
                     (unsigned long long)snap.unmatched_exits);
        if (snap.lost)
            snprintf(extra[nd++], sizeof extra[0],
                     "Lost: %llu calls not recorded (out of memory, or signal handlers nested too deep)",
                     (unsigned long long)snap.lost);
        if (paused)
            snprintf(extra[nd++], sizeof extra[0], "Collection: paused since a cgprof_collect(false)");
        for (int i = 0; i < nd; i++)
            desc[i] = extra[i];
        for (int i = 0; i < nfilter; i++)
            desc[nd++] = filter_desc[i];
        desc[nd] = NULL;
        struct cg_part_info info = {
            .creator = "cgprof-" CG_VERSION,
            .pid = names_pid(),
            .thread = number,
            .part = d->part,
            .cmd = cg_proc_cmdline(),
            .trigger = d->trigger,
            .clock = d->clock_desc,
            .event = cg_sampling ? "CPU time, sampled (nanoseconds)" : NULL,
            .extra_desc = desc,
        };
        int named = own_path ? (snprintf(path, sizeof path, "%s", own_path), 0)
                             : file_name(path, sizeof path, number, d->part, d->part_in_name);
        if (named != 0) {
            snprintf(path, sizeof path, "%s", cg_opts.out);
            err = ENAMETOOLONG;
        } else if ((err = out_open(&file, path)) == 0) {
            /* written in pieces of 256 kB: a 100,000-arc part is 6 MB of
             * text, fresh pages each a fault */
            buf.flush = out_write;
            buf.flush_arg = &file;
            buf.data = malloc(256 * 1024);
            buf.cap = buf.data ? 256 * 1024 : 0;
            int ok = cg_write_part(&info, &snap, &symtab, &buf) == 0;
            if (ok && buf.len)
                out_write(&file, buf.data, buf.len);
            err = out_close(&file, path, ok);
        }
    }
    if (err) {
        if (!d->failed++) {
            snprintf(d->first_failure, sizeof d->first_failure, "%s", path[0] ? path : "(out of memory)");
            d->first_errno = err;
        }
    } else {
        if (last_files.len)
            cg_buf_putc(&last_files, ' ');
        for (const char *p = path; *p; p++)
            if (*p == ' ')
                cg_buf_puts(&last_files, "\\x20");
            else
                cg_buf_putc(&last_files, *p);
        if (cg_opts.verbose)
            cg_warn("wrote %s (thread %u, part %u, %zu bytes)", path, number, d->part, file.bytes);
    }
    cg_buf_free(&buf);
    free(storage);
}

/* ---- the total of all threads -------------------------------------------------
 * CGPROF_TOTAL=1: every part written (each thread's, at every dump, and the
 * last part of each thread that ends, merged or not) is also added into one
 * sum, written at exit (and before an exec) as one more file: the whole run
 * in one part, for callgrind_annotate, which reads one file. The parts are
 * summed as they are made, not read back from their files: those may have
 * been moved or removed meanwhile, and re-reading would need a parser. Its
 * name (cg_total_pattern) keeps it out of what KCachegrind loads together
 * for the run (<run>.* and <run>-*: libcore/tracedata.cpp,
 * TraceData::load), where it would count everything twice; and out of
 * callgrind.out.* for the default prefix, which is how KCachegrind picks a
 * run in a directory and how scripts glob Callgrind's files. */

static struct cg_merged total;
static int total_failed;        /* a part could not be added: no total */
/* The repairs in all parts written (whatever CGPROF_TOTAL says), for the
 * warning at the end of the run. */
static uint64_t run_left, run_unmatched, run_lost;
static unsigned total_ended;    /* threads whose last part was added */
static uint64_t total_unfinished; /* calls in progress at those last parts */

static void total_add(struct cg_snapshot *part, const struct cg_thread *t)
{
    run_left += part->left;
    run_unmatched += part->unmatched_exits;
    run_lost += part->lost;
    if (!cg_opts.total || total_failed)
        return;
    if (cg_merged_take(&total, part) != 0) {
        /* A sum that misses a part would claim to be the run's: none. */
        total_failed = 1;
        cg_merged_free(&total);
        cg_warn("out of memory: the total of all threads will not be written");
        return;
    }
    if (__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE)) {
        total_ended++;
        total_unfinished += part->depth;
    }
}

/* The total's file: the CGPROF_OUT pattern made the total's, expanded and
 * made absolute against the start-up directory, as prefix_of() does. */
static int total_path(char *dst, size_t size)
{
    char pattern[CG_OPT_PATH_MAX + 16], name[CG_OPT_PATH_MAX + 64];
    if (cg_total_pattern(cg_opts.out, pattern, sizeof pattern) != 0 ||
        cg_expand_path(pattern, names_pid(), name, sizeof name) != 0)
        return -1;
    const char *dir = name[0] == '/' || !cg_proc_cwd()[0] ? "" : cg_proc_cwd();
    int n = snprintf(dst, size, "%s%s%s", dir, *dir ? "/" : "", name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Writes the total as it stands. Each thread's latest part has just been
 * added (the caller dumped every thread): the calls in progress are those
 * of the threads still running at this dump, plus those left unfinished by
 * threads that ended. Lock held. */
static void write_total(struct dump *d)
{
    if (!cg_opts.total || total_failed || !total.threads)
        return;
    unsigned threads = total_ended;
    uint64_t unfinished = total_unfinished;
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (!__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE)) {
            threads++;
            unfinished += t->base.depth;
        }
    total.snap.depth = (uint32_t)(unfinished > UINT32_MAX ? UINT32_MAX : unfinished);
    char name[160], path[CG_OPT_PATH_MAX + 128];
    snprintf(name, sizeof name, "total of %u thread%s, %u part%s summed (CGPROF_TOTAL)", threads,
             threads == 1 ? "" : "s", total.threads, total.threads == 1 ? "" : "s");
    if (total_path(path, sizeof path) != 0) {
        if (!d->failed++) {
            snprintf(d->first_failure, sizeof d->first_failure, "%s (the total)", cg_opts.out);
            d->first_errno = ENAMETOOLONG;
        }
        return;
    }
    write_snapshot(d, 0, name, &total.snap, path);
}

/* A forked child counts from the fork: so does its total. */
static void total_forget(void)
{
    cg_merged_free(&total);
    total_failed = 0;
    total_ended = 0;
    total_unfinished = 0;
    run_left = run_unmatched = run_lost = 0;
}

/* At the end of the run, one line when a part holds a repair, saying what
 * it means for the numbers shown (README, "Repairs"); nothing on a clean
 * run. */
static void warn_repairs(void)
{
    if (!cg_opts.repair_warning || (!run_left && !run_unmatched && !run_lost))
        return;
    char what[3][200];
    int n = 0;
    if (run_left)
        snprintf(what[n++], sizeof what[0],
                 "%llu frame%s found left without exit (each counted as ending when found: calls made "
                 "meanwhile may be shown under it)",
                 (unsigned long long)run_left, run_left == 1 ? "" : "s");
    if (run_unmatched)
        snprintf(what[n++], sizeof what[0], "%llu exit%s that matched no frame (dropped)",
                 (unsigned long long)run_unmatched, run_unmatched == 1 ? "" : "s");
    if (run_lost)
        snprintf(what[n++], sizeof what[0], "%llu call%s not recorded (counts that much too low)",
                 (unsigned long long)run_lost, run_lost == 1 ? "" : "s");
    cg_warn("warning: the profile holds repairs: %s%s%s%s%s; see its desc: lines and the README, \"Repairs\"",
            what[0], n > 1 ? ", " : "", n > 1 ? what[1] : "", n > 2 ? ", " : "", n > 2 ? what[2] : "");
}

/* Writes part `cur - t->base` of thread t, then makes cur the base (cur is
 * left with arrays to reuse, not the same totals). */
static void write_part(struct dump *d, struct cg_thread *t, struct cg_totals *cur)
{
    struct cg_snapshot snap;
    if (cg_totals_part(&t->costs, cur, &t->base, &snap) != 0) {
        d->failed++;
        return;
    }
    char comm[64];
    const char *name = t->name;
    if (!name[0] && !t->finished) {
        thread_comm(t, comm, sizeof comm);
        name = comm;
    }
    write_snapshot(d, t->number, name, &snap, NULL);
    total_add(&snap, t);
    /* Reported, or lost for good: either way the next part starts here.
     * cur becomes the base, and the old base's arrays cur's, for the next
     * reading (a copy was 3 MB of fresh pages for a 100,000-arc thread). */
    struct cg_totals old = t->base;
    t->base = *cur;
    *cur = old;
    cg_snapshot_free(&snap);
}

/* CGPROF_THREAD_EXIT=merge: the parts of threads that ended since the last
 * dump, summed, written as thread 0 with every dump. */
static struct cg_merged merged;

static void write_merged(struct dump *d)
{
    if (!merged.threads)
        return;
    char name[96];
    snprintf(name, sizeof name, "%u threads that ended, merged (CGPROF_THREAD_EXIT=merge)", merged.threads);
    write_snapshot(d, 0, name, &merged.snap, NULL);
    cg_merged_free(&merged);
}

/* The totals a part of t is taken from: now, or the moment collection was
 * paused, or the moment the thread ended. */
static int current_totals(struct cg_thread *t, struct cg_totals *out)
{
    if (paused)
        return cg_totals_copy(out, &t->paused);
    int finished = __atomic_load_n(&t->finished, __ATOMIC_ACQUIRE);
    return cg_costs_totals(&t->costs, finished ? t->t_end : CG_NOW, out);
}

static void dump_begin(struct dump *d, const char *trigger, unsigned part, int part_in_name)
{
    memset(d, 0, sizeof *d);
    d->trigger = trigger;
    d->part = part;
    d->part_in_name = part_in_name;
    if (cg_sampling)
        snprintf(d->clock_desc, sizeof d->clock_desc,
                 "sampled: each thread's CPU time (CLOCK_THREAD_CPUTIME_ID timer) every %llu ns; calls are "
                 "exact, times are samples x period; calls into uninstrumented code (seen by sampling) "
                 "count visits, a lower bound", (unsigned long long)cg_sample_period_ns());
    else if (cg_clock_use_tsc)
        snprintf(d->clock_desc, sizeof d->clock_desc,
                 "invariant TSC at %.2f MHz, calibrated at start-up against CLOCK_MONOTONIC", cg_clock_tsc_mhz());
    else
        snprintf(d->clock_desc, sizeof d->clock_desc, "clock_gettime(CLOCK_MONOTONIC)");
    dl_iterate_phdr(collect_exec, &d->exec);
    cg_buf_free(&last_files);
}

/* Files that could not be written: said once, when it first happens. The
 * next ones most likely fail the same way, and a program whose threads end
 * by the thousand must not print a line each. */
static int failure_said;

static int dump_end(struct dump *d)
{
    if (d->failed && !failure_said) {
        failure_said = 1;
        cg_warn("could not write profile file %s: %s (CGPROF_OUT='%s' sets where they go; "
                "no more such messages)",
                d->first_failure, strerror(d->first_errno), cg_opts.out);
    }
    free(d->exec.v);
    return d->failed ? -1 : 0;
}

/* Every live thread's part. Lock held. */
static int dump_all(const char *trigger, unsigned coalesced)
{
    scan_earlier_parts();
    struct dump d;
    dump_begin(&d, trigger, parts + 1, 1);
    d.coalesced = coalesced;
    struct cg_totals cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        if (__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE))
            continue; /* being written by its own exit */
        if (current_totals(t, &cur) == 0)
            write_part(&d, t, &cur);
        else
            d.failed++;
    }
    cg_totals_free(&cur);
    write_merged(&d);
    parts++;
    return dump_end(&d);
}

/* ---- what the runtime offers ------------------------------------------------ */

static void enter(struct cg_thread **self)
{
    *self = cg_thread_enter_runtime();
    /* From here until leave(), no thread frees a table we may read. */
    __atomic_fetch_add(&cg_readers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&lock);
}

static void leave(struct cg_thread *self)
{
    pthread_mutex_unlock(&lock);
    __atomic_fetch_sub(&cg_readers, 1, __ATOMIC_SEQ_CST);
    cg_thread_leave_runtime(self);
}

static int service_started;

/* The program's threads, as the status file reports them: those the kernel
 * lists, less the service thread (the runtime's registry knows only the
 * threads that have made a hook). */
static unsigned live_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    unsigned n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n > 0 && service_started ? n - 1 : n;
}

static void update_status(int done_one)
{
    cg_control_status(live_threads(), parts, !paused, last_files.data ? last_files.data : "", done_one);
}

int cg_dump_now(const char *reason)
{
    struct cg_thread *self;
    enter(&self);
    int rc = -1;
    if (!final_done) {
        char trigger[256];
        snprintf(trigger, sizeof trigger, "Client request: %s", reason && *reason ? reason : "cgprof_dump");
        rc = dump_all(trigger, 0);
        update_status(0);
    }
    leave(self);
    return rc;
}

void cg_dump_exec(const char *what)
{
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        char trigger[CG_OPT_PATH_MAX + 32];
        snprintf(trigger, sizeof trigger, "Exec of %s", what ? what : "?");
        dump_all(trigger, 0);
        /* The image goes: its total too (a new image with the runtime
         * writes its own over it, under the same pid). Listed with the
         * exec dump's files, which dump_begin() would forget. */
        struct cg_buf files = last_files;
        cg_buf_init(&last_files);
        struct dump d;
        dump_begin(&d, trigger, parts, 1);
        write_total(&d);
        dump_end(&d);
        if (last_files.len) {
            if (files.len)
                cg_buf_putc(&files, ' ');
            cg_buf_putn(&files, last_files.data, last_files.len);
        }
        cg_buf_free(&last_files);
        last_files = files;
        update_status(0);
    }
    leave(self);
}

static void zero_locked(void)
{
    struct cg_totals cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (!__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE) && current_totals(t, &cur) == 0)
            cg_totals_copy(&t->base, &cur);
    cg_totals_free(&cur);
}

void cg_dump_zero(void)
{
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        zero_locked();
        update_status(0);
    }
    leave(self);
}

/* Pausing reads every thread's totals; resuming adds what happened since to
 * each base. The hooks go on keeping the stacks right meanwhile. */
static void collect_locked(int on)
{
    if (on == !paused)
        return;
    struct cg_totals cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        if (__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE))
            continue;
        if (cg_costs_totals(&t->costs, CG_NOW, &cur) != 0)
            continue;
        if (on) {
            cg_totals_skip(&t->base, &cur, &t->paused);
            cg_totals_free(&t->paused);
        } else {
            cg_totals_copy(&t->paused, &cur);
        }
    }
    cg_totals_free(&cur);
    paused = !on;
}

void cg_dump_collect(int on)
{
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        collect_locked(on);
        update_status(0);
    }
    leave(self);
}

/* The last part of a thread that ends, written by that thread. */
void cg_dump_thread_exit(struct cg_thread *t)
{
    int saved = errno;
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        struct cg_totals cur;
        memset(&cur, 0, sizeof cur);
        if (cg_opts.thread_exit == CG_THREAD_EXIT_MERGE) {
            struct cg_snapshot snap;
            if (current_totals(t, &cur) == 0 && cg_totals_part(&t->costs, &cur, &t->base, &snap) == 0) {
                if (cg_merged_add(&merged, &snap) != 0)
                    cg_warn("out of memory: the profile of thread %u is lost", t->number);
                total_add(&snap, t);
                cg_snapshot_free(&snap);
            }
        } else {
            scan_earlier_parts();
            struct dump d;
            dump_begin(&d, "Thread exit", parts + 1, parts > 0);
            if (current_totals(t, &cur) == 0)
                write_part(&d, t, &cur);
            dump_end(&d);
        }
        cg_totals_free(&cur);
        cg_thread_release(t);
        update_status(0);
    }
    leave(self);
    errno = saved;
}

void cg_dump_final(const char *trigger)
{
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        final_done = 1;
        scan_earlier_parts();
        struct dump d;
        dump_begin(&d, trigger, parts + 1, parts > 0);
        struct cg_totals cur;
        memset(&cur, 0, sizeof cur);
        for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
            if (current_totals(t, &cur) == 0)
                write_part(&d, t, &cur);
        cg_totals_free(&cur);
        write_merged(&d);
        write_total(&d);
        dump_end(&d);
        warn_repairs();
        cg_control_remove();
        cg_syms_close(syms);
        syms = NULL;
    }
    leave(self);
}

/* ---- crashes ------------------------------------------------------------------
 * CGPROF_CRASH=1: on a fatal signal the handler forks a copy of the process
 * without running any atfork handler (_Fork: async-signal-safe), whose only
 * thread is the crashed one and whose tables no thread changes any more.
 * The copy writes the profile under the crashed pid, without taking the
 * dump lock (another thread may have held it); it may still block (malloc's
 * lock held by a thread that no longer exists in the copy), so the crashed
 * process waits for it 5 s at most and kills it. Then the crash proceeds
 * with the default action: same signal, same exit status, same core dump. */

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static int crashing;

static void crash_dump(int sig, const siginfo_t *info)
{
    char name[24], trigger[128];
    if (sig == SIGSEGV || sig == SIGBUS)
        snprintf(trigger, sizeof trigger, "Crash: SIG%s at address %p", cg_signal_name(sig, name, sizeof name),
                 info ? info->si_addr : NULL);
    else
        snprintf(trigger, sizeof trigger, "Crash: SIG%s", cg_signal_name(sig, name, sizeof name));
    __atomic_fetch_add(&cg_readers, 1, __ATOMIC_SEQ_CST);
    cg_thread_mark_internal();
    scan_earlier_parts();
    struct dump d;
    dump_begin(&d, trigger, parts + 1, parts > 0);
    struct cg_totals cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (current_totals(t, &cur) == 0)
            write_part(&d, t, &cur);
    write_merged(&d);
    write_total(&d);
    dump_end(&d);
}

static void on_crash(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    int saved = errno;
    if (!__atomic_exchange_n(&crashing, 1, __ATOMIC_ACQ_REL) && !final_done) {
        pid_t me = getpid();
        pid_t child = _Fork();
        if (child == 0) {
            crashed_pid = me;
            crash_dump(sig, info);
            _exit(0);
        }
        if (child > 0) {
            int status;
            for (int i = 0; i < 500 && waitpid(child, &status, WNOHANG) == 0; i++) {
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
            if (waitpid(child, &status, WNOHANG) == 0) {
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
            }
        }
    }
    /* The default action from now on. A fault happens again when the
     * handler returns (and dumps core with its real context); a signal that
     * was sent is sent again, and arrives when the handler returns. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (real_sigaction)
        real_sigaction(sig, &dfl, NULL);
    if (!info || info->si_code <= 0 || sig == SIGABRT)
        raise(sig);
    errno = saved;
}

static void install_crash_handlers(void)
{
    for (unsigned i = 0; i < CG_ARRAY_SIZE(crash_signals); i++) {
        struct sigaction cur, sa;
        if (real_sigaction(crash_signals[i], NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
            continue; /* the program's (or another library's) action stays */
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        real_sigaction(crash_signals[i], &sa, NULL);
    }
}

/* ---- objects unloaded ---------------------------------------------------------
 * Before dlclose() unmaps an object, the addresses the tables hold in its
 * range are noted as its own: the range may hold another object later. The
 * tables are only read. */

static void add_addr(uintptr_t **v, size_t *n, size_t *cap, uintptr_t a, uintptr_t lo, uintptr_t hi)
{
    if (a < lo || a >= hi)
        return;
    if (CG_GROW(*v, *cap, *n + 1, 256) != 0)
        return;
    (*v)[(*n)++] = a;
}

void cg_dump_note_unload(const void *handle)
{
    char *path;
    uintptr_t bias, lo, hi;
    if (cg_syms_object_of(handle, &path, &bias, &lo, &hi) != 0)
        return;
    uintptr_t *v = NULL;
    size_t n = 0, cap = 0;
    struct cg_thread *self;
    enter(&self);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        const struct cg_costs *c = &t->costs;
        uint32_t narcs = __atomic_load_n(&c->narcs, __ATOMIC_ACQUIRE);
        uint32_t nselfs = __atomic_load_n(&c->nselfs, __ATOMIC_ACQUIRE);
        const struct cg_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_SEQ_CST);
        const struct cg_self *selfs = __atomic_load_n(&c->selfs, __ATOMIC_SEQ_CST);
        for (uint32_t i = 1; i < narcs; i++) {
            add_addr(&v, &n, &cap, arcs[i].caller, lo, hi);
            add_addr(&v, &n, &cap, arcs[i].site, lo, hi);
            add_addr(&v, &n, &cap, arcs[i].callee, lo, hi);
            if (arcs[i].site)
                add_addr(&v, &n, &cap, arcs[i].site - 1, lo, hi);
        }
        for (uint32_t i = 1; i < nselfs; i++) {
            add_addr(&v, &n, &cap, selfs[i].fn, lo, hi);
            add_addr(&v, &n, &cap, selfs[i].addr, lo, hi);
        }
    }
    /* Threads that ended live on only in these sums */
    const struct cg_snapshot *sums[] = { &total.snap, &merged.snap };
    for (unsigned k = 0; k < CG_ARRAY_SIZE(sums); k++) {
        for (size_t i = 0; i < sums[k]->narcs; i++) {
            const struct cg_snap_arc *a = &sums[k]->arcs[i];
            add_addr(&v, &n, &cap, a->caller, lo, hi);
            add_addr(&v, &n, &cap, a->site, lo, hi);
            add_addr(&v, &n, &cap, a->callee, lo, hi);
            if (a->site)
                add_addr(&v, &n, &cap, a->site - 1, lo, hi);
        }
        for (size_t i = 0; i < sums[k]->nselfs; i++) {
            add_addr(&v, &n, &cap, sums[k]->selfs[i].fn, lo, hi);
            add_addr(&v, &n, &cap, sums[k]->selfs[i].addr, lo, hi);
        }
    }
    leave(self);
    cg_sort_uintptr(v, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    cg_syms_note_unload(path, bias, lo, hi, v, m);
}

/* ---- the dump signal -------------------------------------------------------
 * The handler only posts a semaphore (async-signal-safe, no file
 * descriptor the program could close under us); the service thread does the
 * work. Signals that arrive while a dump is being written are served by the
 * next dump together: its files say how many (desc: Requests). */

static sem_t wakeup;
static int service_stop;
static pthread_t service_thread;
static pid_t service_tid;
static int signal_in_use; /* our handler is installed for cg_opts.signal */

static void on_dump_signal(int sig)
{
    (void)sig;
    int saved = errno;
    sem_post(&wakeup);
    errno = saved;
}

static void serve(unsigned signals)
{
    char cmd[512], trigger[600];
    int kind = cg_control_take_command(cmd, sizeof cmd);
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        switch (kind) {
        case CG_CONTROL_ZERO:
            zero_locked();
            break;
        case CG_CONTROL_COLLECT_ON:
        case CG_CONTROL_COLLECT_OFF:
            collect_locked(kind == CG_CONTROL_COLLECT_ON);
            break;
        case CG_CONTROL_DUMP:
            snprintf(trigger, sizeof trigger, "cgprof-control: %s", cmd[0] ? cmd : "dump");
            dump_all(trigger, signals);
            break;
        default: {
            char name[24];
            snprintf(trigger, sizeof trigger, "Signal SIG%s",
                     cg_signal_name(cg_opts.signal, name, sizeof name));
            dump_all(trigger, signals);
            break;
        }
        }
        update_status(1);
    }
    leave(self);
}

static void *service(void *arg)
{
    (void)arg;
    cg_thread_mark_internal();
    __atomic_store_n(&service_tid, gettid(), __ATOMIC_RELEASE);
    unsigned shown = 0;
    for (;;) {
        /* Once a second without a request, the status file follows the
         * number of the program's threads, for cgprof-control's listing. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (sem_timedwait(&wakeup, &ts) != 0) {
            if (errno == ETIMEDOUT && !__atomic_load_n(&service_stop, __ATOMIC_ACQUIRE)) {
                unsigned n = live_threads();
                if (n != shown) {
                    struct cg_thread *self;
                    enter(&self);
                    if (!final_done)
                        update_status(0);
                    leave(self);
                    shown = n;
                }
            }
            continue;
        }
        if (__atomic_load_n(&service_stop, __ATOMIC_ACQUIRE))
            return NULL;
        unsigned n = 1;
        while (sem_trywait(&wakeup) == 0)
            n++;
        serve(n);
    }
}

/* Whether a thread of this process other than the caller and the service
 * thread is still running (zombies do not count: a main thread that called
 * pthread_exit() stays listed as one). */
static int other_threads_alive(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 1; /* cannot tell: keep the service */
    pid_t self = gettid(), svc = __atomic_load_n(&service_tid, __ATOMIC_ACQUIRE);
    int alive = 0;
    struct dirent *e;
    while (!alive && (e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
        if (tid <= 0 || tid == self || tid == svc)
            continue;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* gone meanwhile */
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = 0;
        const char *paren = strrchr(buf, ')');
        char state = paren && paren[1] == ' ' ? paren[2] : 'R';
        alive = state != 'Z' && state != 'X';
    }
    closedir(d);
    return alive;
}

/* glibc ends the process when its last thread ends, counting ours: when the
 * last thread of the program ends (main having called pthread_exit), the
 * service thread must be gone first, or the process would never exit. */
void cg_dump_thread_gone(void)
{
    if (!__atomic_load_n(&service_started, __ATOMIC_ACQUIRE) || other_threads_alive())
        return;
    int saved = errno;
    if (!__atomic_exchange_n(&service_stop, 1, __ATOMIC_ACQ_REL)) {
        sem_post(&wakeup);
        pthread_join(service_thread, NULL);
        __atomic_store_n(&service_started, 0, __ATOMIC_RELEASE);
    }
    errno = saved;
}


/* Starts the service thread; install: also install the signal handler (a
 * forked child inherits it). Returns whether the thread runs. */
static int start_thread(void)
{
    if (sem_init(&wakeup, 0, 0) != 0)
        return 0;
    /* The service thread takes no signal of the program's: they must keep
     * going to the program's own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = real_create(&service_thread, NULL, service, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        cg_warn("cannot start the thread that serves dump requests (%s); no dumps by signal", strerror(rc));
        return 0;
    }
    service_started = 1;
    return 1;
}

void cg_dump_start_service(void)
{
    if (service_started)
        return;
    real_sigaction = cg_real_sigaction();
    real_create = cg_real_pthread_create();
    if (!real_sigaction || !real_create)
        return;
    if (cg_opts.crash)
        install_crash_handlers();
    if (cg_opts.signal == 0)
        return;
    /* An action already set for the signal (inherited SIG_IGN, another
     * library's handler) is not taken over: step aside as when the program
     * sets one later. */
    struct sigaction cur;
    if (real_sigaction(cg_opts.signal, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL) {
        char name[24];
        cg_warn("SIG%s already has an action in this process: cgprof leaves it alone and does not dump on it "
                "(CGPROF_SIGNAL chooses another signal)",
                cg_signal_name(cg_opts.signal, name, sizeof name));
        if (!start_thread())
            return;
        cg_control_init(0);
        update_status(0);
        return;
    }
    if (!start_thread())
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (real_sigaction(cg_opts.signal, &sa, NULL) == 0)
        signal_in_use = 1;
    cg_control_init(signal_in_use ? cg_opts.signal : 0);
    update_status(0);
}

int cg_dump_signal_claimed(int sig)
{
    if (!signal_in_use || sig != cg_opts.signal)
        return 0;
    signal_in_use = 0;
    char name[24];
    cg_warn("the program sets its own action for SIG%s: cgprof steps aside and no longer dumps on it "
            "(CGPROF_SIGNAL chooses another signal)",
            cg_signal_name(sig, name, sizeof name));
    cg_control_set_signal(0);
    return 1;
}

/* ---- fork ------------------------------------------------------------------
 * No dump may be half done in the child, whose only thread is the one that
 * forked: fork waits for the lock. The child gets a service thread of its
 * own (a daemon forks and its child is the server) and its own control
 * files; it inherits the signal handler. */

static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
    pthread_mutex_unlock(&lock);
    cg_proc_forked();
    int had_service = service_started, had_signal = signal_in_use;
    service_started = 0;
    service_stop = 0;
    service_tid = 0;
    signal_in_use = 0;
    parts = 0;
    parts_scanned = 0;
    paused = 0;
    syms = NULL; /* its memory is the parent's copy: leak it, do not close it */
    total_forget();
    cg_merged_free(&merged); /* the parent's ended threads are the parent's */
    cg_buf_init(&last_files);
    cg_control_forget();
    if (had_service && !final_done && start_thread()) {
        signal_in_use = had_signal;
        cg_control_init(signal_in_use ? cg_opts.signal : 0);
        update_status(0);
    }
}

int cg_dump_init(void)
{
    return pthread_atfork(fork_prepare, fork_parent, fork_child);
}
