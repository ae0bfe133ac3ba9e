"""Dumps on demand: the dump signal, the control API, thread exit, zeroing
and pausing, fork and exec. Exact call counts come from the programs in
tests/progs and examples/server."""

import glob
import os
import re
import select
import shutil
import signal
import subprocess
import time
import unittest

import cgtest
from cgproflib import control, reader
from cgtest import ProfileAssertions, Started, example, prog, run_preloaded
from test_control import wait_profiled

PART_RE = re.compile(r"callgrind\.out\.(\d+)(?:\.(\d+))?-(\d\d)$")


def parts_of(files):
    """{(part, thread): path}; a file without a part number is part 1."""
    out = {}
    for f in files:
        m = PART_RE.search(os.path.basename(f))
        out[(int(m.group(2) or 1), int(m.group(3)))] = f
    return out


def counts_of(path):
    return reader.load(path).call_counts()


def add_counts(total, counts):
    for k, v in counts.items():
        total[k] = total.get(k, 0) + v
    return total


def status_of(run, pid=None):
    """The status file of a Started run (or of pid, in its control
    directory), parsed."""
    path = os.path.join(run.dir, "ctl", "%d.status" % pid) if pid else run.status
    with open(path) as f:
        return control.parse_status(f.read())


def wait_served(test, run, before, pid=None):
    """Until the runtime of run (or pid) has served a request more than
    `before` (the status's done), with a limit; its status then."""
    deadline = time.monotonic() + cgtest.limit(60)
    while True:
        st = status_of(run, pid)
        if st.done > before:
            return st
        test.assertIsNone(run.p.poll(), "the program ended before it served the signal")
        test.assertLess(time.monotonic(), deadline, "the dump signal was not served")
        time.sleep(0.01)


def signal_phases(test, env=None, signals=5, every=0.12):
    """tests/progs/phases started with its argument "wait" (its threads,
    their work done, wait until its stdin ends), sent the dump signal
    `signals` times, `every` seconds apart, while it works; then again until
    a dump by signal has written a part of each of its 3 threads (the
    status's last: names the files of the last part), so that dumps cut every thread however slow the
    machine. Returns the Started run, waiting: run.finish() ends it."""
    run = Started(test, [prog("phases"), "wait"], env=env)
    run.wait_ready()
    for _ in range(signals):
        time.sleep(every)
        os.kill(run.p.pid, signal.SIGUSR1)
    deadline = time.monotonic() + cgtest.limit(60)
    while True:
        before = status_of(run).done
        os.kill(run.p.pid, signal.SIGUSR1)
        last = wait_served(test, run, before).last
        # the part's files (with CGPROF_PATHS=1, its path files too), by
        # thread
        if len({os.path.basename(f).rsplit("-", 1)[-1] for f in last}) == 3:
            return run
        test.assertLess(time.monotonic(), deadline, "no dump by signal of the 3 threads: %s" % last)


class LineReader:
    """The lines a program writes to a pipe, each waited for with a limit:
    select() on its descriptor, read unbuffered (what is read here is not
    left for communicate())."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.pending = b""

    def line(self, timeout=cgtest.limit(30)):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no line from the program within %g s (got %r)" % (timeout, self.pending))
            if select.select([self.fd], [], [], left)[0]:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    raise AssertionError("the program's output ended (got %r)" % self.pending)
                self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode() + "\n"


class Api(ProfileAssertions):
    def test_parts_zero_pause_and_names(self):
        run = run_preloaded(self, [prog("api")])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("loaded=1 name=0 dump1=0 zero=0 off=0 on=0 dump2=0", run.stdout)
        parts = parts_of(run.files)
        self.assertEqual(sorted(parts), [(1, 1), (1, 2), (2, 1), (3, 1)])
        profs = {k: reader.load(v, strict=True) for k, v in parts.items()}
        for p in profs.values():
            self.assert_valid(p)
        self.assertEqual(profs[(1, 1)].desc_value("Trigger"), "Client request: phase one")
        self.assertEqual(profs[(2, 1)].desc_value("Trigger"), "Client request: phase two")
        self.assertEqual(profs[(3, 1)].desc_value("Trigger"), "Program termination")
        self.assertEqual(profs[(1, 2)].desc_value("Trigger"), "Thread exit")
        self.assertEqual(profs[(1, 1)].desc_value("Thread name"), "api-main")
        self.assertEqual(profs[(1, 2)].desc_value("Thread name"), "api-worker")
        self.assertEqual([p.part for p in (profs[(1, 1)], profs[(2, 1)], profs[(3, 1)])], [1, 2, 3])
        c1, c2, c3 = (profs[(i, 1)].call_counts() for i in (1, 2, 3))
        own = lambda c: {k[1]: v for k, v in c.items() if k[0] == "repeat"}
        self.assertEqual(own(c1), {"work_a": 3})
        self.assertEqual(own(c2), {"work_c": 4, "work_e": 6})  # work_b zeroed, work_d paused
        self.assertEqual(own(c3), {"work_f": 7})
        self.assertEqual(profs[(1, 2)].call_counts()[("repeat", "work_g")], 8)
        # main runs across all parts: counted once, in the first
        mains = [sum(v for (a, b), v in c.items() if b == "main") for c in (c1, c2, c3)]
        self.assertEqual(mains, [1, 0, 0])
        self.assertIsNotNone(profs[(2, 1)].desc_value("Calls continued"))

    def test_without_runtime(self):
        run = run_preloaded(self, [prog("api")], preload=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("loaded=0 name=-1 dump1=-1 zero=-1 off=-1 on=-1 dump2=-1", run.stdout)
        self.assertEqual(run.files, [])


class SignalDumps(ProfileAssertions):
    def test_sum_rule(self):
        """k dumps cut each thread's profile into parts that add up to the
        same call counts as a run without dumps (and about the same time)."""
        whole = run_preloaded(self, [prog("phases")])
        self.assertEqual(whole.returncode, 0, whole.stderr)
        expected = {int(p.thread): p for p in whole.profiles()}
        self.assertEqual(sorted(expected), [1, 2, 3])

        start = time.monotonic_ns()
        run = signal_phases(self)
        rc, out, err = run.finish()
        wall = time.monotonic_ns() - start
        self.assertEqual(rc, 0, err)
        parts = parts_of(run.files())
        # at least one dump on demand cut the run (signals that arrive
        # during a dump are served together: on a loaded machine the
        # signals may make fewer parts, which must add up all the same)
        self.assertGreaterEqual(max(p for p, t in parts), 2, sorted(parts))
        for thread, prof in expected.items():
            files = [f for (p, t), f in sorted(parts.items()) if t == thread]
            self.assertGreaterEqual(len(files), 2, "thread %d was cut into parts" % thread)
            total, self_ns = {}, 0
            after_signal = False
            for f in files:
                p = reader.load(f, strict=True)
                # A thread caught making calls by a dump (the runtime reads
                # it again, up to 4 times, until it holds still: reading.c)
                # may have a call split between the part that reading ends
                # and the next (docs/cgprof-control.md, "Dumps of running
                # threads"): both may fall short of the sum rule by a little.
                signalled = p.desc_value("Trigger").startswith("Signal")
                self.assert_valid(p, running_slack=0.01 if signalled or after_signal else 0.0)
                after_signal = signalled
                add_counts(total, p.call_counts())
                self_ns += p.total_self()
            self.assertEqual(total, prof.call_counts(), "thread %d" % thread)
            # Time, from this run alone (the run without dumps may have
            # met another load: a usleep(1200) overruns by milliseconds on
            # a busy machine): the thread's parts hold at least its sleeps
            # (phases.c: 600 x 1.2 ms, 500 x 1.5 ms, 400 x 1.9 ms) and at
            # most the run's wall time, as they would if any interval were
            # counted twice.
            slept = {1: 600 * 1.2e6, 2: 500 * 1.5e6, 3: 400 * 1.9e6}[thread]
            self.assertGreaterEqual(self_ns, slept, "thread %d" % thread)
            self.assertLessEqual(self_ns, wall, "thread %d" % thread)

    def test_blocked_threads_dumped_promptly(self):
        run = Started(self, [example("server"), "-s", "-n", "0"])
        run.wait_ready()
        wait_profiled(self, run.env, run.p, 5)   # main and the 4 workers
        end = time.monotonic() + cgtest.limit(60)
        os.kill(run.p.pid, signal.SIGUSR1)
        # The workers wait on a condition variable until SIGTERM: a dump
        # that waited for them would never end. No bound on how soon it
        # does (a loaded machine is slow), only that it does.
        while len([f for f in run.files() if ".1-" in f]) < 5 and time.monotonic() < end:
            time.sleep(0.005)
        self.assertEqual(len([f for f in run.files() if ".1-" in f]), 5, run.files())
        run.p.send_signal(signal.SIGTERM)
        run.finish()

    def test_storm_of_signals(self):
        """Hundreds of signals in a second: no crash, no hang, every file
        valid, and not one call lost or counted twice."""
        # The server serves until SIGTERM, so that every signal of the
        # storm lands while it runs, however slow the machine; its calls
        # follow from the requests it says it served.
        run = Started(self, [example("server"), "-n", "0", "-p", "40"])
        run.wait_ready()
        sent = 0
        # 470 signals, 2 ms apart (about a second on an idle machine), and
        # more if need be until two dumps are served (a service thread kept
        # from running through the storm serves it all as one)
        deadline = time.monotonic() + cgtest.limit(60)
        while sent < 470 or status_of(run).parts < 2:
            self.assertIsNone(run.p.poll(), "the server ended in the storm")
            self.assertLess(time.monotonic(), deadline, "fewer than 2 dumps served for %d signals" % sent)
            os.kill(run.p.pid, signal.SIGUSR1)
            sent += 1
            time.sleep(0.002)
        run.p.send_signal(signal.SIGTERM)
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        m = re.search(r"served (\d+) requests \(static (\d+), query (\d+), upload (\d+)\) with (\d+) workers", out)
        self.assertTrue(m, out)
        parts = parts_of(run.files())
        self.assertGreater(max(p for p, t in parts), 2)
        self.assertLessEqual(max(p for p, t in parts), sent + 1)
        # Every file valid, its totals its own sum; counts summed over the
        # parts exact. (Parts of a busy thread read while it runs may split a
        # call's self and inclusive time between two parts: docs/cgprof-control.md, "Dumps of
        # running threads"; no inclusive >= self check here.)
        total = {}
        for f in parts.values():
            p = reader.load(f, strict=True)
            self.assertEqual([str(v) for v in p.violations], [])
            self.assertEqual(p.totals, [p.total_self()])
            add_counts(total, p.call_counts())
        expected = server_calls(*[int(g) for g in m.groups()])
        # the formula is examples/server.c's, as expected.json has it for
        # its default run
        self.assertEqual(server_calls(20000, 10000, 6000, 4000, 4), cgtest_expected("server")["calls"])
        for arc, n in expected.items():
            caller, callee = arc.split(" -> ")
            self.assertEqual(total.get((caller, callee)), n, arc)

    def test_other_signal_and_none(self):
        # The server runs until SIGTERM, which it is sent once a dump that a
        # SIGUSR2 asked for is written. The runtime's service is up (its
        # status file) before the program's first hook: a dump asked for
        # then has no thread to write, and nothing is written (1 run in 4
        # here); so the signal is sent again until a part comes.
        run = Started(self, [example("server"), "-n", "0"], env={"CGPROF_SIGNAL": "USR2"})
        run.wait_ready()

        def triggers():
            found = set()
            for f in run.files():
                try:
                    found.add(reader.load(f).desc_value("Trigger"))
                except (OSError, reader.CallgrindFormatError):
                    pass  # a file still being written: read again
            return found

        end = time.monotonic() + cgtest.limit(30)
        while "Signal SIGUSR2" not in triggers() and time.monotonic() < end and run.p.poll() is None:
            os.kill(run.p.pid, signal.SIGUSR2)
            time.sleep(0.1)
        os.kill(run.p.pid, signal.SIGTERM)
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        self.assertIn("Signal SIGUSR2", triggers())
        run = Started(self, [cgtest.example("basic")], env={"CGPROF_SIGNAL": "none"})
        rc, out, err = run.finish()
        self.assertEqual((rc, err), (0, ""))
        self.assertFalse(os.path.exists(run.status), "no control files without a signal")

    def test_program_with_its_own_handler(self):
        run = run_preloaded(self, [prog("ownsig")])
        self.assertEqual(run.returncode, 0)
        self.assertIn("handled 3", run.stdout)
        lines = cgtest.stderr_lines(run.stderr)
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertIn("SIGUSR1", lines[0])
        self.assertIn("steps aside", lines[0])
        self.assertEqual([os.path.basename(f)[-3:] for f in run.files], ["-01"])


    def test_signal_ignored_from_the_start(self):
        """A dump signal whose action is already set when the runtime starts
        (here inherited as ignored) is left alone, and said so once."""
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="cgprof-ign-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        env = cgtest.clean_environ({"LD_PRELOAD": cgtest.LIB, "CGPROF_CONTROL_DIR": os.path.join(d, "ctl")})
        p = subprocess.run(cgtest.emulated([cgtest.example("basic")]), cwd=d, env=env, capture_output=True, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGUSR1, signal.SIG_IGN), timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("SIGUSR1 already has an action", lines[0])
        self.assertEqual(len(glob.glob(os.path.join(d, "callgrind.out.*"))), 1)


CONTROL = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof-control")
LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
# callgrind_annotate's function list: "8,000,000 (75.00%)  file:function [object]"
ANNOTATE_ROW = re.compile(r"^\s*([\d,]+) \(\s*([\d.]+)%\)\s+\S*?:(\S+) \[", re.M)
# cgprof report's flat profile: "incl. ms  %  self ms  calls  function [file]"
REPORT_ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+([\d.]+)\s+\S+\s+(\S+)\s+\[", re.M)


class EveryPartReadRight(ProfileAssertions):
    """Issue 27 (3): callgrind_annotate read every part after the first
    wrong. A call running across a dump continues in the next part with
    calls=0, and callgrind_annotate takes a calls=0 line's time for the
    caller's own: a worker's part 2 showed start_thread at 100% self beside
    worker_main's 99.9%, 200-300% in all. Such lines are now written where
    only cgprof's reader looks (behind "#> ", last)."""

    def annotate_self(self, path):
        """{function: self ns} of callgrind_annotate's whole function list,
        and its program total."""
        p = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", path],
                           capture_output=True, text=True, timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "", path)
        head, _, table = p.stdout.partition("PROGRAM TOTALS")
        first = head.rsplit("\n", 1)[-1].split()[0]
        total = 0 if first == "." else int(first.replace(",", ""))   # "." : nothing
        out = {}
        for m in ANNOTATE_ROW.finditer(table):
            self.assertNotIn(m.group(3), out, path)
            out[m.group(3)] = int(m.group(1).replace(",", ""))
        self.assertEqual(sum(out.values()), total, p.stdout)
        self.assertLessEqual(max([float(m.group(2)) for m in ANNOTATE_ROW.finditer(table)], default=0), 100.0)
        return out, total

    def report_self(self, path):
        """{function: self ms} of cgprof report's flat profile by self time."""
        p = subprocess.run([LAUNCHER, "report", "--sort=self", "--top=0", path], env=cgtest.clean_environ(),
                           capture_output=True, text=True, timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, p.stderr)
        return {m.group(2): float(m.group(1)) for m in REPORT_ROW.finditer(p.stdout)}, p.stdout

    def test_callgrind_annotate_agrees_with_report_on_every_part(self):
        if not shutil.which("callgrind_annotate"):
            self.skipTest("callgrind_annotate is not installed")
        for settings in ({}, {"CGPROF_TIME": "sample", "CGPROF_THROTTLE": "10000:1000"}):
            with self.subTest(settings=settings):
                # the server with its workers busy, dumped, zeroed, dumped
                run = Started(self, [example("server"), "-n", "0", "-p", "100"], env=settings)
                run.wait_ready()
                wait_profiled(self, run.env, run.p, 5)   # main and the 4 workers, in every part
                for args in (["-d"], ["-z"], ["-d"]):
                    time.sleep(0.3)   # the workers' calls, in each part
                    c = subprocess.run([CONTROL] + args + [str(run.p.pid)], env=run.env, capture_output=True,
                                       text=True, timeout=cgtest.limit(60))
                    self.assertEqual(c.returncode, 0, c.stderr)
                run.p.send_signal(signal.SIGTERM)
                rc, _, err = run.finish()
                self.assertEqual(rc, 0, err)
                parts = parts_of(run.files())
                # 4 workers and main, 3 parts each (two dumps, the exit)
                self.assertEqual(sorted(parts), [(p, t) for p in (1, 2, 3) for t in range(1, 6)])
                continued = 0
                for (part, thread), f in sorted(parts.items()):
                    prof = reader.load(f, strict=True)
                    self.assertEqual([str(v) for v in prof.violations], [], f)
                    if part > 1:
                        continued += int((prof.desc_value("Calls continued") or "0").split()[0])
                    ann, total = self.annotate_self(f)
                    self.assertEqual(total, prof.total_self(), f)
                    # self time per function: callgrind_annotate's = the file's (cgprof's reader)
                    mine = {fn.name: 0 for fn in prof.functions.values()}
                    for fn in prof.functions.values():
                        mine[fn.name] += fn.self_costs(1)[0]
                    self.assertEqual({k: v for k, v in ann.items() if v},
                                     {k: v for k, v in mine.items() if v}, f)
                    # and cgprof report's top functions by self time are callgrind_annotate's
                    rep, text = self.report_self(f)
                    top = [ms for ms in sorted((round(v / 1e6, 3) for v in ann.values()), reverse=True) if ms][:5]
                    self.assertEqual(top, [ms for ms in sorted(rep.values(), reverse=True) if ms][:5], text)
                    for name, ns in ann.items():
                        self.assertAlmostEqual(rep.get(name, 0.0), ns / 1e6, delta=0.0015, msg=(f, name, text))
                # the case of the issue: calls running across the dumps
                self.assertGreater(continued, 0)


class ThreadExit(ProfileAssertions):
    def test_ten_thousand_threads(self):
        n = 10000
        run = run_preloaded(self, [prog("manythreads"), str(n)], timeout=cgtest.limit(600))
        self.assertEqual(run.returncode, 0, run.stderr)
        m = re.search(r"rss after 1000: (\d+) kB, at the end: (\d+) kB", run.stdout)
        at1000, at_end = int(m.group(1)), int(m.group(2))
        self.assertLess(at_end - at1000, 1024, "memory grows with finished threads: %s" % run.stdout)
        self.assertEqual(len(run.files), n + 1)
        names = {int(os.path.basename(f).rsplit("-", 1)[1]) for f in run.files}
        self.assertEqual(names, set(range(1, n + 2)))
        for f in run.files[:: n // 25]:
            p = reader.load(f, strict=True)
            self.assert_valid(p)
            if p.thread != 1:
                self.assertEqual(p.call_counts()[("body", "step")], 10)
                self.assertEqual(p.desc_value("Trigger"), "Thread exit")


    def test_merged_threads(self):
        """CGPROF_THREAD_EXIT=merge: threads that end are summed into one
        part, thread 00, written with the next dump (here, at exit)."""
        n = 2000
        run = run_preloaded(self, [prog("manythreads"), str(n)], env={"CGPROF_THREAD_EXIT": "merge"})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual([os.path.basename(f)[-3:] for f in run.files], ["-00", "-01"])
        merged = reader.load(run.files[0], strict=True)
        self.assert_valid(merged)
        self.assertEqual(merged.thread, 0)
        self.assertIn("%d threads that ended" % n, merged.desc_value("Thread name"))
        counts = merged.call_counts()
        self.assertEqual(counts[("body", "step")], 10 * n)
        self.assertEqual(counts[("start_thread", "body")], n)


class ForkExec(ProfileAssertions):
    def test_trace_children(self):
        """Issue 27 (8): every program a preloaded build tool starts paid the
        runtime's start-up, with no equivalent of Valgrind's
        --trace-children=no. CGPROF_TRACE_CHILDREN=0: what the program
        starts (system(), posix_spawn(), fork + execv) runs without the
        runtime and writes nothing; its forks (its own code) are still
        profiled; every process sees the LD_PRELOAD of the plain run (the
        default passes the runtime on, as before)."""
        plain = subprocess.run([prog("children")], env=cgtest.clean_environ(), capture_output=True, text=True,
                               timeout=cgtest.limit(120))
        self.assertEqual(plain.returncode, 0, plain.stderr)
        exec_images = ("system", "posix_spawn", "execv")
        for value, traced in (("1", True), ("0", False), ("no", False)):
            with self.subTest(CGPROF_TRACE_CHILDREN=value):
                run = run_preloaded(self, [prog("children")], env={"CGPROF_TRACE_CHILDREN": value})
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(run.stderr, "")
                if traced:
                    self.assertEqual(run.stdout.count("LD_PRELOAD=" + cgtest.LIB + "\n"), 5, run.stdout)
                else:
                    self.assertEqual(run.stdout, plain.stdout)
                cmds = {}
                for f in run.files:
                    prof = reader.load(f, strict=True)
                    self.assertEqual([str(v) for v in prof.violations], [], f)
                    cmds.setdefault(prof.cmd, []).append(counts_of(f).get(("main", "work"), 0))
                images = sorted(c.split()[-1] for c in cmds if c.split()[-1] in exec_images)
                self.assertEqual(images, sorted(exec_images) if traced else [], cmds)
                # the program (main -> work) and its two forks: one execs (its
                # part before the exec: no call), the other calls work
                own = [n for c, ns in cmds.items() if c.split()[-1] not in exec_images for n in ns]
                self.assertEqual(sorted(own), [0, 1, 1], cmds)
        # another library in LD_PRELOAD stays, for the children too
        libm = [l for l in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6")
                if os.path.exists(l)]
        if libm:
            run = run_preloaded(self, [prog("children")], env={"CGPROF_TRACE_CHILDREN": "0",
                                                                "LD_PRELOAD": cgtest.LIB + ":" + libm[0]})
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout.count("LD_PRELOAD=%s\n" % libm[0]), 5, run.stdout)

    def test_exec_writes_before_the_image_goes(self):
        emulator = cgtest.exec_emulator()
        run = run_preloaded(self, [prog("execer")] + emulator)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("child image done", run.stdout)
        parts = parts_of(run.files)
        self.assertEqual(sorted(parts), [(1, 1), (2, 1), (3, 1)])
        triggers = [reader.load(parts[(i, 1)]).desc_value("Trigger") for i in (1, 2, 3)]
        self.assertEqual(triggers, ["Exec of /nonexistent/program", "Exec of " + (emulator or ["/proc/self/exe"])[0],
                                    "Program termination"])
        works = [counts_of(parts[(i, 1)]).get(("main", "work")) for i in (1, 2, 3)]
        self.assertEqual(works, [3, 1, 2])

    def test_forked_child_serves_the_signal(self):
        run = Started(self, [prog("forkserve")])
        # the parent's line and the child's, in either order: the child
        # works (its thread is profiled) and waits at the end of its work
        # until stdin ends, so the signal finds it whatever the speed
        lines = LineReader(run.p.stdout)
        said = lines.line() + lines.line()
        child = int(re.search(r"child (\d+)", said).group(1))
        self.assertIn("forkserve: child working\n", said)
        status = os.path.join(run.dir, "ctl", "%d.status" % child)
        end = time.monotonic() + cgtest.limit(10)
        while not os.path.exists(status) and time.monotonic() < end:
            time.sleep(0.01)
        self.assertTrue(os.path.exists(status), "the child has its own control files")
        os.kill(child, signal.SIGUSR1)
        wait_served(self, run, 0, pid=child)
        rc, out, err = run.finish()
        self.assertEqual((rc, err), (0, ""))
        mine = [f for f in run.files() if ".%d." % child in os.path.basename(f)]
        parts = parts_of(mine)
        self.assertEqual(sorted(parts), [(1, 1), (2, 1)], run.files())
        p1 = reader.load(parts[(1, 1)], strict=True)
        self.assertEqual(p1.desc_value("Trigger"), "Signal SIGUSR1")
        self.assertEqual(p1.pid, child)
        total = add_counts(p1.call_counts(), counts_of(parts[(2, 1)]))
        self.assertEqual(total[("main", "work")], 400)

    def test_posix_spawn_and_vfork(self):
        run = run_preloaded(self, [prog("spawner")])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("posix_spawn status 0, vfork status 0", run.stdout)
        self.assertEqual(len(run.files), 1, run.files)
        self.assertEqual(counts_of(run.files[0])[("main", "work")], 2)


def server_calls(served, static, query, upload, workers):
    """examples/server's arcs for a run that served these requests with
    these workers (its header comment: the calls per request)."""
    return {
        "main -> parse_args": 1, "main -> produce": 1, "main -> print_report": 1,
        "produce -> make_request": served, "produce -> submit_request": served,
        "worker_main -> next_request": served + workers, "worker_main -> handle_request": served,
        "handle_request -> parse_request": served, "parse_request -> parse_header": 3 * served,
        "handle_request -> lookup_route": served, "lookup_route -> hash_bytes": served,
        "handle_request -> render_static": static, "render_static -> copy_chunk": 4 * static,
        "handle_request -> run_query": query, "run_query -> lookup_row": 8 * query,
        "lookup_row -> hash_bytes": 8 * query, "handle_request -> render_page": query,
        "render_page -> escape_field": 8 * query, "handle_request -> checksum_body": upload,
        "checksum_body -> crc_block": 16 * upload, "handle_request -> store_blob": upload,
        "store_blob -> hash_bytes": upload,
    }


def cgtest_expected(name):
    import json
    with open(os.environ.get("CGPROF_EXPECTED", os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json"))) as f:
        return json.load(f)[name]


if __name__ == "__main__":
    unittest.main(verbosity=2)
