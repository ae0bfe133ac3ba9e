/* Unit tests of the control dispatch: control.c (the control directory's
 * files, docs/internals/control-protocol.md) and dump.c's cg_dump_serve, which the
 * service thread (service.c) calls with what cg_control_take_command took
 * after the dump signal woke it. Each kind of request is served as the
 * service thread serves it, and its result read back from the files: the
 * parts (their header and exact calls= counts) and the status file.
 *
 * The runtime's initialisation (runtime.c, not linked) is done here, its
 * minimum: options from an environment array (CGPROF_OUT and
 * CGPROF_CONTROL_DIR in a temporary directory, removed at the end;
 * CGPROF_SIGNAL=USR2, to see that the trigger names the signal configured;
 * CGPROF_TIME=sample), the process's identity, the thread layer with the
 * runtime's own events for a thread's end (its last part), the sampler
 * (no timer is started: the threads' clocks are moved by the test only).
 * The sampled clock makes every time exact: the dump reads a running
 * thread's clock (its calls in progress) from t->vclock, which the test
 * sets. Two threads are registered: the main thread (1), which also serves
 * the requests as the service thread would (inside the runtime: its guard
 * set), and a worker (2) that made its calls and waits.
 *
 * The calls are driven into each thread's tables with cg_costs_enter and
 * cg_costs_exit (synthetic addresses, unmapped: the parts name them by
 * address) by the thread that owns them. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "costs.h"
#include "dump.h"
#include "options.h"
#include "proc.h"
#include "sample.h"
#include "service.h"
#include "thread.h"

#define ROOT_SITE ((uintptr_t)0x7f0000009000u)
#define MAIN   ((uintptr_t)0x1000)
#define F      ((uintptr_t)0x2000)
#define WMAIN  ((uintptr_t)0x5000)
#define G      ((uintptr_t)0x6000)
/* as the parts name them: by address, nothing being mapped there; the
 * root by its call site's instruction (ROOT_SITE - 1) */
#define NAME_MAIN  "0x0000000000001000"
#define NAME_F     "0x0000000000002000"
#define NAME_WMAIN "0x0000000000005000"
#define NAME_G     "0x0000000000006000"
#define NAME_ROOT  "0x00007f0000008fff"

static char tmpdir[64], ctl_dir[128], out_dir[128];

/* ---- files ------------------------------------------------------------------------ */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    size_t n;
    while (s && (n = fread(s + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2)
            s = realloc(s, cap *= 2);
    }
    fclose(f);
    if (s)
        s[len] = 0;
    return s;
}

/* The value of "key: value" in a status text, in a static buffer; NULL
 * when the key is not there. */
static const char *field(const char *text, const char *key)
{
    static char value[16384];
    size_t klen = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, klen) == 0 && l[klen] == ':' && l[klen + 1] == ' ') {
            const char *v = l + klen + 2;
            size_t n = strcspn(v, "\n");
            snprintf(value, sizeof value, "%.*s", (int)n, v);
            return value;
        }
    }
    return NULL;
}

static void status_path(char *dst, size_t size)
{
    snprintf(dst, size, "%s/%ld.status", ctl_dir, (long)getpid());
}

static char *read_status(void)
{
    char path[256];
    status_path(path, sizeof path);
    char *s = read_text(path);
    assert_non_null(s);
    return s;
}

#define ASSERT_FIELD(text, key, expected)                                                                    \
    do {                                                                                                     \
        const char *v_ = field((text), (key));                                                               \
        assert_non_null(v_);                                                                                 \
        assert_string_equal(v_, (expected));                                                                 \
    } while (0)

/* <dir>/<pid>.cmd as cgprof-control writes it (cgproflib.control): a
 * temporary file renamed into place, mode 0600, the command line then
 * "id: <token>". */
static void write_command_in(const char *dir, const char *text)
{
    char tmp[300], path[256];
    snprintf(path, sizeof path, "%s/%ld.cmd", dir, (long)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(rename(tmp, path), 0);
}

static void write_command(const char *text)
{
    write_command_in(ctl_dir, text);
}

static int command_file_exists(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%ld.cmd", ctl_dir, (long)getpid());
    return access(path, F_OK) == 0;
}

/* The number of entries of a directory. */
static unsigned count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Removes dir and everything under it (two levels at most here). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* The file of thread `thread`'s part `part`. */
static void part_path(char *dst, size_t size, unsigned part, unsigned thread)
{
    snprintf(dst, size, "%s/cg.%ld.%u-%02u", out_dir, (long)getpid(), part, thread);
}

/* A path as the status's last: writes it: spaces as \x20. */
static void escaped(char *dst, size_t size, const char *path)
{
    size_t n = 0;
    for (const char *p = path; *p && n + 5 < size; p++)
        n += (size_t)(*p == ' ' ? snprintf(dst + n, size - n, "\\x20") : snprintf(dst + n, size - n, "%c", *p));
    dst[n] = 0;
}

/* The status's last: for part `part` of threads 2 and 1 (newest first). */
static void last_of(char *dst, size_t size, unsigned part)
{
    char p1[256], p2[256], e1[300], e2[300];
    part_path(p1, sizeof p1, part, 1);
    part_path(p2, sizeof p2, part, 2);
    escaped(e1, sizeof e1, p1);
    escaped(e2, sizeof e2, p2);
    snprintf(dst, size, "%s %s", e2, e1);
}

/* ---- parts ------------------------------------------------------------------------ */

/* A part read back: its text, and its calls by caller and callee name
 * (fn= and cfn= share one table of compressed names). */
struct part {
    char *text;
    struct call {
        char fn[64], cfn[64];
        unsigned long long count;
    } calls[32];
    unsigned ncalls;
    unsigned long long totals;
};

static char names[64][64];

/* "(id) name" or "(id)": the name, remembered by id. */
static void name_of(const char *v, char *dst)
{
    unsigned id;
    int used = 0;
    assert_int_equal(sscanf(v, "(%u)%n", &id, &used), 1);
    assert_true(id < 64);
    if (v[used] == ' ')
        snprintf(names[id], sizeof names[id], "%s", v + used + 1);
    snprintf(dst, 64, "%s", names[id]);
}

static void read_part(struct part *p, unsigned part, unsigned thread)
{
    char path[256];
    part_path(path, sizeof path, part, thread);
    memset(p, 0, sizeof *p);
    memset(names, 0, sizeof names);
    p->text = read_text(path);
    if (!p->text)
        fail_msg("no part %s", path);
    if (getenv("CGPROF_TEST_SHOW"))
        printf("---- %s\n%s", path, p->text);
    char fn[64] = "", cfn[64] = "", line[512];
    int totals = 0;
    for (const char *l = p->text; *l;) {
        size_t n = strcspn(l, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        l += n + (l[n] == '\n');
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "#> ", 3) == 0) /* continued calls: cgprof's reader reads them */
            memmove(line, line + 3, strlen(line + 3) + 1);
        if (strncmp(line, "fn=", 3) == 0)
            name_of(line + 3, fn);
        else if (strncmp(line, "cfn=", 4) == 0)
            name_of(line + 4, cfn);
        else if (strncmp(line, "calls=", 6) == 0) {
            assert_true(p->ncalls < 32);
            struct call *c = &p->calls[p->ncalls++];
            snprintf(c->fn, sizeof c->fn, "%s", fn);
            snprintf(c->cfn, sizeof c->cfn, "%s", cfn);
            c->count = strtoull(line + 6, NULL, 10);
        } else if (strncmp(line, "totals: ", 8) == 0) {
            p->totals = strtoull(line + 8, NULL, 10);
            totals = 1;
        }
    }
    assert_true(totals);
}

static void free_part(struct part *p)
{
    free(p->text);
}

/* The calls= count from caller to callee (names as written), -1 when the
 * part has no such line. */
static long long calls(const struct part *p, const char *fn, const char *cfn)
{
    long long n = -1;
    for (unsigned i = 0; i < p->ncalls; i++)
        if (strcmp(p->calls[i].fn, fn) == 0 && strcmp(p->calls[i].cfn, cfn) == 0) {
            if (n >= 0)
                fail_msg("two calls= lines for %s -> %s", fn, cfn);
            n = (long long)p->calls[i].count;
        }
    return n;
}

/* The part's text has this line. */
static int has_line(const struct part *p, const char *line)
{
    size_t len = strlen(line);
    for (const char *l = p->text; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, line, len) == 0 && (l[len] == '\n' || l[len] == 0))
            return 1;
    return 0;
}

/* ---- the threads ------------------------------------------------------------------ */

static uint8_t fake_stack[1 << 16];
#define STACK_TOP ((uintptr_t)(fake_stack + sizeof fake_stack - 256))

/* A real call's entry (costs_test.h): the callee's return address on the stack. */
static void enter(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uint64_t now)
{
    *(uintptr_t *)(sp + sizeof(uintptr_t)) = site;
    cg_costs_enter(c, fn, site, sp, fn + 4, now);
}

static struct cg_thread *main_t, *worker_t;
/* Threads of the process that are not the test's: under qemu-user, the
 * emulator's own (its RCU thread), which the kernel lists in
 * /proc/self/task with the program's and the status counts
 * (cg_proc_program_threads). Counted before the test starts one. */
static unsigned foreign_threads;
static uint64_t now_main; /* the main thread's clock */

/* n calls of F from MAIN, each 10 ns, 10 ns apart */
static void calls_of_f(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        enter(&main_t->costs, F, MAIN + 0x10, STACK_TOP - 64, now_main + 10);
        cg_costs_exit(&main_t->costs, F, now_main + 20);
        now_main += 20;
    }
    main_t->vclock = now_main;
}

static sem_t worker_ready, worker_go;

static void *worker_main(void *arg)
{
    cg_thread_assign_number((uint32_t)(uintptr_t)arg);
    struct cg_thread *t = cg_thread_attach();
    worker_t = t;
    /* WMAIN from the root, G twice: 0-5 self, 5-15 G, 15-20, 20-30 G, 30-40 */
    enter(&t->costs, WMAIN, ROOT_SITE, STACK_TOP - 4096, 0);
    enter(&t->costs, G, WMAIN + 0x10, STACK_TOP - 4096 - 64, 5);
    cg_costs_exit(&t->costs, G, 15);
    enter(&t->costs, G, WMAIN + 0x10, STACK_TOP - 4096 - 64, 20);
    cg_costs_exit(&t->costs, G, 30);
    t->vclock = 40;
    sem_post(&worker_ready);
    while (sem_wait(&worker_go) != 0)
        ;
    t->vclock = 50;
    return NULL;
}

static pthread_t worker;

static void no_timer(struct cg_thread *t)
{
    (void)t;
}

/* ---- the control files ------------------------------------------------------------- */

static void test_init_and_status(void **state)
{
    (void)state;
    /* the directory made, 0700 */
    struct stat st;
    assert_int_equal(lstat(ctl_dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);

    /* every field of the protocol, in its order */
    cg_control_status(7, 3, 0, "/x/a /y/b", 0);
    char *s = read_status();
    char expected[8192];
    snprintf(expected, sizeof expected,
             "pid: %ld\ncmd: %s\nsignal: USR2\nsigno: %d\nthreads: 7\nparts: 3\ncollecting: off\ndone: 0\n"
             "handled: \ncommands: dump zero collect stacks counters\nlast: /x/a /y/b\n",
             (long)getpid(), cg_proc_cmdline(), SIGUSR2);
    assert_string_equal(s, expected);
    free(s);
    /* the command line is the process's own */
    char *cmdline = read_text("/proc/self/cmdline");
    assert_non_null(cmdline);
    assert_non_null(strstr(cg_proc_cmdline(), cmdline));
    free(cmdline);

    /* a request handled, with an id: done and handled move */
    write_command("zero\nid: 123-abc\n");
    char arg[512];
    assert_int_equal(cg_control_take_command(arg, sizeof arg), CG_CONTROL_ZERO);
    cg_control_status(2, 3, 1, "", 1);
    s = read_status();
    ASSERT_FIELD(s, "done", "1");
    ASSERT_FIELD(s, "handled", "123-abc");
    ASSERT_FIELD(s, "collecting", "on");
    ASSERT_FIELD(s, "threads", "2");
    ASSERT_FIELD(s, "last", "");
    free(s);
    /* rewritten without a request: the same done and handled */
    cg_control_status(2, 4, 1, "/z", 0);
    s = read_status();
    ASSERT_FIELD(s, "done", "1");
    ASSERT_FIELD(s, "handled", "123-abc");
    ASSERT_FIELD(s, "parts", "4");
    ASSERT_FIELD(s, "last", "/z");
    free(s);
    /* no temporary file left */
    assert_int_equal(count_files(ctl_dir), 1);
}

static void test_take_command(void **state)
{
    (void)state;
    char arg[512];
    /* none */
    memcpy(arg, "junk", 5);
    assert_int_equal(cg_control_take_command(arg, sizeof arg), CG_CONTROL_NONE);
    assert_string_equal(arg, "");

    static const struct {
        const char *text;
        int kind;
        const char *arg;
    } cases[] = {
        { "dump before the release\nid: 1-aa\n", CG_CONTROL_DUMP, "before the release" },
        { "dump\nid: 1-ab\n", CG_CONTROL_DUMP, "" },
        { "dump x\r\nid: 1-ac\r\n", CG_CONTROL_DUMP, "x" },
        { "zero\nid: 1-ad\n", CG_CONTROL_ZERO, "" },
        { "collect on\nid: 1-ae\n", CG_CONTROL_COLLECT_ON, "" },
        { "collect off\nid: 1-af\n", CG_CONTROL_COLLECT_OFF, "" },
        { "collect off", CG_CONTROL_COLLECT_OFF, "" }, /* no id, no newline */
        { "stacks\nid: 1-b3\n", CG_CONTROL_STACKS, "" },
        { "counters\nid: 1-b4\n", CG_CONTROL_COUNTERS, "" },
        { "stacks now\nid: 1-b5\n", CG_CONTROL_NONE, "" },
        { "dumpster\nid: 1-b0\n", CG_CONTROL_NONE, "" },
        { "collect\nid: 1-b1\n", CG_CONTROL_NONE, "" },
        { "zero please\nid: 1-b2\n", CG_CONTROL_NONE, "" },
        { "", CG_CONTROL_NONE, "" },
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_command(cases[i].text);
        memcpy(arg, "junk", 5);
        int kind = cg_control_take_command(arg, sizeof arg);
        if (kind != cases[i].kind)
            fail_msg("\"%s\": kind %d, not %d", cases[i].text, kind, cases[i].kind);
        assert_string_equal(arg, cases[i].arg);
        /* taken: removed, whatever it said */
        assert_false(command_file_exists());
        /* once */
        assert_int_equal(cg_control_take_command(arg, sizeof arg), CG_CONTROL_NONE);
    }
    /* the reason cut to the room given */
    write_command("dump 0123456789\nid: 1-c0\n");
    assert_int_equal(cg_control_take_command(arg, 5), CG_CONTROL_DUMP);
    assert_string_equal(arg, "0123");

    /* a link is not followed, and left there */
    char path[256], target[256];
    snprintf(path, sizeof path, "%s/%ld.cmd", ctl_dir, (long)getpid());
    snprintf(target, sizeof target, "%s/elsewhere", tmpdir);
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "zero\n", 5), 5);
    close(fd);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(cg_control_take_command(arg, sizeof arg), CG_CONTROL_NONE);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(unlink(target), 0);
    /* a directory is no command */
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(cg_control_take_command(arg, sizeof arg), CG_CONTROL_NONE);
    assert_int_equal(rmdir(path), 0);
}

/* A control directory that others could write into, or a link, is not
 * used: no status written there, no command read. */
static void test_unsafe_dir(void **state)
{
    (void)state;
    char open_dir[256], link_dir[256], path[300], arg[512];
    snprintf(open_dir, sizeof open_dir, "%s/open", tmpdir);
    snprintf(link_dir, sizeof link_dir, "%s/link", tmpdir);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0770), 0);
    assert_int_equal(symlink(ctl_dir, link_dir), 0);
    const char *dirs[] = { open_dir, link_dir };
    for (unsigned i = 0; i < 2; i++) {
        snprintf(cg_opts.control_dir, sizeof cg_opts.control_dir, "%s", dirs[i]);
        cg_control_init(cg_opts.signal); /* says why on stderr */
        write_command_in(dirs[i], "zero\nid: 9-9\n");
        assert_int_equal(cg_control_take_command(arg, sizeof arg), CG_CONTROL_NONE);
        snprintf(path, sizeof path, "%s/%ld.cmd", dirs[i], (long)getpid());
        assert_int_equal(unlink(path), 0); /* not taken */
        cg_control_status(1, 0, 1, "", 0);
        snprintf(path, sizeof path, "%s/%ld.status", dirs[i], (long)getpid());
        if (i == 0)
            assert_int_equal(access(path, F_OK), -1);
    }
    /* the status in the real directory is the one written before */
    char *s = read_status();
    ASSERT_FIELD(s, "parts", "4");
    free(s);
    /* back to the real one */
    snprintf(cg_opts.control_dir, sizeof cg_opts.control_dir, "%s", ctl_dir);
    cg_control_init(cg_opts.signal);
    assert_int_equal(unlink(link_dir), 0);
    assert_int_equal(rmdir(open_dir), 0);
}

/* ---- requests served --------------------------------------------------------------- */

/* Serves the request in the command file (or the plain signal, with none)
 * as the service thread does, for `signals` signals. */
static void serve(unsigned signals)
{
    char cmd[512];
    int kind = cg_control_take_command(cmd, sizeof cmd);
    cg_dump_serve(kind, cmd, signals);
}

static void test_dump(void **state)
{
    (void)state;
    /* main: MAIN from the root at 0, F three times (10-20, 30-40, 50-60),
     * its clock at 100 */
    enter(&main_t->costs, MAIN, ROOT_SITE, STACK_TOP, 0);
    calls_of_f(3);
    now_main = 100;
    main_t->vclock = 100;
    unsigned before = count_files(out_dir);

    write_command("dump first one\nid: 42-0001\n");
    serve(1);
    assert_false(command_file_exists());
    /* one part per live thread */
    assert_int_equal(count_files(out_dir), before + 2);

    struct part p;
    read_part(&p, 1, 1);
    assert_true(has_line(&p, "desc: Trigger: cgprof-control: first one"));
    assert_true(has_line(&p, "thread: 1"));
    assert_true(has_line(&p, "part: 1"));
    assert_true(has_line(&p, "desc: Calls in progress: 1 (counted up to the dump)"));
    assert_false(has_line(&p, "desc: Collection: paused since a cgprof_collect(false)"));
    assert_int_equal(calls(&p, NAME_MAIN, NAME_F), 3);
    assert_int_equal(calls(&p, NAME_ROOT, NAME_MAIN), 1);
    assert_int_equal(p.ncalls, 2);
    assert_int_equal(p.totals, 100);
    free_part(&p);

    read_part(&p, 1, 2);
    assert_true(has_line(&p, "desc: Trigger: cgprof-control: first one"));
    assert_true(has_line(&p, "thread: 2"));
    assert_true(has_line(&p, "part: 1"));
    assert_int_equal(calls(&p, NAME_WMAIN, NAME_G), 2);
    assert_int_equal(calls(&p, NAME_ROOT, NAME_WMAIN), 1);
    assert_int_equal(p.ncalls, 2);
    assert_int_equal(p.totals, 40);
    free_part(&p);

    /* the status: done, handled, parts, the files */
    char *s = read_status();
    ASSERT_FIELD(s, "done", "2"); /* 1 in test_init_and_status */
    ASSERT_FIELD(s, "handled", "42-0001");
    ASSERT_FIELD(s, "parts", "1");
    ASSERT_FIELD(s, "collecting", "on");
    char threads[16];
    snprintf(threads, sizeof threads, "%u", 2 + foreign_threads);
    ASSERT_FIELD(s, "threads", threads);
    char last[700];
    last_of(last, sizeof last, 1); /* newest thread first, spaces escaped */
    assert_non_null(strstr(last, "/out\\x20dir/"));
    ASSERT_FIELD(s, "last", last);
    free(s);
}

/* The worker's part, when it did nothing since the last one (its clock
 * stopped): its root call still in progress, no call, no time. */
static void assert_worker_idle(unsigned part, const char *trigger)
{
    struct part p;
    read_part(&p, part, 2);
    assert_true(has_line(&p, trigger));
    assert_true(has_line(&p, "desc: Calls in progress: 1 (counted up to the dump)"));
    assert_int_equal(p.ncalls, 0);
    assert_int_equal(p.totals, 0);
    free_part(&p);
}

static void test_signal(void **state)
{
    (void)state;
    /* F twice more; the clock at 150 */
    calls_of_f(2);
    now_main = main_t->vclock = 150;
    unsigned before = count_files(out_dir);

    /* the dump signal, 3 times before the service thread woke: no command */
    serve(3);
    assert_int_equal(count_files(out_dir), before + 2);
    struct part p;
    read_part(&p, 2, 1);
    assert_true(has_line(&p, "desc: Trigger: Signal SIGUSR2"));
    assert_true(has_line(&p, "desc: Requests: 3 signals served by this one dump"));
    assert_true(has_line(&p, "part: 2"));
    /* this part's calls only; MAIN's, counted in part 1, continues */
    assert_int_equal(calls(&p, NAME_MAIN, NAME_F), 2);
    assert_int_equal(calls(&p, NAME_ROOT, NAME_MAIN), 0);
    assert_true(has_line(&p, "desc: Calls continued: 1 (started before this part and counted in an earlier one: calls=0, at the end behind #>)"));
    assert_true(has_line(&p, "desc: Calls in progress: 1 (counted up to the dump)")); /* still running */
    assert_int_equal(p.totals, 50);
    free_part(&p);
    assert_worker_idle(2, "desc: Requests: 3 signals served by this one dump");

    char *s = read_status();
    ASSERT_FIELD(s, "done", "3");
    ASSERT_FIELD(s, "handled", ""); /* a plain signal has no id */
    ASSERT_FIELD(s, "parts", "2");
    free(s);

    /* once: no Requests line; nothing new */
    serve(1);
    assert_int_equal(count_files(out_dir), before + 4);
    read_part(&p, 3, 1);
    assert_true(has_line(&p, "desc: Trigger: Signal SIGUSR2"));
    assert_null(strstr(p.text, "desc: Requests:"));
    assert_int_equal(p.ncalls, 0); /* no call, no time */
    assert_int_equal(p.totals, 0);
    free_part(&p);
    assert_worker_idle(3, "desc: Trigger: Signal SIGUSR2");
}

static void test_zero(void **state)
{
    (void)state;
    /* F 4 times (150-230), then zeroed */
    calls_of_f(4);
    unsigned before = count_files(out_dir);
    write_command("zero\nid: 42-0003\n");
    serve(1);
    assert_false(command_file_exists());
    assert_int_equal(count_files(out_dir), before); /* nothing written */
    char *s = read_status();
    ASSERT_FIELD(s, "done", "5");
    ASSERT_FIELD(s, "handled", "42-0003");
    ASSERT_FIELD(s, "parts", "3");
    char last[700];
    last_of(last, sizeof last, 3); /* still the last dump's */
    ASSERT_FIELD(s, "last", last);
    free(s);

    /* F once (230-250), the clock at 260: the next part holds that only */
    calls_of_f(1);
    now_main = main_t->vclock = 260;
    write_command("dump after zero\nid: 42-0004\n");
    serve(1);
    assert_int_equal(count_files(out_dir), before + 2);
    struct part p;
    read_part(&p, 4, 1);
    assert_true(has_line(&p, "desc: Trigger: cgprof-control: after zero"));
    assert_int_equal(calls(&p, NAME_MAIN, NAME_F), 1);
    assert_int_equal(calls(&p, NAME_ROOT, NAME_MAIN), 0);
    assert_int_equal(p.totals, 30);
    free_part(&p);
    assert_worker_idle(4, "desc: Trigger: cgprof-control: after zero");
}

static void test_collect(void **state)
{
    (void)state;
    /* F twice (260-300), then paused */
    calls_of_f(2);
    unsigned before = count_files(out_dir);
    write_command("collect off\nid: 42-0005\n");
    serve(1);
    assert_int_equal(count_files(out_dir), before);
    char *s = read_status();
    ASSERT_FIELD(s, "collecting", "off");
    ASSERT_FIELD(s, "handled", "42-0005");
    ASSERT_FIELD(s, "done", "7");
    free(s);

    /* F 5 times while paused (300-400): a part now holds what came before
     * the pause, and says it is paused */
    calls_of_f(5);
    write_command("dump while paused\nid: 42-0006\n");
    serve(1);
    assert_int_equal(count_files(out_dir), before + 2);
    struct part p;
    read_part(&p, 5, 1);
    assert_true(has_line(&p, "desc: Trigger: cgprof-control: while paused"));
    assert_true(has_line(&p, "desc: Collection: paused since a cgprof_collect(false)"));
    assert_int_equal(calls(&p, NAME_MAIN, NAME_F), 2);
    assert_int_equal(p.totals, 40);
    free_part(&p);
    read_part(&p, 5, 2);
    assert_true(has_line(&p, "desc: Collection: paused since a cgprof_collect(false)"));
    free_part(&p);
    s = read_status();
    ASSERT_FIELD(s, "collecting", "off");
    ASSERT_FIELD(s, "parts", "5");
    free(s);

    /* resumed; F once (400-420), the clock at 430: the 5 calls made while
     * paused are in no part */
    write_command("collect on\nid: 42-0007\n");
    serve(1);
    assert_int_equal(count_files(out_dir), before + 2);
    s = read_status();
    ASSERT_FIELD(s, "collecting", "on");
    ASSERT_FIELD(s, "handled", "42-0007");
    free(s);
    calls_of_f(1);
    now_main = main_t->vclock = 430;
    write_command("dump resumed\nid: 42-0008\n");
    serve(1);
    read_part(&p, 6, 1);
    assert_false(has_line(&p, "desc: Collection: paused since a cgprof_collect(false)"));
    assert_int_equal(calls(&p, NAME_MAIN, NAME_F), 1);
    assert_int_equal(p.totals, 30);
    free_part(&p);
    assert_worker_idle(6, "desc: Trigger: cgprof-control: resumed");
    /* resuming when collecting: nothing changes but done */
    write_command("collect on\nid: 42-0009\n");
    serve(1);
    s = read_status();
    ASSERT_FIELD(s, "collecting", "on");
    ASSERT_FIELD(s, "done", "11");
    free(s);
}

/* ---- questions: stacks and counters (cgprof-control -b, -e, -s) -------------------- */

static void reply_path(char *dst, size_t size)
{
    snprintf(dst, size, "%s/%ld.reply", ctl_dir, (long)getpid());
}

/* Asks `question` as cgprof-control does and returns the reply file's
 * text (removed, as the control removes it), after checking that the
 * status says it was handled, with the id, and that nothing was written. */
static char *ask(const char *question, const char *id)
{
    char cmd[128], path[256];
    unsigned outs = count_files(out_dir);
    char *s = read_status();
    unsigned done = (unsigned)strtoul(field(s, "done"), NULL, 10);
    char parts[32];
    snprintf(parts, sizeof parts, "%s", field(s, "parts"));
    free(s);
    snprintf(cmd, sizeof cmd, "%s\nid: %s\n", question, id);
    write_command(cmd);
    serve(1);
    assert_false(command_file_exists());
    assert_int_equal(count_files(out_dir), outs); /* a question writes no part */
    s = read_status();
    char done_now[32];
    snprintf(done_now, sizeof done_now, "%u", done + 1);
    ASSERT_FIELD(s, "done", done_now);
    ASSERT_FIELD(s, "handled", id);
    ASSERT_FIELD(s, "parts", parts);
    free(s);
    reply_path(path, sizeof path);
    char *text = read_text(path);
    assert_non_null(text);
    assert_int_equal(unlink(path), 0);
    if (getenv("CGPROF_TEST_SHOW"))
        printf("---- %s\n%s", question, text);
    /* the first line names the request it answers */
    char first[128];
    snprintf(first, sizeof first, "id: %s\n", id);
    assert_memory_equal(text, first, strlen(first));
    return text;
}

/* The reply's line that starts with `start`, in a static buffer. */
static const char *line_of(const char *text, const char *start)
{
    static char line[1024];
    const char *l = strstr(text, start);
    if (!l)
        fail_msg("no line \"%s\" in:\n%s", start, text);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(l, "\n"), l);
    return line;
}

/* /proc's name of a thread, escaped as a reply writes it (no space in
 * the test program's name) */
static void comm_of(pid_t tid, char *dst, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)tid);
    char *c = read_text(path);
    assert_non_null(c);
    snprintf(dst, size, "%.*s", (int)strcspn(c, "\n"), c);
    free(c);
}

static void test_questions(void **state)
{
    (void)state;
    /* zeroed at 430; then F three times (430-490) and F entered at 500,
     * still running; the main thread's clock at 520 (the worker's at 40,
     * WMAIN running since 0, G called twice) */
    write_command("zero\nid: 42-0010\n");
    serve(1);
    calls_of_f(3);
    enter(&main_t->costs, F, MAIN + 0x10, STACK_TOP - 64, now_main + 10);
    now_main = main_t->vclock = 520;

    char c1[64], c2[64], expected[512];
    comm_of(main_t->tid, c1, sizeof c1);
    comm_of(worker_t->tid, c2, sizeof c2);

    /* each thread's stack, innermost first: F has run 20 ns, called 3 times
     * since the zeroing and now a fourth; MAIN 520 ns, once; the names are
     * addresses (nothing is mapped at them) */
    char *text = ask("stacks", "42-0011");
    snprintf(expected, sizeof expected, "thread: number=1 tid=%ld depth=2 shown=2 moved=0 name=%s\n"
             "frame: level=0 fn=0x2000 calls=4 ns=20 flags=- function=0x2000\n"
             "frame: level=1 fn=0x1000 calls=1 ns=520 flags=- function=0x1000\n",
             (long)main_t->tid, c1);
    assert_non_null(strstr(text, expected));
    snprintf(expected, sizeof expected, "thread: number=2 tid=%ld depth=1 shown=1 moved=0 name=%s\n"
             "frame: level=0 fn=0x5000 calls=1 ns=40 flags=- function=0x5000\n",
             (long)worker_t->tid, c2);
    assert_non_null(strstr(text, expected));
    free(text);

    /* the counters: calls since the start (MAIN, F 18 times before, 3 and
     * one running since), since the zeroing, time alike */
    text = ask("counters", "42-0012");
    assert_string_equal(line_of(text, "events: "), "events: ns");
    assert_string_equal(line_of(text, "time: "), "time: sample");
    assert_string_equal(line_of(text, "profiled: "), "profiled: 2");
    assert_string_equal(line_of(text, "ended: "), "ended: 0");
    assert_string_equal(line_of(text, "calls: "), "calls: 26");
    assert_string_equal(line_of(text, "repairs: "), "repairs: left=0 unmatched=0 lost=0");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "thread: number=1 ");
    const char *l = line_of(text, prefix);
    assert_non_null(strstr(l, " depth=2 calls=23 calls_part=4 ns=520 ns_part=90 arcs=2 selfs="));
    assert_non_null(strstr(l, " left=0 unmatched=0 lost=0 jumped=0 name="));
    l = line_of(text, "thread: number=2 ");
    assert_non_null(strstr(l, " depth=1 calls=3 calls_part=0 ns=40 ns_part=0 arcs=2 selfs="));
    /* the tables' memory: what they map, at least their first arrays */
    const char *tables = strstr(line_of(text, "thread: number=1 "), " tables=");
    assert_non_null(tables);
    assert_true(strtoull(tables + 8, NULL, 10) >= 1024 * (sizeof(struct cg_frame) + sizeof(struct cg_arc)));
    free(text);

    /* a deep stack: 200 recursive calls of F on top; the outermost 32 and
     * the innermost 96 are shown, the 74 between them counted */
    uintptr_t sp = STACK_TOP - 128;
    for (unsigned i = 0; i < 200; i++, sp -= 64)
        enter(&main_t->costs, F, F + 0x20, sp, now_main + i);
    text = ask("stacks", "42-0013");
    snprintf(expected, sizeof expected, "thread: number=1 tid=%ld depth=202 shown=128 moved=0 name=", (long)main_t->tid);
    assert_non_null(strstr(text, expected));
    assert_non_null(strstr(text, "frame: level=95 fn=0x2000 "));
    assert_non_null(strstr(text, "\nomitted: 74\nframe: level=170 fn=0x2000 "));
    assert_non_null(strstr(text, "frame: level=201 fn=0x1000 calls=1 ns=520 flags=- function=0x1000\n"));
    assert_null(strstr(text, "frame: level=96 "));
    assert_null(strstr(text, "frame: level=169 "));
    free(text);
    for (unsigned i = 0; i < 201; i++)
        cg_costs_exit(&main_t->costs, F, now_main);
    assert_int_equal(main_t->costs.depth, 1);
}

static int worker_joined;

static void test_final(void **state)
{
    (void)state;
    /* the worker ends at 50: its last part, as the runtime writes it */
    sem_post(&worker_go);
    assert_int_equal(pthread_join(worker, NULL), 0);
    worker_joined = 1;
    struct part p;
    read_part(&p, 7, 2);
    assert_true(has_line(&p, "desc: Trigger: Thread exit"));
    assert_int_equal(p.totals, 10);
    free_part(&p);
    assert_ptr_equal(cg_thread_list(), main_t);
    assert_null(main_t->next);

    /* the exit dump, then nothing is served */
    cg_dump_final("Program termination");
    read_part(&p, 7, 1);
    assert_true(has_line(&p, "desc: Trigger: Program termination"));
    free_part(&p);
    char path[256];
    status_path(path, sizeof path);
    assert_int_equal(access(path, F_OK), -1); /* removed at exit */
    unsigned outs = count_files(out_dir), ctls = count_files(ctl_dir);

    write_command("dump too late\nid: 42-000a\n");
    serve(1);
    cg_dump_serve(CG_CONTROL_DUMP, "too late", 1);
    cg_dump_serve(CG_CONTROL_NONE, "", 2);
    cg_dump_serve(CG_CONTROL_ZERO, "", 1);
    assert_int_equal(count_files(out_dir), outs);
    assert_int_equal(count_files(ctl_dir), ctls + 1); /* the command, not taken */
    assert_int_equal(access(path, F_OK), -1);
}

static void report(void *ctx, const char *msg, const char *why)
{
    (void)ctx;
    (void)why;
    fprintf(stderr, "option: %s\n", msg);
}

int main(void)
{
    foreign_threads = cg_proc_program_threads() - 1;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cgprof-test-control.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    snprintf(ctl_dir, sizeof ctl_dir, "%s/ctl", tmpdir);
    /* a space in it: the status lists the files with \x20 */
    snprintf(out_dir, sizeof out_dir, "%s/out dir", tmpdir);
    if (mkdir(out_dir, 0700) != 0)
        return 1;
    char out[256], ctl[256];
    snprintf(out, sizeof out, "CGPROF_OUT=%s/cg", out_dir);
    snprintf(ctl, sizeof ctl, "CGPROF_CONTROL_DIR=%s", ctl_dir);
    char sig[] = "CGPROF_SIGNAL=USR2", time[] = "CGPROF_TIME=sample";
    char *env[] = { out, ctl, sig, time, NULL };
    if (cg_options_parse(&cg_opts, env, NULL, report, NULL) != 0)
        return 1;
    cg_proc_read_identity();
    /* the runtime's events (runtime.c) but the timer: the clocks are the
     * test's */
    static const struct cg_thread_events events = {
        .attached = no_timer,
        .stopping = cg_sample_thread_stop,
        .ended = cg_dump_thread_exit,
        .gone = cg_service_thread_gone,
    };
    if (cg_thread_init(&events) != 0 || cg_sample_init(0, 0) != 0 || !cg_sampling)
        return 1;
    cg_collecting = 1;
    cg_control_init(cg_opts.signal);

    main_t = cg_thread_attach();
    if (!main_t || main_t->number != 1)
        return 1;
    sem_init(&worker_ready, 0, 0);
    sem_init(&worker_go, 0, 0);
    if (pthread_create(&worker, NULL, worker_main, (void *)(uintptr_t)cg_thread_take_number()) != 0)
        return 1;
    while (sem_wait(&worker_ready) != 0)
        ;

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_and_status),
        cmocka_unit_test(test_take_command),
        cmocka_unit_test(test_unsafe_dir),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_zero),
        cmocka_unit_test(test_collect),
        cmocka_unit_test(test_questions),
        cmocka_unit_test(test_final),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (!worker_joined) {
        sem_post(&worker_go);
        pthread_join(worker, NULL);
    }
    /* The runtime leaves the main thread's state to the process's exit;
     * released here for LeakSanitizer, which does not look into mmap'ed
     * memory (the state) for the totals it points to. */
    cg_thread_release(main_t);
    remove_tree(tmpdir);
    return rc;
}
