"""What cgprof's commands read of an ELF executable: whether it is static
(no PT_INTERP: no dynamic linker runs in it to read LD_PRELOAD) and the
note of the runtime linked into it from libcgprof.a (runtime/entry/static.c: a
PT_NOTE named "cgprof", type 1, the version as its text; strip keeps it).

Both come from the program headers and the note segments, read where they
are rather than the whole file: the launcher asks before every run, and
cgprof-control of every process it lists (it imports little and starts in
milliseconds). ELF64 little-endian only, as the runtime is (x86-64's and
aarch64's): nothing here depends on the machine (e_machine is not read), so
that a profile taken on an ARM server is read on an x86-64 laptop.
Standard library only: struct (cgprof-control does not import typing).

The section headers and symbol tables (dynamic(), defines()) are read
from the whole file, and only when the launcher must tell whether a
program could have called the hooks: after a run that left no file, and
for a static program without the runtime.
"""

from __future__ import annotations

import struct

MAX_PHNUM = 256          # more program headers than any real executable's
MAX_NOTE_SEGMENT = 65536  # bytes of one note segment read at most


class Headers:
    def __init__(self, static: bool, runtime: str | None, interp: str | None = None,
                 needed: list | None = None):
        self.static = static     # no PT_INTERP: no dynamic linker runs in it
        self.runtime = runtime   # the version of the runtime linked in, or None
        self.interp = interp     # the dynamic linker's path (PT_INTERP), or None
        self.needed = needed or []   # its DT_NEEDED names, in order


def notes(data: bytes, off: int = 0, size: int | None = None):
    """(name, type, desc) of the ELF notes in data[off:off + size]."""
    end = len(data) if size is None else off + size
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        name = data[off + 12:off + 12 + namesz].rstrip(b"\0")
        desc_off = off + 12 + ((namesz + 3) & ~3)
        yield name, ntype, data[desc_off:desc_off + descsz]
        off = desc_off + ((descsz + 3) & ~3)


def _program_headers(f):
    """(the program header table, its entry size) of the ELF64
    little-endian file f, or None when it is not one this can read."""
    head = f.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return None
    phoff, = struct.unpack_from("<Q", head, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
    if phentsize < 56 or phnum > MAX_PHNUM:
        return None
    f.seek(phoff)
    return f.read(phentsize * phnum), phentsize


def headers(path: str) -> Headers | None:
    """The Headers of the ELF64 little-endian executable at path; None when
    it is not one this can read (not ELF, unreadable, malformed)."""
    try:
        with open(path, "rb") as f:
            got = _program_headers(f)
            if got is None:
                return None
            table, phentsize = got
            static, runtime, interp, dynamic, loads = True, None, None, None, []
            for k in range(len(table) // phentsize):
                ptype, _flags, off, va, _pa, filesz = struct.unpack_from("<IIQQQQ", table, k * phentsize)
                if ptype == 3:   # PT_INTERP: the dynamic linker runs
                    static = False
                    if filesz <= 4096:
                        f.seek(off)
                        interp = f.read(filesz).rstrip(b"\0").decode("utf-8", "replace")
                elif ptype == 4 and filesz <= MAX_NOTE_SEGMENT:   # PT_NOTE
                    f.seek(off)
                    for name, ntype, desc in notes(f.read(filesz)):
                        if name == b"cgprof" and ntype == 1:
                            runtime = desc.rstrip(b"\0").decode("ascii", "replace")
                elif ptype == 2 and filesz <= MAX_NOTE_SEGMENT:   # PT_DYNAMIC
                    dynamic = (off, filesz)
                elif ptype == 1:   # PT_LOAD: where DT_STRTAB's address is in the file
                    loads.append((va, off, filesz))
            return Headers(static, runtime, interp, _needed(f, dynamic, loads) if dynamic else [])
    except (OSError, struct.error, ValueError, OverflowError):
        return None


def _needed(f, dynamic, loads) -> list:
    """The DT_NEEDED names of the dynamic section at file range dynamic."""
    off, size = dynamic
    f.seek(off)
    data = f.read(size)
    strtab, names = None, []
    for k in range(len(data) // 16):
        tag, val = struct.unpack_from("<qQ", data, k * 16)
        if tag == 0:
            break
        if tag == 5:         # DT_STRTAB, an address
            strtab = val
        elif tag == 1:       # DT_NEEDED, an offset into it
            names.append(val)
    base = None
    for va, foff, filesz in loads:
        if strtab is not None and va <= strtab < va + filesz:
            base = foff + (strtab - va)
    if base is None:
        return []
    out = []
    for n in names:
        f.seek(base + n)
        out.append(f.read(256).split(b"\0", 1)[0].decode("utf-8", "replace"))
    return out


def gnu_build_id(path: str) -> str | None:
    """The GNU build id of the ELF64 little-endian object at path (the
    NT_GNU_BUILD_ID note, type 3 named "GNU", that `ld --build-id` puts in
    a PT_NOTE segment), in hex as `readelf -n` and `file` print it; None
    when it has none or is not an object this can read."""
    try:
        with open(path, "rb") as f:
            got = _program_headers(f)
            if got is None:
                return None
            table, phentsize = got
            for k in range(len(table) // phentsize):
                ptype, _flags, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", table, k * phentsize)
                if ptype == 4 and filesz <= MAX_NOTE_SEGMENT:   # PT_NOTE
                    f.seek(off)
                    for name, ntype, desc in notes(f.read(filesz)):
                        if name == b"GNU" and ntype == 3 and desc:
                            return desc.hex()
    except (OSError, struct.error, ValueError, OverflowError):
        return None
    return None


# ---- sections and symbols: the whole file --------------------------------------

SHT_SYMTAB, SHT_DYNAMIC, SHT_DYNSYM = 2, 6, 11


def _sections(data: bytes) -> list:
    """The section headers of the ELF64 little-endian image data: (name,
    type, flags, addr, offset, size, link, info, align, entsize) each.
    Raises struct.error when the table is beyond data."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum if shoff else 0)]


def _symbols(data: bytes, section: tuple, sections: list):
    """(name's offset in data, section index, st_name) of each symbol of a
    symbol table section: the name is a C string at that offset, none when
    st_name is 0."""
    _n, _t, _f, _a, off, size, link, _i, _al, entsize = section
    strtab = sections[link][4]
    for k in range(size // entsize):
        st_name, _info, _other, shndx = struct.unpack_from("<IBBH", data, off + k * entsize)
        yield strtab + st_name, shndx, st_name


def _cstr(data: bytes, off: int) -> str:
    return data[off:data.index(b"\0", off)].decode("utf-8", "replace")


def dynamic(path: str):
    """(undefined dynamic symbol names, DT_NEEDED, run paths) of the ELF64
    little-endian file at path, from its section headers; None if it is
    not one, cannot be read or is malformed."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return None
        return _dynamic(data)
    except (OSError, struct.error, IndexError, ValueError):
        return None


def _dynamic(data: bytes):
    sections = _sections(data)
    undefined, needed, runpath = set(), [], []
    for section in sections:
        stype, off, size, link, entsize = section[1], section[4], section[5], section[6], section[9]
        if stype == SHT_DYNSYM and entsize:
            for name, shndx, st_name in _symbols(data, section, sections):
                if shndx == 0 and st_name:
                    undefined.add(_cstr(data, name))
        elif stype == SHT_DYNAMIC and entsize:
            strtab = sections[link][4]
            for k in range(size // entsize):
                tag, val = struct.unpack_from("<qQ", data, off + k * entsize)
                if tag == 1:             # DT_NEEDED
                    needed.append(_cstr(data, strtab + val))
                elif tag in (15, 29):    # DT_RPATH, DT_RUNPATH
                    runpath += _cstr(data, strtab + val).split(":")
    return undefined, needed, runpath


def defines(path: str, symbol: str) -> bool | None:
    """Whether the symbol table (.symtab) of the ELF64 little-endian file
    at path defines symbol; None when it has none (stripped) or cannot be
    read or is malformed."""
    want = symbol.encode() + b"\0"
    found = None
    try:
        with open(path, "rb") as f:
            data = f.read()
        sections = _sections(data)
        for section in sections:
            if section[1] == SHT_SYMTAB and section[9]:
                found = False
                for name, shndx, _ in _symbols(data, section, sections):
                    if shndx != 0 and data.startswith(want, name):
                        found = True
                        break
    except (OSError, struct.error, IndexError, ValueError, OverflowError):
        return None
    return found
