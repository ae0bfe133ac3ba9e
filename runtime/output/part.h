/* Writing parts (service layer): one dump's context (its trigger, part
 * number, clock, the files it wrote and the first failure) and the writing
 * of one snapshot as a part file. Used under the dump lock (dump.c), or in
 * the crash copy, which has no other thread. */
#ifndef CG_PART_H
#define CG_PART_H

#include "callsite.h"
#include "snapshot.h"
#include "options.h"

struct cg_dump {
    const char *trigger; /* desc: Trigger: */
    unsigned part;       /* the header's part: number */
    int part_in_name;    /* name the files <prefix>.<pid>.<part>-NN */
    int paused;          /* collection is paused: said in each part */
    unsigned coalesced;  /* signals served by this one dump */
    struct cg_exec_ranges exec;
    unsigned failed;     /* files not written (the run's first failure is
                          * kept by part.c: a path does not go on the stack) */
};

/* Starts a dump. append_files: the files it writes are added to the
 * previous dump's list (cg_part_files) instead of replacing it. */
void cg_part_begin(struct cg_dump *d, const char *trigger, unsigned part, int part_in_name, int append_files);
/* Ends it: the first failure of the run is said once. Returns 0 when every
 * file was written, else -1. */
int cg_part_end(struct cg_dump *d);
/* Writes snapshot s as thread `number`'s part (0: a sum of threads) to
 * its file, or to own_path when not NULL. name: the thread's name, "" or
 * NULL for none. The call instructions of s's arcs are filled in (their
 * call_pc), in place. */
void cg_part_write(struct cg_dump *d, unsigned number, const char *name, struct cg_snapshot *s,
                   const char *own_path);
/* A file of the dump that could not even be named or made: counted, and
 * said if it is the first failure. */
void cg_part_failed(struct cg_dump *d, const char *what, int err);
/* The part of thread `number` not written for want of memory (its reading
 * or its snapshot could not be made): counted and said as a file that
 * failed, with ENOMEM. */
void cg_part_lost(struct cg_dump *d, unsigned number);

/* At the process's first hook: says once (naming the directory, why, and
 * CGPROF_OUT) when the files' directory does not exist or cannot be
 * written, rather than after the whole run; the same failure at the end is
 * not said again. System calls and cg_warn only: it may run in a signal
 * handler. */
void cg_part_check_dir(void);

/* The files written by the latest dump, separated by spaces (spaces in
 * names as \x20), for the status file. */
const char *cg_part_files(void);
/* In a forked child: the list is the parent's. */
void cg_part_forked(void);

#endif
