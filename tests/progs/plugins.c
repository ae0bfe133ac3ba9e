/* A plugin loaded, used, unloaded, loaded again (at another address: a
 * library takes its old place meanwhile) and unloaded again before the
 * profile is written at exit.
 * Expected: main -> plugin_work 5 (3 + 2), plugin_work -> plugin_helper 50,
 * all under the plugin's own object, with names and lines. */
#include <dlfcn.h>
#include <stdio.h>

typedef void (*work_fn)(int);

static int use(const char *path, int times, work_fn *out)
{
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return -1;
    }
    work_fn work;
    *(void **)&work = dlsym(h, "plugin_work");
    for (int i = 0; i < times; i++)
        work(10);
    *out = work;
    return dlclose(h);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    work_fn first, second;
    if (use(argv[1], 3, &first) != 0)
        return 1;
    void *filler = dlopen(argv[2], RTLD_NOW); /* takes the plugin's old place */
    if (use(argv[1], 2, &second) != 0)
        return 1;
    if (filler)
        dlclose(filler);
    printf("plugins: loaded at %s addresses\n", first == second ? "the same" : "different");
    return 0;
}
