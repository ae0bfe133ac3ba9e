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
    uint64_t mismatched, unmatched, dropped;
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

static NOINSTR __attribute__((noinline)) void record_enter(void *fn)
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

static NOINSTR __attribute__((noinline)) void record_exit(void *fn)
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
    if (t->depth && t->stack[t->depth - 1] == (uintptr_t)fn) {
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
    record_enter(fn);
    if (__builtin_expect(!__atomic_load_n(&chain_state, __ATOMIC_ACQUIRE), 0))
        chain_init();
    hook_fn next = next_enter;
    if (next)
        next(fn, site);
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
    record_exit(fn);
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
