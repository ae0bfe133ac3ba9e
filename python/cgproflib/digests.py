"""What `cgprof report` reads of a Callgrind file: digest() sums one
event per function, per line and per call arc as the file is read, without
a model (cgproflib.parser is the strict reader), on files of hundreds of MB:
line by line (_digest_lines: the views that need positions, and whatever
the fast path leaves to it) or, for the flat profile and the call graph, by
tokens of whole lines found by one regular expression (_digest_fast, which
says why it is kept). Both read the header, the names and cgprof's data
comments with the same functions; tests/python/test_digest.py holds them to
the strict reader."""

from __future__ import annotations

import gc
import re
from typing import Dict, List, Optional, Tuple

from . import latency as _latency
from .latency import LATENCY_PREFIX, SCHEME_PREFIX
from .model import CallgrindFormatError, Violation, desc_value
from .tokens import (CONTINUED_PREFIX, VISITS_PREFIX, _COST_CHARS, _DECIMAL_RE, _NUMBER_RE,
                     _RECURSION_SUFFIX_RE, _SUBPOS_RE, _T_ASSOC, _T_BLANK, _T_COMMENT, _T_SPEC,
                     _split_name, _token)


class Digest:
    """What `cgprof report` needs of one file, summed as it is read: one
    event's self cost per function and per source line, and the call arcs
    with their counts and inclusive cost per call site. Made by digest(),
    the fast path: one pass, no model of each line, no checks beyond what
    is needed to read the numbers right (load() is the strict reader).

    Functions are keyed (name, object); names are folded (fold_recursion)
    when fold is true, so Valgrind's "fib'2" is fib."""

    def __init__(self, path: str):
        self.path = path
        self.events: List[str] = []
        self.event: Optional[str] = None      # the one read
        self.positions = ["line"]
        self.desc: List[str] = []
        self.creator = self.cmd = None
        self.pid = self.thread = self.part = None
        self.self_cost: Dict[Tuple[str, str], int] = {}
        self.files: Dict[Tuple[str, str], str] = {}
        # (caller, callee, file, line) -> [calls, inclusive cost]
        self.arcs: Dict[Tuple, List[int]] = {}
        # (function, file, line) -> self cost (when asked for)
        self.lines: Dict[Tuple, int] = {}
        # digest(flat=True), instead of the arcs: function -> [calls into
        # it, inclusive cost of its calls to OTHER functions]
        self.flat: Dict[Tuple[str, str], List[int]] = {}
        self.total = 0
        # the functions whose calls are counted as visits (VISITS_PREFIX)
        self.visits: set = set()
        # function -> its calls' latency histogram (LATENCY_PREFIX)
        self.latency: dict = {}

    def desc_value(self, type_: str) -> Optional[str]:
        return desc_value(self.desc, type_)




# ---- what the two digests read alike -------------------------------------
# _digest_fast and _digest_lines differ in how they find the body's lines
# (tokens of whole lines by one regular expression, or a loop over lines);
# the header, the names' compression and cgprof's comment lines that carry
# data are read by these, for both. bad(message) says why a line cannot be
# read (the fast path then leaves the file to the line reader).

def _digest_header(d: Digest, raw: str, event: Optional[str], npos: int, ev: int, bad) -> Tuple[int, int]:
    """A header line (events:, positions:, desc:, ...) read into d.
    Returns (npos, ev): the number of positions and the index of the
    event's cost among a cost line's tokens (-1 before events:)."""
    hkey, colon, value = raw.partition(":")
    if not colon or "=" in hkey:
        bad("line matches no rule of the format grammar: %r" % raw[:60])
    value = value.strip()
    if hkey == "events":
        d.events = value.split()
        want = event or ("ns" if "ns" in d.events else d.events[0] if d.events else None)
        if want not in d.events:
            bad("no event %s in this file (its events: %s)" % (want, " ".join(d.events)))
        d.event = want
        ev = npos + d.events.index(want)
    elif hkey == "positions":
        d.positions = value.split()
        npos = len(d.positions)
        if ev >= 0:
            ev = npos + d.events.index(d.event)
    elif hkey == "desc":
        d.desc.append(value)
    elif hkey in ("pid", "thread", "part"):
        try:
            setattr(d, hkey, int(value))
        except ValueError:
            bad("'%s:' needs a number" % hkey)
    elif hkey == "cmd":
        d.cmd = value
    elif hkey == "creator":
        d.creator = value
    return npos, ev


def _digest_name(table: Dict[str, str], value: str, bad) -> Tuple[str, Optional[str], bool]:
    """(name, "(id)" or None, whether the line defines it) of a name in
    one space (table: "(id)" -> name, defined here when the line does)."""
    if value[:1] == "(":
        ident, rest = _split_name(value)
        if not ident:
            bad("malformed compressed name %r" % value)
        if rest:
            table[ident] = rest
            return rest, ident, True
        if ident not in table:
            bad("id %s is not defined" % ident)
        return table[ident], ident, False
    return value, None, True


def _digest_comment(d: Digest, prefix: str, raw: str, fn_ref: Dict[str, int],
                    keys: List[Tuple[str, str]], lat_sub: int) -> int:
    """A comment line (a _T_COMMENT token): the data of cgprof's it
    carries (prefix: VISITS_PREFIX, LATENCY_PREFIX, SCHEME_PREFIX) read
    into d, nothing for any other; fn_ref: "(id)" -> the function's
    number, keys: its key. Returns the latency scheme in force after it."""
    if prefix == VISITS_PREFIX:
        d.visits.update(keys[fn_ref[t]] for t in raw[8:].split() if t in fn_ref)
    elif prefix == LATENCY_PREFIX:
        got = _latency.parse(raw, lat_sub)
        if got and got[0] in fn_ref:
            _latency.add_to(d.latency, keys[fn_ref[got[0]]], got[1])
    elif prefix == SCHEME_PREFIX:
        return _latency.parse_scheme(raw) or _latency.DEFAULT_SUB
    return lat_sub


_BODY_KEYS = {"calls": 1, "fn": 2, "cfn": 3, "cfi": 4, "cfl": 4, "cob": 5, "fl": 6, "fi": 7, "fe": 7,
              "ob": 8, "jump": 9, "jcnd": 9, "jfi": 10, "jfn": 10}


class _Slow(Exception):
    """The fast path met what only the line reader reads exactly (an
    error, whose message needs the line number, or a header line after the
    body began): digest() reads the file again with it."""


_FAST_BLOCK = 1 << 20        # characters read at a time (a memory bound, not a limit: 1 MB was
                             # as fast as 0.5 or 2 MB, 8 MB 8% slower)


def _fast_pattern(npos: int, nev: int, k: int):
    """The tokens of the fast path, each one or more whole lines, each line
    preceded by its "\\n" (the text is fed with one in front):

    1. blank lines, an optional fl=, fn=, and the run of complete cost lines
       (every position and every event, plain tokens) after it;
    2. an optional cob=, an optional cfi=/cfl=, cfn=, calls= and its cost
       line: one call;
    3. one cost line whose event is there;
    4. any other line, read as the line reader reads it.

    Only what the line reader would read the same way is a token of kinds
    1-3: values without "\\r", tokens of [0-9a-fA-Fx+*-] separated by blanks
    and tabs, the event's cost in decimal (str.split() and int() accept more:
    those lines are kind 4)."""
    tok = r"[0-9a-fA-Fx+*-]+"
    sep = r"[ \t]+"
    poss = r"[0-9+*-][0-9a-fA-Fx+*-]*" + (sep + tok) * (npos - 1)
    end = r"[ \t]*(?=\n|\Z)"
    full = r"\n" + poss + (sep + tok) * k + sep + r"[0-9]+" + (sep + tok) * (nev - k - 1) + end
    one = poss + (sep + tok) * k + sep + r"([0-9]+)(?:" + sep + tok + r")*" + end
    value = r"([^\n\r]+)"
    return re.compile(
        r"\n+(?:fl=" + value + r"\n)?fn=" + value + r"((?:" + full + r")*)"
        r"|\n(?:cob=" + value + r"\n)?(?:cf[il]=" + value + r"\n)?cfn=" + value +
        r"\ncalls=([0-9]+)(?: [^\n]*)?\n" + one +
        r"|\n" + one +
        r"|\n([^\n]*)")


def _digest_fast(path: str, event: Optional[str], fold: bool, flat: bool) -> Digest:
    """digest() without lines or sites: the same numbers, read by tokens of
    whole lines (_fast_pattern) found by one regular expression, so that
    most of the file is never seen line by line from Python. Raises _Slow
    where the line reader must take over (digest() does).

    Why a second reader of the body, not a use of _token(): it is what
    `cgprof report` (flat profile, call graph) reads a file with, and
    _digest_lines, the same work line by line on _token(), takes 1.6 to
    1.8 times as long: 3.1-3.7 s against 1.9-2.1 s on a 20 MB file of
    `python3 tests/bench/gen_profile.py FILE 20` (minimum of 5 runs of
    each, interleaved in one process, on a loaded 2-core machine). The
    lines its expression does not take whole (kind 4) it reads with
    _token(), as _digest_lines does."""
    d = Digest(path)
    lat_sub = _latency.DEFAULT_SUB
    ids = {"ob": {}, "fl": {}, "fn": {}}
    fn_ref: Dict[str, int] = {}
    fl_ref: Dict[str, str] = {}
    ob_ref: Dict[str, str] = {}
    ob = fl = cur_file = ""
    fn = None
    acc = 0
    cob = cfi = None
    callee = None
    pending = 0
    pcount = 0
    npos = 1
    ev = -1
    self_cost: Dict[int, int] = {}
    arcs: Dict[int, List[int]] = {}
    fold_re = _RECURSION_SUFFIX_RE
    body_keys = _BODY_KEYS
    cost_start = _COST_CHARS
    total = 0

    def bad(*_):
        raise _Slow()

    def name_of(space, value):
        return _digest_name(ids[space], value, bad)[:2]

    def file_name(value):
        n, ident = name_of("fl", value)
        if ident is not None:
            fl_ref[ident] = n
        return n

    def object_name(value):
        n, ident = name_of("ob", value)
        if ident is not None:
            ob_ref[ident] = n
        return n

    keys: List[Tuple[str, str]] = []
    # flat: per function number, the calls into it and the cost of its
    # calls to other functions, and the order the functions are named in
    # by the calls (a callee at its call, a caller at its first call to
    # another function: the order Group.flat() gives the arcs' functions)
    calls_in: List[int] = []
    calls_out: List[int] = []
    named = bytearray()
    order: List[int] = []
    number: Dict[Tuple[str, str], int] = {}
    where: List[str] = []

    def define(value, o, f_):
        name, ident = name_of("fn", value)
        k = (fold_re.sub("", name) if fold and "'" in name else name, o)
        i = number.get(k)
        if i is None:
            i = number[k] = len(keys)
            keys.append(k)
            where.append(f_)
            calls_in.append(0)
            calls_out.append(0)
            named.append(0)
        elif not where[i]:
            where[i] = f_
        if ident is not None:
            fn_ref[ident] = i
        return i

    def lone_cr(text):
        """Whether text holds a "\\r" that ends a line by itself (the file
        object's newline="" splits lines there too; the tokens do not),
        but for one at its end, which the next read may pair with "\\n"."""
        r = text.count("\r")
        return r and r != text.count("\r\n") + (text[-1:] == "\r")

    collecting = gc.isenabled()
    gc.disable()
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            # the header, line by line, up to the first line of the body
            text = f.read(_FAST_BLOCK)
            if lone_cr(text):
                bad()
            pos = 0
            while pos < len(text):
                nl = text.find("\n", pos)
                if nl < 0:
                    more = f.read(_FAST_BLOCK)
                    if more:
                        text = text[pos:] + more
                        pos = 0
                        if lone_cr(text):
                            bad()
                        continue
                    nl = len(text) - 1
                raw = text[pos:nl + 1]
                kind = _token(raw.rstrip("\r\n"))[0]
                if kind <= _T_ASSOC:          # a cost line, a name, a call: the body
                    break
                pos = nl + 1
                if kind == _T_COMMENT or kind == _T_BLANK or not raw.strip():
                    continue
                npos, ev = _digest_header(d, raw, event, npos, ev, bad)
            if ev < 0 or npos < 1:
                bad()
            nev = len(d.events)
            k = ev - npos
            pattern = _fast_pattern(npos, nev, k)
            fn_get = fn_ref.get
            width = npos + nev
            carry = "\n" + text[pos:]
            text = None
            at_end = False
            while not at_end:
                more = f.read(_FAST_BLOCK)
                if more:
                    chunk = carry + more
                    if lone_cr(chunk):
                        bad()
                    cut = chunk.rfind("\n")
                    if cut <= 0:
                        carry = chunk
                        continue
                    carry = chunk[cut:]
                    chunk = chunk[:cut]
                else:
                    at_end = True
                    chunk = carry if carry != "\n" else ""
                if CONTINUED_PREFIX in chunk:     # see Parser.line
                    chunk = chunk.replace("\n" + CONTINUED_PREFIX, "\n")
                for flv, fnv, run, cobv, cfiv, cfnv, cnt, ccost, scost, raw in pattern.findall(chunk):
                    if cfnv:                  # a call
                        callee = fn_get(cfnv)
                        if callee is None:    # named here first
                            if cobv:
                                n = ob_ref.get(cobv)
                                cob = n if n is not None else object_name(cobv)
                            if cfiv:
                                n = fl_ref.get(cfiv)
                                cfi = n if n is not None else file_name(cfiv)
                            callee = define(cfnv, cob if cob is not None else ob,
                                            cfi if cfi is not None else cur_file)
                        else:
                            # cob=/cfi= matter to a callee named here only,
                            # but an id they define or miss does to the file
                            if cfiv and cfiv not in fl_ref:
                                file_name(cfiv)
                            if cobv and cobv not in ob_ref:
                                object_name(cobv)
                        if fn is None:
                            bad()
                        # (the same as for a call whose cost line comes
                        # apart, below: written out in both places, since a
                        # function call per call line is the cost this
                        # loop exists to avoid)
                        if flat:
                            calls_in[callee] += int(cnt)
                            if not named[callee]:
                                named[callee] = 1
                                order.append(callee)
                            if callee != fn:
                                calls_out[fn] += int(ccost)
                                if not named[fn]:
                                    named[fn] = 1
                                    order.append(fn)
                        else:
                            key = (fn << 32) | callee
                            e = arcs.get(key)
                            if e is None:
                                arcs[key] = [int(cnt), int(ccost)]
                            else:
                                e[0] += int(cnt)
                                e[1] += int(ccost)
                        pending = 0
                        cob = cfi = None
                    elif fnv:                 # fn=, and its cost lines
                        if flv:
                            n = fl_ref.get(flv)
                            fl = n if n is not None else file_name(flv)
                        if acc:
                            self_cost[fn] = self_cost.get(fn, 0) + acc
                            total += acc
                            acc = 0
                        cur_file = fl
                        fn = fn_get(fnv)
                        if fn is None:
                            fn = define(fnv, ob, fl)
                        if run:
                            if pending:
                                bad()
                            acc += sum(map(int, run.split()[ev::width]))
                    elif scost:               # a cost line
                        if fn is None:
                            bad()
                        if pending == 0:
                            acc += int(scost)
                        else:
                            if pending == 1:
                                if flat:
                                    calls_in[callee] += pcount
                                    if not named[callee]:
                                        named[callee] = 1
                                        order.append(callee)
                                    if callee != fn:
                                        calls_out[fn] += int(scost)
                                        if not named[fn]:
                                            named[fn] = 1
                                            order.append(fn)
                                else:
                                    key = (fn << 32) | callee
                                    e = arcs.get(key)
                                    if e is None:
                                        arcs[key] = [pcount, int(scost)]
                                    else:
                                        e[0] += pcount
                                        e[1] += int(scost)
                                cob = cfi = None
                            pending = 0
                    else:                     # any other line, as digest() reads it
                        c = raw[:1]
                        if c in cost_start and c:
                            if fn is None:
                                bad()
                            toks = raw.split()
                            if len(toks) > ev:
                                t = toks[ev]
                                cost = int(t) if t[:2] != "0x" else int(t, 16)
                            else:
                                cost = 0
                            if pending == 0:
                                acc += cost
                            else:
                                if pending == 1:
                                    if flat:
                                        calls_in[callee] += pcount
                                        if not named[callee]:
                                            named[callee] = 1
                                            order.append(callee)
                                        if callee != fn:
                                            calls_out[fn] += cost
                                            if not named[fn]:
                                                named[fn] = 1
                                                order.append(fn)
                                    else:
                                        key = (fn << 32) | callee
                                        e = arcs.get(key)
                                        if e is None:
                                            arcs[key] = [pcount, cost]
                                        else:
                                            e[0] += pcount
                                            e[1] += cost
                                    cob = cfi = None
                                pending = 0
                            continue
                        kind, key, value = _token(raw.rstrip("\r\n"))
                        if kind == _T_SPEC or kind == _T_ASSOC:
                            kind = body_keys[key]
                            if kind == 1:             # calls=
                                sp = value.find(" ")
                                pcount = int(value[:sp] if sp > 0 else value)
                                if callee is None:
                                    bad()
                                pending = 1
                            elif kind == 3:           # cfn=
                                callee = fn_ref.get(value)
                                if callee is None:
                                    callee = define(value, cob if cob is not None else ob,
                                                    cfi if cfi is not None else cur_file)
                            elif kind == 2:           # fn=
                                if acc:
                                    self_cost[fn] = self_cost.get(fn, 0) + acc
                                    total += acc
                                    acc = 0
                                cur_file = fl
                                fn = fn_ref.get(value)
                                if fn is None:
                                    fn = define(value, ob, fl)
                            elif kind in (4, 6, 7):   # cfi= cfl=, fl=, fi= fe=
                                n = fl_ref.get(value)
                                if n is None:
                                    n = file_name(value)
                                if kind == 4:
                                    cfi = n
                                elif kind == 6:
                                    fl = cur_file = n
                                else:
                                    cur_file = n
                            elif kind == 5:           # cob=
                                n = ob_ref.get(value)
                                if n is None:
                                    n = object_name(value)
                                cob = n
                            elif kind == 8:           # ob=: KCachegrind forgets the function
                                ob = ob_ref.get(value) or object_name(value)
                                if acc:
                                    self_cost[fn] = self_cost.get(fn, 0) + acc
                                    total += acc
                                    acc = 0
                                fn = None
                            elif kind == 9:           # jump= jcnd=: the next line is the jump's source
                                pending = 2
                            elif key == "jfi":
                                file_name(value)
                            else:                     # jfn=: defines an id, as cfn= would
                                if value not in fn_ref:
                                    define(value, ob, cur_file)
                            continue
                        if kind == _T_COMMENT:
                            lat_sub = _digest_comment(d, key, raw, fn_ref, keys, lat_sub)
                            continue
                        if kind == _T_BLANK or not raw.strip():
                            continue
                        if raw[:7] in ("events:", "positio"):
                            bad()             # the tokens were made for the header's
                        npos, ev = _digest_header(d, raw, event, npos, ev, bad)
            if acc:
                if fn is None:
                    bad()
                self_cost[fn] = self_cost.get(fn, 0) + acc
                total += acc
    except (ValueError, IndexError, KeyError):
        raise _Slow()
    finally:
        if collecting:
            gc.enable()
    d.total = total
    # numbers to keys by map and zip (no loop in Python over 100,000s of them)
    key_of = keys.__getitem__
    d.self_cost = dict(zip(map(key_of, self_cost), self_cost.values()))
    d.files = dict(zip(keys, where))
    if flat:
        d.flat = dict(zip(map(key_of, order), map(list, zip(map(calls_in.__getitem__, order),
                                                            map(calls_out.__getitem__, order)))))
    else:
        d.arcs = {(keys[k >> 32], keys[k & 0xffffffff], "", None): v for k, v in arcs.items()}
    return d


def digest(path: str, event: Optional[str] = None, lines: bool = False, fold: bool = True,
           sites: bool = True, flat: bool = False) -> Digest:
    """Read one Callgrind file fast (see Digest). event: the event to read
    (default: ns when the file has it, else the first, which is Ir in
    Valgrind's files); lines: collect the self cost per source line; sites:
    resolve the call sites' lines (without, the arcs are keyed by caller,
    callee and file only, and the positions are not followed: faster);
    flat: only what the flat profile needs, Digest.flat (calls and the cost
    of the calls to other functions, per function) instead of the arcs
    (neither lines, which it refuses, nor sites). Raises OSError, and
    CallgrindFormatError (one violation) on a line it cannot read or an
    event the file lacks.

    Without lines and sites the file is read by _digest_fast(): tokens of
    whole lines found by one regular expression, most of the file never
    seen line by line from Python (a 100 MB file in a few seconds). Where
    it cannot read a file exactly as the line reader would (an error, whose
    message names the line; a header line after the body) the line reader,
    _digest_lines(), reads it again: the same numbers either way."""
    if flat:
        if lines:
            raise ValueError("digest(flat=True) reads no lines")
        sites = False
    if lines or sites:
        return _digest_lines(path, event, lines, fold, sites)
    try:
        return _digest_fast(path, event, fold, flat)
    except _Slow:
        pass
    d = _digest_lines(path, event, False, fold, False)
    if flat:
        d.flat = _flat_of_arcs(d.arcs)
        d.arcs = {}
    return d


def _flat_of_arcs(arcs) -> Dict[Tuple[str, str], List[int]]:
    """Digest.flat made of Digest.arcs: per function, [calls into it, cost
    of its calls to other functions], in the order the functions are first
    named by an arc (the callee before the caller), which is the order the
    fast path makes them in."""
    out: Dict[Tuple[str, str], List[int]] = {}
    for (caller, callee, _fl, _line), (n, c) in arcs.items():
        e = out.get(callee)
        if e is None:
            e = out[callee] = [0, 0]
        e[0] += n
        if caller != callee:
            e = out.get(caller)
            if e is None:
                e = out[caller] = [0, 0]
            e[1] += c
    return out


_POSITION_WORD = {"line": "line number", "instr": "instruction address"}


def unreadable(raw: str, positions: List[str], events: List[str]) -> str:
    """Why a line the digest could not read is wrong, in the format's words:
    the word that is not what it should be, and what the line should hold
    (never Python's message about int())."""
    line = raw.rstrip("\r\n")
    pos = " ".join(positions) or "line"
    where = ("a cost line holds its position (%s: each a number, decimal or 0x hex, or +N, -N or * "
             "relative to the line before) then its costs (%s: numbers, decimal or 0x hex)"
             % (pos, " ".join(events) or "the events'"))
    if line[:1] in _COST_CHARS and line[:1]:
        for k, t in enumerate(line.split()):
            if k < len(positions):
                if not _SUBPOS_RE.match(t):
                    return "%r is not a %s: %s" % (t, _POSITION_WORD.get(positions[k], positions[k]), where)
            elif not _NUMBER_RE.match(t):
                name = events[k - len(positions)] if k - len(positions) < len(events) else "cost"
                return "%r is not a number (%s): %s" % (t, name, where)
        return "cannot read the cost line %r: %s" % (line, where)
    key, eq, value = line.partition("=")
    if eq and key in ("calls", "jump", "jcnd"):
        words = value.split()
        counts = 2 if key == "jcnd" else 1
        what = ("%s= holds the number of %s (decimal)%s, then the target's position (%s)"
                % (key, "calls" if key == "calls" else "jumps", ", the times it was taken" if key == "jcnd"
                   else "", pos))
        for k, t in enumerate(words):
            if k < counts and not _DECIMAL_RE.match(t):
                return "%r is not a count: %s" % (t, what)
            if k >= counts and not _SUBPOS_RE.match(t):
                word = positions[k - counts] if k - counts < len(positions) else "position"
                return "%r is not a %s: %s" % (t, _POSITION_WORD.get(word, word), what)
        return "cannot read the line %r: %s" % (line, what)
    return "cannot read the line %r" % line


def _digest_lines(path: str, event: Optional[str], lines: bool, fold: bool, sites: bool) -> Digest:
    """digest() line by line: every view (the lines, the call sites), and
    the files the fast path leaves to it.

    Each line is read as _token() tells (the strict reader's tokenizer).
    Why it is fast for a line reader: one loop, the line's kind picks the
    work; a cost line is told by its first character without a call, a
    line naming by reference seen before by one dict lookup; a self cost
    is summed in a local until the function changes; positions are
    followed only when asked for."""
    d = Digest(path)
    lat_sub = _latency.DEFAULT_SUB
    ids = {"ob": {}, "fl": {}, "fn": {}}
    fn_ref: Dict[str, int] = {}      # "(id)" of a function -> its number
    # a whole line that names by reference ("cfn=(12)\n") -> (kind, what)
    ref_line: Dict[str, Tuple[int, object]] = {}
    ob = fl = cur_file = ""
    fn = None
    acc = 0                 # self cost of fn since it became current
    cob = cfi = None
    callee = None
    pending = 0             # 0: none; 1: a call waits for its cost line; 2: a jump's
    pcount = 0
    last = 0                # the previous cost line's line number
    npos = 1
    li = 0                  # index of the line subposition, -1 if none
    ev = -1                 # index of the event's cost among the tokens
    track = lines or sites
    self_cost: Dict[int, int] = {}
    arcs: Dict[Tuple, List[int]] = {}
    line_cost: Dict[Tuple, int] = {}
    fold_re = _RECURSION_SUFFIX_RE
    body_keys = _BODY_KEYS
    token = _token
    cost_chars = _COST_CHARS
    T_SPEC, T_ASSOC, T_BLANK, T_COMMENT = _T_SPEC, _T_ASSOC, _T_BLANK, _T_COMMENT
    total = 0

    def bad(lineno, msg):
        raise CallgrindFormatError([Violation(path, lineno, msg)])

    def name_of(space, value, lineno):
        return _digest_name(ids[space], value, lambda msg: bad(lineno, msg))

    # "(id)" -> name for the file and object spaces: a reference is one
    # lookup (done inline by the loop below, the reader's for the rest)
    fl_ref: Dict[str, str] = {}
    ob_ref: Dict[str, str] = {}

    def ref_reader(space, ref):
        def lookup(value, lineno):
            n = ref.get(value)
            if n is None:
                n, ident, _new = name_of(space, value, lineno)
                if ident is not None:
                    ref[ident] = n
            return n
        return lookup

    file_name = ref_reader("fl", fl_ref)
    object_name = ref_reader("ob", ob_ref)

    # Functions are numbered while reading (a small int hashes faster than
    # a (name, object) tuple in the arcs' keys); keyed by name at the end.
    keys: List[Tuple[str, str]] = []
    number: Dict[Tuple[str, str], int] = {}
    where: List[str] = []

    def define(name, ident, o, f_):
        k = (fold_re.sub("", name) if fold else name, o)
        i = number.get(k)
        if i is None:
            i = number[k] = len(keys)
            keys.append(k)
            where.append(f_)
        elif not where[i]:
            where[i] = f_
        if ident is not None:
            fn_ref[ident] = i
        return i

    lineno = 0
    raw = ""
    # The tables hold no cycle: the cyclic collector, run again and again
    # as they grow, would only walk them (half the time on a 100 MB file).
    collecting = gc.isenabled()
    gc.disable()
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
      try:
        for lineno, raw in enumerate(f, 1):
            if raw[:3] == CONTINUED_PREFIX:
                raw = raw[3:]
            c = raw[:1]
            if c in cost_chars and c:
                # _token()'s first rule, written out here: most lines are
                # cost lines, and calling it for each, and for each line
                # the cache below knows, made this loop a third slower
                # (tests/bench/gen_profile.py's 20 MB file, 2.8 s -> 3.7 s)
                if pending == 0 and not lines:
                    if fn is None:
                        bad(lineno, "cost line before any fn=")
                    if track:
                        toks = raw.split()
                        if li >= 0 and len(toks) > li:
                            t = toks[li]
                            c = t[0]
                            last = (last + int(t[1:]) if c == "+" else last if c == "*" else
                                    last - int(t[1:]) if c == "-" else int(t))
                        if len(toks) > ev:
                            t = toks[ev]
                            acc += int(t) if t[:2] != "0x" else int(t, 16)
                    else:
                        toks = raw.split(None, ev + 1)
                        if len(toks) > ev:
                            t = toks[ev]
                            acc += int(t) if t[:2] != "0x" else int(t, 16)
                    continue
                toks = raw.split()
                line = None
                if track and li >= 0 and len(toks) > li:
                    t = toks[li]
                    c = t[0]
                    last = line = (last + int(t[1:]) if c == "+" else last if c == "*" else
                                   last - int(t[1:]) if c == "-" else int(t))
                if len(toks) > ev:
                    t = toks[ev]
                    cost = int(t) if t[:2] != "0x" else int(t, 16)
                else:
                    cost = 0
                if fn is None:
                    bad(lineno, "cost line before any fn=")
                if pending == 0:
                    acc += cost
                    if cost:
                        k = (fn, cur_file, line)
                        line_cost[k] = line_cost.get(k, 0) + cost
                elif pending == 1:
                    # without the sites, an arc is its caller and callee: one int
                    k = (fn, callee, cur_file, line) if track else (fn << 32) | callee
                    a = arcs.get(k)
                    if a is None:
                        arcs[k] = [pcount, cost]
                    else:
                        a[0] += pcount
                        a[1] += cost
                    pending = 0
                    cob = cfi = None
                else:
                    pending = 0
                continue
            # a whole line seen before that names by reference: what
            # _token() and the names made of it then, without either
            hit = ref_line.get(raw)
            if hit is not None:
                kind, v = hit
                if kind == 3:
                    callee = v
                elif kind == 4:
                    cfi = v
                elif kind == 2:
                    if acc:
                        self_cost[fn] = self_cost.get(fn, 0) + acc
                        total += acc
                        acc = 0
                    cur_file = fl
                    fn = v
                elif kind == 6:
                    fl = cur_file = v
                elif kind == 7:
                    cur_file = v
                else:                     # cob=
                    cob = v
                continue
            kind, key, value = token(raw.rstrip("\r\n"))
            if kind == T_SPEC or kind == T_ASSOC:
                kind = body_keys[key]
                if kind == 1:             # calls=
                    sp = value.find(" ")
                    pcount = int(value[:sp] if sp > 0 else value)
                    if callee is None:
                        bad(lineno, "calls= without a cfn=")
                    pending = 1
                elif kind == 3:           # cfn=
                    callee = fn_ref.get(value)
                    if callee is None:
                        name, ident, _new = name_of("fn", value, lineno)
                        callee = define(name, ident, cob if cob is not None else ob,
                                        cfi if cfi is not None else cur_file)
                    elif value[-1:] == ")":
                        ref_line[raw] = (3, callee)
                elif kind == 2:           # fn=
                    if acc:
                        self_cost[fn] = self_cost.get(fn, 0) + acc
                        total += acc
                        acc = 0
                    cur_file = fl
                    fn = fn_ref.get(value)
                    if fn is None:
                        name, ident, _new = name_of("fn", value, lineno)
                        fn = define(name, ident, ob, fl)
                    elif value[-1:] == ")":
                        ref_line[raw] = (2, fn)
                elif kind in (4, 6, 7):   # cfi= cfl=, fl=, fi= fe=
                    n = fl_ref.get(value)
                    if n is None:
                        n = file_name(value, lineno)
                    elif value[-1:] == ")":
                        ref_line[raw] = (kind, n)
                    if kind == 4:
                        cfi = n
                    elif kind == 6:
                        fl = cur_file = n
                    else:
                        cur_file = n
                elif kind == 5:           # cob=
                    n = ob_ref.get(value)
                    if n is None:
                        n = object_name(value, lineno)
                    elif value[-1:] == ")":
                        ref_line[raw] = (5, n)
                    cob = n
                elif kind == 8:           # ob=: KCachegrind forgets the function
                    ob = ob_ref.get(value) or object_name(value, lineno)
                    if acc:
                        self_cost[fn] = self_cost.get(fn, 0) + acc
                        total += acc
                        acc = 0
                    fn = None
                elif kind == 9:           # jump= jcnd=: the next line is the jump's source
                    pending = 2
                elif key == "jfi":
                    file_name(value, lineno)
                else:                     # jfn=: defines an id, as cfn= would
                    if value not in fn_ref:
                        name, ident, _new = name_of("fn", value, lineno)
                        define(name, ident, ob, cur_file)
                continue
            if kind == T_COMMENT:
                lat_sub = _digest_comment(d, key, raw, fn_ref, keys, lat_sub)
                continue
            if kind == T_BLANK or not raw.strip():
                continue
            npos, ev = _digest_header(d, raw, event, npos, ev, lambda msg: bad(lineno, msg))
            li = d.positions.index("line") if "line" in d.positions else -1
        if acc:
            if fn is None:
                bad(lineno, "cost line before any fn=")
            self_cost[fn] = self_cost.get(fn, 0) + acc
            total += acc
      except (ValueError, IndexError, KeyError):
        bad(lineno, unreadable(raw, d.positions, d.events))
      finally:
        if collecting:
            gc.enable()
    if ev < 0:
        bad(1, "no 'events:' line")
    d.total = total
    d.self_cost = {keys[i]: v for i, v in self_cost.items()}
    d.files = {k: where[i] for i, k in enumerate(keys)}
    if track:
        d.arcs = {(keys[a], keys[b], fl_, ln): v for (a, b, fl_, ln), v in arcs.items()}
    else:
        d.arcs = {(keys[k >> 32], keys[k & 0xffffffff], "", None): v for k, v in arcs.items()}
    d.lines = {(keys[i], fl_, ln): v for (i, fl_, ln), v in line_cost.items()}
    return d
