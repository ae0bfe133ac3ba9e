#!/usr/bin/env python3
"""How fast `cgprof report` reads a big profile: a benchmark, not a test.

    report_speed.py [--mb MB] [--runs R] [--cgprof LAUNCHER] [--baseline LAUNCHER] [--no-strict] [--quick]

Writes a synthetic profile of MB megabytes (tests/bench/gen_profile.py: as
cgprof writes them, 100 MB by default) in a temporary directory, and times,
R times each (median; 3 by default), each run a fresh process as a user
runs it:

  cgprof report FILE           the flat profile (reader.digest()'s fast path)
  cgprof report --callers F    a view that reads the call sites (line by line)
  callgrind_check FILE         the strict reader, reader.load(), for comparison
  the baseline's report        with --baseline: another build's launcher, on
                               the same file, its output compared with ours

and prints MB, seconds (wall, and CPU: user + system), MB/s and the peak
memory of each, with the load average before and after (the machine may be
shared: the figures are only as good as its quiet). scripts/bench --report
runs it on the build tree."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(argv, runs, env=None):
    """Median wall and CPU seconds of runs of argv, its peak RSS, its output."""
    walls, cpus, rss = [], [], 0
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        # the output to files, not pipes: the child never waits on us, and
        # wait4() gives its own CPU time and peak RSS
        with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
            p = subprocess.Popen(argv, env=env, stdout=o, stderr=e)
            _, status, usage = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            o.seek(0)
            e.seek(0)
            out, err = o.read(), e.read()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode not in (0, 1):
            sys.exit("report_speed: %s failed (%d): %s" % (" ".join(argv), p.returncode,
                                                           err.decode(errors="replace")[-2000:]))
        walls.append(wall)
        cpus.append(usage.ru_utime + usage.ru_stime)
        rss = max(rss, usage.ru_maxrss)
    return statistics.median(walls), statistics.median(cpus), rss, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=100, help="size of the profile in MB (default 100)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each (median; default 3)")
    ap.add_argument("--cgprof", default=os.path.join(ROOT, "build", "scripts", "cgprof"),
                    help="the launcher to time (default: build/scripts/cgprof)")
    ap.add_argument("--baseline", metavar="LAUNCHER", help="another build's cgprof, timed on the same file")
    ap.add_argument("--no-strict", action="store_true", help="leave out the strict reader (slow)")
    ap.add_argument("--quick", action="store_true", help="10 MB, 1 run: checks the benchmark works")
    a = ap.parse_args()
    if a.quick:
        a.mb, a.runs = 10, 1
    check = os.path.join(os.path.dirname(a.cgprof), "callgrind_check")
    tmp = tempfile.mkdtemp(prefix="cgprof-report-speed.")
    try:
        path = os.path.join(tmp, "big.cg")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_profile.py"), path, str(a.mb)], check=True)
        size = os.path.getsize(path) / 1e6
        with open(path, "rb") as f:
            nlines = sum(1 for _ in f)
        print("cgprof report on a %.1f MB profile (tests/bench/gen_profile.py: %d lines), %d CPUs, "
              "median of %d run%s; load average before: %s" %
              (size, nlines, os.cpu_count(), a.runs, "" if a.runs == 1 else "s", load_average()))
        env = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
        rows = [("cgprof report FILE", [a.cgprof, "report", path]),
                ("cgprof report --callers f17 FILE", [a.cgprof, "report", "--callers", "f17", path])]
        if a.baseline:
            rows.append(("baseline: cgprof report FILE", [a.baseline, "report", path]))
        if not a.no_strict:
            rows.append(("strict reader (callgrind_check)", [check, path]))
        outs = {}
        print("  %-36s %9s %9s %9s %10s" % ("", "wall s", "CPU s", "MB/s", "peak RSS"))
        for name, argv in rows:
            wall, cpu, rss, out = run(argv, a.runs, env)
            outs[name] = out
            print("  %-36s %9.2f %9.2f %9.1f %7.0f MB" % (name, wall, cpu, size / wall, rss / 1024), flush=True)
        if a.baseline:
            same = outs["cgprof report FILE"] == outs["baseline: cgprof report FILE"]
            print("  the flat profile printed: %s as the baseline's" % ("the same" if same else "NOT the same"))
            if not same:
                sys.exit(1)
        print("load average after: %s" % load_average())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
