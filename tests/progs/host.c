/* A program built without the hooks, like the shells, compilers and
 * plugin hosts the runtime is preloaded into: what such a process sees of
 * the runtime (nothing, until instrumented code is loaded).
 *
 *   host look         prints what the process can see (below), ends.
 *   host wait         prints "ready", waits for a line on stdin, then does
 *                     as look.
 *   host plugin PATH  prints it, dlopen()s PATH (an instrumented plugin:
 *                     tests/progs/plugin.c) and calls plugin_work(10) three
 *                     times, prints it again, prints "ready", waits for a
 *                     line on stdin, calls plugin_work(10) twice and ends.
 *
 * What it prints, from the kernel's view, not from calls the runtime could
 * answer: the number of threads (/proc/self/task), the signals caught
 * (SigCgt of /proc/self/status), whether an alternate signal stack is set,
 * and its descriptors above 2. */
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_entries(const char *path, int from, int skip)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && atoi(e->d_name) >= from && atoi(e->d_name) != (skip ? dirfd(d) : -1))
            n++;
    closedir(d);
    return n;
}

static void look(const char *when)
{
    char caught[64] = "?";
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "SigCgt:", 7) == 0)
            sscanf(line + 7, "%63s", caught);
    if (f)
        fclose(f);
    stack_t ss;
    int alt = sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE);
    printf("%s: threads %d, signals caught %s, alternate stack %s, descriptors above 2: %d\n", when,
           count_entries("/proc/self/task", 0, 0), caught, alt ? "set" : "none",
           count_entries("/proc/self/fd", 3, 1));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "wait") == 0) {
        printf("ready\n");
        fflush(stdout);
        char in[8];
        if (!fgets(in, sizeof in, stdin))
            return 1;
        mode = "look";
    }
    if (strcmp(mode, "look") == 0) {
        look("at start");
        return 0;
    }
    if (strcmp(mode, "plugin") == 0 && argc > 2) {
        look("before dlopen");
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        void (*work)(int);
        *(void **)&work = dlsym(h, "plugin_work");
        for (int i = 0; i < 3; i++)
            work(10);
        look("after dlopen");
        printf("ready\n");
        fflush(stdout);
        char in[8];
        if (!fgets(in, sizeof in, stdin))
            return 1;
        for (int i = 0; i < 2; i++)
            work(10);
        return 0;
    }
    fprintf(stderr, "usage: host look | wait | plugin PATH\n");
    return 2;
}
