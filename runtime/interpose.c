/* Functions of the C library that libcgprof.so wraps, each for one reason:
 *  - sigaction(), signal(): to notice that the program takes over the dump
 *    signal, and step aside (service.c);
 *  - the exec family: to write what was collected before the process image
 *    is replaced;
 *  - dlclose(): to remember where an object was before it goes;
 *  - dlopen(): to resolve the CGPROF_SKIP* patterns in what it loads;
 *  - pthread_create(): to number threads in the order they are created.
 * Each calls the real function from the one table (real.h) and passes
 * every call through unchanged. (setjmp, longjmp and the personality
 * routines are wrapped in nonlocal.c.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "dump.h"
#include "filter.h"
#include "proc.h"
#include "real.h"
#include "runtime.h"
#include "sample.h"
#include "service.h"
#include "thread.h"
#include "unload.h"
#include "util.h"

/* real_: the real function (real.h), or ENOSYS when the process has none. */
#define REAL(name)                                                                                           \
    __typeof__(cg_real.fn_##name) real_ = cg_real_##name();                                                  \
    if (!real_) {                                                                                          \
        errno = ENOSYS;                                                                                    \
        return -1;                                                                                         \
    }

CG_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    REAL(sigaction);
    if (act) {
        cg_service_signal_claimed(sig);
        cg_sample_signal_claimed(sig);
    }
    return real_(sig, act, old);
}

CG_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    sighandler_t (*real_)(int, sighandler_t) = cg_real_signal();
    if (!real_) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    cg_service_signal_claimed(sig);
    cg_sample_signal_claimed(sig);
    return real_(sig, handler);
}

/* ---- pthread_create -------------------------------------------------------
 * The new thread's number is taken here, where the order of creation is
 * known, and handed to the thread before it runs the program's function. */

struct start {
    void *(*fn)(void *);
    void *arg;
    uint32_t number;
};

static CG_NOINSTR void *thread_start(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    cg_thread_assign_number(s.number);
    cg_thread_watch_exit();
    /* A tail call at -O1 and above, so the thread's first function shows as
     * called from libc's start_thread, as it really is, not from here. */
    return s.fn(s.arg);
}

CG_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int (*r)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) = cg_real_pthread_create();
    if (!r)
        return EAGAIN;
    struct start *s = malloc(sizeof *s);
    if (!s)
        return r(th, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    s->number = cg_thread_take_number();
    int rc = r(th, attr, thread_start, s);
    if (rc != 0)
        free(s);
    return rc;
}

/* ---- dlclose ---------------------------------------------------------------- */

/* The object may be unmapped: remember where it was, so that the dump can
 * still name its functions and lines. */
CG_EXPORT int dlclose(void *handle)
{
    REAL(dlclose);
    if (cg_runtime_ready()) {
        int saved = errno;
        cg_unload_note(handle);
        errno = saved;
    }
    return real_(handle);
}

/* ---- dlopen ----------------------------------------------------------------- */

/* glibc's dlopen() takes its caller's object into account (its RPATH and
 * RUNPATH, $ORIGIN, its namespace): unless the filters need to see the
 * result, the call is passed on as a tail call, so that the caller dlopen()
 * sees is the program's own. */
CG_EXPORT void *dlopen(const char *file, int mode)
{
    void *(*real_)(const char *, int) = cg_real_dlopen();
    if (!real_)
        return NULL;
    if (!cg_filter_after_dlopen(file, __builtin_return_address(0)))
        return real_(file, mode);
    void *h = real_(file, mode);
    if (h)
        cg_filter_scan(); /* keeps errno */
    return h;
}

/* ---- exec ------------------------------------------------------------------ */

/* A vfork() child shares the parent's memory until it execs: it must not
 * touch the profile (it has none of its own). Its pid differs from the one
 * the runtime knows, which fork() (not vfork) updates. */
static void before_exec(const char *what)
{
    int saved = errno;
    if (getpid() == cg_proc_pid() && cg_runtime_ready())
        cg_dump_exec(what);
    errno = saved;
}


CG_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL(execve);
    before_exec(path);
    return real_(path, argv, envp);
}

CG_EXPORT int execv(const char *path, char *const argv[])
{
    REAL(execv);
    before_exec(path);
    return real_(path, argv);
}

CG_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL(execvp);
    before_exec(file);
    return real_(file, argv);
}

CG_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL(execvpe);
    before_exec(file);
    return real_(file, argv, envp);
}

CG_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL(fexecve);
    before_exec("(file descriptor)");
    return real_(fd, argv, envp);
}

CG_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    REAL(execveat);
    before_exec(path);
    return real_(dirfd, path, argv, envp, flags);
}

/* The list forms: their arguments gathered into an array on the stack (they
 * are few; the kernel's own limit applies anyway). */
#define GATHER_ARGS(first, ap, argv)                                                                         \
    size_t n_ = 1;                                                                                         \
    va_list count_;                                                                                        \
    va_copy(count_, ap);                                                                                   \
    while (va_arg(count_, char *) != NULL)                                                                 \
        n_++;                                                                                              \
    va_end(count_);                                                                                        \
    char *argv[n_ + 1];                                                                                    \
    argv[0] = (char *)(first);                                                                             \
    for (size_t i_ = 1; i_ <= n_; i_++)                                                                    \
        argv[i_] = va_arg(ap, char *);

CG_EXPORT int execl(const char *path, const char *arg, ...)
{
    REAL(execv);
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(arg, ap, argv);
    va_end(ap);
    before_exec(path);
    return real_(path, argv);
}

CG_EXPORT int execlp(const char *file, const char *arg, ...)
{
    REAL(execvp);
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(arg, ap, argv);
    va_end(ap);
    before_exec(file);
    return real_(file, argv);
}

CG_EXPORT int execle(const char *path, const char *arg, ...)
{
    REAL(execve);
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    before_exec(path);
    return real_(path, argv, envp);
}
