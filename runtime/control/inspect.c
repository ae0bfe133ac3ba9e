/* Stacks and counters for cgprof-control: see inspect.h.
 *
 * The threads run on while they are read. Everything here reads their
 * tables as cg_reading_take does: the depth before the frames pointer (a
 * frames array is at least as long as any depth read before it was
 * loaded), arrays outgrown kept mapped while the dump lock's reader count is
 * up, entries published before their counts. A frame may be rewritten while
 * it is copied (a call that ends, another that starts at the same depth):
 * each stack is copied twice and compared, until two copies agree or a few
 * tries have passed; then the frames that differed between the last two
 * are said to have moved. Nothing read is ever followed as a pointer but
 * the arrays' own, and an index read from a frame is checked against the
 * count of its array before it is used. */
#define _GNU_SOURCE
#include "inspect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "latency.h"
#include "offcpu.h"
#include "proc.h"
#include "symcache.h"
#include "symbols.h"
#include "thread.h"
#include "total.h"

/* The threads that ended: how many, and the calls they made (each one's
 * last reading), for the process's counters after their tables are gone. */
static unsigned ended_threads;
static uint64_t ended_calls;

void cg_inspect_thread_ended(const struct cg_reading *cur)
{
    ended_threads++;
    for (uint32_t i = 1; i < cur->narcs; i++)
        ended_calls += cur->count[i];
}

void cg_inspect_forked(void)
{
    ended_threads = 0;
    ended_calls = 0;
}

/* A value in a reply line: bytes that would end the word or the line, and
 * the backslash, as \xHH (the control reads them back). "-" for none. */
static void put_word(struct cg_buf *b, const char *s)
{
    if (!s || !*s) {
        cg_buf_putc(b, '-');
        return;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= 0x20 || *p == 0x7f || *p == '\\' || (*p == '-' && p == (const unsigned char *)s && !p[1]))
            cg_buf_printf(b, "\\x%02x", *p);
        else
            cg_buf_putc(b, (char)*p);
    }
}

/* Now on t's clock; with time off the CPU pending, when it went off (as a
 * dump reads it: its running frames' times are those on the CPU). */
static uint64_t thread_now(const struct cg_thread *t)
{
    const struct cg_costs *c = &t->costs;
    if (c->vclock)
        return __atomic_load_n(c->vclock, __ATOMIC_RELAXED);
    uint64_t pending = 0, now = cg_offcpu_read_time(t, &pending);
    return now == CG_NOW ? cg_costs_time_of(c, cg_clock_now()) : now;
}

/* The thread's name: its own (cgprof_set_thread_name, written by the thread
 * itself at any time: copied byte by byte, bounded), else /proc's. */
static CG_RACY_READ void thread_name(const struct cg_thread *t, char *dst, size_t size)
{
    size_t n = 0;
    for (; n + 1 < size && n < sizeof t->name; n++) {
        char ch = __atomic_load_n(&t->name[n], __ATOMIC_RELAXED);
        if (!ch)
            break;
        dst[n] = ch;
    }
    dst[n] = 0;
    if (!dst[0])
        cg_proc_thread_comm(t->tid, dst, size);
}

/* ---- stacks -------------------------------------------------------------- */

struct frame_copy {
    uint32_t level; /* from the bottom: 0 is the thread's first call */
    uint32_t arc, state;
    uint32_t moved; /* not the same in the read before */
    uintptr_t fn;
    uint64_t t_enter;
};

struct stack_copy {
    uint32_t depth, n;
    struct frame_copy f[CG_INSPECT_OUTER + CG_INSPECT_INNER]; /* by level */
};

/* Each field once, as racy_frame does: the owner writes frames
 * with plain stores. */
static CG_RACY_READ void read_frame(const struct cg_frame *f, uint32_t level, struct frame_copy *v)
{
    v->level = level;
    v->fn = __atomic_load_n(&f->fn, __ATOMIC_RELAXED);
    v->t_enter = __atomic_load_n(&f->t_enter, __ATOMIC_RELAXED);
    v->arc = __atomic_load_n(&f->arc, __ATOMIC_RELAXED);
    v->state = __atomic_load_n(&f->state, __ATOMIC_RELAXED);
    v->moved = 0;
}

static void copy_stack(const struct cg_costs *c, struct stack_copy *s)
{
    uint32_t depth = __atomic_load_n(&c->depth, __ATOMIC_ACQUIRE);
    const struct cg_frame *frames = __atomic_load_n(&c->frames, __ATOMIC_SEQ_CST);
    s->depth = depth;
    s->n = 0;
    if (!frames)
        return;
    if (depth <= CG_INSPECT_OUTER + CG_INSPECT_INNER) {
        for (uint32_t i = 0; i < depth; i++)
            read_frame(&frames[i], i, &s->f[s->n++]);
        return;
    }
    for (uint32_t i = 0; i < CG_INSPECT_OUTER; i++)
        read_frame(&frames[i], i, &s->f[s->n++]);
    for (uint32_t i = depth - CG_INSPECT_INNER; i < depth; i++)
        read_frame(&frames[i], i, &s->f[s->n++]);
}

/* Marks the frames of b that a (the read before) does not have the same at
 * the same level; returns how many. */
static uint32_t mark_moved(const struct stack_copy *a, struct stack_copy *b)
{
    uint32_t moved = 0, i = 0;
    for (uint32_t k = 0; k < b->n; k++) {
        struct frame_copy *f = &b->f[k];
        while (i < a->n && a->f[i].level < f->level)
            i++;
        const struct frame_copy *g = i < a->n ? &a->f[i] : NULL;
        f->moved = !g || g->level != f->level || g->fn != f->fn || g->t_enter != f->t_enter || g->arc != f->arc ||
                   g->state != f->state;
        moved += f->moved;
    }
    return moved;
}

/* Reads the stack until two reads agree on every frame shown, or a few
 * tries have passed; returns the frames of the last read that differed
 * from the read before (each marked). */
static uint32_t read_stack(const struct cg_costs *c, struct stack_copy *out)
{
    static struct stack_copy prev; /* under the dump lock; off the stack */
    copy_stack(c, &prev);
    for (int tries = 0;; tries++) {
        copy_stack(c, out);
        uint32_t moved = mark_moved(&prev, out);
        if (moved == 0 || tries == 4)
            return moved;
        prev = *out;
    }
}

static int find_symbol(const uintptr_t *addrs, size_t n, uintptr_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (addrs[mid] < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && addrs[lo] == addr ? (int)lo : -1;
}

static void put_place(struct cg_buf *b, const char *key, const char *file, unsigned line)
{
    if (!file || !line || strcmp(file, "???") == 0)
        return;
    cg_buf_printf(b, " %s=", key);
    put_word(b, file);
    cg_buf_printf(b, ":%u", line);
}

/* The call site frame k of s is at: the return address its callee's arc
 * holds, when the callee is the next frame read and was called by this
 * frame's function (a frame left out makes its callees' arcs its caller's);
 * 0 when not known. */
static uintptr_t call_site(const struct stack_copy *s, uint32_t k, const struct cg_arc *arcs, uint32_t narcs)
{
    if (k + 1 >= s->n || s->f[k + 1].level != s->f[k].level + 1 || s->f[k].state)
        return 0;
    uint32_t arc = s->f[k + 1].arc;
    if (arc == CG_SINK || arc >= narcs || arcs[arc].caller != s->f[k].fn || !arcs[arc].site)
        return 0;
    return arcs[arc].site - 1; /* in the call instruction (or the inlined call's hook call) */
}

static void write_stack(struct cg_buf *b, struct cg_thread *t, struct cg_syms *syms)
{
    static struct stack_copy s; /* under the dump lock */
    uint32_t moved = read_stack(&t->costs, &s);
    uint64_t now = thread_now(t);
    uint32_t narcs = __atomic_load_n(&t->costs.narcs, __ATOMIC_ACQUIRE);
    const struct cg_arc *arcs = __atomic_load_n(&t->costs.arcs, __ATOMIC_SEQ_CST);

    char name[64];
    thread_name(t, name, sizeof name);
    cg_buf_printf(b, "thread: number=%u tid=%ld depth=%u shown=%u moved=%u name=", t->number, (long)t->tid,
                  s.depth, s.n, moved);
    put_word(b, name);
    cg_buf_putc(b, '\n');

    /* Every address to name, sorted, each once */
    uintptr_t addrs[2 * (CG_INSPECT_OUTER + CG_INSPECT_INNER)];
    size_t n = 0;
    for (uint32_t k = 0; k < s.n; k++) {
        addrs[n++] = s.f[k].fn;
        uintptr_t site = call_site(&s, k, arcs, narcs);
        if (site)
            addrs[n++] = site;
        if (syms)
            cg_syms_want_lines(syms, s.f[k].fn);
    }
    cg_sort_uintptr(addrs, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || addrs[m - 1] != addrs[i])
            addrs[m++] = addrs[i];
    const struct cg_symbol *found[2 * (CG_INSPECT_OUTER + CG_INSPECT_INNER)];
    if (!syms || cg_syms_lookup_sorted(syms, addrs, m, found) != 0)
        m = 0; /* raw addresses */

    /* innermost first, as callgrind_control shows them */
    for (uint32_t k = s.n; k-- > 0;) {
        const struct frame_copy *f = &s.f[k];
        if (k + 1 < s.n && s.f[k + 1].level != f->level + 1)
            cg_buf_printf(b, "omitted: %u\n", s.f[k + 1].level - f->level - 1);
        uint64_t calls = 1; /* this one, running */
        char flags[32] = "";
        if (f->arc != CG_SINK && f->arc < narcs) {
            uint64_t done = __atomic_load_n(&arcs[f->arc].count, __ATOMIC_ACQUIRE);
            uint64_t before = f->arc < t->dumper.base.narcs ? t->dumper.base.count[f->arc] : 0;
            calls += done > before ? done - before : 0;
            if (f->state)
                strcat(flags, ",skipped");
            else if (arcs[f->arc].inlined)
                strcat(flags, ",inlined");
        }
        if (f->moved)
            strcat(flags, ",moved");
        cg_buf_printf(b, "frame: level=%u fn=0x%" PRIxPTR " calls=%" PRIu64 " ns=%" PRIu64 " flags=%s",
                      s.depth - 1 - f->level, f->fn, calls, now > f->t_enter ? now - f->t_enter : 0,
                      flags[0] ? flags + 1 : "-");
        int i = m ? find_symbol(addrs, m, f->fn) : -1;
        const struct cg_symbol *sym = i >= 0 ? found[i] : NULL;
        if (sym) {
            put_place(b, "def", sym->fn_file, sym->fn_line);
            uintptr_t site = call_site(&s, k, arcs, narcs);
            int j = site ? find_symbol(addrs, m, site) : -1;
            const char *at_file;
            unsigned at_line;
            /* an inlined call: at the call's own line, not at the line of
             * its hook's place, its callee's (as the parts place it) */
            if (j >= 0 && arcs[s.f[k + 1].arc].inlined &&
                cg_syms_inlined_call(syms, site, s.f[k + 1].fn, &at_file, &at_line))
                put_place(b, "at", at_file, at_line);
            else if (j >= 0)
                put_place(b, "at", found[j]->file, found[j]->line);
            if (!sym->function && sym->object && strcmp(sym->object, "???") != 0) {
                cg_buf_puts(b, " object=");
                put_word(b, sym->object);
            }
        }
        cg_buf_puts(b, " function=");
        if (sym && sym->function)
            put_word(b, sym->function);
        else
            cg_buf_printf(b, "0x%" PRIxPTR, f->fn);
        cg_buf_putc(b, '\n');
    }
}

void cg_inspect_stacks(struct cg_buf *b)
{
    struct cg_syms *syms = cg_symcache_session();
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (!__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE))
            write_stack(b, t, syms);
}

/* ---- counters ------------------------------------------------------------ */

/* The bytes a thread's tables map: written by the thread itself (plain
 * stores), read as they are. */
static CG_RACY_READ size_t table_bytes(const struct cg_costs *c)
{
    size_t bytes = (size_t)c->frame_cap * sizeof(struct cg_frame) + (size_t)c->arc_cap * sizeof(struct cg_arc) +
                   (size_t)c->self_cap * sizeof(struct cg_self) +
                   ((size_t)c->arc_mask + 1 + (size_t)c->self_mask + 1) * sizeof(uint32_t);
    if (__atomic_load_n(&c->lat, __ATOMIC_RELAXED)) /* CGPROF_LATENCY: mapped with the arcs */
        bytes += (size_t)__atomic_load_n(&c->lat_cap, __ATOMIC_RELAXED) * CG_LAT_ROW * sizeof(uint64_t);
    unsigned n = c->nretired < CG_MAX_RETIRED ? c->nretired : CG_MAX_RETIRED;
    for (unsigned i = 0; i < n; i++)
        bytes += c->retired[i].len;
    return bytes;
}

/* The dumper's copies of a thread's readings (malloc'd, under the dump lock). */
static size_t reading_bytes(const struct cg_reading *t)
{
    return (size_t)t->narcs * 3 * sizeof(uint64_t) + (size_t)t->nselfs * sizeof(uint64_t) +
           (size_t)t->nlat * CG_LAT_ROW * sizeof(uint64_t);
}

static uint64_t part_of(uint64_t v, const uint64_t *base, uint32_t n, uint32_t i)
{
    uint64_t b = base && i < n ? base[i] : 0;
    return v > b ? v - b : 0;
}

static uint64_t since(uint64_t v, uint64_t base)
{
    return v > base ? v - base : 0;
}

void cg_inspect_counters(struct cg_buf *b, int paused)
{
    /* What the files written so far hold, plus each running thread's next
     * part: the repairs of the run up to now. */
    uint64_t repairs[3];
    cg_total_repairs(repairs);
    uint64_t calls = ended_calls, tables = 0, state = 0;
    unsigned running = 0;
    struct cg_buf lines;
    cg_buf_init(&lines);
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        if (__atomic_load_n(&t->finished, __ATOMIC_ACQUIRE))
            continue;
        int rc = paused ? cg_reading_copy(&cur, &t->dumper.paused) : cg_reading_take(&t->costs, CG_NOW, &cur);
        if (rc != 0)
            continue;
        const struct cg_reading *base = &t->dumper.base;
        uint64_t all = 0, part = 0, ns = 0, ns_part = 0;
        for (uint32_t i = 1; i < cur.narcs; i++) {
            all += cur.count[i];
            part += part_of(cur.count[i], base->count, base->narcs, i);
        }
        for (uint32_t i = 0; i < cur.nselfs; i++) {
            ns += cur.cost[i];
            ns_part += part_of(cur.cost[i], base->cost, base->nselfs, i);
        }
        uint64_t left = since(cur.left, base->left), unmatched = since(cur.unmatched_exits, base->unmatched_exits),
                 lost = since(cur.lost, base->lost);
        repairs[0] += left;
        repairs[1] += unmatched;
        repairs[2] += lost;
        size_t tb = table_bytes(&t->costs), sb = reading_bytes(&t->dumper.base) + reading_bytes(&t->dumper.paused);
        tables += tb;
        state += sb;
        calls += all;
        running++;
        char name[64];
        thread_name(t, name, sizeof name);
        cg_buf_printf(&lines,
                      "thread: number=%u tid=%ld depth=%u calls=%" PRIu64 " calls_part=%" PRIu64 " ns=%" PRIu64
                      " ns_part=%" PRIu64 " arcs=%u selfs=%u tables=%zu state=%zu left=%" PRIu64
                      " unmatched=%" PRIu64 " lost=%" PRIu64 " jumped=%" PRIu64 " name=",
                      t->number, (long)t->tid, cur.depth, all, part, ns, ns_part, cur.narcs - 1, cur.nselfs - 1, tb,
                      sb, left, unmatched, lost, cur.jumped);
        put_word(&lines, name);
        cg_buf_putc(&lines, '\n');
    }
    cg_reading_free(&cur);
    cg_buf_printf(b,
                  "events: ns\ntime: %s\nprofiled: %u\nended: %u\ncalls: %" PRIu64 "\ntables: %" PRIu64
                  "\nstate: %" PRIu64 "\nrepairs: left=%" PRIu64 " unmatched=%" PRIu64 " lost=%" PRIu64 "\n",
                  cg_sampling ? "sample" : "exact", running, ended_threads, calls, tables, state, repairs[0],
                  repairs[1], repairs[2]);
    if (lines.data)
        cg_buf_putn(b, lines.data, lines.len);
    cg_buf_free(&lines);
}
