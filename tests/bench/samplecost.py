#!/usr/bin/env python3
"""What sampling costs a CPU-bound program (issue 40, item 3): the CPU time
of fixed work, plain and under cgprof in each way of taking samples, runs
interleaved, medians side by side in one run.

  python3 tests/bench/samplecost.py [--build BUILD] [--runs N] [--hz 1000,5000]

Two workloads, each an instrumented main and one instrumented function:
- loop: about a second of arithmetic that calls nothing (no hook runs
  while it does: the signals' sampler interrupts it, the ring's waits in
  the buffer until the function returns);
- calls: the same work in slices of about 20 us, one instrumented call
  each (the ring is read at every hook that finds records).

Variants: the plain build run alone (the baseline); cgprof with the exact
clock and no sampling (what the hooks alone cost here: two calls, the
exact clock); sampled time with the signals' perf_event timer
(CGPROF_SAMPLE_TIMER=perf) and with the ring buffer
(CGPROF_SAMPLE_TIMER=ring) at each rate. The sampling's own cost is the
sampled variant's CPU time against the exact variant's (both run the
same hooks; sampled time reads no clock, so this is a slight
underestimate of what the samples cost) and against the plain build.
CPU time is the child's user + system time (wait4), system time included:
the ring's samples are written by the kernel in the thread's context."""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) void work(long n)
{
    unsigned long s = 0;
    for (long i = 0; i < n; i++)
        s += (unsigned long)i * (unsigned long)i ^ (s >> 3);
    sink += s;
}
int main(int argc, char **argv)
{
    long total = atol(argv[1]), slice = atol(argv[2]);
    for (long done = 0; done < total; done += slice)
        work(slice);
    printf("%lu\n", sink);
    return 0;
}
"""


def build(tmp):
    src = os.path.join(tmp, "w.c")
    with open(src, "w") as f:
        f.write(SOURCE)
    exe = os.path.join(tmp, "w")
    subprocess.run(["gcc", "-O2", "-g", "-finstrument-functions", src, "-o", exe], check=True)
    return exe


def cpu_of(argv, env):
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=env["CGB_DIR"])
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status != 0:
        sys.exit("%s failed (%d): %s" % (argv, status, err[-500:]))
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--build", default=os.path.join(here, "..", "..", "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hz", default="1000,5000")
    ap.add_argument("--iterations", type=int, default=400_000_000, help="the work (about 1 s here)")
    args = ap.parse_args()
    lib = os.path.abspath(os.path.join(args.build, "runtime", "libcgprof.so"))
    if not os.path.exists(lib):
        sys.exit("no runtime at %s: build first, or give --build" % lib)
    tmp = tempfile.mkdtemp(prefix="cgprof-samplecost-")
    try:
        exe = build(tmp)
        base = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_")}
        base["CGB_DIR"] = tmp
        variants = [("plain", None), ("exact, no sampling", {"CGPROF_TIME": "exact"})]
        for hz in [h for h in args.hz.split(",") if h]:
            for timer in ("perf", "ring"):
                variants.append(("%s %s Hz" % ("signals" if timer == "perf" else "ring", hz),
                                 {"CGPROF_TIME": "sample", "CGPROF_SAMPLE_TIMER": timer, "CGPROF_SAMPLE_HZ": hz}))
        workloads = (("loop", str(args.iterations), str(args.iterations)),
                     ("calls", str(args.iterations), "8000"))
        for name, total, slice_ in workloads:
            times = {v: [] for v, _ in variants}
            for _ in range(args.runs):
                for v, extra in variants:
                    env = dict(base)
                    if extra is not None:
                        env.update(extra, LD_PRELOAD=lib, CGPROF_OUT=os.path.join(tmp, "cg"),
                                   CGPROF_THROTTLE="off")
                    times[v].append(cpu_of([exe, total, slice_], env))
                    for f in os.listdir(tmp):
                        if f.startswith("cg"):
                            os.unlink(os.path.join(tmp, f))
            plain = statistics.median(times["plain"])
            exact = statistics.median(times["exact, no sampling"])
            print("%s (%s iterations, slices of %s; median of %d runs, CPU s = user + system):"
                  % (name, total, slice_, args.runs))
            print("  %-22s %8s %10s %12s" % ("variant", "CPU s", "vs plain", "vs exact"))
            for v, _ in variants:
                m = statistics.median(times[v])
                print("  %-22s %8.3f %9.3fx %11.3fx" % (v, m, m / plain, m / exact))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
