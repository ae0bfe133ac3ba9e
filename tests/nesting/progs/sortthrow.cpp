// An exception thrown by a comparator out of glibc's qsort (issue 39: a
// C++ comparator that throws through the C library's sort), caught by the
// instrumented function that called qsort. glibc is built with unwind
// tables, so the exception crosses its frames; gcc calls the exit hooks of
// the frames it leaves (the hooks nest), clang does not (the runtime finds
// them left). Each round sorts 32 keys; in odd rounds one key is the
// sentinel, and the comparison that meets it throws. The comparator counts
// its own calls: the program prints them, the number cgprof must count.
#include <cstdio>
#include <cstdlib>

static volatile int sink;
static long compared; // the comparator's calls, counted by itself

__attribute__((noinline)) void after(int i)
{
    sink += i;
}

__attribute__((noinline)) int cmp(const void *a, const void *b)
{
    compared++;
    int x = *(const int *)a, y = *(const int *)b;
    if (x < 0 || y < 0)
        throw x < 0 ? x : y;
    return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_round(int i)
{
    int keys[32];
    for (int k = 0; k < 32; k++)
        keys[k] = (k * 7919 + i * 104729) % 1000;
    if (i & 1)
        keys[(i * 13) % 32] = -1;
    try {
        std::qsort(keys, 32, sizeof keys[0], cmp);
        after(keys[0]);
    } catch (int) {
        after(-i);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
    for (int i = 0; i < rounds; i++)
        sort_round(i);
    std::printf("sortthrow compared %ld\n", compared);
    return 0;
}
