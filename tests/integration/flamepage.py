"""What a browser shows of `cgprof flame`'s HTML pages (PREFIX.html,
PREFIX.diff.html: cgproflib/flamehtml.py): the page opened from its file
in headless Chromium, driven over the DevTools protocol as the speedscope
tests drive speedscope (tests/integration/speedscope.py: the same
Chromium, pipe and deadline), with real mouse events and typing.

    with flamepage.FlamePage("flame.123.html") as page:
        page.drawn()          # the frames drawn, as the page drew them
        page.hover(frame)     # the hover text of a frame (the mouse on it)
        page.click(frame)     # zoom into it
        page.search("spin")   # typed into the search box
        page.location()       # the page's URL now (its fragment keeps the view)
        page.reload()         # the page loaded again from that URL
        png = page.screenshot()

    flamepage.FlamePage("flame.123.html", fragment="search=spin")   # opened with a fragment

What is read back is the page's own: window.cgflame's list of the frames
drawn on the canvas (path, x, width, value, the costs shown, the colour
filled), its model (every path with its costs), its state (zoom, search,
the status line), the tooltip's text, and the pixels of a screenshot.

Every request the page makes is recorded (Network.requestWillBeSent):
`requests` must be the file itself and nothing else, and `console` the
page's console lines and exceptions (a request refused by the page's
Content-Security-Policy is one).

Standard library only."""

import base64
import json
import math
import os
import urllib.parse
from typing import List

import speedscope


class PageError(Exception):
    pass


class FlamePage:
    def __init__(self, path, width=1200, height=800, fragment=None):
        self.path = os.path.abspath(path)
        self.url = "file://" + urllib.parse.quote(self.path) + ("#" + fragment if fragment is not None else "")
        self.width, self.height = width, height
        self.chromium = speedscope.shared_chromium()
        self.page = None
        try:
            self.page = speedscope._Page(self.chromium, width, height)
            self.page.send("Network.enable")
            self.page.send("Page.navigate", {"url": self.url})
            self.page.wait("the flame graph", "document.body && document.body.dataset.ready === '1'")
            self.page.frames_drawn()
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.page:
            self.page.close()
            self.page = None

    # ---- what the page holds
    def eval(self, js, await_promise=False):
        return self.page.eval(js, await_promise)

    @property
    def requests(self) -> List[str]:
        return [e["params"]["request"]["url"] for e in self.page.events()
                if e.get("method") == "Network.requestWillBeSent"]

    @property
    def console(self) -> List[str]:
        self.page.poll_events()
        return list(self.page.console)

    def drawn(self):
        return self.eval("cgflame.drawn()")

    def model(self):
        return self.eval("cgflame.model()")

    def state(self):
        return self.eval("cgflame.state()")

    def text(self, element_id):
        return self.eval("document.getElementById(%s).innerText" % json.dumps(element_id))

    def location(self):
        """The page's URL as the address bar has it."""
        return self.eval("location.href")

    def reload(self):
        """The page loaded again from its URL now (fragment included), as
        the browser's reload does; returns when it is drawn."""
        self.eval("window.cgflameBeforeReload = true")
        self.page.send("Page.reload")
        self.page.wait("the flame graph again", "!window.cgflameBeforeReload && document.body && "
                                                "document.body.dataset.ready === '1'")
        self.page.frames_drawn()

    def frame(self, *path):
        """The drawn frame of that path (names, root first); () is the
        profile's root frame."""
        got = [f for f in self.drawn() if tuple(f["path"]) == path]
        if len(got) != 1:
            raise PageError("%d frames drawn for %r" % (len(got), path))
        return got[0]

    # ---- acting on it as a user does
    def _point(self, frame):
        left, top, _, _ = self.eval("cgflame.canvasBox()")
        # inside the frame, left of its label: one pixel right of its edge,
        # mid-height
        return left + frame["x"] + min(2, frame["w"] / 2), top + frame["y"] + frame["h"] / 2

    def mouse(self, kind, x, y, **more):
        params = {"type": kind, "x": x, "y": y}
        params.update(more)
        self.page.send("Input.dispatchMouseEvent", params)

    def hover(self, frame):
        """The tooltip's text with the mouse on the frame ("" when none is
        shown)."""
        x, y = self._point(frame)
        self.mouse("mouseMoved", x, y)
        self.page.frames_drawn()
        return self.eval("(t => t.hidden ? '' : t.textContent)(document.getElementById('tip'))")

    def click(self, frame):
        x, y = self._point(frame)
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", clickCount=1)
        self.page.frames_drawn()

    def key(self, key):
        self.page.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "code": key,
                                                  "windowsVirtualKeyCode": 27 if key == "Escape" else 0})
        self.page.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": key})
        self.page.frames_drawn()

    def search(self, text):
        """Types text into the search box (what was there first cleared)."""
        self.eval("(s => { s.value = ''; s.dispatchEvent(new Event('input')); s.focus(); })"
                  "(document.getElementById('search'))")
        if text:
            self.page.send("Input.insertText", {"text": text})
        self.page.frames_drawn()

    def choose(self, select_id, value):
        """A choice of a <select> (profile, metric), as a user's change."""
        self.eval("(s => { s.value = %s; s.dispatchEvent(new Event('change')); })(document.getElementById(%s))"
                  % (json.dumps(value), json.dumps(select_id)))
        self.page.frames_drawn()

    def screenshot(self, path=None):
        png = base64.b64decode(self.page.send("Page.captureScreenshot", {"format": "png"})["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png

    def drawn_fraction(self, png):
        """The fraction of the canvas's area in colour in the screenshot
        (speedscope.drawn_fraction: greys and white are not)."""
        return speedscope.drawn_fraction(png, self.eval("cgflame.canvasBox()"))

    def pixels_of(self, png, frame):
        """The screenshot's colours inside a frame, left of its label (two
        columns after its first whole pixel, its rows but the edges, which
        a frame at a fraction of a pixel shares with its neighbours):
        {(r, g, b): count}."""
        _, _, rows = speedscope.png_pixels(png)
        left, top, _, _ = self.eval("cgflame.canvasBox()")
        out = {}
        x0 = int(math.ceil(left + frame["x"]))
        for y in range(int(math.ceil(top + frame["y"])) + 1, int(top + frame["y"] + frame["h"]) - 1):
            for x in range(x0, x0 + 2):
                out[rows[y][x]] = out.get(rows[y][x], 0) + 1
        return out
