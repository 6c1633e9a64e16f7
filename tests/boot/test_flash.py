"""The USB writer (tools/clockbench/release/flash.py): every unsafe target refused
with its reason, on a fake sysfs tree and a fake mount table (the whole
command too, with a write function that only records); then a real write to
a loop device, verified, and booted in QEMU. No test here points a write at
a real disk: the only writes go to files and loop devices the test made."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import types
from pathlib import Path

import pytest

from clockbench import errors
from clockbench.release import flash
from clockbench.records import records
from helpers.paths import TEST_ISO
from helpers.tool import tool


def fake_disk(sysfs: Path, name: str, devno: str, size_bytes: int, removable: bool, partitions=(), holders=()):
    d = sysfs / "block" / name
    (d / "device").mkdir(parents=True)
    (d / "holders").mkdir()
    (d / "size").write_text(str(size_bytes // 512))
    (d / "removable").write_text("1" if removable else "0")
    (d / "device" / "vendor").write_text("SanDisk")
    (d / "device" / "model").write_text("Cruzer Blade")
    (sysfs / "dev" / "block").mkdir(parents=True, exist_ok=True)
    (sysfs / "dev" / "block" / devno).symlink_to(d)
    major, minor = map(int, devno.split(":"))
    for i, part in enumerate(partitions, 1):
        p = d / part
        (p / "holders").mkdir(parents=True)
        (p / "partition").write_text(str(i))
        (sysfs / "dev" / "block" / f"{major}:{minor + i}").symlink_to(p)
    for h in holders:
        (d / partitions[0] / "holders" / h).mkdir()
    return d


def blk(devno: str):
    major, minor = map(int, devno.split(":"))
    return lambda path: types.SimpleNamespace(st_mode=stat.S_IFBLK | 0o600, st_rdev=os.makedev(major, minor))


def test_a_removable_stick_passes(tmp_path):
    fake_disk(tmp_path, "sdb", "8:16", 16 * 10**9, True, ["sdb1"])
    t = flash.check("/dev/sdb", tmp_path, "", blk("8:16"))
    assert not t.refusals and not t.warnings
    assert t.model == "SanDisk Cruzer Blade" and t.size_bytes == 16 * 10**9


def test_a_partition_is_refused(tmp_path):
    fake_disk(tmp_path, "sdb", "8:16", 16 * 10**9, True, ["sdb1"])
    t = flash.check("/dev/sdb1", tmp_path, "", blk("8:17"))
    assert t.refusals == ["/dev/sdb1 is a partition of /dev/sdb: write to the whole disk, /dev/sdb"]


def test_mounted_partitions_and_the_system_disk_are_refused(tmp_path):
    fake_disk(tmp_path, "sdb", "8:16", 16 * 10**9, True, ["sdb1"])
    t = flash.check("/dev/sdb", tmp_path, "36 25 8:17 / /media/stick rw - vfat /dev/sdb1 rw", blk("8:16"))
    assert t.refusals == ["/dev/sdb has mounted partitions (/media/stick): unmount them first"]
    t = flash.check("/dev/sdb", tmp_path, "36 25 8:17 / / rw - ext4 /dev/sdb1 rw", blk("8:16"))
    assert t.refusals == ["/dev/sdb holds the running system (/ is on it)"]


def test_holders_are_refused(tmp_path):
    fake_disk(tmp_path, "sdb", "8:16", 16 * 10**9, True, ["sdb1"], holders=["dm-0"])
    t = flash.check("/dev/sdb", tmp_path, "", blk("8:16"))
    assert t.refusals == ["/dev/sdb is in use by dm-0 (device-mapper, RAID or LVM)"]


def test_fixed_and_huge_disks_need_force(tmp_path):
    fake_disk(tmp_path, "nvme0n1", "259:0", 2 * 10**12, False)
    t = flash.check("/dev/nvme0n1", tmp_path, "", blk("259:0"))
    assert not t.refusals
    assert t.warnings == ["/dev/nvme0n1 is not a removable disk", "/dev/nvme0n1 is 2000 GB, larger than any stick we expect (256 GB)"]


def test_a_file_and_a_missing_path_are_refused(tmp_path):
    f = tmp_path / "image.img"
    f.write_bytes(b"x")
    assert "is not a block device" in flash.check(str(f)).refusals[0]
    assert "No such file" in flash.check(str(tmp_path / "nope")).refusals[0]


def test_the_mount_table_is_read_from_the_proc_root(tmp_path):
    sysfs, proc = tmp_path / "sys", tmp_path / "proc"
    fake_disk(sysfs, "sdb", "8:16", 16 * 10**9, True, ["sdb1"])
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text("36 25 8:17 / /boot/efi rw - vfat /dev/sdb1 rw\n")
    t = flash.check("/dev/sdb", sysfs, None, blk("8:16"), proc=proc)
    assert t.refusals == ["/dev/sdb holds the running system (/boot/efi is on it)"]


class Recorder:
    """Stands in for write_and_verify: records, writes nothing."""

    def __init__(self):
        self.calls = []

    def __call__(self, image, device, progress=None):
        self.calls.append(device)
        return "0" * 64


def fake_root(tmp_path, root_on: str | None):
    """A fake /sys with a fixed disk sda and a stick sdb, and a fake /proc
    whose mount table puts / on root_on's first partition."""
    sysfs, proc = tmp_path / "sys", tmp_path / "proc"
    fake_disk(sysfs, "sda", "8:0", 512 * 10**9, False, ["sda1", "sda2"])
    fake_disk(sysfs, "sdb", "8:16", 16 * 10**9, True, ["sdb1"])
    (proc / "self").mkdir(parents=True)
    part = {"sda": "8:1", "sdb": "8:17"}.get(root_on)
    (proc / "self" / "mountinfo").write_text(f"22 1 {part} / / rw,relatime - ext4 /dev/x rw\n" if part else "")
    iso = tmp_path / "clockbench.iso"
    iso.write_bytes(b"\x00" * 4096)
    return sysfs, proc, iso


def flash_args(device, iso, yes=True, force=False):
    return types.SimpleNamespace(device=device, iso=str(iso), yes=yes, force=force)


@pytest.mark.parametrize("force", [False, True])
def test_the_running_systems_disk_is_refused_even_with_force(tmp_path, force):
    sysfs, proc, iso = fake_root(tmp_path, "sda")
    rec = Recorder()
    with pytest.raises(errors.BadInput, match=r"refusing: /dev/sda holds the running system \(/ is on it\)"):
        flash.main(flash_args("/dev/sda", iso, force=force), sysfs=sysfs, proc=proc, dev_stat=blk("8:0"), write=rec)
    assert rec.calls == []


def test_a_fixed_disk_needs_force_and_a_stick_is_written(tmp_path, capsys):
    sysfs, proc, iso = fake_root(tmp_path, None)
    rec = Recorder()
    with pytest.raises(errors.BadInput, match="not a removable disk .--force to write anyway"):
        flash.main(flash_args("/dev/sda", iso), sysfs=sysfs, proc=proc, dev_stat=blk("8:0"), write=rec)
    assert "also: /dev/sda is 512 GB, larger than any stick we expect" in capsys.readouterr().err
    assert rec.calls == []
    # the control: the same command on the stick reaches the (recording) write
    assert flash.main(flash_args("/dev/sdb", iso), sysfs=sysfs, proc=proc, dev_stat=blk("8:16"), write=rec) == 0
    assert rec.calls == ["/dev/sdb"]
    assert "written, synced and verified" in capsys.readouterr().out


def test_a_missing_iso_is_a_missing_input(tmp_path):
    sysfs, proc, _ = fake_root(tmp_path, None)
    with pytest.raises(errors.NoInput, match="run `make iso` first"):
        flash.main(flash_args("/dev/sdb", tmp_path / "none.iso"), sysfs=sysfs, proc=proc, dev_stat=blk("8:16"), write=Recorder())


def cli(*args, stdin=""):
    return tool("flash", *args, stdin=stdin)


def test_a_missing_device_is_a_missing_input(tmp_path):
    iso = tmp_path / "clockbench.iso"
    iso.write_bytes(b"\xff" * 4096)
    r = cli(str(tmp_path / "nosuch"), "--iso", str(iso), "--yes")
    assert r.returncode == errors.NO_INPUT and "No such file" in r.stderr and "Traceback" not in r.stderr, r


def test_the_command_refuses_a_file_and_leaves_it_alone(tmp_path):
    target = tmp_path / "disk.img"
    target.write_bytes(b"keep" * 1024)
    iso = tmp_path / "clockbench.iso"
    iso.write_bytes(b"\xff" * 4096)
    r = cli(str(target), "--iso", str(iso), "--yes", "--force")
    assert r.returncode == errors.BAD_INPUT, r.stderr
    assert "is not a block device" in r.stderr and "Traceback" not in r.stderr
    assert target.read_bytes() == b"keep" * 1024


@pytest.fixture
def loop_device(tmp_path):
    if os.geteuid() != 0 or not shutil.which("losetup") or not Path("/dev/loop-control").exists():
        pytest.skip("loop devices need root and losetup")
    backing = tmp_path / "stick.img"
    backing.write_bytes(b"\0" * (64 << 20))
    made = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"losetup failed: {made.stderr.strip()}")
    dev = made.stdout.strip()
    yield dev, backing
    subprocess.run(["losetup", "-d", dev])


def test_loop_device_is_written_verified_and_boots(loop_device, boot):
    dev, backing = loop_device
    r = cli(dev, "--iso", str(TEST_ISO), "--yes")
    assert r.returncode == errors.BAD_INPUT and "not a removable disk (--force to write anyway)" in r.stderr
    r = cli(dev, "--iso", str(TEST_ISO), "--force")  # no --yes, no answer: nothing written, and no failed run's status
    assert r.returncode == errors.DECLINED and "not written (declined)" in r.stderr
    assert backing.read_bytes()[:512] == bytes(512)
    r = cli(dev, "--iso", str(TEST_ISO), "--force", "--yes")
    assert r.returncode == 0, r.stderr
    assert "written, synced and verified" in r.stdout
    assert backing.read_bytes()[: TEST_ISO.stat().st_size] == TEST_ISO.read_bytes()
    # the stick boots through GRUB, from the written disk, under BIOS and UEFI
    for firmware in ("bios", "uefi"):
        b = boot(boot="disk", disk=backing, firmware=firmware, accel="tcg", timeout=180)
        assert b.status == 0, b.explain()
        assert records.one(b.records, "machine")["loader"].startswith("GRUB" if firmware == "bios" else "clockbench EFI")
