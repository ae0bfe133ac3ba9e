"""The names of the profile files, as the runtime makes them from the
CGPROF_OUT pattern and the directory the program started in (README,
"Output files"):

    <prefix>.<pid>-<NN>            a run without dumps on demand
    <prefix>.<pid>.<part>-<NN>     each part of a run with dumps
    <prefix>-<NN>, <prefix>.<part>-<NN>   when the pattern names the pid (%p)
    the total: callgrind.total.<pid> for callgrind.out, and so on

No rule of that layout is typed here: every name is asked from the
runtime's own code (runtime/naming.c, through cgproflib.rules). The
launcher must also invert the names, to find the files of any pid: it asks
for the names of sentinel numbers (a pid, a thread, a part that the
pattern does not contain) and reads where they land.
"""

import functools
import os
import re
from typing import Dict, NamedTuple, Optional, Tuple

from . import rules


def _sentinels(pattern: str) -> Tuple[int, int, int]:
    """A pid, a thread and a part whose digits appear nowhere in the
    pattern, so that where they land in a name is certain."""
    picked = []
    for base in (987654321, 97531, 86420):
        n = base
        while str(n) in pattern or any(str(n) in str(p) or str(p) in str(n) for p in picked):
            n += 1111
        picked.append(n)
    return picked[0], picked[1], picked[2]


def _answer(name: Optional[str], pattern: str) -> str:
    if name is None:
        raise rules.RulesError("the runtime makes no file name of the pattern %r (too long)" % pattern)
    return name


def directory(pattern: str, pid: int, cwd: str) -> str:
    """The directory of the files of pid; a relative one is taken from cwd,
    the directory the program started in."""
    name = rules.file_names([(pattern, pid, cwd, 1, 0)])[0]
    return os.path.dirname(_answer(name, pattern))


def directory_names_pid(pattern: str) -> bool:
    """Whether the directory of the files depends on the pid."""
    pid, _, _ = _sentinels(pattern)
    a, b = rules.file_names([(pattern, pid, "/", 1, 0), (pattern, pid + 1, "/", 1, 0)])
    return os.path.dirname(_answer(a, pattern)) != os.path.dirname(_answer(b, pattern))


@functools.lru_cache(maxsize=32)
def file_regex(pattern: str) -> "re.Pattern[str]":
    """The names (without their directory) of the files the pattern gives,
    with the groups pid (where the name has it), part, thread; built from
    the runtime's names of sentinel numbers, and checked against them."""
    pid, thread, part = _sentinels(pattern)
    with_part, without = (os.path.basename(_answer(n, pattern)) for n in rules.file_names(
        [(pattern, pid, "", thread, part), (pattern, pid, "", thread, 0)]))
    pid_s, part_s, thread_s = str(pid), ".%d" % part, "-%d" % thread
    out, i, seen_pid = [], 0, False
    while i < len(with_part):
        rest = with_part[i:]
        if rest.startswith(pid_s):
            out.append("(?P=pid)" if seen_pid else "(?P<pid>[0-9]+)")
            seen_pid = True
            i += len(pid_s)
        elif rest.startswith(part_s):
            out.append(r"(?:\.(?P<part>[0-9]+))?")
            i += len(part_s)
        elif rest == thread_s:
            out.append(r"-(?P<thread>[0-9]+)")
            i += len(thread_s)
        else:
            out.append(re.escape(with_part[i]))
            i += 1
    rx = re.compile("".join(out))
    for name, want in ((with_part, str(part)), (without, None)):
        m = rx.fullmatch(name)
        if not m or m.group("part") != want or m.group("thread") != str(thread) or \
                m.groupdict().get("pid") not in (None, pid_s):
            raise rules.RulesError("the runtime's file name %r for %r is not understood" % (name, pattern))
    return rx


class ProfileFile(NamedTuple):
    pid: Optional[int]   # None: the name does not say (the pattern puts it elsewhere)
    part: int            # 0: a run without dumps on demand, whose names have no part
    thread: int
    mtime: int
    suffix: int          # the length of the name's .<part>-<NN> or -<NN> (run_name)


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
        # the name up to its part, or its thread when it has no part
        end = m.start("part") - 1 if m.group("part") is not None else m.start("thread") - 1
        found[path] = ProfileFile(None if file_pid is None else int(file_pid), int(m.group("part") or 0),
                                  int(m.group("thread")), mtime, len(n) - end)
    return found


def run_name(path: str, f: ProfileFile) -> str:
    """The run a file belongs to, the name KCachegrind loads all its parts
    and threads by: the file's name without its .<part> and -<NN>."""
    return path[:len(path) - f.suffix]


def total_path(pattern: str, pid: int, cwd: str) -> Optional[str]:
    """The file of the total of all threads of pid (CGPROF_TOTAL); None if
    its name would be too long for the runtime."""
    return rules.total_files([(pattern, pid, cwd)])[0]
