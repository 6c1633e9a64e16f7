#!/usr/bin/env python3
"""Sets the compilation folder (DW_AT_comp_dir) that NASM writes into an ELF64
object's DWARF to "." (docs/architecture.md, "Reproducible builds").

NASM 2.16 records the absolute folder of the source file, resolved
(realpath), and has no option like GCC's -ffile-prefix-map to map it away; the
kernel's debug information then names the folder it was built in. The source
names NASM records (DW_AT_name, the line table's file) are the paths given to
it, relative to the top of the tree where the Makefile runs it, so "." is the
folder they are relative to, as GCC's objects say with -ffile-prefix-map=$(CURDIR)=.

The object is rewritten in place: the string in its compilation unit (DWARF 3,
7.5.4: DW_FORM_string, inline) replaced and the unit's length with it, the
sections from .debug_info on laid out again, and the .debug_info
relocations past the string moved by the difference. (objcopy
--update-section drops a section's relocations, so it cannot do this.)
Anything not as NASM writes it (not one compilation unit, another form) is
refused: one line, exit status 1, the object left as it was.

    scripts/dwarf_comp_dir.py OBJECT
"""

from __future__ import annotations

import os
import struct
import sys

NEW_DIR = b"."
DW_AT_COMP_DIR = 0x1B
SHT_NOBITS = 8
# form -> size in a 64-bit DWARF 2-4 unit of the 32-bit format; None: a string
FORM_SIZES = {0x01: 8, 0x05: 2, 0x06: 4, 0x07: 8, 0x08: None, 0x0B: 1, 0x0C: 1, 0x0E: 4, 0x17: 4}


class Refused(Exception):
    pass


def uleb(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def sections(elf: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (header offset, file offset, size), from an ELF64 little-endian file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise Refused("not a little-endian ELF64 object")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    hdr = lambda i: struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)  # noqa: E731
    strtab = hdr(shstrndx)
    out = {}
    for i in range(shnum):
        h = hdr(i)
        start = strtab[4] + h[0]
        name = elf[start:elf.index(b"\0", start)].decode()
        out[name] = (shoff + i * shentsize, h[4], h[5])
    return out


def _type(elf: bytes, hdr_at: int) -> int:
    return struct.unpack_from("<I", elf, hdr_at + 4)[0]


def comp_dir_span(info: bytes, abbrev: bytes) -> tuple[int, int]:
    """(start, end) of the comp_dir string, its NUL included, in .debug_info."""
    length, version, abbrev_off, addr_size = struct.unpack_from("<IHIB", info, 0)
    if length + 4 != len(info) or length >= 0xFFFFFFF0 or not 2 <= version <= 4 or addr_size != 8:
        raise Refused(f"not one DWARF 2-4 compilation unit (length {length:#x}, version {version})")
    code, pos = uleb(info, 11)
    # find the abbreviation for the unit's first entry
    a = abbrev_off
    while True:
        acode, a = uleb(abbrev, a)
        if acode == 0:
            raise Refused(f"no abbreviation {code}")
        _tag, a = uleb(abbrev, a)
        a += 1  # children flag
        attrs = []
        while True:
            name, a = uleb(abbrev, a)
            form, a = uleb(abbrev, a)
            if name == 0 and form == 0:
                break
            attrs.append((name, form))
        if acode == code:
            break
    for name, form in attrs:
        if form not in FORM_SIZES:
            raise Refused(f"attribute {name:#x} has form {form:#x}, which this script does not read")
        size = FORM_SIZES[form]
        end = info.index(b"\0", pos) + 1 if size is None else pos + size
        if name == DW_AT_COMP_DIR:
            if size is not None:
                raise Refused(f"DW_AT_comp_dir has form {form:#x}, not an inline string")
            return pos, end
        pos = end
    raise Refused("the compilation unit has no DW_AT_comp_dir")


def rewrite(path: str) -> None:
    with open(path, "rb") as f:
        elf = f.read()
    secs = sections(elf)
    for need in (".debug_info", ".debug_abbrev"):
        if need not in secs:
            raise Refused(f"no {need} section (assembled without -g?)")
    _, off, size = secs[".debug_info"]
    if size == 0:  # no code, no unit (boot/multiboot_header.asm)
        return
    info = elf[off:off + size]
    _, aoff, asize = secs[".debug_abbrev"]
    start, end = comp_dir_span(info, elf[aoff:aoff + asize])
    new_info = bytearray(info[:start] + NEW_DIR + b"\0" + info[end:])
    delta = len(new_info) - len(info)
    if delta == 0 and info[start:end] == NEW_DIR + b"\0":
        return
    struct.pack_into("<I", new_info, 0, len(new_info) - 4)
    # .debug_info and every section after it laid out again, each from a
    # 16-byte boundary as NASM places them, so that the file depends on the
    # contents only (the section headers, at the top, are patched in place)
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    if shoff > off:
        raise Refused("the section headers follow the sections")
    info_hdr = secs[".debug_info"][0]
    fixed = bytearray(elf[:off])
    for hdr_at, s_off, s_size in sorted((h for h in secs.values() if h[1] >= off), key=lambda h: (h[1], h[0])):
        fixed += bytes(-len(fixed) % 16)
        body = new_info if hdr_at == info_hdr else b"" if _type(elf, hdr_at) == SHT_NOBITS else elf[s_off:s_off + s_size]
        struct.pack_into("<Q", fixed, hdr_at + 24, len(fixed))  # sh_offset
        if hdr_at == info_hdr:
            struct.pack_into("<Q", fixed, hdr_at + 32, len(new_info))  # sh_size
        fixed += body
    secs = sections(bytes(fixed))
    # the relocations of .debug_info (Elf64_Rela, 24 bytes each) past the string move with it
    if ".rela.debug_info" in secs:
        _, roff, rsize = secs[".rela.debug_info"]
        for r_at in range(roff, roff + rsize, 24):
            r_offset, = struct.unpack_from("<Q", fixed, r_at)
            if r_offset >= end:
                struct.pack_into("<Q", fixed, r_at, r_offset + delta)
            elif r_offset >= start:
                raise Refused("a relocation inside DW_AT_comp_dir")
    tmp_path = path + ".tmp"
    with open(tmp_path, "wb") as f:
        f.write(fixed)
    os.replace(tmp_path, path)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: dwarf_comp_dir.py OBJECT", file=sys.stderr)
        return 2
    try:
        rewrite(argv[1])
    except (Refused, OSError, struct.error, ValueError, IndexError) as e:
        print(f"dwarf_comp_dir.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
