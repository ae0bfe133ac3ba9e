"""What a run with no setting at all gives (the other tests pin the exact
clock and no throttle, whose figures they check: cgtest.PINNED): sampled
CPU time, inlined calls folded, tiny hot functions throttled, each said in
the files and read right by the real readers.

- examples/basic: its functions called a few times counted exactly; fib,
  called 21,891 times for a few ns each, throttled: its count a lower
  bound, at least the throttle's N, marked so in `cgprof report` and the
  launcher's summary; its time its own (sampled by address), not main's;
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
        run = self.run_default([example("basic")])
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
        # fib: counted until it was throttled, a lower bound
        fib = cgtest.incoming(counts, "fib")
        self.assertGreaterEqual(fib, 10000)
        self.assertLess(fib, 21891)
        rep = subprocess.run(REPORT + ["--sort=calls", run.files[0]], capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertRegex(rep.stdout, r"\n +[0-9.]+ +[0-9.]+ +[0-9.]+ +>=%d  fib " % fib)
        self.assertRegex(rep.stdout, r"\n +[0-9.]+ +[0-9.]+ +[0-9.]+ +6  parse_line ")
        if shutil.which("callgrind_annotate"):
            a = subprocess.run(["callgrind_annotate", "--inclusive=yes", run.files[0]], capture_output=True,
                               text=True, timeout=cgtest.limit(60))
            self.assertEqual(a.returncode, 0, a.stderr)
            self.assertNotIn("WARNING", a.stderr)

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
