"""The image's screen, read back: boots with a QEMU monitor, waits for the
run to end, takes a screendump and turns the framebuffer console's pixels
back into text by matching each 8x16 cell against the console font."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from clockbench.machines import qemu

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import psf_to_c  # noqa: E402

FONT = "/usr/share/consolefonts/Lat15-VGA16.psf.gz"


def read_ppm(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    magic, dims, maxval, pixels = data.split(b"\n", 3)
    assert magic == b"P6" and maxval == b"255", "QEMU screendumps are binary PPM"
    w, h = map(int, dims.split())
    return w, h, pixels


def font_lookup(font_path: str = FONT) -> dict[bytes, str]:
    glyphs, mapping = psf_to_c.load(font_path)
    table = {}
    for code in range(0x20, 0x7F):
        table.setdefault(bytes(glyphs[mapping.get(code, code)]), chr(code))
    return table


def screen_text(w: int, h: int, pixels: bytes, font_path: str = FONT) -> list[str]:
    """Each 8x16 cell as the character whose glyph it shows exactly, '?' for a cell no glyph matches."""
    table = font_lookup(font_path)
    lines = []
    for cy in range(h // 16):
        chars = []
        for cx in range(w // 8):
            rows = []
            for y in range(16):
                off = ((cy * 16 + y) * w + cx * 8) * 3
                bits = 0
                for x in range(8):
                    if any(pixels[off + 3 * x: off + 3 * x + 3]):
                        bits |= 0x80 >> x
                rows.append(bits)
            chars.append(table.get(bytes(rows), "?"))
        lines.append("".join(chars).rstrip())
    return lines


def boot_and_screendump(cfg: qemu.QemuConfig, out_ppm: Path, timeout: float = 180) -> tuple[str, Path]:
    """Boots without isa-debug-exit, so the image halts with its screen in
    place; when the serial log says the run ended, dumps the screen."""
    cfg.debug_exit = False
    cfg.monitor_socket = out_ppm.with_suffix(".sock")
    accel, _ = qemu.resolve_accel(cfg.accel)
    cmd = qemu.build_command(cfg, accel)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: [chunks.append(c) for c in iter(lambda: proc.stdout.read1(4096), b"")], daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while b"run ended" not in b"".join(chunks):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"the run did not end within {timeout} s: {b''.join(chunks)[-500:]!r}")
            time.sleep(0.2)
        time.sleep(0.5)  # the final flush follows the last line
        mon = socket.socket(socket.AF_UNIX)
        mon.connect(str(cfg.monitor_socket))
        mon.sendall(f"screendump {out_ppm}\n".encode())
        for _ in range(50):
            time.sleep(0.1)
            if out_ppm.exists() and out_ppm.stat().st_size > 1000:
                break
        time.sleep(0.3)
        mon.sendall(b"quit\n")
        try:
            proc.wait(timeout=20)  # the socket stays open until QEMU has read the quit
        except subprocess.TimeoutExpired:
            pass
        mon.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return b"".join(chunks).decode("utf-8", "replace"), out_ppm
