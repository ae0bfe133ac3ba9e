/* Runs a command and writes the CPU time it took to a file
 * (tests/bench/realprogs.py). Run under `perf record`, it separates the
 * program's CPU time from perf's: the rusage that perf's parent gets holds
 * both, this process's child is the program alone. Its stdin, stdout and
 * stderr are the command's.
 *
 *   cputime FILE COMMAND [ARGS...]   -> FILE: "USER_US SYS_US" */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0)
        return 127;
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%ld %ld\n", (long)ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
                      (long)ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec) < 0 || fclose(f))
        return 127;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
