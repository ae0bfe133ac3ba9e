/* The program of issue 12: inlined helpers (is_valid, block) that make real
 * calls (get_kind) from two hosts (pop, main). Expected, whatever the
 * compiler inlined: main -> push 100,000, main -> pop 100,000,
 * pop -> block 100,000, pop -> pop_block 100,000, pop -> is_valid 100,000,
 * main -> is_valid 100,000, is_valid -> get_kind 200,000. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int kind;
    int v;
} jv;

__attribute__((noinline)) int get_kind(jv x)
{
    return x.kind;
}

static int is_valid(jv x)
{
    return get_kind(x) != 0;
}

static int *stk;
static int top;

static int block(int t)
{
    return stk[t - 1];
}

__attribute__((noinline)) int pop_block(int t)
{
    return t - 1;
}

__attribute__((noinline)) jv pop(void)
{
    jv val = { 1, block(top) };
    top = pop_block(top);
    assert(is_valid(val));
    return val;
}

__attribute__((noinline)) void push(int v)
{
    stk[top++] = v;
}

int main(void)
{
    stk = malloc(1000 * sizeof *stk);
    long s = 0;
    for (int r = 0; r < 10000; r++) {
        for (int i = 0; i < 10; i++)
            push(i);
        for (int i = 0; i < 10; i++) {
            jv x = pop();
            if (is_valid(x))
                s += x.v;
        }
    }
    printf("%ld\n", s);
    free(stk);
    return 0;
}
