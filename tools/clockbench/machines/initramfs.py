"""A Linux initramfs for `clockbench os-vm`, written here with no cpio tool:
an uncompressed "newc" cpio archive (the kernel's
Documentation/driver-api/early-userspace/buffer-format.rst) holding the
directories dev, proc and sys, the console device, and /init.

Each entry is a 110-byte ASCII header ("070701" and thirteen 8-digit hex
fields), the name with its NUL, padded to a multiple of 4 bytes, then the
data, padded to 4 again; an entry named TRAILER!!! ends the archive. Every
timestamp is 0 and every owner root, so the same program always gives the
same bytes (and the file is rewritten only when the program changes)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAGIC = b"070701"
HEADER_LEN = 110
TRAILER = "TRAILER!!!"
# /dev/console: the kernel opens it for init's stdin, stdout and stderr
# before it runs init; with no such node init has no output at all.
CONSOLE_MAJOR, CONSOLE_MINOR = 5, 1


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def entry(name: str, mode: int, ino: int, data: bytes = b"", nlink: int = 1, rdev: tuple[int, int] = (0, 0)) -> bytes:
    """One newc entry: header, name, data, each padded to 4 bytes."""
    name_b = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0)
    # ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
    header = MAGIC + b"".join(b"%08X" % f for f in fields)
    head = header + name_b
    return head + _pad4(len(head)) + data + _pad4(len(data))


def archive(init: bytes) -> bytes:
    """The whole archive, with `init` as /init."""
    parts = [
        entry("dev", stat.S_IFDIR | 0o755, 1, nlink=2),
        entry("dev/console", stat.S_IFCHR | 0o600, 2, rdev=(CONSOLE_MAJOR, CONSOLE_MINOR)),
        entry("proc", stat.S_IFDIR | 0o755, 3, nlink=2),
        entry("sys", stat.S_IFDIR | 0o755, 4, nlink=2),
        entry("init", stat.S_IFREG | 0o755, 5, data=init),
        entry(TRAILER, 0, 0),
    ]
    return b"".join(parts)


def write(program: Path, out: Path) -> bool:
    """Writes the archive for `program` to `out` unless `out` already holds
    exactly it; returns whether it wrote. Written to a temporary name and
    renamed, so a run never boots half a file."""
    data = archive(program.read_bytes())
    try:
        if out.read_bytes() == data:
            return False
    except OSError:
        pass
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return True
