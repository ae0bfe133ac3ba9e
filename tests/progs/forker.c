/* fork(): the child counts from the fork, under its own pid, and keeps its
 * shadow stack (main is still running in both).
 * Expected: parent main -> work 4; child main -> work 2.
 * "forker thread": first a thread runs work once and ends (before the fork:
 * its part is the parent's alone). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(int n)
{
    for (int i = 0; i < 1000 * n; i++)
        sink += (unsigned long)i;
}

static void *ended(void *arg)
{
    (void)arg;
    work(1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "thread") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, ended, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 1;
    }
    for (int i = 0; i < 3; i++)
        work(i);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        work(1);
        work(2);
        printf("forker: child %d done\n", (int)getpid());
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    work(3);
    printf("forker: parent %d, child %d exited %d\n", (int)getpid(), (int)pid, WEXITSTATUS(status));
    return 0;
}
