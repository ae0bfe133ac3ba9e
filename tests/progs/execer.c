/* exec(): what the image collected is written before it is replaced; a
 * failed exec changes nothing for the program.
 * Expected: part 1 (failed exec of /nonexistent): main -> work 3
 *           part 2 (exec of itself):             main -> work 1
 *           part 3 (the new image, at exit):     main -> work 2
 *
 *   execer                  the new image is /proc/self/exe
 *   execer EMULATOR [ARG]   the new image is EMULATOR (a full path) run
 *                           with ARG..., this program's path and "child":
 *                           under qemu-user without binfmt_misc the kernel
 *                           cannot exec an emulated program itself, so the
 *                           tests give the emulator, which runs the new
 *                           image in the same process as the kernel would */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;

static void work(void)
{
    for (int i = 0; i < 20000; i++)
        sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        work();
        work();
        printf("execer: child image done\n");
        return 0;
    }
    for (int i = 0; i < 3; i++)
        work();
    char name[] = "nonexistent", child[] = "child";
    char *bad[] = { name, NULL };
    int rc = execv("/nonexistent/program", bad);
    printf("execer: failed exec returned %d\n", rc);
    fflush(stdout);
    work();
    if (argc > 1) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return 2;
        self[n] = '\0';
        char *run[argc + 2];
        for (int i = 1; i < argc; i++)
            run[i - 1] = argv[i];
        run[argc - 1] = self;
        run[argc] = child;
        run[argc + 1] = NULL;
        execv(argv[1], run);
    } else {
        char *again[] = { argv[0], child, NULL };
        execv("/proc/self/exe", again);
    }
    perror("execv");
    return 1;
}
