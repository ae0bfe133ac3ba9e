#!/usr/bin/env python3
"""What a preloaded build tool's children pay: a clean build by ninja of
EDGES commands (each `touch $out`, run by ninja through /bin/sh -c: two
processes per command, neither instrumented), side by side in one run:

  plain             no cgprof
  children traced   LD_PRELOAD=libcgprof.so (the default, CGPROF_TRACE_CHILDREN=1):
                    every shell and touch loads the runtime, finds nothing
                    instrumented and stays dormant
  children not      the same with CGPROF_TRACE_CHILDREN=0: the runtime takes
                    itself out of the build tool's LD_PRELOAD, as Valgrind's
                    --trace-children=no

Each with the system's ninja (not instrumented: the runtime stays dormant in
it too) and, when tests/bench/realprogs.py has built one (its cache), an
instrumented ninja (-finstrument-functions, clang): then the build tool
itself is profiled and writes its profile at exit. Wall time of the whole
build, -j2, interleaved, median of R runs (default 5); the ratio to plain;
the added time per process started.

    python3 tests/bench/children.py [--edges N] [--runs R] [--lib PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(ROOT, "build", "runtime", "libcgprof.so")
CACHE = os.environ.get("CGPROF_REALPROG_CACHE", os.path.expanduser("~/.cache/cgprof-realprog"))


def manifest(edges):
    lines = ["rule touch", "  command = touch $out", ""]
    for i in range(edges):
        lines.append("build out/%05d: touch" % i)
    lines += ["build all: phony %s" % " ".join("out/%05d" % i for i in range(edges)), "default all", ""]
    return "\n".join(lines)


def clean_env(extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    e.update(extra)
    return e


def one_build(ninja, directory, env):
    shutil.rmtree(os.path.join(directory, "out"), ignore_errors=True)
    for f in os.listdir(directory):
        if f.startswith(".ninja_") or f.startswith("callgrind."):
            os.unlink(os.path.join(directory, f))
    t = time.perf_counter()
    p = subprocess.run([ninja, "-j2"], cwd=directory, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t
    if p.returncode:
        raise RuntimeError("ninja failed: " + p.stderr[-2000:])
    written = [f for f in os.listdir(directory) if f.startswith("callgrind.out.")]
    return took, len(written)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", type=int, default=1500, help="commands in the build (default 1500)")
    ap.add_argument("--runs", type=int, default=5, help="runs of each configuration (median; default 5)")
    ap.add_argument("--lib", default=LIB, help="the runtime (default: the build tree's)")
    a = ap.parse_args()
    ninjas = []
    if shutil.which("ninja"):
        ninjas.append(("system ninja (not instrumented)", shutil.which("ninja")))
    instr = os.path.join(CACHE, "ninja-build", "build-instr", "ninja")
    if os.access(instr, os.X_OK):
        ninjas.append(("ninja -finstrument-functions", instr))
    if not ninjas:
        sys.exit("children: no ninja (apt-get install ninja-build)")
    configs = [("plain", {}), ("children traced", {"LD_PRELOAD": a.lib}),
               ("children not", {"LD_PRELOAD": a.lib, "CGPROF_TRACE_CHILDREN": "0"})]
    d = tempfile.mkdtemp(prefix="cgprof-children-")
    try:
        with open(os.path.join(d, "build.ninja"), "w") as f:
            f.write(manifest(a.edges))
        print("children: a clean build of %d commands (ninja -j2; each /bin/sh -c touch: %d processes), "
              "median of %d runs, interleaved; load average %.1f" % (a.edges, 2 * a.edges, a.runs,
                                                                     os.getloadavg()[0]))
        for label, ninja in ninjas:
            times = {c: [] for c, _ in configs}
            files = {}
            for _ in range(a.runs):
                for c, extra in configs:
                    t, n = one_build(ninja, d, clean_env(extra))
                    times[c].append(t)
                    files[c] = n
            plain = statistics.median(times["plain"])
            print("\n%s" % label)
            print("  %-16s %9s %8s %14s %14s" % ("", "wall s", "x plain", "ms/process", "profiles"))
            for c, _ in configs:
                m = statistics.median(times[c])
                print("  %-16s %9.3f %8.2f %14s %14d" % (c, m, m / plain,
                                                        "-" if c == "plain" else "%.2f" % (
                                                            1000 * (m - plain) / (2 * a.edges) * 2),
                                                        files[c]))
        print("\nms/process: the time added per process started, as the build's two jobs run side by side "
              "(the wall time added, times 2 jobs, over the processes)")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
