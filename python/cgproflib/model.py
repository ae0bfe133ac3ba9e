"""The model of a Callgrind file that the strict reader builds
(cgproflib.parser): its functions, cost lines, calls and jumps, the
violations found, and the queries on it (self and inclusive costs, call
counts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

from .tokens import _RECURSION_SUFFIX_RE


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


def desc_value(desc: List[str], type_: str) -> Optional[str]:
    """The value of the first "TYPE: value" of a part's desc: lines (a
    Profile's and a digest's)."""
    for d in desc:
        t, _, v = d.partition(":")
        if t.strip() == type_:
            return v.strip()
    return None


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
        return desc_value(self.desc, type_)

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
