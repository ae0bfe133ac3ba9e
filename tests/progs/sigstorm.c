/* Signals fired every 20 us during instrumented work, with a handler that
 * calls instrumented functions: a hook re-entered from a handler that
 * interrupted a hook must return at once and leave the tables intact.
 * Expected: main -> leaf exactly N times; on_signal and on_signal ->
 * handler_work exactly as many times as signals were delivered (those that
 * land inside a hook too: their hooks are replayed when it ends). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t delivered;
static volatile unsigned long sink;

static unsigned long handler_work(unsigned long x)
{
    return x * 2654435761u;
}

static void on_signal(int sig)
{
    (void)sig;
    delivered++;
    sink += handler_work((unsigned long)delivered);
}

static unsigned long leaf(unsigned long i)
{
    return i ^ (i >> 3);
}

/* Runs at least n calls of leaf, in blocks of 10,000, and on until at least
 * `want` signals were delivered; prints how many calls it made. */
int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 3000000;
    long want = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    /* the timer's period in us (default 20) */
    long us = argc > 3 ? strtol(argv[3], NULL, 10) : 20;
    struct itimerval it = { { 0, us }, { 0, us } };
    setitimer(ITIMER_REAL, &it, NULL);
    unsigned long acc = 0, calls = 0;
    while (calls < n || delivered < want) {
        for (unsigned long i = 0; i < 10000; i++)
            acc += leaf(i);
        calls += 10000;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    printf("sigstorm: %lu calls, %d signals delivered, acc %lu\n", calls, (int)delivered, acc);
    return 0;
}
