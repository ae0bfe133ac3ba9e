#!/usr/bin/env python3
"""Generates the dump benchmark's program (scripts/bench): N functions in
FILES source files, and a main that calls each through a table (one call
site, N arcs) while each f_i calls f_{i+1} (N more arcs): 2N arcs, N
functions. main then times cgprof_dump() (symbol lookup and writing
included) and prints "dump_ms X".

    gen_wide.py OUTDIR N FILES"""
import os
import sys

out, n, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
per = (n + files - 1) // files
decls = "".join(f"void f{i}(int d);\n" for i in range(n))
with open(os.path.join(out, "wide.h"), "w") as h:
    h.write("extern volatile unsigned long wide_sink;\n" + decls)
for k in range(files):
    with open(os.path.join(out, f"wide{k}.c"), "w") as c:
        c.write('#include "wide.h"\n')
        for i in range(k * per, min(n, (k + 1) * per)):
            nxt = (i + 1) % n
            c.write(f"void f{i}(int d) {{ wide_sink += {i}; if (d) f{nxt}(0); }}\n")
with open(os.path.join(out, "widemain.c"), "w") as c:
    c.write('#include <stdio.h>\n#include <time.h>\n#include <cgprof.h>\n#include "wide.h"\n')
    c.write("volatile unsigned long wide_sink;\n")
    c.write("static void (*const table[])(int) = {\n")
    c.write("".join(f"f{i},\n" for i in range(n)))
    c.write("};\n")
    c.write("""
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
    for (unsigned long i = 0; i < sizeof table / sizeof table[0]; i++)
        table[i](1);
    double t0 = now_ms();
    int rc = cgprof_dump("bench");
    double t1 = now_ms();
    printf("dump_rc %d\\ndump_ms %.3f\\n", rc, t1 - t0);
    return 0;
}
""")
