"""QR module matrices to images, and images back to text with zbarimg
(Debian's zbar-tools): shared by the unit tests, the screen tests and
`clockbench decode`."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path


def png_bytes(rows: list[list[int]], scale: int = 4, quiet: int = 4) -> bytes:
    """Dark modules black, light white, with a quiet zone (ISO/IEC 18004, 6.3.8)."""
    n = len(rows) + 2 * quiet
    lines = []
    for y in range(n * scale):
        my = y // scale - quiet
        line = bytearray()
        for x in range(n):
            mx = x - quiet
            dark = 0 <= my < len(rows) and 0 <= mx < len(rows) and rows[my][mx]
            line += (b"\x00" if dark else b"\xff") * scale
        lines.append(b"\x00" + bytes(line))
    width = n * scale

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, width, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(lines))) + chunk(b"IEND", b""))


def zbar_available() -> bool:
    return shutil.which("zbarimg") is not None


def decode_image(path: Path) -> list[bytes]:
    """Every QR code zbarimg finds in the image, as raw bytes."""
    run = subprocess.run(["zbarimg", "--raw", "-q", "-Sbinary", str(path)], capture_output=True, timeout=60)
    if run.returncode not in (0, 4):  # 4: nothing found
        raise RuntimeError(f"zbarimg failed: {run.stderr.decode(errors='replace').strip()}")
    return [run.stdout.rstrip(b"\n")] if run.stdout else []
