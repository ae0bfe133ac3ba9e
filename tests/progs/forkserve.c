/* A daemon-like fork: the child, which does not exec, is the long-running
 * one and must answer the dump signal under its own pid.
 * Prints the child's pid (the parent: "forkserve: child PID"); the child
 * prints "forkserve: child working" after its first call of work(), works
 * ~0.8 s, then waits until its stdin (the parent's) ends, so that a signal
 * sent once it works is served whatever the machine's speed.
 * Expected (child, all parts together): main -> work 400. */
#include <errno.h>
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
            if (i == 0) {
                printf("forkserve: child working\n");
                fflush(stdout);
            }
            usleep(2000);
        }
        char buf[64];
        ssize_t n;
        while ((n = read(0, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            ;
        return 0;
    }
    printf("forkserve: child %d\n", (int)pid);
    fflush(stdout);
    int status;
    waitpid(pid, &status, 0);
    return WEXITSTATUS(status);
}
