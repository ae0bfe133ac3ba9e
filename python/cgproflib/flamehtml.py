"""Flame graphs as one self-contained HTML file (`cgprof flame`:
PREFIX.html; `cgprof flame --diff A B`: PREFIX.diff.html), for a browser
and nothing else: no network (the page's Content-Security-Policy allows no
request at all: the data, the script and the style are in the file), no
viewer to install.

The page holds the trees (paths.Tree: per path of names, the exact calls,
inclusive and self time) as arrays, one node per path, and draws them on a
canvas, root at the top: a frame's width is the self time of its path and
every path below it (what the .folded files and speedscope draw), its
hover text the path's own calls, self and inclusive time as the files
have them, with their shares of the profile's time. Only the frames of a
pixel or more are drawn, each row's frames found by bisection under the
mouse: a tree of hundreds of thousands of paths draws what a screen can
show. Click a frame to zoom into it (its ancestors stay above it, full
width: click one, or the root, or press Escape, to zoom back out); the
search box takes a regular expression (a plain string when it is not
one), colours the frames whose name matches and says how much of the
profile's time they hold (each matched frame's width once, not again for
a matched frame under it). The view (the profile shown, the metric, the
search, the zoomed frame's path) is kept in the URL's fragment, replaced
as it changes and read at load: a view can be linked and reopened.

The differential page draws the second run's tree (B's shape) and colours
each frame by the change from A to B of the path's self time, inclusive
time or calls (a selector): red more (slower), blue less (faster), white
the same, the deepest colour the largest change of the profile. The
paths of A that B does not have are listed under the graph (the
outermost of them, with what they held in A): they have no width in B's
shape to be drawn with.

Standard library only. Tested in headless Chromium (tests/integration/
test_flamehtml.py), which reads back window.cgflame's model of what was
drawn.
"""

import json
import re
from typing import Dict, List

from . import paths

# what paths.ESTIMATE_MARK means, on the page
ESTIMATE_TEXT = ("A frame marked ~ (drawn hatched) is a function with several callers in a flame graph whose "
                 "stacks are estimated from the Callgrind file's arcs: its time is split among its callers in "
                 "the shares of their calls' inclusive time, so its place under each caller is an estimate. "
                 "Every function's self time is exact; a run with CGPROF_PATHS=1 (cgprof --paths) draws every "
                 "stack exactly.")

# The outermost paths of A missing in B listed at most (largest first)
GONE_LISTED = 500


def _text(s):
    # names that are not UTF-8 (kept as their bytes when read) shown with
    # U+FFFD, as a browser would
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _ordered(costs):
    """Every path of costs and the ancestors it lacks (a tree made by
    hand), root first: sorted tuples are a depth-first walk, siblings by
    name, each path after its parent."""
    every = set(costs)
    for p in costs:
        q = p[:-1]
        while q and q not in every:
            every.add(q)
            q = q[:-1]
    return sorted(every)


class _Names:
    def __init__(self):
        self.index: Dict[str, int] = {}
        self.names: List[str] = []

    def __call__(self, name):
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(_text(name))
        return i


def _profile(tree, names, label, other=None):
    """A tree as the page's arrays: per node (path, depth-first), its
    parent's index (-1: a root), its name's index, and calls, inclusive
    and self time (null for an ancestor the tree lacks). other: a second
    tree (A of a diff), whose costs of the same paths are given as a_*."""
    order = _ordered(tree.costs)
    pos = {p: i for i, p in enumerate(order)}
    parent, name, calls, incl, self_ = [], [], [], [], []
    for p in order:
        parent.append(pos.get(p[:-1], -1))
        name.append(names(p[-1]))
        c = tree.costs.get(p)
        calls.append(c[0] if c else None)
        incl.append(c[1] if c else None)
        self_.append(c[2] if c else None)
    out = {"label": _text(label), "parent": parent, "name": name, "calls": calls, "incl": incl, "self": self_}
    # the names whose calls are a lower bound (throttled; a function
    # without hooks: its visits), in this tree and in A's: ">=" on hover
    used = set(name)
    out["bounds"] = sorted(i for i in (names(n) for n in tree.lower_bounds) if i in used)
    if other is not None:
        out["a_bounds"] = sorted(i for i in (names(n) for n in other.lower_bounds) if i in used)
        got = [other.costs.get(p) for p in order]
        out["a_calls"] = [c[0] if c else None for c in got]
        out["a_incl"] = [c[1] if c else None for c in got]
        out["a_self"] = [c[2] if c else None for c in got]
        out["a_total"] = other.total()
    return out


def _unit(event):
    return "ns" if event in (None, "ns") else _text(event)


def _page(doc, title):
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    # inside <script>: no "</script>" (nor "<!--") can end it early; "<" is
    # only ever inside a JSON string, where \u003c is the same text
    data = data.replace("<", "\\u003c")
    # one pass: a title holding "@DATA@" stays text
    parts = {"TITLE": _html(title), "STYLE": _STYLE, "SCRIPT": _SCRIPT, "DATA": data}
    return re.sub(r"@(TITLE|STYLE|SCRIPT|DATA)@", lambda m: parts[m.group(1)], _TEMPLATE)


def _html(s):
    return _text(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def flame_page(profiles, title, mark, marked=()):
    """The HTML page of [paths.Tree] (the first is shown first: all
    threads), each a profile of the selector, labelled with its label.
    marked: the functions drawn marked (mark after the name) as estimates."""
    names = _Names()
    profs = [_profile(t, names, t.label) for t in profiles]
    doc = {"kind": "flame", "title": _text(title), "unit": _unit(profiles[0].event if profiles else None),
           "mark": mark, "names": names.names, "profiles": profs,
           "estimated": sorted(names.index[n] for n in marked if n in names.index),
           "estimateText": ESTIMATE_TEXT}
    return _page(doc, title)


def gone_paths(a, b):
    """The paths of tree a that b lacks, the outermost of them (their
    parent is in b, or they are roots): [(path, [calls, inclusive, self],
    how many paths of a are at or below it)], by inclusive time, then
    path."""
    out = {}
    for p in a.costs:
        if p in b.costs:
            continue
        k = 1
        while k < len(p) and p[:k] in b.costs:
            k += 1
        # p[:k] is the outermost ancestor (or p) that b lacks
        top = p[:k]
        if top not in out:
            out[top] = 0
        out[top] += 1
    rows = []
    for top, n in out.items():
        c = a.costs.get(top)
        rows.append((top, list(c) if c else [None, None, None], n))
    rows.sort(key=lambda r: (-(r[1][1] or 0), r[0]))
    return rows


def diff_page(a, b, title, a_name, b_name, mark, marked=()):
    """The differential page: b's tree (paths.Tree) drawn, each frame with
    a's costs of the same path beside its own; the paths only a has listed
    (the GONE_LISTED largest of gone_paths())."""
    names = _Names()
    prof = _profile(b, names, b.label, other=a)
    gone = gone_paths(a, b)
    doc = {"kind": "diff", "title": _text(title), "unit": _unit(b.event if b.event is not None else a.event),
           "mark": mark, "names": names.names, "profiles": [prof],
           "estimated": sorted(names.index[n] for n in marked if n in names.index), "estimateText": ESTIMATE_TEXT,
           "a": _text(a_name), "b": _text(b_name),
           "gone": [{"path": [_text(n) for n in p], "calls": c[0], "incl": c[1], "self": c[2], "paths": n}
                    for p, c, n in gone[:GONE_LISTED]],
           "goneCount": len(gone), "goneSelf": sum(a.costs[p][2] for p in a.costs if p not in b.costs)}
    return _page(doc, title)


def diff_folded(a, b, marked=()):
    """flamegraph.pl's differential input (difffolded.pl's output, read by
    flamegraph.pl): "stack self_a self_b" per path with self time in a or
    b, sorted by stack. The frames escaped as in the .folded files."""
    esc = {}

    def frame(n):
        e = esc.get(n)
        if e is None:
            e = esc[n] = paths.escape_frame(paths.shown(n, marked))
        return e
    stacks = {}
    for tree, col in ((a, 0), (b, 1)):
        for p, c in tree.costs.items():
            if c[2] > 0:
                stacks.setdefault(p, [0, 0])[col] += c[2]
    lines = [(";".join(frame(n) for n in p), v) for p, v in stacks.items()]
    lines.sort()
    return ["%s %d %d" % (s, v[0], v[1]) for s, v in lines]


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="cgprof flame">
<title>@TITLE@</title>
<style>@STYLE@</style>
</head>
<body>
<header>
<h1 id="title"></h1>
<div id="bar">
<label id="profile-choice">Profile <select id="profile"></select></label>
<label id="metric-choice" hidden>Colour by <select id="metric">
<option value="self">self time</option>
<option value="incl">inclusive time</option>
<option value="calls">calls</option>
</select></label>
<input id="search" type="search" placeholder="search: a regular expression" spellcheck="false" size="28">
<button id="reset" type="button" disabled>Reset zoom</button>
</div>
<div id="status">&nbsp;</div>
</header>
<div id="chart"><canvas id="canvas"></canvas></div>
<div id="details">&nbsp;</div>
<div id="legend"></div>
<section id="gone" hidden></section>
<div id="tip" hidden></div>
<noscript>This flame graph is drawn by the script in the page: allow it to run.</noscript>
<script type="application/json" id="cgflame-data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""

_STYLE = r"""
body { font: 13px system-ui, sans-serif; margin: 0; color: #222; background: #fff; }
header { position: sticky; top: 0; background: #fff; padding: 6px 10px 2px; border-bottom: 1px solid #ddd; z-index: 2; }
h1 { font-size: 15px; margin: 0 0 4px; font-weight: 600; }
#bar { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
#status { margin: 4px 0 0; min-height: 1.3em; color: #444; }
#status .match { background: #e0e; color: #fff; padding: 0 4px; border-radius: 2px; }
#chart { margin: 6px 10px; background: #f4f4f4; }
canvas { display: block; cursor: pointer; }
#details { margin: 0 10px; font: 12px ui-monospace, monospace; white-space: pre-wrap; color: #333; min-height: 3em; }
#legend { margin: 6px 10px; color: #444; max-width: 72em; }
#legend .swatch { display: inline-block; width: 2.5em; height: 0.9em; vertical-align: middle; border: 1px solid #aaa; }
#gone { margin: 10px; }
#gone h2 { font-size: 14px; margin: 0 0 4px; }
#gone table { border-collapse: collapse; font: 12px ui-monospace, monospace; }
#gone td, #gone th { padding: 1px 8px; text-align: right; border-bottom: 1px solid #eee; }
#gone td.path, #gone th.path { text-align: left; }
#tip { position: fixed; z-index: 3; pointer-events: none; background: #ffffe8; border: 1px solid #999;
       padding: 4px 6px; font: 12px ui-monospace, monospace; white-space: pre; box-shadow: 1px 1px 4px #0003; }
"""

_SCRIPT = r"""
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("cgflame-data").textContent);
  const DIFF = data.kind === "diff";
  const ROW = 18;              // px per frame row
  const FONT = "11px ui-monospace, monospace";
  const MATCH = "rgb(224,0,224)";
  const estimated = new Set(data.estimated);
  const $ = id => document.getElementById(id);
  const canvas = $("canvas"), ctx = canvas.getContext("2d"), tip = $("tip");

  // ---- numbers, as the files have them: exact, with thousands separated
  function num(v) {
    if (v === null || v === undefined) return "-";
    const s = String(Math.abs(v)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return v < 0 ? "-" + s : s;
  }
  function signed(v) { return v > 0 ? "+" + num(v) : num(v); }
  function share(v, of) { return of ? (100 * v / of).toFixed(2) + "%" : "-"; }
  function amount(v) {
    if (v === null || v === undefined) return "-";
    if (data.unit !== "ns") return num(v) + " " + data.unit;
    const a = Math.abs(v);
    const human = a >= 1e9 ? (v / 1e9).toFixed(3) + " s" : a >= 1e6 ? (v / 1e6).toFixed(3) + " ms" :
                  a >= 1e3 ? (v / 1e3).toFixed(3) + " us" : null;
    return num(v) + " ns" + (human ? " = " + human : "");
  }
  function shownName(i) { return estimated.has(i) ? data.names[i] + data.mark : data.names[i]; }

  // ---- the model: one node per path; value = self of its subtree
  const models = [];
  function model(k) {
    if (models[k]) return models[k];
    const p = data.profiles[k], n = p.parent.length;
    const root = {id: 0, name: -1, parent: null, children: [], depth: 0, calls: null, incl: null,
                  self: 0, value: 0, label: p.label};
    const nodes = [root];
    const bounds = new Set(p.bounds || []), aBounds = new Set(p.a_bounds || []);
    for (let i = 0; i < n; i++) {
      const up = nodes[p.parent[i] + 1];
      const nd = {id: i + 1, name: p.name[i], parent: up, children: [], depth: up.depth + 1,
                  calls: p.calls[i], incl: p.incl[i], self: p.self[i], value: p.self[i] || 0,
                  bound: bounds.has(p.name[i])};
      if (DIFF) nd.a = {calls: p.a_calls[i], incl: p.a_incl[i], self: p.a_self[i], bound: aBounds.has(p.name[i])};
      up.children.push(nd);
      nodes.push(nd);
    }
    for (let i = n; i >= 1; i--) nodes[i].parent.value += nodes[i].value;
    root.incl = root.value;
    if (DIFF) root.a = {calls: null, incl: p.a_total, self: 0};
    models[k] = {nodes: nodes, root: root, label: p.label};
    return models[k];
  }
  function pathOf(nd) {
    const out = [];
    for (; nd && nd.parent; nd = nd.parent) out.push(data.names[nd.name]);
    return out.reverse();
  }

  // ---- state
  const st = {profile: 0, zoom: null, search: "", re: null, matched: null, metric: "self", rows: [], drawn: 0,
              width: 0, maxAbs: 0, hover: null};

  // ---- colours
  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  }
  const warm = new Map();
  function flameColour(name) {
    let c = warm.get(name);
    if (!c) {
      const h = hash(name), v1 = (h & 255) / 255, v2 = ((h >>> 8) & 255) / 255, v3 = ((h >>> 16) & 255) / 255;
      c = "rgb(" + Math.round(205 + 50 * v3) + "," + Math.round(80 + 150 * v1) + "," + Math.round(55 * v2) + ")";
      warm.set(name, c);
    }
    return c;
  }
  function metricOf(nd, side) {
    const v = side ? nd.a : nd;
    if (!v) return 0;
    const x = v[st.metric];
    return x === null || x === undefined ? 0 : x;
  }
  function delta(nd) { return metricOf(nd, false) - metricOf(nd, true); }
  function diffColour(nd) {
    const d = delta(nd);
    const t = st.maxAbs ? Math.min(1, Math.abs(d) / st.maxAbs) : 0;
    const low = Math.round(255 * (1 - t));
    return d > 0 ? "rgb(255," + low + "," + low + ")" : d < 0 ? "rgb(" + low + "," + low + ",255)" : "rgb(255,255,255)";
  }
  let hatch = null;
  function hatchPattern() {
    if (hatch) return hatch;
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const g = c.getContext("2d");
    g.strokeStyle = "rgba(255,255,255,0.55)";
    g.lineWidth = 1.5;
    g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.stroke();
    hatch = ctx.createPattern(c, "repeat");
    return hatch;
  }
  function fillOf(nd) {
    if (st.matched && st.matched.has(nd)) return MATCH;
    if (nd.parent === null) return "rgb(190,190,190)";
    if (DIFF) return diffColour(nd);
    return flameColour(data.names[nd.name]);
  }

  // ---- layout: the frames of a pixel or more, row by row in x order
  function layout() {
    const m = model(st.profile);
    const zoom = st.zoom || m.root;
    const W = Math.max(100, $("chart").clientWidth);
    st.width = W;
    const rows = [];
    const put = (nd, x, w, above) => {
      (rows[nd.depth] || (rows[nd.depth] = [])).push({node: nd, x: x, w: w, above: above});
    };
    // the zoomed frame's ancestors, full width
    for (let a = zoom.parent; a; a = a.parent) put(a, 0, W, true);
    if (zoom.value > 0) {
      const scale = W / zoom.value;
      const todo = [[zoom, 0]];
      while (todo.length) {
        const [nd, x] = todo.pop();
        const w = nd.value * scale;
        if (w < 1) continue;
        put(nd, x, w, false);
        // children right to left on the stack: drawn left to right
        // children from the left; the path's own time is the gap at the right
        let cx = x;
        const kids = nd.children, xs = [];
        for (const c of kids) { xs.push(cx); cx += c.value * scale; }
        for (let i = kids.length - 1; i >= 0; i--) todo.push([kids[i], xs[i]]);
      }
    }
    for (const r of rows) if (r) r.sort((p, q) => p.x - q.x);
    st.rows = rows;
  }

  function paint() {
    layout();
    const rows = st.rows, W = st.width, H = Math.max(1, rows.length) * ROW;
    const dpr = window.devicePixelRatio || 1;
    canvas.style.width = W + "px";
    canvas.style.height = H + "px";
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    const charW = ctx.measureText("m").width || 7;
    let drawn = 0;
    for (let d = 0; d < rows.length; d++) {
      const y = d * ROW;
      for (const r of rows[d] || []) {
        const nd = r.node;
        r.fill = fillOf(nd);
        ctx.globalAlpha = r.above ? 0.6 : 1;
        ctx.fillStyle = r.fill;
        const w = Math.max(1, r.w - 1);
        ctx.fillRect(r.x, y, w, ROW - 1);
        if (nd.parent && estimated.has(nd.name)) {
          ctx.fillStyle = hatchPattern();
          ctx.fillRect(r.x, y, w, ROW - 1);
        }
        ctx.globalAlpha = 1;
        drawn++;
        if (w > 3 * charW) {
          const label = nd.parent ? shownName(nd.name) : nd.label;
          const room = Math.floor((w - 6) / charW);
          const text = label.length <= room ? label : label.slice(0, Math.max(0, room - 1)) + "\u2026";
          ctx.fillStyle = r.fill === MATCH ? "#fff" : "#000";
          ctx.fillText(text, r.x + 3, y + ROW / 2);
        }
      }
    }
    st.drawn = drawn;
    $("reset").disabled = !st.zoom;
  }

  // ---- hover text
  function hoverText(nd) {
    const m = model(st.profile), total = m.root.value;
    const lines = [];
    if (!nd.parent) {
      lines.push(m.label);
      if (DIFF) {
        lines.push("time:      " + data.a + ": " + amount(nd.a.incl) + "   " + data.b + ": " + amount(nd.incl));
        lines.push("change:    " + signed(nd.incl - nd.a.incl) + (data.unit === "ns" ? " ns" : "") +
                   (nd.a.incl ? " (" + (nd.incl >= nd.a.incl ? "+" : "") + share(nd.incl - nd.a.incl, nd.a.incl) + ")" : ""));
      } else {
        lines.push("time: " + amount(total) + " (100%)");
      }
      lines.push("click: the whole profile");
      return lines.join("\n");
    }
    const name = shownName(nd.name);
    lines.push(name);
    lines.push("path: " + pathOf(nd).join(" > "));
    if (!DIFF) {
      lines.push("calls: " + (nd.bound && nd.calls ? ">=" : "") + num(nd.calls));
      lines.push("self: " + amount(nd.self) + " (" + share(nd.self || 0, total) + ")");
      lines.push("inclusive: " + amount(nd.incl) + " (" + share(nd.incl || 0, total) + ")");
      if (nd.incl !== nd.value)
        lines.push("drawn: " + amount(nd.value) + " (self of the path and of every path below it)");
    } else {
      const a = nd.a;
      const row = (what, av, bv, time) => {
        const d = (bv || 0) - (av || 0);
        const rel = av ? " (" + (d >= 0 ? "+" : "") + share(d, av) + ")" : "";
        return (what + ":").padEnd(11) + data.a + " " + (time ? amount(av) : num(av)) + "   " + data.b + " " +
               (time ? amount(bv) : num(bv)) + "   change " + signed(d) + (time && data.unit === "ns" ? " ns" : "") + rel;
      };
      lines.push(row("self", a.self, nd.self, true));
      lines.push(row("inclusive", a.incl, nd.incl, true));
      if (a.bound || nd.bound)
        lines.push("calls:".padEnd(11) + data.a + " " + (a.bound && a.calls ? ">=" : "") + num(a.calls) + "   " +
                   data.b + " " + (nd.bound && nd.calls ? ">=" : "") + num(nd.calls) + "   change ?");
      else
        lines.push(row("calls", a.calls, nd.calls, false));
      if (a.calls === null && a.incl === null) lines.push("only in " + data.b + ": " + data.a + " has no such path");
    }
    if (estimated.has(nd.name))
      lines.push(data.mark.trim() + ": its place under its caller is an estimate (see below the graph)");
    if (nd.bound || (DIFF && nd.a.bound))
      lines.push(">=: a lower bound: the calls of a throttled function counted until then, or the visits seen of " +
                 "a function without hooks");
    return lines.join("\n");
  }

  // ---- hit testing: the row, then its frames by bisection
  function frameAt(x, y) {
    const row = st.rows[Math.floor(y / ROW)];
    if (!row) return null;
    let lo = 0, hi = row.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, r = row[mid];
      if (x < r.x) hi = mid - 1;
      else if (x >= r.x + r.w) lo = mid + 1;
      else return r;
    }
    return null;
  }
  function local(ev) {
    const b = canvas.getBoundingClientRect();
    return [ev.clientX - b.left, ev.clientY - b.top];
  }
  canvas.addEventListener("mousemove", ev => {
    const [x, y] = local(ev);
    const r = frameAt(x, y);
    if (!r) { hideTip(); return; }
    const text = hoverText(r.node);
    st.hover = r.node;
    tip.textContent = text;
    $("details").textContent = text;
    tip.hidden = false;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    let left = ev.clientX + 14, top = ev.clientY + 16;
    if (left + tw > window.innerWidth) left = Math.max(0, ev.clientX - tw - 8);
    if (top + th > window.innerHeight) top = Math.max(0, ev.clientY - th - 8);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  });
  function hideTip() { tip.hidden = true; st.hover = null; }
  canvas.addEventListener("mouseleave", hideTip);
  canvas.addEventListener("click", ev => {
    const [x, y] = local(ev);
    const r = frameAt(x, y);
    if (!r) return;
    zoomTo(r.node.parent ? r.node : null);
  });
  function zoomTo(nd) {
    st.zoom = nd;
    hideTip();
    paint();
    status();
    keepView();
  }
  $("reset").addEventListener("click", () => zoomTo(null));
  document.addEventListener("keydown", ev => {
    if (ev.key === "Escape" && document.activeElement !== $("search")) zoomTo(null);
  });

  // ---- search: each matched frame's width once (not again below a match)
  function applySearch() {
    const text = $("search").value;
    st.search = text;
    st.re = null;
    st.matched = null;
    if (text) {
      try { st.re = new RegExp(text); } catch (e) { st.re = null; }
      const test = st.re ? (s => st.re.test(s)) : (s => s.indexOf(text) >= 0);
      const m = model(st.profile), hit = new Set();
      const cache = new Map();
      for (const nd of m.nodes) {
        if (!nd.parent) continue;
        let ok = cache.get(nd.name);
        if (ok === undefined) { ok = test(shownName(nd.name)); cache.set(nd.name, ok); }
        if (ok) hit.add(nd);
      }
      st.matched = hit;
    }
    paint();
    status();
    keepView();
  }
  function matchedValue(top) {
    let sum = 0;
    const todo = [top];
    while (todo.length) {
      const nd = todo.pop();
      if (st.matched.has(nd)) { sum += nd.value; continue; }
      for (const c of nd.children) todo.push(c);
    }
    return sum;
  }
  function status() {
    const m = model(st.profile), el = $("status");
    const parts = [];
    if (st.zoom) parts.push("zoomed into " + shownName(st.zoom.name) + " (" + share(st.zoom.value, m.root.value) +
                            " of " + m.label + "; click a frame above it, Escape or Reset zoom to go back)");
    let matchText = null;
    if (st.matched) {
      const all = matchedValue(m.root);
      let inZoom = null;
      if (st.zoom) {
        let up = false;
        for (let a = st.zoom; a; a = a.parent) if (st.matched.has(a)) up = true;
        inZoom = up ? st.zoom.value : matchedValue(st.zoom);
      }
      matchText = "matched " + JSON.stringify(st.search) + (st.re ? "" : " (as text)") + ": " + num(st.matched.size) +
                  " frame" + (st.matched.size === 1 ? "" : "s") + ", " + amount(all) + ", " + share(all, m.root.value) +
                  " of " + m.label + (inZoom === null ? "" : ", " + share(inZoom, st.zoom.value) + " of the zoomed frame");
      st.matchedValue = all;
    }
    el.textContent = "";
    if (matchText) {
      const s = document.createElement("span");
      s.className = "match";
      s.textContent = matchText;
      el.appendChild(s);
      if (parts.length) el.appendChild(document.createTextNode("  "));
    }
    el.appendChild(document.createTextNode(parts.join("; ") || (matchText ? "" : "\u00a0")));
  }
  $("search").addEventListener("input", applySearch);

  // ---- the profile and the metric
  function computeMaxAbs() {
    st.maxAbs = 0;
    if (!DIFF) return;
    for (const nd of model(st.profile).nodes) st.maxAbs = Math.max(st.maxAbs, Math.abs(delta(nd)));
  }
  const sel = $("profile");
  data.profiles.forEach((p, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = p.label;
    sel.appendChild(o);
  });
  if (data.profiles.length < 2) $("profile-choice").hidden = true;
  sel.addEventListener("change", () => {
    st.profile = Number(sel.value);
    st.zoom = null;
    computeMaxAbs();
    applySearch();
    legend();
  });
  if (DIFF) {
    $("metric-choice").hidden = false;
    $("metric").addEventListener("change", () => {
      st.metric = $("metric").value;
      computeMaxAbs();
      paint();
      legend();
      keepView();
    });
  }

  // ---- the view in the URL's fragment (#profile=1&metric=incl&search=...&zoom=main&zoom=render:
  // the zoomed frame's path, a name a key), so that a view can be linked, bookmarked and reloaded.
  // Replaced as the view changes (no history entry for each), read at load and when the fragment
  // changes (a link followed within the page, the address edited).
  const METRICS = ["self", "incl", "calls"];
  function viewFragment() {
    const q = new URLSearchParams();
    if (st.profile) q.set("profile", String(st.profile));
    if (DIFF && st.metric !== "self") q.set("metric", st.metric);
    if (st.search) q.set("search", st.search);
    if (st.zoom) for (const name of pathOf(st.zoom)) q.append("zoom", name);
    return q.toString();
  }
  function keepView() {
    const h = viewFragment();
    if (h === location.hash.slice(1)) return;
    const url = location.href.split("#")[0] + (h ? "#" + h : "");
    try {
      history.replaceState(history.state, "", url);
    } catch (e) {
      location.replace(h ? "#" + h : "#");   // where the history cannot be written (some file: URLs)
    }
  }
  function nodeAt(names) {
    // the deepest frame of the path that this profile has
    let nd = model(st.profile).root;
    for (const name of names) {
      const next = nd.children.find(c => data.names[c.name] === name);
      if (!next) break;
      nd = next;
    }
    return nd.parent ? nd : null;
  }
  function readView() {
    const q = new URLSearchParams(location.hash.slice(1));
    const k = Number(q.get("profile") || 0);
    st.profile = Number.isInteger(k) && k >= 0 && k < data.profiles.length ? k : 0;
    sel.value = String(st.profile);
    if (DIFF) {
      st.metric = METRICS.includes(q.get("metric")) ? q.get("metric") : "self";
      $("metric").value = st.metric;
    }
    $("search").value = q.get("search") || "";
    st.zoom = nodeAt(q.getAll("zoom"));
  }
  function showView() {
    hideTip();
    computeMaxAbs();
    legend();
    applySearch();
  }
  window.addEventListener("hashchange", () => {
    if (location.hash.slice(1) === viewFragment()) return;
    readView();
    showView();
  });

  function legend() {
    const el = $("legend");
    el.textContent = "";
    const p = (text) => { const e = document.createElement("p"); e.textContent = text; el.appendChild(e); return e; };
    if (DIFF) {
      const e = p("");
      const sw = c => { const s = document.createElement("span"); s.className = "swatch"; s.style.background = c; return s; };
      e.append("The shape is " + data.b + "'s (each frame as wide as its time there); the colour is the change of the " +
               {self: "self time", incl: "inclusive time", calls: "calls"}[st.metric] + " of its path from " + data.a +
               " to " + data.b + ": ", sw("rgb(255,0,0)"), " more (slower) ", sw("rgb(255,255,255)"), " the same ",
               sw("rgb(0,0,255)"), " less (faster); the deepest colour is the largest change, " +
               (st.metric === "calls" ? num(st.maxAbs) + " calls" : amount(st.maxAbs)) +
               ". A frame only in " + data.b + " is coloured by all of its value. The threads of each run are summed.");
    } else {
      p("Each frame is a call path: its width the self time of the path and of every path below it, its hover text " +
        "the path's exact calls, self and inclusive time. Click a frame to zoom into it; click the frame above it, " +
        "press Escape or Reset zoom to go back. The search takes a regular expression.");
    }
    if (data.estimated.length) p(data.estimateText);
  }

  function gone() {
    if (!DIFF) return;
    const el = $("gone");
    el.hidden = false;
    const h = document.createElement("h2");
    h.textContent = "Only in " + data.a + ": " + num(data.goneCount) + " path" + (data.goneCount === 1 ? "" : "s") +
                    " not in " + data.b + "'s shape (the outermost of them; " + amount(data.goneSelf) +
                    " of self time in " + data.a + ")";
    el.appendChild(h);
    if (!data.gone.length) return;
    const t = document.createElement("table");
    const head = t.insertRow();
    for (const [c, cls] of [["path", "path"], ["calls", ""], ["self", ""], ["inclusive", ""], ["paths at or below", ""]]) {
      const th = document.createElement("th");
      th.textContent = c;
      if (cls) th.className = cls;
      head.appendChild(th);
    }
    for (const g of data.gone) {
      const r = t.insertRow();
      const cells = [g.path.join(" > "), num(g.calls), amount(g.self), amount(g.incl), num(g.paths)];
      cells.forEach((c, i) => { const td = r.insertCell(); td.textContent = c; if (!i) td.className = "path"; });
    }
    el.appendChild(t);
    if (data.goneCount > data.gone.length) {
      const e = document.createElement("p");
      e.textContent = "and " + num(data.goneCount - data.gone.length) + " more";
      el.appendChild(e);
    }
  }

  // ---- for tests and scripts: what is drawn, as the page has it
  window.cgflame = {
    drawn: () => {
      const out = [];
      st.rows.forEach((row, d) => (row || []).forEach(r => out.push({
        path: pathOf(r.node), depth: d, x: r.x, y: d * ROW, w: r.w, h: ROW - 1, value: r.node.value,
        calls: r.node.calls, incl: r.node.incl, self: r.node.self, fill: r.fill, above: r.above,
        a: r.node.a || null, label: r.node.parent ? shownName(r.node.name) : r.node.label})));
      return out;
    },
    model: () => model(st.profile).nodes.slice(1).map(nd => ({path: pathOf(nd), calls: nd.calls, incl: nd.incl,
                                                               self: nd.self, value: nd.value, a: nd.a || null})),
    state: () => ({profile: st.profile, label: model(st.profile).label, zoom: st.zoom ? pathOf(st.zoom) : null,
                   search: st.search, matched: st.matched ? st.matched.size : null,
                   matchedValue: st.matched ? st.matchedValue : null, total: model(st.profile).root.value,
                   width: st.width, drawn: st.drawn, metric: st.metric, maxAbs: st.maxAbs, row: ROW,
                   status: $("status").textContent}),
    canvasBox: () => { const b = canvas.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; },
  };

  document.title = data.title;
  $("title").textContent = data.title;
  readView();
  gone();
  showView();
  let resizing = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(() => { if ($("chart").clientWidth !== st.width) paint(); });
  });
  document.body.dataset.ready = "1";
})();
"""
