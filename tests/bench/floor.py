#!/usr/bin/env python3
"""The floor of an instrumented build: a copy of the binary with every hook
call jumped over, as if the runtime had taken back every one of them.

    floor.py INPUT OUTPUT

Each call of __cyg_profile_func_enter/_exit (through the PLT, `e8 rel32`,
or its GOT slot, `ff 15 disp32` with -fno-plt) becomes a nop of the same
length, and each tail jump to the exit hook (`e9 rel32`, `ff 25 disp32`) a
`ret` (the hook's own return). The instructions are found by objdump's
disassembly of the file, not by a byte scan. What the copy costs over the
plain build is what the instrumentation costs by itself (the prologues
that keep the function's address and call site alive, the calls the
compiler treated as calls): the floor no runtime can go below
(scripts/bench, tests/bench/accuracy.py). Prints the number of sites
changed; exit status 1 when there were none."""
import re
import shutil
import subprocess
import sys

NOP5 = bytes.fromhex("0f1f440000")
NOP6 = bytes.fromhex("660f1f440000")
HOOK = re.compile(r"<__cyg_profile_func_(enter|exit)(@plt)?>|# [0-9a-f]+ <__cyg_profile_func_(enter|exit)@")


def sections(path):
    """(vma, file offset, size) of each section, for addresses -> file offsets."""
    out = subprocess.run(["objdump", "-h", "-w", path], capture_output=True, text=True, check=True).stdout
    res = []
    for line in out.splitlines():
        t = line.split()
        if len(t) >= 6 and t[0].isdigit():
            res.append((int(t[3], 16), int(t[5], 16), int(t[2], 16)))
    return res


def offset_of(secs, vma):
    for addr, off, size in secs:
        if addr <= vma < addr + size:
            return off + vma - addr
    raise ValueError("address %#x in no section" % vma)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    src, dst = argv[1:]
    dis = subprocess.run(["objdump", "-d", "-w", src], capture_output=True, text=True, check=True).stdout
    secs = sections(src)
    shutil.copyfile(src, dst)
    shutil.copymode(src, dst)
    n = 0
    with open(dst, "r+b") as f:
        for line in dis.splitlines():
            m = re.match(r"\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S+)", line)
            if not m or not HOOK.search(line):
                continue
            addr, raw, op = int(m.group(1), 16), bytes.fromhex(m.group(2).replace(" ", "")), m.group(3)
            if op.startswith("call") and raw[:1] == b"\xe8" and len(raw) == 5:
                new = NOP5
            elif op.startswith("call") and raw[:2] == b"\xff\x15" and len(raw) == 6:
                new = NOP6
            elif op.startswith("jmp") and raw[:1] == b"\xe9" and len(raw) == 5:
                new = b"\xc3" + raw[1:]
            elif op.startswith("jmp") and raw[:2] == b"\xff\x25" and len(raw) == 6:
                new = b"\xc3" + raw[1:]
            else:
                continue  # a PLT entry's own jump, or a form not known: left
            f.seek(offset_of(secs, addr))
            f.write(new)
            n += 1
    print(n)
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
