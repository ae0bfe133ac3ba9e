/* The service thread (service layer): serves the dump signal and
 * cgprof-control's requests, and keeps the status file current. */
#ifndef CG_SERVICE_H
#define CG_SERVICE_H

#include <signal.h>

/* The dump signal's handler, first thing at start-up (a signal that comes
 * before it ends the program): from the runtime's initialisation, before
 * the clock's calibration and the rest. Does nothing if called again. */
void cg_service_install_handler(void);
/* The initialisation failed: the handler is taken back (the signal's
 * default action again). */
void cg_service_handler_off(void);
/* From the library constructor: the thread and the control files (and the
 * handler, if not yet in). */
void cg_service_start(void);
/* A thread of the program ended: if it was the last (main having called
 * pthread_exit), the service thread ends first, or the process would never
 * exit. */
void cg_service_thread_gone(void);
/* The program sets its own action for signal sig: if it is the dump
 * signal, cgprof steps aside (says so once). Returns whether it was. */
int cg_service_signal_claimed(int sig);
/* Whether sig is the dump signal and its action is still cgprof's; if so,
 * *view is the action the program would see without cgprof (SIG_DFL: the
 * handler goes in only over SIG_DFL). The wrappers of sigaction() and
 * signal() answer the program's queries with it. */
struct sigaction;
int cg_service_signal_view(int sig, struct sigaction *view);
/* The program waits for the signals of set (sigwait, sigwaitinfo,
 * sigtimedwait, signalfd): if the dump signal is one of them, the same. */
int cg_service_signal_awaited(const sigset_t *set);
/* In a forked child: a service thread of its own (a daemon forks and its
 * child is the server), with its own control files; it inherits the signal
 * handler. */
void cg_service_forked(void);
/* The service thread stopped for a moment, so that the process has only
 * the threads the program made: around fork() (a program that forks after
 * joining its threads forks single-threaded, as ThreadSanitizer's child
 * requires), unshare() and setns() (which refuse a multi-threaded caller
 * for a user or mount namespace). Returns whether it was running, for
 * cg_service_resume, which starts it again (in the parent; the child's is
 * cg_service_forked's). A request that arrives meanwhile waits. */
int cg_service_pause(void);
void cg_service_resume(int was_running);

#endif
