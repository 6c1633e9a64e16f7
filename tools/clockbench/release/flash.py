"""Writes the hybrid ISO, or the raw USB disk image (usbimage.py,
build/clockbench.img), to a USB stick, safely (`make usb DEV=/dev/sdX
[IMAGE=build/clockbench.img]`, `python3 -m clockbench flash /dev/sdX`).

It refuses, with the reason: a path that is not a whole-disk block device;
a device with a mounted partition (or one a device-mapper/RAID holder uses);
the disk that holds the running system's root or /boot; and, unless --force,
a non-removable disk or one larger than 256 GB. It shows the device's model
and size, asks for confirmation (--yes for scripts), writes, syncs and
verifies by reading back.

Where it looks is a parameter (`sysfs`, `proc`, the stat function), so the
tests run every refusal against a fake sysfs tree and mount table and never
point a write at a real disk."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from clockbench import errors

LARGEST_STICK = 256 * 10**9
CHUNK = 4 << 20


@dataclass
class Target:
    path: str
    name: str = ""  # kernel name, e.g. sdb
    size_bytes: int = 0
    model: str = "unknown model"
    removable: bool = False
    refusals: list[str] = field(default_factory=list)  # each one alone blocks the write
    warnings: list[str] = field(default_factory=list)  # block the write unless --force
    missing: bool = False  # no such path: a missing input (66), not a refusal


def _read(p: Path, default: str = "") -> str:
    try:
        return p.read_text().strip()
    except OSError:
        return default


def _disk_of(devno: str, sysfs: Path) -> str | None:
    """The whole-disk kernel name behind a major:minor (a partition's parent)."""
    link = sysfs / "dev" / "block" / devno
    try:
        real = link.resolve(strict=True)
    except OSError:
        return None
    if (real / "partition").exists():
        return real.parent.name
    return real.name


def mounted_disks(mountinfo: str, sysfs: Path) -> dict[str, list[str]]:
    """Disk name -> mount points of anything on it (from /proc/self/mountinfo)."""
    out: dict[str, list[str]] = {}
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        disk = _disk_of(parts[2], sysfs)
        if disk:
            out.setdefault(disk, []).append(parts[4])
    return out


def check(path: str, sysfs: Path = Path("/sys"), mountinfo: str | None = None, dev_stat=os.stat, proc: Path = Path("/proc")) -> Target:
    """What stands against writing path, looking in sysfs and in the mount
    table (mountinfo, else proc/self/mountinfo)."""
    t = Target(path)
    try:
        st = dev_stat(path)
    except OSError as e:
        t.refusals.append(f"{path}: {e.strerror}")
        t.missing = isinstance(e, FileNotFoundError)
        return t
    if not stat.S_ISBLK(st.st_mode):
        t.refusals.append(f"{path} is not a block device (write the image to a whole disk such as /dev/sdX)")
        return t
    devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    node = (sysfs / "dev" / "block" / devno)
    try:
        real = node.resolve(strict=True)
    except OSError:
        t.refusals.append(f"{path}: no sysfs entry for device {devno}")
        return t
    t.name = real.name
    if (real / "partition").exists():
        t.refusals.append(f"{path} is a partition of /dev/{real.parent.name}: write to the whole disk, /dev/{real.parent.name}")
        return t
    t.size_bytes = int(_read(real / "size", "0")) * 512
    t.removable = _read(real / "removable", "0") == "1"
    vendor = _read(real / "device" / "vendor")
    model = _read(real / "device" / "model")
    t.model = " ".join(x for x in (vendor, model) if x) or "unknown model"
    if mountinfo is None:
        mountinfo = _read(proc / "self" / "mountinfo")
    mounts = mounted_disks(mountinfo, sysfs)
    points = mounts.get(t.name, [])
    system = [p for p in points if p in ("/", "/boot", "/boot/efi")]
    if system:
        t.refusals.append(f"{path} holds the running system ({', '.join(system)} is on it)")
    elif points:
        t.refusals.append(f"{path} has mounted partitions ({', '.join(sorted(points))}): unmount them first")
    held = [h.name for part in [real, *[p for p in real.iterdir() if (p / "partition").exists()]]
            for h in (part / "holders").iterdir()] if (real / "holders").exists() else []
    if held:
        t.refusals.append(f"{path} is in use by {', '.join(sorted(set(held)))} (device-mapper, RAID or LVM)")
    if not t.removable:
        t.warnings.append(f"{path} is not a removable disk")
    if t.size_bytes > LARGEST_STICK:
        t.warnings.append(f"{path} is {t.size_bytes / 1e9:.0f} GB, larger than any stick we expect (256 GB)")
    return t


def write_and_verify(image: Path, device: str, progress=None) -> str:
    """Writes image to device, syncs, reads it back; returns the SHA-256."""
    data_len = image.stat().st_size
    want = hashlib.sha256()
    fd = os.open(device, os.O_WRONLY | getattr(os, "O_EXCL", 0))
    try:
        with image.open("rb") as src:
            done = 0
            while chunk := src.read(CHUNK):
                want.update(chunk)
                view = memoryview(chunk)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                done += len(chunk)
                if progress:
                    progress(done, data_len)
        os.fsync(fd)
    finally:
        os.close(fd)
    got = hashlib.sha256()
    with open(device, "rb") as dev:
        left = data_len
        while left:
            chunk = dev.read(min(CHUNK, left))
            if not chunk:
                break
            got.update(chunk)
            left -= len(chunk)
    if got.hexdigest() != want.hexdigest():
        raise IOError(f"verification failed: {device} does not read back as {image}")
    return want.hexdigest()


def main(args, sysfs: Path = Path("/sys"), proc: Path = Path("/proc"), dev_stat=os.stat, write=None) -> int:
    """`clockbench flash`. The tests pass a fake sysfs and proc, a fake
    stat and a write function of their own: nothing here reaches a disk
    they did not make."""
    write = write or write_and_verify
    image = Path(args.iso)
    if not image.is_file():
        raise errors.NoInput(f"{image} not found: run `make {'img' if image.suffix == '.img' else 'iso'}` first")
    t = check(args.device, sysfs=sysfs, dev_stat=dev_stat, proc=proc)
    if t.missing:
        raise errors.NoInput(t.refusals[0])
    why = list(t.refusals) + ([f"{w} (--force to write anyway)" for w in t.warnings] if not args.force else [])
    if why:
        for r in why[1:]:  # the weightiest reason, first found, comes last: on the error line
            print(f"clockbench flash: also: {r}", file=sys.stderr)
        raise errors.BadInput(f"refusing: {why[0]}")
    signed_by = None
    if getattr(args, "check_secure_boot", False):  # the command line's default; the unit tests' fake ISOs skip it
        from clockbench.release import secureboot, usbimage

        disk = image.suffix == ".img" or usbimage.is_disk_image(image)
        signed_by = usbimage.check_image(image) if disk else secureboot.check_iso(image)
    size = f"{t.size_bytes / 1e9:.1f} GB" if t.size_bytes >= 1e9 else f"{t.size_bytes / 1e6:.1f} MB"
    print(f"Target: {args.device}: {t.model}, {size}, {'removable' if t.removable else 'NOT removable'}")
    print(f"Image:  {image} ({image.stat().st_size / 1e6:.1f} MB). Everything on {args.device} will be lost.")
    if signed_by:
        print(f"Secure Boot: GRUB and the kernel are signed by {signed_by}; enrol /clockbench.cer from the stick once per machine")
    if not args.yes:
        try:
            answer = input(f"Type 'yes' to write {args.device}: ")
        except EOFError:
            answer = ""
        if answer.strip() != "yes":
            print("clockbench flash: not written (declined)", file=sys.stderr)
            return errors.DECLINED

    def progress(done, total):
        print(f"\r  written {done / 1e6:6.1f} of {total / 1e6:.1f} MB", end="", flush=True)

    try:
        digest = write(image, args.device, progress)
    except OSError as e:
        raise errors.CannotWrite(f"{args.device}: {e.strerror or e}") from None
    print(f"\nclockbench flash: written, synced and verified (sha256 {digest[:16]}...). Remove the stick and boot it.")
    return 0
