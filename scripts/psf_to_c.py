#!/usr/bin/env python3
"""Converts a PC screen font (PSF 1 or 2, as Debian's console-setup-linux
ships in /usr/share/consolefonts) into a C table of 8x16 glyphs for the
printable ASCII range, at build time: the font itself is never committed.
Usage: psf_to_c.py FONT.psf.gz OUT.c"""

import gzip
import struct
import sys


def load(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    if raw[:2] == b"\x36\x04":  # PSF1
        mode, height = raw[2], raw[3]
        count = 512 if mode & 1 else 256
        width, offset, has_table = 8, 4, bool(mode & 2)
        glyph_bytes = height
        table = raw[offset + count * glyph_bytes:]
        mapping = {}
        if has_table:
            glyph, i = 0, 0
            while glyph < count and i + 1 < len(table):
                (u,) = struct.unpack_from("<H", table, i)
                i += 2
                if u == 0xFFFF:
                    glyph += 1
                elif u != 0xFFFE:
                    mapping.setdefault(u, glyph)
    elif raw[:4] == b"\x72\xb5\x4a\x86":  # PSF2
        _, offset, flags, count, glyph_bytes, height, width = struct.unpack_from("<7I", raw, 4)
        table = raw[offset + count * glyph_bytes:]
        mapping = {}
        if flags & 1:
            glyph = 0
            for entry in table.split(b"\xff")[:count]:
                for seq in entry.split(b"\xfe")[:1]:
                    for ch in seq.decode("utf-8", "ignore"):
                        mapping.setdefault(ord(ch), glyph)
                glyph += 1
    else:
        sys.exit(f"{path}: not a PSF font")
    if width != 8 or height != 16:
        sys.exit(f"{path}: {width}x{height} glyphs; an 8x16 font is needed")
    glyphs = [raw[offset + g * glyph_bytes: offset + (g + 1) * glyph_bytes] for g in range(count)]
    return glyphs, mapping


def main():
    src, out = sys.argv[1], sys.argv[2]
    glyphs, mapping = load(src)
    rows = []
    for code in range(128):
        g = mapping.get(code, code if not mapping else mapping.get(ord("?"), 0))
        data = glyphs[g] if code >= 0x20 else bytes(16)
        rows.append("    {" + ", ".join(f"0x{b:02x}" for b in data) + "},")
    with open(out, "w") as f:
        f.write(f"/* Generated from {src} by scripts/psf_to_c.py at build time. */\n")
        f.write('#include "fbcon_font.h"\n\nconst uint8_t fbcon_font[128][FBCON_GLYPH_HEIGHT] = {\n')
        f.write("\n".join(rows) + "\n};\n")


if __name__ == "__main__":
    main()
