/* CGPROF_CRASH=1 (service layer): the profile written when the program
 * dies of a fatal signal. */
#ifndef CG_CRASH_H
#define CG_CRASH_H

#include <signal.h>

/* Installs the handlers for the fatal signals that have their default
 * action (an action the program or another library set stays). Nothing
 * unless CGPROF_CRASH=1. */
void cg_crash_install(void);
/* While our handler holds sig: 1, with the action the program would see
 * (SIG_DFL) in *view; else 0. A program that sets an action for sig
 * replaces ours (claimed: called by the sigaction and signal wrappers
 * before the change). */
int cg_crash_signal_view(int sig, struct sigaction *view);
void cg_crash_signal_claimed(int sig);

/* With CGPROF_CRASH=1, the calling thread gets an alternate signal stack
 * (unless it has one), so that a stack overflow can be handled; called by
 * each thread as it starts, the main thread by the constructor. Its end
 * unmaps it. Async-signal-safe (syscalls only). */
void cg_crash_thread_start(void);
void cg_crash_thread_end(void);

#endif
