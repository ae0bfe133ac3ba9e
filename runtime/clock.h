/* The time source of the hot path.
 *
 * Costs are kept in raw ticks and converted to nanoseconds only when a
 * snapshot is taken, so the hooks never multiply or divide. Where the CPU has
 * an invariant TSC (CPUID 0x80000007 EDX bit 8: constant rate, keeps running
 * in deep C-states) one tick is one TSC cycle, read with RDTSC (about 11 ns
 * on the KVM guests we measure on). Anywhere else a tick is one nanosecond of
 * CLOCK_MONOTONIC (about 27 ns through the vDSO). */
#ifndef CG_CLOCK_H
#define CG_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "compiler.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CG_HAVE_TSC 1
#else
#define CG_HAVE_TSC 0
#endif

enum cg_clock_kind { CG_CLOCK_AUTO, CG_CLOCK_TSC, CG_CLOCK_MONOTONIC };

/* Set once by cg_clock_init(), read by every hook. */
extern int cg_clock_use_tsc;

/* Chooses the source (kind: what the user asked for; AUTO picks the TSC when
 * it is invariant) and records the calibration anchor. Returns the kind in
 * use; *why explains a refusal of TSC when it was asked for (or NULL). */
enum cg_clock_kind cg_clock_init(enum cg_clock_kind kind, const char **why);

/* Nanoseconds per tick as the fraction num/den, calibrated over the whole run
 * so far against CLOCK_MONOTONIC (the longer the run, the better). */
void cg_clock_ratio(uint64_t *num, uint64_t *den);

/* Ticks -> nanoseconds with the ratio from cg_clock_ratio(). Rounds down, so
 * the converted parts of a sum never exceed the converted sum. */
__extension__ typedef unsigned __int128 cg_u128;

static inline CG_NOINSTR uint64_t cg_ticks_to_ns(uint64_t ticks, uint64_t num, uint64_t den)
{
    return (uint64_t)((cg_u128)ticks * num / den);
}

static inline CG_NOINSTR uint64_t cg_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline CG_HOT uint64_t cg_clock_now(void)
{
#if CG_HAVE_TSC
    if (cg_likely(cg_clock_use_tsc))
        return __rdtsc();
#endif
    return cg_mono_ns();
}

#endif
