// C++ as users write it: templates instantiated for several types, lambdas
// called through std::function, a comparator inlined into std::sort (whose
// own template code is instrumented too), small inline methods, and
// exceptions thrown from inlined code and caught a few frames up.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

volatile int sink;

__attribute__((noinline)) int real_work(int x)
{
    sink += x;
    return x ^ 5;
}

template <typename T> struct Box {
    T v;
    T get() const { return v; } // inlined, with its hooks
    T twice() const { return static_cast<T>(real_work(static_cast<int>(get())) * 2); }
};

template <typename T> T sum_boxes(const std::vector<Box<T>> &v)
{
    T s = 0;
    for (const auto &b : v)
        s += b.twice() + b.get();
    return s;
}

static int apply(const std::function<int(int)> &f, int x)
{
    return f(x) + f(x + 1);
}

static void check(int x)
{
    if (x % 97 == 0)
        throw std::runtime_error("bad " + std::to_string(x));
    real_work(x);
}

__attribute__((noinline)) int guarded(int x)
{
    try {
        check(x); // inlined: the throw leaves from the host's frame
        return 1;
    } catch (const std::exception &) {
        return real_work(-x);
    }
}

int main()
{
    std::vector<Box<int>> vi;
    std::vector<Box<double>> vd;
    for (int i = 0; i < 300; i++) {
        vi.push_back(Box<int>{ i });
        vd.push_back(Box<double>{ i * 0.5 });
    }
    long s = 0;
    for (int r = 0; r < 20; r++) {
        s += sum_boxes(vi);
        s += static_cast<long>(sum_boxes(vd));
    }
    int k = 3;
    auto add = [k](int x) { return real_work(x) + k; };
    auto mul = [&s](int x) { return static_cast<int>(s % 7) * real_work(x); };
    for (int i = 0; i < 500; i++)
        s += apply(add, i) + apply(mul, i);
    std::vector<int> v;
    for (int i = 0; i < 2000; i++)
        v.push_back((i * 7919) % 2003);
    std::sort(v.begin(), v.end(), [](int a, int b) { return real_work(a) < real_work(b) || (a < b && a == b); });
    for (int i = 0; i < 1000; i++)
        s += guarded(i);
    std::printf("templates %ld %d\n", s, v[0]);
    return 0;
}
