"""A Linux initramfs for `clockbench os-vm`, written here with no cpio tool:
an uncompressed "newc" cpio archive (the kernel's
Documentation/driver-api/early-userspace/buffer-format.rst) holding the
directories dev, proc and sys, the console device, and /init; with the
languages (runtimes.py) also their probes under /lang, their runtimes at
their own paths, the devices a runtime opens (/dev/null, /dev/zero,
/dev/urandom) and /tmp.

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
# The memory devices (Linux's Documentation/admin-guide/devices.txt, major
# 1): clockbench-os gives a probe /dev/null as stdin; runtimes read random
# bytes at start-up.
MEM_DEVICES = {"dev/null": 3, "dev/zero": 5, "dev/random": 8, "dev/urandom": 9}


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


def _tree_entries(tree, first_ino: int, made: set[str]) -> list[bytes]:
    """The tree's folders, links and files (each with its host file's mode
    bits), every parent folder before what it holds, in name order; the
    names in `made` are in the archive already."""
    nodes: dict[str, tuple] = {name: ("made",) for name in made}
    for name in tree.dirs:
        nodes[name] = ("dir",)
    for name, target in tree.links.items():
        nodes[name] = ("link", target)
    for name, host in tree.files.items():
        nodes[name] = ("file", host)
    for name in list(nodes):
        parent = name.rpartition("/")[0]
        while parent and parent not in nodes:
            nodes[parent] = ("dir",)
            parent = parent.rpartition("/")[0]
    out, ino = [], first_ino
    for name in sorted(nodes):
        kind = nodes[name]
        if kind[0] == "made":
            continue
        if kind[0] == "dir":
            out.append(entry(name, stat.S_IFDIR | 0o755, ino, nlink=2))
        elif kind[0] == "link":
            out.append(entry(name, stat.S_IFLNK | 0o777, ino, data=kind[1].encode()))
        else:
            mode = 0o755 if kind[1].stat().st_mode & 0o111 else 0o644
            out.append(entry(name, stat.S_IFREG | mode, ino, data=kind[1].read_bytes()))
        ino += 1
    return out


def archive(init: bytes, tree=None) -> bytes:
    """The whole archive, with `init` as /init and, when given, the tree
    (runtimes.Tree) of the languages' probes and runtimes."""
    parts = [
        entry("dev", stat.S_IFDIR | 0o755, 1, nlink=2),
        entry("dev/console", stat.S_IFCHR | 0o600, 2, rdev=(CONSOLE_MAJOR, CONSOLE_MINOR)),
        entry("proc", stat.S_IFDIR | 0o755, 3, nlink=2),
        entry("sys", stat.S_IFDIR | 0o755, 4, nlink=2),
        entry("init", stat.S_IFREG | 0o755, 5, data=init),
    ]
    if tree is not None:
        parts += [entry(name, stat.S_IFCHR | 0o666, 6 + i, rdev=(1, minor)) for i, (name, minor) in enumerate(MEM_DEVICES.items())]
        parts.append(entry("tmp", stat.S_IFDIR | 0o1777, 6 + len(MEM_DEVICES), nlink=2))
        parts += _tree_entries(tree, 7 + len(MEM_DEVICES), {"dev", "dev/console", "proc", "sys", "init", "tmp", *MEM_DEVICES})
    parts.append(entry(TRAILER, 0, 0))
    return b"".join(parts)


def write(program: Path, out: Path, tree=None) -> bool:
    """Writes the archive for `program` (and the tree) to `out` unless `out`
    already holds exactly it; returns whether it wrote. Written to a
    temporary name and renamed, so a run never boots half a file."""
    return write_init(program.read_bytes(), out, tree)


def write_init(init: bytes, out: Path, tree=None) -> bool:
    """write() with /init given as its bytes (os-vm --ssh: a shell script)."""
    data = archive(init, tree)
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
