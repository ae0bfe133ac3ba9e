"""What cgprof's commands read of an ELF executable: whether it is static
(no PT_INTERP: no dynamic linker runs in it to read LD_PRELOAD) and the
note of the runtime linked into it from libcgprof.a (runtime/static.c: a
PT_NOTE named "cgprof", type 1, the version as its text; strip keeps it).

Both come from the program headers and the note segments, read where they
are rather than the whole file: the launcher asks before every run, and
cgprof-control of every process it lists (it imports little and starts in
milliseconds). ELF64 little-endian only, as the runtime is x86-64's.
Standard library only: struct (cgprof-control does not import typing).
"""

from __future__ import annotations

import struct

MAX_PHNUM = 256          # more program headers than any real executable's
MAX_NOTE_SEGMENT = 65536  # bytes of one note segment read at most


class Headers:
    def __init__(self, static: bool, runtime: str | None):
        self.static = static     # no PT_INTERP: no dynamic linker runs in it
        self.runtime = runtime   # the version of the runtime linked in, or None


def notes(data: bytes, off: int = 0, size: int | None = None):
    """(name, type, desc) of the ELF notes in data[off:off + size]."""
    end = len(data) if size is None else off + size
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        name = data[off + 12:off + 12 + namesz].rstrip(b"\0")
        desc_off = off + 12 + ((namesz + 3) & ~3)
        yield name, ntype, data[desc_off:desc_off + descsz]
        off = desc_off + ((descsz + 3) & ~3)


def headers(path: str) -> Headers | None:
    """The Headers of the ELF64 little-endian executable at path; None when
    it is not one this can read (not ELF, unreadable, malformed)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            if phentsize < 56 or phnum > MAX_PHNUM:
                return None
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            static, runtime = True, None
            for k in range(len(table) // phentsize):
                ptype, _flags, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", table, k * phentsize)
                if ptype == 3:   # PT_INTERP: the dynamic linker runs
                    static = False
                elif ptype == 4 and filesz <= MAX_NOTE_SEGMENT:   # PT_NOTE
                    f.seek(off)
                    for name, ntype, desc in notes(f.read(filesz)):
                        if name == b"cgprof" and ntype == 1:
                            runtime = desc.rstrip(b"\0").decode("ascii", "replace")
            return Headers(static, runtime)
    except (OSError, struct.error, ValueError, OverflowError):
        return None
