/* Writing parts: see part.h. A part is written in pieces of 256 kB to a
 * temporary file renamed into place (outfile.h), with the symbols of its
 * addresses from the dumps' session (symcache.h). */
#define _GNU_SOURCE
#include "part.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "filter.h"
#include "naming.h"
#include "outfile.h"
#include "proc.h"
#include "takeback.h"
#include "sample.h"
#include "symcache.h"
#include "symtab.h"
#include "util.h"
#include "pathwriter.h"
#include "writer.h"
#include "desc.inc"

#ifndef CG_VERSION
#define CG_VERSION "unknown"
#endif


static struct cg_buf last_files; /* files of the latest dump, for the status */

/* Files that could not be written: said once, when it first happens. The
 * next ones most likely fail the same way, and a program whose threads end
 * by the thousand must not print a line each. */
static int failure_said;

/* The paths of a dump, static rather than on the stack: parts are written
 * one at a time, under the dump lock or in the crash copy (which has no
 * other thread), and the crash copy's stack may be a small alternate signal
 * stack; a path is up to PATH_MAX, its temporary name longer. */
static char part_path[CG_OPT_PATH_MAX + 128];
static struct cg_out_file part_file;
static char first_failure[CG_OPT_PATH_MAX + 128]; /* as part_path */
static int first_errno;
/* What the start-up check found wrong with the files' directory (0: it
 * looked writable), said then: the same failure at the end of the run is
 * not said again. */
static int startup_errno;

/* The header's clock line, made for each part (ring_refused: a thread the
 * signals' timer samples where the others' ring buffers serve); static
 * as the paths above, not on a dump's stack (test_runtime StackUse). */
static char clock_line[512];

static const char *clock_desc(int ring_refused)
{
    if (cg_sampling)
        snprintf(clock_line, sizeof clock_line,
                 "sampled: each thread's CPU time (%s) every %llu ns; calls are "
                 "exact, times are samples x period; calls into uninstrumented code (seen by sampling) "
                 "count visits, a lower bound",
                 cg_sample_timer_desc(ring_refused), (unsigned long long)cg_sample_period_ns());
    else if (cg_clock_use_tsc)
        snprintf(clock_line, sizeof clock_line, "%s at %.2f MHz, %s", CG_CPU_COUNTER_NAME, cg_clock_tsc_mhz(),
                 cg_tsc_stated ? "at the rate " CG_CPU_COUNTER_RATE " states, checked at start-up against CLOCK_MONOTONIC"
                               : "calibrated at start-up against CLOCK_MONOTONIC");
    else
        snprintf(clock_line, sizeof clock_line, "clock_gettime(CLOCK_MONOTONIC)");
    return clock_line;
}

void cg_part_begin(struct cg_dump *d, const char *trigger, unsigned part, int part_in_name, int append_files)
{
    memset(d, 0, sizeof *d);
    d->trigger = trigger;
    d->part = part;
    d->part_in_name = part_in_name;
    cg_exec_ranges_load(&d->exec);
    if (!append_files)
        cg_buf_free(&last_files);
}

int cg_part_end(struct cg_dump *d)
{
    if (d->failed && !failure_said && startup_errno && first_errno == startup_errno)
        failure_said = 1; /* said at start-up, before the run */
    if (d->failed && !failure_said && first_errno == ENOMEM) {
        /* memory, not the place: CGPROF_OUT is no help */
        failure_said = 1;
        char shown_path[400];
        cg_warn("out of memory: could not write %s%s (%u file%s of this dump not written; no more such messages)",
                first_failure[0] == '/' || first_failure[0] == '.' ? "profile file " : "",
                first_failure[0] == '/' || first_failure[0] == '.' ? CG_QUOTE(shown_path, first_failure)
                                                                    : first_failure,
                d->failed, d->failed == 1 ? "" : "s");
    } else if (d->failed && !failure_said) {
        failure_said = 1;
        /* EFBIG: the file passed the file-size limit, which is then said
         * (the program goes on: cg_write_all). Both values are cut to fit
         * cg_warn's line: the value is known to the user, the path from
         * it. */
        char why[160] = "";
        struct rlimit rl;
        if (first_errno == EFBIG && getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            snprintf(why, sizeof why, "the file-size limit, RLIMIT_FSIZE or ulimit -f, is %llu bytes; ",
                     (unsigned long long)rl.rlim_cur);
        char shown_path[400], shown_out[300];
        cg_warn("could not write profile file %s: %s (%sCGPROF_OUT=%s sets where they go; no more such messages)",
                CG_QUOTE(shown_path, first_failure), strerror(first_errno), why, CG_QUOTE(shown_out, cg_opts.out));
    }
    cg_exec_ranges_free(&d->exec);
    return d->failed ? -1 : 0;
}

void cg_part_failed(struct cg_dump *d, const char *what, int err)
{
    if (!d->failed++ && !failure_said) {
        snprintf(first_failure, sizeof first_failure, "%s", what);
        first_errno = err;
    }
}

void cg_part_lost(struct cg_dump *d, unsigned number)
{
    char what[64];
    snprintf(what, sizeof what, "the profile of thread %u", number);
    cg_part_failed(d, what, ENOMEM);
}

/* The desc: lines a part adds to the writer's: the thread's name, how it
 * was asked for, and what its counts hold beyond plain calls. */
static int desc_lines(const struct cg_dump *d, const char *name, const struct cg_snapshot *s, char (*extra)[240])
{
    int nd = 0;
    if (name && name[0])
        snprintf(extra[nd++], sizeof extra[0], CG_DESC_THREAD_NAME ": %.100s", name);
    if (d->coalesced > 1)
        snprintf(extra[nd++], sizeof extra[0], "Requests: %u signals served by this one dump", d->coalesced);
    if (s->depth)
        snprintf(extra[nd++], sizeof extra[0], CG_DESC_CALLS_IN_PROGRESS ": %u (counted up to the dump)", s->depth);
    if (s->continued)
        snprintf(extra[nd++], sizeof extra[0],
                 "Calls continued: %llu (started before this part and counted in an earlier one: calls=0, at the end behind #>)",
                 (unsigned long long)s->continued);
    if (s->jumped)
        snprintf(extra[nd++], sizeof extra[0],
                 "Frames ended by longjmp or exception: %llu (no exit hook; ended when the jump or the "
                 "unwinding left them)",
                 (unsigned long long)s->jumped);
    if (s->left)
        snprintf(extra[nd++], sizeof extra[0],
                 CG_DESC_FRAMES_LEFT ": %llu (repaired: found gone by a later hook, counted as ending then)",
                 (unsigned long long)s->left);
    if (s->inlined_calls || s->frameless_exits)
        snprintf(extra[nd++], sizeof extra[0],
                 "Calls without a frame: %llu enters of inlined calls folded into their hosts and %llu frameless "
                 "exits reached the hooks (before their sites were taken back, or where they could not be: "
                 "docs/internals/takeback.md)",
                 (unsigned long long)s->inlined_calls, (unsigned long long)s->frameless_exits);
    if (s->unmatched_exits)
        snprintf(extra[nd++], sizeof extra[0], CG_DESC_UNMATCHED_EXITS ": %llu (dropped)",
                 (unsigned long long)s->unmatched_exits);
    if (s->lost)
        snprintf(extra[nd++], sizeof extra[0],
                 CG_DESC_LOST ": %llu calls not recorded (out of memory, signal handlers nested too deep, or hooks "
                 "left by a signal handler's siglongjmp)",
                 (unsigned long long)s->lost);
    /* one line for both (the dumps' stack: test_runtime StackUse) */
    if (s->unplaced)
        snprintf(extra[nd++], sizeof extra[0],
                 "Samples not at their line: %llu (the table of sampled addresses, %u a thread, was full: "
                 "charged at the frame's entry or last call site)",
                 (unsigned long long)(s->unplaced + s->ring_lost), (unsigned)CG_SAMPLE_PCS);
    else if (s->ring_lost)
        snprintf(extra[nd++], sizeof extra[0],
                 "Samples not at their line: %llu (CGPROF_SAMPLE_TIMER=ring: dropped by the kernel, the thread ran "
                 "longer without a hook than its buffer holds: charged at the frame's entry or last call site)",
                 (unsigned long long)s->ring_lost);
    if (d->paused)
        snprintf(extra[nd++], sizeof extra[0], CG_DESC_COLLECTION ": " CG_DESC_PAUSED " since a cgprof_collect(false)");
    struct cg_takeback_stats tb;
    cg_takeback_stats(&tb);
    unsigned long taken = tb.sites[CG_TB_INLINED] + tb.sites[CG_TB_FILTERED] + tb.sites[CG_TB_PAUSED];
    /* the exits the counting hooks took back (CGPROF_STACKS=unwind), said
     * after the other reasons */
    char counting_exits[96] = "";
    if (tb.sites[CG_TB_COUNTING])
        snprintf(counting_exits, sizeof counting_exits,
                 "; and %lu exit hook calls the counting hooks do not need (%lu tail jumps)",
                 tb.sites[CG_TB_COUNTING], tb.tails[CG_TB_COUNTING]);
    if (taken || tb.refused || tb.sites[CG_TB_COUNTING])
        snprintf(extra[nd++], sizeof extra[0],
                 "Hook calls taken back: %lu sites in the process (%lu of inlined calls, %lu of functions left "
                 "out, %lu while collection was off; %lu tail jumps), %lu refused%s",
                 taken, tb.sites[CG_TB_INLINED], tb.sites[CG_TB_FILTERED], tb.sites[CG_TB_PAUSED],
                 tb.tails[CG_TB_INLINED] + tb.tails[CG_TB_FILTERED] + tb.tails[CG_TB_PAUSED], tb.refused,
                 counting_exits);
    if (s->off_pending)
        snprintf(extra[nd++], sizeof extra[0],
                 "Off the CPU at this dump: %llu ns since the thread's last hook, left out of this part (charged "
                 "to cgprof_off_cpu when it runs again; CGPROF_OFF_CPU)",
                 (unsigned long long)s->off_pending);
    uint64_t hooks_own = s->compensated > s->takeback_ns ? s->compensated - s->takeback_ns : 0;
    if (s->takeback_ns)
        snprintf(extra[nd++], sizeof extra[0],
                 "Taking hook calls back: %llu ns of the hooks' own time left out (decoding, mprotect: "
                 "docs/internals/takeback.md; CGPROF_COMPENSATE)",
                 (unsigned long long)s->takeback_ns);
    if (hooks_own && cg_sampling)
        snprintf(extra[nd++], sizeof extra[0],
                 "Overhead compensated: %llu ns of the hooks' own time left out (%llu samples that found the "
                 "thread in cgprof's hooks; CGPROF_COMPENSATE)",
                 (unsigned long long)hooks_own,
                 (unsigned long long)(hooks_own / (cg_sample_period_ns() ? cg_sample_period_ns() : 1)));
    else if (hooks_own)
        snprintf(extra[nd++], sizeof extra[0],
                 "Overhead compensated: %llu ns of the hooks' own time left out (%u ns a call inside the callee, "
                 "%u in its caller; %u and %u by the general path; CGPROF_COMPENSATE)",
                 (unsigned long long)hooks_own, cg_comp_in, cg_comp_out, cg_comp_gin, cg_comp_gout);
    return nd;
}

/* Temporaries that dead runs of this prefix left in its directory (a
 * process killed while writing: outfile.h), removed once per process,
 * before its first file: by then the directory is known to be the one the
 * files go to, and a program that never writes never reads it. */
static int leftovers_cleaned;

static void leftover_removed(void *ctx, const char *name, long pid)
{
    if (cg_opts.verbose)
        cg_warn("removed %s/%s, a temporary file left by process %ld, which is gone", (const char *)ctx, name,
                pid);
}

static void clean_leftovers(const char *path)
{
    if (leftovers_cleaned)
        return;
    leftovers_cleaned = 1;
    struct cg_names names = { cg_opts.out, cg_proc_names_pid(), cg_proc_cwd() };
    /* static, as part_path: under the dump lock, and off the stack of a
     * dump (which may be a crash's, on an alternate signal stack) */
    static char stems[3][CG_OPT_PATH_MAX];
    if (cg_name_stems(&names, stems[0], stems[1], stems[2], sizeof stems[0]) != 0)
        return;
    static char dir[CG_OPT_PATH_MAX + 128];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = 0; /* "/name": the root */
    else
        snprintf(dir, sizeof dir, ".");
    const char *const s[3] = { stems[0], stems[1], stems[2] };
    cg_out_clean(dir, s, 3, leftover_removed, dir);
}

void cg_part_check_dir(void)
{
    struct cg_names names = { cg_opts.out, cg_proc_names_pid(), cg_proc_cwd() };
    static char dir[CG_OPT_PATH_MAX + 128];
    int with_pid;
    if (cg_name_prefix(&names, dir, sizeof dir, &with_pid) != 0)
        return; /* too long: refused at start-up already */
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = 0; /* "/name": the root */
    else
        snprintf(dir, sizeof dir, ".");
    /* An unnamed file (O_TMPFILE) is what open() would say of a real one,
     * permissions, read-only file systems and file systems that refuse
     * files (sysfs) alike, and leaves no name behind. Where the file
     * system has no O_TMPFILE, the permissions of the effective ids. */
    struct stat st;
    const char *why = NULL;
    if (stat(dir, &st) != 0) {
        startup_errno = errno;
    } else if (!S_ISDIR(st.st_mode)) {
        startup_errno = ENOTDIR;
    } else {
        int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
        else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
            startup_errno = errno;
        else if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
            startup_errno = errno;
    }
    if (!startup_errno)
        return;
    if (startup_errno == ENOENT)
        why = "no such directory";
    else if (startup_errno == ENOTDIR)
        why = "not a directory";
    else
        why = strerror(startup_errno);
    char shown_dir[400], shown_out[300];
    cg_warn("cannot write profile files in %s: %s (checked at the first call: the files are written at exit "
            "and on dumps, and fail unless it is fixed by then; CGPROF_OUT=%s sets where they go)",
            CG_QUOTE(shown_dir, dir), why, CG_QUOTE(shown_out, cg_opts.out));
}

/* path added to the list of files written, its spaces escaped */
static void note_file(const char *path)
{
    if (last_files.len)
        cg_buf_putc(&last_files, ' ');
    for (const char *p = path; *p; p++)
        if (*p == ' ')
            cg_buf_puts(&last_files, "\\x20");
        else
            cg_buf_putc(&last_files, *p);
}

/* The end of a file of the dump at part_path: said if it failed (err), else
 * listed for the status and, with CGPROF_VERBOSE, said. */
static void file_done(struct cg_dump *d, unsigned number, int err)
{
    if (err) {
        if (part_path[0])
            cg_part_failed(d, part_path, err);
        else
            cg_part_lost(d, number); /* before it was named: its symbols */
        return;
    }
    note_file(part_path);
    if (cg_opts.verbose) {
        char shown[600];
        cg_warn("wrote %s (thread %u, part %u, %zu bytes)", CG_QUOTE(shown, part_path), number, d->part,
                part_file.bytes);
    }
}

/* The path file of part `number` (docs/internals/paths-format.md), in buf's memory
 * (emptied). A failure is said as a part's is. */
static void write_paths(struct cg_dump *d, unsigned number, const struct cg_snapshot *snap,
                        const struct cg_symtab *symtab, struct cg_buf *buf)
{
    struct cg_part_info info = {
        .pid = cg_proc_names_pid(),
        .thread = number,
        .part = d->part,
        .cmd = cg_proc_cmdline(),
    };
    struct cg_names names = { cg_opts.out, cg_proc_names_pid(), cg_proc_cwd() };
    part_file.bytes = 0;
    buf->len = 0;
    buf->failed = 0;
    int err = ENAMETOOLONG;
    if (cg_name_paths(&names, number, d->part, d->part_in_name, part_path, sizeof part_path) == 0)
        err = cg_out_open(&part_file, part_path);
    else
        snprintf(part_path, sizeof part_path, "%s", cg_opts.out);
    if (!err) {
        int ok = cg_write_paths(&info, snap, symtab, buf) == 0;
        if (ok && buf->len)
            cg_out_write(&part_file, buf->data, buf->len);
        err = cg_out_close(&part_file, part_path, ok);
    }
    file_done(d, number, err);
}

/* The Names: line of a part whose symbol session has no libdw (it could
 * not be loaded: not installed, or no room for it under RLIMIT_AS), or
 * NULL; said once on stderr too, unless memory ran out (symsession.c says
 * that). Static: under the dump lock. */
static const char *names_desc(const struct cg_syms *session)
{
    static char line[320];
    static int said;
    const char *why = cg_syms_without_libdw(session);
    if (!why)
        return NULL;
    if (session && !cg_syms_lost(session) && !said++)
        cg_warn("%s: profiles written without it name functions by their exported symbols or by address, "
                "with no source lines", why);
    snprintf(line, sizeof line,
             CG_DESC_NAMES ": exported symbols and addresses only, no source files or lines: %s", why);
    return line;
}

void cg_part_write(struct cg_dump *d, unsigned number, const char *name, struct cg_snapshot *s,
                   const char *own_path)
{
    /* The call instructions, in s's arcs: call_pc 0 is a signal handler's
     * frame, no call; an inlined call has none either, its call_pc is
     * already its place. */
    struct cg_snapshot snap = *s;
    for (size_t i = 0; i < snap.narcs; i++)
        if (snap.arcs[i].site && snap.arcs[i].call_pc && !snap.arcs[i].inlined)
            snap.arcs[i].call_pc = cg_call_instruction(&d->exec, snap.arcs[i].site, snap.arcs[i].callee);

    struct cg_symtab symtab;
    struct cg_symtab_entry *storage = NULL;
    struct cg_buf buf;
    cg_buf_init(&buf);
    part_file.bytes = 0;
    part_path[0] = 0;
    int err = ENOMEM;
    /* One session for both: the symbol table points into it, and asking
     * for the session again after the filters' names (which may load
     * libunwind) would open a new one. */
    struct cg_syms *session = cg_symcache_session();
    const char *filter_desc[2];
    int nfilter = cg_filter_desc(session, filter_desc, 2);
    if (cg_symtab_build(session, &snap, &symtab, &storage) == 0) {
        char extra[16][240];
        const char *desc[19];
        int nd = desc_lines(d, name, &snap, extra);
        for (int i = 0; i < nd; i++)
            desc[i] = extra[i];
        const char *unnamed = names_desc(session);
        if (unnamed)
            desc[nd++] = unnamed;
        for (int i = 0; i < nfilter; i++)
            desc[nd++] = filter_desc[i];
        desc[nd] = NULL;
        struct cg_part_info info = {
            .creator = "cgprof-" CG_VERSION,
            .pid = cg_proc_names_pid(),
            .thread = number,
            .part = d->part,
            .cmd = cg_proc_cmdline(),
            .trigger = d->trigger,
            .clock = clock_desc(snap.ring_refused),
            .event = cg_sampling ? "CPU time, sampled (nanoseconds)" : NULL,
            .extra_desc = desc,
            .line_only = cg_opts.positions == CG_POSITIONS_LINE,
        };
        cg_filter_left_out(&info.left_out[0], &info.left_out[1]);
        info.part_code = cg_takeback_part_code;
        struct cg_names names = { cg_opts.out, cg_proc_names_pid(), cg_proc_cwd() };
        int named = own_path ? (snprintf(part_path, sizeof part_path, "%s", own_path), 0)
                             : cg_name_part(&names, number, d->part, d->part_in_name, part_path,
                                            sizeof part_path);
        if (named != 0) {
            snprintf(part_path, sizeof part_path, "%s", cg_opts.out);
            err = ENAMETOOLONG;
        } else {
            clean_leftovers(part_path);
            err = cg_out_open(&part_file, part_path);
        }
        if (!err) {
            /* written in pieces of 256 kB: a 100,000-arc part is 6 MB of
             * text, fresh pages each a fault */
            buf.flush = cg_out_write;
            buf.flush_arg = &part_file;
            buf.data = malloc(256 * 1024);
            buf.cap = buf.data ? 256 * 1024 : 0;
            int ok = cg_write_part(&info, &snap, &symtab, &buf) == 0;
            if (ok && buf.len)
                cg_out_write(&part_file, buf.data, buf.len);
            err = cg_out_close(&part_file, part_path, ok);
        }
    }
    file_done(d, number, err);
    /* its call paths (CGPROF_PATHS), next to it; not for the total, which
     * the tools make from the threads' (cgprof flame) */
    if (!err && snap.nodes && !own_path)
        write_paths(d, number, &snap, &symtab, &buf);
    cg_buf_free(&buf);
    free(storage);
}

const char *cg_part_files(void)
{
    return last_files.data ? last_files.data : "";
}

void cg_part_forked(void)
{
    /* freed, not dropped: LeakSanitizer would report it in the child (the
     * dump lock was held across the fork: no dump was using it) */
    cg_buf_free(&last_files);
}
