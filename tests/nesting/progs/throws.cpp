// Exceptions thrown across instrumented frames. gcc calls the exit hooks
// while it unwinds (the hooks nest); clang does not, and the runtime must
// find the frames left. catch_once: thrown across 10 frames, caught, then
// another function called from the catching frame (issue 12: clang showed
// a call thrower -> catch_once per throw). Also a throw out of a helper
// inlined into the catching function, and a rethrow.
#include <cstdio>
#include <stdexcept>

volatile int sink;

__attribute__((noinline)) void thrower(int i)
{
    sink += i;
    throw std::runtime_error("x");
}

__attribute__((noinline)) void down(int n, int i)
{
    if (n == 0)
        thrower(i);
    else
        down(n - 1, i);
    sink += n;
}

__attribute__((noinline)) void after(int i)
{
    sink += i;
}

__attribute__((noinline)) void catch_once(int i)
{
    try {
        down(9, i);
    } catch (const std::exception &) {
        after(i);
    }
}

static void inline_throw(int i)
{
    if (i & 1)
        throw i;
    after(i);
}

__attribute__((noinline)) void catch_inlined(int i)
{
    try {
        inline_throw(i);
    } catch (int) {
        after(-i);
    }
    after(i);
}

__attribute__((noinline)) void rethrows(int i)
{
    try {
        down(2, i);
    } catch (...) {
        after(i);
        throw;
    }
}

__attribute__((noinline)) void outer_catch(int i)
{
    try {
        rethrows(i);
    } catch (const std::exception &) {
        after(i + 1);
    }
}

int main()
{
    for (int i = 0; i < 100; i++) {
        catch_once(i);
        catch_inlined(i);
        outer_catch(i);
    }
    std::printf("throws %d\n", sink);
    return 0;
}
