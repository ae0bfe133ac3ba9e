/* The library's constructor and destructor (entry layer, its top): where
 * the runtime starts in a process that runs no hook before it, handing
 * down the hooks' addresses (hooks.h) as every starter does, and where the
 * last dump is written. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counting.h"
#include "cpu.h"
#include "dump.h"
#include "filter.h"
#include "generalpath.h"
#include "hooks.h"
#include "options.h"
#include "proc.h"
#include "real.h"
#include "runtime.h"
#include "service.h"
#include "takeback.h"
#include "thread.h"
#include "util.h"
#include "desc.inc"

static void on_quick_exit(void);

/* Whether an LD_PRELOAD entry is this runtime: its file name starts with
 * libcgprof.so (a path or a bare name, as ld.so takes either). */
static int names_runtime(const char *entry, size_t n)
{
    const char *base = entry;
    for (size_t i = 0; i < n; i++)
        if (entry[i] == '/')
            base = entry + i + 1;
    size_t len = n - (size_t)(base - entry);
    return len >= 12 && memcmp(base, "libcgprof.so", 12) == 0;
}

/* CGPROF_TRACE_CHILDREN=0: the runtime's entries are taken out of
 * LD_PRELOAD, so that nothing this process starts (exec, posix_spawn, and
 * glibc's own spawns in system() and popen(), which no wrapper sees) loads
 * it: each child of a preloaded build tool paid its start-up. Done in the
 * constructor, before main and its threads: the environment is the
 * process's, and a getenv() of it then sees what the plain run sees. Other
 * entries (a sanitizer's) stay, in their order; none left: unset. */
static void leave_children_out(void)
{
    const char *v = getenv("LD_PRELOAD");
    if (!v)
        return;
    size_t n = strlen(v);
    char *kept = malloc(n + 1);
    if (!kept)
        return;
    size_t k = 0;
    int removed = 0;
    for (const char *p = v; *p;) {
        size_t sep = strspn(p, " :");
        p += sep;
        size_t len = strcspn(p, " :");
        if (!len)
            break;
        if (names_runtime(p, len)) {
            removed = 1;
        } else {
            if (k)
                kept[k++] = ' ';
            memcpy(kept + k, p, len);
            k += len;
        }
        p += len;
    }
    kept[k] = '\0';
    if (removed) {
        int saved = errno;
        if (k)
            setenv("LD_PRELOAD", kept, 1);
        else
            unsetenv("LD_PRELOAD");
        errno = saved;
    }
    free(kept);
}

__attribute__((constructor)) static void cg_constructor(void)
{
#if CG_STATIC
    __asm__ volatile("" : : "r"(cg_static_note));
#endif
    /* the real functions, here rather than at their first use, which may
     * be in a signal handler (a crash) */
    cg_real_resolve();
    if (cg_runtime_ready(&cg_hooks)) {
        if (!cg_opts.trace_children)
            leave_children_out();
        cg_thread_watch_exit();
        at_quick_exit(on_quick_exit);
        if (cg_runtime_services())
            return;
    }
    cg_service_handler_off();
}

/* The last dump, once: from exit() or quick_exit(). Not in a vfork() child
 * that calls exit() instead of _exit(): it runs in its parent's memory, and
 * the profile is the parent's, to be written by the parent (a real fork's
 * child has the pid the runtime knows: cg_proc_forked). */
static void final_dump(const char *trigger)
{
    if (!cg_runtime_started())
        return;
    int saved = errno;
    if (getpid() == cg_proc_pid()) {
        /* exit() from a signal handler that interrupted a hook (a child
         * forked in a handler, a handler that ends the program): that hook
         * never ends, and the calls the handler made, kept until it would,
         * are counted now (issue 39: children forked from a SIGALRM handler
         * wrote every count 0). In a child forked there, the interrupted
         * hook's event was its parent's: no call lost. */
        struct cg_thread *t = cg_self;
        if (t && t->costs.frames && t->guard == CG_GUARD_HOOK) {
            uint64_t lost = t->costs.lost;
            cg_guard_abandon(t);
            if (t->forked_in_hook)
                __atomic_store_n(&t->costs.lost, lost, __ATOMIC_RELAXED);
            if (t->count_ndeferred)
                cg_count_slow(t, 0, 0, 0, 0);
        }
        cg_dump_final(trigger);
        cg_filter_report_exit();
        /* the system refused to let the program's code change (a W^X
         * policy), the architecture has no change a running thread may see
         * for the form (ENOTSUP: aarch64's BLR and BR through the GOT,
         * cpu.h), or none is written for it (ENOSYS): said once, the hooks
         * having done their work meanwhile, when a call would have been
         * taken back */
        struct cg_takeback_stats tb;
        cg_takeback_stats(&tb);
        if (tb.refused && tb.refused_errno == ENOSYS)
            cg_warn("hook calls are not taken back on %s yet: %lu hook call sites kept their hooks, at their "
                    "cost, and the profile is the same (docs/limitations.md; CGPROF_TAKEBACK=0 to not try)",
                    CG_CPU_NAME, tb.refused);
        else if (tb.refused && tb.refused_errno == ENOTSUP)
            cg_warn("could not take back %lu hook call sites (the first at %#lx): on %s a hook called or jumped "
                    "to through the GOT (-fno-plt) is an instruction no thread may change while others run it "
                    "(docs/internals/takeback.md), so their hooks kept being called, at their cost, and the "
                    "profile is the same (build without -fno-plt to take them back; CGPROF_TAKEBACK=0 to not try)",
                    tb.refused, (unsigned long)tb.refused_at, CG_CPU_NAME);
        else if (tb.refused)
            cg_warn("could not take back %lu hook call sites (the first at %#lx: %s): their hooks kept being "
                    "called, at their cost, and the profile is the same (CGPROF_TAKEBACK=0 to not try)",
                    tb.refused, (unsigned long)tb.refused_at, strerror(tb.refused_errno));
        /* Preloaded into every process of a build or a shell pipeline, the
         * runtime meets programs that are not instrumented: silent, unless
         * asked. */
        if (cg_opts.verbose && !cg_thread_attached_ever()) {
            char shown[300];
            cg_warn("pid %ld, %s: not instrumented, no call to __cyg_profile_func_enter: no profile written "
                    "(build it with -finstrument-functions: pkg-config --cflags cgprof)",
                    (long)cg_proc_pid(), CG_QUOTE(shown, cg_proc_cmdline()));
        }
    } else {
        /* Another pid, and not a vfork() child (whose hooks are off: the
         * off sentinel, no tables): a child of a fork that ran no atfork
         * handler, whose tables are its parent's as they were, its own
         * calls added. Said, not silent. */
        struct cg_thread *t = cg_self;
        if (!t || t->costs.frames)
            cg_warn("process %ld was made by a fork that ran no pthread_atfork handler (syscall(SYS_fork), or "
                    "clone() without CLONE_VM): its calls cannot be told from its parent's, and no profile is "
                    "written for it",
                    (long)getpid());
    }
    errno = saved;
}

/* Runs from exit() (return from main, exit() anywhere, or the last thread
 * ending) after the program's atexit handlers and its own destructors. */
__attribute__((destructor)) static void cg_destructor(void)
{
    final_dump(CG_TRIGGER_EXIT);
}

/* quick_exit() runs no destructor, only the at_quick_exit handlers: ours,
 * registered by the constructor, runs after the program's. */
static void on_quick_exit(void)
{
    final_dump(CG_TRIGGER_EXIT " by quick_exit()");
}
