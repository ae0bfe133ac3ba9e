#define _GNU_SOURCE /* mremap */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu.h"

#if CG_CPU_HAVE_JUMP
/* The runtime's own jump, cg_cpu_jump_set and cg_cpu_jump_go (cpu.h):
 * here, in the base layer that every part of the runtime and the unit
 * tests link. */
__asm__(CG_CPU_JUMP_ASM);
#endif

int cg_write_all(int fd, const void *data, size_t len)
{
    int saved = errno;
    /* SIGXFSZ goes to the thread that wrote (the kernel's send_sig to the
     * current task, not to the process): blocked here, it stays pending on
     * this thread and no other thread of the program can take it. */
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    int blocked = pthread_sigmask(SIG_BLOCK, &xfsz, &old) == 0;
    /* A SIGXFSZ pending before our write is the program's: not ours to take */
    int theirs = !blocked || (sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ));
    int err = 0;
    for (size_t off = 0; off < len && !err;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            err = w < 0 ? errno : EIO;
        else
            off += (size_t)w;
    }
    if (err == EFBIG && !theirs) {
        /* Take back the signal our write raised, so that it is neither
         * delivered when the mask is restored nor left pending. */
        struct timespec zero = { 0, 0 };
        /* The system call itself: libcgprof.so exports a sigtimedwait of
         * its own (interpose.c), which is the program's. */
        while (syscall(SYS_rt_sigtimedwait, &xfsz, NULL, &zero, (size_t)(_NSIG / 8)) < 0 && errno == EINTR)
            ;
    }
    if (blocked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return err;
}

/* The stderr the runtime found at start-up, by identity: a program that
 * closes fd 2 and opens a file of its own there must not find cgprof's
 * messages in it. */
static struct {
    int known;
    dev_t dev;
    ino_t ino;
} stderr_at_start;

int cg_fd_above(int fd)
{
    if (fd < 0)
        return fd;
    int saved = errno;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 256) {
        errno = saved;
        return fd; /* no room above a small limit: where the kernel put it */
    }
    /* The top quarter of the range, not beyond 4096: the table the kernel
     * grows to reach the number costs 8 bytes a slot. */
    rlim_t lim = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur;
    rlim_t from = lim - lim / 4;
    if (from > 4096)
        from = 4096;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)from);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    errno = saved;
    return fd;
}

void cg_stderr_remember(void)
{
    struct stat st;
    if (fstat(STDERR_FILENO, &st) == 0) {
        stderr_at_start.dev = st.st_dev;
        stderr_at_start.ino = st.st_ino;
        stderr_at_start.known = 1;
    }
}

int cg_write_stderr(const void *data, size_t len)
{
    struct stat st;
    int saved = errno;
    if (!stderr_at_start.known) /* a message before start-up (or a unit test's) */
        cg_stderr_remember();
    int same = stderr_at_start.known && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_at_start.dev &&
               st.st_ino == stderr_at_start.ino;
    errno = saved;
    return same ? cg_write_all(STDERR_FILENO, data, len) : 0;
}

void cg_warn(const char *fmt, ...)
{
    int saved = errno;
    char line[1024];
    int n = snprintf(line, sizeof line, "cgprof: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* stderr may be a file past the file-size limit: cg_write_all */
    cg_write_stderr(line, len);
    errno = saved;
}

/* The length of the valid UTF-8 character of 2 to 4 bytes at s (n bytes
 * left), or 0: no overlong form, no surrogate, nothing above U+10FFFF
 * (RFC 3629, section 4). */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* The text that stands for the unit at s (n bytes left) in a quoted value,
 * into unit (at least 4 bytes, not terminated); *used: the bytes of s it
 * stands for. Returns its length. */
static size_t quote_unit(const unsigned char *s, size_t n, char *unit, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char c = s[0];
    *used = 1;
    const char *esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\\' ? "\\\\"
                      : c == '"' ? "\\\"" : NULL;
    if (esc) {
        memcpy(unit, esc, 2);
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        unit[0] = (char)c;
        return 1;
    }
    size_t len = c >= 0x80 ? utf8_char(s, n) : 0;
    if (len) {
        memcpy(unit, s, len);
        *used = len;
        return len;
    }
    unit[0] = '\\';
    unit[1] = 'x';
    unit[2] = hex[c >> 4];
    unit[3] = hex[c & 15];
    return 4;
}

const char *cg_quote(char *dst, size_t size, const char *s, size_t len)
{
    if (size == 0)
        return dst;
    const unsigned char *u = (const unsigned char *)s;
    char unit[4];
    size_t used, whole = 2;
    for (size_t i = 0; i < len; i += used)
        whole += quote_unit(u + i, len - i, unit, &used);
    /* Room for the units: all of them when they fit, else what fits
     * before the closing quote, the "..." and the NUL. */
    size_t room = whole + 1 <= size ? whole - 1 : size >= CG_QUOTE_MIN ? size - 5 : 0;
    if (room == 0) { /* not even "" and "...": what fits of them */
        snprintf(dst, size, "%s", "\"\"...");
        return dst;
    }
    size_t at = 0, i = 0;
    dst[at++] = '"';
    while (i < len) {
        size_t n = quote_unit(u + i, len - i, unit, &used);
        if (at + n > room)
            break;
        memcpy(dst + at, unit, n);
        at += n;
        i += used;
    }
    dst[at++] = '"';
    if (i < len) {
        memcpy(dst + at, "...", 3);
        at += 3;
    }
    dst[at] = 0;
    return dst;
}

void cg_warn_once_nomem(void)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        cg_warn("out of memory for a thread's tables; that thread is not profiled");
}

/* Removes "." and "dir/.." components, lexically: the file may not exist
 * here (a library built elsewhere), so realpath() is no help. Works in
 * place: the result is never longer. */
void cg_path_normalise(char *path)
{
    int absolute = path[0] == '/';
    char *out = path + absolute; /* end of the result so far */
    char *base = out;            /* start of the components written */
    const char *p = path + absolute;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *next = end ? end + 1 : p + len;
        if (len == 0 || (len == 1 && p[0] == '.')) {
            p = next;
            continue;
        }
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            char *last = out;
            while (last > base && last[-1] != '/')
                last--;
            int last_is_dotdot = out - last == 2 && last[0] == '.' && last[1] == '.';
            if (out > base && !last_is_dotdot) {
                out = last > base ? last - 1 : base; /* drop "/component" */
                p = next;
                continue;
            }
            if (absolute) { /* "/.." is "/" */
                p = next;
                continue;
            }
        }
        if (out > base)
            *out++ = '/';
        memmove(out, p, len);
        out += len;
        p = next;
    }
    if (out == path)
        *out++ = '.'; /* "a/.." is the current directory, not "" */
    *out = 0;
}

/* The capacity that holds need items of size bytes, doubling from cap
 * (first when 0): 0 and *ncap, or -1 when it would overflow. */
static int grown_cap(size_t cap, size_t need, size_t size, size_t first, size_t *ncap)
{
    size_t n = cap ? cap : first ? first : 1;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size)
            return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / size)
        return -1;
    *ncap = n;
    return 0;
}

int cg_grow(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
    size_t ncap;
    if (need <= *cap)
        return 0;
    if (grown_cap(*cap, need, size, first, &ncap) != 0)
        return -1;
    void *p = realloc(*v, ncap * size);
    if (!p)
        return -1;
    *v = p;
    *cap = ncap;
    return 0;
}

int cg_grow_mapped(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
    size_t ncap;
    if (need <= *cap)
        return 0;
    if (grown_cap(*cap, need, size, first, &ncap) != 0)
        return -1;
    void *p;
    if (*v)
        p = mremap(*v, *cap * size, ncap * size, MREMAP_MAYMOVE);
    else
        p = mmap(NULL, ncap * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    *v = p;
    *cap = ncap;
    return 0;
}

void cg_buf_init(struct cg_buf *b)
{
    memset(b, 0, sizeof *b);
}

void cg_buf_free(struct cg_buf *b)
{
    free(b->data);
    cg_buf_init(b);
}

static int reserve(struct cg_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    if (b->flush && b->len) {
        if (b->flush(b->flush_arg, b->data, b->len) != 0) {
            b->failed = 1;
            return -1;
        }
        b->len = 0;
        if (extra + 1 <= b->cap)
            return 0;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void cg_buf_putn_slow(struct cg_buf *b, const char *s, size_t n)
{
    if (reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void cg_buf_putc_slow(struct cg_buf *b, char c)
{
    cg_buf_putn(b, &c, 1);
}

void cg_buf_reserve(struct cg_buf *b, size_t extra)
{
    if (!b->flush)
        reserve(b, extra);
}

void cg_buf_printf(struct cg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cg_buf_put_u64(struct cg_buf *b, uint64_t v)
{
    /* Written in place, two digits a step: a dump writes millions of
     * numbers (a copy through memcpy for each was a fifth of the writing). */
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    static const uint64_t pow10[20] = {
        1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u,
        10000000000u, 100000000000u, 1000000000000u, 10000000000000u, 100000000000000u,
        1000000000000000u, 10000000000000000u, 100000000000000000u, 1000000000000000000u,
        10000000000000000000u,
    };
    /* digits from the bit length: log10(2) ~ 1233 / 4096 */
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
    unsigned n = t - (v < pow10[t]) + 1;
    if (n == 0)
        n = 1;
    if (cg_unlikely(b->len + n + 1 > b->cap) && reserve(b, n))
        return; /* (reserve, not cg_buf_reserve: a flushing buffer flushes) */
    char *p = b->data + b->len + n;
    *p = 0;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        p[0] = pairs[2 * r];
        p[1] = pairs[2 * r + 1];
    }
    if (v >= 10) {
        p[-2] = pairs[2 * v];
        p[-1] = pairs[2 * v + 1];
    } else {
        p[-1] = (char)('0' + v);
    }
    b->len += n;
}

void cg_buf_put_hex(struct cg_buf *b, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[20];
    int i = sizeof tmp;
    do
        tmp[--i] = digits[v & 15];
    while ((v >>= 4) != 0);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    cg_buf_putn(b, tmp + i, sizeof tmp - (size_t)i);
}

static int cmp_uintptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static uintptr_t key_at(const char *p)
{
    uintptr_t k;
    memcpy(&k, p, sizeof k);
    return k;
}

int cg_sort_keyed(void *v, size_t n, size_t size)
{
    /* LSD, 11 bits a pass; the passes over bits that are the same in every
     * key (the high bits of addresses in one process) are skipped. */
    enum { BITS = 11, BUCKETS = 1 << BITS };
    /* The counts (16 kB) with the copy, not on the stack: a dump sorts,
     * and the crash copy's dump may run on a small alternate signal
     * stack. */
    if (n > (SIZE_MAX - sizeof(size_t) * BUCKETS) / size)
        return -1;
    size_t *count = malloc(sizeof(size_t) * BUCKETS + n * size);
    if (!count)
        return -1;
    char *tmp = (char *)(count + BUCKETS);
    uintptr_t all_or = 0, all_and = ~(uintptr_t)0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t k = key_at((const char *)v + i * size);
        all_or |= k;
        all_and &= k;
    }
    char *src = v, *dst = tmp;
    for (unsigned shift = 0; shift < 8 * sizeof(uintptr_t); shift += BITS) {
        if ((((all_or ^ all_and) >> shift) & (BUCKETS - 1)) == 0)
            continue;
        memset(count, 0, sizeof(size_t) * BUCKETS);
        for (size_t i = 0; i < n; i++)
            count[(key_at(src + i * size) >> shift) & (BUCKETS - 1)]++;
        size_t sum = 0;
        for (size_t k = 0; k < BUCKETS; k++) {
            size_t c = count[k];
            count[k] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t at = count[(key_at(src + i * size) >> shift) & (BUCKETS - 1)]++;
            /* the sizes sorted most, as constants: copied inline, not by a
             * call to memcpy for each element */
            if (size == 8)
                memcpy(dst + at * 8, src + i * 8, 8);
            else if (size == 16)
                memcpy(dst + at * 16, src + i * 16, 16);
            else
                memcpy(dst + at * size, src + i * size, size);
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * size);
    free(count);
    return 0;
}

void cg_sort_uintptr(uintptr_t *v, size_t n)
{
    if (n < 1024 || cg_sort_keyed(v, n, sizeof *v) != 0)
        qsort(v, n, sizeof *v, cmp_uintptr);
}

#if defined(CG_CHECKS) && CG_CHECKS
/* No stdio stream, no malloc: a check may fail in a hook or a signal
 * handler. */
void cg_check_failed(const char *cond, const char *file, int line)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "cgprof: invariant broken at %s:%d: %s\n", file, line, cond);
    if (n > 0)
        (void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    abort();
}
#endif
