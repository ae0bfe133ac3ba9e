/* A profiler preloaded with cgprof, as gperftools' libprofiler is: at
 * start-up it refuses to run if SIGPROF has an action already, else takes
 * it with ITIMER_PROF; at exit it says which, and how many samples it got
 * (tests/integration/test_guest.py builds it, not instrumented). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
static volatile int got; static int refused;
static void on_prof(int s){(void)s;got++;}
__attribute__((constructor)) static void start(void){
  struct sigaction old; sigaction(SIGPROF,NULL,&old);
  if (old.sa_handler != SIG_DFL) { refused = 1; return; }
  struct sigaction sa; memset(&sa,0,sizeof sa); sa.sa_handler=on_prof; sa.sa_flags=SA_RESTART; sigaction(SIGPROF,&sa,0);
  struct itimerval it={{0,1000},{0,1000}}; setitimer(ITIMER_PROF,&it,0);}
__attribute__((destructor)) static void stop(void){ fprintf(stderr, "fakeprof: %s, %d samples\n", refused ? "refused (SIGPROF in use)" : "ran", got); }
