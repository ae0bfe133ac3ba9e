"""Hook calls taken back while the program runs (docs/internals/takeback.md), as a
user sees it: the counts of what is kept stay exact, the parts say how many
sites were taken back and why, the same profile comes with the program's
code left alone (CGPROF_TAKEBACK=0), and where the system refuses to let
code change (a W^X policy) one message says so and nothing else differs.

- collection off and on by the API around a hot loop (tests/progs/pauses.c);
- collection off from the start (CGPROF_COLLECT=off);
- functions left out (CGPROF_SKIP) and throttled (CGPROF_THROTTLE);
- mprotect(PROT_WRITE|PROT_EXEC) refused by a seccomp filter
  (tests/progs/noexecmod.c).
"""

import os
import re
import unittest

import cgtest
from cgproflib import reader
from cgtest import merged_counts, prog, run_preloaded
from test_filters import throttle_checks, throttle_threshold

TAKEN = re.compile(r"(\d+) sites in the process \((\d+) of inlined calls, (\d+) of functions left out, "
                   r"(\d+) while collection was off; (\d+) tail jumps\), (\d+) refused")


def taken_back(prof):
    """The part's count of sites taken back, by reason (zeros when none)."""
    v = prof.desc_value("Hook calls taken back")
    if v is None:
        return {"all": 0, "inlined": 0, "left_out": 0, "off": 0, "tails": 0, "refused": 0}
    m = TAKEN.match(v)
    assert m, v
    return dict(zip(("all", "inlined", "left_out", "off", "tails", "refused"), map(int, m.groups())))


def own(counts):
    return {k: v for k, v in counts.items() if k[0] != "__libc_start_call_main"}


class Pause(cgtest.ProfileAssertions):
    def parts(self, run):
        profs = {}
        for f in run.files:
            p = reader.load(f, strict=True)
            self.assert_valid(p)
            profs[p.desc_value("Trigger")] = p
        return profs

    def test_collection_off_takes_back_and_on_puts_back(self):
        run = run_preloaded(self, [prog("pauses")])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("pauses: ran while off", run.stdout)
        profs = self.parts(run)
        off, on = profs["Client request: off"], profs["Client request: on again"]
        # leaf's and mid's enter and exit calls, met while collection was
        # off: the exits once 10 ms had passed (the loop runs 50)
        self.assertGreaterEqual(taken_back(off)["off"], 4, off.desc_value("Hook calls taken back"))
        self.assertEqual(taken_back(on)["off"], 0, "the sites were put back when collection resumed")
        counts = own(merged_counts([p for p in profs.values()]))
        self.assertEqual(counts, {("main", "mid"): 2, ("mid", "leaf"): 30})

    def test_same_profile_without_changing_code(self):
        run = run_preloaded(self, [prog("pauses")], env={"CGPROF_TAKEBACK": "0"})
        self.assertEqual(run.returncode, 0, run.stderr)
        profs = self.parts(run)
        self.assertEqual(taken_back(profs["Client request: off"])["all"], 0)
        self.assertEqual(own(merged_counts(list(profs.values()))), {("main", "mid"): 2, ("mid", "leaf"): 30})

    def test_collection_off_from_the_start(self):
        run = run_preloaded(self, [prog("pauses")], env={"CGPROF_COLLECT": "off"})
        self.assertEqual(run.returncode, 0, run.stderr)
        profs = self.parts(run)
        self.assertGreaterEqual(taken_back(profs["Client request: off"])["off"], 4)
        counts = merged_counts(list(profs.values()))
        # only what ran after cgprof_collect(true): main began while off,
        # and has no frame; mid's calls are exact
        self.assertEqual(sum(v for (a, b), v in counts.items() if b == "mid"), 1)
        self.assertEqual(counts[("mid", "leaf")], 20)
        self.assertNotIn("main", {b for (a, b) in counts})


class LeftOut(cgtest.ProfileAssertions):
    def test_skipped_function_taken_back(self):
        run = run_preloaded(self, [prog("skips")], env={"CGPROF_SKIP": "helper"})
        self.assertEqual(run.returncode, 0, run.stderr)
        (prof,) = run.profiles()
        # helper's own enter and exit calls (-O0: no tail call)
        self.assertEqual(taken_back(prof)["left_out"], 2, prof.desc_value("Hook calls taken back"))
        self.assertNotIn("helper", {n for k in prof.call_counts() for n in k})

    def test_throttled_function_taken_back(self):
        # T measured on this machine as it runs now (test_filters'), not a
        # fixed 5 us: mid's calls (a 20,000-iteration loop) take less on a
        # fast machine, tiny's more on a slow or loaded one
        t = throttle_threshold(self)
        run = run_preloaded(self, [prog("throttle")], env={"CGPROF_THROTTLE": "1000:%d" % t})
        self.assertEqual(run.returncode, 0, run.stderr)
        (prof,) = run.profiles()
        counts = own(prof.call_counts())
        # tiny and tinier throttled at their 1000th call or at a later check
        # (their counts are lower bounds, kept: test_filters says which);
        # mid and slow are long: counted in full
        self.assertEqual(counts[("main", "mid")], 2000)
        self.assertEqual(counts[("main", "slow")], 3)
        self.assertIn(counts[("main", "tiny")], throttle_checks(1000, 1000000))
        tb = taken_back(prof)
        # tiny's and tinier's enters at least; their exits once nothing could
        # need them (10 ms after the throttle: the loop runs longer)
        self.assertGreaterEqual(tb["left_out"], 4, prof.desc_value("Hook calls taken back"))


class Refused(cgtest.ProfileAssertions):
    def test_w_x_policy(self):
        """mprotect(PROT_WRITE|PROT_EXEC) refused: one message at exit, and
        the same counts as with the code left alone."""
        argv = [prog("pauses")]
        plain = run_preloaded(self, argv, env={"CGPROF_TAKEBACK": "0"})
        refused = run_preloaded(self, [prog("noexecmod")] + argv)
        self.assertEqual(refused.returncode, 0, refused.stderr)
        lines = [l for l in refused.stderr.splitlines() if "could not take back" in l]
        self.assertEqual(len(lines), 1, refused.stderr)
        self.assertIn("Permission denied", lines[0])
        counts = [own(merged_counts([reader.load(f) for f in r.files])) for r in (plain, refused)]
        self.assertEqual(counts[0], counts[1])
        self.assertEqual(counts[1], {("main", "mid"): 2, ("mid", "leaf"): 30})


if __name__ == "__main__":
    unittest.main(verbosity=2)
