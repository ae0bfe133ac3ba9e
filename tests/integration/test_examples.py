"""The examples run with the runtime preloaded: the set of files, exact call
counts (against examples/expected.json and against Valgrind's callgrind on
the same binary), costs that add up, and files the real readers accept."""

import json
import os
import re
import subprocess
import unittest

import cgtest
from cgtest import ProfileAssertions, example, run_preloaded

with open(os.environ.get("CGPROF_EXPECTED", os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json"))) as f:
    EXPECTED = json.load(f)

LIBC_CALLER = "(libc)"


class ExampleTest(ProfileAssertions):
    name = None
    # the runtime's environment: the variants below run the same checks in
    # the other modes, each of which the hooks handle on a path of its own
    # (hooks.c: the fast paths read the TSC or the sampled clock; the
    # monotonic clock goes the general way)
    env = None
    valgrind = True

    # One run of the example for all of a class's checks: each checks
    # another side of the same run (a run per check cost the memcheck step
    # a minute, examples/server under valgrind five times per variant).
    @classmethod
    def setUpClass(cls):
        if cls.name is None:
            raise unittest.SkipTest("base class")
        cls.expected = EXPECTED[cls.name]
        cls.run_ = run_preloaded(cls, [example(cls.name)], env=cls.env)
        if cls.run_.returncode != 0:
            raise AssertionError("%s exited with status %d: %s" % (cls.name, cls.run_.returncode, cls.run_.stderr))
        cls.profiles = cls.run_.profiles(strict=True)

    def test_one_valid_file_per_thread(self):
        run = self.run_
        self.assertEqual(run.stderr, "", "the runtime must be silent by default")
        names = [os.path.basename(f) for f in run.files]
        self.assertEqual(len(names), self.expected["threads"], names)
        pids = {re.match(r"callgrind\.out\.(\d+)-(\d\d)$", n).group(1) for n in names}
        self.assertEqual(len(pids), 1, names)
        numbers = sorted(int(n[-2:]) for n in names)
        self.assertEqual(numbers[0], 1, "the main thread is 01")
        self.assertEqual(len(set(numbers)), len(numbers))
        # and the total of all threads (tests/integration/test_total.py)
        self.assertEqual(sorted(os.listdir(run.directory)), sorted(names + ["callgrind.total." + next(iter(pids))]),
                         "no temporary file left behind")
        for prof in self.profiles:
            self.assert_valid(prof)
            self.assertEqual(prof.pid, int(pids.pop() if len(pids) == 1 else prof.pid))
            self.assertIn(example(self.name), prof.cmd)
            # a thread that ended wrote its own file as it ended
            self.assertEqual(prof.desc_value("Trigger"),
                             "Program termination" if prof.thread == 1 else "Thread exit")
            self.assertEqual(prof.part, 1)
        self.assertEqual(sorted(p.thread for p in self.profiles), numbers)

    def test_exact_call_counts(self):
        counts = cgtest.merged_counts(self.profiles)
        for arc, n in self.expected["calls"].items():
            caller, callee = arc.split(" -> ")
            if caller == LIBC_CALLER:
                # the call site is in libc's qsort: named by the libc
                # function containing it, whatever symbols libc has here
                got = {k: v for k, v in counts.items() if k[1] == callee}
                self.assertEqual(sum(got.values()), n, got)
                for prof in self.profiles:
                    for c in prof.calls:
                        if c.callee.name == callee:
                            self.assertIn("libc", c.caller.object, c)
            else:
                self.assertEqual(counts.get((caller, callee)), n, arc)
        for fn, n in self.expected["functions"].items():
            if fn == "main":
                continue  # called from libc's start code: checked below
            self.assertEqual(cgtest.incoming(counts, fn), n, fn)
        main_calls = [k for k in counts if k[1] == "main"]
        self.assertEqual(len(main_calls), 1, main_calls)
        self.assertEqual(counts[main_calls[0]], 1)
        # the whole set between the program's own functions: an invented
        # arc fails as a missing one does
        own = set(self.expected["functions"])
        expected = {tuple(a.split(" -> ")): n for a, n in self.expected["calls"].items()
                    if a.split(" -> ")[0] in own and a.split(" -> ")[1] in own}
        self.assertEqual({k: v for k, v in counts.items() if k[0] in own and k[1] in own}, expected)

    def test_same_counts_as_valgrind(self):
        if not self.valgrind:
            self.skipTest("the same binary's counts are checked in the default mode")
        own = set(self.expected["functions"])
        vg = cgtest.valgrind_calls(self, [example(self.name)])
        ours = cgtest.merged_counts(self.profiles)
        # arcs between the program's own functions: identical
        vg_own = {k: v for k, v in vg.items() if k[0] in own and k[1] in own}
        ours_own = {k: v for k, v in ours.items() if k[0] in own and k[1] in own}
        self.assertEqual(ours_own, vg_own)
        # calls into each own function, from anywhere: identical
        for fn in own:
            self.assertEqual(cgtest.incoming(ours, fn), cgtest.incoming(vg, fn), fn)

    def test_readers_accept(self):
        for prof in self.profiles:
            names = {c.callee.name for c in prof.calls} & set(self.expected["functions"])
            self.assert_annotate_accepts(prof.path, sorted(names), with_object=(self.env or {}).get("CGPROF_TIME") != "sample")

    def test_symbols_files_and_lines(self):
        """Every own function is named, in its source file (absolute path)
        and object, with line numbers on its cost lines, but where the
        program's line table has none (clang gives some instructions line
        0, a loop's increment at -O0: a sample may land there)."""
        exe = os.path.realpath(example(self.name))
        seen = set()
        no_line = {}  # object -> addresses of cost lines without a line
        for prof in self.profiles:
            for key, f in prof.functions.items():
                if key.name not in self.expected["functions"]:
                    continue
                seen.add(key.name)
                self.assertTrue(os.path.isabs(key.file), key)
                self.assertTrue(os.path.exists(key.file), key)
                self.assertTrue(key.file.startswith(os.path.join(cgtest.SOURCE_DIR, "examples")), key)
                self.assertTrue(os.path.isabs(key.object), key)
                if self.name != "uselib" or not key.name.startswith(("demo_", "square")):
                    self.assertEqual(os.path.realpath(key.object), exe, key)
                for line in f.cost_lines:
                    if line.line == 0:
                        no_line.setdefault(key.object, []).append(line.instr)
        for obj, addrs in no_line.items():
            out = subprocess.run(["addr2line", "-e", obj] + ["%#x" % a for a in addrs], capture_output=True,
                                 text=True, timeout=cgtest.limit(60)).stdout.splitlines()
            self.assertEqual(len(out), len(addrs), out)
            for addr, answer in zip(addrs, out):
                self.assertRegex(answer, r":(\?|0)( \(discriminator \d+\))?$",
                                 "%s %#x: line 0 in the profile" % (obj, addr))
        self.assertEqual(seen, set(self.expected["functions"]))


class Basic(ExampleTest):
    name = "basic"

    def test_qsort_callback_caller(self):
        """compare_ints is called from libc (qsort's internals); the frame
        that called qsort shows a call into that libc function, and its
        inclusive time covers the callbacks'."""
        prof = self.profiles[0]
        cb = [c for c in prof.calls if c.callee.name == "compare_ints"]
        self.assertTrue(cb)
        libc_fn = {c.caller for c in cb}
        self.assertEqual(len(libc_fn), 1, libc_fn)
        into = [c for c in prof.calls if c.caller.name == "sort_scores" and c.callee in libc_fn]
        self.assertEqual(len(into), 1, "sort_scores -> libc function")
        self.assertGreaterEqual(into[0].costs[0], sum(c.costs[0] for c in cb))

    def test_costs_add_up(self):
        prof = self.profiles[0]
        # main's inclusive time is (up to rounding) the whole profile
        total = prof.total_self()
        incl_main = prof.inclusive("main")
        self.assertLessEqual(incl_main, total)
        self.assertGreater(incl_main, total * 0.999)
        # crunch is a loop of real work: the function with the most self
        # time, and most of the time the program spent on the CPU. Exact
        # time is wall-clock time: a thread switched out in fib or main
        # charges them the wait (the run's total was 5 times crunch's on a
        # loaded machine), so the exact clock's run is made again with the
        # time off the CPU apart (CGPROF_OFF_CPU=1: cgprof_off_cpu's calls,
        # from the function that was running) and compared on the rest.
        # Sampled time is CPU time already.
        cpu = prof
        if "sampled" not in prof.desc_value("Clock"):
            run = run_preloaded(self, [example(self.name)], env=dict(self.env or {}, CGPROF_OFF_CPU="1"))
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(cgtest.stderr_lines(run.stderr), [], "time off the CPU refused")
            (cpu,) = run.profiles(strict=True)
            self.assert_valid(cpu)
        own = {}
        for key, f in cpu.functions.items():
            own[key.name] = own.get(key.name, 0) + f.self_costs(1)[0]
        on_cpu = cpu.total_self() - own.pop("cgprof_off_cpu", 0)
        self.assertEqual(max(own, key=own.get), "crunch", own)
        self.assertGreater(own["crunch"], 0.3 * on_cpu, own)


class Threads(ExampleTest):
    name = "threads"

    def test_each_worker_in_its_own_file(self):
        roots = {}
        for prof in self.profiles:
            for c in prof.calls:
                if c.callee.name.endswith("_worker"):
                    roots.setdefault(prof.thread, set()).add(c.callee.name)
                    self.assertEqual(c.caller.name, "start_thread", c)
        self.assertEqual(sorted(len(v) for v in roots.values()), [1, 1, 1, 1])
        self.assertEqual(set().union(*roots.values()),
                         {"primes_worker", "sort_worker", "fib_worker", "hash_worker"})
        self.assertNotIn(1, roots, "workers are not in the main thread's file")


class Uselib(ExampleTest):
    name = "uselib"

    def test_library_under_its_own_object(self):
        prof = self.profiles[0]
        lib = os.path.realpath(os.path.join(cgtest.BUILD_DIR, "examples", "libcgdemo.so"))
        objs = {k.name: os.path.realpath(k.object) for k in prof.functions}
        for fn in ("demo_sum_squares", "demo_map_sum", "square"):
            self.assertEqual(objs.get(fn), lib, fn)
        self.assertEqual(objs.get("triple"), os.path.realpath(example("uselib")))


class Cxx(ExampleTest):
    name = "cxx"


class Server(ExampleTest):
    name = "server"


class ThreadsMonotonic(Threads):
    env = {"CGPROF_CLOCK": "monotonic"}
    valgrind = False


class BasicSampled(Basic):
    env = {"CGPROF_TIME": "sample"}
    valgrind = False


class CxxSampled(Cxx):
    env = {"CGPROF_TIME": "sample"}
    valgrind = False


if __name__ == "__main__":
    unittest.main(verbosity=2)
