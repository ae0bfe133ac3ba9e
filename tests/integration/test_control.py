"""cgprof-control (cgproflib.control): the control side of
docs/internals/control-protocol.md, run (its pure pieces are tested in
tests/python/test_control.py).

Two kinds of tests:

- against a FAKE runtime, a small Python program started here that plays
  the runtime's part of the protocol (status file, command file, signal,
  done/parts/last) and maps a file named libcgprof.so, so that
  /proc/<pid>/maps shows what the control looks for: the listing, -d, -z,
  -i, the lock, timeouts, refusals and usage errors;
- against the REAL runtime, examples/server run with libcgprof.so preloaded:
  parts dumped while it runs and the final part at exit. Those need the
  runtime's side of the protocol;
- the questions (-b, -e, -s) and the targets (names, none, the launcher's
  pid) against tests/progs/parked, whose threads park at known stacks after
  known calls, so that what the control shows of it is known exactly.
"""

import fcntl
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import cgtest
from cgproflib import control, reader
from cgtest import example, prog

SCRIPT = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof-control")

# The fake runtime. argv: control dir, output dir, signal name (as the
# status file says it), options separated by commas:
#   map        map a file named libcgprof.so (else the process has no runtime)
#   nostatus   write no status file
#   ignore     never take the command file nor move done
#   takeonly   take the command file but never move done
#   stray      on the first signal, first move done as a plain signal handled
#              just then would, then take the command 0.3 s later
#   exit       exit at the first signal, without handling it
#   stopself   at the first signal, stop itself (SIGSTOP) before it takes
#              the command file; it takes it once continued
# It prints "ready" once its handler and status file are in place, appends
# each command it handles to <output dir>/fake.log, and on "dump" writes
# two files callgrind.out.<pid>.<part>-01/-02 into <output dir>/out dir
# (a space, so last: has \x20 in it).
FAKE = r'''
import mmap, os, signal, sys, time
cdir, outdir, signame, options = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
pid = os.getpid()
keep = []
if "map" in options:
    lib = os.path.join(outdir, "libcgprof.so")
    with open(lib, "wb") as f:
        f.write(b"\0" * 4096)
    fd = os.open(lib, os.O_RDONLY)
    keep.append(mmap.mmap(fd, 4096, prot=mmap.PROT_READ))
files_dir = os.path.join(outdir, "out dir")
os.makedirs(files_dir, exist_ok=True)
state = {"threads": 3, "parts": 0, "collecting": "on", "done": 0, "last": "", "handled": ""}
log = open(os.path.join(outdir, "fake.log"), "a", buffering=1)

def write_status():
    if "nostatus" in options:
        return
    text = ("pid: %d\ncmd: fake runtime\nsignal: %s\nthreads: %d\nparts: %d\ncollecting: %s\ndone: %d\nlast: %s\n"
            % (pid, signame, state["threads"], state["parts"], state["collecting"], state["done"], state["last"]))
    if "nohandled" not in options:
        text += "handled: %s\n" % state["handled"]
    tmp = os.path.join(cdir, ".%d.status.tmp" % pid)
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(cdir, "%d.status" % pid))

def take_command():
    path = os.path.join(cdir, "%d.cmd" % pid)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return "dump signal"
    st = os.fstat(fd)
    data = os.read(fd, 4096).decode()
    os.close(fd)
    os.unlink(path)
    if st.st_uid != os.getuid():
        return "dump signal"
    lines = data.rstrip("\n").split("\n")
    state["pending"] = "".join(l[4:] for l in lines[1:] if l.startswith("id: "))
    return lines[0]

def handle(first):
    if "exit" in options:
        os._exit(0)
    if "ignore" in options:
        return
    if "stopself" in options and first:
        os.kill(pid, signal.SIGSTOP)
    if "stray" in options and first:
        state["done"] += 1
        write_status()
        time.sleep(0.3)
    line = take_command()
    log.write(line + "\n")
    if "takeonly" in options:
        return
    word, _, arg = line.partition(" ")
    if word == "dump":
        state["parts"] += 1
        paths = []
        for t in (1, 2):
            p = os.path.join(files_dir, "callgrind.out.%d.%d-%02d" % (pid, state["parts"], t))
            with open(p, "w") as f:
                f.write("desc: Trigger: %s\n" % arg)
            paths.append(p.replace(" ", "\\x20"))
        state["last"] = " ".join(paths)
    elif word == "collect":
        state["collecting"] = arg
    state["done"] += 1
    state["handled"] = state.pop("pending", "")
    write_status()

pending = []
if signame != "none":
    signum = int(signame) if signame.isdigit() else getattr(signal, "SIG" + signame)
    signal.signal(signum, lambda s, f: pending.append(s))
write_status()
print("ready", flush=True)
first = True
while True:
    if pending:
        pending.pop(0)
        handle(first)
        first = False
    else:
        time.sleep(0.005)
'''


class ControlTestCase(unittest.TestCase):
    """A fresh control directory (mode 0700) for each test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cgprof-ctl-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.cdir = os.path.join(self.tmp, "control")
        os.mkdir(self.cdir, 0o700)
        os.chmod(self.cdir, 0o700)
        self.env = cgtest.clean_environ({"CGPROF_CONTROL_DIR": self.cdir})

    def control(self, *args, env=None, timeout=cgtest.limit(60)):
        p = subprocess.run([SCRIPT] + [str(a) for a in args], env=env or self.env,
                           capture_output=True, text=True, timeout=timeout)
        return p

    def status(self, pid):
        with open(os.path.join(self.cdir, "%d.status" % pid)) as f:
            return control.parse_status(f.read())


class Fake:
    def __init__(self, testcase, cdir, signame="USR1", options="map"):
        self.outdir = tempfile.mkdtemp(prefix="cgprof-fake-", dir=testcase.tmp)
        script = os.path.join(self.outdir, "fake_runtime.py")
        with open(script, "w") as f:
            f.write(FAKE)
        self.proc = subprocess.Popen([sys.executable, script, cdir, self.outdir, signame, options],
                                     stdout=subprocess.PIPE, text=True)
        testcase.addCleanup(self.stop)
        line = self.proc.stdout.readline()
        testcase.assertEqual(line, "ready\n", "the fake runtime did not start")
        self.pid = self.proc.pid
        self.cdir = cdir

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()

    def log(self):
        try:
            with open(os.path.join(self.outdir, "fake.log")) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []


def wait_stopped(test, pid):
    """Until /proc says pid is stopped (state T)."""
    deadline = time.monotonic() + cgtest.limit(10)
    while True:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        if data[data.rfind(b")") + 2:][:1] == b"T":
            return
        test.assertLess(time.monotonic(), deadline, "process %d never stopped" % pid)
        time.sleep(0.01)


def open_files(pid):
    """The paths of the files pid has open."""
    found = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except FileNotFoundError:
        return found
    for fd in fds:
        try:
            found.add(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass  # closed meanwhile
    return found


def gone_pid():
    """A pid that was just used and is gone."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


# ---------------------------------------------------------------------------
# The command against a fake runtime

class ControlDirChecks(ControlTestCase):
    def assert_refused(self, env, words):
        fake_pid = os.getpid()
        for args in ([], ["-z", fake_pid], ["-d", "x", fake_pid]):
            p = self.control(*args, env=env)
            self.assertEqual(p.returncode, 1, (args, p.stdout, p.stderr))
            self.assertEqual(p.stdout, "")
            self.assertIn(words, p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    def test_group_writable_refused(self):
        os.chmod(self.cdir, 0o770)
        self.assert_refused(self.env, "writable by group or others")
        with self.assertRaises(control.ControlError):
            control.find_control_dir(self.env)

    def test_other_writable_refused(self):
        os.chmod(self.cdir, 0o703)
        self.assert_refused(self.env, "writable by group or others")

    def test_symlink_refused(self):
        link = os.path.join(self.tmp, "link")
        os.symlink(self.cdir, link)
        env = dict(self.env, CGPROF_CONTROL_DIR=link)
        self.assert_refused(env, "symbolic link")

    def test_not_a_directory_refused(self):
        path = os.path.join(self.tmp, "file")
        open(path, "w").close()
        self.assert_refused(dict(self.env, CGPROF_CONTROL_DIR=path), "not a directory")

    @unittest.skipUnless(os.getuid() == 0, "needs root to give the directory away")
    def test_other_owner_refused(self):
        os.chown(self.cdir, 65534, 65534)
        self.assert_refused(self.env, "owned by uid 65534")

    def test_hostile_dir_not_used_for_the_fake(self):
        """A fake whose status sits in a group-writable directory cannot be
        controlled: no signal is sent."""
        fake = Fake(self, self.cdir)
        os.chmod(self.cdir, 0o775)
        p = self.control("-d", "x", fake.pid)
        self.assertEqual(p.returncode, 1)
        time.sleep(0.1)
        self.assertEqual(fake.log(), [])
        self.assertEqual(fake.proc.poll(), None)

    def test_default_dir(self):
        env = dict(self.env)
        del env["CGPROF_CONTROL_DIR"]
        out = subprocess.run([sys.executable, "-c", "from cgproflib import control; print(control.control_dir_path())"],
                             env=env, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "/tmp/cgprof-%d" % os.geteuid())


class Listing(ControlTestCase):
    def listed(self, stdout):
        """{pid: line} of a listing (after its header line)."""
        lines = stdout.splitlines()
        self.assertTrue(lines and lines[0].split()[0] == "PID", stdout)
        return {int(l.split()[0]): l for l in lines[1:]}

    def test_lists_fake_with_its_status(self):
        fake = Fake(self, self.cdir)
        p = self.control()
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = self.listed(p.stdout)
        self.assertIn(fake.pid, rows)
        fields = rows[fake.pid].split()
        self.assertEqual(fields[1:5], ["3", "0", "on", "USR1"], rows[fake.pid])
        self.assertIn("fake_runtime.py", rows[fake.pid])   # the command, from /proc
        self.assertNotIn("unavailable", rows[fake.pid])

    def test_after_requests(self):
        fake = Fake(self, self.cdir)
        self.assertEqual(self.control("-d", fake.pid).returncode, 0)
        self.assertEqual(self.control("-i", "off", fake.pid).returncode, 0)
        rows = self.listed(self.control().stdout)
        self.assertEqual(rows[fake.pid].split()[1:5], ["3", "1", "off", "USR1"])

    def test_one_pid(self):
        fake = Fake(self, self.cdir)
        other = Fake(self, self.cdir)
        p = self.control(fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(list(self.listed(p.stdout)), [fake.pid])
        self.assertIn(other.pid, self.listed(self.control().stdout))

    def test_process_without_runtime_not_listed(self):
        fake = Fake(self, self.cdir, options="nomap")
        p = self.control()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(str(fake.pid), [l.split()[0] for l in p.stdout.splitlines()])
        p = self.control(fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("does not have libcgprof.so loaded", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.cdir, "%d.status" % fake.pid)),
                        "the status file of a live process is left alone")

    def test_without_status_file(self):
        fake = Fake(self, self.cdir, options="map,nostatus")
        rows = self.listed(self.control().stdout)
        self.assertIn("control files unavailable", rows[fake.pid])
        self.assertIn("%d.status" % fake.pid, rows[fake.pid])

    def test_control_dir_missing(self):
        fake = Fake(self, self.cdir)
        env = dict(self.env, CGPROF_CONTROL_DIR=os.path.join(self.tmp, "missing"))
        p = self.control(env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("control files unavailable", self.listed(p.stdout)[fake.pid])
        self.assertIn("does not exist", self.listed(p.stdout)[fake.pid])
        p = self.control("-d", fake.pid, env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn("does not exist", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "missing")), "the control creates nothing")

    def test_stale_status_ignored_and_removed(self):
        fake = Fake(self, self.cdir)
        stale = gone_pid()
        for name in ("%d.status" % stale, "%d.lock" % stale, "%d.status.tmp.%d" % (stale, stale)):
            with open(os.path.join(self.cdir, name), "w") as f:
                f.write("pid: %d\ncmd: gone\nsignal: USR1\nthreads: 1\nparts: 0\ncollecting: on\ndone: 0\nlast:\n"
                        % stale)
        p = self.control()
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = self.listed(p.stdout)
        self.assertNotIn(stale, rows)
        self.assertIn(fake.pid, rows)
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.status" % stale)))
        self.assertEqual([n for n in os.listdir(self.cdir) if n.startswith("%d." % stale)], [])
        self.assertTrue(os.path.exists(os.path.join(self.cdir, "%d.status" % fake.pid)))

    def test_list_processes_function(self):
        fake = Fake(self, self.cdir)
        nomap = Fake(self, self.cdir, options="nomap")
        with control.find_control_dir(self.env) as cdir:
            procs = control.list_processes(cdir, pids=[fake.pid, nomap.pid, gone_pid()])
        self.assertEqual([p.pid for p in procs], [fake.pid])
        self.assertEqual(procs[0].status.threads, 3)
        self.assertIsNone(procs[0].problem)
        self.assertTrue(control.has_runtime(fake.pid))
        self.assertFalse(control.has_runtime(nomap.pid))
        with self.assertRaises(ProcessLookupError):
            control.has_runtime(gone_pid())


class Requests(ControlTestCase):
    def test_dump_prints_files(self):
        fake = Fake(self, self.cdir)
        p = self.control("-d", "phase1", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        files = p.stdout.splitlines()
        self.assertEqual([os.path.basename(f) for f in files],
                         ["callgrind.out.%d.1-01" % fake.pid, "callgrind.out.%d.1-02" % fake.pid])
        for f in files:
            self.assertIn(" dir/", f, "\\x20 in last: is a space")
            with open(f) as fh:
                self.assertEqual(fh.read(), "desc: Trigger: phase1\n")
        self.assertEqual(fake.log(), ["dump phase1"])
        st = self.status(fake.pid)
        self.assertEqual((st.done, st.parts), (1, 1))
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.cmd" % fake.pid)))
        self.assertTrue(os.path.exists(os.path.join(self.cdir, "%d.lock" % fake.pid)))

    def test_dump_forms(self):
        fake = Fake(self, self.cdir)
        for args, line in ((["-d", fake.pid], "dump cgprof-control"),
                           (["--dump", fake.pid], "dump cgprof-control"),
                           (["--dump=after warm-up", fake.pid], "dump after warm-up"),
                           (["-d", "phase 2", fake.pid, "--timeout", "10"], "dump phase 2"),
                           (["--timeout=10", "--dump", "p3", fake.pid], "dump p3")):
            p = self.control(*args)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertEqual(fake.log()[-1], line)
            n = len(fake.log())
            self.assertTrue(p.stdout.splitlines()[0].endswith("callgrind.out.%d.%d-01" % (fake.pid, n)), p.stdout)

    def test_zero(self):
        fake = Fake(self, self.cdir)
        p = self.control("-z", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "process %d: costs zeroed\n" % fake.pid)
        self.assertEqual(fake.log(), ["zero"])
        st = self.status(fake.pid)
        self.assertEqual((st.done, st.parts), (1, 0))
        p = self.control("--zero", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.status(fake.pid).done, 2)

    def test_instr_off_on(self):
        fake = Fake(self, self.cdir)
        p = self.control("-i", "off", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "process %d: collection paused (off)\n" % fake.pid)
        self.assertEqual(self.status(fake.pid).collecting, "off")
        p = self.control("--instr=on", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "process %d: collection resumed (on)\n" % fake.pid)
        self.assertEqual(self.status(fake.pid).collecting, "on")
        self.assertEqual(fake.log(), ["collect off", "collect on"])

    def test_signal_from_status(self):
        """The signal sent is the one the status file names."""
        for name in ("USR2", str(int(signal.SIGUSR2)), str(int(signal.SIGRTMIN) + 3)):
            fake = Fake(self, self.cdir, signame=name)
            p = self.control("-d", "x", fake.pid)
            self.assertEqual(p.returncode, 0, (name, p.stderr))
            self.assertEqual(fake.log(), ["dump x"])
            fake.stop()

    def test_signal_none_refused(self):
        fake = Fake(self, self.cdir, signame="none")
        p = self.control("-d", "x", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("signal: none", p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.cmd" % fake.pid)))
        self.assertIsNone(fake.proc.poll())

    def test_no_status_file_refused(self):
        fake = Fake(self, self.cdir, options="map,nostatus")
        for args in (["-d", fake.pid], ["-z", fake.pid], ["-i", "off", fake.pid]):
            p = self.control(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn("no status file", p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1)
        time.sleep(0.1)
        self.assertIsNone(fake.proc.poll(), "no signal was sent (SIGUSR1 is handled, but still)")
        self.assertEqual(fake.log(), [])

    def test_gone_pid(self):
        pid = gone_pid()
        for args in (["-d", pid], ["-z", pid], ["-i", "on", pid], [pid]):
            p = self.control(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn("no process %d" % pid, p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1)

    def test_pid_without_runtime(self):
        fake = Fake(self, self.cdir, options="nomap")  # has a status file, but no runtime
        for args in (["-d", fake.pid], ["-z", fake.pid], ["-i", "on", fake.pid]):
            p = self.control(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn("does not have libcgprof.so loaded", p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1)
        self.assertEqual(fake.log(), [])

    def test_timeout_when_not_taken(self):
        # gives up at its own timeout, and says so (the test's limit only
        # stops a control that would hang)
        fake = Fake(self, self.cdir, options="map,ignore")
        p = self.control("--timeout", "0.5", "-d", "x", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("timed out", p.stderr)
        self.assertIn("did not take", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.cmd" % fake.pid)),
                         "the unread command is removed")

    def test_timeout_when_not_done(self):
        # the fake takes the command (it must be scheduled within the
        # timeout for that, however loaded the machine) and never finishes
        # it: the control gives up at its timeout whatever its length
        fake = Fake(self, self.cdir, options="map,takeonly")
        p = self.control("--timeout", str(cgtest.limit(3)), "-z", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("did not finish", p.stderr)
        self.assertEqual(fake.log(), ["zero"])

    def test_stopped_process_refused_at_once(self):
        """Issue 41: -d on a stopped process (SIGSTOP) waited out its
        timeout, and the signal it had sent, pending, made a plain dump
        ("Trigger: Signal SIGUSR1") once the process ran again, its command
        file removed. Now it is refused at once, saying why, with nothing
        written or sent: continued, the process makes no part of its own,
        and the next request is served with its reason."""
        fake = Fake(self, self.cdir)
        os.kill(fake.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, fake.pid, signal.SIGCONT)
        wait_stopped(self, fake.pid)
        p = self.control("--timeout", "2", "-d", "while-stopped", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("process %d is stopped" % fake.pid, p.stderr)
        self.assertIn("kill -CONT %d" % fake.pid, p.stderr)
        self.assertIn("nothing sent", p.stderr)
        self.assertNotIn("timed out", p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.cmd" % fake.pid)))
        os.kill(fake.pid, signal.SIGCONT)
        p = self.control("-d", "after", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(fake.log(), ["dump after"], "no plain signal's dump in between")

    def test_stopped_while_waiting_keeps_the_request(self):
        """Stopped after the signal was sent and before it took the command
        file: at the timeout the control says so and leaves the command
        file, so that the dump the pending signal makes when the process
        runs again carries the reason given, not a plain signal's."""
        fake = Fake(self, self.cdir, options="map,stopself")
        self.addCleanup(os.kill, fake.pid, signal.SIGCONT)
        p = self.control("--timeout", str(cgtest.limit(3)), "-d", "kept reason", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("timed out: process %d is stopped" % fake.pid, p.stderr)
        self.assertIn("the request stays in", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.cdir, "%d.cmd" % fake.pid)))
        os.kill(fake.pid, signal.SIGCONT)
        deadline = time.monotonic() + cgtest.limit(10)
        while not fake.log():
            self.assertLess(time.monotonic(), deadline, "the continued fake handled nothing")
            time.sleep(0.02)
        self.assertEqual(fake.log(), ["dump kept reason"])

    def test_exit_while_waiting(self):
        fake = Fake(self, self.cdir, options="map,exit")
        p = self.control("--timeout", "20", "-d", "x", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("exited", p.stderr)

    def test_runtime_without_handled_line(self):
        """A status without "handled:" (an older runtime): done moving with
        the cmd file taken is the answer."""
        fake = Fake(self, self.cdir, options="map,nohandled")
        p = self.control("-d", "old", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(fake.log(), ["dump old"])
        self.assertEqual(len(p.stdout.splitlines()), 2)

    def test_done_moved_by_another_request(self):
        """done moves once for a request that was already running (the cmd
        file is still there): the control waits for its own."""
        fake = Fake(self, self.cdir, options="map,stray")
        p = self.control("-d", "mine", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(fake.log(), ["dump mine"])
        st = self.status(fake.pid)
        self.assertEqual((st.done, st.parts), (2, 1))
        self.assertEqual(len(p.stdout.splitlines()), 2)

    def test_waits_for_the_lock(self):
        fake = Fake(self, self.cdir)
        fd = os.open(os.path.join(self.cdir, "%d.lock" % fake.pid), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            p = self.control("--timeout", "0.3", "-d", "x", fake.pid)
            self.assertEqual(p.returncode, 1)
            self.assertIn("another control", p.stderr)
            self.assertEqual(fake.log(), [], "nothing is sent without the lock")
            # released while a control waits: it goes on
            proc = subprocess.Popen([SCRIPT, "-d", "late", str(fake.pid)], env=self.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # it waits once it has the lock file open (and tries the lock
            # until it is free)
            lock = os.path.realpath(os.path.join(self.cdir, "%d.lock" % fake.pid))
            deadline = time.monotonic() + cgtest.limit(30)
            while lock not in open_files(proc.pid):
                if proc.poll() is not None:
                    self.fail("the control ended without the lock: %s" % proc.communicate()[1])
                self.assertLess(time.monotonic(), deadline, "the control never opened " + lock)
                time.sleep(0.01)
            time.sleep(0.1)
            self.assertEqual(fake.log(), [])
            fcntl.flock(fd, fcntl.LOCK_UN)
            out, err = proc.communicate(timeout=cgtest.limit(30))
            self.assertEqual(proc.returncode, 0, err)
            self.assertEqual(fake.log(), ["dump late"])
        finally:
            os.close(fd)

    def test_concurrent_controls(self):
        """Requests from several controls at once are serialised by the lock:
        each prints the files of its own dump."""
        fake = Fake(self, self.cdir)
        procs = [subprocess.Popen([SCRIPT, "-d", "r%d" % i, str(fake.pid)], env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(4)]
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=cgtest.limit(60))
            self.assertEqual(proc.returncode, 0, err)
            outs.append(out.splitlines())
        self.assertEqual(sorted(fake.log()), ["dump r0", "dump r1", "dump r2", "dump r3"])
        self.assertEqual(self.status(fake.pid).parts, 4)
        for i, files in enumerate(outs):
            self.assertEqual(len(files), 2)
            for f in files:
                with open(f) as fh:
                    self.assertEqual(fh.read(), "desc: Trigger: r%d\n" % i)

    def test_stale_cmd_file_replaced(self):
        """A command left behind by a control that died is replaced, and a
        link planted at the cmd path is replaced, not followed."""
        fake = Fake(self, self.cdir)
        target = os.path.join(self.tmp, "target")
        with open(target, "w") as f:
            f.write("keep\n")
        os.symlink(target, os.path.join(self.cdir, "%d.cmd" % fake.pid))
        p = self.control("-z", fake.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(fake.log(), ["zero"])
        with open(target) as f:
            self.assertEqual(f.read(), "keep\n")

    def test_older_runtime_is_not_asked(self):
        """A runtime whose status lists no "commands:" (one from before -b,
        -e and -s) would take a question for a plain signal, a dump: it is
        not asked."""
        fake = Fake(self, self.cdir)
        for args in (["-b", fake.pid], ["-e", fake.pid], ["-s", fake.pid]):
            p = self.control(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn("process %d runs an older cgprof runtime, which cannot answer" % fake.pid, p.stderr)
            self.assertEqual(p.stdout, "")
        time.sleep(0.1)
        self.assertEqual(fake.log(), [], "no signal was sent")
        self.assertEqual(self.status(fake.pid).done, 0)

    def test_send_request_function(self):
        fake = Fake(self, self.cdir)
        with control.find_control_dir(self.env) as cdir:
            before, after = control.send_request(cdir, fake.pid, "dump api", timeout=cgtest.limit(10))
            self.assertEqual(after.done, before.done + 1)
            self.assertEqual(after.parts, 1)
            self.assertEqual(len(after.last), 2)
            st = control.read_status(cdir, fake.pid)
            self.assertEqual(st.done, 1)
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(control.main(["-z", str(fake.pid)], out=out, err=err, env=self.env), 0, err.getvalue())
        self.assertEqual(fake.log(), ["dump api", "zero"])


class Usage(ControlTestCase):
    def test_help(self):
        for arg in ("-h", "--help"):
            p = self.control(arg)
            self.assertEqual(p.returncode, 0)
            self.assertTrue(p.stdout.startswith("usage: cgprof-control"), p.stdout)
            self.assertIn("-d, --dump", p.stdout)
            self.assertEqual(p.stderr, "")

    def test_help_says_it_all(self):
        """Every option the command takes is in its --help."""
        text = self.control("--help").stdout
        for opt in ("-d, --dump [REASON]", "--dump=REASON", "-z, --zero", "-i, --instr on|off", "-b, --back",
                    "-e [EVENTS]", "-s, --stat", "--timeout S", "--version", "PID | PROGRAM", "launcher"):
            self.assertIn(opt, text)

    def test_man_page(self):
        """cgprof-control(1) says what --help says: every option, with its
        text."""
        from cgproflib import control as c
        page = os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof-control.1")
        p = subprocess.run(["man", "-l", "-P", "cat", page], capture_output=True, text=True, timeout=cgtest.limit(60),
                           env=dict(os.environ, MANWIDTH="2000"))
        self.assertEqual(p.returncode, 0, p.stderr)
        text = " ".join(p.stdout.replace("\u2010", "-").split())
        for opt, what in c.OPTIONS:
            self.assertIn(opt, text)
            self.assertIn(" ".join(what.split()), text)
        for part in (c.TARGETS, c.NOTES):
            self.assertIn(" ".join(part.split()), text)

    def test_version(self):
        p = self.control("--version")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^cgprof-control \(cgprof\) \d+\.\d+\.\d+\n$")

    def test_usage_errors(self):
        for args in (["-i", "on", "-z"], ["-i", "maybe", "1"], ["-z", "-d", "1"], ["-b", "-z", "1"],
                     ["-s", "-d"], ["--bogus"], ["-z", ""], ["-z", "0"],
                     ["--timeout", "-1", "-z", "1"], ["--dump=", "1"]):
            p = self.control(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(p.stdout, "")
            self.assertIn("usage: cgprof-control", p.stderr)
            self.assertTrue(p.stderr.startswith("cgprof-control: "), p.stderr)

    def test_executable(self):
        """Run by the build's interpreter, by its path, without the site
        (no pyenv shim, no .pth files: tens of ms each), and without
        compiling the package: its bytecode is in the build tree, checked
        against the sources."""
        self.assertTrue(os.access(SCRIPT, os.X_OK))
        with open(SCRIPT) as f:
            m = re.fullmatch(r"#!(/\S+) -S\n", f.readline())
        self.assertTrue(m)
        interpreter = m.group(1)
        self.assertTrue(os.access(interpreter, os.X_OK), interpreter)
        p = subprocess.run([interpreter, "-S", "-v", SCRIPT, "--help"], capture_output=True, text=True,
                           env=self.env, timeout=cgtest.limit(60))
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        pkg = os.path.join(cgtest.BUILD_DIR, "python", "cgproflib")
        for module in ("__init__", "control"):
            self.assertRegex(p.stderr, r"# %s matches %s\n" % (
                re.escape(os.path.join(pkg, "__pycache__", module + ".")) + r"[\w-]+\.pyc",
                re.escape(os.path.join(pkg, module + ".py"))))
        self.assertNotIn("cgproflib", "".join(l for l in p.stderr.splitlines(True) if "code object from" in l
                                              and ".py'" in l))

    def test_interpreter_line(self):
        """The #! line falls back on env(1) where the interpreter's path
        cannot go in one."""
        import importlib.util
        spec = importlib.util.spec_from_file_location("gen_cgprof", os.path.join(cgtest.SOURCE_DIR, "scripts",
                                                                                 "gen_cgprof.py"))
        gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen)
        self.assertEqual(gen.interpreter_line("/usr/bin/python3"), "#!/usr/bin/python3 -S")
        for bad in ("python3", "/opt/my python/bin/python3", "/" + "x" * 130):
            self.assertEqual(gen.interpreter_line(bad), "#!/usr/bin/env python3", bad)


# ---------------------------------------------------------------------------
# The real runtime: examples/server, preloaded

PART_RE = r"callgrind\.out\.%d\.(\d+)-(\d\d)$"
# at exit without any dump before: Callgrind's name without a part number
# is accepted too (part 1)
ANY_PART_RE = r"callgrind\.out\.%d(?:\.(\d+))?-(\d\d)$"


def wait_profiled(test, env, proc, threads):
    """Until the runtime of proc (a Popen) profiles `threads` threads, asked
    as cgprof-control -s asks (a request served each time), with a limit."""
    deadline = time.monotonic() + cgtest.limit(30)
    with control.find_control_dir(env) as cdir:
        while True:
            test.assertIsNone(proc.poll(), "the program ended before its threads were profiled")
            _, reply = control.ask(cdir, proc.pid, "counters", timeout=cgtest.limit(30))
            process, _ = control.parse_counters(reply)
            if int(process.get("profiled", 0)) >= threads:
                return
            test.assertLess(time.monotonic(), deadline, "%d threads of %d profiled: %r"
                            % (int(process.get("profiled", 0)), threads, reply))
            time.sleep(0.02)


class RealRuntime(ControlTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(example("server")):
            self.skipTest("examples/server is not built")
        self.run_dir = os.path.join(self.tmp, "run")
        os.mkdir(self.run_dir)

    def start_server(self, *args):
        env = dict(self.env, LD_PRELOAD=cgtest.LIB)
        proc = subprocess.Popen(cgtest.emulated([example("server")] + list(args)), cwd=self.run_dir, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def stop():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.addCleanup(stop)
        status = os.path.join(self.cdir, "%d.status" % proc.pid)
        deadline = time.monotonic() + cgtest.limit(10)
        while not os.path.exists(status):
            self.assertIsNone(proc.poll(), "the server ended before writing its status file")
            self.assertLess(time.monotonic(), deadline, "no status file " + status)
            time.sleep(0.02)
        # The status file is there from the runtime's constructor on; a
        # thread is profiled from its first hook. The tests count on the
        # main thread and its 4 workers: until the runtime says it has them
        # (the counters of cgprof-control -s), each question a request
        # served, which self.served_before leaves out of the tests' counts.
        wait_profiled(self, self.env, proc, 5)
        self.served_before = self.status(proc.pid).done
        return proc

    def finish(self, proc):
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=cgtest.limit(120))
        self.assertEqual(proc.returncode, 0, err)
        m = re.search(r"served (\d+) requests \(static (\d+), query (\d+), upload (\d+)\) with (\d+) workers", out)
        self.assertTrue(m, out)
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.status" % proc.pid)),
                         "the status file is removed at exit")
        return [int(g) for g in m.groups()]

    def parts(self, pid):
        """{part: [files]} in the run directory (and, after the exit, the
        total of all threads, which is no part)."""
        found = {}
        for f in sorted(os.listdir(self.run_dir)):
            if f == "callgrind.total.%d" % pid:
                continue
            m = re.match(ANY_PART_RE % pid, f)
            self.assertTrue(m, "unexpected file " + f)
            found.setdefault(int(m.group(1) or 1), []).append(os.path.join(self.run_dir, f))
        return found

    def dump(self, pid, reason, part, threads=5):
        p = self.control("-d", reason, pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        files = p.stdout.splitlines()
        self.assertEqual(len(files), threads, files)
        for f in files:
            self.assertTrue(os.path.isabs(f), f)
            self.assertEqual(os.path.dirname(f), os.path.realpath(self.run_dir))
            m = re.match(PART_RE % pid, os.path.basename(f))
            self.assertTrue(m, f)
            self.assertEqual(int(m.group(1)), part, f)
            prof = load_strict(f)
            self.assertEqual(prof.violations, [], f)
            self.assertEqual(prof.part, part)
            self.assertIn(reason, prof.desc_value("Trigger"))
        self.assertEqual(sorted(int(f[-2:]) for f in files), list(range(1, threads + 1)))
        return files

    def test_listed(self):
        proc = self.start_server("-n", "0")
        p = self.control()
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {l.split()[0]: l for l in p.stdout.splitlines()[1:]}
        self.assertIn(str(proc.pid), rows)
        self.assertNotIn("unavailable", rows[str(proc.pid)])
        self.assertIn(example("server"), rows[str(proc.pid)])
        self.assertEqual(rows[str(proc.pid)].split()[3:5], ["on", "USR1"])
        self.finish(proc)

    def test_parts_by_control_then_at_exit(self):
        proc = self.start_server("-n", "0")
        self.dump(proc.pid, "phase1", 1)
        time.sleep(0.3)
        self.dump(proc.pid, "phase2", 2)
        time.sleep(0.3)
        st = self.status(proc.pid)
        self.assertEqual((st.parts, st.done - self.served_before), (2, 2))
        served, static, query, upload, workers = self.finish(proc)
        parts = self.parts(proc.pid)
        self.assertEqual(sorted(parts), [1, 2, 3])
        self.assertEqual([len(parts[n]) for n in (1, 2, 3)], [5, 5, 5])
        for f in parts[3]:
            self.assertTrue(re.match(PART_RE % proc.pid, os.path.basename(f)), f)
            prof = load_strict(f)
            self.assertEqual(prof.violations, [], f)
            self.assertEqual(prof.part, 3)
            # the workers end before main returns: their last part is
            # written as they end
            if prof.thread == 1:
                self.assertEqual(prof.desc_value("Trigger"), "Program termination")
            else:
                self.assertIn(prof.desc_value("Trigger"), ("Program termination", "Thread exit"))
        # the parts together count every call once; a call in progress at a
        # dump may be counted again in the next part (at most one per thread
        # and function here: none of them is recursive)
        counts = {}
        for files in parts.values():
            for f in files:
                for (a, b), n in load_strict(f).call_counts().items():
                    counts[b] = counts.get(b, 0) + n
        expected = {
            "handle_request": served, "parse_request": served, "parse_header": 3 * served,
            "lookup_route": served, "hash_bytes": served + 8 * query + upload,
            "render_static": static, "copy_chunk": 4 * static, "run_query": query,
            "lookup_row": 8 * query, "render_page": query, "escape_field": 8 * query,
            "checksum_body": upload, "crc_block": 16 * upload, "store_blob": upload,
            "make_request": served, "submit_request": served, "next_request": served + workers,
            "worker_main": workers,
        }
        slack = 2 * 5
        for fn, n in expected.items():
            self.assertGreaterEqual(counts.get(fn, 0), n, fn)
            self.assertLessEqual(counts.get(fn, 0), n + slack, fn)

    def test_zero_and_collection(self):
        proc = self.start_server("-n", "0")
        p = self.control("-i", "off", proc.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.status(proc.pid).collecting, "off")
        p = self.control("-i", "on", proc.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.status(proc.pid).collecting, "on")
        p = self.control("-z", proc.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = self.status(proc.pid)
        self.assertEqual((st.done - self.served_before, st.parts), (3, 0))
        self.finish(proc)
        self.assertEqual(sorted(self.parts(proc.pid)), [1])

    def test_plain_signal(self):
        """SIGUSR1 without a command: a part with the reason "signal"; the
        server keeps serving."""
        proc = self.start_server("-n", "0")
        os.kill(proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + cgtest.limit(30)
        while self.status(proc.pid).done < self.served_before + 1:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)
        st = self.status(proc.pid)
        self.assertEqual(st.parts, 1)
        self.assertEqual(len(st.last), 5)
        for f in st.last:
            self.assertIn("signal", load_strict(f).desc_value("Trigger").lower())
        self.assertIsNone(proc.poll())
        self.finish(proc)
        self.assertEqual(sorted(self.parts(proc.pid)), [1, 2])

    def test_stopped_server_refused(self):
        """Issue 41 with the real runtime: -d REASON on a stopped server is
        refused at once, and once it runs again it writes no part of a
        plain signal ("Trigger: Signal SIGUSR1"): the next dump is part 1,
        with its reason."""
        proc = self.start_server("-n", "0")
        os.kill(proc.pid, signal.SIGSTOP)
        self.addCleanup(lambda: proc.poll() is None and os.kill(proc.pid, signal.SIGCONT))
        wait_stopped(self, proc.pid)
        p = self.control("--timeout", "2", "-d", "while-stopped", proc.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("is stopped", p.stderr)
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.5)     # what a pending signal would have done by now
        self.assertEqual(self.status(proc.pid).parts, 0)
        self.dump(proc.pid, "after", 1)
        self.finish(proc)

    def test_blocked_threads_dump_promptly(self):
        """-s: the workers sit in pthread_cond_wait; a dump still has a file
        for each of them, soon."""
        proc = self.start_server("-s", "-n", "0")
        # the workers wait until SIGTERM: a dump that waited for them would
        # never end, and cgprof-control would give up (no bound on how soon
        # it ends: a loaded machine is slow)
        p = self.control("--timeout", "60", "-d", "blocked", proc.pid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 5, p.stdout)
        self.finish(proc)


# ---------------------------------------------------------------------------
# -b, -e, -s and the targets: tests/progs/parked

PARKED_SRC = os.path.join(cgtest.SOURCE_DIR, "tests", "progs", "parked.c")


def parked_line(mark):
    """The line of parked.c that holds the comment /* mark */."""
    with open(PARKED_SRC) as f:
        for n, line in enumerate(f, 1):
            if "/* %s */" % mark in line:
                return n
    raise AssertionError("no /* %s */ in %s" % (mark, PARKED_SRC))


class Parked:
    """tests/progs/parked running with the runtime preloaded (through the
    launcher with launcher=True), its threads parked; it ends when its
    stdin is closed (finish)."""

    def __init__(self, test, depth=None, launcher=False, cwd=None):
        self.dir = cwd or tempfile.mkdtemp(prefix="cgprof-parked-", dir=test.tmp)
        os.makedirs(self.dir, exist_ok=True)
        argv = [prog("parked")] + ([str(depth)] if depth else [])
        env = dict(test.env)
        if launcher:
            # the launcher execs the program itself: not under an emulator
            # (tests/README.md, "aarch64 under emulation")
            argv = [os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof")] + argv
        else:
            env["LD_PRELOAD"] = cgtest.LIB
            argv = cgtest.emulated(argv)
        self.proc = subprocess.Popen(argv, cwd=self.dir, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = None     # before the checks below: finish() runs as a cleanup if they fail
        test.addCleanup(self.finish)
        line = self.proc.stdout.readline()
        test.assertEqual(line, "parked\n", "parked did not park: " + (self.proc.stderr.read()
                                                                       if self.proc.poll() is not None else ""))
        self.launcher_pid = self.proc.pid if launcher else None
        self.pid = self.proc.pid
        if launcher:
            kids = [int(k) for k in open("/proc/%d/task/%d/children" % (self.pid, self.pid)).read().split()]
            test.assertEqual(len(kids), 1)
            self.pid = kids[0]
        status = os.path.join(test.cdir, "%d.status" % self.pid)
        deadline = time.monotonic() + cgtest.limit(30)
        while not os.path.exists(status):
            test.assertLess(time.monotonic(), deadline, "no status file " + status)
            time.sleep(0.01)
        # tids in the order the threads were made: main, the emulator's
        # (cgtest.EMULATOR_THREADS), the runtime's service thread, worker a,
        # worker b ("beta" to /proc), the helpers
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % self.pid))[cgtest.EMULATOR_THREADS:]
        with open("/proc/%d/task/%d/comm" % (self.pid, tids[3])) as f:
            test.assertEqual(f.read(), "beta\n")
        self.a_tid, self.b_tid = tids[2], tids[3]

    def finish(self):
        """Ends it (its stdin closed); returns its exit status and stderr."""
        if self.err is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=cgtest.limit(60))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.err = self.proc.stderr.read()
            self.proc.stderr.close()
        return self.proc.returncode, self.err


class Questions(ControlTestCase):
    """-b, -e, -s against a running program whose stacks and calls are
    known."""

    def setUp(self):
        super().setUp()
        if not os.path.exists(prog("parked")):
            self.skipTest("tests/progs/parked is not built")

    def test_backtrace(self):
        """-b: every thread's stack, innermost first, with the functions'
        names, the calls in progress' places (at the call) and where the
        innermost function begins, the thread's number, name and tid."""
        p = Parked(self)
        r = self.control("-b", p.pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        src = os.path.realpath(PARKED_SRC)
        at = lambda mark: "at %s:%d" % (src, parked_line("CALL:" + mark))  # noqa: E731
        park = parked_line("DEF:park")
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "PID %d: %s" % (p.pid, cgtest.shown_command([prog("parked")])))
        # the main thread's tid is the pid; the workers', the next two
        main_tid, a_tid, b_tid = p.pid, p.a_tid, p.b_tid
        expected_threads = [
            ('Thread 1 "%s" (tid %d): 2 calls in progress, innermost first' % (cgtest.shown_name("parked"), main_tid),
             ["park (1 x)", "main (1 x)  " + at("main-park")]),
            ('Thread 2 "alpha" (tid %d): 5 calls in progress, innermost first' % a_tid,
             ["park (1 x)", "level3 (1 x)  " + at("level3-park"), "level2 (1 x)  " + at("level2-level3"),
              "level1 (1 x)  " + at("level1-level2"), "worker_a (1 x)  " + at("worker_a-level1")]),
            ('Thread 3 "beta" (tid %d): 12 calls in progress, innermost first' % b_tid,
             ["park (1 x)", "recurse (1 x)  " + at("recurse-park")] + ["recurse (1 x)  " + at("recurse-recurse")] * 9
             + ["worker_b (1 x)  " + at("worker_b-recurse")]),
        ]
        blocks = "\n".join(lines[1:]).strip("\n").split("\n\n")
        self.assertEqual(len(blocks), 3, r.stdout)
        for block, (head, frames) in zip(blocks, expected_threads):
            got = block.split("\n")
            self.assertEqual(got[0], "  " + head)
            self.assertEqual(len(got) - 1, len(frames), block)
            for level, (line, want) in enumerate(zip(got[1:], frames)):
                if level == 0:
                    # the innermost: where its function begins (its first
                    # line, or the brace that follows it)
                    self.assertIn(line, ["   [ 0]  park (1 x)  in %s:%d" % (src, n) for n in (park, park + 1)])
                else:
                    self.assertEqual(line, "   [%2d]  %s" % (level, want))

    def test_backtrace_with_times(self):
        """-b -e: how long each call in progress has run, outermost longest,
        next to the threads' totals."""
        p = Parked(self)
        time.sleep(0.2)
        r = self.control("-b", "-e", p.pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        frames = re.findall(r"^   \[ ?(\d+)\]  +([\d.]+) (ns|us|ms|s)  (\w+) \(", r.stdout, re.M)
        self.assertEqual(len(frames), 2 + 5 + 12, r.stdout)
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
        for level, value, unit, fn in frames:
            self.assertGreaterEqual(float(value) * scale[unit], 0.2e9, (level, fn))
        self.assertIn("  Totals since the last dump or zero:", r.stdout)

    def test_deep_stack_is_cut(self):
        """A recursion 100,000 deep: its 32 outermost and 96 innermost
        frames, the rest counted."""
        p = Parked(self, depth=100000)
        r = self.control("-b", p.pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        block = r.stdout.split("\n\n")[2]
        lines = block.splitlines()
        self.assertIn('Thread 3 "beta"', lines[0])
        self.assertIn("100,002 calls in progress", lines[0])
        self.assertEqual(lines[1][:12], "   [ 0]  par")
        self.assertEqual(lines[96], "   [95]  recurse (1 x)  at %s:%d" % (os.path.realpath(PARKED_SRC),
                                                                           parked_line("CALL:recurse-recurse")))
        self.assertEqual(lines[97], "         ... 99,874 frames not shown ...")
        self.assertTrue(lines[98].startswith("   [99970]  recurse (1 x)"), lines[98])
        self.assertTrue(lines[-1].startswith("   [100001]  worker_b (1 x)"), lines[-1])
        self.assertEqual(len(lines), 1 + 96 + 1 + 32)

    def test_events(self):
        """-e: each thread's calls and time since the last dump or zero,
        exact for the calls; none after a zeroing (the threads are parked)."""
        p = Parked(self)
        r = self.control("-e", p.pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "PID %d: %s" % (p.pid, cgtest.shown_command([prog("parked")])))
        self.assertEqual(lines[1], "  Totals since the last dump or zero:")
        self.assertEqual(lines[2].split(), ["ns", "calls"])
        rows = [l.split() for l in lines[3:] if l.strip()]
        self.assertEqual([(r[0], r[1], r[3]) for r in rows], [("Th", "1", "104"), ("Th", "2", "55"), ("Th", "3", "12")])
        for r_ in rows:
            self.assertGreater(int(r_[2].replace(",", "")), 0)
        # one event
        r = self.control("-e", "calls", p.pid)
        self.assertEqual([l.split() for l in r.stdout.splitlines()[2:] if l.strip()],
                         [["calls"], ["Th", "1", "104"], ["Th", "2", "55"], ["Th", "3", "12"]])
        # zeroed: nothing since (the calls in progress were counted before)
        self.assertEqual(self.control("-z", p.pid).returncode, 0)
        r = self.control("-e", "calls", p.pid)
        self.assertEqual([l.split() for l in r.stdout.splitlines()[2:] if l.strip()],
                         [["calls"], ["Th", "1", "0"], ["Th", "2", "0"], ["Th", "3", "0"]])
        # the files say the same: the exit part has no new call
        code, err = p.finish()
        self.assertEqual(code, 0, err)

    def test_stat(self):
        """-s: the process's counters and a line per thread."""
        p = Parked(self)
        self.assertEqual(self.control("-d", "one", p.pid).returncode, 0)
        r = self.control("-s", p.pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("  Threads: ", out)
        self.assertIn(" running, 3 of them profiled (numbers 1 2 3); 0 profiled threads ended\n", out)
        self.assertIn("  Events collected: ns (time: exact)\n", out)
        self.assertIn("  Collecting: on\n", out)
        self.assertIn("  Calls: 171 since the start (running threads and those that ended)\n", out)
        self.assertIn("  Parts written: 1; requests served: 2\n", out)
        self.assertIn("  Repairs: none (in the parts written and the next one)\n", out)
        m = re.search(r"  Memory: ([\d.]+) kB in the threads' tables, ([\d.]+) (kB|bytes) kept by the dumps", out)
        self.assertTrue(m, out)
        self.assertGreaterEqual(float(m.group(1)), 3 * 64)   # three threads' first arrays
        rows = [l.split() for l in out.splitlines() if re.match(r"^ +\d+ +\d+ ", l)]
        self.assertEqual([(r_[0], r_[1], r_[2], r_[3], r_[-1]) for r_ in rows],
                         [("1", str(p.pid), "104", "2", cgtest.shown_name("parked")),
                          ("2", str(p.a_tid), "55", "5", "alpha"),
                          ("3", str(p.b_tid), "12", "12", "beta")])
        # collection paused: said
        self.assertEqual(self.control("-i", "off", p.pid).returncode, 0)
        self.assertIn("  Collecting: off\n", self.control("-s", p.pid).stdout)

    def test_questions_leave_no_file(self):
        """The answers are taken from the control directory: only the
        status and the lock stay; the run's files are the exit's."""
        p = Parked(self)
        for args in (["-b"], ["-e"], ["-s"], ["-b", "-e", "-s"]):
            self.assertEqual(self.control(*(args + [p.pid])).returncode, 0, args)
        self.assertEqual(sorted(os.listdir(self.cdir)), ["%d.lock" % p.pid, "%d.status" % p.pid])
        self.assertEqual([f for f in os.listdir(p.dir) if f.startswith("callgrind")], [])
        code, err = p.finish()
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(f for f in os.listdir(p.dir) if f.startswith("callgrind.out")),
                         ["callgrind.out.%d-%02d" % (p.pid, n) for n in (1, 2, 3)])


class Targets(ControlTestCase):
    """Targets as callgrind_control takes them: pids, program names, none;
    and the launcher's pid for its program."""

    def setUp(self):
        super().setUp()
        if not os.path.exists(prog("parked")):
            self.skipTest("tests/progs/parked is not built")

    def pids_in(self, text):
        return sorted(int(m) for m in re.findall(r"^PID (\d+): ", text, re.M))

    def test_by_name(self):
        one, two = Parked(self), Parked(self)
        for name in ("parked", "progs/parked", prog("parked")):
            r = self.control("-s", name)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.pids_in(r.stdout), sorted([one.pid, two.pid]), name)
        r = self.control("-z", "parked")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.splitlines()),
                         sorted("process %d: costs zeroed" % p for p in (one.pid, two.pid)))
        # listed by name
        r = self.control("parked")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(int(l.split()[0]) for l in r.stdout.splitlines()[1:]), sorted([one.pid, two.pid]))
        # a name and a pid of the same process: once
        r = self.control("-s", "parked", one.pid)
        self.assertEqual(self.pids_in(r.stdout), sorted([one.pid, two.pid]))

    def test_unknown_name(self):
        Parked(self)
        for args in (["-d", "--", "nosuchprogram"], ["-s", "nosuchprogram"], ["nosuchprogram"], ["-s", "arked"]):
            r = self.control(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn("no process named '%s' has libcgprof.so loaded" % args[-1], r.stderr)
            self.assertEqual(r.stdout, "")

    def test_no_target_is_every_process(self):
        """No target: every process with its status in the control
        directory; -d prints the files of each (their names carry the pid),
        -b heads each process's threads with its pid."""
        one, two = Parked(self), Parked(self)
        r = self.control("-d", "all")
        self.assertEqual(r.returncode, 0, r.stderr)
        files = r.stdout.splitlines()
        self.assertEqual(sorted(files), sorted(
            os.path.join(os.path.realpath(p.dir), "callgrind.out.%d.1-%02d" % (p.pid, n))
            for p in (one, two) for n in (1, 2, 3)))
        for f in files:
            self.assertEqual(reader.load(f, strict=True).desc_value("Trigger"), "cgprof-control: all")
        r = self.control("-b")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.pids_in(r.stdout), sorted([one.pid, two.pid]))
        r = self.control("-i", "off")
        self.assertEqual(sorted(r.stdout.splitlines()),
                         sorted("process %d: collection paused (off)" % p for p in (one.pid, two.pid)))

    def test_no_target_and_no_process(self):
        r = self.control("-d")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no running process has libcgprof.so loaded", r.stderr)
        r = self.control()
        self.assertEqual(r.returncode, 0)

    def test_launcher_pid(self):
        """The pid of the cgprof launcher ($! after `cgprof prog &`) stands
        for its program, and the control says so."""
        p = Parked(self, launcher=True)
        self.assertNotEqual(p.launcher_pid, p.pid)
        note = ("cgprof-control: process %d is the cgprof launcher: acting on its program, process %d (%s)\n"
                % (p.launcher_pid, p.pid, prog("parked")))
        r = self.control(p.launcher_pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, note)
        self.assertEqual([int(l.split()[0]) for l in r.stdout.splitlines()[1:]], [p.pid])
        r = self.control("-d", "via launcher", p.launcher_pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, note)
        self.assertEqual(sorted(os.path.basename(f) for f in r.stdout.splitlines()),
                         ["callgrind.out.%d.1-%02d" % (p.pid, n) for n in (1, 2, 3)])
        r = self.control("-b", p.launcher_pid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.pids_in(r.stdout), [p.pid])

    def test_parent_pid_points_at_the_program(self):
        """Another process's pid that has no runtime but a program with it
        under it (this test, its parent): refused, the program's pid named."""
        p = Parked(self)
        r = self.control("-d", os.getpid())
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "cgprof-control: process %d does not have libcgprof.so loaded (process %d under "
                                   "it: give that pid)\n" % (os.getpid(), p.pid))


def load_strict(path):
    return reader.load(path, strict=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
