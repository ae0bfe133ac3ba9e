/* Dumps: see dump.h. What a dump writes and how is part.c's; the sums,
 * total.c's; this file decides which parts are written when, under the
 * lock, and keeps the state between dumps. A thread's tables are only read,
 * never written, by another thread (see struct cg_reading). */
#define _GNU_SOURCE
#include "dump.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "control.h"
#include "costs.h"
#include "reading.h"
#include "fold.h"
#include "inspect.h"
#include "naming.h"
#include "offcpu.h"
#include "part.h"
#include "proc.h"
#include "sample.h"
#include "samplering.h"
#include "symcache.h"
#include "thread.h"
#include "total.h"
#include "util.h"
#include "desc.inc"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned parts;    /* parts written on demand so far */
static int status_stale; /* a thread's part written since the status file was */
static int parts_scanned; /* parts of an earlier image of this pid counted */
static int paused;        /* collection paused (cgprof_collect(false)) */
static int final_done;    /* the exit dump has run: nothing more */

static void enter(struct cg_thread **self)
{
    *self = cg_thread_enter_runtime();
    /* From here until leave(), no thread frees a table we may read. */
    __atomic_fetch_add(&cg_readers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&lock);
}

static void leave(struct cg_thread *self)
{
    cg_symcache_release(); /* no descriptor of ours left for the program to see */
    pthread_mutex_unlock(&lock);
    __atomic_fetch_sub(&cg_readers, 1, __ATOMIC_SEQ_CST);
    cg_thread_leave_runtime(self);
}

static int finished(const struct cg_thread *t)
{
    return __atomic_load_n(&t->finished, __ATOMIC_ACQUIRE);
}

/* Files of another process with this pid are in the output directory: every
 * file of this one carries a part number (scan_earlier_parts). */
static int numbered_always;

/* A program started by exec() in this process has the pid of the image that
 * ran before it and may have written parts under it: number after them. */
static void scan_earlier_parts(void)
{
    if (parts_scanned)
        return;
    parts_scanned = 1;
    struct cg_names names = { cg_opts.out, cg_proc_names_pid(), cg_proc_cwd() };
    int unnumbered;
    unsigned last = cg_name_scan(&names, &unnumbered);
    if (last > parts)
        parts = last;
    /* Files of this pid without a part number, before this process wrote
     * any, and no numbered part (an exec'd image writes one): another
     * process's with the same pid (another pid namespace sharing the
     * directory, or the pid used again). Never replaced: this process's
     * files are numbered after them. */
    if (unnumbered && last == 0 && parts == 0) {
        numbered_always = 1;
        cg_total_keep_others();
        static char ours[CG_OPT_PATH_MAX + 64]; /* under the lock; no path on the stack */
        if (cg_name_part(&names, 1, 1, 1, ours, sizeof ours) == 0)
            cg_warn("files of pid %ld without a part number are in the output directory, another process's "
                    "(another pid namespace writing into it, or the pid used again): they are left alone, and "
                    "this process's are numbered after them (%s, ...)",
                    (long)names.pid, ours);
    }
}

static void begin(struct cg_dump *d, const char *trigger, unsigned part, int part_in_name, int append_files)
{
    cg_part_begin(d, trigger, part, part_in_name, append_files);
    d->paused = paused;
}

/* The reading a part of t is taken from: now (see cg_offcpu_read_time), or the moment
 * collection was paused, or the moment the thread ended. */
static int current_reading(struct cg_thread *t, struct cg_reading *out)
{
    if (paused)
        return cg_reading_copy(out, &t->dumper.paused);
    if (finished(t))
        return cg_reading_take(&t->costs, t->t_end, out);
    uint64_t pending = 0, now = cg_offcpu_read_time(t, &pending);
    int rc = cg_reading_take(&t->costs, now, out);
    out->off_pending = pending;
    return rc;
}

/* Writes part `cur - t->dumper.base` of thread t and adds it to the sums, then
 * makes cur the base (cur is left with arrays to reuse, not the same
 * reading). */
static void write_part(struct cg_dump *d, struct cg_thread *t, struct cg_reading *cur)
{
    struct cg_snapshot snap;
    if (cg_reading_part(&t->costs, cur, &t->dumper.base, &snap) != 0) {
        cg_part_lost(d, t->number);
        return;
    }
    char comm[64];
    const char *name = t->name;
    if (!name[0] && !finished(t)) {
        cg_proc_thread_comm(t->tid, comm, sizeof comm);
        name = comm;
    }
    cg_part_write(d, t->number, name, &snap, NULL);
    cg_total_add(&snap, finished(t));
    /* Reported, or lost for good: either way the next part starts here.
     * cur becomes the base (never below it: cg_reading_raise), and the old
     * base's arrays cur's, for the next reading (a copy was 3 MB of fresh
     * pages for a 100,000-arc thread). */
    cg_reading_raise(cur, &t->dumper.base);
    struct cg_reading old = t->dumper.base;
    t->dumper.base = *cur;
    *cur = old;
    cg_snapshot_free(&snap);
}

/* The part of every thread; all: also those that ended (their last part
 * not yet written: at exit, in the crash copy). */
static void write_threads(struct cg_dump *d, int all)
{
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        if (!all && finished(t))
            continue; /* being written by its own exit */
        if (current_reading(t, &cur) == 0)
            write_part(d, t, &cur);
        else
            cg_part_lost(d, t->number);
    }
    cg_reading_free(&cur);
}

/* The total, its desc: lines counting the threads still running and their
 * calls in progress. */
static void write_total(struct cg_dump *d)
{
    unsigned running = 0;
    uint64_t depth = 0;
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (!finished(t)) {
            running++;
            depth += t->dumper.base.depth;
        }
    cg_total_write(d, running, depth);
}

/* Every live thread's part. Lock held. */
static int dump_all(const char *trigger, unsigned coalesced)
{
    scan_earlier_parts();
    struct cg_dump d;
    begin(&d, trigger, parts + 1, 1, 0);
    d.coalesced = coalesced;
    write_threads(&d, 0);
    cg_ended_write(&d);
    parts++;
    return cg_part_end(&d);
}

static void update_status(int done_one)
{
    cg_control_status(cg_proc_program_threads(), parts, !paused, cg_part_files(), done_one);
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
        static char trigger[CG_OPT_PATH_MAX + 32]; /* under the lock; a path is not kept on the stack */
        snprintf(trigger, sizeof trigger, CG_TRIGGER_EXEC " %s", what ? what : "?");
        dump_all(trigger, 0);
        /* The image goes: its total too (a new image with the runtime
         * writes its own over it, under the same pid), listed with the
         * exec dump's files. */
        struct cg_dump d;
        begin(&d, trigger, parts, 1, 1);
        write_total(&d);
        cg_part_end(&d);
        update_status(0);
    }
    leave(self);
}

static void zero_locked(void)
{
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        if (!finished(t) && current_reading(t, &cur) == 0)
            cg_reading_copy(&t->dumper.base, &cur);
    cg_reading_free(&cur);
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

/* Pausing reads every thread's reading; resuming adds what happened since to
 * each base. The hooks go on keeping the stacks right meanwhile. */
static void collect_locked(int on)
{
    if (on == !paused)
        return;
    struct cg_reading cur;
    memset(&cur, 0, sizeof cur);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        if (finished(t))
            continue;
        uint64_t pending = 0;
        if (cg_reading_take(&t->costs, cg_offcpu_read_time(t, &pending), &cur) != 0)
            continue;
        if (on) {
            cg_reading_skip(&t->dumper.base, &cur, &t->dumper.paused);
            cg_reading_free(&t->dumper.paused);
        } else {
            cg_reading_copy(&t->dumper.paused, &cur);
        }
    }
    cg_reading_free(&cur);
    paused = !on;
    /* the hook calls taken back while off, put back when on; the sampling
     * timers stopped meanwhile */
    cg_fold_collect(on);
    cg_sample_collect(on);
}

void cg_dump_start_off(void)
{
    paused = 1;
    cg_fold_collect(0);
    cg_sample_collect(0);
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

void cg_dump_thread_exit(struct cg_thread *t)
{
    int saved = errno;
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        struct cg_reading cur;
        memset(&cur, 0, sizeof cur);
        if (cg_opts.thread_exit == CG_THREAD_EXIT_MERGE) {
            struct cg_snapshot snap;
            int rc = current_reading(t, &cur);
            if (rc == 0)
                cg_inspect_thread_ended(&cur);
            if (rc == 0 && cg_reading_part(&t->costs, &cur, &t->dumper.base, &snap) == 0) {
                if (cg_ended_add(&snap) != 0)
                    cg_warn("out of memory: the profile of thread %u is lost", t->number);
                cg_total_add(&snap, finished(t));
                cg_snapshot_free(&snap);
            } else {
                cg_warn("out of memory: the profile of thread %u is lost", t->number);
            }
        } else {
            scan_earlier_parts();
            struct cg_dump d;
            begin(&d, CG_TRIGGER_THREAD_EXIT, parts + 1, parts > 0 || numbered_always, 0);
            if (current_reading(t, &cur) == 0) {
                cg_inspect_thread_ended(&cur);
                write_part(&d, t, &cur);
            } else {
                cg_part_lost(&d, t->number);
            }
            cg_part_end(&d);
        }
        cg_reading_free(&cur);
        cg_offcpu_thread_release(t);
        cg_thread_release(t);
        /* The status file is the service thread's to rewrite, within a
         * second (cg_dump_status_stale): a program that runs thousands of
         * short threads spent more in rewriting it than in running them. */
        __atomic_store_n(&status_stale, 1, __ATOMIC_RELEASE);
    }
    leave(self);
    errno = saved;
}

/* Every thread's part, ended or not, the merge and the total: at exit and
 * in the crash copy. */
static void dump_last(const char *trigger)
{
    /* A process that never ran a hook (the shells and compilers of a
     * build, preloaded) has nothing to write: not even the output
     * directory is read (a scan of a directory of 288,000 files cost each
     * /bin/true 110 ms at exit, and one with a file of its pid said so). */
    if (!cg_thread_attached_ever())
        return;
    scan_earlier_parts();
    struct cg_dump d;
    begin(&d, trigger, parts + 1, parts > 0 || numbered_always, 0);
    write_threads(&d, 1);
    cg_ended_write(&d);
    write_total(&d);
    cg_part_end(&d);
}

void cg_dump_final(const char *trigger)
{
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        final_done = 1;
        dump_last(trigger);
        cg_total_warn_repairs();
        cg_control_remove();
        cg_symcache_close();
    }
    leave(self);
}

void cg_dump_crash(const char *trigger)
{
    __atomic_fetch_add(&cg_readers, 1, __ATOMIC_SEQ_CST);
    cg_thread_mark_internal();
    dump_last(trigger);
}

/* The answer to a question (cgprof-control -b, -e, -s), in the reply file
 * before the status says the request was handled. */
static void reply(int kind)
{
    struct cg_buf b;
    cg_buf_init(&b);
    if (kind == CG_CONTROL_STACKS)
        cg_inspect_stacks(&b);
    else
        cg_inspect_counters(&b, paused);
    cg_control_reply(&b);
    cg_buf_free(&b);
}

void cg_dump_serve(int kind, const char *cmd, unsigned signals)
{
    char trigger[600];
    struct cg_thread *self;
    enter(&self);
    if (!final_done) {
        switch (kind) {
        case CG_CONTROL_STACKS:
        case CG_CONTROL_COUNTERS:
            reply(kind);
            break;
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
            snprintf(trigger, sizeof trigger, "Signal SIG%s", cg_signal_name(cg_opts.signal, name, sizeof name));
            dump_all(trigger, signals);
            break;
        }
        }
        update_status(1);
    }
    leave(self);
}

int cg_dump_status_stale(void)
{
    return __atomic_exchange_n(&status_stale, 0, __ATOMIC_ACQ_REL);
}

void cg_dump_status(void)
{
    struct cg_thread *self;
    enter(&self);
    if (!final_done)
        update_status(0);
    leave(self);
}

int cg_dump_finished(void)
{
    return __atomic_load_n(&final_done, __ATOMIC_ACQUIRE);
}

/* The addresses of a sum's entries */
static void visit_snapshot(const struct cg_snapshot *s, void (*visit)(void *, uintptr_t), void *ctx)
{
    for (size_t i = 0; i < s->narcs; i++) {
        const struct cg_snap_arc *a = &s->arcs[i];
        visit(ctx, a->caller);
        visit(ctx, a->site);
        visit(ctx, a->callee);
        if (a->site)
            visit(ctx, a->site - 1);
    }
    for (size_t i = 0; i < s->nselfs; i++) {
        visit(ctx, s->selfs[i].fn);
        visit(ctx, s->selfs[i].addr);
    }
}

void cg_dump_addresses(void (*visit)(void *ctx, uintptr_t addr), void *ctx)
{
    struct cg_thread *self;
    enter(&self);
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next) {
        const struct cg_costs *c = &t->costs;
        uint32_t narcs = __atomic_load_n(&c->narcs, __ATOMIC_ACQUIRE);
        uint32_t nselfs = __atomic_load_n(&c->nselfs, __ATOMIC_ACQUIRE);
        const struct cg_arc *arcs = __atomic_load_n(&c->arcs, __ATOMIC_SEQ_CST);
        const struct cg_self *selfs = __atomic_load_n(&c->selfs, __ATOMIC_SEQ_CST);
        for (uint32_t i = 1; i < narcs; i++) {
            visit(ctx, arcs[i].caller);
            visit(ctx, arcs[i].site);
            visit(ctx, arcs[i].callee);
            if (arcs[i].site)
                visit(ctx, arcs[i].site - 1);
        }
        for (uint32_t i = 1; i < nselfs; i++) {
            visit(ctx, selfs[i].fn);
            visit(ctx, selfs[i].addr);
        }
    }
    /* Threads that ended live on only in these sums */
    visit_snapshot(cg_total_snapshot(), visit, ctx);
    visit_snapshot(cg_ended_snapshot(), visit, ctx);
    leave(self);
}

void cg_dump_spill_rings(void)
{
    /* the lock keeps every thread's state from being freed meanwhile
     * (cg_thread_release); a ring being unmapped is the ring's own lock's */
    if (pthread_mutex_trylock(&lock) != 0)
        return;
    for (struct cg_thread *t = cg_thread_list(); t; t = t->next)
        cg_ring_spill(t);
    pthread_mutex_unlock(&lock);
}

void cg_dump_fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

void cg_dump_fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

void cg_dump_forked(void)
{
    pthread_mutex_unlock(&lock);
    parts = 0;
    parts_scanned = 0;
    paused = 0;
    cg_symcache_forked();
    cg_total_forked();
    cg_inspect_forked();
    cg_part_forked();
    cg_control_forget();
}
