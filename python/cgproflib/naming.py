"""The names of the profile files, as the runtime makes them from the
CGPROF_OUT pattern and the directory the program started in:

    <prefix>.<pid>-<NN>            a run without dumps on demand
    <prefix>.<pid>.<part>-<NN>     each part of a run with dumps
    <prefix>-<NN>, <prefix>.<part>-<NN>   when the pattern names the pid (%p)
    the total: cg_total_pattern() of the pattern (callgrind.total.<pid>)

<prefix> is the pattern with %p made the pid and %% a % (cg_expand_path()),
relative to the start-up directory (runtime/dump.c's file_name(),
total_path(); runtime/options.c).

The total's pattern is asked from the runtime (cgproflib.rules). Two rules
stay here, because the launcher must invert them to find the files of any
pid: the expansion (tests/python/test_naming.py checks it against
cg_expand_path()) and file_name()'s layout (tests/integration/
test_launcher.py checks what scan() finds against the files the runtime
writes).
"""

import os
import re
from typing import Dict, List, NamedTuple, Optional

from . import rules


def _pieces(pattern: str) -> List[Optional[str]]:
    """The pattern as cg_expand_path() reads it: runs of text, and None for
    each %p (the pid)."""
    pieces: List[Optional[str]] = []
    text, i = [], 0
    while i < len(pattern):
        two = pattern[i:i + 2]
        if two == "%p":
            pieces += ["".join(text), None]
            text = []
            i += 2
        elif two == "%%":
            text.append("%")
            i += 2
        else:
            text.append(pattern[i])
            i += 1
    return pieces + ["".join(text)]


def expand(pattern: str, pid: int) -> str:
    """cg_expand_path(): %p -> pid, %% -> %."""
    return "".join(str(pid) if p is None else p for p in _pieces(pattern))


def names_pid(pattern: str) -> bool:
    """Whether the files' names leave the pid to the pattern: dump.c and
    cg_total_pattern() look for "%p" anywhere in it (strstr(), so the "%p"
    of an escaped "%%p" counts too)."""
    return "%p" in pattern


def directory_names_pid(pattern: str) -> bool:
    """Whether the directory of the files depends on the pid."""
    return None in _pieces(os.path.dirname(pattern))


def directory(pattern: str, pid: int, cwd: str) -> str:
    """The directory of the files of pid; a relative one is taken from cwd,
    the directory the program started in."""
    d = expand(os.path.dirname(pattern), pid)
    return os.path.join(cwd, d) if d else cwd


def file_regex(pattern: str) -> "re.Pattern[str]":
    """The names (without their directory) of the files the pattern gives,
    with the groups pid (where the name has it), part, thread."""
    out, with_pid = [], False
    for piece in _pieces(os.path.basename(pattern)):
        if piece is not None:
            out.append(re.escape(piece))
        else:
            out.append("(?P=pid)" if with_pid else "(?P<pid>[0-9]+)")
            with_pid = True
    if not names_pid(pattern):
        out.append(r"\.(?P<pid>[0-9]+)")
    return re.compile("".join(out) + r"(?:\.(?P<part>[0-9]+))?-(?P<thread>[0-9]+)")


class ProfileFile(NamedTuple):
    pid: Optional[int]   # None: the name does not say (the pattern puts it elsewhere)
    part: int            # 0: a run without dumps on demand, whose names have no part
    thread: int
    mtime: int


def scan(pattern: str, pid: int, cwd: str) -> Dict[str, ProfileFile]:
    """The profile files that the pattern gives for pid, of any pid, in
    their directory (as it is for pid), by path."""
    d = directory(pattern, pid, cwd)
    rx = file_regex(pattern)
    found = {}
    try:
        names = os.listdir(d)
    except OSError:
        return found
    for n in names:
        m = rx.fullmatch(n)
        if not m:
            continue
        path = os.path.join(d, n)
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            continue
        file_pid = m.groupdict().get("pid")
        found[path] = ProfileFile(None if file_pid is None else int(file_pid), int(m.group("part") or 0),
                                  int(m.group("thread")), mtime)
    return found


def run_name(path: str, f: ProfileFile) -> str:
    """The run a file belongs to, the name KCachegrind loads all its parts
    and threads by: the file's name without its .<part> and -<NN>."""
    return path[:path.rfind(".%d-" % f.part if f.part else "-")]


def total_path(pattern: str, pid: int, cwd: str) -> Optional[str]:
    """The file of the total of all threads of pid (CGPROF_TOTAL); None if
    its name would be too long for the runtime."""
    total = rules.total_patterns([pattern])[0]
    if total is None:
        return None
    name = expand(total, pid)
    return os.path.join(cwd, name)
