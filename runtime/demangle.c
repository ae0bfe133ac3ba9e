#define _GNU_SOURCE
#include "demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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
        if (!fn) {
            void *(*open)(const char *, int) = cg_real_dlopen();
            void *h = open ? open("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD) : NULL;
            if (!h && open)
                h = open("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (h)
                CG_DLSYM_FN(fn, h, "__cxa_demangle");
        }
        dlerror(); /* leave no error for the program's dlerror() to find */
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return fn;
}
#endif

char *cg_demangle(const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return NULL;
    demangle_fn fn = find_demangler();
    if (!fn)
        return NULL;
    int status = -1;
    char *d = fn(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}
