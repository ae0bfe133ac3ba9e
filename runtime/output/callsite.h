/* Call instructions (data layer): the hooks give the return address of a
 * call; Callgrind files name a call by the address of its call instruction
 * (that is where KCachegrind draws the arrow, and its line is the line of
 * the call even when the return address already starts the next line). */
#ifndef CG_CALLSITE_H
#define CG_CALLSITE_H

#include <stddef.h>
#include <stdint.h>

/* The executable segments of the objects loaded: only their bytes are
 * read. */
struct cg_exec_ranges {
    uintptr_t (*v)[2];
    size_t n, cap;
};

/* Fills r with the segments loaded now (r zeroed by the caller). */
void cg_exec_ranges_load(struct cg_exec_ranges *r);
void cg_exec_ranges_free(struct cg_exec_ranges *r);

/* Address of the call instruction that returns to site (a call of callee),
 * or 0 when no call instruction ends there: the frame was not made by a
 * call (a signal handler, "called" by the kernel with libc's sigreturn
 * trampoline as its return address). Where the architecture has no rule
 * (cpu.h: neither x86-64 nor aarch64), site - 1. */
uintptr_t cg_call_instruction(const struct cg_exec_ranges *r, uintptr_t site, uintptr_t callee);

#endif
