/* static inline helpers in a header, as libraries ship them: inlined into
 * every file that uses them, with their hooks (gcc's and clang's
 * -finstrument-functions instrument them before inlining). */
#ifndef NEST_HELPERS_H
#define NEST_HELPERS_H

int nest_real_work(int x);

static inline int nest_clamp(int x)
{
    return x < 0 ? 0 : x > 1000 ? 1000 : x;
}

/* An inlined helper that makes a real call. */
static inline int nest_checked(int x)
{
    return nest_real_work(nest_clamp(x));
}

#endif
