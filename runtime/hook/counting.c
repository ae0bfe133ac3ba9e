/* The counting hooks' slow path (thread layer): see counting.h. */
#define _GNU_SOURCE
#include "counting.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "ehframe.h"
#include "fold.h"
#include "generalpath.h"
#include "proc.h"
#include "takeback.h"
#include "unwinder.h"

/* The start of the machine function whose code holds pc (its unwind
 * tables' range), or 0. No lock, no allocation (_dl_find_object). */
static uintptr_t function_of(uintptr_t pc)
{
    uintptr_t begin, end;
    return cg_fde_range_loaded(pc, &begin, &end) == 0 ? begin : 0;
}

/* Maps of the owner thread, grown by doubling (open addressing, keys
 * never 0):
 *  - entries: the machine functions whose code runs a frame of a function
 *    entered on this thread (with hooks: its enter hook ran, so it may be
 *    a caller), by their unwind tables' start, to the function the hooks
 *    name: a function's own start to itself, a clone's (gcc's
 *    build.constprop.1, whose hooks name build) to the function, a cold
 *    part or split part (no enter hook of its own) to the function whose
 *    frame it was found running in;
 *  - sites: a call site of a real call to the function it called (the
 *    last one, for a call through a pointer): the frame above that site is
 *    that function's. */
struct cg_count_map {
    uint64_t mask, used;
    struct { uintptr_t key, val; } kv[];
};

static size_t map_bytes(uint64_t n)
{
    return sizeof(struct cg_count_map) + (size_t)n * 2 * sizeof(uintptr_t);
}

static uintptr_t map_get(const struct cg_count_map *m, uintptr_t key)
{
    if (!m || !key)
        return 0;
    for (uint64_t k = cg_hash2(key, 0x2545f491u);; k++) {
        uintptr_t v = __atomic_load_n(&m->kv[k & m->mask].key, __ATOMIC_ACQUIRE);
        if (v == key)
            return m->kv[k & m->mask].val;
        if (v == 0)
            return 0;
    }
}

static void map_put_in(struct cg_count_map *m, uintptr_t key, uintptr_t val)
{
    uint64_t k = cg_hash2(key, 0x2545f491u);
    while (m->kv[k & m->mask].key && m->kv[k & m->mask].key != key)
        k++;
    if (!m->kv[k & m->mask].key)
        m->used++;
    m->kv[k & m->mask].val = val;
    __atomic_store_n(&m->kv[k & m->mask].key, key, __ATOMIC_RELEASE);
}

/* key -> val in *mp (made or doubled as needed; the old one retired, not
 * unmapped: the sampler, in a signal handler, may be reading it); -1
 * without memory */
static int map_put(struct cg_costs *c, struct cg_count_map **mp, uintptr_t key, uintptr_t val)
{
    if (!key)
        return 0;
    struct cg_count_map *m = *mp;
    if (!m || (m->used + 1) * 2 > m->mask + 1) {
        uint64_t n = m ? (m->mask + 1) * 2 : 1024;
        struct cg_count_map *nm = mmap(NULL, map_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (nm == MAP_FAILED)
            return -1;
        nm->mask = n - 1;
        for (uint64_t i = 0; m && i <= m->mask; i++)
            if (m->kv[i].key)
                map_put_in(nm, m->kv[i].key, m->kv[i].val);
        __atomic_store_n(mp, nm, __ATOMIC_RELEASE);
        if (m)
            cg_costs_count_retire(c, m, map_bytes(m->mask + 1));
        cg_costs_count_keep(c, nm, map_bytes(n));
        m = nm;
    }
    map_put_in(m, key, val);
    return 0;
}

uintptr_t cg_count_function(const struct cg_costs *c, uintptr_t start)
{
    return map_get(__atomic_load_n(&c->count_entries, __ATOMIC_ACQUIRE), start);
}

/* A function with hooks entered, its enter hook returning to ret: its
 * start and that of the machine function calling the hook (a clone's) map
 * to it; -1 without memory. */
static int entered(struct cg_costs *c, uintptr_t fn, uintptr_t ret)
{
    if (map_get(c->count_entries, fn) != fn && map_put(c, &c->count_entries, fn, fn) != 0)
        return -1;
    /* never over a function's own start: that is a function entered
     * itself, whatever else its code holds */
    uintptr_t own = function_of(ret), was = map_get(c->count_entries, own);
    if (own && own != fn && was != fn && was != own && map_put(c, &c->count_entries, own, fn) != 0)
        return -1;
    return 0;
}

/* Whether site is the sigreturn trampoline (cpu.h's CG_CPU_SIGRETURN: glibc's
 * __restore_rt on x86-64, the vDSO's __kernel_rt_sigreturn on aarch64): the
 * return address the kernel gives a signal handler. Read without
 * faulting. */
static uintptr_t sigreturn_site; /* the one found: libc's, for every thread */

static int at_sigreturn(uintptr_t site)
{
    if (site == __atomic_load_n(&sigreturn_site, __ATOMIC_RELAXED))
        return 1;
#if defined(CG_CPU_SIGRETURN)
    static const unsigned char restore_rt[] = CG_CPU_SIGRETURN;
    unsigned char b[sizeof restore_rt];
    if (cg_proc_peek(site, b, sizeof b) != 0)
        return 0;
    if (memcmp(b, restore_rt, sizeof b) != 0)
        return 0;
    __atomic_store_n(&sigreturn_site, site, __ATOMIC_RELAXED);
    return 1;
#else
    (void)site;
    return 0;
#endif
}

#if CG_HAVE_LIBUNWIND
/* libunwind, its cursor cur on the frame whose context uc is (taken by
 * the caller itself: getcontext returns twice, so no function can take it
 * for its caller, whose frame the walk starts from): NULL when it is not
 * loaded, or lacks what a walk steps with. */
static const struct cg_unwinder *walk_from(unw_cursor_t *cur, ucontext_t *uc)
{
    const struct cg_unwinder *u = cg_unwinder_loaded();
    if (!u || !u->init_local2 || !u->step || !u->get_reg || u->init_local2(cur, (unw_context_t *)uc, 0) < 0)
        return NULL;
    return u;
}
#endif

/* The caller of a signal handler whose enter hook is running: the
 * innermost function with hooks on the stack under the signal frame (the
 * function the signal interrupted, or the one that called the code without
 * hooks it interrupted), as the shadow stack's top frame was; 0 when it
 * cannot be told. */
static uintptr_t interrupted_caller(const struct cg_count_map *e)
{
#if CG_HAVE_LIBUNWIND
    ucontext_t uc;
    unw_cursor_t cur;
    const struct cg_unwinder *u = getcontext(&uc) == 0 ? walk_from(&cur, &uc) : NULL;
    if (!u || !u->is_signal_frame)
        return 0;
    int past = 0; /* 1: the frame the signal interrupted, 2: those under it */
    for (unsigned n = 0; n < 256; n++) {
        unw_word_t ip;
        if (past) {
            /* the function from the unwind tables (function_of: no system
             * call, where get_proc_info blocks signals around its search):
             * the interrupted address as it is, a return address one byte
             * back (a call may end its function) */
            uintptr_t f = u->get_reg(&cur, UNW_REG_IP, &ip) == 0
                              ? map_get(e, function_of((uintptr_t)ip - (past == 1 ? 0 : 1)))
                              : 0;
            if (f)
                return f;
            past = 2;
        } else if (u->is_signal_frame(&cur) > 0) {
            past = 1;
        }
        if (u->step(&cur) <= 0)
            return 0;
    }
#else
    (void)e;
#endif
    return 0;
}

/* ---- calls from code without hooks (callbacks) ----------------------------
 * A call whose site is in code without hooks (qsort's msort_with_tmp
 * running a comparator, zlib running its allocator) has as caller the
 * innermost function with hooks on the stack, as the shadow stack's top
 * frame was: found by unwinding from the hook up to it. A run of such
 * calls (a qsort's comparisons) repeats the same stack between the hook and
 * that caller: the return addresses found on the way, and where they are
 * stored (x86-64: just under each frame's call frame address), are kept,
 * keyed by (hook's return address, site, hook's call frame address); a
 * later call whose stack holds the same return addresses at the same
 * places has the same frames there, hence the same caller, exactly: a
 * comparison of a few words instead of an unwinding. */
#define CB_FRAMES 40
/* Set-associative: the keys of a program's hot callbacks (a recursion's
 * depths, several callbacks at once) meet in one set by chance of the
 * addresses, and a direct-mapped cache then evicted one with the other at
 * each call: every call unwound, a Lua run 16 times slower in about one
 * run in ten (the stack's address moves each run). */
#define CB_SETS 64
#define CB_WAYS 4
struct cb_entry {
    uintptr_t ret, site, cfa, caller;
    uint32_t arc, n;   /* n: the return addresses kept; 0: an empty entry */
    uintptr_t slot[CB_FRAMES], val[CB_FRAMES];
};
struct cg_count_callbacks {
    struct cb_entry e[CB_SETS][CB_WAYS];
    uint8_t next[CB_SETS]; /* the way a set's next new key takes when none is empty */
    uintptr_t last_slot; /* the caller's frame of the last callback counted: a new run when it differs */
    uint32_t last_arc;
};

static uint32_t cb_set_of(uintptr_t ret, uintptr_t site, uintptr_t cfa)
{
    return (uint32_t)(cg_hash2(ret ^ (cfa << 7), site) & (CB_SETS - 1));
}

static int cb_valid(const struct cb_entry *e, uintptr_t ret, uintptr_t site, uintptr_t cfa)
{
    if (e->n == 0 || e->ret != ret || e->site != site || e->cfa != cfa)
        return 0;
    for (uint32_t i = 0; i < e->n; i++)
        if (*(const volatile uintptr_t *)e->slot[i] != e->val[i])
            return 0;
    return 1;
}

/* The entry whose kept stack is the one under this call, or NULL. */
static struct cb_entry *cb_find(struct cg_count_callbacks *cb, uintptr_t ret, uintptr_t site, uintptr_t cfa)
{
    struct cb_entry *set = cb->e[cb_set_of(ret, site, cfa)];
    for (uint32_t w = 0; w < CB_WAYS; w++)
        if (cb_valid(&set[w], ret, site, cfa))
            return &set[w];
    return NULL;
}

/* The entry a new stack for this key goes to: the key's own (its stack
 * changed), else an empty one, else the set's ways in turn. */
static struct cb_entry *cb_victim(struct cg_count_callbacks *cb, uintptr_t ret, uintptr_t site, uintptr_t cfa)
{
    uint32_t k = cb_set_of(ret, site, cfa);
    struct cb_entry *set = cb->e[k];
    for (uint32_t w = 0; w < CB_WAYS; w++)
        if (set[w].n && set[w].ret == ret && set[w].site == site && set[w].cfa == cfa)
            return &set[w];
    for (uint32_t w = 0; w < CB_WAYS; w++)
        if (!set[w].n)
            return &set[w];
    return &set[cb->next[k]++ % CB_WAYS];
}

/* The caller of a call from code without hooks, whose enter hook returns
 * to ret: unwound from here to fn's frame (its return address ret), then
 * up to the first function entered on this thread (entries). The return
 * addresses from fn's own to the caller's, and where they are stored, go
 * to e (e->n 0 when they cannot be kept: too many, a signal frame, a
 * store not where x86-64 puts it). 0 when it cannot be told. */
static uintptr_t callback_caller(struct cg_costs *c, uintptr_t ret, struct cb_entry *e)
{
    e->n = 0;
#if CG_HAVE_LIBUNWIND && defined(__x86_64__)
    ucontext_t uc;
    unw_cursor_t cur;
    const struct cg_unwinder *u = getcontext(&uc) == 0 ? walk_from(&cur, &uc) : NULL;
    if (!u)
        return 0;
    unw_word_t ip;
    unsigned k = 0;
    for (;; k++) {
        if (k == 16 || u->get_reg(&cur, UNW_REG_IP, &ip) < 0)
            return 0;
        if ((uintptr_t)ip == ret)
            break; /* fn's frame */
        if (u->step(&cur) <= 0)
            return 0;
    }
    uint32_t n = 0;
    int keep = 1;
    for (k = 0; k < 256; k++) {
        int signal_frame = u->is_signal_frame && u->is_signal_frame(&cur) > 0;
        if (signal_frame)
            keep = 0;
        if (u->step(&cur) <= 0)
            return 0;
        unw_word_t sp;
        if (u->get_reg(&cur, UNW_REG_IP, &ip) < 0 || u->get_reg(&cur, UNW_REG_SP, &sp) < 0)
            return 0;
        /* the return address into this frame, just under the call frame
         * address of the frame it called (this frame's sp now) */
        uintptr_t slot = (uintptr_t)sp - sizeof(uintptr_t);
        if (keep && n < CB_FRAMES && *(const uintptr_t *)slot == (uintptr_t)ip) {
            e->slot[n] = slot;
            e->val[n] = (uintptr_t)ip;
            n++;
        } else {
            keep = 0;
        }
        /* the frame's function from the unwind tables, as libunwind's
         * get_proc_info would tell, but without its two system calls a
         * frame (it blocks signals around its search); a return address
         * looked up one byte back (a call may end its function), an
         * address a signal interrupted as it is */
        uintptr_t start = function_of((uintptr_t)ip - (signal_frame ? 0 : 1));
        if (!start)
            continue;
        uintptr_t f = map_get(c->count_entries, start);
        if (!f && cg_takeback_part_code(start) == 1) {
            /* a part of a function (fn.cold, fn.part.0: hook calls but no
             * enter hook of its own), running the frame of the function
             * called from the site above it */
            unw_cursor_t up = cur;
            unw_word_t ra;
            if (u->step(&up) > 0 && u->get_reg(&up, UNW_REG_IP, &ra) == 0) {
                f = map_get(c->count_sites, (uintptr_t)ra);
                if (f && map_get(c->count_entries, f) == f)
                    map_put(c, &c->count_entries, start, f);
                else
                    f = 0;
            }
        }
        if (f) {
            e->n = keep ? n : 0;
            return f;
        }
    }
#else
    (void)c, (void)ret;
#endif
    return 0;
}

/* A call whose site is in code without hooks: counted on the arc from its
 * caller (found, or known from the cache), and its runs (a caller's frame
 * switching to it: the visits of the code without hooks that the writer
 * shows, docs/costs.md). 0 when counted, -1 when the caller cannot be told
 * (the caller then taken as 0, the writer's name for the code the site is
 * in). */
static void count_callback(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret, uintptr_t cfa)
{
    struct cg_costs *c = &t->costs;
    struct cg_count_callbacks *cb = c->count_callbacks;
    if (!cb) {
        cb = mmap(NULL, sizeof *cb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (cb == MAP_FAILED) {
            CG_COUNT(c->lost);
            return;
        }
        c->count_callbacks = cb;
        c->count_callbacks_len = sizeof *cb;
    }
    struct cb_entry *e = cb_find(cb, ret, site, cfa);
    uint32_t arc;
    uintptr_t caller_slot;
    if (e) {
        arc = e->arc;
        caller_slot = e->slot[e->n - 1];
    } else {
        struct cb_entry fresh;
        uintptr_t caller = callback_caller(c, ret, &fresh);
        arc = cg_arc_find(c, caller, site, fn, 0, ret);
        if (arc == CG_SINK || entered(c, fn, ret) != 0 || map_put(c, &c->count_sites, site, fn) != 0) {
            CG_COUNT(c->lost);
            return;
        }
        caller_slot = fresh.n ? fresh.slot[fresh.n - 1] : 0;
        if (fresh.n) {
            e = cb_victim(cb, ret, site, cfa);
            fresh.ret = ret;
            fresh.site = site;
            fresh.cfa = cfa;
            fresh.caller = caller;
            fresh.arc = arc;
            memcpy(e, &fresh, offsetof(struct cb_entry, slot) + fresh.n * sizeof(uintptr_t));
            memcpy(e->val, fresh.val, fresh.n * sizeof(uintptr_t));
        }
    }
    struct cg_arc *a = &c->arcs[arc];
    if (arc != cb->last_arc || caller_slot != cb->last_slot || !caller_slot)
        __atomic_store_n(&a->runs, a->runs + 1, __ATOMIC_RELAXED);
    cb->last_arc = arc;
    cb->last_slot = caller_slot;
    __atomic_store_n(&a->count, a->count + 1, __ATOMIC_RELEASE);
}

/* Signals blocked while the table grows: a hook in a handler would count
 * into the table being replaced. */
static int grow(struct cg_costs *c)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = cg_costs_count_grow(c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* A slot made for (ret, site): arc and count written, then the key, the
 * site before ret (the fast path matches ret first). */
static void fill(struct cg_count_table *tab, struct cg_count_slot *s, uintptr_t ret, uintptr_t site, uint32_t arc)
{
    s->arc = arc;
    s->count = 1;
    __atomic_store_n(&s->site, site, __ATOMIC_RELEASE);
    __atomic_store_n(&s->ret, ret, __ATOMIC_RELEASE);
    tab->used++;
}

/* The function the signal interrupted, from the signal frame itself: the
 * handler's return address (site, the trampoline) is the first word of the
 * kernel's frame, the ucontext right after it (x86-64's rt_sigframe),
 * found as the first word equal to site above the hook's call frame
 * address sp (the handler's frame is between). Its saved pc, or, when
 * that was in a hook (its counter), the hook's return address at the saved
 * stack pointer: in a function entered, that function; else 0 (the caller
 * is then unwound for). One system call instead of an unwinding, which
 * took longer than a 20 us signal period (tests/progs/sigstorm). x86-64
 * only: on aarch64 the handler's return address is in a register, not the
 * word before the kernel's frame, and libunwind follows the frames
 * instead (interrupted_caller). */
#if defined(__x86_64__)
/* Whether pc is in libcgprof.so's code (not when the runtime is linked
 * into the program: the program's code is there too). No lock, no
 * system call (_dl_find_object). */
static int in_runtime(uintptr_t pc)
{
    struct dl_find_object o, own;
    if (_dl_find_object((void *)pc, &o) != 0 || _dl_find_object((void *)(uintptr_t)cg_count_slow, &own) != 0)
        return 0;
    return o.dlfo_link_map == own.dlfo_link_map && own.dlfo_link_map->l_name && own.dlfo_link_map->l_name[0];
}

/* The first word equal to site at or above sp, within 4 pages, and the
 * ucontext after it, read in place, without a system call: the handler
 * whose hook runs returns to site (the trampoline: at_sigreturn), so the
 * kernel's frame holding that word and its ucontext is above sp on this
 * stack, and every byte from sp to its end is mapped (the live frames of
 * this handler and the frame itself); a first match below it (a stale
 * word in the handler's locals) has the same bytes above it. 0 when not
 * found there. */
static uintptr_t first_frame_in_place(uintptr_t sp, uintptr_t site, ucontext_t *uc)
{
    const volatile uintptr_t *w = (const volatile uintptr_t *)(sp & ~(uintptr_t)(sizeof(uintptr_t) - 1));
    for (size_t i = 0; i < 4 * 4096 / sizeof *w; i++)
        if (w[i] == site) {
            memcpy(uc, (const void *)(uintptr_t)&w[i + 1], sizeof *uc);
            return (uintptr_t)&w[i];
        }
    return 0;
}

/* Whether the ucontext uc, read right after a word equal to the
 * trampoline's at cand, is the kernel's signal frame: its saved stack
 * pointer is above it and its FPU state pointer inside it, a little above.
 * Not a stale one in the handler's own frame, below its return address
 * (its locals, not yet written): the frame of a signal (cgprof's sampling
 * one) that interrupted this same handler at this same depth before, whole
 * and well formed, but interrupting the handler itself (self, when given),
 * which the signal it runs for blocks (test_counting: on_signal ->
 * on_signal, 2 runs in 16). */
static int kernel_frame(const struct cg_count_map *e, uintptr_t cand, const ucontext_t *uc, uintptr_t self)
{
    uintptr_t usp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP], fp = (uintptr_t)uc->uc_mcontext.fpregs;
    return usp > cand && fp > cand && fp - cand < 16384 &&
           (!self || map_get(e, function_of((uintptr_t)uc->uc_mcontext.gregs[REG_RIP])) != self);
}
#endif

static uintptr_t handler_caller_fast(const struct cg_count_map *e, uintptr_t site, uintptr_t sp, uintptr_t self)
{
#if defined(__x86_64__)
    uintptr_t from = sp;
    /* a handler that interrupted cgprof's own code (its sampler's handler,
     * a hook): the signal frame above that one, up to a few */
    for (int nested = 0; nested < 4; nested++) {
        /* page by page up to the trampoline's word (a read that crosses
         * the stack's end fails whole): one read, most times */
        uintptr_t w[512], at = 0;
        ucontext_t uc;
        if (!nested) {
            /* the first match read in place (four system calls a call of
             * a handler were more than a 20 us signal period: sigstorm);
             * when it is not the frame, the reads that cannot fault go on
             * from there, past the frame possibly */
            uintptr_t cand = first_frame_in_place(from, site, &uc);
            if (cand && kernel_frame(e, cand, &uc, self))
                at = cand;
            else if (cand)
                from = cand + sizeof(uintptr_t);
        }
        /* above cgprof's own handler (libunwind's walks take tens of kB of
         * stack), further */
        for (int pages = 0; pages < (nested ? 32 : 4) && !at; pages++) {
            size_t len = 4096 - (from & 4095);
            if (cg_proc_peek(from, w, len) != 0)
                return 0;
            for (size_t i = 0; i < len / sizeof w[0] && !at; i++) {
                if (w[i] != site)
                    continue;
                uintptr_t cand = from + i * sizeof w[0];
                if (cg_proc_peek(cand + sizeof(uintptr_t), &uc, sizeof uc) == 0 &&
                    kernel_frame(e, cand, &uc, nested ? 0 : self))
                    at = cand;
            }
            if (!at)
                from += len;
        }
        if (!at)
            return 0;
        uintptr_t rip = (uintptr_t)uc.uc_mcontext.gregs[REG_RIP];
        uintptr_t f = map_get(e, function_of(rip));
        if (f)
            return f;
        uintptr_t usp = (uintptr_t)uc.uc_mcontext.gregs[REG_RSP], top[8];
        /* in cgprof's own code (its sampler's handler): the frame above
         * that one says what was interrupted; the words at its stack
         * pointer are cgprof's, and may still hold a return address into
         * a handler that ran at that depth before (on_signal ->
         * on_signal, 1 run of test_counting in 7) */
        if (!in_runtime(rip) && cg_proc_peek(usp, top, sizeof top) == 0)
            /* in code without hooks (the program's PLT entry of a hook,
             * a libc function): the return address it will go back to,
             * among the first words at its stack pointer */
            for (unsigned k = 0; k < 8; k++)
                if ((f = map_get(e, function_of(top[k]))) != 0)
                    return f;
        from = usp;
    }
#else
    (void)e, (void)site, (void)sp, (void)self;
#endif
    return 0;
}

/* The caller of signal handler fn whose enter hook returns to ret from the
 * trampoline site, its call frame address sp: read while its signal frame
 * is on the stack. */
static uintptr_t handler_caller(const struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp)
{
    const struct cg_count_map *e = __atomic_load_n(&c->count_entries, __ATOMIC_ACQUIRE);
    uintptr_t caller = handler_caller_fast(e, site, sp, fn);
    /* the handler itself is no answer (the signal it runs for is blocked
     * in it): stale words were read; libunwind follows the frames */
    return caller && caller != fn ? caller : interrupted_caller(e);
}

/* A signal handler's call: its arc from the interrupted function (known,
 * or found now), counted on the arc itself (the readings add the slots'
 * counts to the arcs'). */
static void count_handler(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret, uintptr_t sp,
                          const uintptr_t *known)
{
    struct cg_costs *c = &t->costs;
    uintptr_t caller = known ? *known : handler_caller(c, fn, site, sp);
    uint32_t arc = cg_arc_find(c, caller, site, fn, 0, ret);
    if (arc == CG_SINK) {
        CG_COUNT(c->lost);
        return;
    }
    __atomic_store_n(&c->arcs[arc].count, c->arcs[arc].count + 1, __ATOMIC_RELEASE);
    if (entered(c, fn, ret) != 0)
        CG_COUNT(c->lost);
}

static void count_one(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret, uintptr_t sp,
                      const uintptr_t *known);

void cg_count_slow(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret, uintptr_t sp)
{
    if (t->guard) {
        /* a hook in a signal handler while this thread is in a slow path
         * (or the runtime works on it): the tables are not to be touched
         * now; the call is counted when the guard is given back */
        uint32_t n = t->count_ndeferred;
        if (n < CG_COUNT_DEFERRED) {
            t->count_deferred[n].fn = fn;
            t->count_deferred[n].site = site;
            t->count_deferred[n].ret = ret;
            t->count_deferred[n].sp = sp;
            /* A handler's caller is read from its signal frame, which is
             * gone when the call is counted (the words there by then are
             * anything: on_signal -> on_signal, 1 run of test_counting in
             * 7): found now. In a counting hook's slow path, the function
             * whose call or exit it counts, as the hooks' stack would have
             * it; else from the frame, the maps read as the sampler reads
             * them, not by libunwind, which the code interrupted may be in
             * (0, the caller unknown, when the frame alone does not say) */
            uintptr_t caller = 0;
            if (at_sigreturn(site)) {
                caller = t->count_current;
                if (!caller)
                    caller = handler_caller_fast(__atomic_load_n(&t->costs.count_entries, __ATOMIC_ACQUIRE), site, sp,
                                                 fn);
                if (caller == fn)
                    caller = 0;
            }
            t->count_deferred[n].caller = caller;
            cg_signal_fence();
            t->count_ndeferred = n + 1;
        } else {
            CG_COUNT(t->costs.lost);
        }
        return;
    }
    int saved = errno;
    /* While the guard is held, a handler's call is deferred and its caller
     * is the function whose call (or exit: cg_count_exit_slow, whose
     * replay this may be) is being counted, as the hooks' stack would have
     * it: set before the guard and cleared after it, so that no deferral
     * finds it unset (the signal frame alone does not tell in cgprof's own
     * code: a signal every 20 us put 1 call in 700 under an unknown
     * caller) */
    uintptr_t current = fn ? fn : t->count_current;
    for (;;) {
        t->count_current = current;
        cg_signal_fence();
        t->guard = CG_GUARD_HOOK;
        cg_signal_fence();
        if (fn)
            count_one(t, fn, site, ret, sp, NULL);
        fn = 0;
        /* the calls of handlers that came meanwhile, oldest first */
        for (uint32_t i = 0; i < t->count_ndeferred; i++)
            count_one(t, t->count_deferred[i].fn, t->count_deferred[i].site, t->count_deferred[i].ret,
                      t->count_deferred[i].sp, &t->count_deferred[i].caller);
        t->count_ndeferred = 0;
        cg_signal_fence();
        t->guard = 0;
        cg_signal_fence();
        t->count_current = 0;
        cg_signal_fence();
        /* one that came between the last look and the guard's release */
        if (!t->count_ndeferred)
            break;
    }
    errno = saved;
}

/* One call counted, t's guard held; known: a deferred handler call's
 * caller, found when it came. */
static void count_one(struct cg_thread *t, uintptr_t fn, uintptr_t site, uintptr_t ret, uintptr_t sp,
                      const uintptr_t *known)
{
    struct cg_costs *c = &t->costs;
    struct cg_count_table *tab = c->count;
    if (!tab || (tab->used + 1) * 2 > tab->mask + 1) {
        if (grow(c) != 0) {
            CG_COUNT(c->lost);
            goto out;
        }
        tab = c->count;
    }
    uint64_t k = cg_count_hash(ret, site);
    struct cg_count_slot *s;
    for (;; k++) {
        s = &tab->slot[k & tab->mask];
        if (!s->ret)
            break;
        if (s->ret == ret && s->site == site) {
            cg_cpu_count_one(&s->count);
            goto out;
        }
    }
    if (c->count_callbacks) {
        if (cb_find(c->count_callbacks, ret, site, sp)) {
            count_callback(t, fn, site, ret, sp);
            goto out;
        }
    }
    if (at_sigreturn(site)) {
        count_handler(t, fn, site, ret, sp, known);
        goto out;
    }
    /* an inlined copy's enter hook (not its function's own): folded into
     * the host, its hook call taken back; a slot all the same, for the
     * calls that still come (a site that could not be changed) */
    if (cg_takeback_own_in(fn, ret, 1) == 0) {
        cg_costs_count(&c->inlined_calls, 1);
        cg_fold_take(t, fn, ret, 1, CG_TB_INLINED);
        fill(tab, s, ret, site, CG_SINK);
        goto out;
    }
    uintptr_t caller = map_get(c->count_entries, function_of(site));
    if (!caller) {
        /* from code without hooks (or a part of a function not met yet):
         * no slot, its caller is on the stack */
        count_callback(t, fn, site, ret, sp);
        goto out;
    }
    uint32_t arc = cg_arc_find(c, caller, site, fn, 0, ret);
    if (arc == CG_SINK || entered(c, fn, ret) != 0 || map_put(c, &c->count_sites, site, fn) != 0) {
        CG_COUNT(c->lost);
        goto out;
    }
    fill(tab, s, ret, site, arc);
out:
    return;
}

void cg_count_exit_slow(struct cg_thread *t, uintptr_t fn, uintptr_t ret)
{
    if (t->guard)
        return;
    /* fn the caller of a handler's call deferred meanwhile (cg_count_slow) */
    t->count_current = fn;
    cg_signal_fence();
    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    int saved = errno;
    cg_takeback_exit(fn, ret, CG_TB_COUNTING, 0);
    t->count_exits[(ret >> 4 ^ ret >> 10) & (CG_COUNT_EXITS - 1)] = ret;
    errno = saved;
    cg_count_release(t);
    t->count_current = 0;
}
