"""cgprof-control: look at and control programs running with libcgprof.so
preloaded, in the spirit of Valgrind's callgrind_control.

    cgprof-control                  list the processes that have the runtime loaded
    cgprof-control PID              the same line for one process
    cgprof-control -d [REASON] PID  dump a part now, print the files written
    cgprof-control -z PID           zero the costs
    cgprof-control -i on|off PID    resume / pause collection

It talks to the runtime as docs/control-protocol.md says: it reads
<dir>/<pid>.status, writes <dir>/<pid>.cmd, sends the dump signal named in
the status file and waits for the status file's "done" count to move, all
under an exclusive flock on <dir>/<pid>.lock. <dir> is $CGPROF_CONTROL_DIR,
else /tmp/cgprof-<uid>, used only if it is a real directory owned by the
user and not writable by group or others (as the runtime checks it).

The `cgprof-control` command is an entry point of this module
(scripts/command.in). Standard library only.
"""

import errno
import fcntl
import math
import os
import re
import signal
import stat
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, TextIO

from . import rules, signals

PROG = "cgprof-control"
RUNTIME_NAME = "libcgprof.so"
POLL_INTERVAL = 0.02      # seconds between two looks at the status file
DEFAULT_TIMEOUT = 30.0    # seconds to wait for a request to be handled
DEFAULT_REASON = "cgprof-control"
MAX_REASON = 200          # bytes; the runtime reads one line of up to 511 bytes

USAGE = """\
usage: cgprof-control [-h] [--timeout S] [-d [REASON] | --dump[=REASON] | -z | -i on|off] [PID]"""

HELP = USAGE + """

Controls programs running with libcgprof.so preloaded.

  (no argument)        list the processes of this user that have the runtime
                       loaded: pid, threads, parts dumped so far, collecting,
                       dump signal, command
  PID                  the same line for one process
  -d, --dump [REASON]  write a part now (REASON goes in "desc: Trigger:",
                       default "cgprof-control"); prints the files written,
                       one per line
  --dump=REASON        the same
  -z, --zero           zero the costs collected so far, without writing
  -i, --instr on|off   resume (on) or pause (off) collection; also --instr=on
  --timeout S          seconds to wait for the program to handle the request
                       (default 30)
  -h, --help           this text

The control directory is $CGPROF_CONTROL_DIR, else /tmp/cgprof-<uid>; the
program must have been started with the same one. A request is sent with the
signal the program's status file names (SIGUSR1 unless CGPROF_SIGNAL says
otherwise). Exit status: 0 done, 1 failed (message on stderr), 2 usage error."""


class ControlError(Exception):
    """A failure to tell the user in one line (exit status 1)."""


class NoControlDir(ControlError):
    """The control directory does not exist (yet): no program has made it."""


class UsageError(Exception):
    """Bad command line (exit status 2)."""


# ---------------------------------------------------------------------------
# The control directory

def control_dir_path(env: Optional[Dict[str, str]] = None, uid: Optional[int] = None) -> str:
    """$CGPROF_CONTROL_DIR if set (and not empty), else /tmp/cgprof-<uid>."""
    env = os.environ if env is None else env
    path = env.get("CGPROF_CONTROL_DIR")
    if path:
        return path
    return "/tmp/cgprof-%d" % (os.geteuid() if uid is None else uid)


def check_dir_stat(path: str, st: os.stat_result, uid: int) -> None:
    """Raises ControlError unless st (from lstat/fstat of path) is a real
    directory owned by uid and not writable by group or others."""
    if stat.S_ISLNK(st.st_mode):
        raise ControlError("control directory %s is a symbolic link: not used" % path)
    if not stat.S_ISDIR(st.st_mode):
        raise ControlError("control directory %s is not a directory: not used" % path)
    if st.st_uid != uid:
        raise ControlError("control directory %s is owned by uid %d, not by you (uid %d): not used"
                           % (path, st.st_uid, uid))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ControlError("control directory %s is writable by group or others (mode %04o): not used"
                           % (path, stat.S_IMODE(st.st_mode)))


class ControlDir:
    """The checked control directory, held open: every file in it is reached
    through the directory's descriptor, so the directory that was checked is
    the one used."""

    def __init__(self, path: str, fd: int, uid: int):
        self.path = path
        self.fd = fd
        self.uid = uid

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False

    def remove(self, name: str) -> bool:
        """Removes name if it is ours; True if it was removed."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            if st.st_uid != self.uid:
                return False
            os.unlink(name, dir_fd=self.fd)
            return True
        except FileNotFoundError:
            return False

    def read_file(self, name: str) -> Optional[str]:
        """The text of a regular file of ours, None if there is none; a file
        that is not a regular file owned by the user is an error."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ControlError("%s is a symbolic link: not read" % self.file(name))
            raise ControlError("cannot read %s: %s" % (self.file(name), e.strerror))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != self.uid:
                raise ControlError("%s is not a regular file of yours: not read" % self.file(name))
            chunks = []
            while True:
                b = os.read(fd, 65536)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode("utf-8", errors="replace")
        finally:
            os.close(fd)

    def write_file_atomically(self, name: str, text: str) -> None:
        """Writes name through a temporary file and rename (replacing a
        stale file, never following a link planted at name)."""
        tmp = "%s.tmp%d" % (name, os.getpid())
        try:
            os.unlink(tmp, dir_fd=self.fd)
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=self.fd)
        try:
            data = text.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
        except BaseException:
            os.close(fd)
            os.unlink(tmp, dir_fd=self.fd)
            raise
        os.close(fd)
        os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def names(self) -> List[str]:
        return os.listdir(self.fd)


def find_control_dir(env: Optional[Dict[str, str]] = None, uid: Optional[int] = None) -> ControlDir:
    """Opens and checks the control directory (see control_dir_path).
    Raises NoControlDir if it does not exist, ControlError if it is not safe
    to use (the runtime does not use such a directory either)."""
    uid = os.geteuid() if uid is None else uid
    path = control_dir_path(env, uid)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise NoControlDir("control directory %s does not exist (no program has made it)" % path)
    except OSError as e:
        raise ControlError("control directory %s: %s" % (path, e.strerror))
    check_dir_stat(path, st, uid)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise ControlError("control directory %s: %s" % (path, e.strerror))
    try:
        check_dir_stat(path, os.fstat(fd), uid)  # the one opened is the one checked
    except ControlError:
        os.close(fd)
        raise
    return ControlDir(path, fd, uid)


# ---------------------------------------------------------------------------
# The status file

@dataclass
class Status:
    pid: int
    cmd: str
    signal: str
    threads: int
    parts: int
    collecting: str
    done: int
    last: List[str] = field(default_factory=list)
    fields: Dict[str, str] = field(default_factory=dict)   # every key, as written


_ESCAPE_RE = re.compile(r"\\x([0-9a-fA-F]{2})")


def unescape_path(word: str) -> str:
    """A path of the last: line: \\x20 (any \\xHH) stands for that byte."""
    return _ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), word)


def parse_status(text: str, where: str = "status file") -> Status:
    """Parses the lines "key: value" of a status file; raises ControlError
    if a required key is missing or malformed."""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ControlError("%s: malformed line %r" % (where, line))
        fields[key.strip()] = value.strip(" \t")

    def number(key: str) -> int:
        v = fields.get(key)
        if v is None:
            raise ControlError("%s: no '%s:' line" % (where, key))
        if not v.isdigit():
            raise ControlError("%s: '%s: %s' is not a number" % (where, key, v))
        return int(v)

    for key in ("signal", "collecting"):
        if key not in fields:
            raise ControlError("%s: no '%s:' line" % (where, key))
    return Status(
        pid=number("pid"),
        cmd=fields.get("cmd", ""),
        signal=fields["signal"],
        threads=number("threads"),
        parts=number("parts"),
        collecting=fields["collecting"],
        done=number("done"),
        last=[unescape_path(w) for w in fields.get("last", "").split(" ") if w],
        fields=fields,
    )


def status_name(pid: int) -> str:
    return "%d.status" % pid


def read_status(cdir: ControlDir, pid: int) -> Optional[Status]:
    """The status file of pid, None if there is none. Raises ControlError if
    it is malformed, not a regular file of the user, or about another pid."""
    text = cdir.read_file(status_name(pid))
    if text is None:
        return None
    where = cdir.file(status_name(pid))
    st = parse_status(text, where)
    if st.pid != pid:
        raise ControlError("%s: says 'pid: %d'" % (where, st.pid))
    return st


def signal_number(name: str) -> Optional[int]:
    """The signal a status file names (the runtime writes it with
    cg_signal_name(): "USR1", "RTMIN+2", "10"), as the runtime reads it;
    None for "none". Raises ControlError for a name the runtime would not
    take as its dump signal."""
    try:
        number = signals.number(name)
    except rules.RulesError as e:
        raise ControlError(str(e))
    if number < 0:
        raise ControlError("the status file names %r as the dump signal: not a signal that can ask for dumps" % name)
    return number or None


# ---------------------------------------------------------------------------
# Processes

def process_alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True  # exists, but we may not look
    state = data[data.rfind(b")") + 2:][:1]
    return state not in (b"Z", b"X", b"x", b"")


def maps_mention_runtime(maps_text: str) -> bool:
    """Whether the text of a /proc/<pid>/maps maps a file named libcgprof.so."""
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5]
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        if os.path.basename(path) == RUNTIME_NAME:
            return True
    return False


def has_runtime(pid: int) -> bool:
    """Whether process pid has libcgprof.so mapped. Raises ProcessLookupError
    if it is gone, PermissionError if its maps cannot be read."""
    if not process_alive(pid):
        raise ProcessLookupError(pid)
    try:
        with open("/proc/%d/maps" % pid, "r", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProcessLookupError(pid)
    if not text and not process_alive(pid):
        raise ProcessLookupError(pid)
    return maps_mention_runtime(text)


def process_command(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return ""
    return " ".join(a.decode("utf-8", errors="replace") for a in raw.rstrip(b"\0").split(b"\0") if a)


@dataclass
class ProcessInfo:
    pid: int
    cmd: str
    status: Optional[Status]
    problem: Optional[str] = None   # why there is no status, if there is none


_CONTROL_FILE_RE = re.compile(r"(\d+)\.(status|cmd|lock)(\.tmp.*)?")


def remove_stale(cdir: ControlDir, alive=process_alive) -> List[int]:
    """Removes the control files (status, cmd, lock and their temporary
    files) of pids that are gone; returns the pids whose status was removed."""
    gone = []
    dead: Dict[int, bool] = {}
    for name in sorted(cdir.names()):
        m = _CONTROL_FILE_RE.fullmatch(name)
        if not m:
            continue
        pid = int(m.group(1))
        if pid not in dead:
            dead[pid] = pid > 0 and not alive(pid)
        if dead[pid] and cdir.remove(name) and name == status_name(pid):
            gone.append(pid)
    return gone


def list_processes(cdir: Optional[ControlDir], cdir_problem: Optional[str] = None,
                   clean: bool = True, pids: Optional[Sequence[int]] = None) -> List[ProcessInfo]:
    """The running processes of the user that have the runtime loaded, with
    their status when the control directory has it. cdir None: no usable
    control directory, cdir_problem says why. clean: remove the status files
    of pids that are gone. pids: look at these only."""
    if pids is None:
        pids = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
    me, uid = os.getpid(), os.geteuid()
    found = []
    for pid in pids:
        if pid == me:
            continue
        try:
            if os.stat("/proc/%d" % pid).st_uid != uid:
                continue            # another user's: its control files are not ours
        except OSError:
            continue
        try:
            if not has_runtime(pid):
                continue
        except (ProcessLookupError, PermissionError, OSError):
            continue
        status, problem = None, None
        if cdir is None:
            problem = cdir_problem or "no control directory"
        else:
            try:
                status = read_status(cdir, pid)
                if status is None:
                    problem = "no %s" % cdir.file(status_name(pid))
            except ControlError as e:
                problem = str(e)
        cmd = process_command(pid) or (status.cmd if status else "") or "?"
        found.append(ProcessInfo(pid, cmd, status, problem))
    if cdir is not None and clean:
        try:
            remove_stale(cdir)
        except OSError:
            pass
    return found


def printable(text: str) -> str:
    """text on one line: control characters (a newline in an argument) as \\xHH."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: "\\x%02x" % ord(m.group()), text)


def format_listing(procs: Sequence[ProcessInfo]) -> str:
    lines = ["%-8s %7s %5s  %-10s  %-7s %s" % ("PID", "THREADS", "PARTS", "COLLECTING", "SIGNAL", "COMMAND")]
    for p in procs:
        if p.status is not None:
            s = p.status
            lines.append("%-8d %7d %5d  %-10s  %-7s %s" % (p.pid, s.threads, s.parts, printable(s.collecting),
                                                            printable(s.signal), printable(p.cmd)))
        else:
            lines.append("%-8d %7s %5s  %-10s  %-7s %s   (control files unavailable: %s)"
                         % (p.pid, "-", "-", "-", "-", printable(p.cmd), printable(p.problem or "")))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Requests

def check_target(cdir: ControlDir, pid: int) -> Status:
    """The status of pid, after checking that it runs, has the runtime and
    can be signalled; ControlError otherwise."""
    try:
        if not has_runtime(pid):
            raise ControlError("process %d does not have %s loaded" % (pid, RUNTIME_NAME))
    except ProcessLookupError:
        raise ControlError("no process %d (it is gone)" % pid)
    except PermissionError:
        raise ControlError("cannot read /proc/%d/maps: permission denied (another user's process?)" % pid)
    status = read_status(cdir, pid)
    if status is None:
        raise ControlError("process %d has the runtime loaded but no status file %s: cannot know "
                           "its dump signal (was it started with another CGPROF_CONTROL_DIR?)"
                           % (pid, cdir.file(status_name(pid))))
    if signal_number(status.signal) is None:
        raise ControlError("process %d has no dump signal (signal: none): it cannot be controlled" % pid)
    return status


class _Signaller:
    """Sends signals to one process; through a pidfd where the system has
    them, so a pid reused after the checks is never signalled."""

    def __init__(self, pid: int):
        self.pid = pid
        self.fd = -1
        if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
            try:
                self.fd = os.pidfd_open(pid)
            except ProcessLookupError:
                raise ControlError("no process %d (it is gone)" % pid)
            except OSError:
                self.fd = -1   # kernel without pidfd: plain kill()

    def send(self, sig: int) -> None:
        try:
            if self.fd >= 0:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            raise ControlError("no process %d (it is gone)" % self.pid)
        except PermissionError:
            raise ControlError("not allowed to signal process %d" % self.pid)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def command_line(kind: str, arg: Optional[str] = None) -> str:
    """The line of the cmd file: dump <reason> | zero | collect on|off."""
    if kind == "dump":
        reason = DEFAULT_REASON if arg is None else arg
        check_reason(reason)
        return "dump " + reason
    if kind == "zero":
        return "zero"
    if kind == "collect":
        if arg not in ("on", "off"):
            raise UsageError("collection is 'on' or 'off', not %r" % (arg,))
        return "collect " + arg
    raise ValueError(kind)


def check_reason(reason: str) -> None:
    if not reason:
        raise UsageError("the dump reason is empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in reason):
        raise UsageError("the dump reason must be one line of printable text")
    if len(reason.encode("utf-8")) > MAX_REASON:
        raise UsageError("the dump reason is longer than %d bytes" % MAX_REASON)


def _lock(cdir: ControlDir, pid: int, deadline: float, poll: float) -> int:
    name = "%d.lock" % pid
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=cdir.fd)
    except OSError as e:
        raise ControlError("cannot open %s: %s" % (cdir.file(name), e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != cdir.uid:
            raise ControlError("%s is not a regular file of yours: not used" % cdir.file(name))
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ControlError("timed out: another control holds %s (a request to %d is in "
                                       "progress)" % (cdir.file(name), pid))
                time.sleep(poll)
    except BaseException:
        os.close(fd)
        raise


def send_request(cdir: ControlDir, pid: int, line: str, timeout: float = DEFAULT_TIMEOUT,
                 poll: float = POLL_INTERVAL):
    """Asks pid to do what line says (see command_line) and waits until it
    has: writes <pid>.cmd with an id, sends the dump signal, waits for the
    status to say it handled that id (a runtime without "handled:" in its
    status: for done to move and the cmd file to be taken), all under the
    flock on <pid>.lock. Returns (status before, status after); raises
    ControlError on any failure, after removing the cmd file it wrote."""
    deadline = time.monotonic() + timeout
    sender = _Signaller(pid)            # first: the checks below are about this process
    try:
        check_target(cdir, pid)
        lock_fd = _lock(cdir, pid, deadline, poll)
        try:
            return _request_locked(cdir, pid, line, sender, deadline, poll)
        finally:
            os.close(lock_fd)           # releases the flock
    finally:
        sender.close()


def _request_locked(cdir: ControlDir, pid: int, line: str, sender: _Signaller, deadline: float, poll: float):
    cmd_name = "%d.cmd" % pid
    before = read_status(cdir, pid)     # under the lock: no other request moves done now
    if before is None:
        if not process_alive(pid):
            raise ControlError("no process %d (it is gone)" % pid)
        raise ControlError("the status file of %d disappeared (is it exiting?)" % pid)
    sig = signal_number(before.signal)
    if sig is None:
        raise ControlError("process %d has no dump signal (signal: none): it cannot be controlled" % pid)
    # The request's id: the runtime echoes the id of the last command it
    # handled as "handled:", which tells our request from a plain signal
    # served meanwhile (done alone cannot).
    token = "%d-%s" % (os.getpid(), os.urandom(6).hex())
    cdir.write_file_atomically(cmd_name, line + "\nid: " + token + "\n")
    taken = False
    try:
        sender.send(sig)
        while True:
            time.sleep(poll)
            try:
                now = read_status(cdir, pid)
            except ControlError:
                now = None              # a reader never sees half a file; keep looking
            if now is not None and now.done > before.done:
                handled = now.fields.get("handled")
                if handled == token or (handled is None and not cdir.exists(cmd_name)):
                    taken = True
                    return before, now
                # done moved for a request that began before ours (a plain
                # signal); ours is still waiting in the cmd file: wait on
            if not process_alive(pid):
                raise ControlError("process %d exited before handling the request" % pid)
            if time.monotonic() >= deadline:
                if cdir.exists(cmd_name):
                    raise ControlError("timed out: process %d did not take the request (%s stays "
                                       "unread; is its signal handled?)" % (pid, cdir.file(cmd_name)))
                taken = True            # it took the file: do not remove a newer one
                raise ControlError("timed out: process %d took the request but did not finish it "
                                   "(done stays at %d)" % (pid, before.done))
    finally:
        if not taken:
            try:
                cdir.remove(cmd_name)
            except OSError:
                pass


# ---------------------------------------------------------------------------
# Command line

@dataclass
class Args:
    action: Optional[str] = None      # None (list), "dump", "zero", "collect", "help"
    arg: Optional[str] = None         # the reason, or on/off
    pid: Optional[int] = None
    timeout: float = DEFAULT_TIMEOUT


def parse_args(argv: Sequence[str]) -> Args:
    a = Args()
    positionals = []                  # (index in argv, text)
    after_dump = -1                   # index of the argument right after -d/--dump
    i = 0

    def set_action(kind: str, opt: str) -> None:
        if a.action is not None:
            raise UsageError("%s: only one of -d, -z, -i at a time" % opt)
        a.action = kind

    def value(opt: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            raise UsageError("%s needs a value" % opt)
        i += 1
        return argv[i]

    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            return Args(action="help")
        if arg == "--":
            positionals += [(j, argv[j]) for j in range(i + 1, len(argv))]
            break
        if arg in ("-d", "--dump"):
            set_action("dump", arg)
            after_dump = i + 1
        elif arg.startswith("--dump="):
            set_action("dump", "--dump")
            a.arg = arg[len("--dump="):]
            if not a.arg:
                raise UsageError("--dump= needs a reason")
        elif arg in ("-z", "--zero"):
            set_action("zero", arg)
        elif arg in ("-i", "--instr") or arg.startswith("--instr="):
            set_action("collect", arg.split("=")[0])
            a.arg = arg[len("--instr="):] if arg.startswith("--instr=") else value(arg)
            if a.arg not in ("on", "off"):
                raise UsageError("%s takes 'on' or 'off', not %r" % (arg.split("=")[0], a.arg))
        elif arg == "--timeout" or arg.startswith("--timeout="):
            v = arg[len("--timeout="):] if arg.startswith("--timeout=") else value(arg)
            try:
                a.timeout = float(v)
            except ValueError:
                raise UsageError("--timeout takes a number of seconds, not %r" % v)
            if not math.isfinite(a.timeout) or a.timeout <= 0:
                raise UsageError("--timeout takes a number of seconds > 0, not %r" % v)
        elif arg.startswith("-") and arg != "-":
            raise UsageError("unknown option %s" % arg)
        else:
            positionals.append((i, arg))
        i += 1

    # -d REASON PID: the argument right after -d is the reason when a PID follows
    if a.action == "dump" and a.arg is None and len(positionals) == 2 and positionals[0][0] == after_dump:
        a.arg = positionals.pop(0)[1]
    if len(positionals) > 1:
        raise UsageError("too many arguments: %s" % " ".join(p for _, p in positionals))
    if positionals:
        text = positionals[0][1]
        if not text.isdigit() or int(text) <= 0:
            raise UsageError("PID must be a process id, not %r" % text)
        a.pid = int(text)
    elif a.action is not None:
        raise UsageError("%s needs a PID" % {"dump": "-d", "zero": "-z", "collect": "-i"}[a.action])
    if a.action == "dump" and a.arg is not None:
        check_reason(a.arg)
    return a


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None, err: Optional[TextIO] = None,
         env: Optional[Dict[str, str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        args = parse_args(argv)
    except UsageError as e:
        print("%s: %s" % (PROG, e), file=err)
        print(USAGE, file=err)
        return 2
    if args.action == "help":
        print(HELP, file=out)
        return 0
    try:
        return _run(args, out, err, env)
    except UsageError as e:
        print("%s: %s" % (PROG, e), file=err)
        print(USAGE, file=err)
        return 2
    except ControlError as e:
        print("%s: %s" % (PROG, e), file=err)
        return 1
    except KeyboardInterrupt:
        print("%s: interrupted" % PROG, file=err)
        return 130


def _run(args: Args, out: TextIO, err: TextIO, env: Optional[Dict[str, str]]) -> int:
    if args.action is None:
        cdir, problem = None, None
        try:
            cdir = find_control_dir(env)
        except NoControlDir as e:
            problem = str(e)
        try:
            procs = list_processes(cdir, problem, pids=None if args.pid is None else [args.pid])
        finally:
            if cdir is not None:
                cdir.close()
        if args.pid is not None and not procs:
            try:
                if not has_runtime(args.pid):
                    raise ControlError("process %d does not have %s loaded" % (args.pid, RUNTIME_NAME))
                raise ControlError("process %d is another user's" % args.pid)
            except ProcessLookupError:
                raise ControlError("no process %d (it is gone)" % args.pid)
            except PermissionError:
                raise ControlError("cannot read /proc/%d/maps: permission denied" % args.pid)
        if not procs:
            print("%s: no running process has %s loaded" % (PROG, RUNTIME_NAME), file=err)
            return 0
        out.write(format_listing(procs))
        return 0

    try:
        cdir = find_control_dir(env)
    except NoControlDir as e:
        raise ControlError("%s: cannot control process %d" % (e, args.pid))
    with cdir:
        line = command_line(args.action, args.arg)
        before, after = send_request(cdir, args.pid, line, args.timeout)
    if args.action == "dump":
        for path in after.last:
            print(path, file=out)
        if after.parts <= before.parts:
            print("%s: process %d handled the dump but wrote no new part" % (PROG, args.pid), file=err)
            return 1
        return 0
    if args.action == "zero":
        print("process %d: costs zeroed" % args.pid, file=out)
        return 0
    if after.collecting != args.arg:
        print("%s: process %d handled the request but says 'collecting: %s'"
              % (PROG, args.pid, after.collecting), file=err)
        return 1
    print("process %d: collection %s" % (args.pid, "resumed (on)" if args.arg == "on" else "paused (off)"),
          file=out)
    return 0
