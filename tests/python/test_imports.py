"""cgproflib's modules import each other without a circle: each module
reads as built on the ones it imports, and none is half-initialised when
another runs its top level. Imports inside functions count: a lazy import
hides a circle from the interpreter, not from a reader. The graph is
computed from the modules' syntax (ast), so that a module imported only in
a rarely taken branch is found as well."""

import ast
import os
import tempfile
import unittest

import cgproflib

PACKAGE = os.path.dirname(cgproflib.__file__)


def imports_of(directory, package="cgproflib"):
    """{module: {modules of the same package it imports anywhere in its
    text}} for the .py files of directory."""
    modules = {n[:-3] for n in os.listdir(directory) if n.endswith(".py")}
    graph = {}
    for m in sorted(modules):
        with open(os.path.join(directory, m + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read(), m + ".py")
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:
                    out.add(node.module.split(".")[0])
                elif node.level == 1:
                    out.update(a.name for a in node.names)
                elif node.level == 0 and node.module and node.module.split(".")[0] == package:
                    rest = node.module.split(".")[1:]
                    out.update(rest[:1] or [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    if parts[0] == package and len(parts) > 1:
                        out.add(parts[1])
        graph[m] = {n for n in out if n in modules and n != m}
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan),
    each sorted: [] when the graph has no circle."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


class NoCircle(unittest.TestCase):
    def test_the_package_has_none(self):
        graph = imports_of(PACKAGE)
        # the graph is the package's: a reader that found no edge at all
        # would find no circle either
        self.assertIn("paths", graph["report"])
        self.assertIn("flamehtml", graph["flame"])
        self.assertEqual(circles(graph), [], {m: sorted(d) for m, d in graph.items()})

    def test_a_planted_circle_is_found(self):
        # the package's own modules, with one lazy import down-up planted:
        # paths (imported by report) importing report inside a function
        with tempfile.TemporaryDirectory() as d:
            for n in os.listdir(PACKAGE):
                if n.endswith(".py"):
                    with open(os.path.join(PACKAGE, n), encoding="utf-8") as f:
                        text = f.read()
                    if n == "paths.py":
                        text += "\n\ndef _planted():\n    from . import report\n    return report.Units\n"
                    with open(os.path.join(d, n), "w", encoding="utf-8") as f:
                        f.write(text)
            found = circles(imports_of(d))
        self.assertEqual(len(found), 1, found)
        self.assertIn("paths", found[0])
        self.assertIn("report", found[0])

    def test_absolute_and_dotted_imports_count(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("a.py", "import cgproflib.b\n"), ("b.py", "def f():\n    from .c import x\n"),
                               ("c.py", "from cgproflib import a\nx = 1\n")):
                with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                    f.write(text)
            self.assertEqual(circles(imports_of(d)), [["a", "b", "c"]])


if __name__ == "__main__":
    unittest.main()
