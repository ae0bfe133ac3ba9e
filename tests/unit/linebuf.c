/* Linked into every unit test: its standard output line-buffered, so that
 * a test that meson ends at its time limit leaves in its log cmocka's
 * "[ RUN      ] test_name" of the test it was in (a pipe's full buffer
 * would be lost with the process). */
#include <stdio.h>

__attribute__((constructor)) static void cg_test_line_buffered(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
}
