// A C++ exception thrown across 10 instrumented frames and caught, 1000
// times. gcc calls the exit hooks while it unwinds; clang does not, and the
// frames are found left behind at the next hook.
// Expected: main -> level 1000, level -> level 9000, main -> caught 1000.
#include <cstdio>

static volatile unsigned long sink;

static void level(int n)
{
    sink += static_cast<unsigned long>(n);
    if (n == 10)
        throw n;
    level(n + 1);
}

static void caught(int v)
{
    sink += static_cast<unsigned long>(v);
}

int main()
{
    for (int i = 0; i < 1000; i++) {
        try {
            level(1);
        } catch (int v) {
            caught(v);
        }
    }
    std::printf("throws: %lu\n", sink);
    return 0;
}
