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
                  r"\((\d+) ns a call inside the callee, (\d+) in its caller; (\d+) and (\d+) by the general "
                  r"path; CGPROF_COMPENSATE\)")


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
                    (left, inside, caller, ginside, gcaller), = compensation(prof)
                    self.assertGreater(inside + caller, 0)
                    for v in (inside, caller, ginside, gcaller):
                        self.assertLessEqual(v, 100000)
                    calls = sum(prof.call_counts().values())
                    self.assertGreater(left, 0)
                    # two hooks a call, each its parts before and after
                    # its reading: a pair's worth per call at most (the
                    # general path's or the fast path's)
                    self.assertLessEqual(left, (calls + 1) * max(inside + caller, ginside + gcaller))

    def test_off(self):
        for env in ({"CGPROF_COMPENSATE": "0"}, {"CGPROF_TIME": "sample", "CGPROF_COMPENSATE": "0"}):
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


SAMPLED_LINE = re.compile(r"Overhead compensated: (\d+) ns of the hooks' own time left out \((\d+) samples that "
                          r"found the thread in cgprof's hooks; CGPROF_COMPENSATE\)")


class SampledTime(cgtest.ProfileAssertions):
    """CGPROF_TIME=sample: with compensation (the default), a sample that
    lands in the hooks (their code, their PLT entry) is left out, and one in
    an instrumented call's prologue or epilogue (outside its hooks) is that
    call's own time. Counts stay exact; the part says what was left out."""

    HZ = 10000
    PERIOD = 1000000000 // HZ

    def profile(self, compensate):
        run = cgtest.run_preloaded(self, [cgtest.example("basic"), "30"],
                                   env={"CGPROF_TIME": "sample", "CGPROF_SAMPLE_HZ": str(self.HZ),
                                        "CGPROF_COMPENSATE": compensate})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(cgtest.stderr_lines(run.stderr), [])
        (prof,) = run.profiles()
        self.assert_valid(prof)
        self.assert_inclusive_covers_self(prof)
        return prof

    def test_hooks_left_out(self):
        on, off = self.profile("1"), self.profile("0")
        self.assertEqual([d for d in off.desc if d.startswith("Overhead")], [])
        found = [SAMPLED_LINE.fullmatch(d) for d in on.desc if d.startswith("Overhead")]
        self.assertEqual(len(found), 1, on.desc)
        self.assertTrue(found[0], on.desc)
        left, samples = int(found[0].group(1)), int(found[0].group(2))
        # whole periods, the samples counted; fib's 2.7 million calls make
        # hooks that the timer finds
        self.assertEqual(left, samples * self.PERIOD)
        self.assertGreater(samples, 0)
        # every cost is whole samples, and what is left out is in no cost
        self.assertEqual(on.total_self() % self.PERIOD, 0)
        # exact counts either way: the instrumented calls as a whole set
        # (the arcs into libc, seen by sampling, count visits). A call from
        # libc (qsort's of compare_ints) is counted exactly, but which
        # libc function is named its caller can follow what the sampler
        # saw (msort_with_tmp.part.0 49 calls in one run, 50 in the other,
        # the 50th named by another frame of libc's): those are compared
        # per callee, summed over their callers outside the program
        def framed(prof):
            out = {}
            for (a, b), v in prof.call_counts().items():
                if b in self.FUNCS:
                    key = (a if a in self.FUNCS or a == "__libc_start_call_main" else "(libc)", b)
                    out[key] = out.get(key, 0) + v
            return out
        self.assertEqual(framed(on), framed(off))
        self.assertEqual(on.call_counts()[("fib", "fib")], 2692536)
        # fib does 1-2 ns a call under about 10 ns of hooks: the hooks'
        # samples, charged to it without compensation, make most of its
        # share; left out, it keeps its own (perf on the plain build: 43%
        # against crunch's 56%, tests/bench/accuracy.py)
        share_on = on.self_cost("fib") / on.total_self()
        share_off = off.self_cost("fib") / off.total_self()
        self.assertLess(share_on, share_off)
        # and by a quarter of the hooks' share at least: each run's times
        # as shares of its own CPU time (the compensated run's with what it
        # left out), not two runs' times in ns, which a loaded machine
        # moves apart (the hooks' samples are two thirds of the run, most
        # of them in fib's calls: 0.70 against 0.22 here)
        whole_on = on.total_self() + left
        self.assertGreater(share_off, (on.self_cost("fib") + left / 4) / whole_on)

    FUNCS = {"main", "fib", "parse_config", "parse_line", "tokenize", "trim", "checksum", "sort_scores",
             "compare_ints", "crunch"}


class OffCpu(cgtest.ProfileAssertions):
    """CGPROF_OFF_CPU=1: the time a thread was off the CPU shown as calls of
    cgprof_off_cpu from the function that was running. Lower bounds only
    (a nap of 100 ms is at least 100 ms off the CPU; a loaded machine may
    add more anywhere)."""

    def run_offcpu(self, env, args=(), said=()):
        """The parts of tests/progs/offcpu run with env; said: what the
        runtime's messages must contain (one line each), nothing else."""
        run = cgtest.run_preloaded(self, [cgtest.prog("offcpu")] + list(args), env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = cgtest.stderr_lines(run.stderr)
        self.assertEqual(len(lines), len(said), lines)
        for line, what in zip(lines, said):
            self.assertIn(what, line)
        # how long the waiter was blocked when main wrote to it or exited,
        # measured by the program in this run (the naps, 300 ms, unless the
        # machine started the waiter late)
        self.blocked_ns = int(re.search(r"the waiter was blocked (\d+) ns", run.stdout).group(1))
        self.stdout = run.stdout
        return {int(p.thread): p for p in run.profiles()}

    def test_off_cpu_apart(self):
        profs = self.run_offcpu({"CGPROF_OFF_CPU": "1"})
        main, waiter = profs[1], profs[2]
        for p in profs.values():
            self.assert_valid(p)
            self.assert_inclusive_covers_self(p)
        calls = main.call_counts()
        self.assertEqual({k: v for k, v in calls.items() if "cgprof_off_cpu" not in k},
                         {("__libc_start_call_main", "main"): 1, ("main", "work"): 3, ("work", "spin"): 3,
                          ("work", "nap"): 3})
        off = {c.caller.name: 0 for c in main.calls if c.callee.name == "cgprof_off_cpu"}
        for c in main.calls:
            if c.callee.name == "cgprof_off_cpu":
                off[c.caller.name] += c.costs[0]
        self.assertGreaterEqual(off.get("nap", 0), 3 * 100 * 1000 * 1000)
        # nap's own time is what it did on the CPU: far less than its naps
        self.assertLess(main.self_cost("nap"), off["nap"] / 10)
        # the off-CPU function's own time is that time, in the thread's total
        self.assertEqual(main.self_cost("cgprof_off_cpu"), sum(off.values()))
        # the waiter blocked in read() until main's three naps were over:
        # at least as long as the program measured
        w = sum(c.costs[0] for c in waiter.calls
                if c.caller.name == "wait_for_main" and c.callee.name == "cgprof_off_cpu")
        self.assertGreaterEqual(w, self.blocked_ns)

    def test_blocked_at_the_dump(self):
        # the waiter is still blocked in read() when the files are written
        # at exit: its wait so far is not wait_for_main's own time, and the
        # part says how much was left out
        profs = self.run_offcpu({"CGPROF_OFF_CPU": "1"}, ["stuck"])
        waiter = profs[2]
        self.assert_valid(waiter)
        self.assert_inclusive_covers_self(waiter)
        pending = [d for d in waiter.desc if d.startswith("Off the CPU at this dump")]
        self.assertEqual(len(pending), 1, waiter.desc)
        m = re.fullmatch(r"Off the CPU at this dump: (\d+) ns since the thread's last hook, left out of this "
                         r"part \(charged to cgprof_off_cpu when it runs again; CGPROF_OFF_CPU\)", pending[0])
        self.assertIsNotNone(m, pending[0])
        self.assertGreaterEqual(int(m.group(1)), self.blocked_ns)
        # what wait_for_main did on the CPU: far less than its wait
        self.assertLess(waiter.self_cost("wait_for_main"), int(m.group(1)) / 10)
        # still a call in progress, counted once
        self.assertEqual(waiter.call_counts().get(("waiter", "wait_for_main")), 1)
        # main, which writes the files at its exit, was running: its naps
        # were charged by its hooks; what it may have waited since its last
        # hook is the writing's (on a loaded machine, some us to some ms),
        # not a nap: far less than the waiter's wait in the same run (at
        # least its 3 naps), rather than a fixed bound
        for d in profs[1].desc:
            if d.startswith("Off the CPU at this dump"):
                self.assertLess(int(d.split()[6]), int(m.group(1)) / 3, d)

    def test_paused_while_blocked(self):
        # main pauses the collection and resumes it while the waiter is
        # blocked in read(): both readings of the waiter stop where it went
        # off the CPU (as a dump's do), so its part stays whole: the caller's
        # inclusive time covers its callee's, the wait is cgprof_off_cpu's.
        # Read at the pause's moment instead, the wait so far was
        # wait_for_main's own time there, and the skip of the paused window
        # took 100 ms from waiter's inclusive time and none from
        # wait_for_main's (203 ms against 305 ms)
        profs = self.run_offcpu({"CGPROF_OFF_CPU": "1"}, ["paused"])
        waiter = profs[2]
        self.assert_valid(waiter)
        self.assert_inclusive_covers_self(waiter)
        self.assertGreaterEqual(waiter.inclusive("waiter"), waiter.inclusive("wait_for_main"))
        # the wait the program measured, less the paused window (its length
        # at most, measured around the two calls)
        paused = int(re.search(r"offcpu: paused (\d+) ns", self.stdout).group(1))
        self.assertGreaterEqual(waiter.inclusive("cgprof_off_cpu"), self.blocked_ns - paused)
        # wait_for_main's own time is what it did on the CPU: far less than
        # its wait measured in the same run (not a fixed 50 ms)
        self.assertLess(waiter.self_cost("wait_for_main"), waiter.inclusive("cgprof_off_cpu") / 10)
        self.assertEqual(waiter.call_counts().get(("waiter", "wait_for_main")), 1)
        self.assertEqual(waiter.call_counts().get(("wait_for_main", "cgprof_off_cpu")), 1)

    def test_off_by_default(self):
        # sampled time is CPU time: CGPROF_OFF_CPU=1 there does nothing, and
        # the runtime says so (sampled time is the default)
        for env, said in (({}, ()), ({"CGPROF_OFF_CPU": "1", "CGPROF_TIME": "sample"},
                                      ("CGPROF_OFF_CPU=1 shows time off the CPU with CGPROF_TIME=exact only",))):
            with self.subTest(env=env):
                profs = self.run_offcpu(env, said=said)
                self.assertEqual(sorted(profs), [1, 2])
                for p in profs.values():
                    self.assertEqual([f for f in p.functions if f.name == "cgprof_off_cpu"], [])


if __name__ == "__main__":
    unittest.main()
