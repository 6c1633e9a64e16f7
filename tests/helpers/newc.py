"""A newc cpio archive read independently of machines/initramfs.py, its
writer (the kernel's Documentation/driver-api/early-userspace/buffer-format.rst),
checking every alignment on the way: os-vm's archives and the guests'."""

from __future__ import annotations


def parse_newc(data: bytes) -> list[dict]:
    """Reads a newc archive independently of the writer, checking every
    alignment on the way."""
    names = ("ino", "mode", "uid", "gid", "nlink", "mtime", "filesize", "devmajor", "devminor", "rdevmajor",
             "rdevminor", "namesize", "check")
    entries, at = [], 0
    while True:
        assert at % 4 == 0, f"entry at {at} is not 4-byte aligned"
        head = data[at:at + 110]
        assert head[:6] == b"070701", f"bad magic at {at}: {head[:6]!r}"
        hexes = head[6:]
        assert len(hexes) == 13 * 8 and all(chr(c) in "0123456789ABCDEF" for c in hexes), hexes
        e = {n: int(hexes[i * 8:i * 8 + 8], 16) for i, n in enumerate(names)}
        name_end = at + 110 + e["namesize"]
        assert data[name_end - 1] == 0, "the name must end with its NUL"
        e["name"] = data[at + 110:name_end - 1].decode()
        data_at = name_end + (-name_end % 4)
        assert data[name_end:data_at] == b"\0" * (data_at - name_end), "name padding must be NULs"
        e["data"] = data[data_at:data_at + e["filesize"]]
        at = data_at + e["filesize"]
        pad = -at % 4
        assert data[at:at + pad] == b"\0" * pad
        at += pad
        entries.append(e)
        if e["name"] == "TRAILER!!!":
            assert at == len(data), "nothing may follow the trailer"
            return entries
