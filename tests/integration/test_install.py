"""meson install, staged in a temporary directory (--destdir): what a user of
the installed cgprof gets. A program built with `pkg-config --cflags --libs
cgprof` (and a meson project with dependency('cgprof')) is profiled with the
runtime linked, no LD_PRELOAD; the installed launcher runs an example."""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import reader
from cgtest import example, prog

# main -> work 1, work -> leaf 7 (one call site per iteration), main -> leaf 1
LINKED_C = r"""
#include <stdio.h>
#include <cgprof.h>

static int leaf(int x) { return x * 3 + 1; }

static int work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += leaf(i);
    return s;
}

int main(void)
{
    /* the header's API, with the runtime linked: it must find it */
    int named = cgprof_set_thread_name("linked-main");
    printf("%d %d\n", work(7), leaf(2) + named);
    return 0;
}
"""

MESON_BUILD = """project('uses_cgprof', 'c')
executable('linked', 'linked.c', dependencies : dependency('cgprof'), c_args : ['-O0', '-fno-inline'])
"""


def clean_env(**extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("CGPROF_") and k not in ("LD_PRELOAD", "PKG_CONFIG_PATH", "PKG_CONFIG_SYSROOT_DIR")}
    e.update(extra)
    return e


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cgprof-install-")
        cls.destdir = os.path.join(cls.tmp, "stage")
        p = subprocess.run(["meson", "install", "-C", cgtest.BUILD_DIR, "--no-rebuild", "--destdir", cls.destdir],
                           capture_output=True, text=True, timeout=300, env=clean_env())
        if p.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("meson install failed:\n" + p.stdout[-3000:] + p.stderr[-3000:])
        intro = subprocess.run(["meson", "introspect", "--buildoptions", cgtest.BUILD_DIR], capture_output=True,
                               text=True, timeout=120, check=True).stdout
        import json
        opts = {o["name"]: o["value"] for o in json.loads(intro)}
        stage = lambda *p: os.path.join(cls.destdir + opts["prefix"], *p)  # noqa: E731
        cls.bindir = stage(opts["bindir"])
        cls.libdir = stage(opts["libdir"])
        cls.includedir = stage(opts["includedir"])
        cls.mandir = stage(opts["mandir"])
        cls.pcdir = os.path.join(cls.libdir, "pkgconfig")
        # The .pc names the final prefix; the sysroot maps it into the stage.
        cls.pc_env = clean_env(PKG_CONFIG_PATH=cls.pcdir, PKG_CONFIG_SYSROOT_DIR=cls.destdir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cgprof-inst-run-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def pkg_config(self, *args):
        p = subprocess.run(["pkg-config"] + list(args) + ["cgprof"], capture_output=True, text=True,
                           env=self.pc_env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()

    def test_files_installed(self):
        for path in (os.path.join(self.libdir, "libcgprof.so"), os.path.join(self.includedir, "cgprof.h"),
                     os.path.join(self.pcdir, "cgprof.pc"), os.path.join(self.mandir, "man1", "cgprof.1")):
            self.assertTrue(os.path.isfile(path), path)
        for cmd in ("cgprof", "cgprof-control", "callgrind_check"):
            path = os.path.join(self.bindir, cmd)
            self.assertTrue(os.access(path, os.X_OK), path)
        p = subprocess.run([os.path.join(self.bindir, "callgrind_check"), "--help"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_package_installed(self):
        """cgproflib and the helper it asks the runtime's rules from, in
        cgprof's private directory, as the build has them."""
        private = os.path.join(self.libdir, "cgprof")
        self.assertTrue(os.access(os.path.join(private, "cgprof-rules"), os.X_OK))
        built = os.path.join(cgtest.BUILD_DIR, "python", "cgproflib")
        self.assertEqual(sorted(os.listdir(os.path.join(private, "cgproflib"))),
                         sorted(n for n in os.listdir(built) if n.endswith(".py")))

    def test_commands_use_the_installed_package_wherever_the_tree_is(self):
        """Moved elsewhere, with another cgproflib first on PYTHONPATH, the
        commands still take the package and the runtime installed with them."""
        moved = os.path.join(self.dir, "moved")
        shutil.copytree(self.destdir, moved, symlinks=True)
        os.rename(self.destdir, self.destdir + ".away")
        self.addCleanup(os.rename, self.destdir + ".away", self.destdir)
        other = os.path.join(self.dir, "other", "cgproflib")
        os.makedirs(other)
        with open(os.path.join(other, "__init__.py"), "w") as f:
            f.write("raise ImportError('not the installed cgproflib')\n")
        env = clean_env(PYTHONPATH=os.path.dirname(other))
        bindir = os.path.join(moved, os.path.relpath(self.bindir, self.destdir))
        for cmd in ("cgprof", "cgprof-control", "callgrind_check"):
            p = subprocess.run([os.path.join(bindir, cmd), "--help"], cwd=self.dir, env=env, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([os.path.join(bindir, "cgprof"), "--time=sometimes", "true"], cwd=self.dir, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr),
                         (2, "cgprof: --time=\"sometimes\": it is not one of the accepted values; accepted: exact|sample\n"))
        p = subprocess.run([os.path.join(bindir, "cgprof"), "sh", "-c", 'echo "$LD_PRELOAD"'], cwd=self.dir, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), os.path.join(moved, os.path.relpath(self.libdir, self.destdir),
                                                        "libcgprof.so"))

    def test_pkg_config_flags(self):
        cflags = self.pkg_config("--cflags")
        self.assertEqual([f for f in cflags if not f.startswith("-I")],
                         ["-finstrument-functions", "-g", "-fno-omit-frame-pointer"])
        # gcc's own, which clang refuses: a variable of its own
        self.assertEqual(self.pkg_config("--variable=gcc_cflags"),
                         ["-finstrument-functions-exclude-file-list=/usr/include"])
        includes = [f[2:] for f in cflags if f.startswith("-I")]
        if includes:   # pkg-config leaves out -I/usr/include
            self.assertTrue(any(os.path.isfile(os.path.join(d, "cgprof.h")) for d in includes), cflags)
        libs = self.pkg_config("--libs")
        self.assertIn("-lcgprof", libs)
        self.assertIn("-L" + self.libdir, [os.path.normpath(f) if f.startswith("-L") else f for f in libs])

    def test_versions_agree(self):
        # the header's version macros, pkg-config's and the launcher's
        text = open(os.path.join(self.includedir, "cgprof.h")).read()
        parts = [re.search(r"#define CGPROF_VERSION_%s (\d+)" % k, text).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
        self.assertEqual(self.pkg_config("--modversion"), [".".join(parts)])
        p = subprocess.run([os.path.join(self.bindir, "cgprof"), "--version"], capture_output=True, text=True,
                           timeout=60)
        self.assertIn(".".join(parts), p.stdout + p.stderr)

    def check_linked_profile(self, exe):
        """Runs exe (the runtime linked, not preloaded) and checks its profile."""
        self.assertIn("libcgprof.so", subprocess.run(["readelf", "-d", exe], capture_output=True, text=True,
                                                     timeout=60).stdout)
        env = clean_env(LD_LIBRARY_PATH=self.libdir)
        p = subprocess.run([exe], cwd=self.dir, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        # 0: cgprof_set_thread_name() found the runtime
        self.assertEqual(p.stdout, "%d %d\n" % (sum(3 * i + 1 for i in range(7)), 3 * 2 + 1))
        files = glob.glob(os.path.join(self.dir, "callgrind.out.*"))
        self.assertEqual(len(files), 1, files)
        prof = reader.load(files[0], strict=True)
        self.assertEqual(prof.violations, [])
        counts = prof.call_counts()
        self.assertEqual(counts[("main", "work")], 1)
        self.assertEqual(counts[("work", "leaf")], 7)
        self.assertEqual(counts[("main", "leaf")], 1)
        self.assertEqual(prof.desc_value("Thread name"), "linked-main")
        return files[0]

    def test_program_built_with_pkg_config_links_the_runtime(self):
        src = os.path.join(self.dir, "linked.c")
        with open(src, "w") as f:
            f.write(LINKED_C)
        exe = os.path.join(self.dir, "linked")
        flags = self.pkg_config("--cflags", "--libs")
        p = subprocess.run(["cc", "-O0", "-fno-inline", src, "-o", exe] + flags, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_linked_profile(exe)

    def test_meson_dependency(self):
        proj = os.path.join(self.dir, "proj")
        os.mkdir(proj)
        with open(os.path.join(proj, "linked.c"), "w") as f:
            f.write(LINKED_C)
        with open(os.path.join(proj, "meson.build"), "w") as f:
            f.write(MESON_BUILD)
        b = os.path.join(self.dir, "b")
        p = subprocess.run(["meson", "setup", b, proj], capture_output=True, text=True, env=self.pc_env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        self.assertIn("Run-time dependency cgprof found: YES", p.stdout)
        p = subprocess.run(["meson", "compile", "-C", b], capture_output=True, text=True, env=self.pc_env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        self.check_linked_profile(os.path.join(b, "linked"))

    def launch(self, args):
        return subprocess.run([os.path.join(self.bindir, "cgprof")] + args, cwd=self.dir, env=clean_env(),
                              capture_output=True, text=True, timeout=300)

    def test_installed_launcher(self):
        p = self.launch([example("basic")])
        self.assertEqual(p.returncode, 0, p.stderr)
        files = glob.glob(os.path.join(self.dir, "callgrind.out.*"))
        self.assertEqual(len(files), 1)
        self.assertIn("cgprof: 1 file written:\ncgprof:   %s\n" % os.path.basename(files[0]), p.stderr)
        self.assertRegex(p.stderr, r"\ncgprof: +[0-9.]+ +[0-9.]+ +[0-9.]+ +21891  fib  \[basic\.c\]\n")
        # the runtime it preloaded is the installed one, not the build tree's
        p = subprocess.run(["sh", "-c", 'exec "$0" sh -c \'echo "$LD_PRELOAD"\'', os.path.join(self.bindir, "cgprof")],
                           cwd=self.dir, env=clean_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(os.path.realpath(p.stdout.strip()), os.path.realpath(os.path.join(self.libdir, "libcgprof.so")))

    def test_installed_launcher_status_and_options(self):
        p = self.launch([prog("exits"), "deep"])
        self.assertEqual(p.returncode, 3, p.stderr)
        p = self.launch([prog("crasher"), "abort"])
        self.assertEqual(p.returncode, -signal.SIGABRT, p.stderr)
        before = glob.glob(os.path.join(self.dir, "callgrind.out.*"))
        p = self.launch(["--time=sometimes", example("basic")])
        self.assertEqual(p.returncode, 2)
        self.assertIn('--time="sometimes": it is not one of the accepted values; accepted: exact|sample', p.stderr)
        self.assertEqual(glob.glob(os.path.join(self.dir, "callgrind.out.*")), before)   # not run


if __name__ == "__main__":
    unittest.main(verbosity=2)
