#include "clock.h"

int cg_clock_use_tsc;
uint64_t cg_tsc_base;
uint64_t cg_tsc_mult;
int cg_tsc_stated;

static CG_NOINSTR int tsc_is_invariant(void)
{
#if CG_HAVE_TSC
    return cg_cpu_counter_invariant();
#else
    return 0;
#endif
}

#if CG_HAVE_TSC
/* One simultaneous reading of both clocks: the TSC read sits between two
 * monotonic reads and is matched with their midpoint. Readings that took
 * long (an interrupt, a preemption) are taken again. */
static CG_NOINSTR void read_pair(uint64_t *ticks, uint64_t *ns)
{
    for (int i = 0;; i++) {
        uint64_t a = cg_mono_ns();
        uint64_t t = cg_cpu_counter_ordered();
        uint64_t b = cg_mono_ns();
        if (b - a < 2000 || i == 100) {
            *ticks = t;
            *ns = a + (b - a) / 2;
            return;
        }
    }
}
#endif

enum cg_clock_kind cg_clock_init(enum cg_clock_kind kind, const char **why)
{
    *why = NULL;
    cg_tsc_stated = 0;
    int invariant = tsc_is_invariant();
    if (kind == CG_CLOCK_TSC && !invariant) {
        *why = CG_HAVE_TSC ? "this CPU has no invariant TSC" : "this architecture has no TSC";
        kind = CG_CLOCK_MONOTONIC;
    }
    if (kind == CG_CLOCK_AUTO)
        kind = invariant ? CG_CLOCK_TSC : CG_CLOCK_MONOTONIC;
#if CG_HAVE_TSC
    if (kind == CG_CLOCK_TSC) {
        /* 1 ms of calibration: with readings good to a few tens of ns the
         * rate is right to about 1e-4 (0.01%). */
        uint64_t t0, n0, t1, n1;
        read_pair(&t0, &n0);
        do
            read_pair(&t1, &n1);
        while (n1 - n0 < 1000000);
        if (t1 > t0) {
            cg_tsc_mult = (uint64_t)(((cg_u128)(n1 - n0) << 32) / (t1 - t0));
            /* The rate the CPU states, where it has one (aarch64's
             * CNTFRQ_EL0), when the measurement agrees with it to 1%: exact,
             * where the measurement is right to about 1e-4. A stated rate
             * that disagrees is firmware's mistake: the measurement. */
            uint64_t hz = cg_cpu_counter_hz();
            if (hz) {
                uint64_t stated = (uint64_t)(((cg_u128)1000000000u << 32) / hz);
                uint64_t diff = stated > cg_tsc_mult ? stated - cg_tsc_mult : cg_tsc_mult - stated;
                if (diff < cg_tsc_mult / 100) {
                    cg_tsc_mult = stated;
                    cg_tsc_stated = 1;
                }
            }
            /* time 0 a little before now: a core whose TSC lags a few
             * cycles behind must not read a time below zero */
            cg_tsc_base = t0 - (t1 - t0);
            cg_clock_use_tsc = 1;
            return kind;
        }
        kind = CG_CLOCK_MONOTONIC;
    }
#endif
    cg_clock_use_tsc = 0;
    return kind;
}

double cg_clock_tsc_mhz(void)
{
    return cg_clock_use_tsc && cg_tsc_mult ? 1000.0 * 4294967296.0 / (double)cg_tsc_mult : 0.0;
}
