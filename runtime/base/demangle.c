#define _GNU_SOURCE
#include "demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "proc.h"
#include "real.h"
#include "util.h"

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The C++ runtime's own demangler: found in the process when it is a C++
 * program (the only kind with mangled names, in practice), else loaded on
 * demand, privately. Not linked: a C program should not pull in libstdc++
 * just by being profiled, and one with no mangled name never loads it. */
#if CG_STATIC
/* The static runtime loads no library: the demangler is the one linked
 * into the program, a C++ program's (libstdc++'s default terminate handler
 * uses it), taken weakly, so that a C program does not get it. */
extern char *__cxa_demangle(const char *, char *, size_t *, int *) __attribute__((weak));

static demangle_fn find_demangler(void)
{
    return __cxa_demangle;
}
#else
static demangle_fn find_demangler(void)
{
    static demangle_fn fn;
    static int tried;
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
        CG_DLSYM_FN(fn, RTLD_DEFAULT, "__cxa_demangle");
        int room = 1;
        if (!fn) {
            void *(*open)(const char *, int) = cg_real_dlopen();
            void *h = open ? open("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD) : NULL;
            /* not without room for it (2.3 MB; a load that runs out ends
             * the process: cg_proc_room), tried again at the next name */
            if (!h && open && (room = cg_proc_room(4 << 20)))
                h = open("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (h)
                CG_DLSYM_FN(fn, h, "__cxa_demangle");
        }
        dlerror(); /* leave no error for the program's dlerror() to find */
        if (room)
            __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return fn;
}
#endif

/* ---- the demangler's stack -------------------------------------------------
 * __cxa_demangle (libiberty's cp-demangle.c, in libstdc++) puts arrays
 * sized by the name's length on the stack: two components and one
 * substitution a character, about 72 bytes, whatever the name holds. A
 * 6,000-character name (a template instantiated over a long type list)
 * takes 430 kB, more than the service thread's stack (service.c) or a
 * program's thread with a small one that writes its part as it ends. A
 * name longer than SHORT_NAME is demangled on a stack of its own, mapped
 * for the call, sized to it, with a guard page below; where it cannot be
 * had (memory short), the name stays mangled. */
enum {
    SHORT_NAME = 256,          /* on the caller's stack: 18 kB of arrays */
    BYTES_PER_CHAR = 96,       /* the arrays, with room */
    STACK_EXTRA = 128 * 1024,  /* its recursion, printing nested names */
};

struct demangle_call {
    demangle_fn fn;
    const char *name;
    char *result;
    int status;
    ucontext_t caller;
};
/* the call being made on this thread's own stack (makecontext passes no
 * pointer portably) */
static __thread struct demangle_call *current;

static void call_on_own_stack(void)
{
    struct demangle_call *c = current;
    c->result = c->fn(c->name, NULL, NULL, &c->status);
}

static char *demangle_long(demangle_fn fn, const char *name, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t size = ((len * BYTES_PER_CHAR + STACK_EXTRA) + (size_t)page - 1) & ~((size_t)page - 1);
    char *m = mmap(NULL, size + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct demangle_call c = { fn, name, NULL, -1, { 0 } };
    ucontext_t on_own;
    if (mprotect(m, (size_t)page, PROT_NONE) != 0 || getcontext(&on_own) != 0) {
        munmap(m, size + (size_t)page);
        return NULL;
    }
    on_own.uc_stack.ss_sp = m + page;
    on_own.uc_stack.ss_size = size;
    on_own.uc_link = &c.caller;
    makecontext(&on_own, call_on_own_stack, 0);
    current = &c;
    if (swapcontext(&c.caller, &on_own) != 0)
        c.status = -1;
    current = NULL;
    munmap(m, size + (size_t)page);
    if (c.status != 0) {
        free(c.result);
        return NULL;
    }
    return c.result;
}

char *cg_demangle(const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return NULL;
    demangle_fn fn = find_demangler();
    if (!fn)
        return NULL;
    size_t len = strlen(name);
    if (len > SHORT_NAME)
        return demangle_long(fn, name, len);
    int status = -1;
    char *d = fn(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}
