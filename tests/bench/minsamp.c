/* The floor of counting calls exactly, for scripts/bench: what any runtime
 * that counts every arc (caller, call site, callee) must at least do per
 * call, with no clock at all: a re-entry guard, one hash lookup of the arc
 * at entry, a frame pushed (function, stack pointer, arc), the count at
 * exit. Fixed sizes, no growth, no names, no dump. cgprof's sampled mode
 * does this and more (re-synchronisation, skipped and inlined calls, the
 * positions the sampler charges); its target in issue 5 is 2x gprof. */
#include <stdint.h>
#include <stddef.h>
struct arc { uintptr_t caller, site, callee; uint64_t count; };
struct frame { uintptr_t fn, sp; uint32_t arc; };
struct th { volatile int guard; uint32_t depth; struct frame f[4096]; struct arc arcs[4096]; uint32_t idx[8192]; uint32_t narcs; };
static __thread struct th T __attribute__((tls_model("initial-exec")));
__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
    struct th *t = &T;
    if (t->guard) return;
    t->guard = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uintptr_t caller = t->depth ? t->f[t->depth - 1].fn : 0;
    uint64_t h = ((uintptr_t)site * 0x9e3779b97f4a7c15u) ^ ((uintptr_t)fn * 0xc2b2ae3d27d4eb4fu);
    uint32_t i = (uint32_t)(h ^ (h >> 31));
    for (;; i++) {
        uint32_t s = t->idx[i & 8191];
        if (!s) { s = ++t->narcs; t->arcs[s] = (struct arc){ caller, (uintptr_t)site, (uintptr_t)fn, 0 }; t->idx[i & 8191] = s; }
        struct arc *a = &t->arcs[s];
        if (a->site == (uintptr_t)site && a->callee == (uintptr_t)fn && a->caller == caller) { i = s; break; }
    }
    uint32_t d = t->depth;
    if (d < 4096) { t->f[d].fn = (uintptr_t)fn; t->f[d].sp = (uintptr_t)__builtin_frame_address(0); t->f[d].arc = i; }
    t->depth = d + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->guard = 0;
}
__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    struct th *t = &T;
    if (t->guard) return;
    t->guard = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t d = --t->depth;
    if (d < 4096 && t->f[d].fn == (uintptr_t)fn) t->arcs[t->f[d].arc].count++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->guard = 0;
}
