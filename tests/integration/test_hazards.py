"""Issue 14's cases (tests/progs/hazards.c): fork, vfork, quick_exit, stack
overflow, a program that blocks every signal, a program that waits for the
dump signal itself, and the dump signal in the program's first
milliseconds. Each states the exact counts the program makes, known by
construction or printed by the program."""

import glob
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgtest  # noqa: E402
from cgtest import ProfileAssertions, Started, prog, run_preloaded  # noqa: E402

from cgproflib import reader  # noqa: E402
from test_dumps import LineReader  # noqa: E402

HAZARDS = prog("hazards")
CONTROL = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof-control")
LAUNCHER = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof")
OWN = ("main", "work", "spawn_child", "child", "fork_grandchild", "spawn_vfork", "setup", "after_child",
       "on_quick_exit", "recurse", "overflow_thread", "worker")


def own_counts(counts):
    """The arcs into the program's own functions (their callers may be the
    C library's: __libc_start_call_main -> main)."""
    return {k: v for k, v in counts.items() if k[1] in OWN and v}


def summed(profiles):
    total = {}
    for p in profiles:
        for k, v in p.call_counts().items():
            total[k] = total.get(k, 0) + v
    return total


def into(counts, callee):
    return sum(v for (a, b), v in counts.items() if b == callee)


class Fork(ProfileAssertions):
    def test_calls_in_progress_at_fork_are_counted_once(self):
        n = 100
        run = run_preloaded(self, [HAZARDS, "forktree", str(n)], env={"CGPROF_TOTAL": "0"})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stderr, "")
        grand = (n + 9) // 10
        self.assertEqual(len(run.files), 1 + n + grand, "one file per process")
        profs = run.profiles()
        for p in profs:
            self.assert_valid(p)
        counts = own_counts(summed(profs))
        main_callers = {k for k in counts if k[1] == "main"}
        self.assertEqual(len(main_callers), 1, counts)
        self.assertEqual(counts, {
            main_callers.pop(): 1,
            ("main", "spawn_child"): n,
            ("spawn_child", "child"): n,
            ("child", "work"): n,
            ("child", "fork_grandchild"): grand,
            ("fork_grandchild", "work"): grand,
            ("main", "work"): 1,
        })
        # a child continues main -> spawn_child: time from the fork, no call
        children = [p for p in profs if p.call_counts().get(("spawn_child", "child"))]
        self.assertEqual(len(children), n)
        for p in children:
            arcs = [c for c in p.calls if (c.caller.name, c.callee.name) == ("main", "spawn_child")]
            self.assertEqual([c.count for c in arcs], [0], p.path)
            self.assertIsNotNone(p.desc_value("Calls continued"), p.path)


class Vfork(ProfileAssertions):
    def test_vfork_child_calls_are_not_the_parents(self):
        n = 3
        run = run_preloaded(self, [HAZARDS, "vfork", str(n)])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("setup() ran %d times" % (2 * n), run.stdout)  # the children did call it
        self.assertEqual(len(run.files), 1, run.files)
        prof = reader.load(run.files[0], strict=True)
        self.assert_valid(prof)
        counts = own_counts(prof.call_counts())
        self.assertEqual({k: v for k, v in counts.items() if k[1] != "main"}, {
            ("main", "spawn_vfork"): n,
            ("spawn_vfork", "after_child"): n,
            ("after_child", "work"): n,
        })
        self.assertEqual(into(counts, "main"), 1)


class QuickExit(ProfileAssertions):
    def test_quick_exit_writes_the_profile(self):
        run = run_preloaded(self, [HAZARDS, "quick_exit"])
        self.assertEqual(run.returncode, 3, run.stderr)
        self.assertEqual(run.stdout, "hazards: quick_exit\n")
        self.assertEqual(len(run.files), 1, run.files)
        prof = reader.load(run.files[0], strict=True)
        self.assert_valid(prof)
        self.assertEqual(prof.desc_value("Trigger"), "Program termination by quick_exit()")
        counts = own_counts(prof.call_counts())
        self.assertEqual(into(counts, "main"), 1)
        self.assertEqual(into(counts, "on_quick_exit"), 1)
        self.assertEqual({k: v for k, v in counts.items() if k[1] == "work"},
                         {("main", "work"): 3, ("on_quick_exit", "work"): 1})
        total = glob.glob(os.path.join(run.directory, "callgrind.total.*"))
        self.assertEqual(len(total), 1)


@unittest.skipIf(cgtest.WRAPPER, "valgrind runs the program on a stack of its own")
class StackOverflow(ProfileAssertions):
    def overflow(self, where):
        depth_file = os.path.join(tempfile.mkdtemp(prefix="cgprof-depth-"), "depth")
        self.addCleanup(shutil.rmtree, os.path.dirname(depth_file), ignore_errors=True)

        def stack_8mb():
            resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, 8 << 20))
        directory = tempfile.mkdtemp(prefix="cgprof-test-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        env = cgtest.clean_environ({"LD_PRELOAD": cgtest.LIB, "CGPROF_CRASH": "1"})
        p = subprocess.run(cgtest.emulated([HAZARDS, "overflow", where, depth_file]), cwd=directory, env=env,
                           capture_output=True, text=True, timeout=cgtest.limit(120), preexec_fn=stack_8mb)
        self.assertEqual(p.returncode, -signal.SIGSEGV, p.stderr)
        with open(depth_file, "rb") as f:
            depth, = struct.unpack("Q", f.read(8))
        self.assertGreater(depth, 1000)
        files = sorted(glob.glob(os.path.join(directory, "callgrind.out.*")))
        self.assertEqual(len(files), 1 if where == "main" else 2, files)
        profs = [reader.load(f, strict=True) for f in files]
        for prof in profs:
            self.assert_valid(prof)
            self.assertRegex(prof.desc_value("Trigger"), r"^Crash: SIGSEGV at address 0x[0-9a-f]+$")
        counts = own_counts(summed(profs))
        caller = "main" if where == "main" else "overflow_thread"
        self.assertEqual({k: v for k, v in counts.items() if k[1] == "recurse"},
                         {(caller, "recurse"): 1, ("recurse", "recurse"): depth - 1})
        self.assertEqual(into(counts, "main"), 1)
        if where == "thread":
            self.assertEqual(into(counts, "overflow_thread"), 1)

    def test_overflow_in_main(self):
        self.overflow("main")

    def test_overflow_in_a_thread(self):
        self.overflow("thread")


def started(test, argv):
    """The program of argv, once it says it is ready and the runtime's
    service is up."""
    run = Started(test, argv)
    test.assertEqual(run.p.stdout.readline(), "hazards: ready\n")
    run.wait_ready(cgtest.limit(30))
    return run


def finish(run):
    run.p.send_signal(signal.SIGTERM)
    return run.finish()


class BlockedSignals(ProfileAssertions):
    def test_dump_reaches_a_program_that_blocks_every_signal(self):
        run = started(self, [HAZARDS, "sigwait"])
        # cgprof-control -d waits for the dump's files
        c = subprocess.run([CONTROL, "-d", str(run.p.pid)], env=run.env, capture_output=True, text=True,
                           timeout=cgtest.limit(60))
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
        dumped = run.files()
        self.assertEqual(len(dumped), 2, dumped)   # main and the worker, part 1
        os.kill(run.p.pid, signal.SIGUSR1)          # the signal itself, as a user sends it
        end = time.monotonic() + cgtest.limit(30)
        while len(run.files()) < 4:
            self.assertLess(time.monotonic(), end, "no dump on SIGUSR1: %s" % run.files())
            time.sleep(0.02)
        rc, out, err = finish(run)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        worked = int(re.search(r"work (\d+)", out).group(1))
        profs = [reader.load(f, strict=True) for f in run.files()]
        self.assertEqual(len(profs), 6)   # three parts of two threads
        triggers = sorted({p.desc_value("Trigger") for p in profs})
        self.assertEqual(triggers, sorted(["cgprof-control: cgprof-control", "Signal SIGUSR1", "Thread exit",
                                           "Program termination"]))
        counts = own_counts(summed(profs))
        self.assertEqual(counts.get(("worker", "work")), worked)
        self.assertEqual(into(counts, "worker"), 1)

    def test_program_that_waits_for_the_signal_gets_it(self):
        run = Started(self, [HAZARDS, "waitusr1"])
        lines = LineReader(run.p.stdout)
        self.assertEqual(lines.line(), "hazards: ready\n")
        run.wait_ready(cgtest.limit(30))
        # each signal once the one before was taken (two pending at once
        # would be one)
        for n in range(1, 4):
            os.kill(run.p.pid, signal.SIGUSR1)
            self.assertEqual(lines.line(), "hazards: got SIGUSR1 %d\n" % n)
        rc, out, err = finish(run)
        self.assertEqual(rc, 0, err)
        self.assertIn("hazards: SIGUSR1 3\n", out)
        self.assertEqual(cgtest.stderr_lines(err), [
            "cgprof: the program waits for SIGUSR1: cgprof steps aside and no longer dumps on it "
            "(CGPROF_SIGNAL chooses another signal)"])
        profs = [reader.load(f, strict=True) for f in run.files()]
        self.assertEqual({p.desc_value("Trigger") for p in profs}, {"Thread exit", "Program termination"})


class EarlySignal(unittest.TestCase):
    """The dump signal sent from the moment the program starts."""

    def storm(self, argv, env, preexec_fn=None, runs=20):
        """The exit statuses of the runs, and how many dumps by signal they
        made."""
        statuses, dumps = [], 0
        for _ in range(runs):
            directory = tempfile.mkdtemp(prefix="cgprof-early-")
            try:
                p = subprocess.Popen(cgtest.emulated(argv), cwd=directory, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, preexec_fn=preexec_fn)
                sent = 0
                while p.poll() is None and sent < 5000:
                    try:
                        os.kill(p.pid, signal.SIGUSR1)
                    except ProcessLookupError:
                        break
                    sent += 1
                    time.sleep(0.002)
                p.communicate(timeout=cgtest.limit(60))
                statuses.append(p.returncode)
                for f in glob.glob(os.path.join(directory, "callgrind.out.*")):
                    with open(f) as text:
                        dumps += "desc: Trigger: Signal SIGUSR1\n" in text.read()
            finally:
                shutil.rmtree(directory, ignore_errors=True)
        return statuses, dumps

    def env(self):
        return cgtest.clean_environ({"LD_PRELOAD": cgtest.LIB, "CGPROF_TOTAL": "0"})

    def test_blocked_across_exec_until_the_handler_is_in(self):
        # what the launcher does: the signal blocked in the child before the
        # exec, _CGPROF_UNBLOCK_SIGNAL says so
        env = dict(self.env(), _CGPROF_UNBLOCK_SIGNAL=str(int(signal.SIGUSR1)))
        statuses, dumps = self.storm([cgtest.example("basic")], env,
                                     preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1]))
        self.assertEqual(statuses, [0] * len(statuses))
        # and the signals were not left blocked: they asked for dumps
        self.assertGreater(dumps, 0)
        print("dumps by signal in the 20 runs: %d" % dumps)

    def test_unblocked_once_the_handler_is_in(self):
        directory = tempfile.mkdtemp(prefix="cgprof-early-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        env = dict(self.env(), _CGPROF_UNBLOCK_SIGNAL=str(int(signal.SIGUSR1)))
        p = subprocess.run(cgtest.emulated([HAZARDS, "mask"]), env=env, capture_output=True, text=True,
                           timeout=cgtest.limit(60), cwd=directory,
                           preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1]))
        # and the variable is gone: the program's children start as it is
        self.assertEqual(p.stdout, "hazards: SIGUSR1 blocked 0, _CGPROF_UNBLOCK_SIGNAL absent\n")

    def test_a_signal_blocked_by_the_parent_stays_blocked(self):
        directory = tempfile.mkdtemp(prefix="cgprof-early-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        p = subprocess.run(cgtest.emulated([HAZARDS, "mask"]), env=self.env(), capture_output=True, text=True,
                           timeout=cgtest.limit(60), cwd=directory,
                           preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1]))
        self.assertEqual(p.stdout, "hazards: SIGUSR1 blocked 1, _CGPROF_UNBLOCK_SIGNAL absent\n")

    def test_launcher(self):
        directory = tempfile.mkdtemp(prefix="cgprof-early-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        env = cgtest.clean_environ()
        p = subprocess.run([LAUNCHER, "-q", "--lib=" + cgtest.LIB, HAZARDS, "mask"], env=env, capture_output=True,
                           text=True, timeout=cgtest.limit(60), cwd=directory)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "hazards: SIGUSR1 blocked 0, _CGPROF_UNBLOCK_SIGNAL absent\n")
        # signals sent to the program from its start, through the launcher
        statuses = []
        for _ in range(10):
            launcher = subprocess.Popen([LAUNCHER, "-q", "--lib=" + cgtest.LIB, cgtest.example("basic")], env=env,
                                        cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            child = None
            while launcher.poll() is None:
                if child is None:
                    try:
                        with open("/proc/%d/task/%d/children" % (launcher.pid, launcher.pid)) as f:
                            pids = f.read().split()
                        child = int(pids[0]) if pids else None
                    except OSError:
                        pass
                if child is not None:
                    try:
                        os.kill(child, signal.SIGUSR1)
                    except ProcessLookupError:
                        pass
                time.sleep(0.001)
            launcher.communicate(timeout=cgtest.limit(60))
            statuses.append(launcher.returncode)
            self.assertIsNotNone(child)
        self.assertEqual(statuses, [0] * len(statuses))


if __name__ == "__main__":
    unittest.main(verbosity=2)
