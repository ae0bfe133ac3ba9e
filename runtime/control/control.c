#define _GNU_SOURCE
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "proc.h"
#include "util.h"
#include "control.inc"

static char dir[CG_OPT_PATH_MAX];
/* Cleared by the last dump (cg_control_remove, the main thread) while the
 * service thread may be looking for a command: atomic. */
static int enabled;
#define ENABLED() __atomic_load_n(&enabled, __ATOMIC_ACQUIRE)
#define SET_ENABLED(v) __atomic_store_n(&enabled, (v), __ATOMIC_RELEASE)
static int dump_signal;
static unsigned done;
/* The id of the command being handled, and of the last one handled: the
 * control waits for its own id in the status (docs/internals/control-protocol.md). */
static char pending_id[72], handled_id[72];

/* Usable only if it is a real directory of ours that nobody else can write
 * into: the runtime reads commands from it. */
static int dir_usable(const char *d, const char **why)
{
    struct stat st;
    if (lstat(d, &st) != 0) {
        if (errno != ENOENT || mkdir(d, CG_CONTROL_DIR_MODE) != 0 || lstat(d, &st) != 0) {
            *why = strerror(errno);
            return 0;
        }
    }
    if (!S_ISDIR(st.st_mode)) {
        *why = "it is not a directory (or is a symbolic link)";
        return 0;
    }
    if (st.st_uid != geteuid()) {
        *why = "it belongs to another user";
        return 0;
    }
    if (st.st_mode & CG_CONTROL_DIR_UNSAFE) {
        *why = "group or others can write into it";
        return 0;
    }
    return 1;
}

void cg_control_init(int sig)
{
    dump_signal = sig;
    if (cg_opts.control_dir_refused) {
        /* said at start-up; not replaced by the default, which is not
         * where the user said */
        SET_ENABLED(0);
        return;
    }
    if (cg_opts.control_dir[0])
        snprintf(dir, sizeof dir, "%s", cg_opts.control_dir);
    else
        snprintf(dir, sizeof dir, CG_CONTROL_DEFAULT_DIR "%ld", (long)geteuid());
    const char *why = NULL;
    SET_ENABLED(dir_usable(dir, &why));
    if (!ENABLED()) {
        char shown[400];
        cg_warn("control directory %s is not used: %s; cgprof-control cannot reach this process "
                "(CGPROF_CONTROL_DIR chooses another)",
                CG_QUOTE(shown, dir), why);
    }
}

static unsigned last_threads, last_parts;
static int last_collecting = 1;
/* A copy, not a pointer into the dumper's buffer: cg_control_set_signal()
 * runs outside the dump lock and must never read freed memory (at worst, a
 * torn list of names). */
static char last_last[16384];

static void write_status(void);

/* Called outside the dump lock (from the program's sigaction()): rewrites
 * the status with the values last written, so that cgprof-control stops
 * sending the signal at once. */
void cg_control_set_signal(int sig)
{
    dump_signal = sig;
    write_status();
}

/* The service thread's id, for the status's service: line: the control
 * sends the signal to that thread alone (0: none yet, not said). */
static pid_t service_tid;

void cg_control_set_service(pid_t tid)
{
    __atomic_store_n(&service_tid, tid, __ATOMIC_RELEASE);
}

static void path_of(char *dst, size_t size, const char *suffix)
{
    snprintf(dst, size, "%s/%ld.%s", dir, (long)getpid(), suffix);
}

void cg_control_status(unsigned threads, unsigned parts, int collecting, const char *last, int done_one)
{
    if (done_one) {
        done++;
        memcpy(handled_id, pending_id, sizeof handled_id);
        pending_id[0] = 0;
    }
    last_threads = threads;
    last_parts = parts;
    last_collecting = collecting;
    snprintf(last_last, sizeof last_last, "%s", last);
    write_status();
}

/* Writes b's text to <dir>/<pid>.<kind> through a temporary of this
 * thread's in the same directory (<kind>.tmp.<tid>) and rename: a reader
 * sees the old file or the new one, never half of one. Nothing when b
 * failed (out of memory). The two paths on the heap: this runs in dump
 * paths and in the program's own sigaction(), on stacks of any size; the
 * content is malloc'd anyway. */
static void write_atomically(const char *kind, const struct cg_buf *b)
{
    enum { PATH_SIZE = CG_OPT_PATH_MAX + 64 };
    char *path = b->failed ? NULL : malloc(2 * PATH_SIZE), suffix[48];
    if (!path)
        return;
    char *tmp = path + PATH_SIZE;
    path_of(path, PATH_SIZE, kind);
    snprintf(suffix, sizeof suffix, "%s.tmp.%ld", kind, (long)gettid());
    path_of(tmp, PATH_SIZE, suffix);
    unlink(tmp); /* a leftover of a process with the same pid */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, CG_CONTROL_FILE_MODE);
    if (fd >= 0) {
        /* cg_write_all: the file-size limit (ulimit -f 0) fails the write
         * instead of killing the program at start-up */
        int err = cg_write_all(fd, b->data, b->len);
        close(fd);
        if (err || rename(tmp, path) != 0)
            unlink(tmp);
    }
    free(path);
}

static void write_status(void)
{
    if (!ENABLED())
        return;
    unsigned threads = last_threads, parts = last_parts;
    int collecting = last_collecting;
    const char *last = last_last;
    char sig[24];
    struct cg_buf b;
    cg_buf_init(&b);
    /* signo: the number, so that the control need not read the name;
     * commands: what this runtime understands (the control asks no
     * question a runtime would take for a plain signal) */
    cg_buf_printf(&b,
                  "pid: %ld\ncmd: %s\nsignal: %s\nsigno: %d\nthreads: %u\nparts: %u\ncollecting: %s\ndone: %u\n"
                  "handled: %s\ncommands: " CG_CONTROL_COMMANDS "\nlast: %s\n",
                  (long)getpid(), cg_proc_cmdline(),
                  dump_signal ? cg_signal_name(dump_signal, sig, sizeof sig) : "none", dump_signal, threads, parts,
                  collecting ? "on" : "off", done, handled_id, last);
    pid_t svc = __atomic_load_n(&service_tid, __ATOMIC_ACQUIRE);
    if (svc > 0)
        cg_buf_printf(&b, "service: %ld\n", (long)svc);
    write_atomically(CG_CONTROL_STATUS, &b);
    cg_buf_free(&b);
}

void cg_control_reply(const struct cg_buf *body)
{
    if (!ENABLED())
        return;
    struct cg_buf b;
    cg_buf_init(&b);
    cg_buf_printf(&b, "id: %s\n", pending_id);
    if (body->data)
        cg_buf_putn(&b, body->data, body->len);
    if (body->failed)
        b.failed = 1;
    write_atomically(CG_CONTROL_REPLY, &b);
    cg_buf_free(&b);
}

int cg_control_take_command(char *arg, size_t size)
{
    arg[0] = 0;
    if (!ENABLED())
        return CG_CONTROL_NONE;
    char path[CG_OPT_PATH_MAX + 64];
    path_of(path, sizeof path, CG_CONTROL_CMD);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return CG_CONTROL_NONE;
    struct stat st;
    char line[512];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
        n = read(fd, line, sizeof line - 1);
    close(fd);
    unlink(path);
    if (n <= 0)
        return CG_CONTROL_NONE;
    line[n] = 0;
    /* "id: <token>" on a later line names the request */
    char *id = strstr(line, "\nid: ");
    if (id) {
        id += 5;
        id[strcspn(id, "\r\n")] = 0;
        for (char *c = id; *c; c++)
            if ((unsigned char)*c < 0x21)
                *c = '_';
        snprintf(pending_id, sizeof pending_id, "%.64s", id);
    }
    line[strcspn(line, "\r\n")] = 0;
    if (strcmp(line, "zero") == 0)
        return CG_CONTROL_ZERO;
    if (strcmp(line, "collect on") == 0)
        return CG_CONTROL_COLLECT_ON;
    if (strcmp(line, "collect off") == 0)
        return CG_CONTROL_COLLECT_OFF;
    if (strcmp(line, "stacks") == 0)
        return CG_CONTROL_STACKS;
    if (strcmp(line, "counters") == 0)
        return CG_CONTROL_COUNTERS;
    if (strncmp(line, "dump", 4) == 0 && (line[4] == 0 || line[4] == ' ')) {
        const char *r = line[4] ? line + 5 : "";
        snprintf(arg, size, "%s", r);
        return CG_CONTROL_DUMP;
    }
    return CG_CONTROL_NONE;
}

void cg_control_remove(void)
{
    if (!ENABLED())
        return;
    char path[CG_OPT_PATH_MAX + 64];
    path_of(path, sizeof path, CG_CONTROL_STATUS);
    unlink(path);
    path_of(path, sizeof path, CG_CONTROL_REPLY); /* an answer no control came for */
    unlink(path);
    SET_ENABLED(0);
}

void cg_control_forget(void)
{
    SET_ENABLED(0);
    done = 0;
    __atomic_store_n(&service_tid, 0, __ATOMIC_RELEASE);
}
