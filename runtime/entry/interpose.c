/* Functions of the C library that libcgprof.so wraps, each for one reason:
 *  - sigaction(), signal(): to notice that the program takes over the dump
 *    signal, and step aside (service.c);
 *  - the exec family: to write what was collected before the process image
 *    is replaced;
 *  - dlclose(): to remember where an object was before it goes;
 *  - dlopen(): to resolve the CGPROF_SKIP* patterns in what it loads;
 *  - pthread_create(): to number threads in the order they are created;
 *  - unshare(), setns(), the set*id family: to step the service thread out
 *    of the way.
 * Each calls the real function from the one table (real.h) and passes
 * every call through unchanged. (setjmp, longjmp and the personality
 * routines are wrapped in nonlocal.c.) In the static runtime (CG_STATIC)
 * each is __wrap_NAME, for the linker's --wrap=NAME, and dlopen and
 * dlclose are not wrapped. */
#define _GNU_SOURCE
#include <assert.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "compiler.h"
#include "cpu.h"
#include "crash.h"
#include "dump.h"
#include "filter.h"
#include "hooks.h"
#include "proc.h"
#include "real.h"
#include "runtime.h"
#include "sample.h"
#include "service.h"
#include "symbols.h"
#include "thread.h"
#include "unload.h"
#include "unwinder.h"
#include "util.h"

/* real_: the real function (real.h), or ENOSYS when the process has none. */
#define REAL(name)                                                                                           \
    __typeof__(cg_real.fn_##name) real_ = cg_real_##name();                                                  \
    if (!real_) {                                                                                          \
        errno = ENOSYS;                                                                                    \
        return -1;                                                                                         \
    }

/* The action the program would see for sig without cgprof, if cgprof's
 * handler is what the kernel holds (1), else 0. */
static int program_view(int sig, struct sigaction *view)
{
    return cg_service_signal_view(sig, view) || cg_sample_signal_view(sig, view) || cg_crash_signal_view(sig, view);
}

CG_WRAPPER_DECL(sigaction);
CG_EXPORT int CG_WRAP(sigaction)(int sig, const struct sigaction *act, struct sigaction *old)
{
    REAL(sigaction);
    /* A query (or the old action of a change) of a signal cgprof holds is
     * answered with what the program set, SIG_DFL: a program that leaves
     * an existing action alone must see none. */
    struct sigaction view;
    int ours = old && program_view(sig, &view);
    if (act) {
        cg_service_signal_claimed(sig);
        cg_sample_signal_claimed(sig);
        cg_crash_signal_claimed(sig);
    }
    int rc = real_(sig, act, old);
    if (rc == 0 && ours)
        *old = view;
    return rc;
}

CG_WRAPPER_DECL(signal);
CG_EXPORT sighandler_t CG_WRAP(signal)(int sig, sighandler_t handler)
{
    sighandler_t (*real_)(int, sighandler_t) = cg_real_signal();
    if (!real_) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    struct sigaction view;
    int ours = program_view(sig, &view);
    cg_service_signal_claimed(sig);
    cg_sample_signal_claimed(sig);
    cg_crash_signal_claimed(sig);
    sighandler_t was = real_(sig, handler);
    return was != SIG_ERR && ours ? view.sa_handler : was;
}

/* A program that takes the dump signal itself, synchronously, with the
 * signal blocked: the service thread, which would otherwise take it, steps
 * aside first (as for an action of the program's). */
CG_WRAPPER_DECL(sigwait);
CG_EXPORT int CG_WRAP(sigwait)(const sigset_t *set, int *sig)
{
    int (*real_)(const sigset_t *, int *) = cg_real_sigwait();
    if (!real_)
        return ENOSYS;
    cg_service_signal_awaited(set);
    return real_(set, sig);
}

CG_WRAPPER_DECL(sigwaitinfo);
CG_EXPORT int CG_WRAP(sigwaitinfo)(const sigset_t *set, siginfo_t *info)
{
    REAL(sigwaitinfo);
    cg_service_signal_awaited(set);
    return real_(set, info);
}

CG_WRAPPER_DECL(sigtimedwait);
CG_EXPORT int CG_WRAP(sigtimedwait)(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
    REAL(sigtimedwait);
    cg_service_signal_awaited(set);
    return real_(set, info, timeout);
}

CG_WRAPPER_DECL(signalfd);
CG_EXPORT int CG_WRAP(signalfd)(int fd, const sigset_t *mask, int flags)
{
    REAL(signalfd);
    cg_service_signal_awaited(mask);
    return real_(fd, mask, flags);
}

/* ---- calls the service thread steps out for -------------------------------
 * The kernel refuses unshare() and setns() (EINVAL) to a multi-threaded
 * caller for a user namespace (unshare: CLONE_NEWUSER, and CLONE_THREAD,
 * CLONE_SIGHAND, CLONE_VM; setns: a user or mount namespace, whose type the
 * descriptor may hide). glibc makes every thread repeat a set*id call (its
 * setxid signal to each thread, then the same system call there) and
 * aborts the process when one thread's call does not succeed as the
 * caller's did: util-linux's setpriv, preloaded, died of SIGABRT in
 * setresgid. For each, when `when` holds, the service thread steps out:
 * the process has then the threads the program made, no more. */
#define STEP_ASIDE_WRAPPER(name, params, args, when)                                                         \
    CG_WRAPPER_DECL(name);                                                                                   \
    CG_EXPORT int CG_WRAP(name) params                                                                       \
    {                                                                                                        \
        REAL(name);                                                                                          \
        int was = (when) ? cg_service_pause() : 0;                                                           \
        int rc = real_ args;                                                                                 \
        int err = errno;                                                                                     \
        cg_service_resume(was);                                                                              \
        errno = err;                                                                                         \
        return rc;                                                                                           \
    }

STEP_ASIDE_WRAPPER(unshare, (int flags), (flags), flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM))
STEP_ASIDE_WRAPPER(setns, (int fd, int nstype), (fd, nstype), nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS)))
STEP_ASIDE_WRAPPER(setuid, (uid_t u), (u), 1)
STEP_ASIDE_WRAPPER(setgid, (gid_t g), (g), 1)
STEP_ASIDE_WRAPPER(seteuid, (uid_t u), (u), 1)
STEP_ASIDE_WRAPPER(setegid, (gid_t g), (g), 1)
STEP_ASIDE_WRAPPER(setreuid, (uid_t r, uid_t e), (r, e), 1)
STEP_ASIDE_WRAPPER(setregid, (gid_t r, gid_t e), (r, e), 1)
STEP_ASIDE_WRAPPER(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s), 1)
STEP_ASIDE_WRAPPER(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s), 1)
STEP_ASIDE_WRAPPER(setgroups, (size_t n, const gid_t *list), (n, list), 1)

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
    cg_crash_thread_start();
    /* A tail call at -O1 and above, so the thread's first function shows as
     * called from libc's start_thread, as it really is, not from here. */
    return s.fn(s.arg);
}

CG_WRAPPER_DECL(pthread_create);
CG_EXPORT int CG_WRAP(pthread_create)(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int (*r)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) = cg_real_pthread_create();
    if (!r)
        return EAGAIN;
    cg_runtime_wake(0);
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

#if !CG_STATIC
/* Not in the static runtime: a static program loads no object through the
 * C library's dlopen in practice (glibc's static dlopen needs the shared
 * libraries of the very glibc it was linked with at run time), and
 * wrapping dlopen would link it, with glibc's warning, into every
 * profiled static program. */

/* ---- dlclose ---------------------------------------------------------------- */

/* The object may be unmapped: remember where it was, so that the dump can
 * still name its functions and lines. */
CG_WRAPPER_DECL(dlclose);
CG_EXPORT int CG_WRAP(dlclose)(void *handle)
{
    REAL(dlclose);
    cg_runtime_wake(0);
    if (cg_runtime_ready(&cg_hooks)) {
        int saved = errno;
        cg_unload_note(handle, cg_dump_addresses);
        errno = saved;
    }
    return real_(handle);
}

/* ---- dlopen ----------------------------------------------------------------- */

/* glibc's dlopen() takes its caller's object into account (its RPATH and
 * RUNPATH, $ORIGIN, its namespace): the call is passed on as a tail call,
 * so that the caller dlopen() sees is the program's own, unless the result
 * must be looked at (the filters' patterns to resolve in the new objects,
 * or a process whose services wait for instrumented code: a plugin built
 * with -finstrument-functions in an uninstrumented host) and the caller
 * does not matter: a path with a slash and no $, from the base namespace. */
static int caller_neutral(const char *file, const void *caller)
{
    if (!file || !strchr(file, '/') || strchr(file, '$'))
        return 0;
    Dl_info info;
    struct link_map *lm = NULL;
    Lmid_t lmid = LM_ID_BASE;
    if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return 0;
    if (dlinfo(lm, RTLD_DI_LMID, &lmid) != 0) {
        dlerror();
        return 0;
    }
    return lmid == LM_ID_BASE;
}

CG_WRAPPER_DECL(dlopen);
CG_EXPORT void *CG_WRAP(dlopen)(const char *file, int mode)
{
    void *(*real_)(const char *, int) = cg_real_dlopen();
    if (!real_)
        return NULL;
    cg_runtime_wake(0); /* a hook ran since the last look */
    if (!(cg_filter_skipping() || cg_runtime_dormant()) || !caller_neutral(file, __builtin_return_address(0)))
        return real_(file, mode);
    void *h = real_(file, mode);
    if (h) {
        int saved = errno;
        cg_filter_scan();
        cg_runtime_wake(1);
        errno = saved;
    }
    return h;
}

#if CG_HAVE_LIBUNWIND
/* ---- pipe2 -------------------------------------------------------------------
 * libunwind keeps a pipe to check addresses with (its mem_validate_pipe),
 * opened when it starts and again whenever a read of it fails (a program
 * that closed every descriptor from 3 up): both ends go to the top of the
 * program's range (cg_fd_above), so that the program's own open() gets the
 * numbers it would get without cgprof, and libunwind never writes into a
 * file the program opened at a number it had. */
CG_WRAPPER_DECL(pipe2);
CG_EXPORT int CG_WRAP(pipe2)(int fds[2], int flags)
{
    REAL(pipe2);
    int rc = real_(fds, flags);
    if (rc == 0 && cg_unwinder_calls_from((uintptr_t)__builtin_return_address(0))) {
        fds[0] = cg_fd_above(fds[0]);
        fds[1] = cg_fd_above(fds[1]);
    }
    return rc;
}
#endif
#endif

/* ---- vfork -------------------------------------------------------------------
 * A vfork() child borrows its parent's memory, the calling thread's tables
 * and cg_self included, until it execs or ends: whatever instrumented code
 * it runs meanwhile (a set-up helper before execve) would be counted as the
 * parent's calls. The child is another process, and its calls are nobody's:
 * its hooks do nothing (cg_self is the "off" sentinel), and the parent puts
 * its own cg_self back when it resumes. The exec'd program, preloaded too,
 * profiles itself.
 *
 * vfork cannot be wrapped by a C function: the child returns from the
 * wrapper and goes on using the stack below its caller's frame, where the
 * parent's wrapper frame would be when the parent resumes. The wrapper is a
 * few instructions that keep nothing on the stack across the real vfork:
 * the return address goes to a per-thread stash (the child only reads it,
 * the parent takes it), the result comes back in registers. As the
 * sanitizers' vfork interceptors do. The few instructions are the
 * architecture's (cpu.h, CG_CPU_VFORK_ASM: x86-64's and aarch64's); where
 * there are none, vfork is not wrapped and a vfork child's instrumented
 * calls count as the parent's (docs/limitations.md). */
#if CG_CPU_HAVE_VFORK_STUB

enum { VFORK_NEST = 8 };
/* initial-exec: the library is loaded with the program (or preloaded), and
 * the child must not reach __tls_get_addr */
#define VFORK_TLS __thread __attribute__((tls_model("initial-exec")))
static VFORK_TLS struct {
    uintptr_t ret;
    struct cg_thread *self;
} vfork_stash[VFORK_NEST];
static VFORK_TLS unsigned vfork_depth;
static VFORK_TLS uintptr_t vfork_refused; /* the return address, when vfork is not called */

struct vfork_back {
    uintptr_t ret; /* x86-64: %rax; aarch64: x0 */
    long result;   /* x86-64: %rdx; aarch64: x1 */
};

typedef pid_t (*vfork_fn)(void);
CG_NOINSTR vfork_fn cg_vfork_before(uintptr_t ret);
CG_NOINSTR struct vfork_back cg_vfork_after(long result);
CG_NOINSTR uintptr_t cg_vfork_refused(void);

/* Before the real vfork: the real function, or NULL (errno set) when it
 * cannot be called (none in the process, or vfork children nested deeper
 * than VFORK_NEST, each a child of the one before). */
vfork_fn cg_vfork_before(uintptr_t ret)
{
    vfork_fn real_ = cg_real_vfork();
    unsigned d = vfork_depth;
    if (!real_ || d == VFORK_NEST) {
        vfork_refused = ret;
        errno = real_ ? EAGAIN : ENOSYS;
        return NULL;
    }
    vfork_stash[d].ret = ret;
    vfork_stash[d].self = NULL;
    vfork_depth = d + 1;
    return real_;
}

/* After it, in the child (result 0) and then in the parent. */
struct vfork_back cg_vfork_after(long result)
{
    int saved = errno;
    unsigned d = vfork_depth - 1;
    struct vfork_back back = { vfork_stash[d].ret, result };
    if (result == 0) {
        vfork_stash[d].self = cg_thread_suspend();
    } else {
        if (vfork_stash[d].self) /* the child suspended it */
            cg_thread_resume(vfork_stash[d].self);
        vfork_depth = d;
    }
    errno = saved;
    return back;
}

uintptr_t cg_vfork_refused(void)
{
    return vfork_refused;
}

__asm__(CG_CPU_VFORK_ASM(CG_WRAP_ASM "vfork"));

#endif

/* ---- exec ------------------------------------------------------------------ */

/* A vfork() child shares the parent's memory until it execs: it must not
 * touch the profile (it has none of its own). Its pid differs from the one
 * the runtime knows, which fork() (not vfork) updates. */
static void before_exec(const char *what)
{
    int saved = errno;
    if (getpid() == cg_proc_pid() && cg_runtime_ready(&cg_hooks)) {
        cg_dump_exec(what);
        cg_sample_exec(cg_self, 1);
    }
    errno = saved;
}

/* The exec failed: the program goes on, sampled again. Returns rc. */
static int exec_failed(int rc)
{
    int saved = errno;
    if (getpid() == cg_proc_pid() && cg_runtime_ready(&cg_hooks))
        cg_sample_exec(cg_self, 0);
    errno = saved;
    return rc;
}


CG_WRAPPER_DECL(execve);
CG_EXPORT int CG_WRAP(execve)(const char *path, char *const argv[], char *const envp[])
{
    REAL(execve);
    before_exec(path);
    return exec_failed(real_(path, argv, envp));
}

CG_WRAPPER_DECL(execv);
CG_EXPORT int CG_WRAP(execv)(const char *path, char *const argv[])
{
    REAL(execv);
    before_exec(path);
    return exec_failed(real_(path, argv));
}

CG_WRAPPER_DECL(execvp);
CG_EXPORT int CG_WRAP(execvp)(const char *file, char *const argv[])
{
    REAL(execvp);
    before_exec(file);
    return exec_failed(real_(file, argv));
}

CG_WRAPPER_DECL(execvpe);
CG_EXPORT int CG_WRAP(execvpe)(const char *file, char *const argv[], char *const envp[])
{
    REAL(execvpe);
    before_exec(file);
    return exec_failed(real_(file, argv, envp));
}

CG_WRAPPER_DECL(fexecve);
CG_EXPORT int CG_WRAP(fexecve)(int fd, char *const argv[], char *const envp[])
{
    REAL(fexecve);
    before_exec("(file descriptor)");
    return exec_failed(real_(fd, argv, envp));
}

CG_WRAPPER_DECL(execveat);
CG_EXPORT int CG_WRAP(execveat)(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    REAL(execveat);
    before_exec(path);
    return exec_failed(real_(dirfd, path, argv, envp, flags));
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

CG_WRAPPER_DECL(execl);
CG_EXPORT int CG_WRAP(execl)(const char *path, const char *arg, ...)
{
    REAL(execv);
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(arg, ap, argv);
    va_end(ap);
    before_exec(path);
    return exec_failed(real_(path, argv));
}

CG_WRAPPER_DECL(execlp);
CG_EXPORT int CG_WRAP(execlp)(const char *file, const char *arg, ...)
{
    REAL(execvp);
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(arg, ap, argv);
    va_end(ap);
    before_exec(file);
    return exec_failed(real_(file, argv));
}

CG_WRAPPER_DECL(execle);
CG_EXPORT int CG_WRAP(execle)(const char *path, const char *arg, ...)
{
    REAL(execve);
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    before_exec(path);
    return exec_failed(real_(path, argv, envp));
}

#if !CG_STATIC
/* glibc's report of a failed assertion. libdw and libelf assert where an
 * allocation failed (the resize of a hash table of theirs: "Assertion
 * `htab->table' failed"), which ended the process in the middle of a
 * dump under memory short (issue 39). In a symbol lookup the lookup is
 * given up instead (cg_syms_assert_failed does not return); anywhere else
 * the assertion is the program's, and ends it as without cgprof. */
CG_EXPORT __attribute__((noreturn)) void __assert_fail(const char *assertion, const char *file, unsigned int line,
                                                      const char *function)
{
    cg_syms_assert_failed(__builtin_return_address(0));
    void (*real)(const char *, const char *, unsigned int, const char *) = cg_real___assert_fail();
    if (real)
        real(assertion, file, line, function);
    abort();
}
#endif
