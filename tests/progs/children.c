/* The programs a program starts, and CGPROF_TRACE_CHILDREN.
 *   children          runs itself as "children child" three ways: system()
 *                     (through sh), posix_spawn(), fork() + execv(); then
 *                     forks a child that runs work() and exits; each
 *                     process prints the LD_PRELOAD it sees.
 *   children child    work(), and its LD_PRELOAD.
 * Expected (each process that runs the runtime): main -> work 1. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile unsigned long sink;

static void work(void)
{
    for (int i = 0; i < 20000; i++)
        sink += (unsigned long)i;
}

static void show(const char *who)
{
    const char *v = getenv("LD_PRELOAD");
    printf("%s: LD_PRELOAD=%s\n", who, v ? v : "(unset)");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    work();
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        show(argc > 2 ? argv[2] : "child");
        return 0;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 2;
    self[n] = '\0';
    show("parent");

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' child system", self);
    if (system(cmd) != 0)
        return 3;

    char child[] = "child", how[] = "posix_spawn";
    char *args[] = { self, child, how, NULL };
    pid_t pid;
    int status;
    if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0 || waitpid(pid, &status, 0) != pid || status != 0)
        return 4;

    char how2[] = "execv";
    char *args2[] = { self, child, how2, NULL };
    pid = fork();
    if (pid == 0) {
        execv(self, args2);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
        return 5;

    pid = fork();
    if (pid == 0) {
        work();
        show("fork");
        exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
        return 6;
    return 0;
}
