#define _GNU_SOURCE
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "costs.h"
#include "runtime.h"
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
        if (r->n == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 32;
            void *p = realloc(r->v, cap * sizeof *r->v);
            if (!p)
                return 1;
            r->v = p;
            r->cap = cap;
        }
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

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

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
    qsort(addrs, n, sizeof *addrs, cmp_addr);
    struct cg_symtab_entry *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        free(addrs);
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && v[m - 1].addr == addrs[i])
            continue;
        v[m].addr = addrs[i];
        if (syms) {
            v[m].sym = *cg_syms_lookup(syms, addrs[i]);
        } else {
            memset(&v[m].sym, 0, sizeof v[m].sym);
            v[m].sym.object = v[m].sym.file = v[m].sym.fn_file = "???";
            v[m].sym.obj_addr = addrs[i];
        }
        m++;
    }
    free(addrs);
    out->v = v;
    out->n = m;
    *storage = v;
    return 0;
}

/* ---- files ---------------------------------------------------------------- */

/* Writes data to path through a temporary file in the same directory that is
 * created exclusively and without following links, then renamed over path:
 * no reader sees half a file, and nothing planted at either name is
 * followed. Returns 0 or an errno value. */
static int write_file(const char *path, const char *data, size_t len)
{
    static unsigned counter;
    char tmp[CG_OPT_PATH_MAX + 128];
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)gettid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            return errno;
    }
    if (fd < 0)
        return EEXIST;
    int err = 0;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = w < 0 ? errno : EIO;
            break;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err)
        unlink(tmp);
    return err;
}

/* "<prefix>.<pid>-<NN>", or "<prefix>-<NN>" when the prefix names the pid
 * itself with %p; a relative prefix is taken from the start-up directory. */
static int file_name(char *dst, size_t size, unsigned thread)
{
    char prefix[CG_OPT_PATH_MAX];
    long pid = (long)getpid();
    if (cg_expand_path(cg_opts.out, pid, prefix, sizeof prefix) != 0)
        return -1;
    const char *dir = cg_opts.out[0] == '/' || !cg_runtime_cwd()[0] ? "" : cg_runtime_cwd();
    int n;
    if (strstr(cg_opts.out, "%p"))
        n = snprintf(dst, size, "%s%s%s-%02u", dir, *dir ? "/" : "", prefix, thread);
    else
        n = snprintf(dst, size, "%s%s%s.%ld-%02u", dir, *dir ? "/" : "", prefix, pid, thread);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* ---- the dump ------------------------------------------------------------- */

struct dump {
    const char *trigger;
    unsigned part;
    struct cg_syms *syms;
    struct exec_ranges exec;
    char clock_desc[128];
    uint64_t now;
    unsigned written, failed;
    char first_failure[CG_OPT_PATH_MAX + 64];
    int first_errno;
};

static void dump_thread(struct dump *d, struct cg_thread *t)
{
    int finished = __atomic_load_n(&t->finished, __ATOMIC_ACQUIRE);
    uint64_t end = finished ? t->t_end : d->now;
    struct cg_snapshot snap;
    if (cg_costs_snapshot(&t->costs, end, &snap) != 0) {
        d->failed++;
        return;
    }
    for (size_t i = 0; i < snap.narcs; i++)
        if (snap.arcs[i].site)
            snap.arcs[i].call_pc = call_instruction(&d->exec, snap.arcs[i].site, snap.arcs[i].callee);

    struct cg_symtab symtab;
    struct cg_symtab_entry *storage = NULL;
    struct cg_buf buf;
    cg_buf_init(&buf);
    char path[CG_OPT_PATH_MAX + 64];
    int err = ENOMEM;
    if (build_symtab(d->syms, &snap, &symtab, &storage) == 0) {
        char extra[4][96];
        const char *desc[5];
        int nd = 0;
        if (snap.depth)
            snprintf(extra[nd], sizeof extra[nd], "Calls in progress: %u (counted up to the dump)", snap.depth), nd++;
        if (snap.unmatched_exits)
            snprintf(extra[nd], sizeof extra[nd], "Unmatched exits: %llu (dropped)",
                     (unsigned long long)snap.unmatched_exits), nd++;
        if (snap.lost)
            snprintf(extra[nd], sizeof extra[nd], "Lost: %llu calls not recorded (out of memory)",
                     (unsigned long long)snap.lost), nd++;
        for (int i = 0; i < nd; i++)
            desc[i] = extra[i];
        desc[nd] = NULL;
        struct cg_part_info info = {
            .creator = "cgprof-" CG_VERSION,
            .pid = (long)getpid(),
            .thread = t->number,
            .part = d->part,
            .cmd = cg_runtime_cmdline(),
            .trigger = d->trigger,
            .clock = d->clock_desc,
            .extra_desc = desc,
        };
        if (cg_write_part(&info, &snap, &symtab, &buf) == 0) {
            if (file_name(path, sizeof path, t->number) != 0) {
                snprintf(path, sizeof path, "%s", cg_opts.out);
                err = ENAMETOOLONG;
            } else {
                err = write_file(path, buf.data, buf.len);
            }
        }
    }
    if (err) {
        if (!d->failed++) {
            snprintf(d->first_failure, sizeof d->first_failure, "%s", err == ENOMEM ? "(memory)" : path);
            d->first_errno = err;
        }
    } else {
        d->written++;
        if (cg_opts.verbose)
            cg_warn("wrote %s (thread %u, %zu bytes)", path, t->number, buf.len);
    }
    cg_buf_free(&buf);
    free(storage);
    cg_snapshot_free(&snap);
}

void cg_dump_final(const char *trigger)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    struct cg_thread *self = cg_thread_enter_runtime();
    /* From here until the decrement, no thread frees a table we may read. */
    __atomic_fetch_add(&cg_readers, 1, __ATOMIC_SEQ_CST);

    struct dump d;
    memset(&d, 0, sizeof d);
    d.trigger = trigger;
    d.part = 1;
    d.now = cg_clock_now();
    if (cg_clock_use_tsc)
        snprintf(d.clock_desc, sizeof d.clock_desc,
                 "invariant TSC at %.2f MHz, calibrated at start-up against CLOCK_MONOTONIC",
                 cg_clock_tsc_mhz());
    else
        snprintf(d.clock_desc, sizeof d.clock_desc, "clock_gettime(CLOCK_MONOTONIC)");
    d.syms = cg_syms_open();
    dl_iterate_phdr(collect_exec, &d.exec);

    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        dump_thread(&d, t);

    if (d.failed)
        cg_warn("could not write %u profile file(s), e.g. %s: %s (CGPROF_OUT='%s' sets where they go)", d.failed,
                d.first_failure, strerror(d.first_errno), cg_opts.out);
    cg_syms_close(d.syms);
    free(d.exec.v);
    __atomic_fetch_sub(&cg_readers, 1, __ATOMIC_SEQ_CST);
    cg_thread_leave_runtime(self);
}
