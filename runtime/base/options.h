/* Parsing of the CGPROF_* environment variables (table: options.inc). */
#ifndef CG_OPTIONS_H
#define CG_OPTIONS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum cg_opt_type {
    CG_OPT_PATH, CG_OPT_DIR, CG_OPT_ENUM, CG_OPT_BOOL, CG_OPT_SIGNAL, CG_OPT_UINT, CG_OPT_GLOBS, CG_OPT_THRESHOLD
};

/* PATH and DIR values: any path the system takes. PATH_MAX (4096 on
 * Linux) counts the final NUL: a name of 4095 bytes at most, each of its
 * components NAME_MAX (255) at most. The checks (options.c) count what the
 * runtime adds to the value, so that a value accepted at start-up never
 * fails at exit for its length. */
#define CG_OPT_PATH_MAX PATH_MAX
#define CG_OPT_NAME_MAX NAME_MAX
/* What a %p of CGPROF_OUT becomes, at most: a pid (an int) of 10 digits. */
#define CG_OPT_PID_DIGITS 10
/* What the runtime adds to the expanded CGPROF_OUT prefix, at most, all in
 * its last component: a path file's "paths." (or ".out" made ".paths": 2)
 * and ".<pid>.<part>-<thread>" (naming.c: 6 + 11 + 11 + 11 bytes with a
 * pid, a part and a thread of 10 digits; a part's name is 6 bytes shorter,
 * the total's "total." and ".<pid>" make 17 at most) and the temporary
 * name it is first written under, ".<name>.cgprof-tmp.<pid>.<count>"
 * (outfile.c: 1 + 12 + 10 + 1 + 10; cut to NAME_MAX by outfile.c, but
 * counted in the whole path). */
#define CG_OPT_OUT_SUFFIX_MAX (39 + 34)
/* What the control files add to CGPROF_CONTROL_DIR: "/<pid>.status.tmp.<tid>"
 * (control.c; cgprof-control's names are shorter). */
#define CG_OPT_CONTROL_SUFFIX_MAX (1 + 10 + 12 + 10)
#define CG_OPT_GLOBS_MAX 4096

/* THRESHOLD: N:T, both 0 for off. */
struct cg_threshold {
    unsigned long long n, t;
};

/* In the order of CGPROF_TIME's accepted values. */
enum cg_time_mode { CG_TIME_EXACT, CG_TIME_SAMPLE };

/* In the order of CGPROF_SAMPLE_TIMER's accepted values. */
enum cg_sample_timer { CG_SAMPLE_TIMER_AUTO, CG_SAMPLE_TIMER_PERF, CG_SAMPLE_TIMER_POSIX, CG_SAMPLE_TIMER_RING };

/* In the order of CGPROF_POSITIONS's accepted values. */
enum cg_positions { CG_POSITIONS_INSTR_LINE, CG_POSITIONS_LINE };

/* In the order of CGPROF_INLINED's and CGPROF_COLLECT's accepted values. */
enum cg_inlined_mode { CG_INLINED_FOLD, CG_INLINED_COUNT };
enum cg_collect_start { CG_COLLECT_ON, CG_COLLECT_OFF };

/* In the order of CGPROF_STACKS's accepted values. */
enum cg_stacks { CG_STACKS_HOOKS, CG_STACKS_UNWIND };

/* In the order of CGPROF_THREAD_EXIT's accepted values. */
enum cg_thread_exit { CG_THREAD_EXIT_FILE, CG_THREAD_EXIT_MERGE };

struct cg_options {
    char out[CG_OPT_PATH_MAX]; /* PATH: the value as given (expanded at use) */
    int clock;                 /* ENUM: index into the accepted values */
    int time;                  /* ENUM: enum cg_time_mode */
    unsigned sample_hz;        /* UINT */
    int sample_timer;          /* ENUM: enum cg_sample_timer */
    int sample_signal;         /* SIGNAL */
    int signal;                /* SIGNAL: the number, 0 for none */
    int thread_exit;           /* ENUM: enum cg_thread_exit */
    int total;                 /* BOOL */
    char control_dir[CG_OPT_PATH_MAX]; /* DIR: "" for the default */
    int crash;                 /* BOOL */
    char skip[CG_OPT_GLOBS_MAX];        /* GLOBS: as given, "" for none */
    char skip_object[CG_OPT_GLOBS_MAX]; /* GLOBS */
    char skip_file[CG_OPT_GLOBS_MAX];   /* GLOBS */
    struct cg_threshold throttle;       /* THRESHOLD */
    int positions;             /* ENUM: enum cg_positions */
    int verbose;               /* BOOL */
    int repair_warning;        /* BOOL */
    int paths;                 /* BOOL */
    unsigned paths_max;        /* UINT */
    int compensate;            /* BOOL */
    int off_cpu;               /* BOOL */
    int latency;               /* BOOL */
    int inlined;               /* ENUM: enum cg_inlined_mode */
    int collect;               /* ENUM: enum cg_collect_start */
    int trace_children;        /* BOOL */
    int takeback;              /* BOOL */
    int stacks;                /* ENUM: enum cg_stacks */
    /* A PATH or DIR value refused is not replaced by the default, which
     * would write elsewhere than where the user said: out_refused, no
     * profile is written at all (the runtime stays off); control_dir_refused,
     * no control files are kept. Their fields are then "". */
    int out_refused;
    int control_dir_refused;
    /* the variables the environment set (bit i: cg_option_table[i]), a
     * value refused included: cg_option_given */
    uint64_t given;
};

/* Whether the environment parsed into o set variable (its name). */
int cg_option_given(const struct cg_options *o, const char *variable);

struct cg_option_info {
    const char *variable;
    enum cg_opt_type type;
    const char *def;
    const char *accepted;
    const char *help;
};

extern const struct cg_option_info cg_option_table[];
extern const unsigned cg_option_count;

/* Fills *o from the "NAME=value" strings of env (NULL-terminated; only the
 * CGPROF_* ones are looked at). A malformed value keeps the default (a
 * PATH or DIR one: see out_refused) and a variable cgprof does not know is
 * reported as a likely typo; each problem is one call of report(ctx,
 * message, why): the message names the variable, shows the value quoted
 * (cg_quote), says why it is refused, what is accepted and what is done
 * instead; why is the reason alone (the whole message for a variable
 * cgprof does not know). cwd: the directory a relative CGPROF_OUT is
 * resolved against (the start-up directory, whose length counts toward
 * PATH_MAX), "" or NULL when unknown. Returns the number of problems. */
int cg_options_parse(struct cg_options *o, char *const *env, const char *cwd,
                     void (*report)(void *ctx, const char *msg, const char *why), void *ctx);

/* The signal number of a name ("USR1", "SIGUSR1", "RTMIN+2") or number, 0
 * for "none", -1 when it is none of these or cannot serve (SIGKILL, SIGSTOP,
 * the signals of faults). */
int cg_parse_signal(const char *value);
/* The name of a signal without "SIG" (USR1, RTMIN+2), or its number. */
const char *cg_signal_name(int sig, char *buf, unsigned long size);

/* Splits a GLOBS value: calls fn(ctx, pattern, length) for each pattern,
 * in order (the patterns keep their "\,", which fnmatch reads as a comma).
 * Stops when fn returns nonzero and returns that; 0 otherwise. */
int cg_globs_each(const char *globs, int (*fn)(void *ctx, const char *pattern, size_t len), void *ctx);

/* Expands a PATH option: %p -> pid, %% -> %. Returns 0, or -1 if it does not
 * fit in `size`. */
int cg_expand_path(const char *pattern, long pid, char *dst, unsigned long size);

/* What follows a CGPROF_OUT pattern in its run's name: nothing when the
 * pattern names the pid, else ".%p" (the files of a run are <pattern>.<pid>
 * ...). The one test of it, for the names (naming.c) and the total's. */
static inline const char *cg_run_tail(const char *pattern)
{
    return strstr(pattern, "%p") ? "" : ".%p";
}

/* The pattern (as cg_expand_path takes) of the file that sums all threads
 * of a run, from a CGPROF_OUT pattern whose per-thread files are
 * <run>-<NN> and <run>.<part>-<NN>, <run> being <pattern>.%p, or the pattern
 * itself when it names the pid. KCachegrind, given <run>, loads every
 * <run>.* and <run>-* with it: the total's name must differ from <run>
 * within <run>'s length. In the file name (the last component): the last
 * ".out" that ends a word becomes ".total" (callgrind.out.%p ->
 * callgrind.total.%p); without one, the first %p becomes total.%p
 * (prof-%p -> prof-total.%p); without either, "total." goes in front.
 * Returns 0, or -1 if it does not fit in `size`. */
int cg_total_pattern(const char *pattern, char *dst, unsigned long size);
/* cg_total_pattern's pattern expanded for pid (as cg_expand_path would),
 * made without a copy of either. Returns 0, or -1 if it does not fit. */
int cg_total_expanded(const char *pattern, long pid, char *dst, unsigned long size);
/* The same with "paths" for "total": the run name of the path files
 * (callgrind.out.%p -> callgrind.paths.<pid>), docs/internals/paths-format.md. */
int cg_paths_expanded(const char *pattern, long pid, char *dst, unsigned long size);
int cg_paths_pattern(const char *pattern, char *dst, unsigned long size);

#endif
