/* Messages and a growable text buffer, for the cold paths (never the hooks). */
#ifndef CG_UTIL_H
#define CG_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* One line "cgprof: ..." on stderr, written with write(2) so that it neither
 * uses nor disturbs the program's stdio buffers; errno is preserved. */
void cg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cg_warn_once_nomem(void);

/* dlsym() for a function: ISO C has no cast from void * to a function
 * pointer, POSIX guarantees the representation is the same. */
#define CG_DLSYM_FN(dst, handle, name)                                                                      \
    do {                                                                                                   \
        void *sym_ = dlsym(handle, name);                                                                  \
        memcpy(&(dst), &sym_, sizeof sym_);                                                                \
    } while (0)

/* Removes "." and "dir/.." components of a path, lexically, in place. */
void cg_path_normalise(char *path);

struct cg_buf {
    char *data;
    size_t len, cap;
    int failed; /* an allocation failed: the content is incomplete */
};

void cg_buf_init(struct cg_buf *b);
void cg_buf_free(struct cg_buf *b);
void cg_buf_putn(struct cg_buf *b, const char *s, size_t n);
void cg_buf_puts(struct cg_buf *b, const char *s);
void cg_buf_putc(struct cg_buf *b, char c);
void cg_buf_printf(struct cg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_buf_put_u64(struct cg_buf *b, uint64_t v);
void cg_buf_put_hex(struct cg_buf *b, uint64_t v); /* 0x... */

#endif
