"""Shared helpers of the integration tests: run instrumented programs with
libcgprof.so preloaded, find the files they write, read them with the strict
format checker (cgproflib.reader)."""

import faulthandler
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from cgproflib import reader

# Every time limit of the tests (a subprocess's timeout, a wait for a file)
# is written as limit(seconds): one factor, CGPROF_TIMEOUT_MULTIPLIER, the
# one scripts/test also gives meson test (--timeout-multiplier), scales
# them all. A limit only stops a test that hangs; no test judges a duration
# by it (test_limits checks that every limit is written so).
TIMEOUT_MULTIPLIER = float(os.environ.get("CGPROF_TIMEOUT_MULTIPLIER") or 1)


def limit(seconds):
    return seconds * TIMEOUT_MULTIPLIER


# meson test ends a test that ran past its limit with SIGTERM: the traceback
# of every thread then goes into the test's log, at the step it was in,
# before the default action ends the process.
faulthandler.register(signal.SIGTERM, file=sys.stderr, all_threads=True, chain=True)

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("CGPROF_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
LIB = os.environ.get("CGPROF_LIB", os.path.join(BUILD_DIR, "runtime", "libcgprof.so"))


HOOKS = ("__cyg_profile_func_enter", "__cyg_profile_func_exit")


# The settings every test's program runs with unless it asks otherwise: the
# exact clock and no throttle, the runtime's defaults before sampled time
# and the throttle became them. The tests check the exact clock's figures
# (inclusive = self + callees to the ns, the examples' times) and exact
# counts (examples/basic's fib, 21,891 calls of a few ns each, which the
# default throttle would stop counting). test_defaults.py checks what a
# run with no setting gives (pinned=False); the tests of what the defaults
# are (--help, the man page, docs/variables.md's table) read the option table.
PINNED = {"CGPROF_TIME": "exact", "CGPROF_THROTTLE": "off"}


def clean_environ(extra=None, pinned=True, **more):
    """os.environ without the CGPROF_* variables (the test's own, or
    meson's) and LD_PRELOAD, with PINNED (unless pinned=False: the
    runtime's real defaults), then extra and the keyword arguments on top."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    if pinned:
        e.update(PINNED)
    e.update(extra or {})
    e.update(more)
    return e


# A command the profiled programs run under (meson test --setup memcheck:
# valgrind's memcheck), with the runtime preloaded into the program.
WRAPPER = os.environ.get("CGPROF_TEST_WRAPPER", "")

# The emulator that runs the programs of a cross build, each of them,
# profiled or not (scripts/test-aarch64: qemu-aarch64-static, which passes
# LD_PRELOAD and the rest of the environment on to the program, and runs it
# in the same process: the pid is the program's); empty for a build of this
# machine's own. Unlike WRAPPER it is the machine the program runs on: the
# tests that run under it check what they check on x86-64.
EMULATOR = os.environ.get("CGPROF_TEST_EMULATOR", "")

# The compilers of the build's machine, for the programs a test builds
# itself (a cross build's own: the cross file's gcc and g++).
CC = os.environ.get("CGPROF_TEST_CC", "gcc")
CXX = os.environ.get("CGPROF_TEST_CXX", "g++")

# The objdump that reads the build's programs (a cross build's own:
# aarch64-linux-gnu-objdump), and the mnemonic of a call in its output.
OBJDUMP = os.environ.get("CGPROF_TEST_OBJDUMP", "objdump")
CALL = r"(?:call|bl)"


def direct_call_bytes():
    """The length of a direct call of the build's machine (the runtime's
    ELF machine: x86-64's e8 rel32, 5 bytes; aarch64's BL, 4): where the
    code after a call begins."""
    with open(LIB, "rb") as f:
        machine = int.from_bytes(f.read(20)[18:20], "little")
    return 4 if machine == 183 else 5  # EM_AARCH64


# The threads the emulator adds to the program's process, before the
# program's own: qemu-user's one (its RCU thread, made as it starts, so the
# second in /proc/<pid>/task's order, named as qemu is).
EMULATOR_THREADS = 1 if EMULATOR else 0


# The period of tests/progs/sigstorm's timer, in us: a signal every 20 us;
# under an emulator every 200 us. There a signal's delivery and its
# handler take about 20 us: at 20 the program does nothing but handle
# signals, and a hook whose guard the handlers find taken defers their
# events faster than it replays them, past the runtime's 8,192, which are
# then lost (desc: Lost), as under valgrind, where the storm is not run.
# At 200 the program runs between signals, which still land in its hooks
# (tiny functions: most of its time is the hooks').
SIGSTORM_US = "200" if EMULATOR else "20"


def emulated(argv):
    """argv run as the build's machine runs it: under EMULATOR, if any."""
    import shlex
    return shlex.split(EMULATOR) + list(argv) if EMULATOR else list(argv)


def is_signal_return(name):
    """Whether name is the code a signal handler returns to, as the writer
    names it when it shows as a callee (the handler's frame, issue 27):
    libc's __restore_rt on x86-64, the vDSO's __kernel_rt_sigreturn on
    aarch64; under qemu-user its own page, in no object and named by its
    address (qemu maps it right after ld.so, whose module libdw ends at
    its 64 KiB alignment: the page is named as an address in ld.so)."""
    import re
    return name in ("__restore_rt", "__kernel_rt_sigreturn") or bool(
        EMULATOR and re.fullmatch(r"0x[0-9a-f]+", name))


def exec_emulator():
    """What a test program that execs an image of its own machine is told
    to exec instead (tests/progs/execer): the emulator's words, its file's
    full path first, under an emulator (qemu-user without binfmt_misc: the
    kernel cannot exec an emulated program, and a program exec'd through
    the emulator runs in the same process, as the kernel would run it);
    [] for none (the program execs itself)."""
    import shlex
    if not EMULATOR:
        return []
    words = shlex.split(EMULATOR)
    return [shutil.which(words[0]) or words[0]] + words[1:]


def shown_command(argv):
    """The command the kernel shows (/proc/PID/cmdline) for argv run as
    emulated() runs it: under an emulator, the emulator's words first (the
    process runs the emulator's file; only the runtime inside sees the
    program's own argv)."""
    return " ".join(emulated(argv))


def shown_name(program):
    """The name the kernel gives the main thread of program run as
    emulated() runs it (/proc/PID/comm, 15 bytes at most): the file exec'd,
    which under an emulator is the emulator's."""
    import shlex
    return os.path.basename(shlex.split(EMULATOR)[0] if EMULATOR else program)[:15]


def wrapped(argv):
    import shlex
    return (shlex.split(WRAPPER) if WRAPPER else []) + emulated(argv)


def stderr_lines(text):
    """The runtime's messages. Under a wrapper (valgrind), its launcher is
    preloaded too and repeats the start-up messages: count each once."""
    lines = text.strip().splitlines()
    if WRAPPER:
        lines = [l for l in dict.fromkeys(lines) if l.startswith("cgprof:")]
    return lines


def example(name):
    return os.path.join(BUILD_DIR, "examples", name)


def prog(name):
    return os.path.join(BUILD_DIR, "tests", "progs", name)


class Run:
    """One preloaded run: its exit status, output and profile files."""

    def __init__(self, returncode, stdout, stderr, directory, files):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.directory = directory
        self.files = files

    def profiles(self, strict=True):
        return [reader.load(f, strict=strict) for f in self.files]


def run_preloaded(testcase, argv, env=None, preload=True, timeout=limit(300), out_prefix=None, cwd=None, preexec_fn=None,
                  pinned=True, host=False):
    """Runs argv in a fresh directory (removed after the test, or after
    the class when testcase is a class: setUpClass) with the runtime
    preloaded; returns a Run with the profile files it wrote. env: on top
    of PINNED (pinned=False: on top of nothing, the runtime's own
    defaults). preexec_fn: run in the child before the program (resource
    limits). host=True: argv is this machine's command that runs the
    program itself (unshare ... sh -c ...: it gives the program emulated()
    itself), run as it is, never under the emulator."""
    directory = tempfile.mkdtemp(prefix="cgprof-test-")
    cleanup = testcase.addClassCleanup if isinstance(testcase, type) else testcase.addCleanup
    cleanup(shutil.rmtree, directory, ignore_errors=True)
    e = clean_environ(pinned=pinned)
    if preload:
        e["LD_PRELOAD"] = LIB
    if out_prefix is not None:
        e["CGPROF_OUT"] = out_prefix
    if env:
        e.update(env)
    command = list(argv) if host else wrapped(argv) if preload else emulated(argv)
    p = subprocess.run(command, cwd=cwd or directory, env=e, capture_output=True, text=True,
                       timeout=timeout * (20 if WRAPPER else 1), preexec_fn=preexec_fn)
    files = sorted(glob.glob(os.path.join(directory, "callgrind.out.*")))
    return Run(p.returncode, p.stdout, p.stderr, directory, files)


class Started:
    """A preloaded program running in the background in a temp directory,
    with a control directory of its own (env: its environment, for
    cgprof-control; on top of PINNED, unless pinned=False)."""

    def __init__(self, test, argv, env=None, pinned=True):
        self.dir = tempfile.mkdtemp(prefix="cgprof-dump-")
        test.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        e = clean_environ(pinned=pinned)
        e.update(LD_PRELOAD=LIB, CGPROF_CONTROL_DIR=os.path.join(self.dir, "ctl"))
        e.update(env or {})
        self.env = e
        self.p = subprocess.Popen(emulated(argv), cwd=self.dir, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.kill)
        self.status = os.path.join(self.dir, "ctl", "%d.status" % self.p.pid)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def wait_ready(self, timeout=limit(10)):
        """Until the runtime's service is up (its status file exists)."""
        end = time.monotonic() + timeout
        while not os.path.exists(self.status):
            if time.monotonic() > end or self.p.poll() is not None:
                raise AssertionError("the runtime did not start its service")
            time.sleep(0.01)

    def files(self):
        return sorted(glob.glob(os.path.join(self.dir, "callgrind.out.*")))

    def finish(self, timeout=limit(120), input=None):
        """Ends the program's stdin (after input), waits for its end."""
        out, err = self.p.communicate(input=input, timeout=timeout)
        return self.p.returncode, out, err


def valgrind_calls(testcase, argv, timeout=limit(600)):
    """Call counts {(caller, callee): n} of a run under valgrind --tool=callgrind
    (recursion suffixes folded, the hooks left out), summed over threads."""
    if not shutil.which("valgrind"):
        raise unittest.SkipTest("valgrind is not installed")
    directory = tempfile.mkdtemp(prefix="cgprof-vg-")
    testcase.addCleanup(shutil.rmtree, directory, ignore_errors=True)
    out = os.path.join(directory, "vg.out")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", "--callgrind-out-file=" + out]
                       + argv, cwd=directory, env=env, capture_output=True, text=True, timeout=timeout)
    testcase.assertEqual(p.returncode, 0, p.stderr[-2000:])
    counts = {}
    for f in glob.glob(out + "-*"):  # one per thread; the base file stays empty
        prof = reader.load(f)
        testcase.assertEqual(prof.violations, [], "valgrind's own file rejected by the checker")
        for (a, b), n in prof.call_counts(fold=True).items():
            if a in HOOKS or b in HOOKS:
                continue
            counts[(a, b)] = counts.get((a, b), 0) + n
    return counts


def merged_counts(profiles):
    counts = {}
    for p in profiles:
        for k, n in p.call_counts().items():
            counts[k] = counts.get(k, 0) + n
    return counts


def incoming(counts, callee):
    return sum(n for (a, b), n in counts.items() if b == callee)


class ProfileAssertions(unittest.TestCase):
    """Checks every profile must pass, whatever the program."""

    def assert_valid(self, prof, running_slack=0.0):
        """running_slack: for a part of a thread that ran while it was read
        (a dump by signal under load), how much the inclusive side may lag
        the self side, as a fraction of the part's total."""
        self.assertEqual([str(v) for v in prof.violations], [], "format violations in " + prof.path)
        self.assertEqual(prof.version, 1)
        self.assertEqual(prof.positions, ["instr", "line"])
        self.assertEqual(prof.events, ["ns"])
        self.assertIn("ns", prof.event_long_names)
        self.assertEqual(prof.totals, [prof.total_self()])
        self.assertEqual(prof.summary, prof.totals)
        self.assertIsNotNone(prof.desc_value("Trigger"))
        # calls=0 only for calls counted in an earlier part, which the part
        # declares
        continued = prof.desc_value("Calls continued") is not None
        for c in prof.calls:
            self.assertGreaterEqual(c.count, 0 if continued else 1, c)
            self.assertGreaterEqual(c.costs[0], 0, c)
        self.assert_inclusive_covers_self(prof, int(running_slack * prof.total_self()))

    # tests/progs/jumps.c and throws.cpp: the whole set of arcs of a run
    # whose frames are left by longjmp or by an exception
    JUMPS = {("main", "round_trip"): 1000, ("round_trip", "level"): 1000, ("level", "level"): 9000,
             ("round_trip", "leaf"): 1000}
    THROWS = {("main", "level(int)"): 1000, ("level(int)", "level(int)"): 9000, ("main", "caught(int)"): 1000}

    def assert_nonlocal_run(self, run, counts, jumped):
        """One profile, valid, with exactly these arcs (an invented arc fails
        as a missing one does), `jumped` frames ended by longjmp or an
        exception, and nothing repaired."""
        self.assertEqual(run.returncode, 0, run.stderr)
        (prof,) = run.profiles()
        self.assert_valid(prof)
        got = {arc: n for arc, n in prof.call_counts().items() if arc[0] != "__libc_start_call_main"}
        self.assertEqual(got, counts)
        found = prof.desc_value("Frames ended by longjmp or exception")
        self.assertEqual(int(found.split()[0]) if found else 0, jumped)
        self.assertIsNone(prof.desc_value("Frames left without exit"))
        self.assertIsNone(prof.desc_value("Unmatched exits"))
        self.assertNotIn("warning", run.stderr)

    def assert_inclusive_covers_self(self, prof, slack=0):
        """Inclusive >= self on every arc: the calls into a function cost at
        least the function's own time plus its calls, for each function that
        is not recursive (whose arcs would count nested calls twice)."""
        callers = {}
        for c in prof.calls:
            callers.setdefault(c.callee, []).append(c)
        recursive = {c.caller for c in prof.calls if c.caller == c.callee}
        for key, calls_in in callers.items():
            f = prof.functions.get(key)
            if f is None or key in recursive:
                continue
            incl_in = sum(c.costs[0] for c in calls_in)
            self_cost = f.self_costs(1)[0]
            out = sum(c.costs[0] for c in prof.calls if c.caller == key and c.callee != key)
            self.assertGreaterEqual(incl_in + slack, self_cost, "inclusive < self for %s" % (key,))
            if not any(c.callee in recursive for c in prof.calls if c.caller == key):
                self.assertGreaterEqual(incl_in + slack, self_cost + out,
                                        "inclusive < self + callees for %s" % (key,))

    def assert_annotate_accepts(self, path, names, with_object=True):
        """callgrind_annotate reads the file without a warning and lists the
        given functions (with their object: callgrind_annotate leaves it out
        of some functions whose costs are all zero, as sampled time makes
        them)."""
        if not shutil.which("callgrind_annotate"):
            self.skipTest("callgrind_annotate is not installed")
        p = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=yes", path],
                           capture_output=True, text=True, timeout=limit(120))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("WARNING", p.stderr)
        self.assertNotIn("malformed", p.stderr)
        # perl's own warnings: a file it annotates without a line of cost
        self.assertNotIn("uninitialized", p.stderr)
        for n in names:
            self.assertIn(":" + n + (" [" if with_object else ""), p.stdout, "callgrind_annotate does not list %s" % n)
        return p.stdout
