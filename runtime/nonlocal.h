/* Non-local exits (longjmp, exception unwinding): see nonlocal.c. */
#ifndef CG_NONLOCAL_H
#define CG_NONLOCAL_H

/* Resolves the C library's setjmp functions, which the stubs jump to: at
 * start-up, from the library's constructor, not in a setjmp that a signal
 * handler makes. */
void cg_nonlocal_init(void);

#endif
