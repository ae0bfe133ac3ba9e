/* The process-wide record of hook call sites and their changes: see
 * takeback.h and docs/internals/takeback.md.
 *
 * Everything here is under one lock, which a hook only tries: the hooks
 * run in signal handlers, which may interrupt the holder on its own
 * thread. The tables are arrays in anonymous mappings (the hooks run inside
 * malloc), grown under the lock, read only under it. */
#define _GNU_SOURCE
#include "takeback.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "cpu.h"
#include "ehframe.h"
#include "patch.h"

struct tb_site {
    uintptr_t addr;
    uintptr_t fn;        /* the function a hook named from here (0: none seen) */
    uint64_t next_check; /* a frameless exit's: the next quiescence check (ns) */
    uint32_t range;      /* its range's index + 1; 0 without one */
    uint32_t wait;       /* the next delay between checks, in 0.1 ms */
    uint8_t form, hook, old, patched;
    uint8_t taken;   /* reason + 1 while taken back, 0 when not */
    uint8_t folded;  /* an enter judged inlined (CG_TB_INLINED) */
    uint8_t refused; /* its change failed for good */
    uint8_t dead;    /* its object was unloaded */
    int8_t prot;     /* its page's protection (a site without a range) */
};

struct tb_range {
    uintptr_t begin, end, own_enter;
    uint32_t first, n; /* its sites, sites[first, first + n), by address */
    uint8_t ok;        /* the decoding can be trusted */
    uint8_t stale;     /* decoded while a PLT entry it calls was not bound
                          yet: a hook's entry may have been missed */
    uint8_t dead;
    int8_t prot;       /* its pages' protection (segment_of) */
};

/* What a decoding found besides the sites. */
struct scan_ctx {
    int unbound; /* a PLT entry whose GOT slot still points back into its
                    PLT (lazy binding: its function not called yet) */
};

static uintptr_t hook_enter, hook_exit;
static const void *own_object; /* the runtime's shared object, NULL when it
                                  is linked into the program */
static int enabled, untrusted_child;

unsigned cg_takeback_epoch;

/* Whatever answer of cg_takeback_own a thread kept may be wrong from now
 * on (takeback.h) */
static void new_epoch(void)
{
    __atomic_add_fetch(&cg_takeback_epoch, 1, __ATOMIC_RELEASE);
}
static int lock;

static struct tb_site *sites;
static size_t nsites, site_cap;
static uint32_t *site_index; /* site index + 1, open addressing by address */
static size_t site_mask;
static struct tb_range *ranges;
static size_t nranges, range_cap;
static uint32_t *range_index; /* range index + 1, by begin */
static size_t range_mask;

/* Changed only under the lock, each counter as a whole word (relaxed
 * atomics): a reader that could not get the lock (a dump that interrupted
 * the thread holding it) reads whole values, only maybe not a consistent
 * set of them. */
static struct cg_takeback_stats stats;
#define STAT_ADD(f, n) __atomic_store_n(&(f), __atomic_load_n(&(f), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define STAT_GET(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)

/* PLT entries and GOT slots already judged: what they reach. */
#define KNOWN_MAX 256
static struct {
    uintptr_t to;
    int got, hook;
} known[KNOWN_MAX];
static unsigned nknown;

static int trylock(void)
{
    return __atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE) == 0;
}

static void lock_wait(void)
{
    while (!trylock())
        sched_yield();
}

static void unlock(void)
{
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

/* The functions other instrumentation calls before the enter hook, in
 * the process (looked up at start-up: a sanitizer's runtime is loaded
 * before the program's code runs). */
static uintptr_t prologue_fns[4];

int cg_takeback_prologue_fn(uintptr_t to)
{
    for (unsigned i = 0; i < sizeof prologue_fns / sizeof prologue_fns[0]; i++)
        if (to && prologue_fns[i] == to)
            return 1;
    return 0;
}

void cg_takeback_init(uintptr_t enter, uintptr_t exit, int on)
{
#if !CG_STATIC
    static const char *const names[] = {"__tsan_func_entry", "mcount", "__fentry__", "_mcount"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        prologue_fns[i] = (uintptr_t)dlsym(RTLD_DEFAULT, names[i]);
    dlerror(); /* leave no error for the program's dlerror() to find */
#endif
    hook_enter = enter;
    hook_exit = exit;
    enabled = on;
    /* The runtime's own code is never changed (calibrate.c calls the hooks' twin
     * itself): its object, unless that is the program's (libcgprof.a). */
    struct dl_find_object r;
    if (_dl_find_object((void *)enter, &r) == 0 && r.dlfo_link_map && r.dlfo_link_map->l_name &&
        r.dlfo_link_map->l_name[0])
        own_object = r.dlfo_map_start;
}

/* ---- memory ----------------------------------------------------------- */

/* Makes room for need items of size bytes in *v (cap items). */
static int grow(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *p;
    if (*v)
        p = mremap(*v, *cap * size, n * size, MREMAP_MAYMOVE);
    else
        p = mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    *v = p;
    *cap = n;
    return 0;
}

static uint64_t hash_addr(uintptr_t a)
{
    return cg_hash2(a, 0x5bd1e995u);
}

/* Rebuilds an index of 2 * cap slots over the n items of v, keyed by
 * key(i). */
static int reindex(uint32_t **index, size_t *mask, size_t cap, size_t n, uintptr_t (*key)(size_t))
{
    size_t slots = 1;
    while (slots < 2 * cap)
        slots *= 2;
    uint32_t *ix = mmap(NULL, slots * sizeof *ix, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ix == MAP_FAILED)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t h = (size_t)hash_addr(key(i));
        while (ix[h & (slots - 1)])
            h++;
        ix[h & (slots - 1)] = (uint32_t)(i + 1);
    }
    if (*index)
        munmap(*index, (*mask + 1) * sizeof **index);
    *index = ix;
    *mask = slots - 1;
    return 0;
}

static uintptr_t site_key(size_t i)
{
    return sites[i].addr;
}

static uintptr_t range_key(size_t i)
{
    return ranges[i].begin;
}

/* Room for more sites; the index kept at most half full. */
static int sites_fit(size_t more)
{
    size_t cap = site_cap;
    if (grow((void **)&sites, &site_cap, nsites + more, sizeof *sites, 1024) != 0)
        return -1;
    if (site_cap != cap || !site_index)
        return reindex(&site_index, &site_mask, site_cap, nsites, site_key);
    return 0;
}

static void index_site(size_t i)
{
    size_t h = (size_t)hash_addr(sites[i].addr);
    while (site_index[h & site_mask])
        h++;
    site_index[h & site_mask] = (uint32_t)(i + 1);
}

static struct tb_site *site_find(uintptr_t addr)
{
    if (!site_index)
        return NULL;
    for (size_t h = (size_t)hash_addr(addr);; h++) {
        uint32_t s = site_index[h & site_mask];
        if (s == 0)
            return NULL;
        if (sites[s - 1].addr == addr && !sites[s - 1].dead)
            return &sites[s - 1];
    }
}

static struct tb_range *range_find(uintptr_t begin)
{
    if (!range_index)
        return NULL;
    for (size_t h = (size_t)hash_addr(begin);; h++) {
        uint32_t r = range_index[h & range_mask];
        if (r == 0)
            return NULL;
        if (ranges[r - 1].begin == begin && !ranges[r - 1].dead)
            return &ranges[r - 1];
    }
}

/* ---- the objects' code ------------------------------------------------- */

struct seg {
    uintptr_t lo, hi; /* the PT_LOAD segment holding the address */
    int prot;
    const unsigned char *eh; /* the object's .eh_frame_hdr, or NULL */
    int own;                 /* the runtime's own object */
};

static int prot_of(uint32_t flags)
{
    return (flags & PF_R ? PROT_READ : 0) | (flags & PF_W ? PROT_WRITE : 0) | (flags & PF_X ? PROT_EXEC : 0);
}

/* The loaded segment that holds addr, from its object's program headers
 * (found with _dl_find_object, which takes no lock and is
 * async-signal-safe): 0, or -1 when not known. The ELF header is read
 * where the object's first segment starts (it maps file offset 0). */
static int segment_of(uintptr_t addr, struct seg *s)
{
    struct dl_find_object r, h;
    if (_dl_find_object((void *)addr, &r) != 0 || !r.dlfo_link_map)
        return -1;
    const ElfW(Ehdr) *e = r.dlfo_map_start;
    size_t span = (size_t)((const char *)r.dlfo_map_end - (const char *)r.dlfo_map_start);
    /* An object whose segments lie apart (aarch64's 64 KiB alignment, in a
     * program the kernel loaded) is found piece by piece: the ELF header is
     * then in the piece at its load address (a position-independent
     * object's first segment maps offset 0 there), found the same way. */
    if ((span < sizeof *e || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0) && r.dlfo_link_map->l_addr &&
        _dl_find_object((void *)r.dlfo_link_map->l_addr, &h) == 0 && h.dlfo_link_map == r.dlfo_link_map) {
        e = h.dlfo_map_start;
        span = (size_t)((const char *)h.dlfo_map_end - (const char *)h.dlfo_map_start);
    }
    if (span < sizeof *e || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || e->e_phentsize != sizeof(ElfW(Phdr)) ||
        e->e_phoff > span || e->e_phnum * sizeof(ElfW(Phdr)) > span - e->e_phoff)
        return -1;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)e + e->e_phoff);
    uintptr_t base = r.dlfo_link_map->l_addr;
    for (unsigned i = 0; i < e->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        uintptr_t lo = base + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
        if (addr < lo || addr >= hi)
            continue;
        s->lo = lo;
        s->hi = hi;
        s->prot = prot_of(ph[i].p_flags);
        s->eh = r.dlfo_eh_frame;
        s->own = own_object && (const void *)e == own_object;
        /* the page written must have this segment's permissions alone: a
         * page shared with another segment (no -z separate-code) gets the
         * last one's, which cannot be told without /proc */
        uintptr_t page = addr & ~(uintptr_t)4095;
        for (unsigned j = 0; j < e->e_phnum; j++) {
            if (j == i || ph[j].p_type != PT_LOAD || prot_of(ph[j].p_flags) == s->prot)
                continue;
            uintptr_t jlo = (base + ph[j].p_vaddr) & ~(uintptr_t)4095, jhi = base + ph[j].p_vaddr + ph[j].p_memsz;
            if (jlo < page + 4096 && jhi > page)
                s->prot = -1;
        }
        return 0;
    }
    return -1;
}

/* Whether [addr, addr + len) can be read: within one readable segment. */
static int readable(uintptr_t addr, size_t len)
{
    struct seg s;
    return segment_of(addr, &s) == 0 && (s.prot > 0 && (s.prot & (PROT_READ | PROT_EXEC))) && addr + len <= s.hi;
}

/* patch.h's question: the hook reached through to. A PLT entry (x86-64's
 * [endbr64] [bnd] jmp *disp32(%rip), aarch64's adrp, ldr, add, br: cpu.h)
 * has its GOT slot holding the hook. */
static int hook_of(void *ctx, uintptr_t to, int got)
{
    struct scan_ctx *sc = ctx;
    if (!got && (to == hook_enter || to == hook_exit))
        return to == hook_enter ? CG_HOOK_ENTER : CG_HOOK_EXIT;
    if (!got && cg_takeback_prologue_fn(to))
        return CG_HOOK_PROLOGUE;
    for (unsigned i = 0; i < nknown; i++)
        if (known[i].to == to && known[i].got == got)
            return known[i].hook;
    int hook = CG_HOOK_NOT, unbound = 0;
    uintptr_t slot = to;
    if (!got) {
        slot = 0;
        if (readable(to, CG_CPU_PLT_BYTES)) /* the architecture's PLT entry (cpu.h) */
            slot = cg_cpu_plt_slot((const uint8_t *)to, to);
    }
    if (slot && readable(slot, sizeof(uintptr_t))) {
        uintptr_t v;
        memcpy(&v, (const void *)slot, sizeof v);
        if (v == hook_enter)
            hook = CG_HOOK_ENTER;
        else if (v == hook_exit)
            hook = CG_HOOK_EXIT;
        else if (cg_takeback_prologue_fn(v))
            hook = CG_HOOK_PROLOGUE;
        else if (readable(v, CG_CPU_PLT_UNBOUND_BYTES)) {
            /* lazy binding's first target (cpu.h) */
            unbound = cg_cpu_plt_unbound((const uint8_t *)v);
            if (unbound && sc)
                sc->unbound = 1;
        }
    }
    /* A GOT slot may not be bound yet (lazy binding): that answer is not
     * remembered; a hook found is, a slot bound to another function, and a
     * target that is no PLT entry at all. */
    if (nknown < KNOWN_MAX && !unbound) {
        known[nknown].to = to;
        known[nknown].got = got;
        known[nknown].hook = hook;
        nknown++;
    }
    return hook;
}

/* ---- ranges and sites -------------------------------------------------- */

/* cg_range_scan's output, before it becomes records; and the copy of a
 * range decoded again, its changed sites as they were */
static struct cg_site *scratch;
static size_t scratch_cap;
static unsigned char *code_copy;
static size_t code_copy_cap;

static struct tb_site *site_add(const struct cg_site *c, uint32_t range)
{
    if (sites_fit(1) != 0)
        return NULL;
    struct tb_site *x = &sites[nsites];
    memset(x, 0, sizeof *x);
    x->addr = c->addr;
    x->form = c->form;
    x->hook = c->hook;
    x->old = c->old;
    x->patched = c->patched;
    x->range = range;
    x->wait = 10; /* tenths of a ms: the first delay after a failed check */
    index_site(nsites++);
    return x;
}

/* Decodes range r (index ix + 1) into a run of site records of its own,
 * carrying over what was known of a site decoded before (a range decoded
 * again). 0, or -1 when out of memory (r unchanged). */
static int decode(struct tb_range *r, uint32_t ix1)
{
    struct cg_range_scan scan;
    struct scan_ctx ctx;
    /* decoded again: from a copy with the changed sites as they were (a
     * site taken back is no call any more) */
    const unsigned char *copy = NULL;
    if (r->n) {
        size_t len = r->end - r->begin;
        if (grow((void **)&code_copy, &code_copy_cap, len, 1, 4096) != 0)
            return -1;
        memcpy(code_copy, (const void *)r->begin, len);
        for (uint32_t i = 0; i < r->n; i++) {
            const struct tb_site *x = &sites[r->first + i];
            if (x->taken && !x->dead)
                code_copy[x->addr - r->begin] = x->old;
        }
        copy = code_copy;
    }
    for (;;) {
        if (grow((void **)&scratch, &scratch_cap, scratch_cap ? scratch_cap : 64, sizeof *scratch, 64) != 0)
            return -1;
        ctx.unbound = 0;
        cg_range_scan(r->begin, r->end, copy, hook_of, &ctx, scratch, scratch_cap, &scan);
        if (scan.nsites <= scratch_cap)
            break;
        if (grow((void **)&scratch, &scratch_cap, scan.nsites, sizeof *scratch, 64) != 0)
            return -1;
    }
    if (sites_fit(scan.nsites) != 0)
        return -1;
    uint32_t first = (uint32_t)nsites;
    for (size_t i = 0; i < scan.nsites; i++) {
        struct tb_site *old = site_find(scratch[i].addr);
        struct tb_site keep;
        if (old) {
            keep = *old;
            old->dead = 1; /* the new run holds it */
        }
        struct tb_site *x = site_add(&scratch[i], ix1);
        if (old) {
            x->fn = keep.fn;
            x->next_check = keep.next_check;
            x->wait = keep.wait;
            x->taken = keep.taken;
            x->folded = keep.folded;
            x->refused = keep.refused;
            x->old = keep.old; /* the byte before it was changed */
        }
    }
    r->first = first;
    r->n = (uint32_t)(nsites - first);
    r->own_enter = scan.own_enter;
    r->ok = (uint8_t)scan.ok;
    r->stale = (uint8_t)ctx.unbound;
    return 0;
}

/* The range that holds addr (its machine function), decoded the first
 * time it is asked for; NULL when there is none (no unwind tables). */
static struct tb_range *range_of(uintptr_t addr, const struct seg *s)
{
    uintptr_t begin, end;
    if (!s->eh || cg_fde_range(s->eh, 0, addr, &begin, &end) != 0 || begin < s->lo || end > s->hi)
        return NULL;
    struct tb_range *r = range_find(begin);
    if (r)
        return r;
    if (s->prot <= 0 || !(s->prot & (PROT_READ | PROT_EXEC)))
        return NULL;
    size_t cap = range_cap;
    if (grow((void **)&ranges, &range_cap, nranges + 1, sizeof *ranges, 256) != 0)
        return NULL;
    if ((range_cap != cap || !range_index) && reindex(&range_index, &range_mask, range_cap, nranges, range_key) != 0)
        return NULL;
    size_t ix = nranges;
    r = &ranges[ix];
    memset(r, 0, sizeof *r);
    r->begin = begin;
    r->end = end;
    r->prot = (int8_t)s->prot;
    if (decode(r, (uint32_t)(ix + 1)) != 0)
        return NULL;
    nranges++;
    STAT_ADD(stats.ranges, 1);
    if (!r->ok)
        STAT_ADD(stats.untrusted, 1);
    size_t h = (size_t)hash_addr(begin);
    while (range_index[h & range_mask])
        h++;
    range_index[h & range_mask] = (uint32_t)(ix + 1);
    return r;
}

/* A range decoded before all the PLT entries it calls were bound, decoded
 * again: a hook call through one of those was not recognised then. */
static void refresh(struct tb_range *r)
{
    if (!r || !r->stale)
        return;
    uint8_t ok = r->ok;
    uintptr_t own = r->own_enter;
    decode(r, (uint32_t)(r - ranges) + 1);
    if (r->ok != ok || r->own_enter != own)
        new_epoch();
}

/* The record of the hook call that returns to code; its segment in *s.
 * In a trusted range the site must be one the decoding found (else the
 * range is not trusted any more: the decoder disagreed with the CPU); out
 * of any range it is recognised from its bytes alone. */
static struct tb_site *site_of_return(uintptr_t code, struct seg *s, struct tb_range **rp)
{
    *rp = NULL;
    /* a site met before: the tables alone (a call of the architecture's
     * lengths ends at code: cpu.h), not the unwind tables' search and the
     * bytes again */
    for (uintptr_t len = CG_CPU_SITE_CALL_MIN; len <= CG_CPU_SITE_CALL_MAX; len++) {
        struct tb_site *x = site_find(code - len);
        if (x && CG_CPU_SITE_CALL_LEN(x->form) == len && (x->form == CG_SITE_CALL || x->form == CG_SITE_CALL_GOT)) {
            struct tb_range *r = x->range ? &ranges[x->range - 1] : NULL;
            memset(s, 0, sizeof *s);
            s->prot = r ? r->prot : x->prot;
            *rp = r;
            return x;
        }
    }
    if (segment_of(code - 1, s) != 0 || s->own)
        return NULL;
    struct cg_site c;
    if (!cg_site_at_return(code, s->lo, hook_of, NULL, &c))
        return NULL;
    struct tb_range *r = range_of(c.addr, s);
    struct tb_site *x = site_find(c.addr);
    if (r && r->ok && r->stale && (!x || x->range != (uint32_t)(r - ranges) + 1)) {
        refresh(r);
        x = site_find(c.addr);
    }
    *rp = r;
    /* In a trusted range a site is only one the decoding found, whole
     * (the bytes before a return address alone can be the tail of a
     * longer instruction); a call it did not find makes the range
     * untrusted: the decoder and the processor disagree. */
    if (r && r->ok && (!x || x->range != (uint32_t)(r - ranges) + 1)) {
        r->ok = 0;
        new_epoch();
        STAT_ADD(stats.untrusted, 1);
        return NULL;
    }
    if (!x) {
        x = site_add(&c, 0);
        if (x)
            x->prot = (int8_t)s->prot;
    }
    return x;
}

/* The lock tried a while (a thousand yields), not waited for: 1 got. A
 * caller that must not guess (the counting hooks) waits out another
 * thread's short work under the lock this way; the lock is never held
 * across a blocking call, and a handler that interrupted its holder on
 * this thread gives up. */
static int trylock_a_while(void)
{
    for (int tries = 0; !trylock(); tries++) {
        if (tries >= 1000)
            return 0;
        sched_yield();
    }
    return 1;
}

int cg_takeback_own(uintptr_t fn, uintptr_t code)
{
    return cg_takeback_own_in(fn, code, 0);
}

int cg_takeback_own_in(uintptr_t fn, uintptr_t code, int wait)
{
    if (untrusted_child || !(wait ? trylock_a_while() : trylock()))
        return -1;
    int saved = errno, own = -1;
    struct seg s;
    struct tb_range *r;
    struct tb_site *x = site_of_return(code, &s, &r);
    if (x && x->hook == CG_HOOK_ENTER) {
        x->fn = fn;
        if (r && r->ok)
            own = x->addr == r->own_enter;
    }
    unlock();
    errno = saved;
    return own;
}

int cg_takeback_part_code(uintptr_t addr)
{
    /* not from a hook, but maybe from a handler that interrupted one on
     * this thread (a crash's dump): the lock is tried a while */
    if (!trylock_a_while())
        return 0;
    int saved = errno, part = 0;
    struct seg s;
    if (!untrusted_child && segment_of(addr, &s) == 0 && !s.own) {
        struct tb_range *r = range_of(addr, &s);
        refresh(r);
        part = r && r->ok && r->begin == addr && r->n > 0 && !r->own_enter;
    }
    unlock();
    errno = saved;
    return part;
}

/* Whether range r is fn's own code (its own enter was seen for fn): a
 * copy of fn inlined there is recursion inlined into itself, whose hook
 * calls a frame of fn counts (fold.c) and which are never taken back for
 * inlining. */
static int own_code_of(const struct tb_range *r, uintptr_t fn)
{
    if (!r || !r->own_enter)
        return 0;
    const struct tb_site *own = site_find(r->own_enter);
    return own && own->fn == fn;
}

/* Changes site x (segment s) for reason: 1 done, -1 refused. */
static int take(struct tb_site *x, const struct seg *s, int reason)
{
    if (x->taken)
        return 1;
    if (x->refused || !enabled || s->prot <= 0)
        return -1;
    int rc = cg_site_write(x->addr, x->old, x->patched, s->prot);
    if (rc != 0) {
        x->refused = 1;
        if (STAT_GET(stats.refused) == 0) {
            __atomic_store_n(&stats.refused_errno, rc, __ATOMIC_RELAXED);
            __atomic_store_n(&stats.refused_at, x->addr, __ATOMIC_RELAXED);
        }
        STAT_ADD(stats.refused, 1);
        return -1;
    }
    x->taken = (uint8_t)(reason + 1);
    STAT_ADD(stats.sites[reason], 1);
    if (x->form == CG_SITE_TAIL || x->form == CG_SITE_TAIL_GOT)
        STAT_ADD(stats.tails[reason], 1);
    return 1;
}

int cg_takeback_call(uintptr_t fn, uintptr_t code, int enter, int reason)
{
    if (untrusted_child)
        return -1;
    if (!trylock())
        return 0;
    int saved = errno, rc = -1;
    struct seg s;
    struct tb_range *r;
    struct tb_site *x = site_of_return(code, &s, &r);
    if (x && x->hook == (enter ? CG_HOOK_ENTER : CG_HOOK_EXIT)) {
        x->fn = fn;
        if (enter && reason == CG_TB_INLINED)
            x->folded = 1;
        if (reason != CG_TB_INLINED || !own_code_of(r, fn))
            rc = take(x, &s, reason);
    }
    unlock();
    errno = saved;
    return rc;
}

/* Whether an exit site of fn in range r may go: no thread has a frame of
 * fn entered from r's code (or from code not known), checked at most at
 * x's next_check, spaced out after each failure. */
static int quiescent(struct tb_site *x, uintptr_t fn, const struct tb_range *r, uint64_t since)
{
    uint64_t now = cg_clock_now();
    if (now < x->next_check)
        return 0;
    unsigned running = 0;
    if (cg_thread_any_frame(fn, r ? r->begin : 0, r ? r->end : 0, &running)) {
        x->next_check = now + (uint64_t)x->wait * 100000u;
        if (x->wait < 10000)
            x->wait *= 2;
        return 0;
    }
    /* Another thread may be inside an enter hook of fn that began before
     * fn was taken back, its frame not pushed yet: alone, the thread
     * asking is not; with others, the check waits until none can be
     * (a hook takes well under a microsecond). */
    if (running > 1 && now < since + CG_TB_SETTLE_NS) {
        x->next_check = since + CG_TB_SETTLE_NS; /* for waiting(), until then */
        return 0;
    }
    return 1;
}

/* An inlined call's exit: its range holds an enter of fn that was folded. */
static int folded_in(const struct tb_range *r, uintptr_t fn)
{
    for (uint32_t i = 0; i < r->n; i++) {
        const struct tb_site *e = &sites[r->first + i];
        if (e->hook == CG_HOOK_ENTER && e->folded && e->fn == fn)
            return 1;
    }
    return 0;
}

/* Whether a frameless exit of fn returning to code must wait before its
 * site is looked at again: its site known (a call ending at code) and
 * taken back already, or due for a check later; for a tail-called exit,
 * fn's own range due later. Lookups of the tables alone, not of the code:
 * the exits of a function throttled a moment ago keep coming until then,
 * and each went through a decoding of its caller's call. */
static int waiting(uintptr_t fn, uintptr_t code, int reason)
{
    uint64_t now = cg_clock_now();
    for (uintptr_t len = CG_CPU_SITE_CALL_MIN; len <= CG_CPU_SITE_CALL_MAX; len++) {
        const struct tb_site *x = site_find(code - len);
        if (x && x->hook == CG_HOOK_EXIT && CG_CPU_SITE_CALL_LEN(x->form) == len)
            return x->taken || x->refused || (reason != CG_TB_INLINED && now < x->next_check);
    }
    if (reason == CG_TB_INLINED || reason == CG_TB_COUNTING)
        return 0;
    const struct tb_range *r = range_find(fn);
    const struct tb_site *own = r && r->own_enter ? site_find(r->own_enter) : NULL;
    return own && now < own->next_check;
}

void cg_takeback_exit(uintptr_t fn, uintptr_t code, int reason, uint64_t since)
{
    if (untrusted_child || !trylock())
        return;
    if (waiting(fn, code, reason)) {
        unlock();
        return;
    }
    int saved = errno;
    struct seg s;
    struct tb_range *r;
    struct tb_site *x = site_of_return(code, &s, &r);
    if (x) {
        if (x->hook == CG_HOOK_EXIT && !x->taken) {
            x->fn = fn;
            if (reason == CG_TB_COUNTING ||
                (reason == CG_TB_INLINED ? r && r->ok && folded_in(r, fn) && !own_code_of(r, fn)
                                         : quiescent(x, fn, r, since)))
                take(x, &s, reason);
        }
    } else if (reason != CG_TB_INLINED && segment_of(fn, &s) == 0) {
        /* A tail-called exit hook: its return address is the function's
         * caller's. The tail jumps of fn's own code are its own exits (an
         * inlined call's exit is never one: its host's exit comes after
         * it); only the function's main range is known from fn. */
        r = s.own ? NULL : range_of(fn, &s);
        refresh(r);
        if (r && r->ok && r->begin == fn && r->own_enter) {
            struct tb_site *own = site_find(r->own_enter);
            if (own && (reason == CG_TB_COUNTING || quiescent(own, fn, r, since)))
                for (uint32_t i = 0; i < r->n; i++) {
                    struct tb_site *t = &sites[r->first + i];
                    if ((t->form == CG_SITE_TAIL || t->form == CG_SITE_TAIL_GOT) && !t->taken) {
                        t->fn = fn;
                        take(t, &s, reason);
                    }
                }
        }
    }
    unlock();
    errno = saved;
}

unsigned long cg_takeback_restore(int reason)
{
    lock_wait();
    int saved = errno;
    unsigned long n = 0;
    for (size_t i = 0; i < nsites; i++) {
        struct tb_site *x = &sites[i];
        if (x->dead || x->taken != reason + 1)
            continue;
        struct seg s;
        if (segment_of(x->addr, &s) == 0 && s.prot > 0 && cg_site_write(x->addr, x->patched, x->old, s.prot) == 0) {
            x->taken = 0;
            x->next_check = 0;
            x->wait = 10;
            STAT_ADD(stats.sites[reason], -1UL);
            if (x->form == CG_SITE_TAIL || x->form == CG_SITE_TAIL_GOT)
                STAT_ADD(stats.tails[reason], -1UL);
            n++;
        }
    }
    STAT_ADD(stats.restored, n);
    unlock();
    errno = saved;
    return n;
}

void cg_takeback_unload(uintptr_t lo, uintptr_t hi)
{
    lock_wait();
    new_epoch();
    for (size_t i = 0; i < nsites; i++)
        if (sites[i].addr >= lo && sites[i].addr < hi && !sites[i].dead) {
            sites[i].dead = 1;
            if (sites[i].taken) {
                STAT_ADD(stats.sites[sites[i].taken - 1], -1UL);
                if (sites[i].form == CG_SITE_TAIL || sites[i].form == CG_SITE_TAIL_GOT)
                    STAT_ADD(stats.tails[sites[i].taken - 1], -1UL);
            }
        }
    for (size_t i = 0; i < nranges; i++)
        if (ranges[i].begin >= lo && ranges[i].begin < hi)
            ranges[i].dead = 1;
    /* a PLT entry or GOT slot of the object, or one that pointed into it */
    nknown = 0;
    unlock();
}

void cg_takeback_forked(void)
{
    if (__atomic_load_n(&lock, __ATOMIC_RELAXED)) {
        untrusted_child = 1;
        new_epoch();
    }
    lock = 0;
}

void cg_takeback_stats(struct cg_takeback_stats *out)
{
    /* Under the lock, as the hooks change them; a crash's dump may run on
     * a thread that holds it (it crashed there), and another thread may
     * hold it long (decoding under TSan): tried a while, then read as they
     * are, each counter whole. */
    for (int i = 0; i < 1000; i++) {
        if (trylock()) {
            *out = stats;
            unlock();
            return;
        }
        sched_yield();
    }
    for (int i = 0; i < CG_TB_NREASONS; i++) {
        out->sites[i] = STAT_GET(stats.sites[i]);
        out->tails[i] = STAT_GET(stats.tails[i]);
    }
    out->restored = STAT_GET(stats.restored);
    out->refused = STAT_GET(stats.refused);
    out->refused_errno = STAT_GET(stats.refused_errno);
    out->refused_at = STAT_GET(stats.refused_at);
    out->ranges = STAT_GET(stats.ranges);
    out->untrusted = STAT_GET(stats.untrusted);
}
