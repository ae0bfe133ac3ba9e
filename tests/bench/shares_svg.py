#!/usr/bin/env python3
"""Self-time shares of a program's functions, as perf and cgprof see them,
drawn side by side as an SVG bar chart (docs/guide.md's picture).

    shares_svg.py PERF_REPORT CGPROF_REPORT TITLE OUT.svg [--top N]
    shares_svg.py --sqlite OUT.svg [--runs N] [--top N]

The second form makes the guide's picture from scratch: SQLite as
realprogs.py builds it (gcc -O2 -g, plain and -finstrument-functions: the
same cached builds), its SQL workload run N times (3) by perf on the plain
build (perf record -e cpu-clock:u -F 4999: user time, as cgprof's sampling
timer counts it) and N times by cgprof with its defaults (no CGPROF_*
setting but CGPROF_OUT) on the instrumented build; each side's shares are
the mean of its runs'.

PERF_REPORT: the text of `perf report --no-children --sort sym --stdio`
(lines "  23.28%  [.] name"); CGPROF_REPORT: the text of `cgprof report
--sort=self --top=N` (its table). Each side's shares are its own (of its
own total); the functions shown are perf's top N, in perf's order, with
cgprof's share of each beside it (0 where cgprof has none), and the total
variation distance over all the functions both name printed in the title
line. No dependency but Python: the SVG is written by hand."""
import re
import sys
from xml.sax.saxutils import escape


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


def svg(rows, title, subtitle):
    w, left, bar, gap = 760, 230, 11, 8
    top = 62
    h = top + len(rows) * (2 * bar + gap) + 40
    scale = (w - left - 60) / max(max(p, c) for _, p, c in rows)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="15" font-weight="bold">%s</text>' % escape(title),
           '<text x="10" y="38" fill="#444">%s</text>' % escape(subtitle),
           '<rect x="%d" y="46" width="10" height="10" fill="#4e79a7"/><text x="%d" y="55">perf</text>'
           % (left, left + 14),
           '<rect x="%d" y="46" width="10" height="10" fill="#f28e2b"/><text x="%d" y="55">cgprof '
           '(its defaults)</text>' % (left + 60, left + 74)]
    y = top
    for name, p, c in rows:
        label = name if len(name) <= 32 else name[:30] + "..."
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, y + bar + 4, escape(label)))
        for k, (v, col) in enumerate(((p, "#4e79a7"), (c, "#f28e2b"))):
            yy = y + k * bar
            out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (left, yy, v * scale,
                                                                                   bar - 1, col))
            out.append('<text x="%.1f" y="%d" fill="#333" font-size="10">%.1f%%</text>' % (left + v * scale + 4,
                                                                                     yy + bar - 2, v))
        y += 2 * bar + gap
    out.append('<text x="10" y="%d" fill="#666" font-size="10">self-time shares, each of its own '
               'total; tests/bench/shares_svg.py</text>' % (h - 12))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def sqlite_shares(runs):
    """(perf's shares, cgprof's shares, a subtitle) of SQLite's workload,
    each the mean over runs."""
    import os
    import shutil
    import subprocess
    import tempfile
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from realbuild import BUILD, LIB, SQLITE_ARGS, SQLITE_SQL, build_sqlite
    if not shutil.which("perf"):
        sys.exit("shares_svg.py: perf is needed (Debian: linux-perf)")
    exes, version = build_sqlite([("plain", ["-O2", "-g"]), ("instr", ["-O2", "-g", "-finstrument-functions"])])
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGPROF_") and k != "LD_PRELOAD"}
    tmp = tempfile.mkdtemp(prefix="shares-svg-")
    sql = os.path.join(tmp, "work.sql")
    with open(sql, "w") as f:
        f.write(SQLITE_SQL)
    cgprof = [os.path.join(BUILD, "scripts", "cgprof")]

    def mean(dicts):
        keys = set().union(*dicts)
        return {k: sum(d.get(k, 0.0) for d in dicts) / len(dicts) for k in keys}

    perf, cg = [], []
    try:
        for i in range(runs):
            data = os.path.join(tmp, "perf.data")
            with open(sql) as stdin:
                subprocess.run(["perf", "record", "-q", "-e", "cpu-clock:u", "-F", "4999", "-o", data, "--",
                                exes["plain"]] + SQLITE_ARGS, stdin=stdin, stdout=subprocess.DEVNULL, env=env,
                               check=True)
            rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "--stdio"],
                                 capture_output=True, text=True, env=env, check=True).stdout
            perf.append(perf_shares(rep))
            out = os.path.join(tmp, "cg%d" % i)
            os.makedirs(out)
            with open(sql) as stdin:
                subprocess.run([exes["instr"]] + SQLITE_ARGS, stdin=stdin, stdout=subprocess.DEVNULL, check=True,
                               env=dict(env, LD_PRELOAD=LIB, CGPROF_OUT=os.path.join(out, "callgrind.out")))
            rep = subprocess.run(cgprof + ["report", "--sort=self", "--top=100000", out], capture_output=True,
                                 text=True, env=env, check=True).stdout
            cg.append(cgprof_shares(rep))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return mean(perf), mean(cg), ("SQLite %s (gcc -O2), %d runs each: perf on the plain build, "
                                  "cgprof on the instrumented build" % (version, runs))


def main(argv):
    top = 10
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if len(argv) >= 3 and argv[1] == "--sqlite":
        runs = 3
        if "--runs" in argv:
            i = argv.index("--runs")
            runs = int(argv[i + 1])
            argv = argv[:i] + argv[i + 2:]
        perf, cg, title = sqlite_shares(runs)
        rows = [(k, perf[k], cg.get(k, 0.0)) for k in sorted(perf, key=lambda k: -perf[k])[:top]]
        d = tvd(perf, cg)
        with open(argv[2], "w") as f:
            f.write(svg(rows, title, "total variation distance of all the functions' shares: %.1f points" % d))
        for k, p, c in rows:
            print("%-36s perf %5.1f%%  cgprof %5.1f%%" % (k, p, c))
        print("TVD %.1f points; wrote %s" % (d, argv[2]))
        return
    if len(argv) != 5:
        sys.exit(__doc__)
    perf = perf_shares(open(argv[1]).read())
    cg = cgprof_shares(open(argv[2]).read())
    order = sorted(perf, key=lambda k: -perf[k])[:top]
    rows = [(k, perf[k], cg.get(k, 0.0)) for k in order]
    d = tvd(perf, cg)
    with open(argv[4], "w") as f:
        f.write(svg(rows, argv[3], "total variation distance of the shares: %.1f points" % d))
    print("TVD %.1f points; wrote %s" % (d, argv[4]))


if __name__ == "__main__":
    main(sys.argv)
