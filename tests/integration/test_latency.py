"""CGPROF_LATENCY: each function's calls by inclusive time, in the files as
'#lat:' comment lines (cgproflib/latency.py says what they hold), and
`cgprof report --latency`.

The program (tests/nesting/progs/latency.c, built by gcc and clang at -O0,
-O2 and -O3) makes rounds of 9 calls of short_call, which spins 2.2 us on
the clock, and 1 of long_call, 500 times longer. No figure here depends on
the machine's speed: a call spins until its time has passed, so it takes
at least that long; a thread switched out makes it longer, never shorter.
What is certain, and checked:
  - the histograms count every call the file counts, exactly (the counts
    per bucket sum to the arcs' calls), their sums are the arcs' inclusive
    times to the ns, and the parts of a run (dumps, threads, zeroing) add
    up to its total;
  - p50 is in the short calls' range (90% of the calls are short, and each
    takes at least 2.2 us; below a tenth of the long calls' p50 in the same
    run), p99 and the max are at least the long calls' time (the 10%
    longest calls are long ones);
  - callgrind_annotate reads every file written with the option without a
    warning, with the file's own self totals;
  - without the option, no '#lat:' line.
"""

import glob
import os
import re
import shutil
import subprocess
import unittest

import cgtest
from cgproflib import latency, reader

NEST_DIR = os.path.join(cgtest.BUILD_DIR, "tests", "nesting")
LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))

SHORT_NS = 2200
LONG_NS = 500 * SHORT_NS
FUNCS = ("short_call", "long_call", "round_of_ten")


def latency_prog(cc, level):
    return os.path.join(NEST_DIR, "latency-%s-O%s" % (cc, level))


def builds():
    return [(cc, lv) for cc in ("gcc", "clang") for lv in "023" if os.path.exists(latency_prog(cc, lv))]


def calls_into(prof):
    """function -> (calls, inclusive ns, whether one was continued from an
    earlier part) of the calls into it, by the file's call lines."""
    out = {}
    for c in prof.calls:
        n, incl, cont = out.get(c.callee.name, (0, 0, False))
        out[c.callee.name] = (n + c.count, incl + c.costs[0], cont or c.count == 0)
    return out


class Latency(cgtest.ProfileAssertions):
    def run_latency(self, argv, env=None):
        e = {"CGPROF_LATENCY": "1"}
        e.update(env or {})
        run = cgtest.run_preloaded(self, argv, env=e)
        self.assertEqual(run.returncode, 0, run.stderr)
        total = glob.glob(os.path.join(run.directory, "callgrind.total.*"))
        return run, run.files + total

    def assert_exact(self, path, rounds=None):
        """The histograms of the file count its calls and their time, exactly."""
        prof = reader.load(path, strict=True)
        self.assertEqual(prof.violations, [], path)
        into = calls_into(prof)
        self.assertTrue(prof.latency, "%s: no #lat: line" % path)
        for name, h in prof.latency.items():
            with self.subTest(file=os.path.basename(path), function=name):
                self.assertEqual(sum(h.buckets.values()), h.calls)
                # a call that ran across a dump is counted in the part
                # where it began and in the histogram of the one where it
                # ended (only main's, here); the others end where they begin
                if not into[name][2]:
                    self.assertEqual(h.calls, into[name][0])
                    self.assertEqual(h.sum, into[name][1])
                self.assertLessEqual(max(h.buckets), h.max)
        if rounds is not None:
            self.assertEqual(prof.latency["short_call"].calls, 9 * rounds)
            self.assertEqual(prof.latency["long_call"].calls, rounds)
        return prof

    def assert_shape(self, h_short, h_long):
        # each call spins at least its time; the hooks' time is compensated
        # (a few tens of ns) and the buckets are within 12.5%
        p50 = h_short.percentile(50)
        self.assertGreaterEqual(p50[0], SHORT_NS * 0.8)
        long_p50 = h_long.percentile(50)
        self.assertGreaterEqual(long_p50[0], LONG_NS * 0.8)
        self.assertGreaterEqual(h_long.max, LONG_NS * 0.95)
        # the short calls' p50 among the short ones: well below the long
        # calls' p50 measured in the same run (500x apart as made), not
        # below a fixed bound (a loaded machine makes calls longer, both
        # alike)
        self.assertLess(p50[0], long_p50[0] / 10)

    def assert_annotate_totals(self, path):
        """callgrind_annotate reads the file without a warning, and its
        program total and self times are the file's."""
        if not shutil.which("callgrind_annotate"):
            return
        p = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True,
                           timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("WARNING", p.stderr)
        self.assertNotIn("malformed", p.stderr)
        prof = reader.load(path)
        m = re.search(r"^\s*([\d,]+) \S+\s+PROGRAM TOTALS", p.stdout, re.M)
        self.assertIsNotNone(m, p.stdout[:2000])
        self.assertEqual(int(m.group(1).replace(",", "")), prof.totals[0])
        for name in FUNCS:
            m = re.search(r"^\s*([\d,]+) \([ \d.]+%\)\s+\S*:" + name + r" \[", p.stdout, re.M)
            if m:
                self.assertEqual(int(m.group(1).replace(",", "")), prof.self_cost(name), name)

    def test_every_build(self):
        found = builds()
        self.assertTrue(found, "no build of latency.c in " + NEST_DIR)
        if shutil.which("clang"):
            self.assertIn(("clang", "2"), found)
        for cc, level in found:
            with self.subTest(compiler=cc, level=level):
                run, files = self.run_latency([latency_prog(cc, level), "100"])
                self.assertEqual(len(run.files), 1)
                for f in files:
                    prof = self.assert_exact(f, rounds=100)
                    self.assert_shape(prof.latency["short_call"], prof.latency["long_call"])
                    self.assert_annotate_totals(f)

    def test_threads_dumps_zero(self):
        prog = latency_prog("gcc", "2")
        # a dump half way, two threads: each part exact, and the parts add
        # up to the total (the total is the sum of the parts)
        run, files = self.run_latency([prog, "40", "2", "dump"])
        self.assertEqual(len(run.files), 4)  # the dump's part, then each thread's last
        summed = {}
        for f in run.files:
            prof = self.assert_exact(f)
            self.assert_annotate_totals(f)
            for name, h in prof.latency.items():
                latency.add_to(summed, name, h)
        total = self.assert_exact(files[-1], rounds=3 * 40)
        self.assert_annotate_totals(files[-1])
        for name, h in total.latency.items():
            with self.subTest(function=name):
                self.assertEqual((h.calls, h.sum, h.buckets), (summed[name].calls, summed[name].sum,
                                                               summed[name].buckets))
                self.assertEqual(h.max, summed[name].max)
        # the threads merged into one part (CGPROF_THREAD_EXIT=merge)
        run, files = self.run_latency([prog, "40", "2"], env={"CGPROF_THREAD_EXIT": "merge"})
        for f in files:
            self.assert_exact(f)
        self.assert_exact(files[-1], rounds=3 * 40)
        # zeroed half way: the first 20 rounds forgotten, histograms too
        run, files = self.run_latency([prog, "40", "0", "zero"])
        self.assert_exact(files[0], rounds=20)

    def test_report(self):
        run, files = self.run_latency([latency_prog("gcc", "0"), "100"])
        p = subprocess.run([LAUNCHER, "report", "--latency", "--top=0", run.directory], capture_output=True,
                           text=True, timeout=cgtest.limit(120), env=cgtest.clean_environ())
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("within 12.5%", lines[1])
        self.assertEqual(lines[2].split(), ["calls", "mean", "p50", "p90", "p99", "max", "function"])
        rows = {}
        for line in lines[3:]:
            f = line.split()
            # calls, then 5 times of a number and a unit each, then the name
            self.assertGreaterEqual(len(f), 12, line)
            rows[" ".join(f[11:])] = f
        units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}

        def ns(row, k):
            return float(row[1 + 2 * k]) * units[row[2 + 2 * k]]
        self.assertEqual(int(rows["short_call"][0]), 900)
        self.assertEqual(int(rows["long_call"][0]), 100)
        self.assertEqual(int(rows["main"][0]), 1)
        short, long_ = rows["short_call"], rows["long_call"]
        # p50 of the short calls among the short; p99 and max of the long
        # ones at least their time; each column no less than the one before
        self.assertGreaterEqual(ns(short, 1), SHORT_NS * 0.8)
        self.assertLess(ns(short, 1), ns(long_, 1) / 10)
        self.assertGreaterEqual(ns(long_, 3), LONG_NS * 0.8)
        self.assertGreaterEqual(ns(long_, 4), LONG_NS * 0.95)
        for row in rows.values():
            self.assertEqual([ns(row, k) for k in range(1, 5)], sorted(ns(row, k) for k in range(1, 5)), row)
        # the same with round_of_ten: p50 among its short calls would be
        # wrong: each round holds one long call
        self.assertGreaterEqual(ns(rows["round_of_ten"], 1), LONG_NS * 0.95)
        # what report --latency says of files without histograms
        plain = cgtest.run_preloaded(self, [latency_prog("gcc", "0"), "2"])
        p = subprocess.run([LAUNCHER, "report", "--latency", plain.directory], capture_output=True, text=True,
                           timeout=cgtest.limit(120), env=cgtest.clean_environ())
        self.assertEqual(p.returncode, 1)
        self.assertIn("CGPROF_LATENCY=1", p.stderr)

    def test_off_and_time_modes(self):
        prog = latency_prog("gcc", "2")
        # off (the default): no histogram, no line
        run = cgtest.run_preloaded(self, [prog, "10"])
        for f in run.files:
            with open(f) as fh:
                self.assertNotIn("#lat", fh.read())
        # sampled time asked for: the histograms need the clock, so the time
        # is exact, and it says so
        run, files = self.run_latency([prog, "10"], env={"CGPROF_TIME": "sample"})
        self.assertIn("CGPROF_LATENCY=1 times every call", run.stderr)
        prof = self.assert_exact(files[0], rounds=10)
        self.assertNotIn("sampled", prof.desc_value("Clock"))
        # the runtime's defaults otherwise (sampled time, the throttle): exact
        # time, no message
        run = cgtest.run_preloaded(self, [prog, "10"], env={"CGPROF_LATENCY": "1"}, pinned=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertNotIn("CGPROF_LATENCY", run.stderr)
        self.assert_exact(run.files[0], rounds=10)

    def test_launcher_option(self):
        # cgprof --latency: the option of the runtime's table
        d = cgtest.tempfile.mkdtemp(prefix="cgprof-test-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        p = subprocess.run([LAUNCHER, "--latency", latency_prog("gcc", "0"), "5"], cwd=d, capture_output=True,
                           text=True, timeout=cgtest.limit(120), env=cgtest.clean_environ(pinned=False))
        self.assertEqual(p.returncode, 0, p.stderr)
        # its summary says where to look
        self.assertRegex(p.stdout + p.stderr, r"cgprof report --latency callgrind\.out\.\d+")
        files = sorted(glob.glob(os.path.join(d, "callgrind.out.*")))
        self.assertTrue(files, os.listdir(d))
        self.assert_exact(files[0], rounds=5)


if __name__ == "__main__":
    unittest.main()
