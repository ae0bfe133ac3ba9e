#!/usr/bin/env python3
"""Writes a synthetic Callgrind file as cgprof writes them (name
compression, "positions: instr line", relative subpositions, fi=, cfi=,
recursive arcs), about MB megabytes, for timing `cgprof report` on a big
profile (docs/cgprof-report.md). Deterministic (seeded):
the same arguments give the same file. The strict reader accepts it
(python3 -m cgproflib.reader --strict FILE).

    gen_profile.py FILE MB [SEED]"""
import random
import sys


def generate(path, megabytes, seed=1):
    rng = random.Random(seed)
    target = int(megabytes * 1e6)
    nfiles = 1000
    out = []
    size = 0
    total = 0
    defined_fl, defined_fn = set(), {}
    n = max(8, target // 330)          # about 330 bytes a function

    def fl_ref(k):
        if k in defined_fl:
            return "(%d)" % (k + 1)
        defined_fl.add(k)
        return "(%d) /src/mod%d.c" % (k + 1, k)

    def fn_ref(i):
        if i in defined_fn:
            return "(%d)" % (i + 1)
        defined_fn[i] = i % nfiles
        return "(%d) f%d" % (i + 1, i)

    body = []
    for i in range(n):
        k = i % nfiles
        blk = ["fl=" + fl_ref(k), "fn=" + fn_ref(i)]
        addr, line = 0x1000 + 64 * i, 10 + i // nfiles
        blk.append("0x%x %d %d" % (addr, line, c := rng.randrange(1, 100000)))
        total += c
        for _ in range(5):
            c = rng.randrange(1, 100000)
            total += c
            blk.append("+%d %s %d" % (rng.randrange(1, 9), rng.choice(("+1", "*", "+2")), c))
        if i % 7 == 0:
            # an inlined body from a header: fi= then back to the fl= file
            blk.append("fi=" + fl_ref((k + 1) % nfiles))
            c = rng.randrange(1, 1000)
            total += c
            blk.append("+3 +1 %d" % c)
            blk.append("fe=" + fl_ref(k))
        for j in [rng.randrange(n) for _ in range(4)] + ([i] if i % 5 == 0 else []):
            callee_file = j % nfiles
            if callee_file != k:
                blk.append("cfi=" + fl_ref(callee_file))
            blk.append("cfn=" + fn_ref(j))
            blk.append("calls=%d 0x%x %d" % (rng.randrange(1, 1000), 0x1000 + 64 * j, 10 + j // nfiles))
            blk.append("+%d * %d" % (rng.randrange(1, 9), rng.randrange(1, 10 ** 7)))
        text = "\n".join(blk) + "\n\n"
        body.append(text)
        size += len(text)
        if size >= target:
            break
    header = ("# callgrind format\nversion: 1\ncreator: gen_profile.py\npid: 4242\nthread: 1\npart: 1\n"
              "cmd: synthetic\ndesc: Trigger: Program termination\npositions: instr line\n"
              "event: ns : Wall-clock time (nanoseconds)\nevents: ns\nsummary: %d\n\nob=(1) /bin/big\n" % total)
    with open(path, "w") as f:
        f.write(header)
        f.writelines(body)
        f.write("totals: %d\n" % total)


if __name__ == "__main__":
    generate(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
