/* Sampled time without signals (CGPROF_SAMPLE_TIMER=ring): see
 * samplering.h.
 *
 * Why a ring buffer read by the thread itself, at its next hook: each
 * thread's perf_event task clock writes a record per period (the user
 * registers and a copy of the top of the user stack, as `perf record
 * --call-graph=dwarf` asks) into a buffer mapped here; no signal is sent,
 * so none lands in a system call (no EINTR, nothing pending across exec)
 * and the clock may count the kernel's time on the thread's behalf. The
 * shadow stack a sample is charged to is the one of the moment it was
 * taken: the hooks change it, and between two hooks it does not change, so
 * the records that came since the last hook are charged, in order, by the
 * next one, before its own event, to the stack as it still is. The hooks
 * see them by the same test as time off the CPU (costs_inlines.h,
 * cg_costs_switched: the ring's head against the last drained), which that
 * mode (exact time only) does not use in sampled time: no test more on the
 * hot path. Code between hooks that runs longer than the buffer holds
 * (RING_PAGES of records) loses records; the kernel says how many
 * (PERF_RECORD_LOST), and their time is the top frame's, as a sample's that
 * cannot be walked.
 *
 * A record in code without hooks is walked with libunwind over the copy
 * of the stack taken with it (an address space of our own accessors: the
 * stack from the copy, code and unwind tables from memory, where they
 * still are), up to the top frame, as a signal's context is walked
 * (sample.c). */
#define _GNU_SOURCE
#include "samplering.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "costs.h"
#include "cpu.h"
#include "ehframe.h"
#include "generalpath.h"
#include "options.h"
#include "proc.h"
#include "sample.h"
#include "thread.h"
#include "unwinder.h"
#include "util.h"

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#define RING_REGS ((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))
#define RING_HAVE_ARCH 1
#else
#define RING_HAVE_ARCH 0
#endif

/* 2 KB of stack a record (a walk stops where the copy ends: a recursion
 * without hooks 30 deep took 1.4 KB; perf's --call-graph=dwarf copies
 * 8 KB), 64 pages of records (256 KB with 4 KB pages: about 120 records,
 * 120 ms of code without a hook at 1000 Hz before the kernel drops them;
 * see ring_overflow for those). */
enum { RING_PAGES = 64, STACK_BYTES = 2048, RECORD_MAX = 64 + STACK_BYTES + 64 };
/* What the service thread may copy out of a thread's ring while it runs
 * without a hook (cg_ring_spill): 2 MB of address space, mapped at the
 * first need and touched as used (about 1,000 records: 1 s at 1000 Hz);
 * not locked memory, as the ring is. */
enum { SPILL_BYTES = 2 << 20 };
/* Address space a ring or a spill buffer leaves to the program (RLIMIT_AS:
 * cg_proc_room), or it is not made: the signals' timer, or records
 * dropped, cost the program none (test_guest MemoryLimit). */
enum { ROOM_SPARE = 4 << 20 };

static int enabled, exclude_kernel;
static long page;
static uint64_t period;

/* One record, as the walk reads it. */
struct ring_sample {
    uint64_t bp, sp, ip;
    const unsigned char *stack; /* the copy of [sp, sp + len) */
    uint64_t len;
};

static int open_event(int excl)
{
#if RING_HAVE_ARCH
    struct perf_event_attr a;
    cg_sample_task_clock(&a, excl);
    a.sample_type = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = RING_REGS;
    a.sample_stack_user = STACK_BYTES;
    a.exclude_callchain_kernel = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
#else
    (void)excl;
    errno = ENOSYS;
    return -1;
#endif
}

static int drain_hook(struct cg_thread *t)
{
    return cg_ring_drain(t, cg_sample_paused());
}

/* Whether the program runs under Valgrind, whose translation of it the
 * kernel would sample (registers and stacks of code that is not the
 * program's): its preload library is in LD_PRELOAD. */
static int under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}

void cg_ring_init(void)
{
    /* asked for, or the default (auto) where it serves: then silent when
     * it cannot, the signals' timer serving as before */
    int asked = cg_opts.sample_timer == CG_SAMPLE_TIMER_RING;
    if (!cg_sampling || !(asked || cg_opts.sample_timer == CG_SAMPLE_TIMER_AUTO))
        return;
    if (cg_opts.stacks == CG_STACKS_UNWIND) {
        if (asked)
            cg_warn("CGPROF_SAMPLE_TIMER=ring is not for CGPROF_STACKS=unwind; sampling with signals");
        return;
    }
    /* By default, not under an address-space limit either: a ring is
     * 264 kB a thread and its copies up to 2 MB more, which a program
     * sized to its limit would miss (test_guest MemoryLimit: its 4 MB
     * blocks or its thread's stack failed where they did not without
     * cgprof); the signals' timer takes none. */
    struct rlimit as;
    int limited = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    /* At any rate: a walk of code without hooks makes no system call (the
     * function's range and unwind entry come from the tables in memory:
     * sample.c's walk, find_proc_info below). With libunwind's own
     * lookups, which block signals, the walks at 50,000 samples a second
     * made samples faster than they were read (tests/progs/throws took 81 s
     * instead of 0.3), and auto kept the signals above 20,000 Hz. */
    if (!asked && (cg_sample_few_fds() || under_valgrind() || limited))
        return;
    if (!RING_HAVE_ARCH) {
        /* the records' registers are x86-64's for now: not the kernel's
         * refusal, which the message below would say */
        if (asked)
            cg_warn("CGPROF_SAMPLE_TIMER=ring is not on %s yet (docs/limitations.md); sampling with signals",
                    CG_CPU_NAME);
        return;
    }
    period = cg_sample_period_ns();
    page = sysconf(_SC_PAGESIZE);
    /* the kernel's time counted first: no signal can land in it here */
    int err = 0;
    for (int excl = 0; excl <= 1 && !enabled; excl++) {
        int fd = open_event(excl);
        if (fd >= 0) {
            close(fd);
            exclude_kernel = excl;
            enabled = 1;
        } else {
            err = errno;
        }
    }
    if (!enabled) {
        if (asked)
            cg_warn("CGPROF_SAMPLE_TIMER=ring: the kernel refuses a sampling perf_event here (%s); sampling with "
                "signals", strerror(err));
        return;
    }
    cg_sample_ring_chosen(exclude_kernel
                              ? "perf_event task clock read from a ring buffer, no signal, user time only"
                              : "perf_event task clock read from a ring buffer, no signal, system time counted");
    __atomic_store_n(&cg_general_drain_samples, drain_hook, __ATOMIC_RELEASE);
}

/* The calling thread's CPU time, ns (a system call: only where records
 * were dropped, and at the start). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The ring and the spill buffer are the thread's and the service
 * thread's in turn. The thread waits (its drain, its end): the service
 * thread holds them for one copy of at most a ring (tens of us), and never
 * waits for the thread. */
static void lock_as_owner(struct cg_thread *t)
{
    for (unsigned n = 0;; n++) {
        int held = 0;
        if (__atomic_compare_exchange_n(&t->sampler.ring_lock, &held, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        /* Held by this thread itself: a drain that never ended, left by a
         * siglongjmp out of a signal handler that interrupted the hook
         * draining (no drain runs inside another: the guard defers a
         * handler's hooks). Ours still; waiting for it hung the program
         * (test_guest SignalJumps with the ring). */
        if (held == 1)
            return;
        if (n >= 64)
            sched_yield(); /* the service thread was preempted holding it */
    }
}

static void unlock_ring(struct cg_thread *t)
{
    __atomic_store_n(&t->sampler.ring_lock, 0, __ATOMIC_RELEASE);
}

int cg_ring_thread_start(struct cg_thread *t)
{
    if (!enabled || t->sampler.ring)
        return t->sampler.ring ? 0 : -1;
    int saved = errno;
    t->sampler.ring_cpu0 = thread_cpu_ns();
    t->sampler.ring_taken = t->sampler.ring_ahead = 0;
    size_t len = (size_t)page * (1 + RING_PAGES);
    /* refused: 2 no room for it, 1 the kernel's refusal (its part says
     * which; the signals' timer serves it, cg_sample_thread_start) */
    int refused = 2;
    if (!cg_proc_room(len + ROOM_SPARE))
        goto refused;
    refused = 1;
    int fd = open_event(exclude_kernel);
    void *ring = fd >= 0 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    /* The mapping holds the event (as offcpu.c's): no descriptor stays
     * for the program to see, close or reuse under us. */
    if (fd >= 0)
        close(fd);
    if (ring == MAP_FAILED)
        goto refused;
    t->costs.switch_seen = 0;
    if (cg_costs_watch(&t->costs, (const volatile uint64_t *)&((struct perf_event_mmap_page *)ring)->data_head) != 0) {
        munmap(ring, len);
        goto refused;
    }
    __atomic_store_n(&t->costs.ring_refused, 0, __ATOMIC_RELAXED);
    t->sampler.ring = ring;
    errno = saved;
    return 0;
refused:
    __atomic_store_n(&t->costs.ring_refused, refused, __ATOMIC_RELAXED);
    errno = saved;
    return -1;
}

void cg_ring_thread_stop(struct cg_thread *t)
{
    if (!t->sampler.ring)
        return;
    if (!cg_costs_ring_mine(&t->costs)) {
        /* a child of a fork that ran no atfork handler: the ring is its
         * parent's, not mapped here (the address may be anything now) */
        t->sampler.ring = NULL;
        return;
    }
    /* what came since the thread's last hook, into its last part */
    int guard = t->guard;
    t->guard = CG_GUARD_RUNTIME;
    cg_signal_fence();
    cg_ring_drain(t, cg_sample_paused());
    cg_signal_fence();
    t->guard = guard;
    int saved = errno;
    cg_costs_unwatch(&t->costs);
    lock_as_owner(t); /* not while the service thread spills it */
    munmap(t->sampler.ring, (size_t)page * (1 + RING_PAGES));
    __atomic_store_n(&t->sampler.ring, NULL, __ATOMIC_RELEASE);
    if (t->sampler.spill)
        munmap(t->sampler.spill, SPILL_BYTES);
    t->sampler.spill = NULL;
    t->sampler.spill_used = 0;
    unlock_ring(t);
    errno = saved;
}

void cg_ring_forked(struct cg_thread *t)
{
    if (!t || !t->sampler.ring)
        return;
    /* The kernel does not copy a perf_event mapping into a child
     * (VM_DONTCOPY): the address holds nothing now (and the word of its
     * head is wiped: cg_costs_watch). Forgotten, and the thread sampled by
     * an event of its own. */
    cg_costs_unwatch(&t->costs);
    t->sampler.ring = NULL;
    /* the parent's records (the spill buffer is copied, and no spill was
     * under way: the fork waited for the dump lock) */
    t->sampler.spill_used = 0;
    t->sampler.ring_lock = 0;
    cg_ring_thread_start(t);
}

/* ---- the walk over a copy of the stack ---------------------------------------- */

#if CG_HAVE_LIBUNWIND && RING_HAVE_ARCH
static unw_addr_space_t space;
static unw_accessors_t *local;
static const struct cg_unwinder *unw;

/* The unwind entry of the function at ip, from the .eh_frame_hdr search
 * table of the object that holds it (_dl_find_object: no lock, no system
 * call), read through this space's own accessors. The local space's
 * lookup (dl_iterate_phdr) blocks signals around it, two sigprocmask
 * calls a frame: the ring's clock counts system time, so each walk made
 * samples of its own, and at 50,000 samples a second the walks never
 * caught up (tests/progs/throws took 80 s instead of 0.3). That lookup
 * stays for what this one cannot read (no search table, or a libunwind
 * without the function). */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg)
{
    struct dl_find_object o;
    const unsigned char *table;
    size_t count;
    if (unw->search_unwind_table && _dl_find_object((void *)ip, &o) == 0 && o.dlfo_eh_frame &&
        cg_fde_table(o.dlfo_eh_frame, 0, &table, &count) == 0) {
        unw_dyn_info_t di;
        memset(&di, 0, sizeof di);
        di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
        di.start_ip = (unw_word_t)o.dlfo_map_start;
        di.end_ip = (unw_word_t)o.dlfo_map_end;
        di.u.rti.segbase = (unw_word_t)o.dlfo_eh_frame;
        di.u.rti.table_data = (unw_word_t)table;
        /* in words, as libunwind counts it: two 4-byte fields an entry */
        di.u.rti.table_len = count * 8 / sizeof(unw_word_t);
        return unw->search_unwind_table(as, ip, &di, pi, need, arg);
    }
    return local->find_proc_info(*unw->local_addr_space, ip, pi, need, NULL);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
    (void)as, (void)arg;
    local->put_unwind_info(*unw->local_addr_space, pi, NULL);
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
    (void)as, (void)arg;
    return local->get_dyn_info_list_addr(*unw->local_addr_space, addr, NULL);
}

/* The stack from the copy; code and unwind tables from memory, only in an
 * object's mapping (_dl_find_object: no lock, no system call); anything
 * else (the stack beyond the copy, which the thread has used since) is
 * refused and the walk ends there. */
static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    const struct ring_sample *s = arg;
    if (write)
        return -UNW_EREADONLYREG;
    if (addr >= s->sp && addr - s->sp + sizeof *val <= s->len) {
        memcpy(val, s->stack + (addr - s->sp), sizeof *val);
        return 0;
    }
    struct dl_find_object o;
    if (_dl_find_object((void *)addr, &o) == 0 && addr >= (uintptr_t)o.dlfo_map_start &&
        addr + sizeof *val <= (uintptr_t)o.dlfo_map_end) {
        memcpy(val, (const void *)addr, sizeof *val);
        return 0;
    }
    return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
    (void)as;
    const struct ring_sample *s = arg;
    if (write)
        return -UNW_EREADONLYREG;
    switch (reg) {
    case UNW_X86_64_RIP:
        *val = s->ip;
        return 0;
    case UNW_X86_64_RSP:
        *val = s->sp;
        return 0;
    case UNW_X86_64_RBP:
        *val = s->bp;
        return 0;
    default:
        return -UNW_EBADREG;
    }
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
    (void)as, (void)reg, (void)val, (void)write, (void)arg;
    return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
    (void)as, (void)c, (void)arg;
    return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off, void *arg)
{
    (void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
    return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {find_proc_info, put_unwind_info, get_dyn_info_list_addr, access_mem,
                                    access_reg,     access_fpreg,    resume,                 get_proc_name};

void cg_ring_set_up(void)
{
    const struct cg_unwinder *u = cg_unwinder_generic();
    if (!enabled || !u || !u->create_addr_space || !u->init_remote || !u->get_accessors || !u->local_addr_space)
        return;
    local = u->get_accessors(*u->local_addr_space);
    if (!local)
        return;
    unw_addr_space_t as = u->create_addr_space(&accessors, 0);
    if (!as)
        return;
    /* a cache per thread, as the signals' walks have: no lock (a hook
     * may run in a signal handler that interrupted this very thread) */
    if (u->set_caching_policy)
        u->set_caching_policy(as, UNW_CACHE_PER_THREAD);
    unw = u;
    __atomic_store_n(&space, as, __ATOMIC_RELEASE);
}

static const struct cg_unwinder *init_from_ring(void *cursor, void *arg)
{
    unw_addr_space_t as = __atomic_load_n(&space, __ATOMIC_ACQUIRE);
    return as && unw->init_remote((unw_cursor_t *)cursor, as, arg) >= 0 ? unw : NULL;
}
#else
void cg_ring_set_up(void)
{
}

static const struct cg_unwinder *init_from_ring(void *cursor, void *arg)
{
    (void)cursor, (void)arg;
    return NULL;
}
#endif

/* ---- draining ------------------------------------------------------------------ */

static void copy_out(const unsigned char *data, uint64_t size, uint64_t at, void *dst, size_t n)
{
    uint64_t off = at % size;
    size_t first = n < size - off ? n : (size_t)(size - off);
    memcpy(dst, data + off, first);
    if (first < n)
        memcpy((unsigned char *)dst + first, data, n - first);
}

/* The fields of a sample record (PERF_SAMPLE_REGS_USER, then
 * PERF_SAMPLE_STACK_USER) in rec[0, len): 0, or -1 when it is not one. */
static int parse(const unsigned char *rec, size_t len, struct ring_sample *s)
{
    size_t at = sizeof(struct perf_event_header);
    uint64_t abi, size;
    memset(s, 0, sizeof *s);
    if (at + 8 > len)
        return -1;
    memcpy(&abi, rec + at, 8);
    at += 8;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        uint64_t r[3]; /* ascending register numbers: bp, sp, ip */
        if (at + sizeof r > len)
            return -1;
        memcpy(r, rec + at, sizeof r);
        at += sizeof r;
        s->bp = r[0];
        s->sp = r[1];
        s->ip = r[2];
    }
    if (at + 8 > len)
        return -1;
    memcpy(&size, rec + at, 8);
    at += 8;
    if (size) {
        uint64_t dyn;
        if (at + size + 8 > len)
            return -1;
        memcpy(&dyn, rec + at + size, 8);
        s->stack = rec + at;
        s->len = dyn < size ? dyn : size;
    }
    return abi == PERF_SAMPLE_REGS_ABI_NONE ? -1 : 0;
}

/* Records dropped while the thread ran without a hook for longer than
 * its buffer holds (a loop that calls nothing): the kernel says how many
 * only once there is room again, so at the hook after the next one, when
 * the stack may have changed. Where the event counts all of the thread's
 * CPU time (system time counted), the thread's CPU clock says it at once:
 * at a drain that found the buffer full, the periods elapsed since the
 * thread's start that no record accounts for are charged now, to the stack
 * that was running (and still is), and the kernel's count, when it comes,
 * is taken against them (ring_ahead). */
static void ring_overflow(struct cg_thread *t, int discard)
{
    if (exclude_kernel)
        return;
    uint64_t now = thread_cpu_ns();
    if (!now || now < t->sampler.ring_cpu0)
        return;
    uint64_t expected = (now - t->sampler.ring_cpu0) / period;
    /* one period of slack: the record of the period under way */
    if (expected <= t->sampler.ring_taken + 1)
        return;
    uint64_t missing = expected - t->sampler.ring_taken - 1;
    t->sampler.ring_taken += missing;
    t->sampler.ring_ahead += missing;
    if (!discard)
        cg_sample_charge_held(t, missing * period, NULL, NULL);
}

/* Whether pc is in the top frame's own code (the machine function that
 * called its enter hook, or that starts at its function), told from the
 * unwind tables alone (_dl_find_object: no lock, no system call): most
 * samples are, and a libunwind walk to say so cost 17 us a sample here
 * (tests/bench/samplecost.py). A deeper frame of the same function that
 * keeps no frame of its own (a recursion whose hooks were taken back) is
 * taken for it: its time is that function's either way. */
static int in_top_code(const struct cg_thread *t, uintptr_t pc)
{
    const struct cg_costs *c = &t->costs;
    if (!c->frames || c->depth == 0)
        return 0;
    const struct cg_frame *top = &c->frames[c->depth - 1];
    uintptr_t begin, end;
    return cg_fde_range_loaded(pc, &begin, &end) == 0 && cg_sample_top_code(top->fn, cg_frame_code(top), begin, end);
}

/* One record (h, whole at rec), charged to the stack as it is (or, discard
 * set, only counted). */
static void take(struct cg_thread *t, const struct perf_event_header *h, const unsigned char *rec, int discard)
{
    if (h->type == PERF_RECORD_SAMPLE) {
        struct ring_sample s;
        t->sampler.samples++;
        t->sampler.ring_taken++;
        if (!discard) {
            if (parse(rec, h->size, &s) == 0 && in_top_code(t, s.ip))
                cg_sample_charge_own(t, period, s.ip);
            else if (s.ip)
                cg_sample_charge_held(t, period, init_from_ring, &s);
            else
                cg_sample_charge_held(t, period, NULL, NULL);
        }
    } else if (h->type == PERF_RECORD_LOST && h->size >= sizeof *h + 16) {
        uint64_t lost;
        memcpy(&lost, rec + sizeof *h + 8, sizeof lost);
        t->sampler.samples += lost;
        __atomic_store_n(&t->costs.ring_lost, t->costs.ring_lost + lost, __ATOMIC_RELAXED);
        /* those charged already by the clock (ring_overflow) */
        uint64_t known = lost < t->sampler.ring_ahead ? lost : t->sampler.ring_ahead;
        t->sampler.ring_ahead -= known;
        lost -= known;
        t->sampler.ring_taken += lost;
        if (!discard && lost)
            cg_sample_charge_held(t, lost * period, NULL, NULL);
    }
}

int cg_ring_drain(struct cg_thread *t, int discard)
{
    struct perf_event_mmap_page *m = t->sampler.ring;
    if (!m || !cg_costs_ring_mine(&t->costs))
        return 0;
    int saved = errno;
    lock_as_owner(t);
    /* first what the service thread copied out, the older records */
    size_t used = t->sampler.spill_used;
    for (size_t at = 0; at + sizeof(struct perf_event_header) <= used;) {
        struct perf_event_header h;
        memcpy(&h, t->sampler.spill + at, sizeof h);
        if (h.size < sizeof h || at + h.size > used)
            break;
        take(t, &h, t->sampler.spill + at, discard);
        at += h.size;
    }
    if (used > (1u << 20))
        madvise(t->sampler.spill, used, MADV_DONTNEED); /* not kept resident */
    t->sampler.spill_used = 0;
    const unsigned char *data = (const unsigned char *)m + page;
    uint64_t size = (uint64_t)page * RING_PAGES;
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = m->data_tail;
    int full = head - tail + RECORD_MAX > size;
    while (tail < head) {
        struct perf_event_header h;
        copy_out(data, size, tail, &h, sizeof h);
        if (h.size < sizeof h || tail + h.size > head)
            break;
        if (h.size <= RECORD_MAX) {
            unsigned char rec[RECORD_MAX];
            copy_out(data, size, tail, rec, h.size);
            take(t, &h, rec, discard);
        }
        tail += h.size;
    }
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
    unlock_ring(t);
    t->costs.switch_seen = head;
    if (full)
        ring_overflow(t, discard);
    errno = saved;
    return 1;
}

void cg_ring_spill(struct cg_thread *t)
{
    int free = 0;
    if (!__atomic_load_n(&t->sampler.ring, __ATOMIC_ACQUIRE) ||
        !__atomic_compare_exchange_n(&t->sampler.ring_lock, &free, 2, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    struct perf_event_mmap_page *m = t->sampler.ring;
    uint64_t size = (uint64_t)page * RING_PAGES;
    uint64_t head = m ? __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE) : 0;
    uint64_t tail = m ? m->data_tail : 0;
    if (m && head - tail > size / 2) {
        int saved = errno;
        if (!t->sampler.spill && cg_proc_room(SPILL_BYTES + ROOM_SPARE)) {
            void *b = mmap(NULL, SPILL_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            t->sampler.spill = b == MAP_FAILED ? NULL : b;
        }
        const unsigned char *data = (const unsigned char *)m + page;
        while (t->sampler.spill && tail < head) {
            struct perf_event_header h;
            copy_out(data, size, tail, &h, sizeof h);
            if (h.size < sizeof h || tail + h.size > head || t->sampler.spill_used + h.size > SPILL_BYTES)
                break; /* full: the kernel drops records, and says so (PERF_RECORD_LOST) */
            copy_out(data, size, tail, t->sampler.spill + t->sampler.spill_used, h.size);
            t->sampler.spill_used += h.size;
            tail += h.size;
        }
        __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
        errno = saved;
    }
    unlock_ring(t);
}

uint64_t cg_ring_spill_interval_ns(void)
{
    if (!enabled)
        return 0;
    /* the records a ring holds (each its registers and STACK_BYTES of
     * stack: about RECORD_MAX - 64 bytes): a quarter of them */
    uint64_t records = (uint64_t)page * RING_PAGES / (RECORD_MAX - 64);
    uint64_t ns = period * (records / 4);
    return ns < 2000000 ? 2000000 : ns;
}
