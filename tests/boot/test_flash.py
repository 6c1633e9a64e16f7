"""The USB writer (tools/clockbench/flash.py): every unsafe target refused
with its reason, on a fake sysfs tree; then a real write to a loop device
(never a real disk), verified, and booted in QEMU."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import types
from pathlib import Path

import pytest

from clockbench import flash, qemu, records

ROOT = Path(__file__).resolve().parents[2]
TEST_ISO = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build")) / "test" / "clockbench.iso"


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


def cli(*args, stdin=""):
    return subprocess.run(["/usr/bin/python3", "-m", "clockbench", "flash", *args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "tools")}, timeout=300)


def test_the_running_systems_disk_is_refused():
    dev = os.stat("/").st_dev
    disk = flash._disk_of(f"{os.major(dev)}:{os.minor(dev)}", Path("/sys"))
    if not disk or not Path(f"/dev/{disk}").exists():
        pytest.skip("the root file system is not on a block device node here")
    r = cli(f"/dev/{disk}", "--iso", str(TEST_ISO), "--yes", "--force")
    assert r.returncode == 2 and "holds the running system" in r.stderr


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
    assert r.returncode == 2 and "not a removable disk (--force to write anyway)" in r.stderr
    r = cli(dev, "--iso", str(TEST_ISO), "--force")  # no --yes, no answer: nothing written
    assert r.returncode == 1 and "not written" in r.stdout
    assert backing.read_bytes()[:512] == bytes(512)
    r = cli(dev, "--iso", str(TEST_ISO), "--force", "--yes")
    assert r.returncode == 0, r.stderr
    assert "written, synced and verified" in r.stdout
    assert backing.read_bytes()[: TEST_ISO.stat().st_size] == TEST_ISO.read_bytes()
    # the stick boots through GRUB, from the written disk, under BIOS and UEFI
    for firmware in ("bios", "uefi"):
        b = boot(boot="disk", disk=backing, firmware=firmware, accel="tcg", timeout=180)
        assert b.status == 0, b.explain()
        assert records.one(b.records, "machine")["loader"].startswith("GRUB")
