"""Every time limit of the tests goes through cgtest.limit() (one factor,
CGPROF_TIMEOUT_MULTIPLIER, scales them all: tests/README.md, "A loaded
machine"), and scripts/tsan scales its own the same way. A limit written
as a bare number would not stretch on a loaded machine, and a test would
fail there for the machine's sake."""

import glob
import os
import re
import unittest

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

# a number given as a timeout= argument, added to the clock for a deadline,
# or compared with the time since a start
BARE = re.compile(r"\btimeout\s*=\s*\d|monotonic\(\)\s*\+\s*\d|monotonic\(\)\s*-\s*\w+\s*[<>]=?\s*\d")


def code_lines(path):
    """(number, line) of a Python file, without comments and string
    literals (a command's own --timeout=10 is no limit of the test's)."""
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = re.sub(r"'[^']*'|\"[^\"]*\"", "''", line.split("#", 1)[0])
        yield n, line


class Limits(unittest.TestCase):
    def test_python_limits_are_scaled(self):
        bad = []
        paths = glob.glob(os.path.join(SOURCE_DIR, "tests", "integration", "*.py"))
        paths += glob.glob(os.path.join(SOURCE_DIR, "tests", "python", "*.py"))
        for path in sorted(paths):
            for n, line in code_lines(path):
                if BARE.search(line):
                    bad.append("%s:%d: %s" % (os.path.relpath(path, SOURCE_DIR), n, line.strip()))
        self.assertEqual(bad, [], "write these limits as cgtest.limit(seconds)")

    def test_finds_a_bare_limit(self):
        # the check itself: a bare limit is found, a scaled one and a
        # command's option are not
        found = [BARE.search(l) is not None for _, l in
                 [(0, "p = subprocess.run(argv, timeout=120)"), (0, "end = time.monotonic() + 30"),
                  (0, "while time.monotonic() - start < 60:"),
                  (0, "p = subprocess.run(argv, timeout=cgtest.limit(120))"),
                  (0, "end = time.monotonic() + cgtest.limit(30)")]]
        self.assertEqual(found, [True, True, True, False, False])
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write('run(["--timeout=10", x])  # timeout=5\n')
        self.addCleanup(os.unlink, f.name)
        self.assertEqual([BARE.search(l) for _, l in code_lines(f.name)], [None])

    def test_tsan_limits_are_scaled(self):
        with open(os.path.join(SOURCE_DIR, "scripts", "tsan"), encoding="utf-8") as f:
            text = f.read()
        # a limit of a second or more: the pacing sleeps (0.005) are none
        bare = re.findall(r"(?m)^[^#\n]*\b(?:timeout|sleep) [1-9][0-9]*(?![.0-9])", text)
        self.assertEqual(bare, [], "scripts/tsan: scale these limits with $(limit SECONDS)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
