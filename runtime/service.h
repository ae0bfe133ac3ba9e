/* The service thread (service layer): serves the dump signal and
 * cgprof-control's requests, and keeps the status file current. */
#ifndef CG_SERVICE_H
#define CG_SERVICE_H

/* From the library constructor: the thread, the dump signal's handler and
 * the control files. */
void cg_service_start(void);
/* A thread of the program ended: if it was the last (main having called
 * pthread_exit), the service thread ends first, or the process would never
 * exit. */
void cg_service_thread_gone(void);
/* The program sets its own action for signal sig: if it is the dump
 * signal, cgprof steps aside (says so once). Returns whether it was. */
int cg_service_signal_claimed(int sig);
/* In a forked child: a service thread of its own (a daemon forks and its
 * child is the server), with its own control files; it inherits the signal
 * handler. */
void cg_service_forked(void);

#endif
