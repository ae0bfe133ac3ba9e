"""scripts/check-layers against circles planted in a copy of the runtime:
the real tree passes; a module that includes the header of a module after
it in its layer fails, and so does one whose object calls a function of a
later module (planted in a copy of the built objects by linking a small
caller into one of them); a file of a module missing from docs/internals/design.md's
table fails until the table lists it, in its folder; a header name in two
folders fails; a file whose first lines name another layer than the
table's fails."""

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
# circle. A module is named by its folder and name (runtime/patch/fold.c).
EARLY, LATE = "patch/takeback", "patch/fold"


def name(module):
    return module.rsplit("/", 1)[1]


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
            self.assertIn('#include "%s.h"' % name(EARLY), fh.read())

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
        generalpath.h says "(thread layer)"; made to say data, it fails."""
        path = os.path.join(self.root, "runtime", "hook", "generalpath.h")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("(thread layer)", text.split("\n", 1)[0])
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text.replace("(thread layer)", "(data layer)", 1))
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/hook/generalpath.h:1: says data layer, docs/internals/design.md places hook/generalpath "
                      "in the thread layer", out)

    def test_include_of_a_later_module(self):
        path = os.path.join(self.root, "runtime", EARLY + ".c")
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('#include "%s.h"\n' % name(LATE) + text)
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/%s.c:1: %s includes %s.h, after it in the thread layer" % (EARLY, EARLY, name(LATE)), out)
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
        # meson's name for the object of runtime/patch/takeback.c
        obj = os.path.join(build, "runtime", "libcgprof_internal.a.p", EARLY.replace("/", "_") + ".c.o")
        self.assertTrue(os.path.exists(obj))
        subprocess.run(["ld", "-r", "-o", obj + ".new", obj, caller + ".o"], check=True)
        os.replace(obj + ".new", obj)
        rc, out = check("--root", self.root, build)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/%s.c: %s uses cg_fold_collect of %s.c, after it in the thread layer" %
                      (EARLY, EARLY, LATE), out)
        self.assertIn(", 1 breach\n", out)

    def test_new_module_placed_in_the_table(self):
        """A file of no module fails; listed in the table, in its folder, it
        passes; a module listed with no file fails, and so does one listed
        in another folder than its file's."""
        design = os.path.join(self.root, "docs", "internals", "design.md")
        with open(design, encoding="utf-8") as fh:
            text = fh.read()

        def table(old, new):
            self.assertIn(old, text)
            with open(design, "w", encoding="utf-8") as fh:
                fh.write(text.replace(old, new, 1))

        table("`tables/merge` `symbols/gone`", "`tables/merge` `tables/sketch` `symbols/gone`")
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/internals/design.md: module tables/sketch has no file in runtime/", out)
        with open(os.path.join(self.root, "runtime", "tables", "sketch.c"), "w", encoding="utf-8") as fh:
            fh.write('#include "costs.h"\n')
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 0, out)
        # listed in another folder than its file's
        table("`tables/merge` `symbols/gone`", "`tables/merge` `output/sketch` `symbols/gone`")
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/internals/design.md: module output/sketch has no file in runtime/", out)
        self.assertIn("runtime/tables/sketch.c: module tables/sketch in no layer", out)
        with open(design, "w", encoding="utf-8") as fh:
            fh.write(text)
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/tables/sketch.c: module tables/sketch in no layer", out)
        # before costs, whose header it includes: a breach
        table("`tables/addrset` `tables/latency`", "`tables/addrset` `tables/sketch` `tables/latency`")
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/tables/sketch.c:1: tables/sketch includes costs.h, after it in the data layer", out)

    def test_file_outside_the_folders(self):
        """A file at runtime/'s top is of no module until the table lists it
        there."""
        with open(os.path.join(self.root, "runtime", "sketch.c"), "w", encoding="utf-8") as fh:
            fh.write('#include "costs.h"\n')
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/sketch.c: module sketch in no layer", out)

    def test_header_name_in_two_folders(self):
        """Every folder is on the include path: a second costs.h, in another
        folder, makes `#include "costs.h"` ambiguous, and fails."""
        os.makedirs(os.path.join(self.root, "runtime", "sketch"))
        shutil.copy(os.path.join(self.root, "runtime", "tables", "costs.h"),
                    os.path.join(self.root, "runtime", "sketch", "costs.h"))
        rc, out = check("--root", self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("runtime/: costs.h in two folders (runtime/sketch/costs.h, runtime/tables/costs.h)", out)


if __name__ == "__main__":
    unittest.main()
