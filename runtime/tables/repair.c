/* Frames ended without their exit hook (data layer): the shadow stack
 * checked against the real one when a hook's stack pointer shows frames
 * left (cg_resync_slow, a repair counted in `left`), ended by a longjmp or
 * an exception's unwinding (cg_costs_unwind_to/below, counted in
 * `jumped`), and an exit that matches no top frame (cg_exit_mismatch);
 * and the real stack read to tell a real call below the top frame from an
 * inlined one (cg_real_call_below). docs/internals/design.md, "Calls as
 * the hooks see them". */
#include "costs_inlines.h"

#include <errno.h>
#include <signal.h>

int cg_real_call_below(const struct cg_costs *c, uintptr_t site, uintptr_t sp)
{
    return cg_return_address_above(site, sp, c->frames[c->depth - 1].sp);
}

static void pop_left(struct cg_costs *c, uint64_t now)
{
    cg_costs_pop(c, now);
    CG_COUNT(c->left);
}

/* On an alternate signal stack the addresses say nothing about the
 * thread's own stack. */
static int on_alt_stack(void)
{
    int saved = errno;
    stack_t ss;
    int on_alt = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
    errno = saved;
    return on_alt;
}

/* The depth the shadow stack has once the frames that an entry of fn
 * (site, sp, code) shows left are popped:
 *  - below sp, no live frame can be;
 *  - at sp are an inlined call's host and the calls inlined into it, kept;
 *    a frame there was left when its enter hook was called from the same
 *    code (the same inlined call, in the same frame, entered again: the
 *    first one never ended, a function cannot be inside itself at one
 *    place), or when the new call is not an inlined one (its site is not
 *    the host's return address): a real call's frame is below every live
 *    one. */
static uint32_t live_depth_at_entry(const struct cg_costs *c, uintptr_t site, uintptr_t sp, uintptr_t code)
{
    uint32_t d = c->depth;
    while (d > 0 && c->frames[d - 1].sp < sp)
        d--;
    uint32_t at = d;
    while (at > 0 && c->frames[at - 1].sp == sp && cg_frame_code(&c->frames[at - 1]) != code)
        at--;
    if (at > 0 && c->frames[at - 1].sp == sp)
        d = at - 1;
    while (d > 0 && c->frames[d - 1].sp == sp && cg_host_site(c, d - 1) != site)
        d--;
    return d;
}

/* The same for an exit of fn at sp: frames of other functions below sp. */
static uint32_t live_depth_at_exit(const struct cg_costs *c, uintptr_t fn, uintptr_t sp)
{
    uint32_t d = c->depth;
    while (d > 0 && c->frames[d - 1].sp < sp && c->frames[d - 1].fn != fn)
        d--;
    return d;
}

void cg_resync_slow(struct cg_costs *c, uintptr_t fn, uintptr_t site, uintptr_t sp, uintptr_t code, int entering,
                    uint64_t now)
{
    uint32_t d = entering ? live_depth_at_entry(c, site, sp, code) : live_depth_at_exit(c, fn, sp);
    /* Only when there is something to pop is the stack asked (a system
     * call) whether it is an alternate signal stack, where the addresses
     * say nothing about the thread's own stack. */
    if (d == c->depth || on_alt_stack())
        return;
    while (c->depth > d)
        pop_left(c, now);
}

void cg_costs_unwind_to(struct cg_costs *c, uint32_t depth, uint64_t now)
{
    while (c->depth > depth) {
        cg_costs_pop(c, now);
        CG_COUNT(c->jumped);
    }
}

void cg_costs_unwind_below(struct cg_costs *c, uintptr_t sp, uint64_t now)
{
    while (c->depth > 0 && c->frames[c->depth - 1].sp < sp) {
        cg_costs_pop(c, now);
        CG_COUNT(c->jumped);
    }
}

void cg_exit_mismatch(struct cg_costs *c, uintptr_t fn, uint64_t now)
{
    /* The exit of a function that is not on top: frames above it were left
     * without an exit hook (longjmp, an exception through code that does not
     * call the exit hook). Pop them as ending now, then the function. An exit
     * that matches no frame at all is dropped and counted. */
    uint32_t d = c->depth;
    while (d > 0 && c->frames[d - 1].fn != fn)
        d--;
    if (d == 0) {
        CG_COUNT(c->unmatched_exits);
        return;
    }
    while (c->depth >= d)
        cg_costs_pop(c, now);
}
