"""The README and the pages under docs/, docs/internals/ and tests/: every
relative link leads to a file that exists and, with a #fragment, to a
heading of it (as GitHub makes anchors); every ```sh block a user would
copy is run by a test or says why not; the README's five-minute path runs
as written."""

import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

import cgtest
from test_guide import NOT_RUN, copy_tree, run_as_user, runnable, user_env

SOURCE_DIR = cgtest.SOURCE_DIR
PAGES = sorted(["README.md", "tests/README.md"] +
               [os.path.relpath(p, SOURCE_DIR) for p in glob.glob(os.path.join(SOURCE_DIR, "docs", "*.md")) +
                glob.glob(os.path.join(SOURCE_DIR, "docs", "internals", "*.md"))])

# Pages whose blocks a test runs as written: the README's (below, but for
# its first block, run by ReadmeFirstBlock below with a selection of tests:
# scripts/test alone is the whole suite, which CI runs by .ci/run),
# the guide's (test_guide) and the install section of docs/install.md
# (test_install). Every other block must start with NOT_RUN.
RUN_BY_TEST = {"README.md", "docs/guide.md"}
INSTALL_SECTION = ("docs/install.md", "Install and pkg-config")


def read(page):
    with open(os.path.join(SOURCE_DIR, page), encoding="utf-8") as f:
        return f.read()


def prose(text):
    """The lines outside code blocks, with their numbers."""
    fence = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            yield n, line


def anchors(text):
    """GitHub's anchors of a page's headings: lower case, punctuation but
    '-' and '_' dropped, spaces made '-', a repeated one suffixed -1, -2."""
    seen = {}
    out = set()
    for _, line in prose(text):
        m = re.match(r"#{1,6} (.*)$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else "%s-%d" % (slug, k))
    return out


def links(text):
    for n, line in prose(text):
        line = re.sub(r"`[^`]*`", "", line)
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            yield n, m.group(1)


def sh_blocks(text):
    """[(line number, code)] of the ```sh blocks, indented ones (in a list)
    too, their indentation removed."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            indent = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            blocks.append((i + 2, "\n".join(line[indent:] for line in lines[i + 1:j])))
            i = j
        i += 1
    return blocks


def section_lines(text, title):
    """The line numbers of a '## title' section (to the next '## ')."""
    lines = text.split("\n")
    start = lines.index("## " + title)
    end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    return range(start + 1, end + 1)


class Links(unittest.TestCase):
    def test_anchors(self):
        text = "# A `b`: c (d)\n```\n# not a heading\n```\n## A `b`: c (d)\n## x_y-z\n"
        self.assertEqual(anchors(text), {"a-b-c-d", "a-b-c-d-1", "x_y-z"})

    def test_relative_links_resolve(self):
        bad = []
        for page in PAGES:
            for n, target in links(read(page)):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, fragment = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(os.path.join(SOURCE_DIR, dest)):
                    bad.append("%s:%d: %s: no such file" % (page, n, target))
                elif fragment and dest.endswith(".md") and fragment not in anchors(read(dest)):
                    bad.append("%s:%d: %s: no such heading in %s" % (page, n, target, dest))
        self.assertEqual(bad, [])

    def test_pages_found(self):
        for page in ("docs/cgprof.md", "docs/cgprof-report.md", "docs/cgprof-flame.md", "docs/cgprof-pprof.md",
                     "docs/cgprof-control.md", "docs/variables.md", "docs/README.md", "docs/internals/README.md",
                     "docs/internals/design.md", "docs/internals/benchmarks.md", "tests/README.md"):
            self.assertIn(page, PAGES)
            self.assertIn("](%s)" % page, read("README.md"), "the README does not link " + page)


class ShellBlocks(unittest.TestCase):
    def test_run_or_say_why(self):
        install_page, install_title = INSTALL_SECTION
        install = section_lines(read(install_page), install_title)
        bad = []
        for page in PAGES:
            blocks = sh_blocks(read(page))
            for n, code in blocks:
                if code.lstrip().startswith(NOT_RUN):
                    if not re.search(r"not run by the tests: \S.*\)$", code.lstrip().split("\n")[0]):
                        bad.append("%s:%d: say why the block is not run" % (page, n))
                    continue
                if page in RUN_BY_TEST or (page == install_page and n in install):
                    continue
                bad.append("%s:%d: no test runs this block: run it in one, or start it with %r"
                           % (page, n, NOT_RUN + " why)"))
        self.assertEqual(bad, [])


class ReadmeRuns(unittest.TestCase):
    """The README's blocks after its first, in order, in one bash session
    at the root of a scratch copy of the source tree: the build, an
    instrumented example, the launcher, report and flame."""

    def test_five_minutes_as_written(self):
        missing = [t for t in ("bash", "meson", "ninja", "gcc") if not shutil.which(t)]
        if missing:
            self.skipTest("not installed: " + " ".join(missing))
        blocks = [code for _, code in runnable(sh_blocks(read("README.md"))[1:])]
        self.assertGreaterEqual(len(blocks), 4, "the build, the program, the run, the reading")
        for code in blocks:
            self.assertNotRegex(code, r"&&|\|\|", "a command whose failure set -e would miss")
        top = tempfile.mkdtemp(prefix="cgprof-readme-")
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        src = os.path.join(top, "cgprof")
        copy_tree(src)
        p = run_as_user(self, blocks, src, top, "the README's blocks")
        # what the README says they leave: the run's files, its flame
        # graph, and the report of main's callees
        prof = os.path.join(src, "prof")
        self.assertEqual(len(glob.glob(os.path.join(prof, "callgrind.out.*-01"))), 1)
        self.assertEqual(len(glob.glob(os.path.join(prof, "flame.*.html"))), 1)
        self.assertRegex(p.stderr, r"cgprof: top 10 functions by inclusive time")
        self.assertRegex(p.stdout, r"(?m)^main  \[basic\.c\]: .* inclusive")
        self.assertRegex(p.stdout, r"(?m)^\s+[\d.]+\s+[\d.]+\s+\d+\s+crunch\s+basic\.c:\d+$")


class ReadmeFirstBlock(unittest.TestCase):
    """The README's first block, the demo and the test command, in its
    order in one scratch copy of the source tree, as a newcomer runs them:
    the test command must build and run the tests even after the demo made
    the build directory without them (it once printed 'No tests defined.'
    and exited 0), and fail when it ran no test. The test command is given
    a selection (one unit test, one Python test): the whole suite is what
    CI runs through .ci/run, which test_readme checks is that command."""

    SELECTION = ["util", "readme"]
    # set for the commands run here: the suite they run must not hold this
    # test again (a selection lost would run it inside itself, forever)
    NESTED = "_CGPROF_README_FIRST_BLOCK"

    def run_line(self, line, cwd, home):
        env = user_env(home)
        env[self.NESTED] = "1"
        return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=cgtest.limit(540))

    def test_demo_then_test(self):
        if os.environ.get(self.NESTED):
            self.fail("run by the README's first block in this test: the test command's selection was lost")
        missing = [t for t in ("bash", "meson", "ninja", "gcc", "callgrind_annotate") if not shutil.which(t)]
        if missing:
            self.skipTest("not installed: " + " ".join(missing))
        # each line a command and its comment
        first = [shlex.split(line, comments=True) for line in sh_blocks(read("README.md"))[0][1].splitlines()]
        self.assertEqual(first, [["scripts/demo"], ["scripts/test"]])
        top = tempfile.mkdtemp(prefix="cgprof-first-")
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        src = os.path.join(top, "cgprof")
        copy_tree(src)
        demo, test = (shlex.join(c) for c in first)
        p = self.run_line(demo, src, top)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertRegex(p.stdout, r"(?m)^== cgprof report ")
        self.assertRegex(p.stdout, r"(?m)^== callgrind_annotate ")
        # every share callgrind_annotate shows the newcomer adds up to the
        # program (no more): its annotated source put fib's recursive call
        # line at 26% beside fib's 2% (a recursion's time once per level)
        shown = p.stdout.split("== callgrind_annotate ", 1)[1].split("PROGRAM TOTALS", 1)[1]
        shares = [float(x) for x in re.findall(r"\(\s*([\d.]+)%\)", shown)]
        self.assertTrue(shares, p.stdout[-3000:])
        self.assertLessEqual(sum(shares), 100.5, p.stdout[-3000:])
        p = self.run_line(shlex.join([test] + self.SELECTION), src, top)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertEqual(p.stdout.strip().splitlines()[-1], "%d passed, 0 failed, 0 skipped" % len(self.SELECTION))
        # a selection that matches no test ran none: a failure, though the
        # run above left its log in the build directory
        p = self.run_line(test + " no-such-test", src, top)
        self.assertNotEqual(p.returncode, 0, p.stdout[-2000:])
        self.assertEqual(p.stdout.strip().splitlines()[-1], "0 passed, 1 failed, 0 skipped")


if __name__ == "__main__":
    unittest.main(verbosity=2)
