/* The reference runtime of scripts/bench: the floor for exact timing.
 * Per call it reads the TSC twice (entry, exit), keeps a fixed-size stack
 * of entry times and bumps one arc's counter and cost. No names, no tables,
 * no dump: what any exact per-call timer must at least do. */
#include <stdint.h>
#include <x86intrin.h>

#define DEPTH 4096

struct ref_thread {
    uint64_t stack[DEPTH];
    uint32_t depth;
    uint64_t count, cost;
};

static __thread struct ref_thread ref __attribute__((tls_model("initial-exec")));

__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)fn;
    (void)site;
    uint32_t d = ref.depth;
    if (d < DEPTH)
        ref.stack[d] = __rdtsc();
    ref.depth = d + 1;
}

__attribute__((visibility("default"), no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
    uint32_t d = --ref.depth;
    if (d < DEPTH) {
        ref.count++;
        ref.cost += __rdtsc() - ref.stack[d];
    }
}
