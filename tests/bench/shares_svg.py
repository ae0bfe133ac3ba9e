#!/usr/bin/env python3
"""Self-time shares of a program's functions, as perf and cgprof see them,
drawn side by side as an SVG bar chart (the picture in docs/guide.md).

    shares_svg.py --sqlite OUT.svg [--build gcc|clang-ai] [--runs N] [--top N]
    shares_svg.py PERF_REPORT CGPROF_REPORT TITLE OUT.svg [--top N]

The first form makes the picture from scratch: SQLite as realprogs.py and
accuracy.py build it (realbuild.build_sqlite, the same cached builds):
gcc -O2 -g plain and with -finstrument-functions (--build gcc, the
default), or clang -O2 -g plain and with
-finstrument-functions-after-inlining (--build clang-ai). Its SQL workload
is run N times (3) each by perf on the plain build, by perf on the floor
of the instrumented build (tests/bench/floor.py: every hook call jumped
over, the program as if cgprof had taken back all its hook calls), and by
cgprof with its defaults (no CGPROF_* setting but CGPROF_OUT) on the
instrumented build. perf samples user time (`perf record -e cpu-clock:u
-F 4999`), as cgprof's sampling timer counts it; each side's shares are
the mean of its runs'. Three bars per function, perf's top N on the plain
build (10), and in the subtitle the total variation distances (over all
the functions any side names): cgprof against the floor (what cgprof
adds), the floor against the plain build (what the instrumentation
changes), cgprof against the plain build (what a user sees). Printed too.

The second form draws two bars per function from saved reports:
PERF_REPORT the text of `perf report --no-children --sort sym --stdio`
(lines "  23.28%  [.] name"), CGPROF_REPORT that of `cgprof report
--sort=self --top=N` (its table: give a large N).

No dependency but Python: the SVG is written by hand."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape

COLOURS = ("#4e79a7", "#9c9c9c", "#f28e2b")


def perf_shares(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+\[\.\]\s+(\S+)", line)
        if m:
            out[m.group(2)] = out.get(m.group(2), 0.0) + float(m.group(1))
    return out


def cgprof_shares(text):
    rows = {}
    total = None
    for line in text.splitlines():
        m = re.search(r"\(\d+ files?; ([0-9.]+) ms in all threads\)", line)
        if m:
            total = float(m.group(1))
        m = re.match(r"\s*[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+\S+\s+(\S+)", line)
        if m:
            rows[m.group(2)] = rows.get(m.group(2), 0.0) + float(m.group(1))
    if not total:
        total = sum(rows.values()) or 1.0
    return {k: 100.0 * v / total for k, v in rows.items()}


def tvd(a, b):
    keys = set(a) | set(b)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys)


def svg(names, series, title, subtitle):
    """names: the functions, top down; series: [(label, {name: share})]."""
    w, left, bar, gap = 780, 250, 10, 9
    top = 66
    n = len(series)
    h = top + len(names) * (n * bar + gap) + 40
    most = max(max(s.get(k, 0.0) for k in names) for _, s in series) or 1.0
    scale = (w - left - 60) / most
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % escape(title),
           '<text x="10" y="38" fill="#444" font-size="11">%s</text>' % escape(subtitle)]
    x = 10
    for (label, _), col in zip(series, COLOURS):
        out.append('<rect x="%d" y="48" width="10" height="10" fill="%s"/><text x="%d" y="57">%s</text>'
                   % (x, col, x + 14, escape(label)))
        x += 22 + 7 * len(label)
    y = top
    for name in names:
        label = name if len(name) <= 34 else name[:32] + "..."
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, y + n * bar // 2 + 4,
                                                                       escape(label)))
        for k, ((_, s), col) in enumerate(zip(series, COLOURS)):
            v = s.get(name, 0.0)
            yy = y + k * bar
            out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (left, yy, v * scale,
                                                                                   bar - 1, col))
            out.append('<text x="%.1f" y="%d" fill="#333" font-size="9">%.1f%%</text>'
                       % (left + v * scale + 4, yy + bar - 2, v))
        y += n * bar + gap
    out.append('<text x="10" y="%d" fill="#666" font-size="10">self-time shares, each of its own total; '
               'made by tests/bench/shares_svg.py</text>' % (h - 12))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def sqlite_shares(build, runs):
    """(title, [(label, shares)] for perf plain, perf floor, cgprof)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from realbuild import BUILD, LIB, SQLITE_ARGS, SQLITE_SQL, build_sqlite
    if not shutil.which("perf"):
        sys.exit("shares_svg.py: perf is needed (Debian: linux-perf)")
    cc, kind, flag = {"gcc": ("gcc", "instr", "-finstrument-functions"),
                      "clang-ai": ("clang", "ai", "-finstrument-functions-after-inlining")}[build]
    exes, version = build_sqlite([("plain", ["-O2", "-g"]), (kind, ["-O2", "-g", flag])], cc=cc)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    tmp = tempfile.mkdtemp(prefix="shares-svg-")
    try:
        floor = os.path.join(tmp, "sqlite3-floor")
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor.py"),
                        exes[kind], floor], check=True, stdout=subprocess.DEVNULL)
        sql = os.path.join(tmp, "work.sql")
        with open(sql, "w") as f:
            f.write(SQLITE_SQL)

        def perf(exe):
            data = os.path.join(tmp, "perf.data")
            with open(sql) as stdin:
                subprocess.run(["perf", "record", "-q", "-e", "cpu-clock:u", "-F", "4999", "-o", data, "--", exe]
                               + SQLITE_ARGS, stdin=stdin, stdout=subprocess.DEVNULL, env=env, check=True)
            return perf_shares(subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym",
                                               "--stdio"], capture_output=True, text=True, env=env,
                                              check=True).stdout)

        def cgprof(i):
            out = os.path.join(tmp, "cg%d" % i)
            os.makedirs(out)
            with open(sql) as stdin:
                subprocess.run([exes[kind]] + SQLITE_ARGS, stdin=stdin, stdout=subprocess.DEVNULL, check=True,
                               env=dict(env, LD_PRELOAD=LIB, CGPROF_OUT=os.path.join(out, "callgrind.out")))
            return cgprof_shares(subprocess.run([os.path.join(BUILD, "scripts", "cgprof"), "report",
                                                 "--sort=self", "--top=100000", out], capture_output=True,
                                                text=True, env=env, check=True).stdout)

        runs_of = {"plain": [], "floor": [], "cgprof": []}
        for i in range(runs):   # interleaved: a change in the machine's load falls on all three
            runs_of["plain"].append(perf(exes["plain"]))
            runs_of["floor"].append(perf(floor))
            runs_of["cgprof"].append(cgprof(i))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def mean(dicts):
        keys = set().union(*dicts)
        return {k: sum(d.get(k, 0.0) for d in dicts) / len(dicts) for k in keys}

    title = "SQLite %s, %s -O2 %s, %d runs each" % (version, cc, flag, runs)
    return title, [("perf, plain build", mean(runs_of["plain"])),
                   ("perf, floor (hook calls jumped over)", mean(runs_of["floor"])),
                   ("cgprof, its defaults", mean(runs_of["cgprof"]))]


def option(argv, name, default):
    if name in argv:
        i = argv.index(name)
        value = argv[i + 1]
        del argv[i:i + 2]
        return value
    return default


def main(argv):
    argv = list(argv)
    top = int(option(argv, "--top", "10"))
    if len(argv) >= 3 and argv[1] == "--sqlite":
        build = option(argv, "--build", "gcc")
        runs = int(option(argv, "--runs", "3"))
        title, series = sqlite_shares(build, runs)
        plain, floor, cg = (s for _, s in series)
        names = sorted(plain, key=lambda k: -plain[k])[:top]
        sub = ("total variation distance: cgprof/floor %.1f points, floor/plain %.1f, cgprof/plain %.1f"
               % (tvd(cg, floor), tvd(floor, plain), tvd(cg, plain)))
        with open(argv[2], "w") as f:
            f.write(svg(names, series, title, sub))
        for k in names:
            print("%-36s " % k + "  ".join("%s %5.1f%%" % (lbl.split(",")[0] + ("/floor" if "floor" in lbl else ""),
                                                          s.get(k, 0.0)) for lbl, s in series))
        print("%s\n%s; wrote %s" % (title, sub, argv[2]))
        return
    if len(argv) != 5:
        sys.exit(__doc__)
    perf = perf_shares(open(argv[1]).read())
    cg = cgprof_shares(open(argv[2]).read())
    names = sorted(perf, key=lambda k: -perf[k])[:top]
    d = tvd(perf, cg)
    with open(argv[4], "w") as f:
        f.write(svg(names, [("perf", perf), ("cgprof", cg)], argv[3],
                    "total variation distance of all the functions' shares: %.1f points" % d))
    print("TVD %.1f points; wrote %s" % (d, argv[4]))


if __name__ == "__main__":
    main(sys.argv)
