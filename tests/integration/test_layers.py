"""scripts/check-layers against circles planted in a copy of the runtime:
the real tree passes; a module that includes the header of a module after
it in its layer fails, and so does one whose object calls a function of a
later module (planted in a copy of the built objects by linking a small
caller into one of them); a file of a module missing from docs/internals/design.md's
table fails until the table lists it; a file whose first lines name
another layer than the table's fails."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("CGPROF_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
CHECK = os.path.join(SOURCE_DIR, "scripts", "check-layers")

# Two modules of the thread layer, takeback listed before fold, which
# includes its header and calls it: a use of fold by takeback closes a
# circle.
EARLY, LATE = "takeback", "fold"


def check(*args):
    r = subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True)
    return r.returncode, r.stdout


class Layers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cg-layers-")
        self.root = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(SOURCE_DIR, "runtime"), os.path.join(self.root, "runtime"))
        os.makedirs(os.path.join(self.root, "docs", "internals"))
        shutil.copy(os.path.join(SOURCE_DIR, "docs", "internals", "design.md"), os.path.join(self.root, "docs", "internals"))
        with open(os.path.join(self.root, "docs", "internals", "design.md"), encoding="utf-8") as fh:
            table = fh.read()
        self.assertRegex(table, r"\| 2 thread \|[^|]*`%s`[^|]*`%s`" % (EARLY, LATE))
        with open(os.path.join(self.root, "runtime", LATE + ".c"), encoding="utf-8") as fh:
            self.assertIn('#include "%s.h"' % EARLY, fh.read())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_real_tree_passes(self):
        rc, out = check(BUILD_DIR)
        self.assertEqual(rc, 0, out)
        self.assertIn(", 0 breaches", out)

    def test_copy_passes(self):
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 0, out)

    def test_layer_named_in_a_file(self):
        """A file's first lines that name its layer must name the table's:
        guard.h says "(thread layer)"; made to say data, it fails."""
        path = os.path.join(self.root, "runtime", "guard.h")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("(thread layer)", text.split("\n", 1)[0])
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text.replace("(thread layer)", "(data layer)", 1))
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/guard.h:1: says data layer, docs/internals/design.md places guard in the thread layer", out)

    def test_include_of_a_later_module(self):
        path = os.path.join(self.root, "runtime", EARLY + ".c")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('#include "%s.h"\n' % LATE + text)
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/%s.c:1: %s includes %s.h, after it in the thread layer" % (EARLY, EARLY, LATE), out)
        self.assertIn(", 1 breach\n", out)

    def test_call_of_a_later_module(self):
        """takeback's object, with a call of cg_fold_collect linked in."""
        build = os.path.join(self.tmp, "build")
        shutil.copytree(os.path.join(BUILD_DIR, "runtime"), os.path.join(build, "runtime"),
                        ignore=lambda d, names: [n for n in names if not (n.endswith((".p", ".o", ".so")))])
        caller = os.path.join(self.tmp, "planted.c")
        with open(caller, "w", encoding="utf-8") as fh:
            fh.write("void cg_fold_collect(int on);\nvoid cg_planted(void) { cg_fold_collect(1); }\n")
        subprocess.run(["cc", "-c", "-fPIC", caller, "-o", caller + ".o"], check=True)
        obj = os.path.join(build, "runtime", "libcgprof_internal.a.p", EARLY + ".c.o")
        self.assertTrue(os.path.exists(obj))
        subprocess.run(["ld", "-r", "-o", obj + ".new", obj, caller + ".o"], check=True)
        os.replace(obj + ".new", obj)
        rc, out = check("--root", self.root, build)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/%s.c: %s uses cg_fold_collect of %s.c, after it in the thread layer" %
                      (EARLY, EARLY, LATE), out)
        self.assertIn(", 1 breach\n", out)

    def test_new_module_placed_in_the_table(self):
        """A file of no module fails; listed in the table, it passes; a
        module listed with no file fails."""
        design = os.path.join(self.root, "docs", "internals", "design.md")
        with open(design, encoding="utf-8") as fh:
            text = fh.read()
        with open(design, "w", encoding="utf-8") as fh:
            fh.write(text.replace("`merge` `gone`", "`merge` `sketch` `gone`", 1))
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/internals/design.md: module sketch has no file in runtime/", out)
        with open(os.path.join(self.root, "runtime", "sketch.c"), "w", encoding="utf-8") as fh:
            fh.write('#include "costs.h"\n')
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 0, out)
        with open(design, "w", encoding="utf-8") as fh:
            fh.write(text)
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/sketch.c: module sketch in no layer", out)
        # before costs, whose header it includes: a breach
        with open(design, "w", encoding="utf-8") as fh:
            fh.write(text.replace("`addrset` `latency`", "`addrset` `sketch` `latency`", 1))
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/sketch.c:1: sketch includes costs.h, after it in the data layer", out)


if __name__ == "__main__":
    unittest.main()
