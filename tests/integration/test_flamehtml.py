"""cgprof flame's HTML pages (cgproflib/flamehtml.py) opened in headless
Chromium (tests/integration/flamepage.py): PREFIX.html and --diff's
PREFIX.diff.html, from the file alone, with no request but the file.

What is checked is what the page drew, read back from it (window.cgflame:
the frames on the canvas, their place, width and colour; the tooltip's
text under the mouse; the status line) and from a screenshot's pixels,
against the trees the files hold (cgproflib.paths, read here from the
path files): whole sets, every frame of a pixel or more and no other,
each at the x and width its path's time gives it; the exact calls, self
and inclusive time in the hover text; zoom (a click, a click on the
frame above, Escape); search (the frames coloured, the share said, a
matched frame under a matched frame counted once).

For --diff, tests/progs/flamediff run with K=2 (A) and K=6 (B), in
sampled CPU time: grow does 9x the work (red), shrink a ninth (blue),
steady the same (near white), tick 3x the calls (the only frame coloured
by calls, with fresh, which only B has), legacy only in A (listed under
the graph).

Needs Chromium (scripts/deps.sh installs it): without it the tests fail,
unless CGPROF_NO_BROWSER=1, which skips them."""

import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cgtest  # noqa: E402
import flamepage  # noqa: E402
import speedscope  # noqa: E402
from cgproflib import flame, flamehtml, paths, reader  # noqa: E402

LAUNCHER = os.environ.get("CGPROF_LAUNCHER", os.path.join(cgtest.BUILD_DIR, "scripts", "cgprof"))
MATCH = "rgb(224,0,224)"


def subtree_values(costs):
    """{path: self of the path and of every path below it}, the paths'
    missing ancestors included, and () the total."""
    value = {(): 0}
    for p, c in costs.items():
        for k in range(len(p) + 1):
            value[p[:k]] = value.get(p[:k], 0) + c[2]
    return value


def layout(costs, width, zoom=()):
    """{path: (x, w)} of the frames the page must draw: the zoomed path's
    ancestors full width, the zoomed path full width, and below it each
    path with a width of a pixel or more (a narrower one and all below it
    left out), children from the left in the order of their names, as
    the page computes it (the same floating-point operations)."""
    value = subtree_values(costs)
    kids = {}
    for p in sorted(value):
        if p:
            kids.setdefault(p[:-1], []).append(p)
    out = {zoom[:k]: (0, width) for k in range(len(zoom))}
    if not value[zoom]:
        return out
    scale = width / value[zoom]

    def walk(p, x):
        w = value[p] * scale
        if w < 1:
            return
        out[p] = (x, w)
        cx = x
        for c in kids.get(p, ()):
            walk(c, cx)
            cx += value[c] * scale
    walk(zoom, 0)
    return out


def number(text):
    return int(text.replace(",", ""))


def hover_numbers(text):
    """{calls, self, inclusive} of a flame page's hover text."""
    got = {}
    for key in ("calls", "self", "inclusive"):
        m = re.search(r"^%s: ([0-9,]+|-)" % key, text, re.M)
        got[key] = None if m is None or m.group(1) == "-" else number(m.group(1))
    return got


def run_paths(test, argv, directory):
    env = cgtest.clean_environ()
    # not --quiet: the launcher's report writes the flame graphs
    p = subprocess.run([LAUNCHER, "--paths"] + argv, cwd=directory, env=env, capture_output=True,
                       text=True, timeout=cgtest.limit(300))
    test.assertEqual(p.returncode, 0, p.stderr)


def cgprof_flame(test, *argv, cwd=None):
    p = subprocess.run([LAUNCHER, "flame"] + list(argv), cwd=cwd, env=cgtest.clean_environ(), capture_output=True,
                       text=True, timeout=cgtest.limit(300))
    test.assertEqual((p.returncode, p.stderr), (0, ""))
    return p.stdout.split()


def trees_of(directory):
    pfs, bad = paths.load(paths.collect([directory])[0])
    assert not bad, bad
    threads = paths.threads_of(pfs)
    return paths.sum_trees(threads), threads


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        speedscope.require_browser()

    def tmp(self):
        d = tempfile.mkdtemp(prefix="cgprof-flamehtml-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        return d

    def open(self, path, **kw):
        page = flamepage.FlamePage(path, **kw)
        self.addCleanup(page.close)
        return page

    def assert_offline(self, page):
        """The file was the page's one request (its URL without the
        fragment, which is the page's own), and nothing was refused or
        thrown."""
        self.assertEqual(page.requests, [page.url.partition("#")[0]])
        self.assertEqual(page.console, [])

    def assert_drawn(self, page, costs, zoom=()):
        """Exactly the frames layout() says, each where it says, with its
        path's costs and its subtree's value."""
        st = page.state()
        want = layout(costs, st["width"], zoom)
        drawn = {tuple(f["path"]): f for f in page.drawn()}
        self.assertEqual(len(drawn), len(page.drawn()), "a path drawn twice")
        self.assertEqual(set(drawn), set(want))
        values = subtree_values(costs)
        for p, f in drawn.items():
            self.assertAlmostEqual(f["x"], want[p][0], delta=1e-6, msg=p)
            self.assertAlmostEqual(f["w"], want[p][1], delta=1e-6, msg=p)
            self.assertEqual(f["value"], values[p], p)
            self.assertEqual(f["above"], len(p) < len(zoom), p)
            if p:
                c = costs.get(p)
                self.assertEqual([f["calls"], f["incl"], f["self"]], c if c else [None, None, None], p)
        self.assertEqual(st["zoom"], list(zoom) if zoom else None)
        self.assertEqual(st["drawn"], len(want))
        return drawn


class FlamePage(Base):
    """PREFIX.html of cgprof flame on a run with path files."""

    def test_flame_prog(self):
        d = self.tmp()
        run_paths(self, [cgtest.prog("flame")], d)
        (html,) = glob.glob(os.path.join(d, "flame.*.html"))
        total, threads = trees_of(d)
        page = self.open(html)
        self.assert_offline(page)
        st = page.state()
        self.assertEqual((st["label"], st["total"]), ("all threads", total.total()))
        self.assertEqual(page.eval("document.title"), flame.flame_title(total))
        # the model: every path with the files' costs
        model = {tuple(m["path"]): [m["calls"], m["incl"], m["self"]] for m in page.model()}
        self.assertEqual(model, total.costs)
        drawn = self.assert_drawn(page, total.costs)
        self.assertEqual({p[-1] for p in drawn if p}, {"main", "parse", "tokenize", "render", "layout", "spin"})

        # hover: each frame's exact calls, self and inclusive time, and share
        for p, f in drawn.items():
            text = page.hover(f)
            if not p:
                self.assertTrue(text.startswith("all threads\ntime: %s ns" % format(total.total(), ",")), text)
                continue
            c = total.costs[p]
            self.assertEqual(text.split("\n")[:2], [p[-1], "path: " + " > ".join(p)])
            self.assertEqual(hover_numbers(text), {"calls": c[0], "self": c[2], "inclusive": c[1]}, text)
            self.assertIn("(%.2f%%)" % (100.0 * c[2] / total.total()), text.split("\n")[3])
            self.assertIn("(%.2f%%)" % (100.0 * c[1] / total.total()), text.split("\n")[4])
            self.assertEqual(page.text("details"), text)

        # the screenshot: frames in colour, each in its own
        page.mouse("mouseMoved", 0, 0)   # the tooltip away
        png = page.screenshot()
        self.assertGreater(page.drawn_fraction(png), 0.3)
        for p, f in drawn.items():
            if p:
                colours = page.pixels_of(png, f)
                top = max(colours, key=colours.get)
                self.assertEqual("rgb(%d,%d,%d)" % top, f["fill"], p)

        # zoom: a click into render, its ancestors above it, its callees
        # scaled to it; the frame above goes back; Escape too
        page.click(drawn[("main", "render")])
        self.assert_drawn(page, total.costs, ("main", "render"))
        self.assertIn("zoomed into render", page.state()["status"])
        page.click(page.frame("main"))
        self.assert_drawn(page, total.costs, ("main",))
        page.click(page.frame("main", "parse", "tokenize"))
        self.assert_drawn(page, total.costs, ("main", "parse", "tokenize"))
        page.key("Escape")
        self.assert_drawn(page, total.costs)
        page.click(page.frame("main", "layout"))
        page.click(page.frame())
        self.assert_drawn(page, total.costs)

        # search: the matched frames coloured, their share said
        spin = [p for p in total.costs if p[-1] == "spin"]
        self.assertEqual(len(spin), 2)
        page.search("spin")
        st = page.state()
        matched = sum(total.costs[p][2] for p in spin)
        self.assertEqual((st["matched"], st["matchedValue"]), (2, matched))
        self.assertIn("2 frames, %s ns" % format(matched, ","), st["status"])
        self.assertIn("%.2f%% of all threads" % (100.0 * matched / total.total()), st["status"])
        fills = {tuple(f["path"]): f["fill"] for f in page.drawn()}
        self.assertEqual({p for p, c in fills.items() if c == MATCH}, set(spin))
        # a regular expression; a match under a match counted once
        page.search("^(main|spin)$")
        st = page.state()
        self.assertEqual((st["matched"], st["matchedValue"]), (3, total.total()))
        self.assertIn("100.00% of all threads", st["status"])
        # zoomed: the share of the zoomed frame too
        page.search("tokenize")
        page.click(page.frame("main", "parse"))
        parse = subtree_values(total.costs)[("main", "parse")]
        tok = total.costs[("main", "parse", "tokenize")][2]
        self.assertIn("%.2f%% of the zoomed frame" % (100.0 * tok / parse), page.state()["status"])
        page.search("")
        self.assertEqual(page.state()["matched"], None)
        self.assertNotIn(MATCH, {f["fill"] for f in page.drawn()})

    def test_view_in_url(self):
        """The view (the thread shown, the search, the zoom) is kept in the
        URL's fragment: the page reloaded, or opened from that URL in
        another tab, shows the same frames, matches and status line; the
        default view has no fragment."""
        d = self.tmp()
        run_paths(self, [cgtest.example("threads")], d)
        (html,) = glob.glob(os.path.join(d, "flame.*.html"))
        total, threads = trees_of(d)
        page = self.open(html)
        self.assertEqual(page.location(), page.url)
        # a thread that ran fib, zoomed into the caller of its outermost fib
        k, tree = next((k, t) for k, t in enumerate(threads, 1) if any(p[-1] == "fib" for p in t.costs))
        page.choose("profile", str(k))
        page.search("fib|wor")
        zoom = min((p for p in tree.costs if p[-1] == "fib"), key=len)[:-1]
        self.assertTrue(zoom)
        page.click(page.frame(*zoom))
        before = page.state()
        self.assertEqual((before["profile"], before["search"], before["zoom"]), (k, "fib|wor", list(zoom)))
        self.assertGreater(before["matched"], 0)
        drawn = page.drawn()
        url = page.location()
        self.assertTrue(url.startswith(page.url + "#"), url)

        page.reload()
        self.assertEqual(page.location(), url)
        self.assertEqual(page.state(), before)
        self.assertEqual(page.drawn(), drawn)
        self.assertEqual(page.eval("document.getElementById('search').value"), "fib|wor")
        self.assertEqual(page.eval("document.getElementById('profile').value"), str(k))
        self.assert_drawn(page, tree.costs, zoom)

        other = self.open(html, fragment=url.partition("#")[2])
        self.assertEqual(other.state(), before)
        self.assertEqual(other.drawn(), drawn)
        self.assert_offline(other)

        # the fragment changed in the page (a link, the address edited)
        page.eval("location.hash = 'search=fib'")
        page.page.frames_drawn()
        st = page.state()
        self.assertEqual((st["profile"], st["search"], st["zoom"]), (0, "fib", None))
        # a name with the fragment's own characters in it, as typed
        page.search("a&b=c#d %")
        page.reload()
        self.assertEqual(page.state()["search"], "a&b=c#d %")
        # back to the default view: no fragment left
        page.search("")
        page.key("Escape")
        page.choose("profile", "0")
        self.assertEqual(page.location(), page.url)
        page.reload()
        st = page.state()
        self.assertEqual((st["profile"], st["search"], st["zoom"], st["matched"]), (0, "", None, None))
        self.assert_drawn(page, total.costs)
        # the file again at each of the three reloads, nothing else
        self.assertEqual(page.requests, [page.url] * 4)
        self.assertEqual(page.console, [])

    def test_threads(self):
        # examples/threads: five threads, fib recursive (folded): all
        # threads and each thread, chosen in the selector
        d = self.tmp()
        run_paths(self, [cgtest.example("threads")], d)
        (html,) = glob.glob(os.path.join(d, "flame.*.html"))
        total, threads = trees_of(d)
        self.assertGreater(len(threads), 1)
        page = self.open(html)
        self.assert_offline(page)
        labels = page.eval("[...document.getElementById('profile').options].map(o => o.textContent)")
        self.assertEqual(labels, ["all threads"] + [t.label for t in threads])
        for i, tree in enumerate([total] + threads):
            page.choose("profile", str(i))
            self.assertEqual(page.state()["label"], labels[i])
            model = {tuple(m["path"]): [m["calls"], m["incl"], m["self"]] for m in page.model()}
            self.assertEqual(model, tree.costs, labels[i])
            drawn = self.assert_drawn(page, tree.costs)
            fib = [p for p in drawn if p and p[-1] == "fib"]
            if i == 0:
                self.assertTrue(fib)
            for p in fib:
                self.assertEqual(hover_numbers(page.hover(drawn[p]))["calls"], tree.costs[p][0])

    def test_large_tree(self):
        """Thousands of paths, most of them under a pixel: exactly the
        frames of a pixel or more are drawn (far fewer than the paths),
        the model holds them all."""
        rnd = random.Random(28)
        fns = ["fn_%03d" % i for i in range(300)]
        nodes = []   # (id, parent, fn, calls, incl, self)
        by_id = {0: ()}
        made = set()
        for nid in range(1, 6001):
            ids = sorted(by_id)
            parent = 0 if nid <= 3 else rnd.choice(ids[max(1, len(ids) - 400):])
            path = by_id[parent]
            fn = rnd.choice([i for i in range(len(fns)) if fns[i] not in path])
            if path + (fns[fn],) in made:
                continue
            by_id[nid] = path + (fns[fn],)
            made.add(by_id[nid])
            self_ = int(rnd.paretovariate(1.2) * 1000)
            nodes.append((nid, parent, fn + 1, rnd.randint(1, 50), self_ * 2, self_))
        text = ["paths: 1", "pid: 9", "thread: 1", "part: 1", "cmd: ./big", "events: ns",
                "nodes: %d of 65536" % len(nodes), "folded: 0", "beyond: 0 0"]
        text += ["fn %d %s" % (i + 1, n) for i, n in enumerate(fns)]
        text += ["node %d %d %d %d %d %d" % n for n in nodes]
        d = self.tmp()
        with open(os.path.join(d, "callgrind.paths.9-01"), "w") as f:
            f.write("\n".join(text) + "\n")
        written = cgprof_flame(self, "callgrind.out.9", cwd=d)
        self.assertEqual(written[0], "flame.9.html")
        total, _ = trees_of(d)
        self.assertGreater(len(total.costs), 5000)
        page = self.open(os.path.join(d, written[0]))
        self.assert_offline(page)
        model = {tuple(m["path"]): [m["calls"], m["incl"], m["self"]] for m in page.model()}
        self.assertEqual(model, total.costs)
        drawn = self.assert_drawn(page, total.costs)
        self.assertLess(len(drawn), len(total.costs) / 2)
        # the widest frame under the root: its hover text, zoom into it
        top = max((p for p in drawn if len(p) == 1), key=lambda p: drawn[p]["w"])
        self.assertEqual(hover_numbers(page.hover(drawn[top])),
                         dict(zip(("calls", "inclusive", "self"), total.costs[top])))
        page.click(drawn[top])
        self.assert_drawn(page, total.costs, top)
        self.assertGreater(page.drawn_fraction(page.screenshot()), 0.2)


class EstimatedPage(Base):
    """The page of a run without path files: the frames of a function
    with several callers marked, hatched, and the mark explained."""

    def test_marked(self):
        d = self.tmp()
        run_paths(self, [cgtest.prog("flame")], d)
        arcs = os.path.join(d, "arcs")
        os.mkdir(arcs)
        for f in glob.glob(os.path.join(d, "callgrind.out.*")):
            shutil.copy(f, arcs)
        written = cgprof_flame(self, arcs)
        self.assertTrue(written[0].endswith(".html"), written)
        page = self.open(written[0])
        self.assert_offline(page)
        self.assertIn(flamehtml.ESTIMATE_TEXT, page.text("legend"))
        self.assertIn(flame.ESTIMATE_NOTE, page.eval("document.title"))
        labels = {tuple(f["path"]): f["label"] for f in page.drawn()}
        marked = {p for p, label in labels.items() if label.endswith(paths.ESTIMATE_MARK)}
        self.assertEqual({p[-1] for p in marked}, {"spin"})
        self.assertEqual(len(marked), 2)
        for p in marked:
            text = page.hover(page.frame(*p))
            self.assertEqual(text.split("\n")[0], "spin" + paths.ESTIMATE_MARK)
            self.assertIn("~: its place under its caller is an estimate", text)
        # the same self time per function as the exact run's page
        exact, _ = trees_of(d)
        per = {}
        for m in page.model():
            per[m["path"][-1]] = per.get(m["path"][-1], 0) + m["self"]
        want = {}
        for p, c in exact.costs.items():
            want[p[-1]] = want.get(p[-1], 0) + c[2]
        self.assertEqual({k: v for k, v in per.items() if v}, want)


class ThrottledPage(Base):
    """Issue 38 (4): the flame page's hover said "calls: 10,000" for a
    function throttled at its 10,000th call, where this page promises
    exact calls: a count that is a lower bound is shown ">=N", with a line
    that says why, and the exact ones stay plain."""

    def test_lower_bounds_marked(self):
        d = self.tmp()
        env = cgtest.clean_environ({"LD_PRELOAD": cgtest.LIB, "CGPROF_OUT": os.path.join(d, "callgrind.out"),
                                    # tiny and tinier throttled at their 500,000th call (their mean
                                    # below 1 ms), half of their calls timed: frames wide enough to
                                    # hover; mid and slow never called that often
                                    "CGPROF_THROTTLE": "500000:1000000", "CGPROF_TIME": "exact"})
        p = subprocess.run([cgtest.prog("throttle")], cwd=d, env=env, capture_output=True, text=True,
                           timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, p.stderr)
        # the functions the part says it throttled
        throttled = set()
        for f in glob.glob(os.path.join(d, "callgrind.out.*")):
            throttled |= paths.throttled_names(reader.load(f).desc_value("Throttled"))
        self.assertEqual({"tiny", "tinier"}, throttled)
        written = cgprof_flame(self, d)
        page = self.open(written[0])
        self.assert_offline(page)
        frames = {tuple(f["path"]): f for f in page.drawn()}
        seen = set()
        for path, f in frames.items():
            if not path or path[-1] not in ("tiny", "tinier", "mid", "slow", "main"):
                continue
            text = page.hover(page.frame(*path))
            bound = path[-1] in throttled
            self.assertEqual(bool(re.search(r"^calls: >=%s$" % format(f["calls"], ","), text, re.M)), bound, text)
            self.assertEqual(bool(re.search(r"^calls: %s$" % format(f["calls"], ","), text, re.M)), not bound, text)
            self.assertEqual("a lower bound" in text, bound, text)
            if bound:   # at the 500,000th call or at a later check: a lower bound indeed
                self.assertTrue(500000 <= f["calls"] < 1000000, text)
            seen.add(path[-1])
        self.assertEqual(seen, {"tiny", "tinier", "mid", "slow", "main"})


class DiffPage(Base):
    """cgprof flame --diff A B of two runs of tests/progs/flamediff."""

    @classmethod
    def setUpClass(cls):
        speedscope.require_browser()
        cls.dir = tempfile.mkdtemp(prefix="cgprof-flamediff-")
        # Sampled CPU time at 10,000 samples a second: a run preempted
        # (2 other jobs on 2 cores) is not charged the time it waited, as
        # exact time (wall-clock) charged it, which turned a frame of a
        # few ms the other way. flamediff's grow and shrink change by 32
        # units of some 10 ms each (9 times the work, a ninth of it), the
        # other frames by 1 unit at most: the direction of each and which
        # changed most are the program's, whatever the machine's load. The
        # pair is made again (3 times at most) should a run still be off
        # (steady's change more than a quarter of grow's and shrink's, or
        # either the wrong way): none so far; if every attempt is, the
        # class fails, saying what it measured. The page's colours are
        # checked against the runs' own numbers, whatever they are.
        # LD_BIND_NOW: the hooks' entries in the PLT bound before main; a
        # sample in the dynamic linker binding the exit hook's at steady's
        # exit made a path of its own in one run (main > steady >
        # _dl_runtime_resolve_xsavec > _dl_fixup > ...), listed as gone.
        env = cgtest.clean_environ(CGPROF_TIME="sample", CGPROF_SAMPLE_HZ="10000", LD_BIND_NOW="1")
        seen = []
        for attempt in range(3):
            cls.a, cls.b = (os.path.join(cls.dir, "%d%s" % (attempt, s)) for s in "ab")
            for d, k in ((cls.a, "2"), (cls.b, "6")):
                os.mkdir(d)
                p = subprocess.run([LAUNCHER, "--quiet", "--paths", cgtest.prog("flamediff"), k], cwd=d,
                                   env=env, capture_output=True, text=True, timeout=cgtest.limit(300))
                if p.returncode != 0:
                    raise AssertionError(p.stderr)
            ta, tb = trees_of(cls.a)[0], trees_of(cls.b)[0]
            change = {p[-1]: tb.costs[p][2] - ta.costs[p][2] for p in tb.costs if p in ta.costs}
            seen.append(change)
            if (change["grow"] > 0 > change["shrink"]
                    and abs(change["steady"]) <= 0.25 * min(abs(change["grow"]), abs(change["shrink"]))):
                break
        else:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise AssertionError("no pair of flamediff runs (K=2, K=6) with grow slower, shrink faster and steady "
                                 "the same within a quarter of their changes: self time's changes in ns %s" % seen)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def diff(self, a, b, out):
        written = cgprof_flame(self, "--diff", a, b, "--out", out)
        self.assertEqual(written, [out + ".diff.html", out + ".diff.folded"])
        return written[0]

    def fills(self, page):
        return {tuple(f["path"])[-1] if f["path"] else "": f["fill"] for f in page.drawn()}

    @staticmethod
    def rgb(fill):
        return tuple(int(v) for v in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())

    def test_diff(self):
        out = os.path.join(self.tmp(), "ab")
        html = self.diff(self.a, self.b, out)
        ta, _ = trees_of(self.a)
        tb, _ = trees_of(self.b)
        page = self.open(html)
        self.assert_offline(page)
        # B's shape, A's costs beside each path's own
        model = {tuple(m["path"]): m for m in page.model()}
        self.assertEqual({p: [m["calls"], m["incl"], m["self"]] for p, m in model.items()}, tb.costs)
        self.assertEqual({p: [m["a"]["calls"], m["a"]["incl"], m["a"]["self"]] for p, m in model.items()
                          if m["a"]["calls"] is not None}, {p: c for p, c in ta.costs.items() if p in tb.costs})
        drawn = self.assert_drawn(page, tb.costs)
        self.assertEqual({p[-1] for p in drawn if p}, {"main", "steady", "grow", "shrink", "tick", "fresh"})
        path = {p[-1]: p for p in drawn if p}

        # self time: grow slower (red), shrink faster (blue), steady the
        # same (near white), the deepest colour the largest change
        fills = self.fills(page)
        # (how deep each is depends on the times measured, which a loaded
        # machine moves: the formula below is checked for every frame, and
        # here only what holds whatever the times: the direction, and the
        # steady function paler than the one that changed most)
        grow, shrink, steady = (self.rgb(fills[n]) for n in ("grow", "shrink", "steady"))
        self.assertEqual(grow[0], 255)
        self.assertLess(grow[1], 255, fills)
        self.assertEqual(grow[1], grow[2], fills)
        self.assertEqual(shrink[2], 255)
        self.assertLess(shrink[0], 255, fills)
        self.assertEqual(shrink[0], shrink[1], fills)
        self.assertGreater(min(steady), min(min(grow), min(shrink)), fills)
        d_self = {n: tb.costs[p][2] - ta.costs.get(p, [0, 0, 0])[2] for n, p in path.items()}
        self.assertEqual(page.state()["maxAbs"], max(abs(v) for v in d_self.values()))
        # grow's and shrink's changes are 32 units, the others' 1 at most
        # (tests/progs/flamediff.c): one of the two is the largest
        self.assertEqual(page.state()["maxAbs"], max(abs(d_self["grow"]), abs(d_self["shrink"])))
        for n, v in d_self.items():
            t = min(1, abs(v) / page.state()["maxAbs"])
            low = int(round(255 * (1 - t)))   # JS's Math.round: no half-even for these
            want = (255, low, low) if v > 0 else (low, low, 255) if v < 0 else (255, 255, 255)
            self.assertLessEqual(max(abs(x - y) for x, y in zip(self.rgb(fills[n]), want)), 1, n)
        # the screenshot has them in those colours
        png = page.screenshot()
        self.assertGreater(page.drawn_fraction(png), 0.05)
        for n in ("grow", "shrink", "steady"):
            colours = page.pixels_of(png, drawn[path[n]])
            self.assertEqual("rgb(%d,%d,%d)" % max(colours, key=colours.get), fills[n], n)

        # hover: both runs' values and the change, exactly
        text = page.hover(drawn[path["grow"]])
        lines = text.split("\n")
        self.assertEqual(lines[:2], ["grow", "path: main > grow"])
        a, b = ta.costs[path["grow"]], tb.costs[path["grow"]]
        for line, key, i in ((lines[2], "self", 2), (lines[3], "inclusive", 1), (lines[4], "calls", 0)):
            m = re.match(r"%s: +A ([0-9,]+)\b.* B ([0-9,]+)\b.* change ([-+]?[0-9,]+)" % key, line)
            self.assertIsNotNone(m, line)
            self.assertEqual(tuple(number(g) for g in m.groups()), (a[i], b[i], b[i] - a[i]), line)
        text = page.hover(drawn[path["fresh"]])
        self.assertIn("only in B: A has no such path", text)
        self.assertRegex(text, r"calls: +A - +B 1 +change \+1")

        # calls: tick's 4 -> 12 the largest change; fresh's 0 -> 1; the rest
        # the same, white
        page.choose("metric", "calls")
        self.assertEqual(page.state()["maxAbs"], 8)
        fills = self.fills(page)
        self.assertEqual(fills["tick"], "rgb(255,0,0)")
        self.assertEqual(fills["fresh"], "rgb(255,223,223)")
        for n in ("main", "steady", "grow", "shrink"):
            self.assertEqual(fills[n], "rgb(255,255,255)", n)
        self.assertIn("8 calls", page.text("legend"))
        # inclusive time: grow and shrink as for self (their direction: how
        # deep depends on the times measured, which a loaded machine moves)
        page.choose("metric", "incl")
        fills = self.fills(page)
        grow, shrink = self.rgb(fills["grow"]), self.rgb(fills["shrink"])
        self.assertTrue(grow[0] == 255 and grow[1] == grow[2] < 255, fills)
        self.assertTrue(shrink[2] == 255 and shrink[0] == shrink[1] < 255, fills)

        # only in A: legacy, listed with A's costs
        legacy = ta.costs[("main", "legacy")]
        rows = page.eval("[...document.querySelectorAll('#gone tr')].map(r => [...r.cells].map(c => c.textContent))")
        self.assertEqual(len(rows), 2, rows)
        self.assertEqual(rows[1][0], "main > legacy")
        self.assertEqual([number(rows[1][1]), number(rows[1][2].split(" ")[0]), number(rows[1][3].split(" ")[0]),
                          number(rows[1][4])], [legacy[0], legacy[2], legacy[1], 1])

        # zoom and search work here too
        page.click(drawn[path["grow"]])
        self.assert_drawn(page, tb.costs, path["grow"])
        page.key("Escape")
        page.search("grow|shrink")
        self.assertEqual(page.state()["matchedValue"], tb.costs[path["grow"]][2] + tb.costs[path["shrink"]][2])

    def test_diff_folded(self):
        out = os.path.join(self.tmp(), "ab")
        self.diff(self.a, self.b, out)
        ta, _ = trees_of(self.a)
        tb, _ = trees_of(self.b)
        want = []
        for p in sorted(set(ta.costs) | set(tb.costs), key=lambda p: ";".join(p)):
            va, vb = ta.costs.get(p, [0, 0, 0])[2], tb.costs.get(p, [0, 0, 0])[2]
            if va or vb:
                want.append("%s %d %d" % (";".join(p), va, vb))
        with open(out + ".diff.folded") as f:
            self.assertEqual(f.read().split("\n")[:-1], want)

    def test_against_arcs(self):
        """B without its path files (its Callgrind files: stacks from the
        arcs, rooted at libc's __libc_start_call_main) against A's path
        files: drawn from main as the path files are, the same frames
        and the same self times as B's path files give (flamediff has
        one caller per function: the arcs decide every stack)."""
        arcs = os.path.join(self.tmp(), "arcs")
        os.mkdir(arcs)
        for f in glob.glob(os.path.join(self.b, "callgrind.out.*")):
            shutil.copy(f, arcs)
        html = self.diff(self.a, arcs, os.path.join(os.path.dirname(arcs), "ab"))
        tb, _ = trees_of(self.b)
        page = self.open(html)
        self.assert_offline(page)
        model = {tuple(m["path"]): m for m in page.model()}
        self.assertEqual({p: m["self"] for p, m in model.items()}, {p: c[2] for p, c in tb.costs.items()})
        self.assertEqual({p: m["calls"] for p, m in model.items()}, {p: c[0] for p, c in tb.costs.items()})
        self.assertEqual({tuple(f["path"]) for f in page.drawn()}, set(layout(tb.costs, page.state()["width"])))
        self.assertEqual(page.eval("document.querySelectorAll('#gone tr').length"), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
