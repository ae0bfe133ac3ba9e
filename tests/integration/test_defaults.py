"""What a run with no setting at all gives (the other tests pin the exact
clock and no throttle, whose figures they check: cgtest.PINNED): sampled
CPU time, inlined calls folded, tiny hot functions throttled, each said in
the files and read right by the real readers.

- examples/basic 30: its functions called a few times counted exactly;
  fib, called 2,692,537 times for a few ns each, throttled: its count a
  lower bound, at least the throttle's N, marked so in `cgprof report` and
  the launcher's summary; its time its own (sampled by address), not
  main's;
- the files read by callgrind_annotate without a warning, their costs
  adding up.
"""

import os
import re
import shutil
import subprocess
import unittest

import cgtest
from cgproflib import reader
from cgtest import example
from test_filters import throttle_checks

LAUNCHER = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof")
REPORT = [LAUNCHER, "report"]


class Defaults(cgtest.ProfileAssertions):
    def run_default(self, argv, env=None):
        """argv run with the runtime's own defaults: nothing pinned, only
        env (none of CGPROF_TIME, CGPROF_THROTTLE, CGPROF_INLINED)."""
        run = cgtest.run_preloaded(self, argv, env=env, pinned=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        return run

    def test_basic(self):
        # fib(30), not the default fib(20). The throttle checks an arc (one
        # for each of fib's two call sites) at its 10,000th call and at
        # each power of two above (costs_inlines.h, cg_throttle_due) against
        # the mean of its calls' inclusive time so far (arcs.c,
        # cg_throttle_check), and a sample charges its 1 ms period to every
        # frame on the stack. At fib(20) an arc has 10,945 calls, so one
        # check: a sample in fib's own code 11 levels deep before it (some
        # 20,000 calls, a few tenths of a ms of CPU) put the mean above
        # T's 1 us, and fib stayed unthrottled. At fib(30) an arc has
        # 1,346,268 calls, checked up to 2^20 = 1,048,576: when an arc has
        # c calls, fib has run 2c calls of its own code (1-2 ns each; the
        # samples in the hooks are left out), so at most 2c x 2 ns / 1 ms
        # + 1 samples were charged, to 29 frames at most: a mean of at most
        # 29 x (2 x 2 ns + 1 ms / c), 144 ns at 2^20, under T whatever the
        # load (a slower machine's fib would need 17 ns of its own a call)
        run = self.run_default([example("basic"), "30"])
        prof = reader.load(run.files[0], strict=True)
        self.assert_valid(prof)
        self.assertIn("sampled", prof.desc_value("Clock"))
        throttled = prof.desc_value("Throttled")
        self.assertIsNotNone(throttled)
        self.assertIn("CGPROF_THROTTLE=10000:1000", throttled)
        self.assertTrue(throttled.endswith(": fib"), throttled)
        counts = cgtest.merged_counts([prof])
        # the functions called a few times: exact, as the source makes them
        for fn, n in (("parse_config", 1), ("parse_line", 6), ("tokenize", 6), ("trim", 12), ("checksum", 6),
                      ("sort_scores", 1), ("crunch", 1)):
            self.assertEqual(cgtest.incoming(counts, fn), n, fn)
        # fib: counted until it was throttled, a lower bound: the arc that
        # was found under T at a check has that count, and the calls of it
        # still running then (29 at most) end counted; fib's other arc
        # stops where it was (its later calls have no hooks)
        fib = cgtest.incoming(counts, "fib")
        self.assertGreaterEqual(fib, 10000)
        self.assertLess(fib, 2692537)
        arcs = [c.count for c in prof.calls if c.caller.name == "fib" and c.callee.name == "fib"]
        self.assertTrue(any(c <= n <= c + 29 for n in arcs for c in throttle_checks(10000, 1346268)), arcs)
        rep = subprocess.run(REPORT + ["--sort=calls", run.files[0]], capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertRegex(rep.stdout, r"\n +[0-9.]+ +[0-9.]+ +[0-9.]+ +>=%d  fib " % fib)
        self.assertRegex(rep.stdout, r"\n +[0-9.]+ +[0-9.]+ +[0-9.]+ +6  parse_line ")
        if shutil.which("callgrind_annotate"):
            a = subprocess.run(["callgrind_annotate", "--inclusive=yes", run.files[0]], capture_output=True,
                               text=True, timeout=cgtest.limit(60))
            self.assertEqual(a.returncode, 0, a.stderr)
            self.assertNotIn("WARNING", a.stderr)

    def test_parts_without_a_sample_read_without_a_warning(self):
        """Issue 40 (5): a thread that got no sample writes a part whose
        total is 0 (manythreads' threads each make 10 tiny calls);
        callgrind_annotate annotated its source from an empty list of
        lines ("Use of uninitialized value $line_nums[0] ... line 1183",
        1199, 1210), and so it did with --inclusive=yes for any file whose
        functions only call. Every part, both ways, reads with nothing on
        standard error."""
        if not shutil.which("callgrind_annotate"):
            self.skipTest("callgrind_annotate is not installed")
        run = self.run_default([cgtest.prog("manythreads"), "3"])
        profs = [reader.load(f, strict=True) for f in run.files]
        zero = [p for p in profs if p.summary is not None and not any(p.summary)]
        self.assertTrue(zero, "no part without a sample: the case is not tested")
        for f in run.files:
            for extra in ([], ["--inclusive=yes"]):
                a = subprocess.run(["callgrind_annotate", "--threshold=100"] + extra + [f], capture_output=True,
                                   text=True, timeout=cgtest.limit(60))
                self.assertEqual(a.returncode, 0, a.stderr)
                self.assertEqual(a.stderr, "", "%s %s" % (os.path.basename(f), extra))
                self.assertIn("manythreads.c", a.stdout)

    def test_throttled_time_is_its_own(self):
        """A throttled function keeps the time spent in its code: a
        sampled profile charges it by address, as perf does
        (tests/progs/throttle.c: tiny and tinier, 1,000,000 calls each, are
        throttled; mid and slow are long)."""
        # 20,000 samples a second, not 1,000: tiny's loop takes about 6 ms,
        # 6 samples at the default rate, too few for a share
        run = self.run_default([cgtest.prog("throttle")], env={"CGPROF_SAMPLE_HZ": "20000"})
        prof = reader.load(run.files[0], strict=True)
        self.assert_valid(prof)
        throttled = prof.desc_value("Throttled") or ""
        self.assertIn("tiny", throttled)
        counts = cgtest.merged_counts([prof])
        self.assertEqual(cgtest.incoming(counts, "mid"), 2000)
        self.assertEqual(cgtest.incoming(counts, "slow"), 3)
        if cgtest.WRAPPER:
            return  # CPU time under valgrind says nothing of ours
        # the time in tiny's and tinier's code, a million calls, stays
        # theirs after the throttle (their code sampled by address), not
        # main's as in exact time (1% of the loop's: their first 10,000
        # calls). Not more than main's own: main's loop (-O0, its counter in
        # memory) takes as long as their bodies once the hook calls are
        # taken back; perf on the same run: main 2.6%, tiny 1.0%, tinier
        # 1.0% (cgprof: 40 to 50% of the loop theirs)
        small = prof.self_cost("tiny") + prof.self_cost("tinier")
        self.assertGreater(prof.self_cost("tiny"), 0)
        self.assertGreater(prof.self_cost("tinier"), 0)
        self.assertGreater(small, 0.2 * (small + prof.self_cost("main")))

if __name__ == "__main__":
    unittest.main(verbosity=2)
