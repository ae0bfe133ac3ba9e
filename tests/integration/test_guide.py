"""docs/guide.md runs as written: its ```sh blocks, in order, in one bash
session started at the root of a scratch copy of the source tree, with a
scratch $HOME (the guide installs cgprof under $HOME/.local), as a user who
follows it from the top would type them. A command that fails fails the
test, naming the block. Blocks whose first line is
"# (not run by the tests: <why>)" are left out (KCachegrind needs a
display).

CGPROF_GUIDE_TRANSCRIPT=FILE keeps what the blocks printed, block by block
(the guide's outputs are taken from such a run)."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import cgtest

SOURCE_DIR = os.environ.get("CGPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
GUIDE = os.path.join(SOURCE_DIR, "docs", "guide.md")
NOT_RUN = "# (not run by the tests:"
TOOLS = ("bash", "meson", "ninja", "pkg-config", "gcc", "clang", "callgrind_annotate")


def sh_blocks(text):
    """[(line number, code)] of the ```sh blocks at the start of a line."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].rstrip() == "```sh":
            start = i + 1
            j = start
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            if j == len(lines):
                raise AssertionError("guide.md:%d: ```sh block never closed" % (i + 1))
            blocks.append((start + 1, "\n".join(lines[start:j])))
            i = j
        i += 1
    return blocks


def runnable(blocks):
    return [(n, code) for n, code in blocks if not code.lstrip().startswith(NOT_RUN)]


# The guide's `sleep 1`, a pause a user makes while a program gets
# somewhere (a server starting, a dump written: milliseconds on an idle
# machine), lasts as long as the tests' other limits do (cgtest.limit).
SCALED_SLEEP = ("sleep() { command sleep \"$(awk -v s=\"$1\" 'BEGIN { print s * %s }')\"; }"
                % cgtest.limit(1))


def script(blocks):
    """One bash script: every command checked (set -e), each block announced
    on both outputs so that a failure can be placed."""
    out = ["set -e -o pipefail", SCALED_SLEEP]
    for k, (n, code) in enumerate(blocks, 1):
        out.append("echo '@@guide block %d (docs/guide.md:%d)@@'; echo '@@guide block %d@@' >&2" % (k, n, k))
        out.append(code)
    out.append("echo '@@guide done@@'")
    return "\n".join(out) + "\n"


def copy_tree(dst):
    """The source tree without build directories, .git or what the guide's
    own commands create."""
    def ignore(directory, names):
        if os.path.abspath(directory) == os.path.abspath(SOURCE_DIR):
            return [n for n in names if n.startswith("build") or n == ".git" or n in ("walk", "server-run", "inline")]
        return [n for n in names if n == "__pycache__"]
    shutil.copytree(SOURCE_DIR, dst, ignore=ignore, symlinks=True)


# The scratch copies' builds (the README's, the guide's, docs/install.md's,
# each from nothing, as a newcomer's) share one compiler cache: meson puts
# ccache before the compiler when it finds it (Debian's ccache, which
# scripts/test installs), and the copies compile the same sources with the
# same relative paths, so the first build's objects serve the others. The
# cache ignores the directory compiled in (CCACHE_NOHASHDIR), which only
# names the copy that compiled an object in its debug information.
SCRATCH_CCACHE = {"CCACHE_DIR": os.path.join(cgtest.BUILD_DIR, "scratch-ccache"), "CCACHE_NOHASHDIR": "1"}


def user_env(home):
    """The environment a user runs the commands in: the runtime's own
    defaults, nothing pinned, no build's paths inherited; the scratch
    builds' shared compiler cache."""
    env = {k: v for k, v in cgtest.clean_environ(pinned=False).items()
           if not k.startswith(("MESON", "PKG_CONFIG", "CCACHE")) and k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(HOME=home, LC_ALL="C.UTF-8", **SCRATCH_CCACHE)
    return env


def run_as_user(test, blocks, cwd, home, what):
    """Shell blocks in one bash session, every command checked, each block
    announced on both outputs (@@block K@@), in user_env(home). Fails the
    test, with the output's end, unless all succeed."""
    script = "set -e -o pipefail\n" + "".join(
        "echo '@@block %d@@'; echo '@@block %d@@' >&2\n%s\n" % (k, k, code) for k, code in enumerate(blocks))
    p = subprocess.run(["bash", "-c", script], cwd=cwd, env=user_env(home), capture_output=True, text=True,
                       timeout=cgtest.limit(540))
    test.assertEqual(p.returncode, 0, "%s failed; its output:\n%s\n-- stderr:\n%s"
                     % (what, p.stdout[-4000:], p.stderr[-4000:]))
    return p


class GuideBlocks(unittest.TestCase):
    """The extraction itself, on the real guide and on made-up text."""

    def test_extraction(self):
        text = "x\n```sh\na\nb\n```\n```\nout\n```\n```sh\n%s needs a display)\nk\n```\n" % NOT_RUN
        blocks = sh_blocks(text)
        self.assertEqual([c for _, c in blocks], ["a\nb", "%s needs a display)\nk" % NOT_RUN])
        self.assertEqual([c for _, c in runnable(blocks)], ["a\nb"])
        self.assertEqual(blocks[0][0], 3)

    def test_guide_has_blocks(self):
        with open(GUIDE, encoding="utf-8") as f:
            blocks = sh_blocks(f.read())
        run = runnable(blocks)
        self.assertGreaterEqual(len(run), 10, "the guide has fewer runnable blocks than expected")
        self.assertLessEqual(len(blocks) - len(run), 3, "too many blocks left out of the test")
        for n, code in blocks:
            if code.lstrip().startswith(NOT_RUN):
                self.assertRegex(code.lstrip().split("\n")[0], r"not run by the tests: \S.*\)$",
                                 "guide.md:%d: say why the block is not run" % n)

    def test_every_command_checked(self):
        # set -e does not stop at a failure before the last command of an
        # && or || list: the guide writes one command a line instead.
        with open(GUIDE, encoding="utf-8") as f:
            for n, code in runnable(sh_blocks(f.read())):
                body = re.sub(r"<<'EOF'\n.*?\nEOF\n", "<<'EOF'\n", code + "\n", flags=re.S)
                self.assertNotRegex(body, r"&&|\|\|", "guide.md:%d: a command whose failure set -e would miss" % n)


class GuideRuns(unittest.TestCase):
    def test_commands_run_as_written(self):
        missing = [t for t in TOOLS if not shutil.which(t)]
        if missing:
            self.skipTest("not installed: " + " ".join(missing))
        with open(GUIDE, encoding="utf-8") as f:
            blocks = runnable(sh_blocks(f.read()))
        top = tempfile.mkdtemp(prefix="cgprof-guide-")
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        src, home = os.path.join(top, "cgprof"), os.path.join(top, "home")
        copy_tree(src)
        os.makedirs(home)
        # as a user runs them: the runtime's own defaults, nothing pinned
        env = user_env(home)
        # Outputs to files, not pipes: a program a block left running (the
        # server, if a later block fails) would hold a pipe open. Its own
        # session, so that whatever is left is stopped with it.
        outf = open(os.path.join(top, "stdout"), "w+", encoding="utf-8")
        errf = open(os.path.join(top, "stderr"), "w+", encoding="utf-8")
        self.addCleanup(outf.close)
        self.addCleanup(errf.close)
        p = subprocess.Popen(["bash", "-c", script(blocks)], cwd=src, env=env, stdout=outf, stderr=errf,
                             text=True, start_new_session=True)
        try:
            p.wait(timeout=cgtest.limit(240))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            self.fail("the guide's commands took over 240 s")
        finally:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        outf.seek(0)
        errf.seek(0)
        out, err = outf.read(), errf.read()
        transcript = os.environ.get("CGPROF_GUIDE_TRANSCRIPT")
        if transcript:
            with open(transcript, "w", encoding="utf-8") as f:
                f.write("== stdout\n" + out + "\n== stderr\n" + err)
        last = re.findall(r"@@guide block (\d+) \(docs/guide.md:(\d+)\)@@", out)
        where = "block %s at docs/guide.md:%s" % last[-1] if last else "before the first block"
        self.assertEqual(p.returncode, 0, "the guide's %s failed (status %d); its output:\n%s\n-- stderr:\n%s"
                         % (where, p.returncode, out.rsplit("@@", 1)[-1][-3000:], err.rsplit("@@", 1)[-1][-3000:]))
        self.assertIn("@@guide done@@", out)
        self.assertEqual(len(last), len(blocks))


if __name__ == "__main__":
    unittest.main(verbosity=2)
