/* gcc's deferred pop (-fdefer-pop, on from -O1): after a call with
 * arguments on the stack (more than six), gcc leaves them there until a
 * later point, so the enter hook of a function inlined right after is
 * called with the stack pointer below its host's (seen in SQLite:
 * sqlite3VdbeAddOp2 inlined into sqlite3RefillIndex after
 * sqlite3GenerateIndexKey's eight arguments). It is still inlined into the
 * host: host -> inl, inl -> leaf. And a recursive call made from the
 * instruction that made the caller's own call (walk calling itself) has
 * the same call site as its caller and a lower stack pointer: it is a real
 * call. */
#include <stdio.h>
volatile int sink;
__attribute__((noinline)) int leaf(int x) { sink += x; return x; }
static int inl(int x) { return leaf(x) + 1; }
__attribute__((noinline)) void many(int a, int b, int c, int d, int e, int f, int g, int h)
{ sink += a + b + c + d + e + f + g + h; }
__attribute__((noinline)) int host(int x)
{
    many(x, 1, 2, 3, 4, 5, 6, 7);
    int s = inl(x);
    many(s, x, 2, 3, 4, 5, 6, 7);
    return s + inl(s);
}
struct node {
    struct node *kid[2];
    int nkids, v;
};

/* Two recursive calls from one call instruction (a loop over the
 * children), like SQLite's walkExpr: each inner walk's call site is its
 * caller's. */
__attribute__((noinline)) int walk(const struct node *n)
{
    int s = leaf(n->v);
    for (int k = 0; k < n->nkids; k++)
        s += walk(n->kid[k]);
    return s;
}

static struct node tree[63];

int main(void)
{
    for (int i = 0; i < 63; i++) {
        tree[i].v = i;
        tree[i].kid[0] = 2 * i + 1 < 63 ? &tree[2 * i + 1] : 0;
        tree[i].kid[1] = 2 * i + 2 < 63 ? &tree[2 * i + 2] : 0;
        tree[i].nkids = 2 * i + 2 < 63 ? 2 : 0;
    }
    int s = 0;
    for (int i = 0; i < 1000; i++)
        s += host(i) + walk(&tree[i % 3]);
    printf("%d\n", s);
    return 0;
}
