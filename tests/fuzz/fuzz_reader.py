#!/usr/bin/env python3
"""Mutation fuzzer for the format reader, cgproflib.reader.

The reader is Python, which libFuzzer cannot drive (and atheris is not in
Debian), so this is a small fuzzer of its own: it mutates seed files (the
specification's examples, plus any files named on the command line: real
cgprof and Valgrind output) line- and byte-wise with the format's own
tokens, and feeds every mutant to the reader, strict and not. The reader must
always answer with a model and a list of violations: any other exception is
a bug, saved as crash-reader-<n>.txt, and the run fails.

    fuzz_reader.py [--seconds S] [--seed N] [FILE...]

with build/python on PYTHONPATH (scripts/fuzz sets it).
"""

import argparse
import random
import sys
import time
import traceback

from cgproflib import reader

SEEDS = [
    "# callgrind format\nevents: Cycles Instructions Flops\nfl=file.f\nfn=main\n15 90 14 2\n16 20 12\n",
    "# callgrind format\nevents: Instructions\n\nfl=(1) file1.c\nfn=(1) main\n16 20\ncfn=(2) func1\n"
    "calls=1 50\n16 400\ncfi=(2) file2.c\ncfn=(3) func2\ncalls=3 20\n16 400\n\nfn=(2)\n51 100\ncfi=(2)\n"
    "cfn=(3)\ncalls=2 20\n51 300\n\nfl=(2)\nfn=(3)\n20 700\n",
    "# callgrind format\npositions: instr line\nevents: ticks\n\nfn=func\n0x80001234 90 1\n+3 * 5\n+1 +1 6\n",
    "# callgrind format\nversion: 1\ncreator: cgprof-0.1.0\npid: 1\nthread: 1\npart: 1\ncmd: x\n"
    "desc: Trigger: Program termination\npositions: instr line\nevent: ns : Wall-clock time\nevents: ns\n"
    "summary: 30\n\nob=(1) /a\nfl=(1) /a.c\nfn=(1) main\n0x10 3 10\ncfn=(2) f\ncalls=2 0x20 5\n+4 * 20\n\n"
    "fn=(2)\n0x20 5 20\n\ntotals: 30\n",
]

TOKENS = ["calls=", "fn=", "cfn=", "fl=", "fi=", "fe=", "cfi=", "cfl=", "ob=", "cob=", "jump=", "jcnd=",
          "(1)", "(2) name", "(", ")", "+", "-", "*", "0x", "0xffffffffffffffffff", "18446744073709551616",
          "-1", " ", "\t", "\n", "\r", ":", "=", "events:", "positions:", "totals:", "summary:", "version:",
          "event:", "desc:", "instr", "line", "# callgrind format", "\x00", "\u00e9", "9" * 30]


def mutate(rng, text):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines:
            del lines[i]
        elif op == 1 and lines:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 2 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3 and lines:
            s = lines[i]
            k = rng.randint(0, len(s))
            lines[i] = s[:k] + rng.choice(TOKENS) + s[k:]
        elif op == 4 and lines and lines[i]:
            s = lines[i]
            k = rng.randrange(len(s))
            lines[i] = s[:k] + chr(rng.randrange(32, 127)) + s[k + 1:]
        elif op == 5 and lines and lines[i]:
            s = lines[i]
            k = rng.randrange(len(s))
            lines[i] = s[:k] + s[k + rng.randint(1, 5):]
        else:
            lines.insert(i, " ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 4))))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    seeds = list(SEEDS)
    for f in a.files:
        with open(f, errors="replace") as fh:
            seeds.append(fh.read())
    rng = random.Random(a.seed)
    end = time.monotonic() + a.seconds
    runs = crashes = 0
    while time.monotonic() < end:
        text = mutate(rng, rng.choice(seeds))
        for strict in (False, True):
            try:
                prof = reader.loads(text, strict=strict)
                assert isinstance(prof.violations, list)
            except Exception:
                crashes += 1
                name = "crash-reader-%d.txt" % crashes
                with open(name, "w") as fh:
                    fh.write(text)
                print("reader raised on %s (seed %d):" % (name, a.seed))
                traceback.print_exc()
        runs += 1
        if crashes >= 5:
            break
    print("fuzz_reader: %d mutants, %d crashes (seed %d)" % (runs, crashes, a.seed))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
