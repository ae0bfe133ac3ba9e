"""The strict reader of the Callgrind format: load() builds the model
of every line (cgproflib.model) and checks each against the specification,
callgrind_annotate and KCachegrind (and, strict, against what cgprof
promises about its own files), naming every violation with its line."""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Optional, Tuple

from . import latency as _latency
from ._shared import DESC_TRIGGER
from .latency import LATENCY_PREFIX, SCHEME_PREFIX
from .model import Call, CostLine, FnKey, Function, Jump, Profile, Violation, _vsum
from .tokens import (CONTINUED_PREFIX, FORMAT_LINE, INLINED_PREFIX, MAX_U64, VISITS_PREFIX,
                     _COMPRESSED_RE, _DECIMAL_RE, _DIGITS, _EVENT_SPEC_RE, _ID_SPACE,
                     _INHERITED_RE, _NAME_RE, _NUMBER_RE, _SINGLE_KEYS, _SPACE_WORD,
                     _STRICT_COMPRESSED, _SUBPOS_RE, _T_ASSOC, _T_COMMENT, _T_COST,
                     _T_HEADER, _T_OTHER, _T_SPEC, _split_name, _token)


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


def check(path: str, strict: bool = False) -> List[Violation]:
    """Violations of one file (empty list: the file is fine)."""
    return load(path, strict).violations
