/* Built at -O2 with inlining on (tests/progs/meson.build): get_x is inlined
 * into sum_x, and gcc and clang keep its hooks there, in sum_x's frame, with
 * sum_x's own call site. A longjmp out of a function called through a
 * pointer, then a sibling called from the same call instruction in the same
 * frame, must still be found left (see cg_resync_slow).
 * Expected: main -> sum_x 100, sum_x -> get_x 10,000 (no frames left, no
 * unmatched exits); "nest": main -> both 1,000, both -> get_x 2,000 (both
 * and get_x inlined into main: a chain of inlined calls in one frame);
 * "jump": main -> run 20, run -> hop 10, run -> stay 10, and 10 frames of
 * hop left. */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

struct point {
    int x, y;
};

int sum_x(const struct point *v, int n);
void hop(int i);
void stay(int i);
void run(void (*volatile f)(int), int i);

static int get_x(const struct point *p)
{
    return p->x;
}

__attribute__((noinline)) int sum_x(const struct point *v, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += get_x(&v[i]);
    return s;
}

static int both(const struct point *p)
{
    return get_x(p) + get_x(p + 1);
}

static jmp_buf back;
static volatile int sink;

__attribute__((noinline)) void hop(int i)
{
    sink += i;
    longjmp(back, 1);
}

__attribute__((noinline)) void stay(int i)
{
    sink += i;
}

/* Calls f through one call instruction, in one frame, whatever f is. */
__attribute__((noinline)) void run(void (*volatile f)(int), int i)
{
    if (setjmp(back) == 0)
        f(i);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "nest") == 0) {
        struct point pts[2] = { { 1, 2 }, { 3, 4 } };
        long t = 0;
        for (int k = 0; k < 1000; k++)
            t += both(pts);
        printf("inlined: nest %ld\n", t);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "jump") == 0) {
        for (int i = 0; i < 10; i++) {
            run(hop, i);
            run(stay, i);
        }
        printf("inlined: jumps done\n");
        return 0;
    }
    struct point v[100];
    for (int i = 0; i < 100; i++) {
        v[i].x = i;
        v[i].y = -i;
    }
    long total = 0;
    for (int k = 0; k < 100; k++)
        total += sum_x(v, 100);
    printf("inlined: %ld\n", total);
    return 0;
}
