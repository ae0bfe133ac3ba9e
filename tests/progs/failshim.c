/* failshim: a preloaded shim that makes one allocation, mapping or thread
 * creation of the runtime fail, the Nth, as the real call fails when
 * memory or threads run out (issue 39: every one of them has a tested
 * failure path; tests/integration/test_guest.py, FailedAllocations).
 *
 * Put after libcgprof.so in LD_PRELOAD (LD_PRELOAD=libcgprof.so:libfailshim.so):
 * the runtime finds its real pthread_create with dlsym(RTLD_NEXT), which
 * from libcgprof.so reaches the objects after it only; malloc, mmap and
 * the rest, which the runtime does not define, come from the shim either
 * way. Not instrumented.
 *
 * Counted: a call whose return address is in the code of libcgprof.so or
 * of a library only the runtime brings (libdw, libelf, libunwind). Not
 * counted: the program's own calls, which include the program's
 * pthread_create passing through the runtime's wrapper of it (that
 * creation is the program's), and the allocations libc makes inside
 * another call (fopen's buffer): those calls are interposed themselves
 * (strdup, asprintf, opendir, fopen, getdelim, realpath, tsearch), and
 * counted when the runtime or its libraries make them.
 *
 *   FAILSHIM_FAIL=N     the Nth counted call fails, as the real one would
 *                       when out of memory: the malloc family NULL (or
 *                       ENOMEM returned, posix_memalign) with errno
 *                       ENOMEM; mmap and mremap MAP_FAILED, errno ENOMEM;
 *                       pthread_create returns EAGAIN; strdup, asprintf,
 *                       opendir, fopen... their failure value, errno
 *                       ENOMEM. N+ fails the Nth and every one after it.
 *   FAILSHIM_REPORT=F   at exit (the shim's destructor, which runs after
 *                       the runtime's, being initialised before it),
 *                       appends one line to F:
 *                         failshim pid=P counted=T malloc=A libc=B mmap=C thread=D failed=K first=KIND:FUNC@OBJ+0xOFF
 *                       (first=- when none failed); OBJ+OFF is the
 *                       caller's return address (addr2line -f -e OBJ OFF).
 *                       Only the process that loaded the shim writes it
 *                       (not a forked child).
 *
 * Nothing here allocates: the lookup of the runtime's code walks the
 * loaded objects (dl_iterate_phdr) into a static table, and the first
 * calls that dlsym makes while the real functions are being found are
 * served from a static buffer. */
/* mmap and mmap64, fopen and fopen64 each defined: not one redirected to the other */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
/* glibc's <stdio.h>, which <malloc.h> includes too, defines getline inline
 * where the build optimises (bits/stdio.h): under another name here, so
 * that this file's getline is the only definition (clang refuses one after
 * the header's). */
#define getline stdio_inline_getline
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <search.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#undef getline

#define EXPORT __attribute__((visibility("default")))

/* ---- the real functions ---------------------------------------------------- */

/* dlsym may allocate (calloc, for its error state): while a real function
 * is being looked up, the malloc family is served from here. */
static __thread volatile int resolving __attribute__((tls_model("initial-exec")));
static _Alignas(16) unsigned char arena[64 * 1024];
static size_t arena_used;

static void *arena_alloc(size_t n)
{
    size_t need = (n + 16 + 15) & ~(size_t)15;
    size_t at = __atomic_fetch_add(&arena_used, need, __ATOMIC_RELAXED);
    if (at + need > sizeof arena) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(arena + at, &n, sizeof n);
    return arena + at + 16;
}

static int in_arena(const void *p)
{
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + sizeof arena;
}

static void *lookup(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    resolving++;
    f = dlsym(RTLD_NEXT, name);
    resolving--;
    if (!f) {
        static const char msg[] = "failshim: a real function is missing\n";
        if (write(2, msg, sizeof msg - 1) < 0)
            _exit(127);
        _exit(127);
    }
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

/* REAL(type, name): the real function, as a pointer of that type */
#define REAL(type, name)                                                                                       \
    __extension__({                                                                                                         \
        static void *slot_;                                                                                    \
        void *p_ = lookup(&slot_, #name);                                                                      \
        __typeof__(type) f_;                                                                                             \
        memcpy(&f_, &p_, sizeof f_);                                                                           \
        f_;                                                                                                    \
    })

/* ---- the runtime's code ---------------------------------------------------- */

static const char *const objects[] = {"libcgprof.so", "libdw.so", "libdw-", "libelf.so", "libelf-", "libunwind.so",
                                      "libunwind-"};

struct range {
    uintptr_t lo, hi, base;
    const char *name; /* the loader's, kept as long as the object is */
};

#define MAX_RANGES 64
static struct range ranges[MAX_RANGES];
static int nranges;                   /* published after its entry */
static unsigned long long ranges_adds; /* the loader's count of objects added, at the last scan */
static int scanning;

static int is_runtime(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof objects / sizeof *objects; i++)
        if (strncmp(base, objects[i], strlen(objects[i])) == 0)
            return 1;
    return 0;
}

static int adds_only(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        *(unsigned long long *)data = info->dlpi_adds;
    return 1;
}

static int add_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (!info->dlpi_name || !is_runtime(info->dlpi_name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        int n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE), known = 0;
        for (int j = 0; j < n; j++)
            known |= ranges[j].lo == lo && ranges[j].hi == hi;
        if (known || n == MAX_RANGES)
            continue;
        ranges[n] = (struct range){lo, hi, info->dlpi_addr, info->dlpi_name};
        __atomic_store_n(&nranges, n + 1, __ATOMIC_RELEASE);
    }
    return 0;
}

static const struct range *find(uintptr_t pc)
{
    int n = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (pc >= ranges[i].lo && pc < ranges[i].hi)
            return &ranges[i];
    return NULL;
}

/* The range of the runtime's code that holds pc, or NULL. The table is
 * scanned again when the loader has added objects since (libunwind, which
 * the runtime loads when it first samples); a scan under way in another
 * thread, or in what this thread interrupted, is not waited for. */
static const struct range *runtime_code(const void *pc)
{
    const struct range *r = find((uintptr_t)pc);
    if (r)
        return r;
    unsigned long long adds = 0;
    dl_iterate_phdr(adds_only, &adds);
    if (adds == __atomic_load_n(&ranges_adds, __ATOMIC_ACQUIRE))
        return NULL;
    if (__atomic_exchange_n(&scanning, 1, __ATOMIC_ACQUIRE))
        return NULL;
    dl_iterate_phdr(add_ranges, NULL);
    __atomic_store_n(&ranges_adds, adds, __ATOMIC_RELEASE);
    __atomic_store_n(&scanning, 0, __ATOMIC_RELEASE);
    return find((uintptr_t)pc);
}

/* ---- counting and failing -------------------------------------------------- */

enum kind { MALLOC, LIBC, MMAP, THREAD, KINDS };
static const char *const kind_names[KINDS] = {"malloc", "libc", "mmap", "thread"};

extern char **environ;

static int ready;               /* the settings read: 1, or 2 when there is nothing to fail */
static unsigned long fail_at;   /* 0: none */
static int fail_on;             /* N+: every call from the Nth */
static pid_t loaded_by;
static unsigned long counted, per_kind[KINDS], failed;
static struct {
    int kind;
    const char *fn;
    const char *obj;
    uintptr_t off;
} first_failed;

/* The settings, once the environment is there (the loader allocates
 * before the C library has set it up). */
static int settings(void)
{
    int r = __atomic_load_n(&ready, __ATOMIC_ACQUIRE);
    if (r || !environ)
        return r;
    const char *v = getenv("FAILSHIM_FAIL");
    if (v && *v) {
        char *end;
        fail_at = strtoul(v, &end, 10);
        fail_on = *end == '+';
    }
    loaded_by = getpid();
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    return 1;
}

static void describe_first(char *buf, size_t size);
static void append(const char *line, int n);

/* Whether this call, made from pc, is the one to fail (counting it when
 * it is the runtime's). */
static int fails(enum kind k, const char *fn, const void *pc)
{
    if (resolving || !settings())
        return 0;
    int saved = errno;
    const struct range *r = runtime_code(pc);
    errno = saved;
    if (!r)
        return 0;
    __atomic_add_fetch(&per_kind[k], 1, __ATOMIC_RELAXED);
    unsigned long n = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
    if (!fail_at || n < fail_at || (n > fail_at && !fail_on))
        return 0;
    if (n == fail_at) {
        first_failed.kind = k;
        first_failed.fn = fn;
        first_failed.obj = r->name;
        first_failed.off = (uintptr_t)pc - r->base;
        /* said now too, for a run that never gets to its exit */
        char first[512], line[600];
        describe_first(first, sizeof first);
        append(line, snprintf(line, sizeof line, "failshim pid=%d fails call %lu: %s\n", (int)loaded_by, n, first));
    }
    __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
    return 1;
}

#define FAILS(k, fn) fails(k, fn, __builtin_return_address(0))

/* The first failed call, as KIND:FUNC@OBJ+0xOFF, in buf. */
static void describe_first(char *buf, size_t size)
{
    const char *obj = strrchr(first_failed.obj, '/');
    snprintf(buf, size, "%s:%s@%s+%#lx", kind_names[first_failed.kind], first_failed.fn,
             obj ? obj + 1 : first_failed.obj, (unsigned long)first_failed.off);
}

static void append(const char *line, int n)
{
    const char *path = getenv("FAILSHIM_REPORT");
    if (!path || n <= 0)
        return;
    int saved = errno;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0)
            n = 0;
        close(fd);
    }
    errno = saved;
}

__attribute__((destructor)) static void report(void)
{
    if (!ready || getpid() != loaded_by)
        return;
    char first[512] = "-";
    if (failed)
        describe_first(first, sizeof first);
    char line[768];
    int n = snprintf(line, sizeof line,
                     "failshim pid=%d counted=%lu malloc=%lu libc=%lu mmap=%lu thread=%lu failed=%lu first=%s\n",
                     (int)loaded_by, counted, per_kind[MALLOC], per_kind[LIBC], per_kind[MMAP], per_kind[THREAD],
                     failed, first);
    append(line, n);
}

/* ---- the malloc family ----------------------------------------------------- */

EXPORT void *malloc(size_t n)
{
    if (resolving)
        return arena_alloc(n);
    if (FAILS(MALLOC, "malloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(void *(*)(size_t), malloc)(n);
}

EXPORT void *calloc(size_t n, size_t size)
{
    if (resolving)
        return arena_alloc(n * size); /* zero: static */
    if (FAILS(MALLOC, "calloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(void *(*)(size_t, size_t), calloc)(n, size);
}

EXPORT void free(void *p)
{
    /* dlsym frees the message of an earlier failed lookup: while free
     * itself is being looked up, that block is left */
    if (p && !in_arena(p) && !resolving)
        REAL(void (*)(void *), free)(p);
}

EXPORT void *realloc(void *p, size_t n)
{
    if (p && in_arena(p)) {
        size_t had;
        memcpy(&had, (unsigned char *)p - 16, sizeof had);
        void *q = malloc(n);
        if (q)
            memcpy(q, p, had < n ? had : n);
        return q;
    }
    /* realloc(p, 0) frees: nothing to fail */
    if ((n || !p) && FAILS(MALLOC, "realloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(void *(*)(void *, size_t), realloc)(p, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (FAILS(MALLOC, "posix_memalign"))
        return ENOMEM;
    return REAL(int (*)(void **, size_t, size_t), posix_memalign)(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (FAILS(MALLOC, "aligned_alloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(void *(*)(size_t, size_t), aligned_alloc)(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
    if (FAILS(MALLOC, "memalign")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(void *(*)(size_t, size_t), memalign)(align, n);
}

EXPORT void *valloc(size_t n)
{
    if (FAILS(MALLOC, "valloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(void *(*)(size_t), valloc)(n);
}

/* ---- mappings -------------------------------------------------------------- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (FAILS(MMAP, "mmap")) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return REAL(void *(*)(void *, size_t, int, int, int, off_t), mmap)(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (FAILS(MMAP, "mmap64")) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return REAL(void *(*)(void *, size_t, int, int, int, off_t), mmap64)(addr, len, prot, flags, fd, off);
}

EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
    void *to = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        to = va_arg(ap, void *);
        va_end(ap);
    }
    if (FAILS(MMAP, "mremap")) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return REAL(void *(*)(void *, size_t, size_t, int, ...), mremap)(old, old_len, len, flags, to);
}

/* ---- threads --------------------------------------------------------------- */

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    /* the runtime's wrapper of the program's own pthread_create (an
     * exported pthread_create of libcgprof.so) creates the program's
     * thread: that creation is not the runtime's */
    const void *pc = __builtin_return_address(0);
    Dl_info info;
    int programs = dladdr(pc, &info) && info.dli_sname && strcmp(info.dli_sname, "pthread_create") == 0;
    if (!programs && fails(THREAD, "pthread_create", pc))
        return EAGAIN;
    return REAL(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *), pthread_create)(th, attr,
                                                                                                        fn, arg);
}

/* ---- what the C library allocates for its caller ----------------------------- */

EXPORT char *strdup(const char *s)
{
    if (FAILS(LIBC, "strdup")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(char *(*)(const char *), strdup)(s);
}

EXPORT char *strndup(const char *s, size_t n)
{
    if (FAILS(LIBC, "strndup")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(char *(*)(const char *, size_t), strndup)(s, n);
}

/* the failure leaves *out as it was, as glibc's does */
EXPORT int vasprintf(char **out, const char *fmt, va_list ap)
{
    if (FAILS(LIBC, "vasprintf")) {
        errno = ENOMEM;
        return -1;
    }
    return REAL(int (*)(char **, const char *, va_list), vasprintf)(out, fmt, ap);
}

EXPORT int asprintf(char **out, const char *fmt, ...)
{
    if (FAILS(LIBC, "asprintf")) {
        errno = ENOMEM;
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    int r = REAL(int (*)(char **, const char *, va_list), vasprintf)(out, fmt, ap);
    va_end(ap);
    return r;
}

int __vasprintf_chk(char **out, int flag, const char *fmt, va_list ap);
EXPORT int __vasprintf_chk(char **out, int flag, const char *fmt, va_list ap)
{
    if (FAILS(LIBC, "__vasprintf_chk")) {
        errno = ENOMEM;
        return -1;
    }
    return REAL(int (*)(char **, int, const char *, va_list), __vasprintf_chk)(out, flag, fmt, ap);
}

int __asprintf_chk(char **out, int flag, const char *fmt, ...);
EXPORT int __asprintf_chk(char **out, int flag, const char *fmt, ...)
{
    if (FAILS(LIBC, "__asprintf_chk")) {
        errno = ENOMEM;
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    int r = REAL(int (*)(char **, int, const char *, va_list), __vasprintf_chk)(out, flag, fmt, ap);
    va_end(ap);
    return r;
}

EXPORT DIR *opendir(const char *name)
{
    if (FAILS(LIBC, "opendir")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(DIR *(*)(const char *), opendir)(name);
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
    if (FAILS(LIBC, "fopen")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(FILE *(*)(const char *, const char *), fopen)(path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
    if (FAILS(LIBC, "fopen64")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(FILE *(*)(const char *, const char *), fopen64)(path, mode);
}

EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *f)
{
    if (FAILS(LIBC, "getdelim")) {
        errno = ENOMEM;
        return -1;
    }
    return REAL(ssize_t (*)(char **, size_t *, int, FILE *), getdelim)(line, n, delim, f);
}

ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f);
EXPORT ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f)
{
    if (FAILS(LIBC, "__getdelim")) {
        errno = ENOMEM;
        return -1;
    }
    return REAL(ssize_t (*)(char **, size_t *, int, FILE *), getdelim)(line, n, delim, f);
}

ssize_t getline(char **line, size_t *n, FILE *f);
EXPORT ssize_t getline(char **line, size_t *n, FILE *f)
{
    if (FAILS(LIBC, "getline")) {
        errno = ENOMEM;
        return -1;
    }
    return REAL(ssize_t (*)(char **, size_t *, int, FILE *), getdelim)(line, n, '\n', f);
}

EXPORT char *realpath(const char *path, char *resolved)
{
    if (!resolved && FAILS(LIBC, "realpath")) {
        errno = ENOMEM;
        return NULL;
    }
    return REAL(char *(*)(const char *, char *), realpath)(path, resolved);
}

/* only a key not in the tree allocates */
EXPORT void *tsearch(const void *key, void **root, int (*cmp)(const void *, const void *))
{
    if (!tfind(key, root, cmp) && FAILS(LIBC, "tsearch")) {
        errno = ENOMEM; /* as its failed malloc leaves it */
        return NULL;
    }
    return REAL(void *(*)(const void *, void **, int (*)(const void *, const void *)), tsearch)(key, root, cmp);
}
