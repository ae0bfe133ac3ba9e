/* An uninstrumented library, stripped of its symbol table in the build
 * (.dynsym and .eh_frame stay, as in a distribution's libraries without
 * their debug files): its static walk() calls back into the program. */
#include <stddef.h>

__attribute__((noinline)) static int walk(int (*cb)(int), int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += cb(i);
    return sum;
}

int cbstrip_for_each(int (*cb)(int), int n);

int cbstrip_for_each(int (*cb)(int), int n)
{
    return walk(cb, n) + 1;
}
