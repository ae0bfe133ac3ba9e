/* The nesting oracle: a hook library for tests only, preloaded instead of
 * libcgprof.so. It records what the hooks say and nothing else: per thread,
 * a stack of the functions whose enter hook ran and whose exit hook has not,
 * each enter counted on the arc (innermost open function -> function), and
 * each exit popping the top. No stack pointer, no call site, no clock, no
 * guess: for a program whose hooks nest (every enter has its exit, in
 * order), this is the truth that cgprof's files must match, whatever the
 * compiler inlined.
 *
 * An exit that does not match the top frame is the sign of a program whose
 * hooks do not nest (longjmp, or an exception that clang unwinds without
 * exit hooks): it is counted (mismatched), the frames above the function
 * are dropped when it is on the stack, and the tests then compare only the
 * enters per function, which stay true.
 *
 * Output: at a thread's end and at the process's, one text file per thread,
 * $CGNEST_OUT/nest.<pid>.<tid> (CGNEST_OUT defaults to "."):
 *   thread <tid> <name>
 *   mismatched <n> unmatched <n> dropped <n> open <n> maxdepth <n>
 *   fn <object> <address> <enters>
 *   arc <object> <address> <object> <address> <count>      (caller, callee)
 *   arc - - <object> <address> <count>                     (a thread's root)
 * where an address is the object-relative one (the symbol's value, as in
 * cgprof's files) and an object its absolute path.
 *
 * CGNEST_SITES=1: also, per thread, each distinct place a hook was called
 * from, with the function it was called for (tests/integration/
 * inlined_truth.py tells from them which hook calls are inlined calls'):
 *   site enter|exit <object> <ret> <object> <fn> <count>
 * where <ret> is the hook's return address (__builtin_return_address(0)
 * in the hook: the address after the program's call instruction, or, for
 * an exit hook reached by a tail jump, the return address of the call of
 * the function that jumped).
 *
 * CGNEST_FOLD=<file>: the hook calls of inlined calls are left out, as a
 * profile that folds inlined calls into their hosts shows them. The file
 * lists the return addresses of their hook calls, one a line:
 *   <object path> <hex object-relative return address>
 * An enter hook called from a listed address pushes nothing and counts
 * nothing, an exit hook called from one is ignored: the arcs and counts are
 * those of the calls that are not inlined, each inlined call's calls made
 * by its nearest enclosing call that is not. The objects are looked for,
 * by their real paths, among those loaded at the first hook (an object
 * loaded later is not: its addresses are not folded, and said so). Each
 * file then also says
 *   fold listed <n> resolved <n> enters <n> exits <n>
 * (the addresses listed and found; the enters and exits left out).
 *
 * CGNEST_CHAIN=1, with LD_PRELOAD="libcgnest.so:libcgprof.so": each hook,
 * once recorded, is passed on to the next library's hook by a tail call (a
 * jump: the next hook sees the program's frame and return address as if it
 * had been called directly), so that the oracle and cgprof see the same run
 * (a program whose calls depend on timing, such as one whose threads poll
 * each other, cannot be compared over two runs).
 *
 * Rules of a hook library: no malloc in the hooks (they run inside malloc,
 * in signal handlers, in threads being torn down), memory from mmap, a
 * guard against a hook re-entered from a signal handler (counted as
 * dropped: the tests require none). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINSTR __attribute__((no_instrument_function))
#define EXPORT __attribute__((visibility("default")))

struct entry {
    uintptr_t a, b; /* arc: caller, callee; function: fn, 0 */
    uint64_t n;
};

struct table {
    struct entry *v;
    size_t cap, used; /* cap a power of two, used < cap / 2 */
};

struct nthread {
    uintptr_t *stack;
    size_t depth, cap, maxdepth;
    struct table arcs, fns;
    struct table sites[2]; /* CGNEST_SITES: (return address, fn) of enters, exits */
    uint64_t mismatched, unmatched, dropped;
    uint64_t folded[2]; /* CGNEST_FOLD: enters, exits left out */
    int busy, written;
    pid_t tid;
    struct nthread *next;
};

static __thread struct nthread *me __attribute__((tls_model("initial-exec")));
static struct nthread *all; /* every thread's state, newest first */
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

typedef void (*hook_fn)(void *, void *);
static hook_fn next_enter, next_exit; /* CGNEST_CHAIN=1: the next hooks */
static int chain_state;               /* 0: not looked at yet, 1: done */

/* At the first hook, not in a constructor: the constructors of the
 * program's libraries run before those of the preloaded ones, and make
 * hooks. */
static NOINSTR void chain_init(void)
{
    const char *c = getenv("CGNEST_CHAIN");
    if (c && c[0] == '1') {
        void *e = dlsym(RTLD_NEXT, "__cyg_profile_func_enter"), *x = dlsym(RTLD_NEXT, "__cyg_profile_func_exit");
        memcpy(&next_enter, &e, sizeof e);
        memcpy(&next_exit, &x, sizeof x);
    }
    __atomic_store_n(&chain_state, 1, __ATOMIC_RELEASE);
}

EXPORT void __cyg_profile_func_enter(void *fn, void *site);
EXPORT void __cyg_profile_func_exit(void *fn, void *site);

static NOINSTR void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static NOINSTR uint64_t hash(uintptr_t a, uintptr_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15u ^ (uint64_t)b * 0xc2b2ae3d27d4eb4fu;
    return h ^ (h >> 29);
}

static NOINSTR int table_grow(struct table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    struct entry *v = map(cap * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        const struct entry *e = &t->v[i];
        if (!e->n)
            continue;
        size_t j = hash(e->a, e->b);
        while (v[j & (cap - 1)].n)
            j++;
        v[j & (cap - 1)] = *e;
    }
    if (t->v)
        munmap(t->v, t->cap * sizeof *t->v);
    t->v = v;
    t->cap = cap;
    return 0;
}

static NOINSTR int table_add(struct table *t, uintptr_t a, uintptr_t b)
{
    if (2 * (t->used + 1) > t->cap && table_grow(t))
        return -1;
    for (size_t j = hash(a, b);; j++) {
        struct entry *e = &t->v[j & (t->cap - 1)];
        if (!e->n) {
            e->a = a;
            e->b = b;
            e->n = 1;
            t->used++;
            return 0;
        }
        if (e->a == a && e->b == b) {
            e->n++;
            return 0;
        }
    }
}

/* ---- CGNEST_SITES and CGNEST_FOLD, read at the first enter hook ------------- */

static int config_state; /* 0: not read, 1: being read (by one thread), 2: read */
static int sites_on, fold_on;
static const uintptr_t *fold_addr; /* sorted, absolute return addresses */
static size_t fold_n, fold_listed, fold_resolved;

struct fold_entry {
    const char *path; /* into the file's mapping, NUL-terminated there */
    uintptr_t off;
};

struct fold_search {
    struct fold_entry *e;
    size_t n;
    uintptr_t *out;
    size_t found;
};

static NOINSTR int fold_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct fold_search *f = data;
    char path[PATH_MAX];
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
    if (!realpath(name, path))
        return 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->e[i].path && strcmp(f->e[i].path, path) == 0) {
            f->out[f->found++] = info->dlpi_addr + f->e[i].off;
            f->e[i].path = NULL; /* found: in the first object of that path */
        }
    return 0;
}

static NOINSTR void sift(uintptr_t *v, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && v[c + 1] > v[c])
            c++;
        if (v[root] >= v[c])
            return;
        uintptr_t x = v[root];
        v[root] = v[c];
        v[c] = x;
        root = c;
    }
}

/* Reads the file CGNEST_FOLD names (mapped, parsed in place: no malloc,
 * and no qsort, which may call it) and finds its objects' load addresses. */
static NOINSTR void fold_init(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t len = lseek(fd, 0, SEEK_END);
    if (len <= 0) {
        close(fd);
        return;
    }
    char *text = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (text == MAP_FAILED)
        return;
    size_t lines = 1;
    for (off_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    struct fold_entry *e = map(lines * sizeof *e);
    uintptr_t *out = map(lines * sizeof *out);
    if (!e || !out)
        return;
    size_t n = 0;
    for (char *p = text, *end = text + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        char *sp = memrchr(p, ' ', (size_t)(nl - p)); /* a path may hold spaces, an offset does not */
        if (sp && sp > p) {
            *sp = 0; /* the path ends there */
            char *q = sp + 1;
            if (nl - q > 2 && q[0] == '0' && (q[1] | 32) == 'x')
                q += 2;
            uintptr_t off = 0;
            int digits = 0;
            for (; q < nl; q++, digits++) {
                int c = *q | 32;
                if (*q >= '0' && *q <= '9')
                    off = off * 16 + (uintptr_t)(*q - '0');
                else if (c >= 'a' && c <= 'f')
                    off = off * 16 + (uintptr_t)(c - 'a' + 10);
                else
                    break;
            }
            if (digits) {
                e[n].path = p;
                e[n].off = off;
                n++;
            }
        }
        p = nl + 1;
    }
    fold_listed = n;
    struct fold_search f = { e, n, out, 0 };
    dl_iterate_phdr(fold_object, &f);
    for (size_t i = f.found / 2; i-- > 0;)
        sift(out, i, f.found);
    for (size_t k = f.found; k > 1; k--) {
        uintptr_t x = out[0];
        out[0] = out[k - 1];
        out[k - 1] = x;
        sift(out, 0, k - 1);
    }
    size_t u = 0;
    for (size_t i = 0; i < f.found; i++)
        if (!u || out[u - 1] != out[i])
            out[u++] = out[i];
    munmap(e, lines * sizeof *e);
    munmap(text, (size_t)len);
    fold_resolved = f.found;
    fold_addr = out;
    fold_n = u;
}

/* Once, by the first thread that gets here; any other waits (not a signal
 * handler that interrupted the reader: that thread is busy, and its hook
 * is dropped before it gets here). */
static NOINSTR void config_init(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&config_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&config_state, __ATOMIC_ACQUIRE) != 2)
            sched_yield();
        return;
    }
    const char *s = getenv("CGNEST_SITES");
    sites_on = s && s[0] == '1';
    const char *f = getenv("CGNEST_FOLD");
    if (f && *f) {
        fold_on = 1;
        fold_init(f);
    }
    __atomic_store_n(&config_state, 2, __ATOMIC_RELEASE);
}

static NOINSTR int folded(uintptr_t ret)
{
    size_t lo = 0, hi = fold_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fold_addr[mid] < ret)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < fold_n && fold_addr[lo] == ret;
}

static NOINSTR void write_thread(struct nthread *t);

static NOINSTR void thread_end(void *p)
{
    struct nthread *t = p;
    pthread_mutex_lock(&write_lock);
    write_thread(t);
    pthread_mutex_unlock(&write_lock);
}

static NOINSTR void make_key(void)
{
    pthread_key_create(&key, thread_end);
}

static NOINSTR struct nthread *attach(void)
{
    struct nthread *t = map(sizeof *t);
    if (!t)
        return NULL;
    t->tid = (pid_t)syscall(SYS_gettid);
    me = t;
    t->busy = 1; /* pthread_once and setspecific run no instrumented code, but a signal may */
    pthread_once(&once, make_key);
    pthread_setspecific(key, t);
    struct nthread *head = __atomic_load_n(&all, __ATOMIC_ACQUIRE);
    do
        t->next = head;
    while (!__atomic_compare_exchange_n(&all, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    t->busy = 0;
    return t;
}

static NOINSTR __attribute__((noinline)) void record_enter(void *fn, void *ret)
{
    int saved = errno;
    struct nthread *t = me;
    if (!t && !(t = attach()))
        goto out;
    if (t->busy) {
        t->dropped++;
        goto out;
    }
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&config_state, __ATOMIC_ACQUIRE) != 2, 0))
        config_init();
    if (sites_on && table_add(&t->sites[0], (uintptr_t)ret, (uintptr_t)fn))
        t->dropped++;
    if (fold_n && folded((uintptr_t)ret)) {
        t->folded[0]++;
        goto release;
    }
    uintptr_t caller = t->depth ? t->stack[t->depth - 1] : 0;
    if (t->depth == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        uintptr_t *s = map(cap * sizeof *s);
        if (!s) {
            t->dropped++;
            goto release;
        }
        if (t->stack) {
            memcpy(s, t->stack, t->depth * sizeof *s);
            munmap(t->stack, t->cap * sizeof *s);
        }
        t->stack = s;
        t->cap = cap;
    }
    if (table_add(&t->arcs, caller, (uintptr_t)fn) || table_add(&t->fns, (uintptr_t)fn, 0))
        t->dropped++;
    t->stack[t->depth++] = (uintptr_t)fn;
    if (t->depth > t->maxdepth)
        t->maxdepth = t->depth;
release:
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
out:
    errno = saved;
}

static NOINSTR __attribute__((noinline)) void record_exit(void *fn, void *ret)
{
    struct nthread *t = me;
    if (!t)
        return;
    if (t->busy) {
        t->dropped++;
        return;
    }
    t->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* the configuration was read by this thread's first enter */
    if (sites_on && table_add(&t->sites[1], (uintptr_t)ret, (uintptr_t)fn))
        t->dropped++;
    if (fold_n && folded((uintptr_t)ret))
        t->folded[1]++;
    else if (t->depth && t->stack[t->depth - 1] == (uintptr_t)fn) {
        t->depth--;
    } else {
        size_t d = t->depth;
        while (d > 0 && t->stack[d - 1] != (uintptr_t)fn)
            d--;
        if (d == 0) {
            t->unmatched++;
        } else {
            t->mismatched++;
            t->depth = d - 1;
        }
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->busy = 0;
}

/* The hooks: record, then (chained) jump to the next library's; the call
 * of the next hook is the last thing done, a tail call that gcc -O2 makes a
 * jump (checked by the test that uses it). */
NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
    record_enter(fn, __builtin_return_address(0));
    if (__builtin_expect(!__atomic_load_n(&chain_state, __ATOMIC_ACQUIRE), 0))
        chain_init();
    hook_fn next = next_enter;
    if (next)
        next(fn, site);
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
    record_exit(fn, __builtin_return_address(0));
    if (__builtin_expect(!__atomic_load_n(&chain_state, __ATOMIC_ACQUIRE), 0))
        chain_init();
    hook_fn next = next_exit;
    if (next)
        next(fn, site);
}

/* ---- output ---------------------------------------------------------------- */

struct out {
    int fd;
    char buf[8192];
    size_t n;
};

static NOINSTR void flush(struct out *o)
{
    size_t at = 0;
    while (at < o->n) {
        ssize_t w = write(o->fd, o->buf + at, o->n - at);
        if (w <= 0)
            break;
        at += (size_t)w;
    }
    o->n = 0;
}

static NOINSTR void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static NOINSTR void put(struct out *o, const char *fmt, ...)
{
    if (o->n > sizeof o->buf - 2 * PATH_MAX)
        flush(o);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->n += (size_t)k < sizeof o->buf - o->n ? (size_t)k : sizeof o->buf - o->n - 1;
}

/* "<object> <address>" of a code address: the object's absolute path and
 * the address relative to its load bias (its symbols' values). */
static NOINSTR void put_addr(struct out *o, uintptr_t x)
{
    if (!x) {
        put(o, "- -");
        return;
    }
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)x, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
        put(o, "? %#lx", (unsigned long)x);
        return;
    }
    char path[PATH_MAX];
    const char *name = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
    if (!realpath(name, path))
        snprintf(path, sizeof path, "%s", name);
    put(o, "%s %#lx", path, (unsigned long)(x - lm->l_addr));
}

static NOINSTR void write_thread(struct nthread *t)
{
    if (t->written)
        return;
    t->written = 1;
    t->busy = 1; /* hooks of what follows (none expected) are not the program's */
    const char *dir = getenv("CGNEST_OUT");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nest.%d.%d", dir && *dir ? dir : ".", (int)getpid(), (int)t->tid);
    struct out *o = map(sizeof *o);
    if (!o)
        return;
    o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0) {
        munmap(o, sizeof *o);
        return;
    }
    put(o, "thread %d %s\n", (int)t->tid, t->tid == getpid() ? "main" : "other");
    put(o, "mismatched %llu unmatched %llu dropped %llu open %zu maxdepth %zu\n",
        (unsigned long long)t->mismatched, (unsigned long long)t->unmatched, (unsigned long long)t->dropped,
        t->depth, t->maxdepth);
    for (size_t i = 0; i < t->fns.cap; i++) {
        const struct entry *e = &t->fns.v[i];
        if (!e->n)
            continue;
        put(o, "fn ");
        put_addr(o, e->a);
        put(o, " %llu\n", (unsigned long long)e->n);
    }
    for (size_t i = 0; i < t->arcs.cap; i++) {
        const struct entry *e = &t->arcs.v[i];
        if (!e->n)
            continue;
        put(o, "arc ");
        put_addr(o, e->a);
        put(o, " ");
        put_addr(o, e->b);
        put(o, " %llu\n", (unsigned long long)e->n);
    }
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < t->sites[k].cap; i++) {
            const struct entry *e = &t->sites[k].v[i];
            if (!e->n)
                continue;
            put(o, "site %s ", k ? "exit" : "enter");
            put_addr(o, e->a);
            put(o, " ");
            put_addr(o, e->b);
            put(o, " %llu\n", (unsigned long long)e->n);
        }
    if (fold_on)
        put(o, "fold listed %zu resolved %zu enters %llu exits %llu\n", fold_listed,
            fold_resolved, (unsigned long long)t->folded[0], (unsigned long long)t->folded[1]);
    flush(o);
    close(o->fd);
    munmap(o, sizeof *o);
}

/* At the process's end (exit(), or a return from main), as cgprof's own
 * final dump: every thread not written yet (the main thread, and threads
 * still running). A preloaded library's destructor runs after the
 * program's own destructors and atexit handlers. */
__attribute__((destructor)) static NOINSTR void process_end(void)
{
    pthread_mutex_lock(&write_lock);
    for (struct nthread *t = __atomic_load_n(&all, __ATOMIC_ACQUIRE); t; t = t->next)
        write_thread(t);
    pthread_mutex_unlock(&write_lock);
}
