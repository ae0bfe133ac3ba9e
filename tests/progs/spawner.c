/* posix_spawn() and vfork() + exec keep working, and the children (which
 * share, or briefly borrow, the parent's memory) write nothing in the
 * parent's name. Expected: one file, main -> work 2. */
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile unsigned long sink;

static void work(void)
{
    for (int i = 0; i < 20000; i++)
        sink += (unsigned long)i;
}

int main(void)
{
    pid_t a, b;
    int sa = -1, sb = -1;
    char name[] = "true";
    char *argv[] = { name, NULL };
    work();
    if (posix_spawn(&a, "/bin/true", NULL, NULL, argv, environ) == 0)
        waitpid(a, &sa, 0);
    b = vfork();
    if (b == 0) {
        execv("/bin/true", argv);
        _exit(127);
    }
    if (b > 0)
        waitpid(b, &sb, 0);
    work();
    printf("spawner: posix_spawn status %d, vfork status %d\n", WEXITSTATUS(sa), WEXITSTATUS(sb));
    return 0;
}
