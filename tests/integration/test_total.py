"""CGPROF_TOTAL: the file that sums every part of every thread of a run
(callgrind.total.<pid>). Its call counts and costs must be exactly the sums
of the per-thread and per-part files, whatever cut the run into parts
(dumps on demand, threads that ended, merged or not), and it must stay out
of what KCachegrind loads together with those files."""

import os
import re
import unittest

import cgtest
from cgproflib import reader
from cgtest import ProfileAssertions, example, prog, run_preloaded
from test_dumps import signal_phases

TOTAL_RE = re.compile(r"^callgrind\.total\.(\d+)$")


def totals_in(directory):
    return sorted(f for f in os.listdir(directory) if TOTAL_RE.match(f))


def kcachegrind_loads(directory, run):
    """The files KCachegrind opens for `kcachegrind <directory>/<run>`: the
    run's name itself and every <run>.* and <run>-* (TraceData::load in
    KCachegrind's libcore/tracedata.cpp, name filters file+".*" and
    file+"-*")."""
    return sorted(n for n in os.listdir(directory)
                  if n == run or n.startswith(run + ".") or n.startswith(run + "-"))


def sums(profiles):
    """What the total must hold, from the files of a run: per call site
    (caller, callee, call instruction) the calls and inclusive time, per
    function its self time, and the whole run's time."""
    calls, selfs, total = {}, {}, 0
    for p in profiles:
        for c in p.calls:
            k = (c.caller, c.callee, c.instr)
            n, t = calls.get(k, (0, 0))
            calls[k] = (n + c.count, t + c.costs[0])
        for key, f in p.functions.items():
            s = f.self_costs(1)[0]
            if s or key in selfs:
                selfs[key] = selfs.get(key, 0) + s
        total += p.totals[0]
    return calls, {k: v for k, v in selfs.items() if v}, total


class Total(ProfileAssertions):
    def check_total(self, directory, files, threads=None, parts=None, running_slack=0.0):
        """The run's total is valid, read by callgrind_annotate, and exactly
        the sum of `files`. Returns the total's profile."""
        names = totals_in(directory)
        self.assertEqual(len(names), 1, os.listdir(directory))
        pid = int(TOTAL_RE.match(names[0]).group(1))
        path = os.path.join(directory, names[0])
        # KCachegrind given the run (callgrind.out.<pid>) loads the per-thread
        # files, not the total; given the directory, it looks only at
        # callgrind.out.* (and cachegrind.out.*)
        loaded = kcachegrind_loads(directory, "callgrind.out.%d" % pid)
        self.assertEqual(loaded, sorted(os.path.basename(f) for f in files))
        self.assertNotIn(names[0], loaded)
        self.assertFalse(names[0].startswith("callgrind.out."))

        total = reader.load(path, strict=True)
        self.assert_valid(total, running_slack=running_slack)
        self.assertEqual((total.pid, total.thread), (pid, 0))
        profs = [reader.load(f, strict=True) for f in files]
        self.assertEqual(total.part, max(p.part for p in profs))
        want_calls, want_selfs, want_total = sums(profs)
        got_calls, got_selfs, got_total = sums([total])
        self.assertEqual(got_calls, want_calls)
        self.assertEqual(got_selfs, want_selfs)
        self.assertEqual(got_total, want_total)
        self.assertEqual(total.call_counts(), cgtest.merged_counts(profs))
        m = re.match(r"total of (\d+) threads?, (\d+) parts? summed", total.desc_value("Thread name") or "")
        self.assertIsNotNone(m, total.desc)
        if threads is not None:
            self.assertEqual(int(m.group(1)), threads)
        if parts is not None:
            self.assertEqual(int(m.group(2)), parts)
        return total

    def annotate_totals(self, path, names):
        """callgrind_annotate's PROGRAM TOTALS line for the file."""
        out = self.assert_annotate_accepts(path, names)
        m = re.search(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", out, re.M)
        self.assertIsNotNone(m, out[:2000])
        return int(m.group(1).replace(",", ""))

    def test_threads_example(self):
        run = run_preloaded(self, [example("threads")])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stderr, "", "silent by default")
        self.assertEqual(len(run.files), 5)
        total = self.check_total(run.directory, run.files, threads=5, parts=5)
        self.assertEqual(total.desc_value("Trigger"), "Program termination")
        # what callgrind_annotate shows is the whole program: every thread's
        # functions, and the time of all threads
        path = os.path.join(run.directory, totals_in(run.directory)[0])
        workers = ["primes_worker", "fib_worker", "hash_worker", "sort_worker"]
        shown = self.annotate_totals(path, ["main", "is_prime", "fib", "hash_string"] + workers)
        self.assertEqual(shown, sum(p.totals[0] for p in run.profiles()))
        counts = total.call_counts()
        self.assertEqual([cgtest.incoming(counts, w) for w in workers], [1, 1, 1, 1])
        self.assertEqual(counts[("fib", "fib")], 57312)

    def test_dumps_on_demand_and_a_thread_that_ended(self):
        """prog api: three parts of main (two cgprof_dump, the exit), a zeroing
        and a pause between them, and a worker that ended early."""
        run = run_preloaded(self, [prog("api")])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.files), 4)
        total = self.check_total(run.directory, run.files, threads=2, parts=4)
        own = {k[1]: v for k, v in total.call_counts().items() if k[0] == "repeat"}
        # work_b was zeroed, work_d ran paused: in no file, so not in the total
        self.assertEqual(own, {"work_a": 3, "work_c": 4, "work_e": 6, "work_f": 7, "work_g": 8})
        # main ran across the three parts: counted once
        self.assertEqual(cgtest.incoming(total.call_counts(), "main"), 1)
        self.assertIsNone(total.desc_value("Calls continued"))
        path = os.path.join(run.directory, totals_in(run.directory)[0])
        self.assertEqual(self.annotate_totals(path, ["work_a", "work_f", "work_g"]),
                         sum(p.totals[0] for p in run.profiles()))

    def test_signal_dumps_of_running_threads(self):
        """prog phases: three threads cut by dump signals while they run; the
        total adds up to the parts and counts what a run without dumps does."""
        run = signal_phases(self, signals=3, every=0.15)
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        files = run.files()
        self.assertGreater(len(files), 3, files)
        total = self.check_total(run.dir, files, threads=3, parts=len(files), running_slack=0.01)
        counts = total.call_counts()
        self.assertEqual(counts[("main", "tick")], 600)
        self.assertEqual(counts[("tick", "leaf")], 600 * 50)
        self.assertEqual(counts[("spin_a", "leaf")], 500 * 80)
        self.assertEqual(counts[("spin_b", "leaf")], 400 * 90)

    def test_merged_threads(self):
        """CGPROF_THREAD_EXIT=merge: the ended threads are in thread 00 and in
        the total, once."""
        n = 300
        run = run_preloaded(self, [prog("manythreads"), str(n)], env={"CGPROF_THREAD_EXIT": "merge"})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.files), 2)
        total = self.check_total(run.directory, run.files, threads=n + 1, parts=n + 1)
        self.assertEqual(total.call_counts()[("body", "step")], 10 * n)

    def test_off(self):
        run = run_preloaded(self, [example("threads")], env={"CGPROF_TOTAL": "0"})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.files), 5)
        self.assertEqual(totals_in(run.directory), [])
        self.assertEqual(sorted(os.listdir(run.directory)), sorted(os.path.basename(f) for f in run.files))

    def test_follows_the_prefix(self):
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="cgprof-total-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        cases = [("myapp.out", None, r"myapp\.out\.(\d+)-\d\d", r"myapp\.total\.(\d+)"),
                 ("prof-%p.cg", None, r"prof-(\d+)\.cg-\d\d", r"prof-total\.(\d+)\.cg"),
                 (os.path.join(d, "abs"), d, r"abs\.(\d+)-\d\d", r"abs\.total\.(\d+)")]
        for prefix, where, per_thread, total_name in cases:
            with self.subTest(prefix=prefix):
                run = run_preloaded(self, [example("basic")], env={"CGPROF_OUT": prefix})
                self.assertEqual(run.returncode, 0, run.stderr)
                where = where or run.directory
                names = sorted(os.listdir(where))
                self.assertEqual(len(names), 2, names)
                thread_file = [n for n in names if re.fullmatch(per_thread, n)]
                total_file = [n for n in names if re.fullmatch(total_name, n)]
                self.assertEqual((len(thread_file), len(total_file)), (1, 1), names)
                pid = re.fullmatch(per_thread, thread_file[0]).group(1)
                self.assertEqual(re.fullmatch(total_name, total_file[0]).group(1), pid)
                # the run's name, as KCachegrind is given it, leaves the total out
                run_name = thread_file[0].rsplit("-", 1)[0]
                self.assertEqual(kcachegrind_loads(where, run_name), thread_file)
                a = reader.load(os.path.join(where, thread_file[0]), strict=True)
                t = reader.load(os.path.join(where, total_file[0]), strict=True)
                self.assertEqual(sums([t]), sums([a]))
                for n in names:
                    os.unlink(os.path.join(where, n))

    def test_fork_counts_from_the_fork(self):
        """Each process has its own total: the child's from the fork."""
        run = run_preloaded(self, [prog("forker")])
        self.assertEqual(run.returncode, 0, run.stderr)
        child = int(re.search(r"child (\d+)", run.stdout).group(1))
        names = totals_in(run.directory)
        self.assertEqual(len(names), 2, names)
        for name in names:
            pid = int(TOTAL_RE.match(name).group(1))
            mine = [f for f in run.files if os.path.basename(f).startswith("callgrind.out.%d-" % pid)]
            self.assertEqual(len(mine), 1, run.files)
            t = reader.load(os.path.join(run.directory, name), strict=True)
            self.assertEqual(sums([t]), sums([reader.load(mine[0])]))
            self.assertEqual(t.call_counts()[("main", "work")], 2 if pid == child else 4)

    @unittest.skipIf(cgtest.WRAPPER, "valgrind cannot exec /proc/self/exe, which the program does")
    def test_exec(self):
        """The image that replaces this one writes its own total over the
        one written before the exec, under the same pid."""
        run = run_preloaded(self, [prog("execer")] + cgtest.exec_emulator())
        self.assertEqual(run.returncode, 0, run.stderr)
        names = totals_in(run.directory)
        self.assertEqual(len(names), 1, names)
        t = reader.load(os.path.join(run.directory, names[0]), strict=True)
        self.assertEqual(t.desc_value("Trigger"), "Program termination")
        self.assertEqual(t.call_counts()[("main", "work")], 2)
        self.assertEqual(t.part, 3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
