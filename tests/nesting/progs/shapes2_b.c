/* The header's inline helpers in a second file. */
#include "nest_helpers.h"

int other_file(int x);

int other_file(int x)
{
    return nest_checked(x) + nest_clamp(x * 3);
}
