"""meson install: what a user of the installed cgprof gets.

Staged in a temporary directory (--destdir, class Installed): a program
built with `pkg-config --cflags --libs cgprof` (the flags before or after
the source, gcc and clang, with and without an explicit --as-needed), the
install page's Make and CMake lines and a meson project with dependency('cgprof')
are profiled with the runtime linked, no LD_PRELOAD; the installed launcher
runs an example.

Into a real prefix (class ReadmeInstall): docs/install.md's "Install and
pkg-config" section, its shell blocks run as written in a scratch copy of
the source tree, the prefix a scratch directory: meson setup and install
(which must build nothing of the test suite, and say what PKG_CONFIG_PATH
to set), pkg-config, a program linked and run (found through the rpath,
no LD_LIBRARY_PATH), the launcher, a static program; then their profiles,
with the counts the example makes."""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import cgtest
from cgproflib import reader, report
from cgtest import example, prog
from test_guide import copy_tree, run_as_user, sh_blocks, user_env

with open(os.path.join(cgtest.SOURCE_DIR, "docs", "install.md"), encoding="utf-8") as f:
    INSTALL_PAGE = f.read()
with open(os.environ.get("CGPROF_EXPECTED", os.path.join(cgtest.SOURCE_DIR, "examples", "expected.json"))) as f:
    import json
    EXPECTED = json.load(f)


def readme_section(title):
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(title), INSTALL_PAGE, re.M | re.S)
    if not m:
        raise AssertionError("docs/install.md has no section '## %s'" % title)
    return m.group(1)


def readme_blocks(language):
    """The ```language blocks of docs/install.md's install section."""
    return re.findall(r"^```%s\n(.*?)^```$" % language, readme_section("Install and pkg-config"), re.M | re.S)

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
    """cgtest.clean_environ (PINNED, the exact figures) without pkg-config's
    settings either."""
    e = {k: v for k, v in cgtest.clean_environ().items() if k not in ("PKG_CONFIG_PATH", "PKG_CONFIG_SYSROOT_DIR")}
    e.update(extra)
    return e


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cgprof-install-")
        cls.destdir = os.path.join(cls.tmp, "stage")
        p = subprocess.run(["meson", "install", "-C", cgtest.BUILD_DIR, "--no-rebuild", "--destdir", cls.destdir],
                           capture_output=True, text=True, timeout=cgtest.limit(300), env=clean_env())
        if p.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("meson install failed:\n" + p.stdout[-3000:] + p.stderr[-3000:])
        intro = subprocess.run(["meson", "introspect", "--buildoptions", cgtest.BUILD_DIR], capture_output=True,
                               text=True, timeout=cgtest.limit(120), check=True).stdout
        import json
        opts = {o["name"]: o["value"] for o in json.loads(intro)}
        stage = lambda *p: os.path.join(cls.destdir + opts["prefix"], *p)  # noqa: E731
        cls.bindir = stage(opts["bindir"])
        cls.libdir = stage(opts["libdir"])
        cls.includedir = stage(opts["includedir"])
        cls.mandir = stage(opts["mandir"])
        cls.datadir = stage(opts["datadir"])
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
                           env=self.pc_env, timeout=cgtest.limit(60))
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()

    def test_clang_cxx20_with_libstdcxx(self):
        """Issue 27 (8): clang++ with gcc's libstdc++ in C++20 mode fails
        to link with -finstrument-functions alone (undefined references to
        std::allocator<char>::allocate, which libstdc++ declares constexpr
        and never emits, and whose addresses the hooks take); with the
        flags docs/install.md gives for clang (pkg-config's cflags and
        clang_cflags) it links, runs and is profiled."""
        if not shutil.which("clang++"):
            self.skipTest("no clang++")
        d = tempfile.mkdtemp(prefix="cgprof-cxx20-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        src = os.path.join(d, "words.cpp")
        with open(src, "w") as f:
            f.write("#include <map>\n#include <sstream>\n#include <string>\n#include <vector>\n"
                    "int main(int argc, char **argv) {\n"
                    "    std::map<std::string, int> m;\n"
                    "    std::vector<std::string> v(argv, argv + argc);\n"
                    "    for (auto &x : v) m[x]++;\n"
                    "    std::ostringstream o; o << m.size();\n"
                    "    std::string t = o.str(); t.insert(0, \"n=\");\n"
                    "    return t == \"n=1\" ? 0 : 1;\n}\n")
        alone = subprocess.run(["clang++", "-std=c++20", "-O2", "-finstrument-functions", src, "-o",
                                os.path.join(d, "alone")], capture_output=True, text=True, timeout=cgtest.limit(300))
        flags = self.pkg_config("--cflags") + self.pkg_config("--variable=clang_cflags")
        exe = os.path.join(d, "words")
        b = subprocess.run(["clang++", "-std=c++20", "-O2"] + flags + [src, "-o", exe], capture_output=True,
                           text=True, timeout=cgtest.limit(300))
        self.assertEqual(b.returncode, 0, b.stderr[-2000:])
        if alone.returncode == 0:
            self.skipTest("this clang++ and libstdc++ link -finstrument-functions alone (docs/limitations.md's case "
                          "does not arise here)")
        self.assertIn("undefined reference", alone.stderr)
        r = subprocess.run([exe], cwd=d, env=cgtest.clean_environ(LD_PRELOAD=cgtest.LIB), capture_output=True,
                           text=True, timeout=cgtest.limit(120))
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        files = [f for f in os.listdir(d) if f.startswith("callgrind.out.")]
        self.assertEqual(len(files), 1, os.listdir(d))
        counts = reader.load(os.path.join(d, files[0])).call_counts()
        self.assertEqual(sum(n for (a, b), n in counts.items() if b == "main"), 1, counts)

    def test_files_installed(self):
        for path in (os.path.join(self.libdir, "libcgprof.so"), os.path.join(self.includedir, "cgprof.h"),
                     os.path.join(self.pcdir, "cgprof.pc"), os.path.join(self.mandir, "man1", "cgprof.1"),
                     os.path.join(self.mandir, "man1", "cgprof-control.1"),
                     os.path.join(self.datadir, "cgprof", "cgprof.supp")):
            self.assertTrue(os.path.isfile(path), path)
        for cmd in ("cgprof", "cgprof-control", "callgrind_check"):
            path = os.path.join(self.bindir, cmd)
            self.assertTrue(os.access(path, os.X_OK), path)
        p = subprocess.run([os.path.join(self.bindir, "callgrind_check"), "--help"], capture_output=True,
                           text=True, timeout=cgtest.limit(60))
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_control_man_page(self):
        """`man cgprof-control` reads: the page installed, every option of
        the command's --help in it."""
        page = os.path.join(self.mandir, "man1", "cgprof-control.1")
        p = subprocess.run(["man", "-l", "-P", "cat", page], capture_output=True, text=True, timeout=cgtest.limit(60),
                           env=dict(os.environ, MANWIDTH="100"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("cgprof-control - look at and control programs running with the cgprof runtime", p.stdout)
        helptext = subprocess.run([os.path.join(self.bindir, "cgprof-control"), "--help"], capture_output=True,
                                  text=True, timeout=cgtest.limit(60)).stdout
        for opt in ("-d, --dump [REASON]", "-z, --zero", "-i, --instr on|off", "-b, --back", "-e [EVENTS]",
                    "-s, --stat", "--timeout S"):
            self.assertIn(opt, helptext)
            self.assertIn(opt, p.stdout)

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
                               text=True, timeout=cgtest.limit(60))
            self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([os.path.join(bindir, "cgprof"), "--time=sometimes", "true"], cwd=self.dir, env=env,
                           capture_output=True, text=True, timeout=cgtest.limit(60))
        self.assertEqual((p.returncode, p.stderr),
                         (2, "cgprof: --time=\"sometimes\": it is not one of the accepted values; accepted: exact|sample\n"))
        p = subprocess.run([os.path.join(bindir, "cgprof"), "sh", "-c", 'echo "$LD_PRELOAD"'], cwd=self.dir, env=env,
                           capture_output=True, text=True, timeout=cgtest.limit(60))
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
        # clang's, which gcc does not have: hooks only where calls remain
        # after inlining (docs/profiling.md: the truest and fastest build)
        self.assertEqual(self.pkg_config("--variable=clang_cflags"), ["-finstrument-functions-after-inlining"])
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
                           timeout=cgtest.limit(60))
        self.assertIn(".".join(parts), p.stdout + p.stderr)

    def check_linked_profile(self, exe):
        """Runs exe (the runtime linked, not preloaded) and checks its profile."""
        self.assertIn("libcgprof.so", subprocess.run(["readelf", "-d", exe], capture_output=True, text=True,
                                                     timeout=cgtest.limit(60)).stdout)
        env = clean_env(LD_LIBRARY_PATH=self.libdir)
        p = subprocess.run([exe], cwd=self.dir, env=env, capture_output=True, text=True, timeout=cgtest.limit(120))
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
                           timeout=cgtest.limit(120))
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
        p = subprocess.run(["meson", "setup", b, proj], capture_output=True, text=True, env=self.pc_env, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        self.assertIn("Run-time dependency cgprof found: YES", p.stdout)
        p = subprocess.run(["meson", "compile", "-C", b], capture_output=True, text=True, env=self.pc_env, timeout=cgtest.limit(300))
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        self.check_linked_profile(os.path.join(b, "linked"))

    def build_linked(self, compiler, flags_first, as_needed):
        src = os.path.join(self.dir, "linked.c")
        with open(src, "w") as f:
            f.write(LINKED_C)
        exe = os.path.join(self.dir, "linked-%s-%s-%s" % (compiler, flags_first, as_needed))
        flags = self.pkg_config("--cflags", "--libs")
        extra = ["-Wl,--as-needed"] if as_needed else []
        cmd = [compiler, "-O0", "-fno-inline"] + extra
        cmd += (flags + [src] if flags_first else [src] + flags) + ["-o", exe]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, " ".join(cmd) + "\n" + p.stderr)
        return exe

    def test_link_order_and_compilers(self):
        """The flags before the source or after it, gcc and clang, Debian's
        default --as-needed and an explicit one: the runtime is linked, and
        the program profiles itself."""
        compilers = ["gcc"] + (["clang"] if shutil.which("clang") else [])
        for compiler in compilers:
            for flags_first in (True, False):
                for as_needed in (False, True):
                    with self.subTest(compiler=compiler, flags_first=flags_first, as_needed=as_needed):
                        for f in glob.glob(os.path.join(self.dir, "callgrind.*")):
                            os.unlink(f)
                        self.check_linked_profile(self.build_linked(compiler, flags_first, as_needed))
        if "clang" not in compilers:
            self.fail("clang is not installed (scripts/deps.sh installs it): pkg-config's flags must suit it")

    def test_readme_make_lines(self):
        (block,) = readme_blocks("make")
        with open(os.path.join(self.dir, "myprog.c"), "w") as f:
            f.write(LINKED_C)
        with open(os.path.join(self.dir, "Makefile"), "w") as f:
            f.write("CFLAGS = -O0 -fno-inline\n" + block)
        p = subprocess.run(["make", "myprog"], cwd=self.dir, capture_output=True, text=True, env=self.pc_env,
                           timeout=cgtest.limit(120))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.check_linked_profile(os.path.join(self.dir, "myprog"))

    def test_readme_cmake_lines(self):
        if not shutil.which("cmake"):
            self.skipTest("cmake is not installed (scripts/deps.sh installs it)")
        (block,) = readme_blocks("cmake")
        proj = os.path.join(self.dir, "proj")
        os.mkdir(proj)
        with open(os.path.join(proj, "myprog.c"), "w") as f:
            f.write(LINKED_C)
        with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.13)\nproject(uses_cgprof C)\n"
                    "set(CMAKE_C_FLAGS \"-O0 -fno-inline\")\nadd_executable(myprog myprog.c)\n" + block)
        b = os.path.join(self.dir, "b")
        for cmd in (["cmake", "-S", proj, "-B", b], ["cmake", "--build", b]):
            p = subprocess.run(cmd, capture_output=True, text=True, env=self.pc_env, timeout=cgtest.limit(300))
            self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.check_linked_profile(os.path.join(b, "myprog"))

    def launch(self, args):
        return subprocess.run([os.path.join(self.bindir, "cgprof")] + args, cwd=self.dir, env=clean_env(),
                              capture_output=True, text=True, timeout=cgtest.limit(300))

    def test_installed_launcher(self):
        p = self.launch([example("basic")])
        self.assertEqual(p.returncode, 0, p.stderr)
        files = glob.glob(os.path.join(self.dir, "callgrind.out.*"))
        self.assertEqual(len(files), 1)
        self.assertIn("cgprof: 1 file written:\ncgprof:   %s\n" % os.path.basename(files[0]), p.stderr)
        self.assertRegex(p.stderr, r"\ncgprof: +[0-9.]+ +[0-9.]+ +[0-9.]+ +21891  fib  \[basic\.c\]\n")
        # the runtime it preloaded is the installed one, not the build tree's
        p = subprocess.run(["sh", "-c", 'exec "$0" sh -c \'echo "$LD_PRELOAD"\'', os.path.join(self.bindir, "cgprof")],
                           cwd=self.dir, env=clean_env(), capture_output=True, text=True, timeout=cgtest.limit(60))
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


def post_install():
    """scripts/post-install as a module (its name has no .py)."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(cgtest.SOURCE_DIR, "scripts", "post-install")
    loader = importlib.machinery.SourceFileLoader("post_install", path)
    spec = importlib.util.spec_from_loader("post_install", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class PostInstall(unittest.TestCase):
    """What the install does and says, for the directories it cannot be
    tried in (the system's): ldconfig run as root into a directory the
    dynamic linker searches, said to run otherwise; /etc/ld.so.conf read
    with its include lines."""

    def setUp(self):
        self.m = post_install()
        self.dir = tempfile.mkdtemp(prefix="cgprof-postinst-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def test_ld_so_conf_includes(self):
        conf = os.path.join(self.dir, "ld.so.conf")
        os.mkdir(os.path.join(self.dir, "ld.so.conf.d"))
        with open(conf, "w") as f:
            f.write("# comment\n/opt/a/lib\ninclude ld.so.conf.d/*.conf\n")
        with open(os.path.join(self.dir, "ld.so.conf.d", "x.conf"), "w") as f:
            f.write("/usr/local/lib/  # trailing\ninclude %s\n" % conf)   # a loop, followed once
        self.assertEqual(self.m.ld_so_conf_dirs(conf), ["/opt/a/lib", "/usr/local/lib"])

    def test_usr_local_as_root_and_not(self):
        pc_dirs = ["/usr/local/lib/pkgconfig"]
        self.assertEqual(self.m.messages("/usr/local/lib", ["/usr/local/lib"], pc_dirs, True, "/sbin/ldconfig"),
                         [("cgprof: ran ldconfig: programs linked with -lcgprof find /usr/local/lib/libcgprof.so",
                           ["/sbin/ldconfig"])])
        self.assertEqual(self.m.messages("/usr/local/lib", ["/usr/local/lib"], pc_dirs, False, "/sbin/ldconfig"),
                         [("cgprof: run ldconfig as root (sudo ldconfig): until then, a program linked with "
                           "-lcgprof without pkg-config's flags does not find /usr/local/lib/libcgprof.so", None)])

    def test_other_prefix(self):
        self.assertEqual(self.m.messages("/opt/cg/lib", ["/usr/local/lib"], ["/usr/lib/pkgconfig"], True, "ldconfig"),
                         [("cgprof: /opt/cg/lib is not a directory the dynamic linker searches: programs linked with "
                           "$(pkg-config --libs cgprof) find libcgprof.so through the rpath it gives; others need "
                           "LD_LIBRARY_PATH=/opt/cg/lib", None),
                          ("cgprof: pkg-config does not look in /opt/cg/lib/pkgconfig: "
                           "export PKG_CONFIG_PATH=/opt/cg/lib/pkgconfig", None)])


PREFIX_LINE = "prefix=/usr/local"


class ReadmeInstall(unittest.TestCase):
    """docs/install.md's install section run as written (its ```sh blocks, in
    order, in one bash session at the root of a scratch copy of the source
    tree), but for the prefix: a scratch directory, which neither the
    dynamic linker nor pkg-config searches."""

    def test_install_section_runs_as_written(self):
        section = readme_section("Install and pkg-config")
        blocks = [code for _, code in sh_blocks(section)]
        self.assertGreaterEqual(len(blocks), 3, "the install section's blocks: install, use, static")
        self.assertEqual(blocks[0].splitlines().count(PREFIX_LINE), 1,
                         "the install block must set the prefix with a line %r" % PREFIX_LINE)
        for code in blocks:
            self.assertNotRegex(code, r"&&|\|\|", "a command whose failure set -e would miss")
        top = tempfile.mkdtemp(prefix="cgprof-readme-install-")
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        src, prefix, home = (os.path.join(top, d) for d in ("src", "prefix", "home"))
        copy_tree(src)
        os.makedirs(home)
        blocks[0] = blocks[0].replace(PREFIX_LINE, "prefix=" + prefix)
        p = run_as_user(self, blocks, src, home, "docs/install.md's install section")
        libdir = os.path.join(prefix, "lib")

        # setup said what the system does not know (install says it on the
        # terminal, which this test has not: PostInstall checks its lines)
        self.assertRegex(p.stdout, r"\n  Install\n    ldconfig       : not needed: %s is not searched by the dynamic "
                         r"linker; pkg-config's -lcgprof comes with an rpath\n    PKG_CONFIG_PATH: export "
                         r"PKG_CONFIG_PATH=%s/pkgconfig\n" % (re.escape(libdir), re.escape(libdir)))
        # and built nothing of the test suite
        build = os.path.join(src, "build-install")
        # issue 27 (8): without a terminal, the install's lines are kept in
        # the build directory's logs
        with open(os.path.join(build, "meson-logs", "cgprof-post-install.txt")) as f:
            self.assertEqual(f.read(), "cgprof: %s is not a directory the dynamic linker searches: programs linked "
                             "with $(pkg-config --libs cgprof) find libcgprof.so through the rpath it gives; others "
                             "need LD_LIBRARY_PATH=%s\ncgprof: pkg-config does not look in %s/pkgconfig: export "
                             "PKG_CONFIG_PATH=%s/pkgconfig\n" % (libdir, libdir, libdir, libdir))
        self.assertTrue(os.path.isfile(os.path.join(build, "runtime", "libcgprof.so")))
        built_tests = [os.path.relpath(os.path.join(d, f), build)
                       for d, _, files in os.walk(os.path.join(build, "tests")) for f in files
                       if os.access(os.path.join(d, f), os.X_OK) or f.endswith((".so", ".o", ".a"))]
        self.assertEqual(built_tests, [], "meson install built the test suite")
        for f in ("libcgprof.so", "libcgprof.a", "pkgconfig/cgprof.pc"):
            self.assertTrue(os.path.isfile(os.path.join(libdir, f)), f)

        # the linked program: libcgprof.so needed, found through the rpath
        dyn = subprocess.run(["readelf", "-dW", os.path.join(src, "basic")], capture_output=True, text=True,
                             check=True).stdout
        self.assertRegex(dyn, r"\(NEEDED\).*\[libcgprof\.so\]")
        self.assertRegex(dyn, r"\(RUNPATH\).*\[%s\]" % re.escape(libdir))

        # three runs of examples/basic, each its profile with the counts it makes:
        # ./basic, cgprof ./basic, cgprof ./basic-static
        files = sorted(glob.glob(os.path.join(src, "callgrind.out.*")), key=os.path.getmtime)
        self.assertEqual(len(files), 3, files)
        # Built at -O2: the calls the compiler inlined are folded into their
        # callers (the default, CGPROF_INLINED=fold), so each function has
        # at most the calls the source makes, and fib some (gcc inlines it
        # into itself, clang does not; the default throttle may stop
        # counting it: a lower bound, marked >= in the summary); the logical
        # counts, exactly, with CGPROF_INLINED=count and cgtest.PINNED (the
        # exact clock, no throttle: the same binaries run again below).
        expected = EXPECTED["basic"]
        for path in files:
            prof = reader.load(path, strict=True)
            self.assertEqual(prof.violations, [], path)
            counts = cgtest.merged_counts([prof])
            for fn, n in expected["functions"].items():
                self.assertLessEqual(cgtest.incoming(counts, fn), n, (path, fn))
            self.assertGreater(cgtest.incoming(counts, "fib"), 0, path)
        self.assertIn("basic-static", reader.load(files[2]).cmd)
        launched = reader.load(files[1])
        fib = cgtest.incoming(cgtest.merged_counts([launched]), "fib")
        throttled = "fib" in report.throttled_names(launched.desc_value("Throttled"))
        self.assertRegex(p.stderr, r"\ncgprof: +[0-9.]+ +[0-9.]+ +[0-9.]+ +%s%d  fib  \[basic\.c\]\n"
                         % (">=" if throttled else "", fib))
        for exe in ("basic", "basic-static"):
            d = tempfile.mkdtemp(prefix="cgprof-readme-count-", dir=top)
            r = subprocess.run([os.path.join(src, exe)], cwd=d,
                               env=dict(user_env(home), CGPROF_INLINED="count", **cgtest.PINNED),
                               capture_output=True, text=True, timeout=cgtest.limit(120))
            self.assertEqual(r.returncode, 0, r.stderr)
            (path,) = glob.glob(os.path.join(d, "callgrind.out.*"))
            counts = cgtest.merged_counts([reader.load(path, strict=True)])
            for fn, n in expected["functions"].items():
                self.assertEqual(cgtest.incoming(counts, fn), n, (exe, fn))


if __name__ == "__main__":
    unittest.main(verbosity=2)
