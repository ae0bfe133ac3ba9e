/* The one table of the real functions that libcgprof.so also defines (base
 * layer): the wrappers call through it to the functions they wrap, and the
 * runtime's own calls of those functions (sigaction for its handlers,
 * dlopen for libunwind and the demangler, pthread_create for its service
 * thread) go through it too, never through its own wrappers, which the
 * dynamic linker would otherwise bind them to (the library is first in
 * the lookup order). As uftrace resolves every real function in one place.
 *
 * Each entry is looked up once with dlsym(RTLD_NEXT): at start-up
 * (cg_real_resolve, from the constructor), or at its first use when that
 * comes earlier (a constructor of another library that runs first) or
 * finds nothing yet (the C++ runtime's personality routine, in a library
 * that a dlopen brings later). _Unwind_GetCFA, which the runtime does not
 * define, with RTLD_DEFAULT.
 *
 * The static runtime (CG_STATIC, libcgprof.a) has no dlsym to ask: the
 * real function is __real_NAME, which the linker's -Wl,--wrap=NAME makes
 * the C library's NAME, taken as a weak reference (the column "static"):
 *  - WRAP: only the wrapper calls it, and the wrapper runs only in a
 *    program linked with --wrap=NAME, where __real_NAME is there;
 *  - OWN: the runtime calls it itself: __real_NAME when the program is
 *    linked with the wraps, NAME itself when it is not;
 *  - NONE: nothing to call in a static program (dlopen, dlclose: the
 *    static runtime never loads a library, and does not wrap them);
 *  - WEAK: NAME itself, weakly (_Unwind_GetCFA: linked with the unwinder
 *    of a program that has exceptions). */
#ifndef CG_REAL_H
#define CG_REAL_H

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unwind.h>

#include "compiler.h"

typedef _Unwind_Reason_Code (*cg_personality_fn)(int, _Unwind_Action, _Unwind_Exception_Class,
                                                 struct _Unwind_Exception *, struct _Unwind_Context *);

/* LeakSanitizer's interface (in a program built with -fsanitize=address
 * or =leak): the runtime's per-thread records are mapped memory, which
 * LeakSanitizer does not scan unless told, and they hold the only
 * pointers to some of its heap blocks (thread.c). */
void __lsan_register_root_region(const void *p, size_t size);
void __lsan_unregister_root_region(const void *p, size_t size);

/* X(name, handle, static, return type, parameters) */
#define CG_REAL_TABLE(X)                                                                                       \
    X(sigaction, RTLD_NEXT, OWN, int, (int, const struct sigaction *, struct sigaction *))                     \
    X(signal, RTLD_NEXT, WRAP, sighandler_t, (int, sighandler_t))                                              \
    X(pthread_create, RTLD_NEXT, OWN, int, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))   \
    X(dlopen, RTLD_NEXT, NONE, void *, (const char *, int))                                                    \
    X(dlclose, RTLD_NEXT, NONE, int, (void *))                                                                 \
    X(pipe2, RTLD_NEXT, NONE, int, (int *, int))                                                               \
    X(execve, RTLD_NEXT, WRAP, int, (const char *, char *const[], char *const[]))                              \
    X(execv, RTLD_NEXT, WRAP, int, (const char *, char *const[]))                                              \
    X(execvp, RTLD_NEXT, WRAP, int, (const char *, char *const[]))                                             \
    X(execvpe, RTLD_NEXT, WRAP, int, (const char *, char *const[], char *const[]))                             \
    X(fexecve, RTLD_NEXT, WRAP, int, (int, char *const[], char *const[]))                                      \
    X(execveat, RTLD_NEXT, WRAP, int, (int, const char *, char *const[], char *const[], int))                  \
    X(setjmp, RTLD_NEXT, WRAP, int, (struct __jmp_buf_tag *))                                                  \
    X(_setjmp, RTLD_NEXT, WRAP, int, (struct __jmp_buf_tag *))                                                 \
    X(__sigsetjmp, RTLD_NEXT, WRAP, int, (struct __jmp_buf_tag *, int))                                        \
    X(longjmp, RTLD_NEXT, WRAP, void, (struct __jmp_buf_tag *, int))                                           \
    X(_longjmp, RTLD_NEXT, WRAP, void, (struct __jmp_buf_tag *, int))                                          \
    X(siglongjmp, RTLD_NEXT, WRAP, void, (struct __jmp_buf_tag *, int))                                        \
    X(__longjmp_chk, RTLD_NEXT, WRAP, void, (struct __jmp_buf_tag *, int))                                     \
    X(__gxx_personality_v0, RTLD_NEXT, WRAP, _Unwind_Reason_Code,                                              \
      (int, _Unwind_Action, _Unwind_Exception_Class, struct _Unwind_Exception *, struct _Unwind_Context *))    \
    X(__gcc_personality_v0, RTLD_NEXT, WRAP, _Unwind_Reason_Code,                                              \
      (int, _Unwind_Action, _Unwind_Exception_Class, struct _Unwind_Exception *, struct _Unwind_Context *))    \
    X(_Unwind_GetCFA, RTLD_DEFAULT, WEAK, _Unwind_Word, (struct _Unwind_Context *))                            \
    X(__lsan_register_root_region, RTLD_DEFAULT, WEAK, void, (const void *, size_t))                           \
    X(__lsan_unregister_root_region, RTLD_DEFAULT, WEAK, void, (const void *, size_t))                         \
    X(vfork, RTLD_NEXT, WRAP, pid_t, (void))                                                                   \
    X(sigwait, RTLD_NEXT, WRAP, int, (const sigset_t *, int *))                                                \
    X(__assert_fail, RTLD_NEXT, NONE, void, (const char *, const char *, unsigned int, const char *))         \
    X(sigwaitinfo, RTLD_NEXT, WRAP, int, (const sigset_t *, siginfo_t *))                                      \
    X(sigtimedwait, RTLD_NEXT, WRAP, int, (const sigset_t *, siginfo_t *, const struct timespec *))            \
    X(signalfd, RTLD_NEXT, WRAP, int, (int, const sigset_t *, int))                                           \
    X(unshare, RTLD_NEXT, WRAP, int, (int))                                                                    \
    X(setns, RTLD_NEXT, WRAP, int, (int, int))                                                                 \
    X(setuid, RTLD_NEXT, WRAP, int, (uid_t))                                                                   \
    X(setgid, RTLD_NEXT, WRAP, int, (gid_t))                                                                   \
    X(seteuid, RTLD_NEXT, WRAP, int, (uid_t))                                                                  \
    X(setegid, RTLD_NEXT, WRAP, int, (gid_t))                                                                  \
    X(setreuid, RTLD_NEXT, WRAP, int, (uid_t, uid_t))                                                          \
    X(setregid, RTLD_NEXT, WRAP, int, (gid_t, gid_t))                                                          \
    X(setresuid, RTLD_NEXT, WRAP, int, (uid_t, uid_t, uid_t))                                                  \
    X(setresgid, RTLD_NEXT, WRAP, int, (gid_t, gid_t, gid_t))                                                  \
    X(setgroups, RTLD_NEXT, WRAP, int, (size_t, const gid_t *))

struct cg_real {
#define CG_REAL_FIELD(name, handle, kind, ret, params) ret(*fn_##name) params;
    CG_REAL_TABLE(CG_REAL_FIELD)
#undef CG_REAL_FIELD
};

extern struct cg_real cg_real;

/* Looks up every entry still unknown. */
void cg_real_resolve(void);

/* cg_real_NAME(): the real function, looked up now if it is not yet known;
 * NULL when the process has none. */
#define CG_REAL_GETTER(name, handle, kind, ret, params)                                                             \
    static inline ret(*cg_real_##name(void)) params                                                           \
    {                                                                                                        \
        ret(*f) params = __atomic_load_n(&cg_real.fn_##name, __ATOMIC_ACQUIRE);                               \
        if (cg_unlikely(!f)) {                                                                               \
            cg_real_resolve();                                                                               \
            f = __atomic_load_n(&cg_real.fn_##name, __ATOMIC_ACQUIRE);                                       \
        }                                                                                                    \
        return f;                                                                                            \
    }
CG_REAL_TABLE(CG_REAL_GETTER)
#undef CG_REAL_GETTER

/* The address of a real function as a data pointer (the setjmp stubs jump
 * to it). */
void *cg_real_setjmp_target(int which);

#endif
