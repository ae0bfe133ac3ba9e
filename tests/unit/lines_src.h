/* Code of a header, inlined or not: rows of a second file in the units that
 * include it (test_lines). */
static inline int lines_src_twice(int x)
{
    return 2 * x + (x > 3);
}
