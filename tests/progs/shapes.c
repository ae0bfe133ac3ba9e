/* Call shapes whose counts are known by construction (argv[1]):
 *   mutual   is_even/is_odd mutual recursion, 200 rounds of is_even(300)
 *            (150 calls each way a round):
 *            main -> is_even 200, is_even -> is_odd 30000, is_odd -> is_even 30000
 *   thexit   a thread calls pthread_exit() at depth 20:
 *            worker -> dive 1, dive -> dive 19
 *   sigjmp   a handler siglongjmp()s out of 3 instrumented frames, 100 times
 *            (before spin is ever called): main -> attempt 100, attempt ->
 *            on_alarm 100 (a handler shows as called from the function it
 *            interrupted), on_alarm -> in_handler 100, in_handler -> deeper
 *            100; 300 frames left */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile unsigned long sink;

static int is_odd(int n);

static int is_even(int n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

static int is_odd(int n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

static void dive(int depth)
{
    if (depth == 20)
        pthread_exit(NULL);
    if (depth < 20)
        dive(depth + 1);
}

static void *worker(void *arg)
{
    (void)arg;
    dive(1);
    return NULL;
}

static sigjmp_buf env;

static void deeper(void)
{
    siglongjmp(env, 1);
}

static void in_handler(void)
{
    deeper();
}

static void on_alarm(int sig)
{
    (void)sig;
    in_handler();
}

static void spin(void)
{
    for (;;)
        sink++;
}

static void attempt(void)
{
    if (sigsetjmp(env, 1) == 0) {
        raise(SIGALRM);
        spin();
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "mutual";
    if (strcmp(mode, "mutual") == 0) {
        int even = 0;
        for (int i = 0; i < 200; i++)
            even += is_even(300);
        printf("shapes: %d\n", even);
    } else if (strcmp(mode, "thexit") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
        printf("shapes: joined\n");
    } else if (strcmp(mode, "sigjmp") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sigaction(SIGALRM, &sa, NULL);
        for (int i = 0; i < 100; i++)
            attempt();
        printf("shapes: jumped\n");
    }
    return 0;
}
