#include "clock.h"

#if CG_HAVE_TSC
#include <cpuid.h>
#endif

int cg_clock_use_tsc;

/* Calibration anchor: a TSC reading and a CLOCK_MONOTONIC reading taken at
 * the same moment at start-up. */
static uint64_t anchor_ticks, anchor_ns;

static CG_NOINSTR int tsc_is_invariant(void)
{
#if CG_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return 0;
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

/* One simultaneous reading of both clocks: the TSC read sits between two
 * monotonic reads and is matched with their midpoint. */
static CG_NOINSTR void read_pair(uint64_t *ticks, uint64_t *ns)
{
#if CG_HAVE_TSC
    uint64_t a = cg_mono_ns();
    uint64_t t = __rdtsc();
    uint64_t b = cg_mono_ns();
    *ticks = t;
    *ns = a + (b - a) / 2;
#else
    *ticks = *ns = cg_mono_ns();
#endif
}

enum cg_clock_kind cg_clock_init(enum cg_clock_kind kind, const char **why)
{
    *why = NULL;
    int invariant = tsc_is_invariant();
    if (kind == CG_CLOCK_TSC && !invariant) {
        *why = CG_HAVE_TSC ? "this CPU has no invariant TSC" : "this architecture has no TSC";
        kind = CG_CLOCK_MONOTONIC;
    }
    if (kind == CG_CLOCK_AUTO)
        kind = invariant ? CG_CLOCK_TSC : CG_CLOCK_MONOTONIC;
    cg_clock_use_tsc = kind == CG_CLOCK_TSC;
    if (cg_clock_use_tsc)
        read_pair(&anchor_ticks, &anchor_ns);
    return kind;
}

void cg_clock_ratio(uint64_t *num, uint64_t *den)
{
    *num = *den = 1;
    if (!cg_clock_use_tsc)
        return;
    uint64_t ticks, ns;
    read_pair(&ticks, &ns);
    /* A dump within a few microseconds of start-up has too short a baseline;
     * wait until it is at least 1 ms long (rare: only very short runs). */
    while (ns - anchor_ns < 1000000) {
        struct timespec d = { 0, 200000 };
        nanosleep(&d, NULL);
        read_pair(&ticks, &ns);
    }
    *num = ns - anchor_ns;
    *den = ticks - anchor_ticks ? ticks - anchor_ticks : 1;
}
