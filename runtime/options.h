/* Parsing of the CGPROF_* environment variables (table: options.inc). */
#ifndef CG_OPTIONS_H
#define CG_OPTIONS_H

#include <limits.h>
#include <stddef.h>

enum cg_opt_type {
    CG_OPT_PATH, CG_OPT_DIR, CG_OPT_ENUM, CG_OPT_BOOL, CG_OPT_SIGNAL, CG_OPT_UINT, CG_OPT_GLOBS, CG_OPT_THRESHOLD
};

#define CG_OPT_PATH_MAX 1024
#define CG_OPT_GLOBS_MAX 4096

/* THRESHOLD: N:T, both 0 for off. */
struct cg_threshold {
    unsigned long long n, t;
};

/* In the order of CGPROF_TIME's accepted values. */
enum cg_time_mode { CG_TIME_EXACT, CG_TIME_SAMPLE };

/* In the order of CGPROF_THREAD_EXIT's accepted values. */
enum cg_thread_exit { CG_THREAD_EXIT_FILE, CG_THREAD_EXIT_MERGE };

struct cg_options {
    char out[CG_OPT_PATH_MAX]; /* PATH: the value as given (expanded at use) */
    int clock;                 /* ENUM: index into the accepted values */
    int time;                  /* ENUM: enum cg_time_mode */
    unsigned sample_hz;        /* UINT */
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
    int verbose;               /* BOOL */
    int repair_warning;        /* BOOL */
};

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
 * CGPROF_* ones are looked at). A malformed value keeps the default and a
 * variable cgprof does not know is reported as a likely typo; each problem
 * is one call of report(ctx, message). Returns the number of problems. */
int cg_options_parse(struct cg_options *o, char *const *env, void (*report)(void *ctx, const char *msg),
                     void *ctx);

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

#endif
