"""Overhead compensation (CGPROF_COMPENSATE, issue 17): the hooks' own time,
calibrated at start-up, left out of the times. What can be checked without
a threshold on the machine's speed: the part says what it left out and what
was calibrated; what it left out is at most the calibrated cost of every
hook pair it counted (a segment shorter than the overhead gives the excess
back, never takes more); the profile stays whole (self times add up to the
total, inclusive times cover self times); CGPROF_COMPENSATE=0 and sampled
time leave nothing out. How close the compensated times come to a sampling
profiler's view of the plain build is the accuracy benchmark's question
(scripts/bench --accuracy), not a test's."""

import re
import unittest

import cgtest

LINE = re.compile(r"Overhead compensated: (\d+) ns of the hooks' own time left out "
                  r"\((\d+) ns a call inside the callee, (\d+) in its caller; CGPROF_COMPENSATE\)")


def compensation(prof):
    found = [LINE.fullmatch(d) for d in prof.desc if d.startswith("Overhead compensated")]
    assert all(found), prof.desc
    return [tuple(int(x) for x in m.groups()) for m in found]


class Compensation(cgtest.ProfileAssertions):

    def profiles(self, argv, env=None):
        run = cgtest.run_preloaded(self, argv, env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(cgtest.stderr_lines(run.stderr), [])
        return run.profiles()

    def test_on_by_default_and_bounded(self):
        for argv in ([cgtest.example("basic")], [cgtest.example("threads")], [cgtest.example("cxx")]):
            with self.subTest(prog=argv[0]):
                for prof in self.profiles(argv):
                    self.assert_valid(prof)
                    self.assert_inclusive_covers_self(prof)
                    (left, inside, caller), = compensation(prof)
                    self.assertGreater(inside + caller, 0)
                    self.assertLessEqual(inside, 100000)
                    self.assertLessEqual(caller, 100000)
                    calls = sum(prof.call_counts().values())
                    self.assertGreater(left, 0)
                    # two hooks a call, each its parts before and after
                    # its reading: a pair's worth per call at most
                    self.assertLessEqual(left, (calls + 1) * (inside + caller))

    def test_off(self):
        for env in ({"CGPROF_COMPENSATE": "0"}, {"CGPROF_TIME": "sample"}):
            with self.subTest(env=env):
                for prof in self.profiles([cgtest.example("basic")], env):
                    self.assertEqual([d for d in prof.desc if d.startswith("Overhead")], [])

    def test_nesting_builds_stay_whole(self):
        # -O2 inlined calls and recursion from one call site (the general
        # path's hooks), longjmp and exceptions: compensated all the same
        for name in ("recurse", "jumps", "throws", "paths"):
            for cc in ("gcc", "clang"):
                exe = cgtest.os.path.join(cgtest.BUILD_DIR, "tests", "nesting", "%s-%s-O2" % (name, cc))
                if not cgtest.os.path.exists(exe):
                    continue
                with self.subTest(prog=name, compiler=cc):
                    run = cgtest.run_preloaded(self, [exe])
                    self.assertEqual(run.returncode, 0, run.stderr)
                    for prof in run.profiles():
                        self.assert_valid(prof)
                        self.assertEqual(len(compensation(prof)), 1)


if __name__ == "__main__":
    unittest.main()
