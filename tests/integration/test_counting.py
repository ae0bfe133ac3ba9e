"""The counting hooks (CGPROF_STACKS=unwind, docs/sampled-time.md, "The
counting hooks"): no shadow stack, every call counted by its enter hook, the
exit hooks taken back, the times sampled by unwinding the whole stack.

Their counts against the truth of inlined calls are test_fold's (every
nesting program and the examples, whole sets). Here: the same counts as the
hooks' stack counting every call (CGPROF_THROTTLE=off) on the programs with
callbacks, signal handlers, threads and forks, whole sets; dumps by signal
that cut a running thread into parts whose counts add up to the run's; the
sampled times against the CPU time the program measured itself; the one
line said when a setting needs the hooks' stack; the exit hooks taken back
and said so in the header.
"""

import os
import re
import unittest

import cgtest
from cgtest import ProfileAssertions, example, prog, run_preloaded
from test_dumps import add_counts, parts_of, signal_phases

UNWIND = {"CGPROF_STACKS": "unwind", "CGPROF_TIME": "sample"}
# the reference: the hooks' stack counting every call, in exact time (its
# sampled time once counted a call too many, main -> level 1001 for 1000 in
# tests/progs/throws, 1 run in 6: not the counting hooks' to compare with)
HOOKS = {"CGPROF_STACKS": "hooks", "CGPROF_TIME": "exact", "CGPROF_THROTTLE": "off"}


def counts_by_process(run):
    """{pid: {(caller, callee): calls}} of a run's files, without the
    visits of functions without hooks (lower bounds: the runs of callbacks
    the hooks saw, or the visits sampling saw; a short stretch of qsort
    may get no sample, under qemu mostly). The calls such a function makes
    of functions with hooks (qsort's of the comparator) are counted by the
    enter hook either way: kept."""
    out = {}
    for p in run.profiles():
        total = out.setdefault(p.pid, {})
        add_counts(total, {k: n for k, n in p.call_counts().items() if k[1] not in p.visits})
    return {pid: {k: n for k, n in c.items() if n} for pid, c in out.items()}


class SameCounts(ProfileAssertions):
    """The counting hooks count what the hooks' stack counts, whole sets."""

    def compare(self, argv, stdin=None):
        runs = {}
        for name, env in (("hooks", HOOKS), ("unwind", UNWIND)):
            run = run_preloaded(self, argv, env=env)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(cgtest.stderr_lines(run.stderr), [], name)
            for p in run.profiles():
                self.assert_valid(p, running_slack=0.01)
            runs[name] = run
        # the same output, but for pids
        self.assertEqual(re.sub(r"\d+", "N", runs["unwind"].stdout), re.sub(r"\d+", "N", runs["hooks"].stdout))
        a, b = counts_by_process(runs["hooks"]), counts_by_process(runs["unwind"])
        # the processes in the same order (a fork's child after its parent)
        self.assertEqual([c for _, c in sorted(b.items())], [c for _, c in sorted(a.items())])
        return runs

    def test_examples(self):
        # qsort's comparator (a callback), threads, a shared library, C++
        for argv in ([example("basic")], [example("threads")], [example("uselib")], [example("cxx")]):
            with self.subTest(argv=argv):
                self.compare(argv)

    def test_fork(self):
        # the child counts from the fork: its counts are its own
        runs = self.compare([prog("forker")])
        self.assertEqual(len(counts_by_process(runs["unwind"])), 2)

    def test_signal_handlers(self):
        """tests/progs/sigstorm at a signal every 2 ms and every 20 us (as
        test_runtime gives the hooks' stack) whose handler makes calls:
        every handler run counted, from the function it interrupted (or the
        one it was called from), none lost. At 20 us a handler's calls that
        came during a slow path (1 in 10 runs lost some when 16 were kept)
        and the reading of its signal frame (four system calls a call, more
        than the period: runs took 40 s) were what failed."""
        if cgtest.WRAPPER:
            self.skipTest("a signal storm is a timing test")
        for period in ("2000", "20"):
            with self.subTest(period_us=period):
                run = run_preloaded(self, [prog("sigstorm"), "300000", "100", period], env=UNWIND)
                self.assertEqual(run.returncode, 0, run.stderr)
                n = int(re.search(r"(\d+) calls", run.stdout).group(1))
                delivered = int(re.search(r"(\d+) signals delivered", run.stdout).group(1))
                self.assertGreaterEqual(delivered, 100)
                (prof,) = run.profiles()
                self.assert_valid(prof, running_slack=0.01)
                counts = prof.call_counts()
                self.assertEqual(counts[("main", "leaf")], n)
                self.assertEqual(sum(v for (a, b), v in counts.items() if b == "on_signal"), delivered)
                self.assertEqual(counts.get(("on_signal", "handler_work"), 0), delivered)
                self.assertIsNone(prof.desc_value("Lost"))
                self.assertTrue({a for (a, b) in counts if b == "on_signal"} <= {"main", "leaf"}, counts)

    def test_exceptions_and_jumps(self):
        # frames left by exceptions and longjmp: nothing to unwind for the
        # counts, which are made at the enter hooks
        self.compare([prog("throws")])
        self.compare([prog("jumps")])

    def test_header(self):
        run = run_preloaded(self, [example("basic")], env=UNWIND)
        self.assertEqual(run.returncode, 0, run.stderr)
        (p,) = run.profiles()
        self.assertIsNone(p.desc_value("Throttled"))
        taken = p.desc_value("Hook calls taken back")
        m = re.search(r"and (\d+) exit hook calls the counting hooks do not need", taken or "")
        self.assertTrue(m and int(m.group(1)) > 0, taken)


class Dumps(ProfileAssertions):
    def test_parts_add_up(self):
        """Dumps by signal cut each thread of tests/progs/phases into parts
        whose counts add up to those of a run without dumps."""
        whole = run_preloaded(self, [prog("phases")], env=UNWIND)
        self.assertEqual(whole.returncode, 0, whole.stderr)
        expected = {int(p.thread): p.call_counts() for p in whole.profiles()}
        visits = {int(p.thread): p.visits for p in whole.profiles()}
        self.assertEqual(sorted(expected), [1, 2, 3])
        run = signal_phases(self, env=UNWIND)
        rc, _, err = run.finish()
        self.assertEqual(rc, 0, err)
        parts = parts_of(run.files())
        self.assertGreaterEqual(max(p for p, t in parts), 2, sorted(parts))
        for thread, counts in expected.items():
            files = [f for (p, t), f in sorted(parts.items()) if t == thread]
            self.assertGreaterEqual(len(files), 2, "thread %d was cut into parts" % thread)
            total = {}
            for f in files:
                prof = cgtest.reader.load(f, strict=True)
                self.assert_valid(prof, running_slack=0.01)
                add_counts(total, {k: n for k, n in prof.call_counts().items()
                                   if k[0] not in prof.visits and k[1] not in prof.visits})
            self.assertEqual({k: n for k, n in total.items() if n},
                             {k: n for k, n in counts.items() if n and k[0] not in visits[thread] and
                              k[1] not in visits[thread]}, "thread %d" % thread)


class Times(ProfileAssertions):
    def test_sampled_times_as_measured(self):
        """tests/progs/sampled: the sampled inclusive time of a burn in
        instrumented code and of one in code without hooks against the CPU
        time the program measured for each in the same run (getrusage):
        within 10% and 10 samples, as the hooks' stack is held to
        (test_runtime's Sampled)."""
        if cgtest.WRAPPER:
            self.skipTest("CPU time under valgrind says nothing of ours")
        run = run_preloaded(self, [prog("sampled"), "300"], env=UNWIND)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(cgtest.stderr_lines(run.stderr), [])
        (p,) = run.profiles()
        self.assert_valid(p)
        counts = p.call_counts()
        self.assertEqual(counts[("main", "small")], 100000)
        self.assertEqual(counts[("main", "burn_self")], 1)
        measured = {m.group(1): (float(m.group(2)), float(m.group(3)))
                    for m in re.finditer(r"(?m)^(\w+): ([\d.]+) ms user, ([\d.]+) ms system$", run.stdout)}
        for name in ("burn_self", "burn_outside"):
            user, system = measured[name]
            reference = user if "user time only" in p.desc_value("Clock") else user + system
            got = p.inclusive(name) / 1e6
            self.assertLessEqual(abs(got - reference), 0.1 * reference + 10,
                                 "%s: %.1f ms sampled, %.1f ms measured" % (name, got, reference))
        # burn_outside's time is in the code without hooks it calls
        self.assertGreater(p.inclusive("spin_outside"), 0.8 * p.inclusive("burn_outside"))


class Fallback(unittest.TestCase):
    def test_needs_the_hooks_stack(self):
        """A setting that needs the hooks' stack: one line, and the hooks'
        stack (the same counts)."""
        for extra, named in (({"CGPROF_PATHS": "1"}, "CGPROF_PATHS=1"), ({"CGPROF_TIME": "exact"}, "CGPROF_TIME=exact"),
                             ({"CGPROF_INLINED": "count"}, "CGPROF_INLINED=count")):
            with self.subTest(extra=extra):
                run = run_preloaded(self, [example("basic")], env=dict(UNWIND, **extra))
                self.assertEqual(run.returncode, 0, run.stderr)
                lines = cgtest.stderr_lines(run.stderr)
                self.assertEqual(len(lines), 1, lines)
                self.assertIn("CGPROF_STACKS=unwind", lines[0])
                self.assertIn(named, lines[0])
                (p,) = [q for q in run.profiles() if q.thread == "1" or len(run.profiles()) == 1]
                self.assertIsNone(re.search(r"exit hook calls the counting hooks",
                                            p.desc_value("Hook calls taken back") or ""))


if __name__ == "__main__":
    unittest.main()
