/* The site registry: see registry.h. The sites and ranges found by
 * address through open-addressing indexes of their own; the PLT entries
 * and GOT slots already judged; the decoding of a machine function into
 * its sites (patch.h's cg_range_scan, with the question of what a call
 * reaches answered here: hook_of). */
#define _GNU_SOURCE
#include "registry.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu.h"
#include "ehframe.h"
#include "patch.h"
#include "util.h"

/* What a decoding found besides the sites. */
struct scan_ctx {
    int unbound; /* a PLT entry whose GOT slot still points back into its
                    PLT (lazy binding: its function not called yet) */
};

static uintptr_t hook_enter, hook_exit;
static const void *own_object; /* the runtime's shared object, NULL when it
                                  is linked into the program */

unsigned cg_takeback_epoch;

/* Whatever answer of cg_takeback_own a thread kept may be wrong from now
 * on (registry.h) */
void cg_reg_new_epoch(void)
{
    __atomic_add_fetch(&cg_takeback_epoch, 1, __ATOMIC_RELEASE);
}
static int lock;

struct cg_reg_site *cg_reg_sites;
size_t cg_reg_nsites;
static size_t site_cap;
static uint32_t *site_index; /* site index + 1, open addressing by address */
static size_t site_mask;
struct cg_reg_range *cg_reg_ranges;
size_t cg_reg_nranges;
static size_t range_cap;
static uint32_t *range_index; /* range index + 1, by begin */
static size_t range_mask;

struct cg_takeback_stats cg_reg_stats;

/* PLT entries and GOT slots already judged: what they reach. */
#define KNOWN_MAX 256
static struct {
    uintptr_t to;
    int got, hook;
} known[KNOWN_MAX];
static unsigned nknown;

int cg_reg_trylock(void)
{
    return __atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE) == 0;
}

void cg_reg_lock_wait(void)
{
    while (!cg_reg_trylock())
        sched_yield();
}

void cg_reg_unlock(void)
{
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

/* The lock tried a while (a thousand yields), not waited for: 1 got. A
 * caller that must not guess (the counting hooks) waits out another
 * thread's short work under the lock this way; the lock is never held
 * across a blocking call, and a handler that interrupted its holder on
 * this thread gives up. */
int cg_reg_trylock_a_while(void)
{
    for (int tries = 0; !cg_reg_trylock(); tries++) {
        if (tries >= 1000)
            return 0;
        sched_yield();
    }
    return 1;
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

void cg_reg_init(uintptr_t enter, uintptr_t exit)
{
#if !CG_STATIC
    static const char *const names[] = {"__tsan_func_entry", "mcount", "__fentry__", "_mcount"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        prologue_fns[i] = (uintptr_t)dlsym(RTLD_DEFAULT, names[i]);
    dlerror(); /* leave no error for the program's dlerror() to find */
#endif
    hook_enter = enter;
    hook_exit = exit;
    /* The runtime's own code is never changed (calibrate.c calls the hooks' twin
     * itself): its object, unless that is the program's (libcgprof.a). */
    struct dl_find_object r;
    if (_dl_find_object((void *)enter, &r) == 0 && r.dlfo_link_map && r.dlfo_link_map->l_name &&
        r.dlfo_link_map->l_name[0])
        own_object = r.dlfo_map_start;
}

int cg_reg_forked(void)
{
    int held = __atomic_load_n(&lock, __ATOMIC_RELAXED) != 0;
    lock = 0;
    return held;
}

/* ---- the indexes ------------------------------------------------------ */

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
    return cg_reg_sites[i].addr;
}

static uintptr_t range_key(size_t i)
{
    return cg_reg_ranges[i].begin;
}

/* Room for more sites; the index kept at most half full. */
static int sites_fit(size_t more)
{
    size_t cap = site_cap;
    if (CG_GROW_MAPPED(cg_reg_sites, site_cap, cg_reg_nsites + more, 1024) != 0)
        return -1;
    if (site_cap != cap || !site_index)
        return reindex(&site_index, &site_mask, site_cap, cg_reg_nsites, site_key);
    return 0;
}

static void index_site(size_t i)
{
    size_t h = (size_t)hash_addr(cg_reg_sites[i].addr);
    while (site_index[h & site_mask])
        h++;
    site_index[h & site_mask] = (uint32_t)(i + 1);
}

struct cg_reg_site *cg_reg_site_find(uintptr_t addr)
{
    if (!site_index)
        return NULL;
    for (size_t h = (size_t)hash_addr(addr);; h++) {
        uint32_t s = site_index[h & site_mask];
        if (s == 0)
            return NULL;
        if (cg_reg_sites[s - 1].addr == addr && !cg_reg_sites[s - 1].dead)
            return &cg_reg_sites[s - 1];
    }
}

struct cg_reg_range *cg_reg_range_find(uintptr_t begin)
{
    if (!range_index)
        return NULL;
    for (size_t h = (size_t)hash_addr(begin);; h++) {
        uint32_t r = range_index[h & range_mask];
        if (r == 0)
            return NULL;
        if (cg_reg_ranges[r - 1].begin == begin && !cg_reg_ranges[r - 1].dead)
            return &cg_reg_ranges[r - 1];
    }
}
/* ---- the objects' code ------------------------------------------------- */

static int prot_of(uint32_t flags)
{
    return (flags & PF_R ? PROT_READ : 0) | (flags & PF_W ? PROT_WRITE : 0) | (flags & PF_X ? PROT_EXEC : 0);
}

/* The loaded segment that holds addr, from its object's program headers
 * (found with _dl_find_object, which takes no lock and is
 * async-signal-safe): 0, or -1 when not known. The ELF header is read
 * where the object's first segment starts (it maps file offset 0). */
int cg_reg_segment_of(uintptr_t addr, struct cg_reg_seg *s)
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
    struct cg_reg_seg s;
    return cg_reg_segment_of(addr, &s) == 0 && (s.prot > 0 && (s.prot & (PROT_READ | PROT_EXEC))) && addr + len <= s.hi;
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

static struct cg_reg_site *site_add(const struct cg_site *c, uint32_t range)
{
    if (sites_fit(1) != 0)
        return NULL;
    struct cg_reg_site *x = &cg_reg_sites[cg_reg_nsites];
    memset(x, 0, sizeof *x);
    x->addr = c->addr;
    x->form = c->form;
    x->hook = c->hook;
    x->old = c->old;
    x->patched = c->patched;
    x->range = range;
    x->wait = 10; /* tenths of a ms: the first delay after a failed check */
    index_site(cg_reg_nsites++);
    return x;
}

/* Decodes range r (index ix + 1) into a run of site records of its own,
 * carrying over what was known of a site decoded before (a range decoded
 * again). 0, or -1 when out of memory (r unchanged). */
static int decode(struct cg_reg_range *r, uint32_t ix1)
{
    struct cg_range_scan scan;
    struct scan_ctx ctx;
    /* decoded again: from a copy with the changed sites as they were (a
     * site taken back is no call any more) */
    const unsigned char *copy = NULL;
    if (r->n) {
        size_t len = r->end - r->begin;
        if (CG_GROW_MAPPED(code_copy, code_copy_cap, len, 4096) != 0)
            return -1;
        memcpy(code_copy, (const void *)r->begin, len);
        for (uint32_t i = 0; i < r->n; i++) {
            const struct cg_reg_site *x = &cg_reg_sites[r->first + i];
            if (x->taken && !x->dead)
                memcpy(code_copy + (x->addr - r->begin), &x->old, CG_CPU_SITE_BYTES); /* little-endian */
        }
        copy = code_copy;
    }
    for (;;) {
        if (CG_GROW_MAPPED(scratch, scratch_cap, scratch_cap ? scratch_cap : 64, 64) != 0)
            return -1;
        ctx.unbound = 0;
        cg_range_scan(r->begin, r->end, copy, hook_of, &ctx, scratch, scratch_cap, &scan);
        if (scan.nsites <= scratch_cap)
            break;
        if (CG_GROW_MAPPED(scratch, scratch_cap, scan.nsites, 64) != 0)
            return -1;
    }
    if (sites_fit(scan.nsites) != 0)
        return -1;
    /* a tail site whose change needs a RET its range lacks (aarch64): one
     * looked for in its segment */
    struct cg_reg_seg seg;
    int have_seg = -1;
    for (size_t i = 0; i < scan.nsites; i++) {
        if (scratch[i].form != CG_SITE_TAIL || scratch[i].patched != scratch[i].old)
            continue;
        if (have_seg < 0)
            have_seg = cg_reg_segment_of(r->begin, &seg) == 0 && seg.prot > 0 && (seg.prot & PROT_EXEC);
        if (have_seg)
            cg_site_tail_reach(&scratch[i], seg.lo, seg.hi);
    }
    uint32_t first = (uint32_t)cg_reg_nsites;
    for (size_t i = 0; i < scan.nsites; i++) {
        struct cg_reg_site *old = cg_reg_site_find(scratch[i].addr);
        struct cg_reg_site keep;
        if (old) {
            keep = *old;
            old->dead = 1; /* the new run holds it */
        }
        struct cg_reg_site *x = site_add(&scratch[i], ix1);
        if (old) {
            x->fn = keep.fn;
            x->next_check = keep.next_check;
            x->wait = keep.wait;
            x->taken = keep.taken;
            x->folded = keep.folded;
            x->refused = keep.refused;
            x->old = keep.old; /* the instruction before it was changed */
        }
    }
    r->first = first;
    r->n = (uint32_t)(cg_reg_nsites - first);
    r->own_enter = scan.own_enter;
    r->ok = (uint8_t)scan.ok;
    r->stale = (uint8_t)ctx.unbound;
    return 0;
}

/* The range that holds addr (its machine function), decoded the first
 * time it is asked for; NULL when there is none (no unwind tables). */
struct cg_reg_range *cg_reg_range_of(uintptr_t addr, const struct cg_reg_seg *s)
{
    uintptr_t begin, end;
    if (!s->eh || cg_fde_range(s->eh, 0, addr, &begin, &end) != 0 || begin < s->lo || end > s->hi)
        return NULL;
    struct cg_reg_range *r = cg_reg_range_find(begin);
    if (r)
        return r;
    if (s->prot <= 0 || !(s->prot & (PROT_READ | PROT_EXEC)))
        return NULL;
    size_t cap = range_cap;
    if (CG_GROW_MAPPED(cg_reg_ranges, range_cap, cg_reg_nranges + 1, 256) != 0)
        return NULL;
    if ((range_cap != cap || !range_index) && reindex(&range_index, &range_mask, range_cap, cg_reg_nranges, range_key) != 0)
        return NULL;
    size_t ix = cg_reg_nranges;
    r = &cg_reg_ranges[ix];
    memset(r, 0, sizeof *r);
    r->begin = begin;
    r->end = end;
    r->prot = (int8_t)s->prot;
    if (decode(r, (uint32_t)(ix + 1)) != 0)
        return NULL;
    cg_reg_nranges++;
    CG_TB_STAT_ADD(cg_reg_stats.ranges, 1);
    if (!r->ok)
        CG_TB_STAT_ADD(cg_reg_stats.untrusted, 1);
    size_t h = (size_t)hash_addr(begin);
    while (range_index[h & range_mask])
        h++;
    range_index[h & range_mask] = (uint32_t)(ix + 1);
    return r;
}

/* A range decoded before all the PLT entries it calls were bound, decoded
 * again: a hook call through one of those was not recognised then. */
void cg_reg_refresh(struct cg_reg_range *r)
{
    if (!r || !r->stale)
        return;
    uint8_t ok = r->ok;
    uintptr_t own = r->own_enter;
    decode(r, (uint32_t)(r - cg_reg_ranges) + 1);
    if (r->ok != ok || r->own_enter != own)
        cg_reg_new_epoch();
}

/* The record of the hook call that returns to code; its segment in *s.
 * In a trusted range the site must be one the decoding found (else the
 * range is not trusted any more: the decoder disagreed with the CPU); out
 * of any range it is recognised from its bytes alone. */
struct cg_reg_site *cg_reg_site_of_return(uintptr_t code, struct cg_reg_seg *s, struct cg_reg_range **rp)
{
    *rp = NULL;
    /* a site met before: the tables alone (a call of the architecture's
     * lengths ends at code: cpu.h), not the unwind tables' search and the
     * bytes again */
    for (uintptr_t len = CG_CPU_SITE_CALL_MIN; len <= CG_CPU_SITE_CALL_MAX; len++) {
        struct cg_reg_site *x = cg_reg_site_find(code - len);
        if (x && CG_CPU_SITE_CALL_LEN(x->form) == len && (x->form == CG_SITE_CALL || x->form == CG_SITE_CALL_GOT)) {
            struct cg_reg_range *r = x->range ? &cg_reg_ranges[x->range - 1] : NULL;
            memset(s, 0, sizeof *s);
            s->prot = r ? r->prot : x->prot;
            *rp = r;
            return x;
        }
    }
    if (cg_reg_segment_of(code - 1, s) != 0 || s->own)
        return NULL;
    struct cg_site c;
    if (!cg_site_at_return(code, s->lo, hook_of, NULL, &c))
        return NULL;
    struct cg_reg_range *r = cg_reg_range_of(c.addr, s);
    struct cg_reg_site *x = cg_reg_site_find(c.addr);
    if (r && r->ok && r->stale && (!x || x->range != (uint32_t)(r - cg_reg_ranges) + 1)) {
        cg_reg_refresh(r);
        x = cg_reg_site_find(c.addr);
    }
    *rp = r;
    /* In a trusted range a site is only one the decoding found, whole
     * (the bytes before a return address alone can be the tail of a
     * longer instruction); a call it did not find makes the range
     * untrusted: the decoder and the processor disagree. */
    if (r && r->ok && (!x || x->range != (uint32_t)(r - cg_reg_ranges) + 1)) {
        r->ok = 0;
        cg_reg_new_epoch();
        CG_TB_STAT_ADD(cg_reg_stats.untrusted, 1);
        return NULL;
    }
    if (!x) {
        x = site_add(&c, 0);
        if (x)
            x->prot = (int8_t)s->prot;
    }
    return x;
}

void cg_reg_forget(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < cg_reg_nsites; i++)
        if (cg_reg_sites[i].addr >= lo && cg_reg_sites[i].addr < hi && !cg_reg_sites[i].dead) {
            cg_reg_sites[i].dead = 1;
            if (cg_reg_sites[i].taken) {
                CG_TB_STAT_ADD(cg_reg_stats.sites[cg_reg_sites[i].taken - 1], -1UL);
                if (cg_reg_sites[i].form == CG_SITE_TAIL || cg_reg_sites[i].form == CG_SITE_TAIL_GOT)
                    CG_TB_STAT_ADD(cg_reg_stats.tails[cg_reg_sites[i].taken - 1], -1UL);
            }
        }
    for (size_t i = 0; i < cg_reg_nranges; i++)
        if (cg_reg_ranges[i].begin >= lo && cg_reg_ranges[i].begin < hi)
            cg_reg_ranges[i].dead = 1;
    /* a PLT entry or GOT slot of the object, or one that pointed into it */
    nknown = 0;
}
