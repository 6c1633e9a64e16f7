#!/usr/bin/env python3
"""Makes a .NET assembly that Mono's mcs wrote reproducible: mcs (6.8) has no
-deterministic and writes a random module version id (MVID, ECMA-335
II.22.30: the Module table's Mvid, a GUID in the #GUID heap), so two builds
of one source differ in those 16 bytes alone. This sets the MVID to the
first 16 bytes of the SHA-256 of the file with the MVID zeroed, as Roslyn's
/deterministic derives it from the content, so the bundle and the release
that carries it rebuild bit for bit.

    scripts/pe_mvid.py ASSEMBLY   (rewritten in place)

The layout, from ECMA-335 II.25 (PE file format) and II.24.2 (metadata):
the CLI header is data directory 14 of the PE optional header; its
MetaData RVA leads to the metadata root, whose stream headers name #GUID;
the Module table's one row takes the first GUID (index 1), as mcs writes it.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from pathlib import Path


class NotAnAssembly(Exception):
    pass


def _file_offset(data: bytes, sections: list[tuple[int, int, int]], rva: int) -> int:
    for virtual, size, raw in sections:
        if virtual <= rva < virtual + size:
            return raw + rva - virtual
    raise NotAnAssembly(f"RVA {rva:#x} is in no section")


def mvid_offset(data: bytes) -> int:
    """Where the MVID's 16 bytes are in the file."""
    if data[:2] != b"MZ":
        raise NotAnAssembly("no MZ header")
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    if data[pe:pe + 4] != b"PE\0\0":
        raise NotAnAssembly("no PE signature")
    coff = pe + 4
    n_sections, opt_size = struct.unpack_from("<H", data, coff + 2)[0], struct.unpack_from("<H", data, coff + 16)[0]
    opt = coff + 20
    magic = struct.unpack_from("<H", data, opt)[0]
    directories = opt + {0x10B: 96, 0x20B: 112}.get(magic, -1)
    if directories < opt:
        raise NotAnAssembly(f"optional header magic {magic:#x}")
    cli_rva = struct.unpack_from("<I", data, directories + 14 * 8)[0]
    sections = []
    for i in range(n_sections):
        s = opt + opt_size + 40 * i
        vsize, vaddr, rawsize, rawptr = struct.unpack_from("<IIII", data, s + 8)
        sections.append((vaddr, max(vsize, rawsize), rawptr))
    if not cli_rva:
        raise NotAnAssembly("no CLI header: not a .NET assembly")
    cli = _file_offset(data, sections, cli_rva)
    meta = _file_offset(data, sections, struct.unpack_from("<I", data, cli + 8)[0])
    if struct.unpack_from("<I", data, meta)[0] != 0x424A5342:  # "BSJB"
        raise NotAnAssembly("no metadata signature")
    version_len = struct.unpack_from("<I", data, meta + 12)[0]
    at = meta + 16 + version_len
    n_streams = struct.unpack_from("<H", data, at + 2)[0]
    at += 4
    for _ in range(n_streams):
        offset, _size = struct.unpack_from("<II", data, at)
        end = data.index(b"\0", at + 8)
        name = data[at + 8:end]
        at = (end + 1 + 3) & ~3
        if name == b"#GUID":
            return meta + offset
    raise NotAnAssembly("no #GUID stream")


def normalise(path: Path) -> bool:
    """Rewrites the MVID; True when the file changed."""
    data = bytearray(path.read_bytes())
    at = mvid_offset(bytes(data))
    data[at:at + 16] = bytes(16)
    data[at:at + 16] = hashlib.sha256(data).digest()[:16]
    if bytes(data) == path.read_bytes():
        return False
    path.write_bytes(bytes(data))
    return True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/pe_mvid.py ASSEMBLY")
    try:
        normalise(Path(sys.argv[1]))
    except (OSError, NotAnAssembly, struct.error, ValueError) as e:
        sys.exit(f"scripts/pe_mvid.py: {sys.argv[1]}: {e}")
