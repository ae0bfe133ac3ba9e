/* The sums of parts: see total.h.
 *
 * CGPROF_TOTAL=1: every part written (each thread's, at every dump, and the
 * last part of each thread that ends, merged or not) is also added into one
 * sum, written at exit (and before an exec) as one more file: the whole run
 * in one part, for callgrind_annotate, which reads one file. The parts are
 * summed as they are made, not read back from their files: those may have
 * been moved or removed meanwhile, and re-reading would need a parser. Its
 * name (cg_total_pattern) keeps it out of what KCachegrind loads together
 * for the run (<run>*: libcore/tracedata.cpp, TraceData::load), where it
 * would count everything twice; and out of callgrind.out* for the default
 * prefix, which is what KCachegrind loads from a directory and how scripts
 * glob Callgrind's files. */
#include "total.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "merge.h"
#include "naming.h"
#include "proc.h"
#include "util.h"
#include "desc.inc"

static struct cg_merged total;
static int total_failed;          /* a part could not be added: no total */
/* The repairs in all parts written (whatever CGPROF_TOTAL says), for the
 * warning at the end of the run. */
static uint64_t run_left, run_unmatched, run_lost;
static unsigned total_ended;      /* threads whose last part was added */
static uint64_t total_unfinished; /* calls in progress at those last parts */

/* CGPROF_THREAD_EXIT=merge: the parts of threads that ended since the last
 * dump, summed, written as thread 0 with every dump. */
static struct cg_merged ended;
/* Another process's total has this pid's name (cg_total_keep_others): ours
 * is named after it, .N with the first N free, chosen at the first write
 * (0: not chosen yet). */
static int keep_others;
static unsigned total_number;

void cg_total_add(struct cg_snapshot *part, int finished)
{
    run_left += part->left;
    run_unmatched += part->unmatched_exits;
    run_lost += part->lost;
    if (!cg_opts.total || total_failed)
        return;
    uint32_t depth = part->depth;
    if (cg_merged_take(&total, part) != 0) {
        /* A sum that misses a part would claim to be the run's: none. */
        total_failed = 1;
        cg_merged_free(&total);
        cg_warn("out of memory: the total of all threads will not be written");
        return;
    }
    if (finished) {
        total_ended++;
        total_unfinished += depth;
    }
}

void cg_total_write(struct cg_dump *d, unsigned running, uint64_t running_depth)
{
    if (!cg_opts.total || total_failed || !total.threads)
        return;
    unsigned threads = total_ended + running;
    uint64_t unfinished = total_unfinished + running_depth;
    total.snap.depth = (uint32_t)(unfinished > UINT32_MAX ? UINT32_MAX : unfinished);
    /* static: written under the dump lock or in the crash copy, whose
     * stack may be small (see part.c) */
    static char path[CG_OPT_PATH_MAX + 128];
    char name[160];
    snprintf(name, sizeof name, CG_DESC_TOTAL_OF " %u thread%s, %u part%s summed (CGPROF_TOTAL)", threads,
             threads == 1 ? "" : "s", total.threads, total.threads == 1 ? "" : "s");
    struct cg_names names = { cg_opts.out, cg_proc_names_pid(), cg_proc_cwd() };
    if (cg_name_total(&names, path, sizeof path) != 0) {
        cg_part_failed(d, cg_opts.out, ENAMETOOLONG); /* cannot be: the length is checked at start-up */
        return;
    }
    if (keep_others) {
        size_t len = strlen(path);
        struct stat st;
        for (unsigned n = total_number ? total_number : 1; n < 1000; n++) {
            snprintf(path + len, sizeof path - len, ".%u", n);
            if (total_number || (lstat(path, &st) != 0 && errno == ENOENT)) {
                total_number = n;
                break;
            }
        }
    }
    cg_part_write(d, 0, name, &total.snap, path);
}

const struct cg_snapshot *cg_total_snapshot(void)
{
    return &total.snap;
}

void cg_total_repairs(uint64_t out[3])
{
    out[0] = run_left;
    out[1] = run_unmatched;
    out[2] = run_lost;
}

void cg_total_warn_repairs(void)
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
    cg_warn("warning: the profile holds repairs: %s%s%s%s%s; see its desc: lines and docs/internals/design.md, \"Repairs\"",
            what[0], n > 1 ? ", " : "", n > 1 ? what[1] : "", n > 2 ? ", " : "", n > 2 ? what[2] : "");
}

int cg_ended_add(const struct cg_snapshot *part)
{
    ended.paths = 1; /* thread 00 gets a path file too (the total does not) */
    return cg_merged_add(&ended, part);
}

void cg_ended_write(struct cg_dump *d)
{
    if (!ended.threads)
        return;
    char name[96];
    snprintf(name, sizeof name, "%u threads that ended, merged (CGPROF_THREAD_EXIT=merge)", ended.threads);
    cg_part_write(d, 0, name, &ended.snap, NULL);
    cg_merged_free(&ended);
}

const struct cg_snapshot *cg_ended_snapshot(void)
{
    return &ended.snap;
}

void cg_total_keep_others(void)
{
    keep_others = 1;
}

void cg_total_forked(void)
{
    keep_others = 0;
    total_number = 0;
    cg_merged_free(&total);
    total_failed = 0;
    total_ended = 0;
    total_unfinished = 0;
    run_left = run_unmatched = run_lost = 0;
    cg_merged_free(&ended); /* the parent's ended threads are the parent's */
}
