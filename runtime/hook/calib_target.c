/* The function the overhead compensation is calibrated on (calibrate.c),
 * twice: instrumented by the compiler itself (this file is the runtime's
 * one file built with -finstrument-functions), so that its hooks are
 * called as a program's are, with the arguments kept across the enter
 * hook as the compiler keeps them; and plain
 * (no_instrument_function), the same code without them. A small function
 * with arguments, as most are: a double kept across a call costs a spill
 * (no vector register survives a call). */
#include "calib_target.h"

/* The hooks the compiler calls here are the calibration's twin of the
 * runtime's (calib_hooks.h), not the exported names: those may be bound to
 * another library's hooks (a second profiler, or tests/nesting's oracle,
 * preloaded first), which would then count the calibration's calls. gcc
 * takes the assembler names of its hooks from these declarations; clang
 * calls the standard names whatever they say, and its object's are
 * renamed after it (runtime/meson.build). The calls are then direct, not
 * through the PLT. */
void __cyg_profile_func_enter(void *fn, void *site) __asm__("cg_calib_enter");
void __cyg_profile_func_exit(void *fn, void *site) __asm__("cg_calib_exit");

double cg_calib_hooked(double a, int i)
{
    return a * 0.5 + i;
}

__attribute__((no_instrument_function)) double cg_calib_plain(double a, int i)
{
    return a * 0.5 + i;
}
