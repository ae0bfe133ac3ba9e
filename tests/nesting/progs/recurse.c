/* Recursion the compiler may inline into itself (gcc at -O2/-O3 inlines a
 * few levels of a recursive inline function into itself; clang unrolls
 * tail recursion): each inlined level keeps its hooks, in the same frame
 * as the level that holds it, with that level's call site. Also mutual
 * recursion through inlined helpers, and a tree walk. */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

__attribute__((noinline)) void visit(int x)
{
    sink += x;
}

static inline int fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

static inline int sum_down(int n)
{
    if (n == 0)
        return 0;
    visit(n);
    return n + sum_down(n - 1);
}

static int is_odd(int n);

static inline int is_even(int n)
{
    if (n == 0)
        return 1;
    visit(n);
    return is_odd(n - 1);
}

static int is_odd(int n)
{
    if (n == 0)
        return 0;
    return is_even(n - 1);
}

struct node {
    struct node *l, *r;
    int v;
};

static struct node *build(int depth, int *next)
{
    if (depth == 0)
        return NULL;
    struct node *n = malloc(sizeof *n);
    n->v = (*next)++;
    n->l = build(depth - 1, next);
    n->r = build(depth - 1, next);
    return n;
}

static long walk(const struct node *n)
{
    if (!n)
        return 0;
    visit(n->v);
    return n->v + walk(n->l) + walk(n->r);
}

static void release(struct node *n)
{
    if (!n)
        return;
    release(n->l);
    release(n->r);
    free(n);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    long s = fib(n);
    for (int i = 0; i < 200; i++)
        s += sum_down(i) + is_even(i);
    int next = 0;
    struct node *t = build(12, &next);
    for (int i = 0; i < 10; i++)
        s += walk(t);
    release(t);
    printf("recurse %ld\n", s);
    return 0;
}
