"""What speedscope shows of a profile file: the vendored speedscope
(tests/vendor/speedscope) opened in headless Chromium (Debian's `chromium`),
driven over the DevTools protocol.

    from speedscope import open_profile, require_browser
    shown = open_profile("callgrind.out.123-01", screenshot="flame.png")
    shown.importer          # "Importing as Callgrind profile"
    p = shown.profiles[0]   # one per profile speedscope made (one an event)
    p.by_name()             # {"main": Weights(self=..., total=...), ...}
    shown.sandwich          # the sandwich view's rows, as displayed

How the file gets in: as speedscope's own command does it (bin/cli.mjs):
the page is opened at index.html#localProfilePath=<a .js file>, and that
file calls window.speedscope.loadFileFromBase64(name, base64 text). The
file's name matters: speedscope picks its importer by the name first
(callgrind.* is Callgrind, *.speedscope.json its own format), then by the
content ("# callgrind format", JSON keys).

What is read back, all of it as speedscope has it, not as it was given:
* the profiles, from speedscope's Export (its Ctrl+S: the blob it would
  download, taken at URL.createObjectURL): its own JSON file, the frames
  and the events of each profile as its model holds them after the import;
  each frame's self and total weight computed from those as speedscope
  computes them for the sandwich view (self: the weight with the frame on
  top of the stack; total: with the frame anywhere on it, once however
  often it is there -- recursion);
* the sandwich view's table as drawn (its text: total, self, name);
* a PNG screenshot of the flame graph ("time-ordered" or "left-heavy"
  view), and how much of the flame graph's area is in colour: the frames
  are drawn in colours, all else in greys (an empty graph: 0).

No timing thresholds: one generous overall timeout (TIMEOUT seconds, for a
loaded machine), after which the run fails with what was seen so far.

Chromium runs as `chromium --headless --no-sandbox` (the tests run as root in
CI, where the sandbox would refuse), with the protocol on a pipe
(--remote-debugging-pipe: no port, no websocket module), in a fresh
profile directory. CGPROF_CHROMIUM names another binary. When Chromium
cannot run, open_profile raises BrowserError with its stderr: a test
fails. require_browser() is for setUpClass: with CGPROF_NO_BROWSER=1 it
skips the tests instead (unittest.SkipTest), saying why.

Standard library only (PNG decoding included)."""

import atexit
import base64
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import tarfile
import tempfile
import time
import unittest
import urllib.parse
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import cgtest

VERSION = "1.25.0"
SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
TARBALL = os.path.join(SOURCE_DIR, "tests", "vendor", "speedscope", "speedscope-%s.tgz" % VERSION)
TIMEOUT = cgtest.limit(180)
VIEWS = {"time-ordered": "1", "left-heavy": "2", "sandwich": "3"}


class BrowserError(Exception):
    """Chromium could not be started or stopped answering."""


class SpeedscopeError(Exception):
    """speedscope did not show the profile (refused it, or failed)."""


def require_browser():
    """For setUpClass: raises unittest.SkipTest when CGPROF_NO_BROWSER=1;
    otherwise nothing (a missing Chromium then fails the tests, as it must in
    CI, where scripts/deps.sh installs it)."""
    if os.environ.get("CGPROF_NO_BROWSER") == "1":
        raise unittest.SkipTest("CGPROF_NO_BROWSER=1: the speedscope tests need headless Chromium")


def chromium_binary():
    return os.environ.get("CGPROF_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Weights:
    self: float
    total: float


@dataclass
class Frame:
    name: str
    file: Optional[str]
    self: float
    total: float


@dataclass
class Profile:
    """One profile of the group speedscope made (a Callgrind file gives one
    per event of events:)."""
    name: str
    unit: str
    total_weight: float          # the profile's endValue - startValue
    frames: List[Frame]

    def by_name(self) -> Dict[str, Weights]:
        """{name: Weights} over the frames with weight (a frame only named,
        never on the stack, has none and is not drawn); raises ValueError
        when two frames drawn share a name (different files), which a
        comparison by name would hide."""
        out: Dict[str, Weights] = {}
        for f in self.frames:
            if f.total == 0 and f.self == 0:
                continue
            if f.name in out:
                raise ValueError("two frames named %r (files %r)" % (f.name, [g.file for g in self.frames
                                                                              if g.name == f.name]))
            out[f.name] = Weights(f.self, f.total)
        return out


@dataclass
class SandwichRow:
    total: str   # as displayed: "17,199,331 (94%)"
    self: str
    name: str
    file: str    # the row's tooltip (title=)


@dataclass
class Shown:
    title: str                        # the page's title: "<name> - speedscope"
    importer: Optional[str]           # speedscope's console line "Importing as ..."
    profiles: List[Profile]
    exported: dict                    # the Export file, parsed
    sandwich: List[SandwichRow]
    console: List[str]                # every console line and exception, in order
    screenshot: Optional[bytes] = None   # PNG of the flame graph view
    view: Optional[str] = None
    drawn: Optional[float] = None     # fraction of the flame graph's area in colour (frames)


# ---- the DevTools protocol over a pipe ------------------------------------------

class _Chromium:
    def __init__(self, workdir, width, height):
        binary = chromium_binary()
        if not binary:
            raise BrowserError("no chromium on PATH (Debian: apt-get install chromium; scripts/deps.sh installs it; "
                               "CGPROF_NO_BROWSER=1 skips these tests)")
        # fds 3 and 4 of the child: commands in, replies out (NUL-separated JSON)
        cmd_r, cmd_w = os.pipe()
        rep_r, rep_w = os.pipe()
        # numbered from 10, so that the dup2 to 3 and 4 cannot overwrite one
        fds = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_r, cmd_w, rep_r, rep_w)]
        for fd in (cmd_r, cmd_w, rep_r, rep_w):
            os.close(fd)
        cmd_r, cmd_w, rep_r, rep_w = fds

        def child():
            os.dup2(cmd_r, 3)
            os.dup2(rep_w, 4)

        self.stderr_path = os.path.join(workdir, "chromium.stderr")
        argv = [binary, "--headless", "--no-sandbox", "--remote-debugging-pipe",
                "--user-data-dir=" + os.path.join(workdir, "profile"), "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--enable-unsafe-swiftshader",
                # containers' /dev/shm is small (64 MB in Docker's default)
                "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-extensions", "--mute-audio",
                "--window-size=%d,%d" % (width, height), "about:blank"]
        with open(self.stderr_path, "wb") as err:
            try:
                self.proc = subprocess.Popen(argv, preexec_fn=child, close_fds=False, stdin=subprocess.DEVNULL,
                                             stdout=err, stderr=err, start_new_session=True)
            except OSError as e:
                for fd in fds:
                    os.close(fd)
                raise BrowserError("cannot run %s: %s" % (binary, e))
        os.close(cmd_r)
        os.close(rep_w)
        self.w, self.r = cmd_w, rep_r
        self.buf = b""
        self.next_id = 0
        self.events: List[dict] = []
        self.deadline = time.monotonic() + TIMEOUT

    def stderr(self):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def status(self):
        """Its exit status, once it has closed its end of the pipe."""
        try:
            return self.proc.wait(timeout=cgtest.limit(10))
        except subprocess.TimeoutExpired:
            return "still running"

    def _recv(self):
        while b"\0" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium: no answer within %d s; its stderr:\n%s" % (TIMEOUT, self.stderr()))
            ready, _, _ = select.select([self.r], [], [], min(left, 1.0))
            if ready:
                data = os.read(self.r, 1 << 20)
                if not data:
                    raise BrowserError("chromium exited (status %s); its stderr:\n%s"
                                       % (self.status(), self.stderr()))
                self.buf += data
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        try:
            os.write(self.w, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise BrowserError("chromium exited (status %s); its stderr:\n%s" % (self.status(), self.stderr()))
        while True:
            m = self._recv()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise BrowserError("%s: %s" % (method, m["error"]))
                return m["result"]
            self.events.append(m)

    def close(self):
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.poll() is None:
            # its own session: the renderers and the zygote go with it
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
        self.proc.wait()


_shared = None


def shared_chromium():
    """The test process's one Chromium, started at its first page and ended
    at exit: a start costs a second or two of CPU, and a test opens tens of
    pages; each page is a tab of its own in a browser context of its own
    (_Page), which shares no storage with the others. Started again if it
    died."""
    global _shared
    if _shared is None or _shared.proc.poll() is not None:
        workdir = tempfile.mkdtemp(prefix="cgprof-chromium-")
        _shared = _Chromium(workdir, 1200, 800)

        def stop(c=_shared, d=workdir):
            c.close()
            shutil.rmtree(d, ignore_errors=True)
        atexit.register(stop)
    return _shared


class _Page:
    def __init__(self, chromium: _Chromium, width, height):
        self.c = chromium
        # the page's time: each page has the whole TIMEOUT, the browser being shared
        self.c.deadline = time.monotonic() + TIMEOUT
        self.context = self.c.send("Target.createBrowserContext")["browserContextId"]
        self.target = self.c.send("Target.createTarget", {"url": "about:blank",
                                                          "browserContextId": self.context})["targetId"]
        self.s = self.c.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        self.seen = len(self.c.events)
        self.send("Runtime.enable")
        self.send("Page.enable")
        self.resize(width, height)
        self.console: List[str] = []
        self.dialogs: List[str] = []

    def close(self):
        """The tab and its context gone (the browser stays)."""
        if self.c.proc.poll() is None:
            try:
                self.c.send("Target.closeTarget", {"targetId": self.target})
                self.c.send("Target.disposeBrowserContext", {"browserContextId": self.context})
            except BrowserError:
                pass
        self.c.events = [e for e in self.c.events if e.get("sessionId") != self.s]

    def events(self):
        """The browser's events of this page, in order."""
        return [e for e in self.c.events if e.get("sessionId") == self.s]

    def send(self, method, params=None):
        return self.c.send(method, params, self.s)

    def resize(self, width, height):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def eval(self, expression, await_promise=False):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": await_promise})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise SpeedscopeError("in the page: %s" % (d.get("exception", {}).get("description") or d.get("text")))
        return r["result"].get("value")

    def poll_events(self):
        """The console lines and dialogs since the last call; a dialog is
        answered (an alert would block the page)."""
        for e in self.c.events[self.seen:]:
            if e.get("sessionId") != self.s:
                continue
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                self.console.append("exception: %s" % (d.get("exception", {}).get("description") or d.get("text")))
            elif method == "Page.javascriptDialogOpening":
                self.dialogs.append(p.get("message", ""))
                self.console.append("dialog: %s" % p.get("message", ""))
                self.send("Page.handleJavaScriptDialog", {"accept": True})
        self.seen = len(self.c.events)

    def frames_drawn(self):
        # two animation frames: the one that renders, the one after it
        self.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", await_promise=True)

    def wait(self, what, condition):
        """Until the page's JS condition is true; fails at a dialog, an
        error of the import, or the overall deadline."""
        while True:
            if self.eval(condition):
                self.poll_events()
                return
            self.poll_events()
            bad = self.dialogs or [l for l in self.console if l.startswith(("Failed to load format", "exception:"))]
            if bad:
                raise SpeedscopeError("speedscope, waiting for %s: %s; console:\n%s"
                                      % (what, bad[0], "\n".join(self.console)))
            if time.monotonic() > self.c.deadline:
                raise SpeedscopeError("speedscope: no %s within %d s; console:\n%s"
                                      % (what, TIMEOUT, "\n".join(self.console)))
            time.sleep(0.05)


# ---- the vendored speedscope ------------------------------------------------------

def _unpack(workdir):
    if not os.path.exists(TARBALL):
        raise SpeedscopeError("no vendored speedscope at %s" % TARBALL)
    with tarfile.open(TARBALL) as t:
        members = [m for m in t.getmembers() if m.isfile() and m.name.startswith("package/dist/release/")
                   and ".." not in m.name.split("/")]
        t.extractall(workdir, members=members)
    return os.path.join(workdir, "package", "dist", "release", "index.html")


# ---- what the page holds ----------------------------------------------------------

# Export (Ctrl+S), the file taken where speedscope hands it to the browser
_EXPORT_JS = r"""
(async () => {
  let blob = null;
  const create = URL.createObjectURL, click = HTMLAnchorElement.prototype.click;
  URL.createObjectURL = b => { blob = b; return "about:blank"; };
  HTMLAnchorElement.prototype.click = function () {};
  try {
    window.dispatchEvent(new KeyboardEvent("keydown", {key: "s", ctrlKey: true}));
  } finally {
    URL.createObjectURL = create;
    HTMLAnchorElement.prototype.click = click;
  }
  return blob ? await blob.text() : null;
})()
"""

_SANDWICH_JS = r"""
(() => {
  const rows = [];
  for (const tr of document.querySelectorAll("table tr")) {
    const td = tr.querySelectorAll("td");
    if (td.length === 3)
      rows.push([td[0].innerText, td[1].innerText, td[2].innerText, td[2].title || ""]);
  }
  return rows;
})()
"""

# The flame graph's canvas: where it is on the page (device pixels = CSS
# pixels here: deviceScaleFactor 1)
_CANVAS_JS = r"""
(() => {
  let best = null;
  for (const c of document.querySelectorAll("canvas")) {
    const r = c.getBoundingClientRect();
    if (!best || r.width * r.height > best.width * best.height) best = r;
  }
  return best && [best.left, best.top, best.width, best.height];
})()
"""


def weights_of_events(events) -> Tuple[Dict[int, float], Dict[int, float]]:
    """Self and total weight of each frame of an evented profile, as
    speedscope computes them (CallTreeProfileBuilder.addWeightsToFrames):
    each span between two events goes to the frame on top (self) and once to
    every distinct frame on the stack (total)."""
    self_w: Dict[int, float] = {}
    total_w: Dict[int, float] = {}
    stack: List[int] = []
    last = None
    for e in events:
        at = e["at"]
        if stack and last is not None and at > last:
            d = at - last
            self_w[stack[-1]] = self_w.get(stack[-1], 0) + d
            for f in set(stack):
                total_w[f] = total_w.get(f, 0) + d
        last = at
        if e["type"] == "O":
            stack.append(e["frame"])
        else:
            if not stack or stack[-1] != e["frame"]:
                raise SpeedscopeError("speedscope's export closes frame %r, not the one open" % e["frame"])
            stack.pop()
    if stack:
        raise SpeedscopeError("speedscope's export leaves frames open")
    return self_w, total_w


def weights_of_samples(samples, weights) -> Tuple[Dict[int, float], Dict[int, float]]:
    self_w: Dict[int, float] = {}
    total_w: Dict[int, float] = {}
    for stack, w in zip(samples, weights):
        if stack:
            self_w[stack[-1]] = self_w.get(stack[-1], 0) + w
        for f in set(stack):
            total_w[f] = total_w.get(f, 0) + w
    return self_w, total_w


def profiles_of_export(exported) -> List[Profile]:
    frames = exported["shared"]["frames"]
    out = []
    for p in exported["profiles"]:
        if p["type"] == "evented":
            self_w, total_w = weights_of_events(p["events"])
        else:
            self_w, total_w = weights_of_samples(p["samples"], p["weights"])
        used = sorted(set(self_w) | set(total_w))
        out.append(Profile(p.get("name", ""), p.get("unit", "none"), p["endValue"] - p["startValue"],
                           [Frame(frames[i]["name"], frames[i].get("file"), self_w.get(i, 0), total_w.get(i, 0))
                            for i in used]))
    return out


def png_pixels(png: bytes):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA,
    non-interlaced PNG (what Chromium's screenshots are)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat.append(data)
    width, height, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("PNG of depth %d, colour type %d, interlace %d: not decoded here" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def drawn_fraction(png: bytes, box) -> float:
    """The fraction of the box (left, top, width, height) in colour: the
    frames are drawn in colours, the rest of the flame graph (background,
    grid, the minimap's shade, the axis labels) in greys, so that an empty
    graph gives 0."""
    width, height, rows = png_pixels(png)
    left, top, w, h = (int(round(v)) for v in box)
    coloured = total = 0
    for y in range(max(0, top), min(height, top + h)):
        for r, g, b in rows[y][max(0, left):min(width, left + w)]:
            total += 1
            coloured += max(r, g, b) - min(r, g, b) > 24
    return coloured / total if total else 0.0


def open_profile(path, name=None, view="left-heavy", screenshot=None, width=1200, height=800) -> Shown:
    """Opens the file at `path` in speedscope, as if dropped on it under
    `name` (default: the file's own name, which picks the importer), and
    returns what it shows (Shown). view: the flame graph view captured
    ("time-ordered" or "left-heavy"); screenshot: a path to write its PNG
    to (it is in Shown.screenshot either way). Raises BrowserError (no
    Chromium, or it failed) or SpeedscopeError (speedscope refused the
    file: its alert, or its error, with its console)."""
    if view not in ("time-ordered", "left-heavy"):
        raise ValueError("view: time-ordered or left-heavy, not %r" % view)
    workdir = tempfile.mkdtemp(prefix="cgprof-speedscope-")
    try:
        index = _unpack(workdir)
        with open(path, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        loader = os.path.join(workdir, "load.js")
        with open(loader, "w") as f:
            f.write("speedscope.loadFileFromBase64(%s, %s);\n" % (json.dumps(name or os.path.basename(path)),
                                                                 json.dumps(data)))
        chromium = shared_chromium()
        page = _Page(chromium, width, height)
        try:
            # speedscope prepends file:/// to the path itself
            page.send("Page.navigate", {"url": "file://%s#localProfilePath=%s"
                                               % (urllib.parse.quote(index), urllib.parse.quote(loader.lstrip("/"),
                                                                                              safe=""))})
            # the title is set as the profile is handed to the views
            page.wait("the profile", "document.title.endsWith(' - speedscope')")
            page.frames_drawn()
            title = page.eval("document.title")
            while True:
                text = page.eval(_EXPORT_JS, await_promise=True)
                if text is not None:
                    break
                if time.monotonic() > chromium.deadline:
                    raise SpeedscopeError("speedscope's Export gave nothing; console:\n%s" % "\n".join(page.console))
                page.frames_drawn()
            exported = json.loads(text)

            page.eval("window.dispatchEvent(new KeyboardEvent('keypress', {key: '%s'}))" % VIEWS[view])
            page.frames_drawn()
            box = page.eval(_CANVAS_JS)
            png = base64.b64decode(page.send("Page.captureScreenshot", {"format": "png"})["data"])
            if screenshot:
                with open(screenshot, "wb") as f:
                    f.write(png)
            drawn = drawn_fraction(png, box) if box else 0.0

            # the sandwich view lists the rows it has room for: room for all
            profiles = profiles_of_export(exported)
            rows_wanted = max([len(p.frames) for p in profiles] + [0])
            page.resize(width, max(height, 200 + 20 * (rows_wanted + 5)))
            page.eval("window.dispatchEvent(new KeyboardEvent('keypress', {key: '3'}))")
            page.frames_drawn()
            sandwich = [SandwichRow(*r) for r in page.eval(_SANDWICH_JS)]
            page.poll_events()
        finally:
            page.close()
        importer = next((l for l in page.console if l.startswith("Importing as ")), None)
        return Shown(title, importer, profiles, exported, sandwich, list(page.console), png, view, drawn)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    """python3 speedscope.py FILE [PNG]: what speedscope shows of FILE."""
    import sys
    argv = sys.argv[1:] if argv is None else argv
    shown = open_profile(argv[0], screenshot=argv[1] if len(argv) > 1 else None)
    print("title:", shown.title)
    print("importer:", shown.importer)
    print("drawn: %.3f of the flame graph's area in colour" % shown.drawn)
    for p in shown.profiles:
        print("profile %r (%s), total %s" % (p.name, p.unit, p.total_weight))
        for f in sorted(p.frames, key=lambda f: -f.total):
            print("  %14s %14s  %s  (%s)" % (f.total, f.self, f.name, f.file))
    print("sandwich rows:", len(shown.sandwich))
    for r in shown.sandwich:
        print("  %s | %s | %s" % (r.total, r.self, r.name))


if __name__ == "__main__":
    main()
