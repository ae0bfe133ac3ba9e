/* Runs a command and reports its peak resident set size (scripts/bench).
 * Python cannot measure it itself: a child forked from the interpreter
 * starts with the interpreter's pages, and ru_maxrss keeps that peak
 * across exec. This process is small, so its child's figure is the
 * program's own.
 *
 *   rss COMMAND [ARGS...]   -> last line on stderr: "bench-peak-rss-kb N" */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0)
        return 127;
    fprintf(stderr, "bench-peak-rss-kb %ld\n", ru.ru_maxrss);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
