/* What the unit tests of the dump side (test_dump.c, test_total.c,
 * test_crash.c, test_filter.c) share: a scratch directory, a child process
 * per scenario, the runtime set up as runtime.c sets it up, threads whose
 * tables are driven with synthetic addresses and times, and a small, strict
 * reader of the files written.
 *
 * Why a child process per scenario: the dump side keeps process-wide state
 * that a run has once (the part numbers, the sums, the exit dump that ends
 * everything, the filters resolved once, the crash handlers), as the runtime
 * in a program has. Each scenario runs the runtime in a fork()ed child of
 * its own, which drives it and exits; the parent waits for it, then reads the
 * files it wrote and makes the assertions. A check the child itself must
 * make (a return value, the thread registry) is a REQUIRE: on failure it
 * prints the expression on the test's stderr and the child exits with
 * CHILD_FAILED, which the parent's assertion reports.
 *
 * Why synthetic times: a running thread's time is read by the dumper from
 * its clock; the tests point each thread's tables at its virtual clock
 * (t->costs.vclock = &t->vclock, as thread.c does for CGPROF_TIME=sample)
 * and set it themselves, so every nanosecond in the files is known. The
 * addresses of functions and call sites are synthetic too (below 64 kB:
 * never mapped), so the files name them by address, "0x%016lx", in object
 * "???".
 *
 * Header-only, static functions marked unused: each test uses what it
 * needs. */
#ifndef CG_PROFILE_TEST_H
#define CG_PROFILE_TEST_H

#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "costs.h"
#include "dump.h"
#include "filter.h"
#include "options.h"
#include "proc.h"
#include "real.h"
#include "sample.h"
#include "thread.h"
#include "util.h"

#define PT_UNUSED __attribute__((unused))

/* ---- the scratch directory ------------------------------------------------ */

static char tmpdir[256];

static PT_UNUSED int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* cmocka group setup and teardown: one mkdtemp directory for the file,
 * removed with everything in it at the end. */
static PT_UNUSED int tmpdir_setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/cgprof-unit-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static PT_UNUSED int tmpdir_teardown(void **state)
{
    (void)state;
    return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh subdirectory of the scratch directory for one test: dst. */
static PT_UNUSED void subdir(const char *name, char *dst, size_t size)
{
    snprintf(dst, size, "%s/%s", tmpdir, name);
    assert_int_equal(mkdir(dst, 0700), 0);
}

/* The names in dir, sorted, as one string "a b c" ("" for none). */
static PT_UNUSED void dir_listing(const char *dir, char *dst, size_t size)
{
    struct dirent **v;
    int n = scandir(dir, &v, NULL, alphasort);
    assert_true(n >= 0);
    size_t len = 0;
    dst[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(v[i]->d_name, ".") != 0 && strcmp(v[i]->d_name, "..") != 0)
            len += (size_t)snprintf(dst + len, size - len, "%s%s", len ? " " : "", v[i]->d_name);
        free(v[i]);
        assert_true(len < size);
    }
    free(v);
}

/* The whole file (NUL-terminated, malloc'd), or NULL when it cannot be
 * read. */
static PT_UNUSED char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = 0;
    return buf;
}

static PT_UNUSED void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* The command line as the runtime writes it in cmd: (proc.c): the
 * arguments separated by spaces. */
static PT_UNUSED void own_cmdline(char *dst, size_t size)
{
    int fd = open("/proc/self/cmdline", O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, dst, size - 1);
    close(fd);
    assert_true(n > 0);
    while (n > 0 && dst[n - 1] == 0)
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (dst[i] == 0)
            dst[i] = ' ';
    dst[n] = 0;
}

/* ---- the child process ------------------------------------------------------ */

#define CHILD_FAILED 3

/* The test's own stderr in the child, for REQUIRE (fd 2 may be captured). */
static int child_report_fd = 2;

#define REQUIRE(cond)                                                                                        \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            dprintf(child_report_fd, "%s:%d: in the child: REQUIRE(%s) failed\n", __FILE__, __LINE__, #cond); \
            _exit(CHILD_FAILED);                                                                             \
        }                                                                                                    \
    } while (0)

/* Starts scenario(arg) in a child process; its fd 2 goes to err_path when
 * not NULL. The child exits 0 when the scenario returns. */
static PT_UNUSED pid_t child_start(void (*scenario)(void *), void *arg, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (err_path) {
            child_report_fd = dup(2);
            int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (child_report_fd < 0 || fd < 0 || dup2(fd, 2) != 2)
                _exit(CHILD_FAILED);
            close(fd);
        }
        scenario(arg);
        _exit(0);
    }
    return pid;
}

static PT_UNUSED int child_wait(pid_t pid)
{
    int status;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    assert_int_equal(w, pid);
    return status;
}

static PT_UNUSED void assert_exited_ok(int status)
{
    if (!WIFEXITED(status))
        fail_msg("the child did not exit: %s %d", WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : status);
    if (WEXITSTATUS(status) == CHILD_FAILED)
        fail_msg("a REQUIRE failed in the child (see its message above)");
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Runs the scenario in a child and checks that it ran to its end; returns
 * the child's pid (the files are named after it). */
static PT_UNUSED pid_t run_child(void (*scenario)(void *), void *arg, const char *err_path)
{
    pid_t pid = child_start(scenario, arg, err_path);
    assert_exited_ok(child_wait(pid));
    return pid;
}

/* ---- the runtime, set up as runtime.c's initialise() does ------------------ */

static PT_UNUSED void report_option(void *ctx, const char *msg, const char *why)
{
    (void)ctx;
    (void)why;
    cg_warn("%s", msg);
}

static PT_UNUSED void thread_attached(struct cg_thread *t)
{
    cg_filter_attach(&t->costs);
    cg_sample_thread_start(t);
}

/* The service thread's bookkeeping (events.gone) is left out: no service
 * thread runs in the tests. */
static PT_UNUSED void thread_gone(void)
{
}

static PT_UNUSED const struct cg_thread_events test_events = {
    .attached = thread_attached,
    .stopping = cg_sample_thread_stop,
    .ended = cg_dump_thread_exit,
    .gone = thread_gone,
};

/* The settings the scenarios run with unless their env gives others: the
 * exact clock and no throttle, not the defaults (sampled time,
 * CGPROF_THROTTLE=10000:1000). The scenarios check exact nanoseconds of
 * their synthetic clocks, every call counted and the header lines of such a
 * run (the default throttle adds a "Throttled: 0 functions" line);
 * test_options.c checks the defaults. As tests/integration/cgtest.py's
 * PINNED. */
static const char *const pinned_env[] = { "CGPROF_TIME=exact", "CGPROF_THROTTLE=off" };

/* Whether env (NULL-terminated) sets the variable of "NAME=value" v. */
static PT_UNUSED int env_sets(const char *const *env, const char *v)
{
    size_t len = strcspn(v, "=") + 1;
    for (const char *const *e = env; e && *e; e++)
        if (strncmp(*e, v, len) == 0)
            return 1;
    return 0;
}

/* In the child: the options from env (NULL-terminated "CGPROF_...=..."
 * strings; only those are read) and those of pinned_env that env does not
 * set (a variable set twice would be read at its first value, and said:
 * options.c), the clock, the filters (their patterns resolved too, as the
 * constructor does), the identity and the thread layer; then collection
 * is on. */
static PT_UNUSED void runtime_init(const char *const *env)
{
    const char *all[32];
    size_t n = 0;
    for (const char *const *e = env; e && *e; e++) {
        REQUIRE(n + 1 < sizeof all / sizeof all[0]);
        all[n++] = *e;
    }
    for (size_t i = 0; i < sizeof pinned_env / sizeof pinned_env[0]; i++) {
        REQUIRE(n + 1 < sizeof all / sizeof all[0]);
        if (!env_sets(env, pinned_env[i]))
            all[n++] = pinned_env[i];
    }
    all[n] = NULL;
    cg_real_resolve();
    cg_options_parse(&cg_opts, (char *const *)all, NULL, report_option, NULL);
    cg_latency = cg_opts.latency; /* as runtime.c: before any thread attaches */
    const char *why = NULL;
    cg_clock_init((enum cg_clock_kind)cg_opts.clock, &why);
    cg_filter_init();
    cg_proc_read_identity();
    REQUIRE(cg_thread_init(&test_events) == 0);
    cg_collecting = 1;
    cg_filter_scan();
}

/* ---- a thread driven with synthetic events ------------------------------------ */

#define STACK_WORDS 4096

/* A thread's state and the memory its synthetic stack pointers point into
 * (repair.c reads a callee's return address there to tell a real call from
 * an inlined one: each call writes its site where a real one would be). */
struct sim {
    struct cg_thread *t;
    uintptr_t stack[STACK_WORDS];
};

/* The calling thread's state, its clock the test's. */
static PT_UNUSED void sim_attach(struct sim *s)
{
    memset(s->stack, 0, sizeof s->stack);
    s->t = cg_thread_attach();
    REQUIRE(s->t != NULL);
    s->t->costs.vclock = &s->t->vclock;
}

/* The clock of the thread now reads `now` (ns). */
static PT_UNUSED void sim_at(struct sim *s, uint64_t now)
{
    s->t->vclock = now;
}

/* fn entered at `now`, called from `site` (a real call: its frame below
 * its caller's, its return address on the stack). */
static PT_UNUSED void sim_call(struct sim *s, uintptr_t fn, uintptr_t site, uint64_t now)
{
    uint32_t depth = s->t->costs.depth;
    REQUIRE(depth < STACK_WORDS / 8 - 2);
    uintptr_t sp = (uintptr_t)&s->stack[STACK_WORDS - 8 * (depth + 2)];
    *(uintptr_t *)(sp + sizeof(uintptr_t)) = site;
    sim_at(s, now);
    cg_costs_enter(&s->t->costs, fn, site, sp, fn + 4, now);
}

static PT_UNUSED void sim_ret(struct sim *s, uintptr_t fn, uint64_t now)
{
    sim_at(s, now);
    cg_costs_exit(&s->t->costs, fn, now);
}

/* The calling thread ends at `end` as thread.c's key destructor ends it
 * (end time, hooks off for good, marked finished, then its last part);
 * with the hooks off, the real destructor does nothing more when the
 * thread exits. */
static PT_UNUSED void sim_end(struct sim *s, uint64_t end)
{
    struct cg_thread *t = s->t;
    t->t_end = end;
    cg_thread_mark_internal();
    __atomic_store_n(&t->finished, 1, __ATOMIC_RELEASE);
    cg_dump_thread_exit(t);
    s->t = NULL;
}

static PT_UNUSED int registered(const struct cg_thread *t)
{
    for (struct cg_thread *p = cg_thread_list(); p; p = p->next)
        if (p == t)
            return 1;
    return 0;
}

/* ---- reading the files back ------------------------------------------------------ */

/* Synthetic functions are named by their address, as the writer names a
 * function without a symbol (Valgrind's way). */
static PT_UNUSED const char *fname(uintptr_t addr)
{
    static char names[8][24];
    static unsigned next;
    char *n = names[next++ % 8];
    snprintf(n, sizeof names[0], "0x%016" PRIxPTR, addr);
    return n;
}

#define PROF_MAX_FNS 64
#define PROF_MAX_CALLS 64
#define PROF_MAX_DESC 24
#define PROF_NAME 128

struct prof_fn {
    char name[PROF_NAME];
    uint64_t self; /* summed over its cost lines */
};

struct prof_call {
    char caller[PROF_NAME], callee[PROF_NAME];
    uint64_t count, incl; /* summed over its calls= lines */
    unsigned lines;
};

struct prof {
    char creator[128], cmd[4096];
    long pid;
    unsigned thread, part;
    char desc[PROF_MAX_DESC][512]; /* "Name: value", in order */
    unsigned ndesc;
    char event[256];
    uint64_t summary, totals;
    struct prof_fn fns[PROF_MAX_FNS];
    unsigned nfns;
    struct prof_call calls[PROF_MAX_CALLS];
    unsigned ncalls;
};

struct prof_ids {
    char names[PROF_MAX_FNS * 2][PROF_NAME];
    unsigned n;
};

/* "(id) name" or "(id)" after a spec's '=': the name, defined or
 * recalled. */
static PT_UNUSED const char *prof_name(struct prof_ids *ids, const char *v, const char *path, unsigned lineno)
{
    char *end;
    if (v[0] != '(')
        fail_msg("%s:%u: name without compression id: %s", path, lineno, v);
    unsigned long id = strtoul(v + 1, &end, 10);
    if (end == v + 1 || *end != ')' || id == 0 || id > PROF_MAX_FNS * 2)
        fail_msg("%s:%u: bad compression id: %s", path, lineno, v);
    if (end[1] == 0) {
        if (id > ids->n)
            fail_msg("%s:%u: id %lu used before it is defined", path, lineno, id);
        return ids->names[id - 1];
    }
    if (end[1] != ' ' || id != ids->n + 1)
        fail_msg("%s:%u: id %lu defined out of order (or no space before the name): %s", path, lineno, id, v);
    snprintf(ids->names[ids->n++], PROF_NAME, "%s", end + 2);
    return ids->names[id - 1];
}

/* A subposition: 0x hex absolute, decimal absolute, +N, -N or *. */
static PT_UNUSED int prof_subposition(const char *tok, int hex)
{
    if (strcmp(tok, "*") == 0)
        return 1;
    const char *p = tok;
    if (*p == '+' || *p == '-')
        p++;
    else if (hex && strncmp(p, "0x", 2) == 0)
        return p[2] && strspn(p + 2, "0123456789abcdef") == strlen(p + 2);
    return *p && strspn(p, "0123456789") == strlen(p);
}

/* A cost line: instr line cost; returns the cost. */
static PT_UNUSED uint64_t prof_cost_line(const char *line, const char *path, unsigned lineno)
{
    char a[64], b[64], c[64], extra[8];
    if (sscanf(line, "%63s %63s %63s %7s", a, b, c, extra) != 3 || !prof_subposition(a, 1) ||
        !prof_subposition(b, 0) || strspn(c, "0123456789") != strlen(c))
        fail_msg("%s:%u: not a cost line (instr line ns): '%s'", path, lineno, line);
    return strtoull(c, NULL, 10);
}

static PT_UNUSED struct prof_fn *prof_fn_get(struct prof *p, const char *name)
{
    for (unsigned i = 0; i < p->nfns; i++)
        if (strcmp(p->fns[i].name, name) == 0)
            return &p->fns[i];
    assert_true(p->nfns < PROF_MAX_FNS);
    struct prof_fn *f = &p->fns[p->nfns++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->self = 0;
    return f;
}

static PT_UNUSED struct prof_call *prof_call_get(struct prof *p, const char *caller, const char *callee)
{
    for (unsigned i = 0; i < p->ncalls; i++)
        if (strcmp(p->calls[i].caller, caller) == 0 && strcmp(p->calls[i].callee, callee) == 0)
            return &p->calls[i];
    assert_true(p->ncalls < PROF_MAX_CALLS);
    struct prof_call *c = &p->calls[p->ncalls++];
    memset(c, 0, sizeof *c);
    snprintf(c->caller, sizeof c->caller, "%s", caller);
    snprintf(c->callee, sizeof c->callee, "%s", callee);
    return c;
}

/* Reads the file at path into *p, failing the test on anything that is not
 * the shape the writer gives (writer.c): the header in its order, then
 * function blocks, then totals:, which must equal summary: and the sum of
 * the self costs. */
static PT_UNUSED void prof_read(const char *path, struct prof *p)
{
    memset(p, 0, sizeof *p);
    char *text = read_text(path);
    if (!text)
        fail_msg("cannot read %s: %s", path, strerror(errno));
    static struct prof_ids ids; /* fn= and cfn= share their ids */
    memset(&ids, 0, sizeof ids);
    const char *fn = NULL;
    const char *cfn = NULL; /* a cfn= waiting for its calls= */
    struct prof_call *call = NULL; /* a calls= waiting for its cost line */
    uint64_t call_count = 0;
    uint64_t self_sum = 0;
    int in_body = 0, ended = 0, continued = 0;
    unsigned lineno = 0;
    static const char *const header[] = { "# callgrind format", "version: 1", "creator: ", "pid: ", "thread: ",
                                          "part: ", "cmd: " };
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        /* strtok_r skips empty lines: the blank line after summary: and
         * between blocks carries nothing */
        if (ended)
            fail_msg("%s:%u: text after totals:", path, lineno);
        if (lineno <= 7) {
            size_t n = strlen(header[lineno - 1]);
            if (strncmp(line, header[lineno - 1], n) != 0 || (lineno <= 2 && line[n]))
                fail_msg("%s:%u: expected '%s...', got '%s'", path, lineno, header[lineno - 1], line);
            const char *v = line + n;
            if (lineno == 3)
                snprintf(p->creator, sizeof p->creator, "%s", v);
            else if (lineno == 4)
                p->pid = strtol(v, NULL, 10);
            else if (lineno == 5)
                p->thread = (unsigned)strtoul(v, NULL, 10);
            else if (lineno == 6)
                p->part = (unsigned)strtoul(v, NULL, 10);
            else if (lineno == 7)
                snprintf(p->cmd, sizeof p->cmd, "%s", v);
            continue;
        }
        if (!in_body) {
            if (strncmp(line, "desc: ", 6) == 0 && !p->event[0]) {
                assert_true(p->ndesc < PROF_MAX_DESC);
                snprintf(p->desc[p->ndesc++], sizeof p->desc[0], "%s", line + 6);
            } else if (strcmp(line, "positions: instr line") == 0 && !p->event[0]) {
            } else if (strncmp(line, "event: ns : ", 12) == 0 && !p->event[0]) {
                snprintf(p->event, sizeof p->event, "%s", line + 12);
            } else if (strcmp(line, "events: ns") == 0 && p->event[0]) {
            } else if (strncmp(line, "summary: ", 9) == 0 && p->event[0]) {
                p->summary = strtoull(line + 9, NULL, 10);
                in_body = 1;
            } else {
                fail_msg("%s:%u: unexpected header line '%s'", path, lineno, line);
            }
            continue;
        }
        /* The calls continued from an earlier part (calls=0) come last,
         * behind "#> ": comments to Valgrind's readers, lines to cgprof's. */
        if (strncmp(line, "#> ", 3) == 0) {
            line += 3;
            continued = 1;
        } else if (line[0] == '#') {
            continue;
        } else if (continued && strncmp(line, "totals: ", 8) != 0) {
            fail_msg("%s:%u: a line after the continued calls: '%s'", path, lineno, line);
        }
        if (call) {
            /* the cost line of a call: its inclusive cost */
            call->incl += prof_cost_line(line, path, lineno);
            call->count += call_count;
            call->lines++;
            call = NULL;
            continue;
        }
        if (cfn && strncmp(line, "calls=", 6) != 0)
            fail_msg("%s:%u: cfn= not followed by calls=", path, lineno);
        if (strncmp(line, "ob=", 3) == 0 || strncmp(line, "fl=", 3) == 0 || strncmp(line, "fi=", 3) == 0 ||
            strncmp(line, "fe=", 3) == 0 || strncmp(line, "cob=", 4) == 0 || strncmp(line, "cfi=", 4) == 0) {
            if (!strchr(line, '('))
                fail_msg("%s:%u: name without compression: '%s'", path, lineno, line);
        } else if (strncmp(line, "fn=", 3) == 0) {
            fn = prof_name(&ids, line + 3, path, lineno);
            prof_fn_get(p, fn);
        } else if (strncmp(line, "cfn=", 4) == 0) {
            if (!fn)
                fail_msg("%s:%u: cfn= outside a function block", path, lineno);
            cfn = prof_name(&ids, line + 4, path, lineno);
        } else if (strncmp(line, "calls=", 6) == 0) {
            char target[64], tline[32], extra[8];
            unsigned long long n = 0; /* cmocka 1.1.5 does not say _fail never returns */
            if (!cfn || sscanf(line + 6, "%llu %63s %31s %7s", &n, target, tline, extra) != 3 ||
                strncmp(target, "0x", 2) != 0)
                fail_msg("%s:%u: bad calls= line '%s'", path, lineno, line);
            if (n == 0 && !continued)
                fail_msg("%s:%u: calls=0 where callgrind_annotate reads it: '%s'", path, lineno, line);
            call = prof_call_get(p, fn, cfn);
            call_count = n;
            cfn = NULL;
        } else if (strncmp(line, "totals: ", 8) == 0) {
            p->totals = strtoull(line + 8, NULL, 10);
            ended = 1;
        } else {
            if (!fn)
                fail_msg("%s:%u: cost line outside a function block", path, lineno);
            uint64_t cost = prof_cost_line(line, path, lineno);
            prof_fn_get(p, fn)->self += cost;
            self_sum += cost;
        }
    }
    free(text);
    if (!ended || call || cfn)
        fail_msg("%s: the file ends early (no totals:, or a call without its cost line)", path);
    if (p->totals != p->summary || p->totals != self_sum)
        fail_msg("%s: summary %" PRIu64 ", totals %" PRIu64 ", self costs %" PRIu64 ": not all equal", path,
                 p->summary, p->totals, self_sum);
}

/* The value of desc line "key: value", or NULL. */
static PT_UNUSED const char *prof_desc(const struct prof *p, const char *key)
{
    size_t n = strlen(key);
    for (unsigned i = 0; i < p->ndesc; i++)
        if (strncmp(p->desc[i], key, n) == 0 && p->desc[i][n] == ':' && p->desc[i][n + 1] == ' ')
            return p->desc[i] + n + 2;
    return NULL;
}

static PT_UNUSED const struct prof_call *prof_call(const struct prof *p, const char *caller, const char *callee)
{
    for (unsigned i = 0; i < p->ncalls; i++)
        if (strcmp(p->calls[i].caller, caller) == 0 && strcmp(p->calls[i].callee, callee) == 0)
            return &p->calls[i];
    return NULL;
}

/* A function's self cost; -1 (as uint64_t) when it has no block. */
static PT_UNUSED uint64_t prof_self(const struct prof *p, const char *name)
{
    for (unsigned i = 0; i < p->nfns; i++)
        if (strcmp(p->fns[i].name, name) == 0)
            return p->fns[i].self;
    return UINT64_MAX;
}

/* Macros, so that a failure names the line of the test. */
#define ASSERT_CALL(p, caller, callee, cnt, inc)                                                             \
    do {                                                                                                     \
        const char *caller_ = (caller), *callee_ = (callee);                                                 \
        const struct prof_call *c_ = prof_call((p), caller_, callee_);                                       \
        if (!c_)                                                                                             \
            fail_msg("no call %s -> %s", caller_, callee_);                                                  \
        assert_int_equal(c_->count, (cnt));                                                                  \
        assert_int_equal(c_->incl, (inc));                                                                   \
    } while (0)

#define ASSERT_NO_CALL(p, caller, callee) assert_null(prof_call((p), (caller), (callee)))
#define ASSERT_SELF(p, name, cost) assert_int_equal(prof_self((p), (name)), (cost))
#define ASSERT_DESC(p, key, value)                                                                           \
    do {                                                                                                     \
        const char *d_ = prof_desc((p), (key));                                                              \
        if (!d_)                                                                                             \
            fail_msg("no desc: %s", (key));                                                                  \
        assert_string_equal(d_, (value));                                                                    \
    } while (0)
#define ASSERT_NO_DESC(p, key) assert_null(prof_desc((p), (key)))

#endif
