/* longjmp with inlining: a setjmp in a host, a longjmp from a real
 * function called from a helper inlined into it, in a loop that enters the
 * same inlined helper again in the same frame; a longjmp across 10 frames;
 * a siglongjmp. The hooks of such a program do not nest (no exit for the
 * frames left): only the calls per function are compared with the oracle,
 * and the arcs with what the program does by construction. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
volatile int sink;

__attribute__((noinline)) void bail(int i)
{
    sink += i;
    if (i % 3 == 0)
        longjmp(env, 1);
}

__attribute__((noinline)) void deeper(int n, int i)
{
    if (n == 0)
        bail(i);
    else
        deeper(n - 1, i);
    sink++;
}

static void helper(int i)
{
    bail(i); /* a real call from inlined code */
    sink--;
}

__attribute__((noinline)) void after(int i)
{
    sink += i;
}

__attribute__((noinline)) int host(int n)
{
    int caught = 0;
    for (volatile int i = 0; i < n; i++) {
        if (setjmp(env) == 0)
            helper(i);
        else
            caught++;
        after(i);
    }
    return caught;
}

__attribute__((noinline)) int far(int n)
{
    int caught = 0;
    for (volatile int i = 0; i < n; i++) {
        if (setjmp(env) == 0)
            deeper(9, i);
        else
            caught++;
        after(i);
    }
    return caught;
}

int main(int argc, char **argv)
{
    int n = 0; /* not atoi: clang inlines glibc's, hooks and all */
    for (const char *d = argc > 1 ? argv[1] : "300"; *d >= '0' && *d <= '9'; d++)
        n = 10 * n + (*d - '0');
    int c = host(n) + far(n);
    printf("jumps %d\n", c);
    return 0;
}
