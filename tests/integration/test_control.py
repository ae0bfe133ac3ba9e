"""cgprof-control (cgproflib.control): the control side of
docs/control-protocol.md, run (its pure pieces are tested in
tests/python/test_control.py).

Two kinds of tests:

- against a FAKE runtime, a small Python program started here that plays
  the runtime's part of the protocol (status file, command file, signal,
  done/parts/last) and maps a file named libcgprof.so, so that
  /proc/<pid>/maps shows what the control looks for: the listing, -d, -z,
  -i, the lock, timeouts, refusals and usage errors;
- against the REAL runtime, examples/server run with libcgprof.so preloaded:
  parts dumped while it runs and the final part at exit. Those need the
  runtime's side of the protocol.
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
from cgtest import example

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
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
        self.env["CGPROF_CONTROL_DIR"] = self.cdir

    def control(self, *args, env=None, timeout=60):
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
        fake = Fake(self, self.cdir, options="map,ignore")
        t0 = time.monotonic()
        p = self.control("--timeout", "0.5", "-d", "x", fake.pid)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(p.returncode, 1)
        self.assertIn("timed out", p.stderr)
        self.assertIn("did not take", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cdir, "%d.cmd" % fake.pid)),
                         "the unread command is removed")

    def test_timeout_when_not_done(self):
        fake = Fake(self, self.cdir, options="map,takeonly")
        p = self.control("--timeout", "0.5", "-z", fake.pid)
        self.assertEqual(p.returncode, 1)
        self.assertIn("did not finish", p.stderr)
        self.assertEqual(fake.log(), ["zero"])

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
            time.sleep(0.3)
            self.assertEqual(fake.log(), [])
            fcntl.flock(fd, fcntl.LOCK_UN)
            out, err = proc.communicate(timeout=30)
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
            out, err = proc.communicate(timeout=60)
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

    def test_send_request_function(self):
        fake = Fake(self, self.cdir)
        with control.find_control_dir(self.env) as cdir:
            before, after = control.send_request(cdir, fake.pid, "dump api", timeout=10)
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

    def test_usage_errors(self):
        for args in (["-d"], ["-z"], ["-i", "on"], ["-i", "maybe", "1"], ["-z", "-d", "1"],
                     ["--bogus"], ["-z", "pid"], ["1", "2"], ["-d", "a", "b", "c"],
                     ["--timeout", "-1", "-z", "1"], ["--dump=", "1"]):
            p = self.control(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(p.stdout, "")
            self.assertIn("usage: cgprof-control", p.stderr)
            self.assertTrue(p.stderr.startswith("cgprof-control: "), p.stderr)

    def test_executable(self):
        self.assertTrue(os.access(SCRIPT, os.X_OK))
        with open(SCRIPT) as f:
            self.assertEqual(f.readline(), "#!/usr/bin/env python3\n")


# ---------------------------------------------------------------------------
# The real runtime: examples/server, preloaded

PART_RE = r"callgrind\.out\.%d\.(\d+)-(\d\d)$"
# at exit without any dump before: Callgrind's name without a part number
# is accepted too (part 1)
ANY_PART_RE = r"callgrind\.out\.%d(?:\.(\d+))?-(\d\d)$"


class RealRuntime(ControlTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(example("server")):
            self.skipTest("examples/server is not built")
        self.run_dir = os.path.join(self.tmp, "run")
        os.mkdir(self.run_dir)

    def start_server(self, *args):
        env = dict(self.env, LD_PRELOAD=cgtest.LIB)
        proc = subprocess.Popen([example("server")] + list(args), cwd=self.run_dir, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def stop():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.addCleanup(stop)
        status = os.path.join(self.cdir, "%d.status" % proc.pid)
        deadline = time.monotonic() + 10
        while not os.path.exists(status):
            self.assertIsNone(proc.poll(), "the server ended before writing its status file")
            self.assertLess(time.monotonic(), deadline, "no status file " + status)
            time.sleep(0.02)
        time.sleep(0.3)  # the workers start and take requests
        return proc

    def finish(self, proc):
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
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
        self.assertEqual((st.parts, st.done), (2, 2))
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
        self.assertEqual((st.done, st.parts), (3, 0))
        self.finish(proc)
        self.assertEqual(sorted(self.parts(proc.pid)), [1])

    def test_plain_signal(self):
        """SIGUSR1 without a command: a part with the reason "signal"; the
        server keeps serving."""
        proc = self.start_server("-n", "0")
        os.kill(proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while self.status(proc.pid).done < 1:
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


def load_strict(path):
    return reader.load(path, strict=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
