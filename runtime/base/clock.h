/* The time source of the hot path: nanoseconds.
 *
 * Where the CPU has an invariant counter the time is that counter scaled by
 * a factor calibrated once at start-up against CLOCK_MONOTONIC: on x86-64
 * the TSC where it is invariant (CPUID 0x80000007 EDX bit 8: constant rate,
 * keeps running in deep C-states), RDTSC (about 11 ns on the KVM guests we
 * measure on); on aarch64 the generic timer's virtual counter, CNTVCT_EL0,
 * always constant-rate (the arch header, cpu.h, says why it and not
 * clock_gettime). The code calls either "the TSC" (CGPROF_CLOCK=tsc).
 * Anywhere else it is CLOCK_MONOTONIC itself (about 27 ns through the
 * vDSO on x86-64).
 *
 * Timestamps are converted on the hot path, not durations at dump time:
 * every cost is then a sum of differences of the same nanosecond timestamps,
 * so costs add up exactly (a call's inclusive time is its self time plus its
 * callees', to the nanosecond) instead of carrying a rounding per entry. The
 * conversion is one 64x64->128 multiply. */
#ifndef CG_CLOCK_H
#define CG_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "compiler.h"
#include "cpu.h"

#define CG_HAVE_TSC CG_CPU_HAVE_COUNTER

/* In the order of CGPROF_CLOCK's accepted values (options.inc): the parsed
 * index is the kind. */
enum cg_clock_kind { CG_CLOCK_AUTO, CG_CLOCK_TSC, CG_CLOCK_MONOTONIC };

/* Set once by cg_clock_init(), read by every hook. */
extern int cg_clock_use_tsc;
extern uint64_t cg_tsc_base; /* TSC value that is time 0 */
extern uint64_t cg_tsc_mult; /* nanoseconds per TSC tick, 32.32 fixed point */
extern int cg_tsc_stated;    /* cg_tsc_mult is the rate the CPU states (aarch64's CNTFRQ_EL0), not measured */

/* Chooses the source (kind: what the user asked for; AUTO picks the TSC when
 * it is invariant) and calibrates it, spinning for about a millisecond.
 * Returns the kind in use; *why explains a refusal of TSC when it was asked
 * for (or is NULL). */
enum cg_clock_kind cg_clock_init(enum cg_clock_kind kind, const char **why);

/* TSC ticks per microsecond as calibrated (0 when the TSC is not used). */
double cg_clock_tsc_mhz(void);

__extension__ typedef unsigned __int128 cg_u128;

static inline CG_NOINSTR uint64_t cg_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline CG_NOINSTR uint64_t cg_tsc_to_ns(uint64_t tsc)
{
    return (uint64_t)(((cg_u128)(tsc - cg_tsc_base) * cg_tsc_mult) >> 32);
}

static inline CG_HOT uint64_t cg_clock_now(void)
{
#if CG_HAVE_TSC
    if (cg_likely(cg_clock_use_tsc))
        return cg_tsc_to_ns(cg_cpu_counter());
#endif
    return cg_mono_ns();
}

#endif
