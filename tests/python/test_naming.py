"""cgproflib.naming: the names are the runtime's (runtime/output/naming.c, asked
through cgprof-rules), inverted right: the files the runtime names for any
pid, thread and part are found, with those numbers, and nothing else; the
total's name is the one docs/cgprof-control.md gives. (tests/integration/
test_launcher.py checks the names against files the runtime really
writes.)"""

import os
import random
import shutil
import tempfile
import unittest

from cgproflib import naming, rules

PATTERNS = ["", "callgrind.out", "%p", "%%", "%%p", "%%%p", "%p%p", "a%", "%", "%x", "p%%%%p", "/tmp/%p/x",
            "dir/prof.%p.cg", "100%/x", "a\\b", "new\nline", "tab\there", os.fsdecode(b"\xff%p\xfe"),
            "\u00e9t\u00e9-%p", "x.1-01", "9%p", "run.%p/x", "a-%p-b.%p"]


class Inverted(unittest.TestCase):
    def test_the_runtimes_names_found_back(self):
        rng = random.Random(5)
        patterns = PATTERNS + ["".join(rng.choice(["%", "p", "%p", "%%", "x", ".out", "-", "1", "."])
                                       for _ in range(10)) for _ in range(150)]
        cases = [(p, pid, thread, part) for p in patterns for pid in (1, 42, 4194304)
                 for thread, part in ((1, 0), (2, 3), (100, 12))]
        names = rules.file_names([(p, pid, "", thread, part) for p, pid, thread, part in cases])
        for (pattern, pid, thread, part), name in zip(cases, names):
            m = naming.file_regex(pattern).fullmatch(os.path.basename(name))
            self.assertTrue(m, (pattern, name))
            self.assertEqual(int(m.group("thread")), thread, (pattern, name))
            self.assertEqual(int(m.group("part") or 0), part, (pattern, name))
            if m.groupdict().get("pid") is not None:
                self.assertEqual(int(m.group("pid")), pid, (pattern, name))
            else:
                self.assertIn("%p", pattern)  # the pattern places the pid: not in the name then

    def test_directory(self):
        self.assertEqual(naming.directory("callgrind.out", 7, "/start"), "/start")
        self.assertEqual(naming.directory("d%%/run.%p/x", 7, "/start"), "/start/d%/run.7")
        self.assertEqual(naming.directory("/abs/x", 7, "/start"), "/abs")
        self.assertTrue(naming.directory_names_pid("run.%p/x"))
        self.assertFalse(naming.directory_names_pid("run%%p/x.%p"))
        self.assertFalse(naming.directory_names_pid("callgrind.out"))


class FileNames(unittest.TestCase):
    def matches(self, pattern, name):
        m = naming.file_regex(pattern).fullmatch(name)
        return m and (m.groupdict().get("pid"), m.group("part"), m.group("thread"))

    def test_file_regex(self):
        self.assertEqual(self.matches("callgrind.out", "callgrind.out.123-01"), ("123", None, "01"))
        self.assertEqual(self.matches("callgrind.out", "callgrind.out.123.4-02"), ("123", "4", "02"))
        self.assertEqual(self.matches("/some/dir/callgrind.out", "callgrind.out.123-100"), ("123", None, "100"))
        for other in ("callgrind.out.123", "callgrind.total.123", "callgrind.out.123-01.tmp", "callgrind.out-01"):
            self.assertFalse(self.matches("callgrind.out", other), other)
        self.assertEqual(self.matches("p.%p.x", "p.5.x.2-03"), ("5", "2", "03"))
        self.assertEqual(self.matches("%p-%p", "5-5-01"), ("5", None, "01"))
        self.assertFalse(self.matches("%p-%p", "5-6-01"))
        self.assertEqual(self.matches("r%%%p", "r%12-01"), ("12", None, "01"))
        # the pattern names the pid, but not in the file's name
        self.assertEqual(self.matches("q%%p", "q%p-01"), (None, None, "01"))
        self.assertEqual(self.matches("run.%p/x", "x-01"), (None, None, "01"))

    def test_scan_and_run_name(self):
        d = tempfile.mkdtemp(prefix="cgprof-naming-")
        self.addCleanup(shutil.rmtree, d)
        for name in ("callgrind.out.10-01", "callgrind.out.10.2-01", "callgrind.out.11-02", "callgrind.total.10",
                     "other.txt"):
            open(os.path.join(d, name), "w").close()
        found = naming.scan("callgrind.out", 10, d)
        self.assertEqual({os.path.basename(p): f[:3] for p, f in found.items()},
                         {"callgrind.out.10-01": (10, 0, 1), "callgrind.out.10.2-01": (10, 2, 1),
                          "callgrind.out.11-02": (11, 0, 2)})
        for path, f in found.items():
            self.assertEqual(naming.run_name(path, f), os.path.join(d, "callgrind.out.%d" % f.pid))
        # the run of a pattern that names the pid: the name up to its part
        for name in ("p.5.x-01", "p.5.x.2-03"):
            open(os.path.join(d, name), "w").close()
        runs = {os.path.basename(p): naming.run_name(p, f) for p, f in naming.scan("p.%p.x", 5, d).items()}
        self.assertEqual(runs, {"p.5.x-01": os.path.join(d, "p.5.x"), "p.5.x.2-03": os.path.join(d, "p.5.x")})
        self.assertEqual(naming.scan("callgrind.out", 10, os.path.join(d, "missing")), {})

    def test_total_path(self):
        # docs/cgprof-control.md, "The total of all threads"
        for pattern, total in (("callgrind.out", "/start/callgrind.total.42"), ("myapp.out", "/start/myapp.total.42"),
                               ("/tmp/prof", "/tmp/prof.total.42"), ("prof-%p.cg", "/start/prof-total.42.cg"),
                               ("a.output", "/start/a.output.total.42"), ("q%%p", "/start/total.q%p")):
            self.assertEqual(naming.total_path(pattern, 42, "/start"), total, pattern)
        # longer than any name the helper makes (the runtime refuses such a
        # prefix at start-up: the names have no limit of their own)
        self.assertIsNone(naming.total_path("x" * 20000, 42, "/start"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
