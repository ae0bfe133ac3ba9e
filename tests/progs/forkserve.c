/* A daemon-like fork: the child, which does not exec, is the long-running
 * one and must answer the dump signal under its own pid.
 * Prints the child's pid first; the child works ~0.8 s.
 * Expected (child, all parts together): main -> work 400. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(void)
{
    for (int i = 0; i < 2000; i++)
        sink += (unsigned long)i;
}

int main(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 400; i++) {
            work();
            usleep(2000);
        }
        return 0;
    }
    printf("forkserve: child %d\n", (int)pid);
    fflush(stdout);
    int status;
    waitpid(pid, &status, 0);
    return WEXITSTATUS(status);
}
