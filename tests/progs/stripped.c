/* Callbacks from a stripped, uninstrumented library (its path in argv[1]):
 * their call sites are in a function with no symbol, which must still be one
 * function (named by its start address), called from main.
 * Expected: (unnamed function in libcbstrip) -> visit 10. */
#include <dlfcn.h>
#include <stdio.h>

static int visit(int i)
{
    return i * i;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*for_each)(int (*)(int), int);
    *(void **)&for_each = dlsym(h, "cbstrip_for_each");
    printf("stripped: %d\n", for_each(visit, 10));
    return 0;
}
