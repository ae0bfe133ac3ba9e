"""The control protocol of docs/internals/control-protocol.md, as cgprof-control
speaks it: the control directory (its checks, as the runtime makes them),
the status file, a request (the cmd file, the dump signal, the wait for
the status to say it was handled, all under the lock) and the replies to
the questions (stacks, counters). cgproflib.control is the command."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time

from ._shared import (CONTROL_CMD, CONTROL_DEFAULT_DIR, CONTROL_DIR_UNSAFE, CONTROL_FILE_MODE,
                      CONTROL_REPLY, CONTROL_STATUS)
from .processes import RUNTIME_NAME, ControlError, Undumpable, has_runtime, process_alive, process_stopped

POLL_INTERVAL = 0.02      # seconds: the longest wait between two looks at the status file
POLL_FIRST = 0.001        # and the first: a small program's dump takes a few ms
DEFAULT_TIMEOUT = 30.0    # seconds to wait for a request to be handled
DEFAULT_REASON = "cgprof-control"
# the lock cgprof-control takes per process (the runtime never reads it)
LOCK = "lock"
MAX_REASON = 200          # bytes; the runtime reads one line of up to 511 bytes


STOPPED = ("process %d is stopped (SIGSTOP or ^Z; or a debugger holds it): it takes no request until it "
           "runs again (kill -CONT %d)")


class NoControlDir(ControlError):
    """The control directory does not exist (yet): no program has made it."""


class UsageError(Exception):
    """Bad command line (exit status 2): here, a request the protocol cannot carry."""


# ---------------------------------------------------------------------------
# The control directory

def control_dir_path(env: dict | None = None, uid: int | None = None) -> str:
    """$CGPROF_CONTROL_DIR if set (and not empty), else /tmp/cgprof-<uid>."""
    env = os.environ if env is None else env
    path = env.get("CGPROF_CONTROL_DIR")
    if path:
        return path
    return CONTROL_DEFAULT_DIR + "%d" % (os.geteuid() if uid is None else uid)


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
    if st.st_mode & CONTROL_DIR_UNSAFE:
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

    def read_file(self, name: str) -> str | None:
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
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, CONTROL_FILE_MODE,
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

    def names(self) -> list:
        return os.listdir(self.fd)


def find_control_dir(env: dict | None = None, uid: int | None = None) -> ControlDir:
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

class Status:
    """A status file, parsed (parse_status): its required keys as
    attributes, every key as written in fields."""

    def __init__(self, pid: int, cmd: str, signal: str, threads: int, parts: int, collecting: str, done: int,
                 last: list | None = None, fields: dict | None = None):
        self.pid = pid
        self.cmd = cmd
        self.signal = signal
        self.threads = threads
        self.parts = parts
        self.collecting = collecting
        self.done = done
        self.last = [] if last is None else last
        self.fields = {} if fields is None else fields

    def __repr__(self):
        return "Status(%r)" % self.__dict__

    def __eq__(self, other):
        return isinstance(other, Status) and self.__dict__ == other.__dict__

    def understands(self, command: str) -> bool:
        """Whether the runtime that wrote it takes command (a runtime that
        does not say: dump, zero and collect, which every one took)."""
        said = self.fields.get("commands")
        return command in (said.split() if said is not None else ("dump", "zero", "collect"))


def unescape(word: str) -> str:
    """A word of the status or reply files: \\xHH stands for that byte (a
    space, a newline, a backslash...)."""
    if "\\x" not in word:
        return word
    out = []
    i = 0
    while i < len(word):
        if word.startswith("\\x", i) and i + 4 <= len(word):
            try:
                out.append(chr(int(word[i + 2:i + 4], 16)))
                i += 4
                continue
            except ValueError:
                pass
        out.append(word[i])
        i += 1
    return "".join(out)


unescape_path = unescape


def parse_status(text: str, where: str = "status file") -> Status:
    """Parses the lines "key: value" of a status file; raises ControlError
    if a required key is missing or malformed."""
    fields: dict = {}
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
        last=[unescape(w) for w in fields.get("last", "").split(" ") if w],
        fields=fields,
    )


def status_name(pid: int) -> str:
    return "%d.%s" % (pid, CONTROL_STATUS)


def read_status(cdir: ControlDir, pid: int) -> Status | None:
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


def signal_number(name: str) -> int | None:
    """The signal a status file names (the runtime writes it with
    cg_signal_name(): "USR1", "RTMIN+2", "10"), as the runtime reads it;
    None for "none". Raises ControlError for a name the runtime would not
    take as its dump signal."""
    from . import rules, signals  # a process start: only for a runtime that writes no signo:
    try:
        number = signals.number(name)
    except rules.RulesError as e:
        raise ControlError(str(e))
    if number < 0:
        raise ControlError("the status file names %r as the dump signal: not a signal that can ask for dumps" % name)
    return number or None


def status_signal(status: Status) -> int | None:
    """The dump signal of a status: its signo: (the runtime's number; 0 for
    none), else its name, read as the runtime reads it."""
    if status.signal == "none":
        return None
    signo = status.fields.get("signo", "")
    if signo.isdigit() and 0 < int(signo) < 128:
        return int(signo)
    return signal_number(status.signal)


def _is_control_file(name: str) -> int:
    """The pid of a control file (<pid>.status, .cmd, .lock, .reply and
    their temporaries, <pid>.<kind>.tmp...), 0 for any other name."""
    pid, dot, rest = name.partition(".")
    if not dot or not pid.isdigit():
        return 0
    for kind in (CONTROL_STATUS, CONTROL_CMD, LOCK, CONTROL_REPLY):
        if rest == kind or rest.startswith(kind + ".tmp"):
            return int(pid)
    return 0


def remove_stale(cdir: ControlDir, alive=process_alive) -> list:
    """Removes the control files (status, cmd, lock, reply and their
    temporary files) of pids that are gone; returns the pids whose status
    was removed."""
    gone = []
    dead: dict = {}
    for name in sorted(cdir.names()):
        pid = _is_control_file(name)
        if not pid:
            continue
        if pid not in dead:
            dead[pid] = not alive(pid)
        if dead[pid] and cdir.remove(name) and name == status_name(pid):
            gone.append(pid)
    return gone


# ---------------------------------------------------------------------------
# Requests

def check_target(cdir: ControlDir, pid: int) -> Status:
    """The status of pid, after checking that it runs, has the runtime and
    can be signalled; ControlError otherwise."""
    undumpable = False
    try:
        if not has_runtime(pid):
            raise ControlError("process %d does not have %s loaded" % (pid, RUNTIME_NAME))
    except ProcessLookupError:
        raise ControlError("no process %d (it is gone)" % pid)
    except Undumpable:
        undumpable = True
    except PermissionError:
        raise ControlError("cannot read /proc/%d/maps: permission denied (another user's process?)" % pid)
    status = read_status(cdir, pid)
    if status is None and undumpable:
        raise ControlError("process %d is yours but not dumpable (it set PR_SET_DUMPABLE 0): its memory map "
                           "cannot be read, and it has no status file %s, so it has no %s loaded, or one "
                           "started with another CGPROF_CONTROL_DIR" % (pid, cdir.file(status_name(pid)),
                                                                       RUNTIME_NAME))
    if status is None:
        raise ControlError("process %d has the runtime loaded but no status file %s: it has loaded no "
                           "instrumented code (the runtime serves dumps only where an object built with "
                           "-finstrument-functions is loaded or a hook has run), or it was started with another "
                           "CGPROF_CONTROL_DIR" % (pid, cdir.file(status_name(pid))))
    if status_signal(status) is None:
        raise ControlError("process %d has no dump signal (signal: none): it cannot be controlled" % pid)
    return status


class _Signaller:
    """Sends signals to one process; through a pidfd where the system has
    them, so a pid reused after the checks is never signalled. (_signal:
    the signal module without the enums its Python part builds, a quarter
    of this command's start-up.)"""

    def __init__(self, pid: int):
        self.pid = pid
        self.fd = -1
        try:
            from _signal import pidfd_send_signal
        except ImportError:
            try:
                from signal import pidfd_send_signal
            except ImportError:
                pidfd_send_signal = None
        self._send = pidfd_send_signal
        if pidfd_send_signal is not None and hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except ProcessLookupError:
                raise ControlError("no process %d (it is gone)" % pid)
            except OSError:
                self.fd = -1   # kernel without pidfd: plain kill()

    def send(self, sig: int, tid: int = 0) -> None:
        """tid: the runtime's service thread (its status's service:), which
        the signal is sent to alone: sent to the process, it may land on any
        thread of the program's that does not block it, and a handler that
        runs there cuts its sleep short (EINTR), whatever SA_RESTART says."""
        if tid and self._send_thread(sig, tid):
            return
        try:
            if self.fd >= 0:
                self._send(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            raise ControlError("no process %d (it is gone)" % self.pid)
        except PermissionError:
            raise ControlError("not allowed to signal process %d" % self.pid)

    def _send_thread(self, sig: int, tid: int) -> bool:
        """Whether the signal went to thread tid of the process: through a
        thread's pidfd (Linux 6.9: PIDFD_THREAD, PIDFD_SIGNAL_THREAD), else
        tgkill(2), which checks that tid is a thread of pid."""
        if self._send is not None and hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(tid, 0o200)          # PIDFD_THREAD (O_EXCL)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    self._send(fd, sig, None, 1)        # PIDFD_SIGNAL_THREAD
                    return True
                except OSError:
                    pass
                finally:
                    os.close(fd)
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            # glibc's own tgkill (2.30 on), whatever this machine's system
            # call numbers; before it, the system call by its number here
            tgkill = getattr(libc, "tgkill", None)
            if tgkill is not None:
                return tgkill(self.pid, tid, sig) == 0
            import platform
            number = {"x86_64": 234, "aarch64": 131}.get(platform.machine())
            return number is not None and libc.syscall(number, self.pid, tid, sig) == 0
        except (OSError, AttributeError):
            return False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def command_line(kind: str, arg: str | None = None) -> str:
    """The line of the cmd file: dump <reason> | zero | collect on|off |
    stacks | counters."""
    if kind == "dump":
        reason = DEFAULT_REASON if arg is None else arg
        check_reason(reason)
        return "dump " + reason
    if kind in ("zero", "stacks", "counters"):
        return kind
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


class _Poll:
    """The waits between two looks at something the program will change:
    a tenth of the time waited so far, from POLL_FIRST up to `longest`, so
    that an answer is seen at most 10% (and 1 ms) after it comes, without
    reading the status file a thousand times a second for a dump of
    seconds."""

    def __init__(self, longest: float):
        self.start = time.monotonic()
        self.longest = longest

    def sleep(self) -> None:
        time.sleep(min(self.longest, max(POLL_FIRST, (time.monotonic() - self.start) / 10)))


def _lock(cdir: ControlDir, pid: int, deadline: float, poll: float) -> int:
    name = "%d.%s" % (pid, LOCK)
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, CONTROL_FILE_MODE, dir_fd=cdir.fd)
    except OSError as e:
        raise ControlError("cannot open %s: %s" % (cdir.file(name), e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != cdir.uid:
            raise ControlError("%s is not a regular file of yours: not used" % cdir.file(name))
        waits = _Poll(poll)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ControlError("timed out: another control holds %s (a request to %d is in "
                                       "progress)" % (cdir.file(name), pid))
                waits.sleep()
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
    before, after, _ = _send(cdir, pid, line, timeout, poll)
    return before, after


def ask(cdir: ControlDir, pid: int, question: str, timeout: float = DEFAULT_TIMEOUT,
        poll: float = POLL_INTERVAL):
    """Asks pid a question ("stacks", "counters") as send_request asks for
    a request; returns (status after, the reply's text after its id line):
    <pid>.reply, read and removed under the lock. ControlError for a
    runtime that does not say it understands the question."""
    _, after, reply = _send(cdir, pid, question, timeout, poll, question)
    return after, reply


def _send(cdir: ControlDir, pid: int, line: str, timeout: float, poll: float, question: str | None = None):
    deadline = time.monotonic() + timeout
    sender = _Signaller(pid)            # first: the checks below are about this process
    try:
        status = check_target(cdir, pid)
        word = line.split(" ", 1)[0]
        if not status.understands(word):
            raise ControlError("process %d runs an older cgprof runtime, which cannot answer '%s' (its status "
                               "lists: %s)" % (pid, word, status.fields.get("commands", "dump zero collect")))
        lock_fd = _lock(cdir, pid, deadline, poll)
        try:
            before, after = _request_locked(cdir, pid, line, sender, deadline, poll)
            return before, after, _take_reply(cdir, pid, after) if question else None
        finally:
            os.close(lock_fd)           # releases the flock
    finally:
        sender.close()


def _take_reply(cdir: ControlDir, pid: int, after: Status) -> str:
    name = "%d.%s" % (pid, CONTROL_REPLY)
    text = cdir.read_file(name)
    cdir.remove(name)
    if text is None:
        raise ControlError("process %d handled the request but wrote no answer (%s)" % (pid, cdir.file(name)))
    first, _, rest = text.partition("\n")
    if first != "id: " + after.fields.get("handled", ""):
        raise ControlError("%s answers another request (%s)" % (cdir.file(name), first))
    return rest


def _request_locked(cdir: ControlDir, pid: int, line: str, sender: _Signaller, deadline: float, poll: float):
    cmd_name = "%d.%s" % (pid, CONTROL_CMD)
    before = read_status(cdir, pid)     # under the lock: no other request moves done now
    if before is None:
        if not process_alive(pid):
            raise ControlError("no process %d (it is gone)" % pid)
        raise ControlError("the status file of %d disappeared (is it exiting?)" % pid)
    sig = status_signal(before)
    if sig is None:
        raise ControlError("process %d has no dump signal (signal: none): it cannot be controlled" % pid)
    # The request's id: the runtime echoes the id of the last command it
    # handled as "handled:", which tells our request from a plain signal
    # served meanwhile (done alone cannot).
    # A stopped process (SIGSTOP, ^Z, a debugger) takes no signal until it
    # runs again: the signal would stay pending, and the part it then wrote
    # would be a plain signal's ("Trigger: Signal SIGUSR1") once the
    # command file, unread at the timeout, were removed. Nothing is sent.
    if process_stopped(pid):
        raise ControlError(STOPPED % (pid, pid) + ": nothing sent")
    token = "%d-%s" % (os.getpid(), os.urandom(6).hex())
    cdir.write_file_atomically(cmd_name, line + "\nid: " + token + "\n")
    taken = False
    try:
        service = before.fields.get("service", "")
        sender.send(sig, int(service) if service.isdigit() else 0)
        waits = _Poll(poll)
        while True:
            waits.sleep()
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
                if cdir.exists(cmd_name) and process_stopped(pid):
                    # stopped since the signal was sent: the signal is
                    # pending, and the command file stays for it, so that
                    # the part it makes when the process runs again
                    # carries this request's reason
                    taken = True
                    raise ControlError("timed out: " + STOPPED % (pid, pid) + "; the request stays in %s and "
                                       "is handled then" % cdir.file(cmd_name))
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
# The answers to -b, -e, -s (docs/internals/control-protocol.md, "Replies")

def _pairs(text: str) -> dict:
    """The key=value words of a reply line."""
    out = {}
    for word in text.split(" "):
        key, eq, value = word.partition("=")
        if eq:
            out[key] = "" if value == "-" else unescape(value)
    return out


def _num(d: dict, key: str) -> int:
    v = d.get(key, "")
    return int(v) if v.isdigit() else 0


class Frame:
    def __init__(self, words: dict):
        self.level = _num(words, "level")
        self.calls = _num(words, "calls")
        self.ns = _num(words, "ns")
        self.function = words.get("function", "") or words.get("fn", "?")
        self.flags = [f for f in words.get("flags", "").split(",") if f]
        self.at = words.get("at")
        self.defined = words.get("def")
        self.object = words.get("object")


class Thread:
    def __init__(self, words: dict):
        self.number = _num(words, "number")
        self.tid = _num(words, "tid")
        self.name = words.get("name", "")
        self.words = words
        self.frames: list = []
        self.omitted: list = []      # (after the frame at this index, how many)


def parse_stacks(text: str) -> list:
    """The threads of a stacks reply, by thread number, each with its frames
    innermost first."""
    threads = []
    for line in text.splitlines():
        key, _, rest = line.partition(": ")
        if key == "thread":
            threads.append(Thread(_pairs(rest)))
        elif key == "frame" and threads:
            threads[-1].frames.append(Frame(_pairs(rest)))
        elif key == "omitted" and threads and rest.strip().isdigit():
            threads[-1].omitted.append((len(threads[-1].frames), int(rest)))
    return sorted(threads, key=lambda t: t.number)


def parse_counters(text: str) -> tuple:
    """({key: value} of the process's lines, [Thread] by number)."""
    process, threads = {}, []
    for line in text.splitlines():
        key, _, rest = line.partition(": ")
        if key == "thread":
            threads.append(Thread(_pairs(rest)))
        elif key:
            process[key] = rest
    return process, sorted(threads, key=lambda t: t.number)
