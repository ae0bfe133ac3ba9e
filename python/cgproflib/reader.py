"""Strict reader and checker of the Callgrind profile format.

Usable as a module (the launcher's summary, the tests: a model of each
profile to query) and as a command, installed as callgrind_check::

    callgrind_check [--strict] [--dump] FILE...
    python3 -m cgproflib.reader [--strict] [--dump] FILE...

Exit status: 0 if no file has a violation, 1 if some file has one (each is
printed as ``FILE:LINE: message``), 2 on a usage error or an unreadable file.

The reference is the Callgrind Format Specification, version 1 (Valgrind
technical documentation, chapter 3; "spec 3.x.y" below), read together with
the two readers our files have to satisfy:

* callgrind_annotate (perl): ``events:`` ends the header, only ``totals:`` and
  ``summary:`` are accepted after it; ``key:`` must be followed by whitespace;
  ``calls=`` counts and line numbers must be decimal; a ``calls=0`` line is
  not recognised as a call (cgprof writes its calls=0 behind ``#> ``, see
  CONTINUED_PREFIX).
* KCachegrind (libcore/cachegrindloader.cpp): ``ob=``/``cob=`` share one id
  space, ``fl=``/``fi=``/``fe=``/``cfi=``/``cfl=``/``jfi=`` another,
  ``fn=``/``cfn=``/``jfn=`` a third; a function id is bound to the object and
  file current when it is *defined*; relative subpositions are relative to
  the previous cost line of the part (self, call or jump-source line), never
  to the target of ``calls=``, which it ignores; ``fn=`` resets the current
  file to the last ``fl=``; ``ob=`` forgets the current function; ``cob=`` and
  ``cfi=`` apply to the next call only.

Two kinds of check:

* always: the file breaks the spec grammar or its rules, or a real reader
  would reject or misread it;
* ``--strict`` (messages start with ``strict:``): what cgprof promises about
  the files it writes, on top of that (listed in ``_Parser.finish_strict``).

One tokenizer, _token(), says what each line is (a cost line, a name,
a call, a header line, a comment and which data it carries, a blank
line), and _split_name() reads a name's compression, for the readers
of the format, which differ in what they make of the tokens:
load() builds the model of every line and checks it (_Parser, so that
a violation is named exactly); digest() sums one event for `cgprof
report` without a model, on files of hundreds of MB, line by line
(_digest_lines: the views that need positions, and whatever the fast
path leaves to it) or, for the flat profile and the call graph, by
tokens of whole lines found by one regular expression (_digest_fast,
which hands the lines its expression does not know to _token() too;
_digest_fast says why it is kept). The two digests read the header,
the names and cgprof's data comments with the same functions
(_digest_header, _digest_name, _digest_comment);
tests/python/test_digest.py holds digest() to load().

Only the standard library is used; Python 3.9 or newer.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

from . import latency as _latency
from ._shared import DESC_TRIGGER
from .latency import LATENCY_PREFIX, SCHEME_PREFIX

__all__ = [
    "FnKey", "CostLine", "Call", "Jump", "Function", "Violation", "Profile",
    "CallgrindFormatError", "load", "loads", "check", "fold_recursion", "main", "Digest", "digest",
]

MAX_U64 = (1 << 64) - 1

# spec 3.2.1: Number := HexNumber | (Digit)+ ; HexNumber := "0x" (Digit|HexChar)+
_NUMBER = r"(?:0x[0-9a-fA-F]+|[0-9]+)"
_NUMBER_RE = re.compile(_NUMBER + r"\Z")
_DECIMAL_RE = re.compile(r"[0-9]+\Z")
# spec 3.2.1: SubPosition := Number | "+" Number | "-" Number | "*"
_SUBPOS_RE = re.compile(r"(?P<sign>[+-]?)(?P<num>" + _NUMBER + r")\Z|\*\Z")
# spec 3.2.1: Name = Alpha (Digit | Alpha)*   (event names)
_NAME = r"[A-Za-z][A-Za-z0-9]*"
_NAME_RE = re.compile(_NAME + r"\Z")
# spec 3.2.1: InheritedExpr := Name | Number Space* ("*" Space*)? Name
#                              | InheritedExpr Space* "+" Space* InheritedExpr
_INH_TERM = r"(?:[0-9]+[ \t]*(?:\*[ \t]*)?)?" + _NAME
_INHERITED_RE = re.compile(_INH_TERM + r"(?:[ \t]*\+[ \t]*" + _INH_TERM + r")*\Z")
_EVENT_SPEC_RE = re.compile(
    r"(?P<name>[^ \t=:]+)[ \t]*(?:=[ \t]*(?P<expr>[^:]*?))?[ \t]*(?::[ \t]*(?P<long>.*))?\Z")

_HEADER_KEYS = ("version", "creator", "pid", "thread", "part", "cmd", "desc",
                "events", "event", "positions", "summary", "totals")
# Keys that may appear only once per part.
_SINGLE_KEYS = {"creator", "pid", "thread", "part", "cmd", "positions",
                "events", "summary", "totals"}

# spec 3.2.1 PositionSpec, plus Callgrind's jfi=/jfn= (jump targets), each
# in one of the three name-compression id spaces, as KCachegrind and
# callgrind_annotate share them (spec 3.1.5 says "a separate ID mapping for each position
# specification", but both readers map cfn= ids into the fn= space, etc.).
_ID_SPACE = {
    "ob": "ob", "cob": "ob",
    "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "jfi": "fl",
    "fn": "fn", "cfn": "fn", "jfn": "fn",
}
_SPACE_WORD = {"ob": "object", "fl": "file", "fn": "function"}
# The specifications --strict requires to use name compression.
_STRICT_COMPRESSED = {"ob", "fl", "fi", "fe", "fn", "cob", "cfi", "cfl", "cfn"}

_COMPRESSED_RE = re.compile(r"\((?P<id>[0-9]+)\)(?P<rest>.*)\Z")
_RECURSION_SUFFIX_RE = re.compile(r"'[0-9]+\Z")

FORMAT_LINE = "# callgrind format"
# cgprof writes the calls a part continues from an earlier one (calls=0) as
# comments with this prefix, after everything else: callgrind_annotate takes
# a calls=0 line's cost for the caller's own, so only cgprof's reader sees
# them (runtime/writer.c, write_continued).
CONTINUED_PREFIX = "#> "
# ... and the functions without hooks whose counts are visits seen (a lower
# bound), by id, on one comment line after the rest: "#visits: (12) (15)".
VISITS_PREFIX = "#visits:"
# "#inlined: (3)>(7) ...": the calls the compiler inlined, caller>callee
# by id (runtime/writer.c, write_inlined; CGPROF_INLINED=count)
INLINED_PREFIX = "#inlined:"
# ... and, with CGPROF_LATENCY=1, each function's calls by inclusive time:
# "#latency: 4" then "#lat: (12) calls sum max lower:count..." (cgproflib.
# latency says what they hold).
_DATA_COMMENTS = (VISITS_PREFIX, INLINED_PREFIX, SCHEME_PREFIX, LATENCY_PREFIX)
_DIGITS = set("0123456789")


# --------------------------------------------------------------------------
# The tokenizer: what a line of the format is
# --------------------------------------------------------------------------
# Both readers of a file line by line -- _Parser (load(): the model, every
# check) and _digest_lines (digest(): one event's sums, no checks beyond
# what it needs), and _digest_fast for the lines its expression leaves --
# classify each line with _token(), so that a line is a cost line, a name,
# a header line or a comment for all alike; what each then makes of it (a
# violation with its message, or the file left as unreadable) stays its
# own. The readers strip "#> " (CONTINUED_PREFIX) first: only the strict
# one notes that it did.

_T_COST = 0        # position(s) and costs: key is the first character
_T_SPEC = 1        # ob= fl= fi= fe= fn= cob= cfi= cfl= cfn= jfi= jfn=: key, its value
_T_ASSOC = 2       # calls= jump= jcnd=: key, its value
_T_HEADER = 3      # version: creator: ... totals: (_HEADER_KEYS): key, what follows ":"
_T_BLANK = 4       # nothing but blanks and tabs
_T_COMMENT = 5     # "#...": key "" for a plain comment, else the prefix of the
                   # data it carries (VISITS_, INLINED_, SCHEME_, LATENCY_PREFIX)
_T_OTHER = 6       # none of these: the grammar has no rule for it

_COST_CHARS = "0123456789+-*"
_LINE_KEYS = dict.fromkeys(_ID_SPACE, _T_SPEC)
_LINE_KEYS.update(dict.fromkeys(("calls", "jump", "jcnd"), _T_ASSOC))
_HEADER_KEY_SET = frozenset(_HEADER_KEYS)


def _token(raw: str) -> Tuple[int, str, str]:
    """(kind, key, value) of one line without its end of line (see the
    _T_ kinds); value is the line itself but for names, associations and
    header lines, where it is what follows the key's "=" or ":". The
    grammar's rules are told apart by their first characters: a cost line
    starts with a position, a name or an association with its key and
    "=", a header line with its key and ":"."""
    c = raw[:1]
    if c in _COST_CHARS and c:
        return _T_COST, c, raw
    eq = raw.find("=", 0, 6)
    if eq > 0:
        kind = _LINE_KEYS.get(raw[:eq])
        if kind is not None:
            return kind, raw[:eq], raw[eq + 1:]
    if c == "#":
        for prefix in _DATA_COMMENTS:
            if raw.startswith(prefix):
                return _T_COMMENT, prefix, raw
        return _T_COMMENT, "", raw
    if not raw.strip(" \t"):
        return _T_BLANK, "", raw
    key, colon, value = raw.partition(":")
    if colon and key in _HEADER_KEY_SET:
        return _T_HEADER, key, value
    return _T_OTHER, "", raw


def _split_name(value: str) -> Tuple[str, str]:
    """The name compression (spec 3.1.5) of a _T_SPEC token's value that
    starts with "(": ("(id)", name) of a definition "(id) name", ("(id)",
    "") of a reference "(id)", ("", value) when no ")" closes the id. The
    blanks after ")" are skipped, as both real readers do. What an id may
    hold and what it maps to is the reader's: the strict one wants digits
    (and "(01)" is "(1)"), the digest takes the text between the
    parentheses as it is."""
    close = value.find(")")
    if close < 0:
        return "", value
    return value[:close + 1], value[close + 1:].lstrip(" \t")


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

class FnKey(NamedTuple):
    """Identity of a function: object (ob=), file (fl=), name (fn=).

    A missing ob= or fl= gives "" (KCachegrind's "unknown").
    """
    object: str
    file: str
    name: str


@dataclass
class CostLine:
    """One self cost line of a function."""
    instr: Optional[int]      # None unless "positions:" has instr
    line: Optional[int]       # None unless "positions:" has line
    costs: List[int]          # one per event of "events:" (missing ones are 0)
    file: str                 # source file of the line: fl=, or fi=/fe= if active
    lineno: int               # line number in the profile file


@dataclass
class Call:
    """One call arc at one call site (a calls= line and the cost line after it)."""
    caller: FnKey
    callee: FnKey
    count: int
    instr: Optional[int]      # call site, from the cost line after calls=
    line: Optional[int]
    costs: List[int]          # inclusive cost of the call(s)
    file: str                 # source file of the call site
    target_instr: Optional[int]  # target position of calls= (readers ignore it)
    target_line: Optional[int]
    lineno: int               # line number of the calls= line


@dataclass
class Jump:
    """A jump=/jcnd= association (only Valgrind's own output has them)."""
    kind: str                 # "jump" or "jcnd"
    function: FnKey
    count: int                # jumps done (jump=) / followed (jcnd=)
    executed: Optional[int]   # jcnd= only: times the condition was evaluated
    instr: Optional[int]      # source position (the line after jump=/jcnd=)
    line: Optional[int]
    target_instr: Optional[int]
    target_line: Optional[int]
    lineno: int


@dataclass
class Function:
    """A function with the self cost lines attributed to it."""
    key: FnKey
    cost_lines: List[CostLine] = field(default_factory=list)
    defined: bool = False     # appeared as fn= with cost or calls (not only as a callee)

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def object(self) -> str:
        return self.key.object

    @property
    def file(self) -> str:
        return self.key.file

    def self_costs(self, nevents: int) -> List[int]:
        return _vsum((c.costs for c in self.cost_lines), nevents)


class Violation(NamedTuple):
    path: str
    line: int
    message: str
    strict: bool = False

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class CallgrindFormatError(Exception):
    """Raised by load(..., raise_on_violation=True); carries the violations."""

    def __init__(self, violations: Sequence[Violation]):
        self.violations = list(violations)
        super().__init__("\n".join(str(v) for v in self.violations))


def fold_recursion(name: str) -> str:
    """Strip Valgrind's recursion suffix: "fib'2" -> "fib".

    callgrind --separate-recs=N names the deeper recursion levels "fn'2",
    "fn'3", ...; folding them gives back the function of the source.
    """
    return _RECURSION_SUFFIX_RE.sub("", name)


def _vsum(vectors, n: int) -> List[int]:
    total = [0] * n
    for v in vectors:
        for i, x in enumerate(v):
            if i < n:
                total[i] += x
    return total


EventSel = Union[int, str, None]


@dataclass
class Profile:
    """Model of one Callgrind file (one part, as callgrind_annotate reads it)."""
    path: str
    has_format_line: bool = False
    version: Optional[int] = None
    creator: Optional[str] = None
    pid: Optional[int] = None
    thread: Optional[int] = None
    part: Optional[int] = None
    cmd: Optional[str] = None
    desc: List[str] = field(default_factory=list)        # "type: value" strings
    positions: List[str] = field(default_factory=lambda: ["line"])
    event_long_names: Dict[str, str] = field(default_factory=dict)
    event_formulas: Dict[str, str] = field(default_factory=dict)  # inherited types
    events: List[str] = field(default_factory=list)
    summary: Optional[List[int]] = None
    totals: Optional[List[int]] = None
    functions: Dict[FnKey, Function] = field(default_factory=dict)
    # (caller, callee) FnKeys of the calls the compiler inlined (INLINED_PREFIX)
    inlined: set = field(default_factory=set)
    # names of the functions whose calls are counted as visits (VISITS_PREFIX)
    visits: Set[str] = field(default_factory=set)
    # function name -> its calls' latency histogram (LATENCY_PREFIX)
    latency: Dict[str, "_latency.Histogram"] = field(default_factory=dict)
    calls: List[Call] = field(default_factory=list)
    jumps: List[Jump] = field(default_factory=list)
    violations: List[Violation] = field(default_factory=list)

    # -- queries -----------------------------------------------------------

    @property
    def ok(self) -> bool:
        return not self.violations

    def desc_value(self, type_: str) -> Optional[str]:
        """Value of the first "desc: TYPE: value" line, e.g. desc_value("Trigger")."""
        for d in self.desc:
            t, _, v = d.partition(":")
            if t.strip() == type_:
                return v.strip()
        return None

    def event_index(self, event: Union[int, str]) -> int:
        if isinstance(event, str):
            return self.events.index(event)
        if not 0 <= event < len(self.events):
            raise IndexError(f"event index {event} out of range ({self.events})")
        return event

    def _select(self, vector: List[int], event: EventSel):
        return list(vector) if event is None else vector[self.event_index(event)]

    def functions_named(self, name: str, fold: bool = False) -> List[Function]:
        """All functions (any object/file) called `name` (after folding if fold)."""
        norm = fold_recursion if fold else (lambda s: s)
        name = norm(name)
        return [f for k, f in self.functions.items() if norm(k.name) == name]

    def _named_or_raise(self, name: str, fold: bool) -> List[Function]:
        fns = self.functions_named(name, fold)
        if not fns:
            raise KeyError(f"no function named {name!r} in {self.path}")
        return fns

    def self_cost(self, name: str, event: EventSel = 0, fold: bool = False):
        """Self cost of the function(s) named `name`, summed over objects/files.

        `event` is an index or short name of "events:"; None gives all of them
        as a list.  Raises KeyError if no such function exists.
        """
        n = len(self.events)
        total = _vsum((f.self_costs(n) for f in self._named_or_raise(name, fold)), n)
        return self._select(total, event)

    def inclusive(self, name: str, event: EventSel = 0, fold: bool = False):
        """Inclusive cost: self cost plus the inclusive cost of outgoing calls.

        Calls of the function to itself (by name, after folding if fold) are
        left out: their cost is already in the self cost and in the other
        calls of the same function, so adding them would count it twice.
        (Mutual recursion is not detected; KCachegrind uses cycles for that.)
        """
        norm = fold_recursion if fold else (lambda s: s)
        n = len(self.events)
        self._named_or_raise(name, fold)
        name = norm(name)
        total = self.self_cost(name, None, fold)
        for c in self.calls:
            if norm(c.caller.name) == name and norm(c.callee.name) != name:
                total = _vsum((total, c.costs), n)
        return self._select(total, event)

    def call_counts(self, fold: bool = False) -> Dict[Tuple[str, str], int]:
        """{(caller name, callee name): count} summed over all call sites."""
        norm = fold_recursion if fold else (lambda s: s)
        counts: Dict[Tuple[str, str], int] = {}
        for c in self.calls:
            k = (norm(c.caller.name), norm(c.callee.name))
            counts[k] = counts.get(k, 0) + c.count
        return counts

    def total_self(self, event: EventSel = 0):
        """Sum of all self cost lines (what "totals:" must equal)."""
        n = len(self.events)
        total = _vsum((f.self_costs(n) for f in self.functions.values()), n)
        return self._select(total, event)

    def raise_on_violation(self) -> "Profile":
        if self.violations:
            raise CallgrindFormatError(self.violations)
        return self


# --------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------

class _Pending(NamedTuple):
    """A calls=/jump=/jcnd= line waiting for its cost line."""
    kind: str
    lineno: int
    count: int
    executed: Optional[int]
    target: Tuple[Optional[int], ...]


class _Parser:
    def __init__(self, path: str, text: str, strict: bool):
        self.path = path
        self.strict = strict
        self.p = Profile(path=path)
        self.lines = text.split("\n")
        self.unterminated = self.lines[-1] != ""  # spec 3.2.1: every line ends in "\n"
        if not self.unterminated:
            self.lines.pop()

        # header state.  The spec's body begins at the first body line;
        # callgrind_annotate's at "events:".  Header lines may follow neither.
        self.body_started = False
        self.first_body_line: Optional[int] = None
        self.events_line: Optional[int] = None
        self.seen_keys: Dict[str, int] = {}
        self.header_keys: Dict[str, int] = {}     # keys before the first body line
        self.summary_line = 0
        self.totals_line = 0

        # name compression: space -> id -> name, and for --strict the
        # reverse maps and the (object, file) a function id was defined in.
        self.ids: Dict[str, Dict[int, str]] = {"ob": {}, "fl": {}, "fn": {}}
        self.id_of_name: Dict[str, Dict[object, int]] = {"ob": {}, "fl": {}, "fn": {}}
        self.fn_id_ctx: Dict[int, Tuple[str, str, int]] = {}

        # body state (spec 3.2.3, as KCachegrind keeps it)
        self.ob = ""               # ob=
        self.fl = ""               # last fl=: the file of the next fn=
        self.file = ""             # fl=, or fi=/fe= while active
        self.fn: Optional[FnKey] = None
        self.seen_fn = False       # any fn= yet (callgrind_annotate dies on fi= before)
        self.cob: Optional[str] = None
        self.cfi: Optional[str] = None
        self.callee: Optional[FnKey] = None
        self.call_ctx: Optional[str] = None   # --strict: None, "ctx" (cob/cfi), "cfn"
        self.pending: Optional[_Pending] = None
        self.pending_reported = False
        self.in_continued = False
        self.lat_sub = _latency.DEFAULT_SUB    # "#latency: S"
        self.last_pos: Optional[List[Optional[int]]] = None   # previous cost line
        self.self_sum: List[int] = []

    # -- reporting ---------------------------------------------------------

    def err(self, lineno: int, msg: str) -> None:
        self.p.violations.append(Violation(self.path, lineno, msg, False))

    def strict_err(self, lineno: int, msg: str) -> None:
        if self.strict:
            self.p.violations.append(Violation(self.path, lineno, "strict: " + msg, True))

    # -- driver ------------------------------------------------------------

    def run(self) -> Profile:
        self.p.has_format_line = bool(self.lines) and self.lines[0].rstrip(" \t\r") == FORMAT_LINE
        for i, raw in enumerate(self.lines, start=1):
            if raw.endswith("\r"):
                self.err(i, "carriage return at end of line (the format is '\\n'-terminated lines)")
                raw = raw.rstrip("\r")
            self.line(i, raw)
        if self.unterminated:
            # callgrind_annotate needs the "\n": it parses "pos\s+" and "key:\s+".
            self.err(len(self.lines), "last line does not end with a newline")
        self.finish()
        if self.strict:
            self.finish_strict()
        self.p.violations.sort(key=lambda v: v.line)
        return self.p

    def line(self, i: int, raw: str) -> None:
        if raw.startswith(CONTINUED_PREFIX):
            # cgprof's calls continued from an earlier part: comments to
            # Valgrind's and KCachegrind's readers, lines to ours (writer.c,
            # write_continued); always last, so nothing else moves.
            raw = raw[len(CONTINUED_PREFIX):]
            self.in_continued = True
        kind, key, value = _token(raw)
        if self.pending and kind != _T_COST and not self.pending_reported:
            # spec 3.2.1: CallSpec := CallLine "\n" CostLine -- the very next line.
            # Both readers skip comments/blank lines and keep waiting, so do we.
            what = "calls=" if self.pending.kind == "calls" else self.pending.kind + "="
            self.err(self.pending.lineno,
                     f"{what} line is not directly followed by a cost line (line {i} is not one)")
            self.pending_reported = True

        if kind == _T_COST:
            self.enter_body(i)
            self.cost_line(i, raw)
        elif kind == _T_SPEC:
            self.enter_body(i)
            self.position_spec(i, key, value)
        elif kind == _T_ASSOC:
            self.enter_body(i)
            self.association(i, key, value)
        elif kind == _T_HEADER:
            self.header(i, key, value)
        elif kind == _T_COMMENT:
            self.comment(i, key, raw)
        elif kind == _T_OTHER:
            self.err(i, f"line matches no rule of the format grammar: {raw[:60]!r}")

    def comment(self, i: int, prefix: str, raw: str) -> None:
        """A comment line: cgprof's data (prefix: which) or a plain one ("")."""
        if prefix == VISITS_PREFIX:
            table = self.ids["fn"]
            for tok in raw[len(VISITS_PREFIX):].split():
                m = _COMPRESSED_RE.match(tok)
                if m and int(m.group("id")) in table:
                    self.p.visits.add(table[int(m.group("id"))])
        elif prefix == INLINED_PREFIX:
            table = self.ids["fn"]
            for tok in raw[len(INLINED_PREFIX):].split():
                a, gt, b = tok.partition(">")
                ma, mb = _COMPRESSED_RE.match(a), _COMPRESSED_RE.match(b)
                if gt and ma and mb and int(ma.group("id")) in table and int(mb.group("id")) in table:
                    self.p.inlined.add((table[int(ma.group("id"))], table[int(mb.group("id"))]))
                else:
                    self.strict_err(i, "a %r pair that cannot be read (or of an id not defined before): %r"
                                    % (INLINED_PREFIX, tok[:60]))
        elif prefix == SCHEME_PREFIX:
            sub = _latency.parse_scheme(raw)
            if sub is None:
                self.strict_err(i, "a %r line that cannot be read: %r" % (SCHEME_PREFIX, raw[:60]))
            self.lat_sub = sub or _latency.DEFAULT_SUB
        elif prefix == LATENCY_PREFIX:
            got = _latency.parse(raw, self.lat_sub)
            table = self.ids["fn"]
            if got is None or int(got[0][1:-1]) not in table:
                self.strict_err(i, "a %r line that cannot be read (or of an id not defined before): %r"
                                % (LATENCY_PREFIX, raw[:60]))
            else:
                _latency.add_to(self.p.latency, table[int(got[0][1:-1])], got[1])
        elif raw.rstrip(" \t") == FORMAT_LINE and i != 1:
            self.err(i, f"'{FORMAT_LINE}' must be the first line (spec 3.2.2)")

    def enter_body(self, i: int) -> None:
        if not self.body_started:
            self.body_started = True
            self.first_body_line = i

    # -- header lines (spec 3.2.2) -----------------------------------------

    def header(self, i: int, key: str, value: str) -> None:
        p = self.p
        in_body = self.body_started or self.events_line is not None
        if in_body and key == "event" and not self.body_started:
            # spec 3.1.7.2: "The order of event: lines and the events: line
            # is of no importance"; callgrind_annotate just warns about it.
            self.strict_err(i, "'event:' after 'events:' (callgrind_annotate ends the header "
                               "at 'events:' and warns about the line)")
        elif in_body and key not in ("totals", "summary"):
            if key == "events" and self.events_line is not None:
                self.err(i, f"'events:' given twice in a part (first on line {self.events_line})")
                return
            if key == "events":
                self.err(i, f"'events:' after the body began on line {self.first_body_line}: "
                            "it is required in the header (spec 3.2.2)")
            else:
                self.err(i, f"'{key}:' header line in the body (callgrind_annotate ends the "
                            "header at 'events:'; only 'totals:'/'summary:' may follow)")
                return
        if not self.body_started:
            self.header_keys.setdefault(key, i)

        if key != "version" and value and value[0] not in " \t":
            # callgrind_annotate matches /^key:\s+/ and ignores (or, for
            # events:, never finds) the line otherwise.
            self.err(i, f"'{key}:' must be followed by whitespace (callgrind_annotate)")
        if key in _SINGLE_KEYS:
            if key in self.seen_keys:
                self.err(i, f"'{key}:' given twice (first on line {self.seen_keys[key]})")
                return
            self.seen_keys[key] = i
        v = value.strip(" \t")

        if key == "version":
            want = 2 if p.has_format_line else 1
            if i != want:
                self.err(i, "'version:' must directly follow the format line "
                            "(or be the first line without it) (spec 3.2.2)")
            if v != "1":
                self.err(i, f"'version: {v}': only version 1 is defined")
            elif p.version is None:
                p.version = 1
        elif key == "creator":
            p.creator = v
        elif key in ("pid", "thread", "part"):
            n = self.number(v)
            if n is None:
                self.err(i, f"'{key}:' needs a number, got {v!r}")
            setattr(p, key, n)
        elif key == "cmd":
            p.cmd = v
        elif key == "desc":
            # spec: Description := "desc:" Space* Name Space* ":" ...; Callgrind's
            # own types ("I1 cache") contain spaces, so only "type:" is required.
            if not re.match(r"[^:]*[^: \t][^:]*:", v):
                self.err(i, "'desc:' needs 'type: value'")
            p.desc.append(v)
        elif key == "event":
            self.event_spec(i, v)
        elif key == "events":
            self.events_line = i
            names = v.split()
            if not names:
                self.err(i, "'events:' names no event")
            for n in names:
                if not _NAME_RE.match(n):
                    self.err(i, f"event name {n!r} is not a Name (letters and digits, "
                                "starting with a letter; spec 3.2.1)")
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                self.err(i, f"event(s) named twice in 'events:': {' '.join(dups)}")
            p.events = names
            self.self_sum = [0] * len(names)
        elif key == "positions":
            toks = v.split()
            if toks not in (["instr"], ["line"], ["instr", "line"]):
                self.err(i, f"'positions: {v}': must be 'instr', 'line' or 'instr line' "
                            "(the readers know no other subposition)")
            else:
                p.positions = toks
        elif key in ("summary", "totals"):
            if self.events_line is None:
                self.err(i, f"'{key}:' before 'events:' (KCachegrind stops loading at a "
                            "summary without events; callgrind_annotate ignores it)")
            costs = self.costs(i, v.split(), f"'{key}:'")
            if key == "summary":
                p.summary, self.summary_line = costs, i
            else:
                p.totals, self.totals_line = costs, i

    def event_spec(self, i: int, v: str) -> None:
        # spec 3.1.7.2 / 3.2.1: event: Name [= InheritedExpr] [: long name]
        m = _EVENT_SPEC_RE.match(v)
        if not m or not _NAME_RE.match(m.group("name")):
            self.err(i, f"'event: {v}': expected 'event: Name [= formula] [: long name]'")
            return
        name, expr, long_name = m.group("name", "expr", "long")
        if expr is not None:
            if not _INHERITED_RE.match(expr.strip(" \t")):
                self.err(i, f"'event:' formula {expr!r} is not an InheritedExpr (spec 3.2.1)")
            self.p.event_formulas[name] = expr.strip(" \t")
        if long_name is not None and long_name.strip(" \t"):
            self.p.event_long_names[name] = long_name.strip(" \t")

    # -- numbers -----------------------------------------------------------

    @staticmethod
    def number(tok: str) -> Optional[int]:
        if not _NUMBER_RE.match(tok):
            return None
        return int(tok, 16) if tok.startswith("0x") else int(tok)

    def costs(self, i: int, toks: List[str], what: str) -> List[int]:
        """Parse cost numbers (spec: Costs := (Number Space+)+), padded to the events."""
        out = []
        for t in toks:
            n = self.number(t)
            if n is None:
                if t == ".":
                    self.err(i, f"{what}: '.' is Cachegrind's zero, not a Number of the "
                                "Callgrind grammar (spec 3.2.1)")
                elif _SUBPOS_RE.match(t):
                    self.err(i, f"{what}: {t!r} is not a cost number (a subposition? "
                                f"'positions:' declares {len(self.p.positions)})")
                else:
                    self.err(i, f"{what}: non-numeric cost {t!r}")
                n = 0
            elif not _DECIMAL_RE.match(t):
                self.err(i, f"{what}: hexadecimal cost {t!r} (callgrind_annotate reads it as 0)")
            if n > MAX_U64:
                self.err(i, f"{what}: cost {t} does not fit the 64-bit counters of the format")
            out.append(n)
        nev = len(self.p.events)
        if self.events_line is not None and len(out) > nev:
            self.err(i, f"{what}: {len(out)} cost numbers but 'events:' names {nev}")
        if self.events_line is not None:
            out = (out + [0] * nev)[:nev]
        return out

    def subpositions(self, i: int, toks: List[str], what: str,
                     report_range: bool) -> Tuple[List[Optional[int]], bool]:
        """Resolve subpositions (spec 3.1.6) against the previous cost line.

        Returns the values (None where unresolvable) and whether all resolved.
        """
        vals: List[Optional[int]] = []
        good = True
        for k, t in enumerate(toks):
            kind = self.p.positions[k]
            m = _SUBPOS_RE.match(t)
            base = self.last_pos[k] if self.last_pos else None
            if not m:
                self.err(i, f"{what}: subposition {t!r} is neither a number, '+N', '-N' nor '*'")
                vals.append(None)
                good = False
                continue
            if t == "*" or m.group("sign"):
                if base is None:
                    self.err(i, f"{what}: relative subposition {t!r} but no previous cost line "
                                f"gives a {kind} to be relative to")
                    vals.append(None)
                    good = False
                    continue
                if t == "*":
                    v = base
                else:
                    d = self.number(m.group("num"))
                    v = base + d if m.group("sign") == "+" else base - d
            else:
                v = self.number(t)
                if kind == "line" and not _DECIMAL_RE.match(t):
                    self.err(i, f"{what}: hexadecimal line number {t!r} "
                                "(callgrind_annotate reads line numbers as decimal only)")
            if v < 0 or v > MAX_U64:
                if report_range:
                    self.err(i, f"{what}: subposition {t!r} resolves to {v}, outside 0..2^64-1")
                    good = False
                vals.append(None)
                continue
            vals.append(v)
        return vals, good

    # -- body lines (spec 3.2.3) -------------------------------------------

    def resolve_name(self, i: int, spec: str,
                     value: str) -> Tuple[Optional[str], Optional[int], bool]:
        """Name compression (spec 3.1.5): returns (name, id, is_definition)."""
        space = _ID_SPACE[spec]
        if value[:1] == "(" and value[1:2] in _DIGITS:
            ref, name = _split_name(value)
            if not _DECIMAL_RE.match(ref[1:-1]):
                self.err(i, f"{spec}=: malformed compressed name {value!r} "
                            "(want '(id) name' or '(id)')")
                return None, None, False
            ident = int(ref[1:-1])
            table = self.ids[space]
            if name == "":
                if ident not in table:
                    self.err(i, f"{spec}=({ident}): id {ident} is not defined in the "
                                f"{_SPACE_WORD[space]} name space")
                    return None, ident, False
                return table[ident], ident, False
            if ident in table and table[ident] != name:
                self.err(i, f"{spec}=({ident}): id {ident} redefined from {table[ident]!r} "
                            f"to {name!r}")
            elif ident in table:
                self.strict_err(i, f"{spec}=({ident}) {name}: id defined again; "
                                   f"later uses must be '({ident})' only")
            table[ident] = name
            return name, ident, True
        if spec in _STRICT_COMPRESSED:
            self.strict_err(i, f"{spec}={value}: name compression not used "
                               "(want '(id) name' once, then '(id)')")
        return value, None, False

    def note_definition(self, i: int, spec: str, space: str, key: object, ident: int) -> None:
        """--strict: one id per name (per function for the fn space)."""
        other = self.id_of_name[space].get(key)
        if other is not None and other != ident:
            self.strict_err(i, f"{spec}=({ident}): already defined as ({other}); "
                               "a name must have one id")
        else:
            self.id_of_name[space][key] = ident

    def fn_context(self, i: int, spec: str, name: str, ident: Optional[int],
                   defined: bool, ob: str, fl: str) -> None:
        """--strict: a function id keeps the object/file it was defined with.

        KCachegrind binds the id to (name, file, object) at the definition and
        reuses that function for every "(id)", while callgrind_annotate uses
        the current file: the two agree only if the contexts never differ.
        """
        if ident is None:
            return
        if defined:
            self.note_definition(i, spec, "fn", (ob, fl, name), ident)
            if ident not in self.fn_id_ctx or self.fn_id_ctx[ident][:2] != (ob, fl):
                self.fn_id_ctx[ident] = (ob, fl, i)
            return
        ctx = self.fn_id_ctx.get(ident)
        if ctx and ctx[:2] != (ob, fl):
            self.strict_err(i, f"{spec}=({ident}) {name!r}: used with object {ob!r} file "
                               f"{fl!r}, but defined on line {ctx[2]} with object "
                               f"{ctx[0]!r} file {ctx[1]!r}")

    def function(self, key: FnKey, defined: bool) -> Function:
        f = self.p.functions.get(key)
        if f is None:
            f = self.p.functions[key] = Function(key)
        if defined:
            f.defined = True
        return f

    def position_spec(self, i: int, spec: str, value: str) -> None:
        if value[:1] in (" ", "\t"):
            # Grammar allows Space* after "=", but both readers keep the blanks
            # as part of the name (and then miss "(id)").
            self.err(i, f"{spec}=: blank after '=' (the readers take it as part of the name)")
        name, ident, defined = self.resolve_name(i, spec, value)
        space = _ID_SPACE[spec]
        if defined and space != "fn":
            self.note_definition(i, spec, space, name, ident)
        if name is None:
            name = f"({ident})" if ident is not None else value

        if spec == "ob":
            self.ob = name
            self.fn = None            # KCachegrind forgets the function on ob=
        elif spec == "fl":
            self.fl = self.file = name
        elif spec in ("fi", "fe"):
            if not self.seen_fn:
                self.err(i, f"{spec}= before any fn= (callgrind_annotate aborts)")
            self.file = name
        elif spec == "fn":
            if self.file != self.fl:
                self.strict_err(i, f"fn= while {self.file!r} from fi=/fe= is active: "
                                   f"KCachegrind puts the function in the fl= file {self.fl!r}, "
                                   "callgrind_annotate in the fi= file; write fl= first")
            self.file = self.fl        # KCachegrind: fn= resets to the last fl=
            self.fn = FnKey(self.ob, self.fl, name)
            self.seen_fn = True
            self.fn_context(i, spec, name, ident, defined, self.ob, self.fl)
        elif spec in ("cob", "cfi", "cfl"):
            # KCachegrind binds the callee at cfn= and forgets cob=/cfi= after
            # the call's cost line; callgrind_annotate forgets cfi= at cfn=.
            # They agree when each cob=/cfi= is followed by one cfn=, then calls=
            # (checked at cfn= and calls= under --strict).
            self.call_ctx = "ctx"
            if spec == "cob":
                self.cob = name
            else:
                self.cfi = name
        elif spec == "cfn":
            ob = self.cob if self.cob is not None else self.ob
            fl = self.cfi if self.cfi is not None else self.file
            self.callee = FnKey(ob, fl, name)
            if self.call_ctx == "cfn":
                self.strict_err(i, "second cfn= after cob=/cfi= with no calls= between "
                                   "(KCachegrind applies that cob=/cfi= to this cfn= too, "
                                   "callgrind_annotate does not)")
            if self.call_ctx:
                self.call_ctx = "cfn"
            self.fn_context(i, spec, name, ident, defined, ob, fl)
        # jfi=/jfn= only define ids here; jump targets are not modelled.

    def association(self, i: int, kind: str, value: str) -> None:
        """calls= / jump= / jcnd= (spec 3.2.3)."""
        if value[:1] in (" ", "\t"):
            self.err(i, f"{kind}=: blank after '=' (callgrind_annotate then ignores the line)")
        toks = value.split()
        executed = None
        if not toks:
            self.err(i, f"{kind}=: count missing")
            return
        ctok = toks.pop(0)
        if kind == "jcnd":
            # spec: "jcnd=" Number Space+ Number ...; Callgrind writes (and
            # KCachegrind only reads) "followed/executed".
            if "/" in ctok:
                ctok, _, etok = ctok.partition("/")
            elif toks:
                etok = toks.pop(0)
            else:
                etok = ""
            executed = self.number(etok)
            if executed is None:
                self.err(i, f"jcnd=: execution count {etok!r} is not a number")
        count = self.number(ctok)
        if count is None:
            self.err(i, f"{kind}=: count {ctok!r} is not a number")
            count = 0
        elif kind == "calls" and not _DECIMAL_RE.match(ctok):
            self.err(i, f"calls=: hexadecimal count {ctok!r} (callgrind_annotate reads "
                        "decimal only and then takes the call for self cost)")
        if kind == "calls" and count == 0 and not self.in_continued:
            # cgprof writes calls=0 only for calls counted in an earlier part
            # (still running, or ending, in this one), behind "#> " at the end
            # of the part, where only its own reader sees them.
            self.strict_err(i, "calls=0: callgrind_annotate does not recognise it as a call "
                               "and adds the inclusive cost on the next line to self cost")
        npos = len(self.p.positions)
        if len(toks) != npos:
            self.err(i, f"{kind}=: target position has {len(toks)} subposition(s), "
                        f"'positions:' declares {npos}")
        # The target is ignored by both readers and by the relative base; it
        # is resolved only for the model, so no range check.
        target, _ = self.subpositions(i, toks[:npos], f"{kind}= target", report_range=False)
        target += [None] * (npos - len(target))
        if kind == "calls" and self.callee is None:
            self.err(i, "calls= without a preceding cfn= (no called function)")
        if kind == "calls" and self.call_ctx == "ctx":
            self.strict_err(i, "cob=/cfi= between cfn= and calls= (KCachegrind ignores it, "
                               "callgrind_annotate applies it to the next cfn=)")
        # (A pending calls=/jump= not followed by its cost line was reported by line().)
        self.pending = _Pending(kind, i, count, executed, tuple(target))
        self.pending_reported = False

    def cost_line(self, i: int, raw: str) -> None:
        p = self.p
        toks = raw.split()
        npos = len(p.positions)
        pending, self.pending, self.pending_reported = self.pending, None, False
        what = {None: "cost line", "calls": "call cost line"}.get(
            pending.kind if pending else None, "jump source line")

        if len(toks) < npos:
            self.err(i, f"{what}: {len(toks)} subposition(s), 'positions:' declares {npos}")
        pos, good = self.subpositions(i, toks[:npos], what, report_range=True)
        costs = self.costs(i, toks[npos:], what)
        if good and len(pos) == npos:
            self.last_pos = pos
        elif len(pos) == npos and self.last_pos:
            # Keep the resolvable subpositions as the base of the next line.
            self.last_pos = [v if v is not None else b for v, b in zip(pos, self.last_pos)]
        pos += [None] * (npos - len(pos))
        instr = pos[0] if "instr" in p.positions else None
        line = pos[-1] if "line" in p.positions else None

        if self.fn is None:
            if self.seen_fn:
                self.err(i, f"{what} after ob= without a new fn= (KCachegrind forgets the "
                            "function at ob=)")
            else:
                self.err(i, f"{what} before any fn=")
            if pending and pending.kind == "calls":
                self.reset_call()
            return

        if pending is None:
            self.function(self.fn, True).cost_lines.append(
                CostLine(instr, line, costs, self.file, i))
            self.self_sum = _vsum((self.self_sum, costs), len(p.events))
        else:
            t_instr = pending.target[0] if "instr" in p.positions else None
            t_line = pending.target[-1] if "line" in p.positions else None
            if pending.kind == "calls":
                if self.callee is not None:
                    self.function(self.fn, True)
                    self.function(self.callee, False)
                    p.calls.append(Call(self.fn, self.callee, pending.count, instr, line, costs,
                                        self.file, t_instr, t_line, pending.lineno))
                self.reset_call()
            else:
                if any(costs):
                    self.err(i, "cost numbers on the source line of a jump (KCachegrind "
                                "ignores them, callgrind_annotate adds them to self cost)")
                p.jumps.append(Jump(pending.kind, self.fn, pending.count, pending.executed,
                                    instr, line, t_instr, t_line, pending.lineno))

    def reset_call(self) -> None:
        # KCachegrind: cob=/cfi= apply to one call only; cfn= stays.
        self.cob = self.cfi = None
        self.call_ctx = None

    # -- end of file -------------------------------------------------------

    def finish(self) -> None:
        p = self.p
        last = max(1, len(self.lines))
        if self.pending and not self.pending_reported:
            self.err(self.pending.lineno, f"{self.pending.kind}= line at the end of the file "
                                          "is not followed by a cost line")
        if self.events_line is None:
            self.err(self.first_body_line or last,
                     "no 'events:' line (required in each part's header, spec 3.2.2)"
                     + ("; the file is empty" if not self.lines else ""))
            return
        nev = len(p.events)
        total = self.self_sum
        # summary/totals read before events: were neither counted nor padded.
        for key, ln, v in (("summary", self.summary_line, p.summary),
                           ("totals", self.totals_line, p.totals)):
            if v is not None and ln < self.events_line and len(v) > nev:
                self.err(ln, f"'{key}:': {len(v)} cost numbers but 'events:' names {nev}")
        if p.summary is not None:
            p.summary = (p.summary + [0] * nev)[:nev]
            low = [f"{e} {s} < {t}" for e, s, t in zip(p.events, p.summary, total) if s < t]
            if low:
                self.err(self.summary_line, "'summary:' is smaller than the sum of the self cost "
                                            "lines: " + ", ".join(low) + " (spec 3.2.2)")
        if p.totals is not None:
            p.totals = (p.totals + [0] * nev)[:nev]
            diff = [f"{e} {s} != {t}" for e, s, t in zip(p.events, p.totals, total) if s != t]
            if diff:
                self.err(self.totals_line, "'totals:' differs from the sum of the self cost "
                                           "lines: " + ", ".join(diff) + " (spec 3.2.2)")

    def finish_strict(self) -> None:
        """What cgprof promises about its files, beyond the format itself:

        * line 1 is "# callgrind format", line 2 "version: 1";
        * the header (before the first body line) has creator:, pid:,
          thread:, part:, cmd:, "positions: instr line" (or "positions: line",
          CGPROF_POSITIONS=line), at least one event:
          line with a long name, events:, summary: and a "desc: Trigger:";
        * totals: is present and is the last non-empty line;
        * ob=/fl=/fi=/fe=/fn=/cob=/cfi=/cfl=/cfn= all use name compression:
          each id defined once as "(id) name", used as "(id)" afterwards, one
          id per name (per function -- object, file, name -- in the fn space);
        * a function id is always used with the object/file it was defined
          with (as a callee via cfn= as well as via fn=);
        * no fn= while a fi=/fe= file is active, no cob=/cfi= between a cfn=
          and its calls=, no calls=0 (reader disagreements, see messages);
        * every call's inclusive cost is >= 0.
        Self cost lines need not be sorted.
        (The per-line checks are made while parsing, via strict_err.)
        """
        p = self.p
        lines = self.lines
        if not lines or lines[0] != FORMAT_LINE:
            self.strict_err(1, f"line 1 must be '{FORMAT_LINE}'")
        if len(lines) < 2 or lines[1] != "version: 1":
            self.strict_err(min(2, max(1, len(lines))), "line 2 must be 'version: 1'")
        where = self.first_body_line or max(1, len(lines))
        for key in ("creator", "pid", "thread", "part", "cmd", "positions", "events", "summary"):
            if key not in self.header_keys:
                self.strict_err(where, f"no '{key}:' in the header")
        if "positions" in self.header_keys and p.positions not in (["instr", "line"], ["line"]):
            self.strict_err(self.header_keys["positions"], "want 'positions: instr line' or 'positions: line'")
        if not p.event_long_names:
            self.strict_err(where, "no 'event: NAME : long name' line in the header")
        if not any(d.split(":", 1)[0].strip() == DESC_TRIGGER for d in p.desc):
            self.strict_err(where, "no 'desc: Trigger: ...' line in the header")
        nonempty = [n for n, l in enumerate(lines, 1) if l.strip(" \t\r")]
        if p.totals is None:
            self.strict_err(max(1, len(lines)), "no 'totals:' line")
        elif nonempty and nonempty[-1] != self.totals_line:
            self.strict_err(self.totals_line, "'totals:' must be the last non-empty line")
        for c in p.calls:
            if any(x < 0 for x in c.costs):
                self.strict_err(c.lineno, "negative inclusive cost of a call")


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------

def loads(text: str, path: str = "<string>", strict: bool = False,
          raise_on_violation: bool = False) -> Profile:
    """Parse profile text; violations are collected in Profile.violations."""
    prof = _Parser(path, text, strict).run()
    return prof.raise_on_violation() if raise_on_violation else prof


def load(path: str, strict: bool = False, raise_on_violation: bool = False) -> Profile:
    """Parse a profile file (see loads).  OSError propagates."""
    # surrogateescape: names are bytes in the format; never fail on them.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        text = f.read()
    return loads(text, path, strict, raise_on_violation)


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
        for d in self.desc:
            t, _, v = d.partition(":")
            if t.strip() == type_:
                return v.strip()
        return None




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
      except (ValueError, IndexError, KeyError) as e:
        bad(lineno, "cannot read the line (%s)" % e)
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


def check(path: str, strict: bool = False) -> List[Violation]:
    """Violations of one file (empty list: the file is fine)."""
    return load(path, strict).violations


def _dump(p: Profile, out) -> None:
    ev = " ".join(p.events)
    print(f"== {p.path}: events: {ev}; positions: {' '.join(p.positions)}", file=out)
    print(f"   total self: {p.total_self(None)}  summary: {p.summary}  totals: {p.totals}",
          file=out)
    for k, f in sorted(p.functions.items()):
        print(f"   fn {k.name} [{k.file or '?'} in {k.object or '?'}]: "
              f"self {f.self_costs(len(p.events))}, {len(f.cost_lines)} cost line(s)", file=out)
    for (a, b), n in sorted(p.call_counts().items()):
        print(f"   call {a} -> {b}: {n}", file=out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:          # e.g. "... --dump FILE | head"
        sys.stderr.close()
        return 1


def _main(argv: Optional[Sequence[str]]) -> int:
    ap = argparse.ArgumentParser(
        description="Check Callgrind profile files against the format specification, "
                    "callgrind_annotate and KCachegrind.")
    ap.add_argument("--strict", action="store_true",
                    help="also check what cgprof promises about its own files")
    ap.add_argument("--dump", action="store_true",
                    help="print the model (functions, self costs, call counts) of each file")
    ap.add_argument("files", nargs="+", metavar="FILE")
    args = ap.parse_args(argv)          # exits with 2 on a usage error

    status = 0
    for path in args.files:
        try:
            prof = load(path, strict=args.strict)
        except OSError as e:
            print(f"{path}: cannot read: {e.strerror or e}", file=sys.stderr)
            return 2
        for v in prof.violations:
            print(v)
        if prof.violations:
            status = 1
        if args.dump:
            _dump(prof, sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main())
