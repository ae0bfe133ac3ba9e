/* CGPROF_CRASH=1 (service layer): the profile written when the program
 * dies of a fatal signal. */
#ifndef CG_CRASH_H
#define CG_CRASH_H

/* Installs the handlers for the fatal signals that have their default
 * action (an action the program or another library set stays). Nothing
 * unless CGPROF_CRASH=1. */
void cg_crash_install(void);

#endif
