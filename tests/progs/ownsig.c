/* A program with its own handler for SIGUSR1 (the default dump signal):
 * cgprof must step aside, say so once, and the program's handler must get
 * every signal. Expected: "handled 3". */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
    (void)sig;
    handled++;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < 3; i++)
        raise(SIGUSR1);
    printf("ownsig: handled %d\n", (int)handled);
    return 0;
}
