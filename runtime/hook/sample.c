/* Sampled time (CGPROF_TIME=sample): the hooks keep the shadow stack and
 * count calls exactly but read no clock; each thread's time is a virtual
 * clock (cg_thread.vclock) that a per-thread CPU-time timer advances by one
 * period per signal. The hooks use that clock like the real one, so a
 * sample is charged, by the hooks' own arithmetic, as self time to the
 * segment of the top frame that is running and inclusive time to every
 * frame on the stack; costs add up exactly as in exact mode.
 *
 * A sample in the top frame's own code is charged where it landed, at the
 * interrupted instruction (cg_costs_sample_at), so that the line view
 * shows the line that ran, not the frame's entry or last call site.
 *
 * A sample that lands in code that is not instrumented (libc, a system
 * library) is walked with libunwind from the interrupted address up to the
 * top frame's function: the time goes to those functions, shown as called
 * from the top frame (cg_costs_sample), instead of to the top frame's self.
 *
 * The timers that send the samples, and the signal they come by, are
 * sampletimer.c's; this file charges each sample it hands over.
 *
 * libunwind is loaded privately (RTLD_LOCAL: Debian's libunwind.so.8 also
 * exports _Unwind_* and would take over C++ exceptions if linked) at
 * start-up, with its per-thread cache: libunwind's local unwinding is
 * async-signal-safe then (no malloc, no lock but dl_iterate_phdr's, which
 * is recursive in glibc). */
#define _GNU_SOURCE
#include "sample.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "compiler.h"
#include "counting.h"
#include "ehframe.h"
#include "generalpath.h"
#include "options.h"
#include "proc.h"
#include "real.h"
#include "unwinder.h"
#include "takeback.h"
#include "thread.h"
#include "util.h"
#include "x86insn.h"
#include "a64insn.h"
#include "cpu.h"

/* The hooks' entry points: a sample in them is the hooks' time. */
static uintptr_t hook_enter, hook_exit;
/* The code of libcgprof.so (empty when the runtime is linked into the
 * program): a sample in it is the hooks' time too, in what they call
 * before their guard is taken or after it is given back. */
static uintptr_t own_text_lo, own_text_hi;

#if CG_HAVE_LIBUNWIND
static const struct cg_unwinder *unwinder;

/* libunwind (unwinder.c), with its per-thread cache: its local unwinding
 * is async-signal-safe then (no malloc, no lock but dl_iterate_phdr's,
 * which is recursive in glibc). */
static void load_unwinder(void)
{
    const struct cg_unwinder *u = cg_unwinder();
    if (!u || !u->init_local2 || !u->step || !u->get_reg || !u->get_proc_info)
        return;
    if (u->local_addr_space && u->set_caching_policy)
        u->set_caching_policy(*u->local_addr_space, UNW_CACHE_PER_THREAD);
    __atomic_store_n(&unwinder, u, __ATOMIC_RELEASE);
}

/* Walks from the interrupted context up to the top frame's own: the first
 * whose call frame address is above top_sp (the stack pointer of the code
 * that called the top frame's enter hook: every call it made since is
 * below it). Not by its function: the code running in an inlined frame is
 * its host's, and a clone or a cold part (fn.constprop.0, fn.cold) is a
 * function of its own for the unwinder. Returns the number of
 * uninstrumented frames in between (fns[0] outermost), or 0 when the
 * sample is in the top frame's own code, in a hook (*hook set: before its
 * guard is taken or after it is given back), or cannot be walked within
 * CG_SAMPLE_DEPTH frames.
 *
 * *own is set when the interrupted code is the top frame's own, with *pc
 * the interrupted address: the machine function it is in is the one that
 * called the top frame's enter hook (top_code, its return address: the
 * clone's for a clone, the host's for an inlined frame), or starts at the
 * top frame's function (top_fn: the hook's place not known). Not a cold
 * part (fn.cold holds no enter hook): its time stays at the frame's
 * position, as does a sample in a frame the stack pointers alone would
 * call the top frame's (a frame left by a longjmp not seen yet). */
static unsigned walk(cg_sample_cursor_fn init, void *arg, uintptr_t top_sp, uintptr_t top_fn, uintptr_t top_code,
                     uintptr_t *fns, uintptr_t *sites, uintptr_t *pc, int *own, int *hook, uintptr_t *other)
{
    unw_cursor_t cur;
    const struct cg_unwinder *u = init ? init(&cur, arg) : NULL;
    if (!u)
        return 0;
    uintptr_t inner_fn[CG_SAMPLE_DEPTH + 1], inner_ip[CG_SAMPLE_DEPTH + 1];
    unw_word_t top_ip;
    unsigned n = 0;
    /* the frame's pc is where it was interrupted (the first frame, or the
     * one a signal frame interrupted), else a return address: its call is
     * the instruction before, which may end the function (a call that
     * does not return) */
    int exact = 1;
    for (;;) {
        unw_proc_info_t pi;
        unw_word_t ip, cfa;
        if (u->get_reg(&cur, UNW_REG_IP, &ip) < 0)
            return 0;
        /* The function's range from the unwind tables (no lock, no system
         * call); libunwind's get_proc_info reads the same entry but takes
         * its memory pool's lock, two sigprocmask calls a frame and two to
         * give it back: with the ring's clock, which counts system time,
         * the walks made samples of their own faster than they were read
         * at 50,000 samples a second (tests/progs/throws: 56 s instead of
         * 0.3). */
        uintptr_t begin, end;
        if (ip && cg_fde_range_loaded((uintptr_t)ip - (exact ? 0 : 1), &begin, &end) == 0) {
            pi.start_ip = begin;
            pi.end_ip = end;
        } else if (u->get_proc_info(&cur, &pi) < 0 || pi.start_ip == 0) {
            return 0;
        }
        if (pi.start_ip == hook_enter || pi.start_ip == hook_exit ||
            (pi.start_ip >= own_text_lo && pi.start_ip < own_text_hi)) {
            *hook = 1; /* a hook before or after its guard */
            return 0;
        }
        /* The signal trampoline (glibc's __restore_rt) between a handler
         * and the code it interrupted is no call of the program's: the
         * hooks see the handler called from the interrupted function. */
        int trampoline = u->is_signal_frame && u->is_signal_frame(&cur) > 0;
        int top_code_here = cg_sample_top_code(top_fn, top_code, (uintptr_t)pi.start_ip, (uintptr_t)pi.end_ip);
        /* the caller's stack pointer is this frame's call frame address;
         * where the step cannot be made (a ring's copy of the stack ends
         * before this frame's return address: a frame with a large array),
         * a frame in the top frame's code is taken for the top frame's */
        exact = trampoline;
        if (u->step(&cur) <= 0 || u->get_reg(&cur, UNW_REG_SP, &cfa) < 0) {
            if (!top_code_here)
                return 0;
            cfa = top_sp + 1;
        }
        if (cfa > top_sp) {
            if (n == 0 && top_code_here) {
                *own = 1;
                *pc = ip;
            }
            /* the frame the calls below come from is not the top frame's
             * code: maybe a function whose hooks already ended its call
             * (gcc's cleanup calls the exit hook, then _Unwind_Resume from
             * that frame) or have not begun it (a sanitizer's entry call
             * before the enter hook); the caller decides (charge) */
            if (!top_code_here)
                *other = (uintptr_t)pi.start_ip;
            top_ip = ip;
            break;
        }
        /* A recursion in code without frames (a throttled recursive
         * function: fib's 20 levels) is one visit of its function: the
         * innermost call keeps the sample's place, the outermost the call
         * from the frames above (the next function's return address). */
        if (trampoline || (n > 0 && inner_fn[n - 1] == pi.start_ip))
            continue;
        if (n == CG_SAMPLE_DEPTH)
            return 0;
        inner_fn[n] = pi.start_ip;
        inner_ip[n] = ip;
        n++;
    }
    if (n == 0)
        return 0;
    /* top_ip is the return address of the top frame's call into
     * inner_fn[n-1]; inner_ip[k] is the return address in inner_fn[k] of
     * its call into inner_fn[k-1], and inner_ip[0] the interrupted pc. */
    *pc = inner_ip[0];
    for (unsigned i = 0; i < n; i++) {
        fns[i] = inner_fn[n - 1 - i];
        sites[i] = i == 0 ? (uintptr_t)top_ip : inner_ip[n - i];
    }
    return n;
}
#else
static void load_unwinder(void)
{
}

static unsigned walk(cg_sample_cursor_fn init, void *arg, uintptr_t top_sp, uintptr_t top_fn, uintptr_t top_code,
                     uintptr_t *fns, uintptr_t *sites, uintptr_t *pc, int *own, int *hook, uintptr_t *other)
{
    (void)init, (void)arg, (void)top_sp, (void)top_fn, (void)top_code, (void)fns, (void)sites, (void)pc, (void)own, (void)hook,
        (void)other;
    return 0;
}
#endif

/* The GOT slot that a PLT entry at pc jumps through (cpu.h), or 0 when pc
 * is not one. */
static uintptr_t plt_slot(uintptr_t pc)
{
    unsigned char b[CG_CPU_PLT_BYTES];
    return cg_proc_peek(pc, b, sizeof b) == 0 ? cg_cpu_plt_slot(b, pc) : 0;
}

/* The function whose address the pointer at slot holds, or 0. */
static uintptr_t slot_value(uintptr_t slot)
{
    uintptr_t to;
    return slot && cg_proc_peek(slot, &to, sizeof to) == 0 ? to : 0;
}

/* Whether pc, in a function just under the top frame, is in a PLT entry
 * that jumps to a hook (the program's calls of the hooks go through one in
 * its own object): the hooks' time. */
static int at_hook_stub(uintptr_t pc)
{
    uintptr_t to = slot_value(plt_slot(pc));
    return to && (to == hook_enter || to == hook_exit);
}

/* Where fn, a function the walk found between the top frame and the
 * interrupted pc, calls the enter hook, or 0. An instrumented function's
 * enter hook call is its first call instruction, in its entry, before any
 * jump or return (the unwind tables' rule, docs/internals/takeback.md): decoded from
 * fn on to its first call, which reaches the hook directly (a static
 * runtime), through a PLT entry of the program's or through a GOT slot
 * (-fno-plt). A hook call taken back (its first byte changed, fold.h) is
 * no call: the hooks no longer see that function's calls. Kept per thread
 * (t->sampler.hooked): the decoding once per function, then one byte read
 * to see that the call is still there. */
static uintptr_t enter_call_of(struct cg_thread *t, uintptr_t fn)
{
    __typeof__(t->sampler.hooked[0]) *m = &t->sampler.hooked[((fn >> 4) ^ (fn >> 11)) & (CG_HOOKED_MEMO - 1)];
    if (m->fn != fn) {
        unsigned char code[192];
        size_t avail = sizeof code;
        /* fn may lie near the end of its mapping */
        while (avail >= 32 && cg_proc_peek(fn, code, avail) != 0)
            avail /= 2;
        uintptr_t enter = 0;
        for (size_t off = 0, k = 0; avail >= 32 && off < avail && k < 48; k++) {
            struct cg_insn in;
            unsigned len = CG_CPU_DECODE(code + off, avail - off, fn + off, &in);
            if (len == 0)
                break;
            if (in.kind == CG_INSN_CALL_REL || in.kind == CG_INSN_CALL_RIP) {
                uintptr_t to = in.kind == CG_INSN_CALL_RIP ? slot_value(in.mem) : in.target;
                if (to != hook_enter && !cg_takeback_prologue_fn(to))
                    to = slot_value(plt_slot(to));
                if (to == hook_enter)
                    enter = fn + off;
                /* another tool's entry call (ThreadSanitizer's) comes
                 * before the enter hook: on to the next call */
                if (cg_takeback_prologue_fn(to)) {
                    off += len;
                    continue;
                }
                break;
            }
            if (in.kind != CG_INSN_OTHER && in.kind != CG_INSN_JCC)
                break;
            off += len;
        }
        m->fn = fn;
        m->enter = enter;
    }
    unsigned char b[CG_CPU_CALL_BYTES];
    return m->enter && cg_proc_peek(m->enter, b, sizeof b) == 0 && cg_cpu_is_call(b) ? m->enter : 0;
}

/* A sample in the hooks (CGPROF_COMPENSATE): cgprof's own time, left out.
 * The thread's clock does not move, so no frame gets it; the amount is
 * the part's "Overhead compensated" (comp, unused by this clock
 * otherwise). */
static void left_out(struct cg_thread *t, uint64_t p)
{
    __atomic_store_n(&t->costs.comp, t->costs.comp + p, __ATOMIC_RELAXED);
}

/* The thread's sampled clock moves on by p: written by its own signal
 * handler, read by the dumps of other threads (cg_reading_take, inspect.c)
 * with an atomic load, so stored whole. */
static void advance(struct cg_thread *t, uint64_t p)
{
    __atomic_store_n(&t->vclock, t->vclock + p, __ATOMIC_RELAXED);
}

#if CG_HAVE_LIBUNWIND
/* CGPROF_STACKS=unwind: a sample charged by unwinding the whole stack
 * (counting.h: the hooks keep no frame). Each frame of a function with
 * hooks whose call has an arc (its return address, the function) gets the
 * period as inclusive time, as the frames of a shadow stack would; the
 * innermost such frame gets it as self time at the interrupted pc, or,
 * when the pc is in code without hooks that it called, those functions get
 * it (cg_costs_sample_from, visits as the hooks' sampler counts them). A
 * frame of a signal handler is called from the function the signal
 * interrupted (the trampoline's caller with hooks). Frames beyond
 * CG_UNWIND_DEPTH are not charged (counted in unplaced). */
static CG_NOINSTR void charge_unwound(struct cg_thread *t, void *uc, uint64_t p)
{
    struct cg_costs *c = &t->costs;
    const struct cg_unwinder *u = __atomic_load_n(&unwinder, __ATOMIC_ACQUIRE);
    unw_cursor_t cur;
    if (!u || u->init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0) {
        CG_COUNT(c->unplaced);
        return;
    }
    /* the thread's own buffers (made by counting.c with its table): a
     * handler's stack may be a small alternate one */
    if (!c->count_walk) {
        CG_COUNT(c->unplaced);
        return;
    }
    uintptr_t *ips = c->count_walk, *fns = c->count_walk + CG_UNWIND_DEPTH;
    unsigned char *sig = (unsigned char *)(c->count_walk + 2 * CG_UNWIND_DEPTH);
    unsigned n = 0;
    int deeper = 0;
    for (;;) {
        unw_proc_info_t pi;
        unw_word_t ip;
        if (u->get_reg(&cur, UNW_REG_IP, &ip) < 0)
            break;
        ips[n] = (uintptr_t)ip;
        fns[n] = u->get_proc_info(&cur, &pi) == 0 ? (uintptr_t)pi.start_ip : 0;
        sig[n] = u->is_signal_frame && u->is_signal_frame(&cur) > 0;
        if (n == 0 && (fns[0] == hook_enter || fns[0] == hook_exit ||
                       (fns[0] >= own_text_lo && fns[0] < own_text_hi) || at_hook_stub(ips[0]))) {
            /* in a hook (its counter, or its slow path before the guard) */
            if (cg_opts.compensate)
                left_out(t, p);
            return;
        }
        if (++n == CG_UNWIND_DEPTH) {
            deeper = 1;
            break;
        }
        if (u->step(&cur) <= 0)
            break;
    }
    advance(t, p);
    if (deeper)
        CG_COUNT(c->unplaced);
    /* frame k's function fns[k] was called from ips[k + 1]; a clone's or a
     * part's frame is its function's (the one its hooks name) */
    for (unsigned k = 0; k < n; k++) {
        uintptr_t f = fns[k] ? cg_count_function(c, fns[k]) : 0;
        if (f)
            fns[k] = f;
    }
    int inner = -1;
    for (unsigned k = 0; k + 1 < n; k++) {
        if (!fns[k])
            continue;
        /* its caller: the function whose code the call site is in, when
         * it has hooks; else (a signal handler's trampoline, a callback
         * from code without hooks) the next one up that has */
        uintptr_t caller = 0;
        for (unsigned j = k + 1; j < n && !caller; j++)
            if (fns[j] && cg_count_function(c, fns[j]) == fns[j])
                caller = fns[j];
        uint32_t a = cg_costs_arc_of(c, caller, ips[k + 1], fns[k]);
        if (a == CG_SINK)
            continue;
        __atomic_store_n(&c->arcs[a].incl, c->arcs[a].incl + p, __ATOMIC_RELEASE);
        if (inner < 0)
            inner = (int)k;
    }
    if (inner < 0)
        return; /* nothing with hooks on the stack: outside the program's instrumented code */
    uintptr_t f = fns[inner];
    if (inner == 0) {
        cg_costs_charge_self(c, f, ips[0], p);
        return;
    }
    /* In code without hooks called from f (or in a function with hooks
     * before its first call from there is counted: its prologue, its
     * time the caller's, at its call) */
    unsigned m = (unsigned)inner;
    int hooked = 0;
    for (unsigned k = 0; k < m && !hooked; k++)
        hooked = fns[k] == 0 || sig[k] || enter_call_of(t, fns[k]) != 0;
    if (hooked || m > CG_SAMPLE_DEPTH) {
        cg_costs_charge_self(c, f, ips[inner], p);
        return;
    }
    uintptr_t vf[CG_SAMPLE_DEPTH], vs[CG_SAMPLE_DEPTH];
    for (unsigned i = 0; i < m; i++) {
        vf[i] = fns[m - 1 - i];
        vs[i] = ips[m - i];
    }
    if (cg_costs_sample_from(c, f, vf, vs, m, ips[0], p, 0, t->sampler.sample_last, &t->sampler.sample_nlast) != 0)
        cg_costs_charge_self(c, f, ips[inner], p);
}
#endif

static void charge_walked(struct cg_thread *t, uint64_t p, cg_sample_cursor_fn init, void *arg);

/* The walk of a sample sent as a signal: from the context the kernel
 * saved, the stack itself. */
static const struct cg_unwinder *init_from_signal(void *cursor, void *uc)
{
#if CG_HAVE_LIBUNWIND
    const struct cg_unwinder *u = __atomic_load_n(&unwinder, __ATOMIC_ACQUIRE);
    return u && u->init_local2((unw_cursor_t *)cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) >= 0 ? u : NULL;
#else
    (void)cursor, (void)uc;
    return NULL;
#endif
}

/* A sample sent as a signal (sampletimer.c's handler), of the timer's
 * period. */
static CG_NOINSTR void charge(siginfo_t *si, void *uc, uint64_t period)
{
    int saved = errno;
    struct cg_thread *t = cg_self;
    if (!t || !t->costs.frames || t->guard == CG_GUARD_RUNTIME) {
        errno = saved;
        return;
    }
    uint64_t p = period;
    if (si && si->si_code == SI_TIMER && si->si_overrun > 0)
        p *= 1 + (uint64_t)si->si_overrun;
    t->sampler.samples++;
#if CG_HAVE_LIBUNWIND
    if (cg_fast_mode == CG_FAST_COUNT) {
        if (t->guard || t->ndeferred) {
            /* in a counting hook's slow path, or the runtime's work */
            if (t->guard == CG_GUARD_HOOK && cg_opts.compensate)
                left_out(t, p);
            else
                advance(t, p);
        } else {
            t->guard = CG_GUARD_HOOK;
            cg_signal_fence();
            charge_unwound(t, uc, p);
            cg_count_release(t);
        }
        errno = saved;
        return;
    }
#endif
    /* In a hook: cgprof's own time, left out with CGPROF_COMPENSATE. Else
     * (or nothing instrumented running) the clock moves on and the hooks
     * charge the time where it belongs. */
    if (t->guard || t->ndeferred || t->costs.depth == 0) {
        if (t->guard == CG_GUARD_HOOK && cg_opts.compensate)
            left_out(t, p);
        else
            advance(t, p);
        errno = saved;
        return;
    }

    t->guard = CG_GUARD_HOOK;
    cg_signal_fence();
    charge_walked(t, p, init_from_signal, uc);
    cg_guard_release(t);
    errno = saved;
}

void cg_sample_charge_own(struct cg_thread *t, uint64_t p, uintptr_t pc)
{
    advance(t, p);
    cg_costs_sample_at(&t->costs, pc, p);
}

void cg_sample_charge_held(struct cg_thread *t, uint64_t p, cg_sample_cursor_fn init, void *arg)
{
    if (!t->costs.frames || t->costs.depth == 0)
        advance(t, p);
    else
        charge_walked(t, p, init, arg);
}

/* One sample of period p on thread t, its guard held, with something on
 * its stack: walked from the cursor init makes (the signal's context, or a
 * ring buffer's sample) up to the top frame, and charged. */
static CG_NOINSTR void charge_walked(struct cg_thread *t, uint64_t p, cg_sample_cursor_fn init, void *arg)
{
    struct cg_frame *top = &t->costs.frames[t->costs.depth - 1];
    uintptr_t fns[CG_SAMPLE_DEPTH], sites[CG_SAMPLE_DEPTH], pc = 0;
    int own = 0, hook = 0;
    uintptr_t other = 0;
    unsigned n = walk(init, arg, top->sp, top->fn, cg_frame_code(top), fns, sites, &pc, &own, &hook, &other);
    /* Calls into code without hooks made from the frame of a function
     * with hooks that is not the top frame's (its exit hook already ran,
     * its enter hook not yet): their visits would be counted on arcs
     * from the top frame at a site in that function's code, which the
     * writer shows as one more call of that function (tests/progs/throws,
     * sampled: main -> level 1001 for 1000). The hooks count its calls;
     * the time stays the top frame's, as for its own code. */
    if (n && other && enter_call_of(t, other))
        n = 0;
    /* The outermost function of the walk that is instrumented (k < n):
     * outside its hooks, not framed. In its prologue before its first call
     * from here (no arc yet), or called from code that is not instrumented
     * (qsort's comparator, zlib's free callback, a signal handler run in a
     * system call), or in the PLT entry of a hook it calls (then the hooks'
     * time). Its hooks count its calls: a visit counted on its arc was one
     * call too many (issue 38). Its time stays the top frame's (k == 0) or
     * is that of the code that called it, at its call. */
    unsigned k = n;
    for (unsigned i = 0; i < n && k == n; i++)
        if (enter_call_of(t, fns[i]))
            k = i;
    if (cg_opts.compensate && (hook || (!own && (n == 1 || k + 2 == n) && at_hook_stub(pc)))) {
        left_out(t, p);
        return;
    }
    advance(t, p);
    if (own)
        cg_costs_sample_at(&t->costs, pc, p); /* or left to the hooks, at the frame's position */
    else if (n == 1 && cg_costs_sample_call(&t->costs, fns[0], sites[0], pc, p) == 0)
        ; /* an instrumented call's prologue or epilogue: its own time */
    else if (n == 1 && t->costs.filter && cg_addrset_has(t->costs.filter->skip, fns[0]))
        cg_costs_sample_at(&t->costs, pc, p); /* a function left out: its code is its caller's */
    else if (k < n) {
        if (k > 0 && cg_costs_sample(&t->costs, fns, sites, k, sites[k], p, t->nhooks != t->sampler.sample_hooks,
                                     t->sampler.sample_last, &t->sampler.sample_nlast) == 0)
            top->t_last += p; /* not the top frame's self time */
    } else if (n && cg_costs_sample(&t->costs, fns, sites, n, pc, p, t->nhooks != t->sampler.sample_hooks,
                                    t->sampler.sample_last, &t->sampler.sample_nlast) == 0)
        top->t_last += p; /* not the top frame's self time */
    t->sampler.sample_hooks = t->nhooks;
}

int cg_sample_init(uintptr_t enter_hook, uintptr_t exit_hook)
{
    hook_enter = enter_hook;
    hook_exit = exit_hook;
    if (cg_opts.time != CG_TIME_SAMPLE || !cg_sample_timers_init(charge))
        return 0;
    /* not the program's own text, which holds the runtime when it is
     * linked in */
    uintptr_t lo, hi;
    int main_program;
    if (cg_proc_code_segment(hook_enter, &lo, &hi, &main_program) && !main_program) {
        own_text_lo = lo;
        own_text_hi = hi;
    }
    cg_sampling = 1;
    return 0;
}

void cg_sample_set_up(void)
{
    if (cg_sampling && !cg_sample_few_fds())
        load_unwinder();
}
