/* Messages, the grow helper, the hash mixers and a growable text buffer,
 * for the cold paths (never the hooks' fast path). */
#ifndef CG_UTIL_H
#define CG_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"

/* One line "cgprof: ..." on stderr, written with write(2) so that it neither
 * uses nor disturbs the program's stdio buffers; errno is preserved. */
void cg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cg_warn_once_nomem(void);

/* A descriptor the runtime keeps while the program runs, moved (close-on-
 * exec) to the top of the range the program may use: the lowest free
 * number, which the program's next open() gets, stays what it would be
 * without cgprof. Returns the new number, or fd itself where there is no
 * room above (RLIMIT_NOFILE under 256): there it takes a number the
 * program could have had. errno kept. */
int cg_fd_above(int fd);

/* Writes all of data to fd (short writes continued, EINTR retried). Returns
 * 0 or the errno value of the failure (EIO for a write of nothing).
 * Passing the file-size limit (RLIMIT_FSIZE, `ulimit -f`) fails with EFBIG
 * instead of killing the process: the kernel sends the writing thread
 * SIGXFSZ, whose default action ends the whole process with a core; it is
 * blocked in this thread while writing and the one our write raised is
 * taken back. The program's own action for SIGXFSZ is never touched. A
 * SIGXFSZ that was already pending for this thread (the program's own) is
 * left pending: ours merges into it, as standard signals do. errno is
 * preserved. */
int cg_write_all(int fd, const void *data, size_t len);
/* Messages go to the stderr found at start-up (cg_stderr_remember, the
 * first thing the runtime does), or nowhere: written only while fd 2 is
 * still that file (device and inode). Returns as cg_write_all, 0 when
 * nothing was written for that reason. */
void cg_stderr_remember(void);
int cg_write_stderr(const void *data, size_t len);
/* A value given by the user (a variable's value, a path, a file name), as
 * a message shows it: between double quotes, with a backslash, a quote and
 * the bytes that could end the line or pass for something else escaped as C
 * writes them (\n, \t, \r, \\, \", and \xNN for the other bytes below
 * 0x20, for 0x7f and for every byte that is not part of valid UTF-8); valid
 * multibyte UTF-8 is kept as it is. So a value can never make a second line
 * that passes for a message of cgprof's own, nor send raw bytes to the
 * terminal. Written into dst (size bytes, always NUL-terminated), len bytes
 * of s; what does not fit is cut before a whole escape or UTF-8 character
 * and marked by "..." after the closing quote ("abc"...). No allocation,
 * no lock: messages are printed from constrained places (a thread's end,
 * the crash copy). dst should hold at least CG_QUOTE_MIN bytes. Returns
 * dst. */
const char *cg_quote(char *dst, size_t size, const char *s, size_t len);
#define CG_QUOTE_MIN 6 /* "" and "..." and the NUL */
/* cg_quote of a NUL-terminated string into an array. */
#define CG_QUOTE(array, s) cg_quote((array), sizeof(array), (s), strlen(s))

/* dlsym() for a function: ISO C has no cast from void * to a function
 * pointer, POSIX guarantees the representation is the same. */
#define CG_DLSYM_FN(dst, handle, name)                                                                      \
    do {                                                                                                   \
        void *sym_ = dlsym(handle, name);                                                                  \
        memcpy(&(dst), &sym_, sizeof sym_);                                                                \
    } while (0)

/* The growable arrays of the cold paths (malloc'd): makes room for `need`
 * items of `size` bytes in *v, which holds *cap, doubling from `first`.
 * Returns 0, or -1 when out of memory (*v and *cap unchanged). Through
 * CG_GROW, which takes the array itself: CG_GROW(a->v, a->cap, a->n + 1, 64). */
int cg_grow(void **v, size_t *cap, size_t need, size_t size, size_t first);
#define CG_GROW(arr, cap, need, first)                                                                        \
    __extension__({                                                                                          \
        void *p_ = (arr);                                                                                    \
        int rc_ = cg_grow(&p_, &(cap), (need), sizeof *(arr), (first));                                      \
        (arr) = p_;                                                                                          \
        rc_;                                                                                                 \
    })
/* The same in anonymous mappings (mremap moves them), for what runs where
 * malloc may not: a hook's slow path, in a signal handler or inside malloc
 * (patch/registry.c's tables). The first size*cap bytes are kept; the
 * rest reads zero. */
int cg_grow_mapped(void **v, size_t *cap, size_t need, size_t size, size_t first);
#define CG_GROW_MAPPED(arr, cap, need, first)                                                                 \
    __extension__({                                                                                          \
        void *p_ = (arr);                                                                                    \
        int rc_ = cg_grow_mapped(&p_, &(cap), (need), sizeof *(arr), (first));                               \
        (arr) = p_;                                                                                          \
        rc_;                                                                                                 \
    })

/* One 64-bit mix of two words, for the hash tables (the golden ratio's
 * multiplier and MurmurHash3's second, then the high bits folded in). */
static inline uint64_t cg_hash2(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15u + b * 0xc2b2ae3d27d4eb4fu;
    return h ^ (h >> 31);
}

/* A string's hash, for the tables keyed by name (FNV-1a's shape). */
static inline size_t cg_hash_str(const char *s)
{
    size_t h = 1469598103934665603u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211u;
    return h;
}

/* Sorts v ascending (radix: a dump sorts 100,000s of addresses). */
void cg_sort_uintptr(uintptr_t *v, size_t n);
/* Sorts n elements of `size` bytes by the uintptr_t each starts with,
 * keeping the order of equal keys. Returns 0, or -1 (v untouched) if out of
 * memory. */
int cg_sort_keyed(void *v, size_t n, size_t size);

/* Removes "." and "dir/.." components of a path, lexically, in place. */
void cg_path_normalise(char *path);

struct cg_buf {
    char *data;
    size_t len, cap;
    int failed; /* an allocation or a flush failed: the content is incomplete */
    /* Optional: when the buffer is full its content is handed to flush
     * (0: taken, else failed) and the buffer starts again empty, so that a
     * large text (a dump) is written in pieces, in memory already touched,
     * instead of being held whole. */
    int (*flush)(void *arg, const char *data, size_t len);
    void *flush_arg;
};

void cg_buf_init(struct cg_buf *b);
void cg_buf_free(struct cg_buf *b);
void cg_buf_putn_slow(struct cg_buf *b, const char *s, size_t n);
void cg_buf_putc_slow(struct cg_buf *b, char c);
/* Makes room for extra more bytes at once (a writer that knows roughly how
 * much it will write saves the copies of growing step by step); nothing for
 * a buffer that flushes. */
void cg_buf_reserve(struct cg_buf *b, size_t extra);
/* One character: inline while there is room (the writer puts millions). */
/* Inline while there is room: the writer's millions of small pieces. */
static inline void cg_buf_putn(struct cg_buf *b, const char *s, size_t n)
{
    if (cg_likely(b->len + n + 1 <= b->cap)) {
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = 0;
    } else {
        cg_buf_putn_slow(b, s, n);
    }
}

static inline void cg_buf_puts(struct cg_buf *b, const char *s)
{
    cg_buf_putn(b, s, strlen(s));
}

static inline void cg_buf_putc(struct cg_buf *b, char c)
{
    if (cg_likely(b->len + 2 <= b->cap)) {
        b->data[b->len++] = c;
        b->data[b->len] = 0;
    } else {
        cg_buf_putc_slow(b, c);
    }
}
void cg_buf_printf(struct cg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_buf_put_u64(struct cg_buf *b, uint64_t v);
void cg_buf_put_hex(struct cg_buf *b, uint64_t v); /* 0x... */

#endif
