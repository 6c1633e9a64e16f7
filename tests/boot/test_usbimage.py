"""The raw USB disk image (tools/clockbench/release/usbimage.py, `make img`; the
tests' copy build/test/clockbench.img is signed with build/test-key and
boots its first entry at once).

One real QEMU boot (TCG, one quick experiment) per firmware, read by
several checks: legacy BIOS through GRUB i386-pc from the MBR, UEFI (OVMF)
through shim and our signed GRUB, and OVMF's Secure Boot build with
Microsoft's keys and the tests' certificate in MokList (virt-fw-vars, as
tests/boot/test_secureboot.py). Then the image's bytes: GRUB's fields where
GRUB's layout puts them, the files on the FAT partition those given, two
builds byte-identical, bad input refused in one line with nothing left, and
`clockbench flash` checking the image's signatures before it writes."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clockbench import errors
from clockbench.release import flash, secureboot, usbimage
from clockbench.machines import qemu
from clockbench.records import records
from helpers.paths import BUILD, ROOT
from helpers.tool import tool_env

TEST_IMG = BUILD / "test" / "clockbench.img"
PARTS = BUILD / "test" / "img"  # the signed GRUB and kernel and the menu the Makefile made for it
TEST_KEY = BUILD / "test-key"
PYDEPS = BUILD / "pydeps"
QUICK = "profile=quick only=read_cost"
BOOT_S = 180  # a verdict under TCG: 4 s (BIOS) to 15 s (Secure Boot) here; the bound allows a loaded machine
MTOOLS_ENV = {**os.environ, "MTOOLS_SKIP_CHECK": "1", "TZ": "UTC0"}


@pytest.fixture(scope="module")
def img() -> Path:
    for p in (TEST_IMG, PARTS / "grubx64.efi", PARTS / "clockbench.efi", PARTS / "grub.cfg", TEST_KEY / secureboot.CERT_DER_NAME):
        if not p.is_file():
            pytest.fail(f"{p} is missing: `make build/test/clockbench.img`")
    return TEST_IMG


_runs: dict[str, tuple[qemu.RunResult, float]] = {}


def booted(img: Path, tmp_dir: Path, firmware: str) -> tuple[qemu.RunResult, float]:
    """One boot of a copy of the image per firmware (QEMU locks the file it
    writes), shared by every check that reads it; with its wall time."""
    if firmware not in _runs:
        disk = tmp_dir / f"{firmware}.img"
        shutil.copyfile(img, disk)
        kw = {}
        if firmware == "uefi-secboot":
            for p in (qemu.OVMF_SECBOOT_CODE, qemu.OVMF_VARS_MS, secureboot.SHIM_DIR / secureboot.SHIM):
                if not Path(p).is_file():
                    pytest.fail(f"{p} is missing: `make deps` installs it (ovmf, shim-signed)")
            kw["uefi_vars"] = secureboot.make_vars(tmp_dir / "vars.fd", TEST_KEY / secureboot.CERT_DER_NAME, mok=True, pydeps=PYDEPS)
        elif firmware == "uefi":
            if not qemu.find_ovmf():
                pytest.fail("OVMF is not installed: `make deps` installs it (ovmf)")
            # a PC's own disk ahead of the stick, holding a Linux-like /boot/grub/grub.cfg: the stick's GRUB must
            # not take that menu (efi/grub-early.cfg searches for /boot/clockbench.elf)
            kw["extra"] = ["-drive", f"file={disk},format=raw"]
            disk = decoy_disk(tmp_dir / "own-disk.img")
        t0 = time.monotonic()
        r = qemu.run(qemu.QemuConfig(boot="disk", disk=disk, firmware=firmware, accel="tcg", append=QUICK, **kw), timeout=BOOT_S)
        _runs[firmware] = (r, time.monotonic() - t0)
    return _runs[firmware]


DECOY = "a menu from the machine's own disk"


def decoy_disk(path: Path) -> Path:
    """A FAT disk with /boot/grub/grub.cfg that says DECOY and halts, as an
    installed Linux's /boot would be found."""
    cfg = path.with_suffix(".cfg")
    cfg.write_text(f'serial --unit=0 --speed=115200\nterminal_output serial console\necho "{DECOY}"\nhalt\n')
    with path.open("wb") as f:
        f.truncate(8 << 20)
    for cmd in (["mformat", "-i", str(path), "-h", "64", "-s", "32", "::"], ["mmd", "-i", str(path), "::/boot", "::/boot/grub"],
                ["mcopy", "-i", str(path), str(cfg), "::/boot/grub/grub.cfg"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=MTOOLS_ENV)
        assert r.returncode == 0, r.stderr
    return path


@pytest.fixture(scope="module")
def boot_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("usbimg-boots")


def machine(r: qemu.RunResult) -> dict:
    explain = f"{' '.join(r.command)}\n{r.describe()}\n{r.output[-4000:]}\n{r.stderr[-1000:]}"
    # a verdict: passed or failed (a timing check may fail on a loaded host; the boot path is the point here)
    assert r.status in (0, 1), explain
    assert any(x.get("type") == "summary" for x in records.parse(r.output)), explain
    return next(x for x in records.parse(r.output) if x.get("type") == "machine")


def test_bios_boots_through_grub_from_the_mbr(img, boot_dir):
    r, seconds = booted(img, boot_dir, "bios")
    m = machine(r)
    print(f"BIOS boot to a verdict: {seconds:.1f} s")
    assert m["loader"].startswith("GRUB 2.") and m["multiboot"] == 2 and m["boot_protocol"] == "multiboot2"
    assert m["cmdline"] == QUICK  # the menu read the SMBIOS string: grub.cfg came from the FAT partition
    assert m["secure_boot"] == "unknown" and m["shim"] is None
    # GRUB under BIOS hands no EFI system table tag: the machine has no UEFI, and the banner says so
    assert m["firmware"] == "bios", m
    assert "Secure Boot: not applicable (BIOS" in r.output, r.output[-3000:]


def test_uefi_boots_through_shim_and_the_signed_grub_past_the_machines_own_disk(img, boot_dir):
    r, seconds = booted(img, boot_dir, "uefi")
    m = machine(r)
    print(f"UEFI boot to a verdict: {seconds:.1f} s")
    assert m["loader"].startswith("clockbench EFI") and m["shim"] is True
    assert m["secure_boot"] == "off" and m["cmdline"] == QUICK and m["firmware"] == "uefi", m
    assert DECOY not in r.output  # the disk ahead of the stick held a /boot/grub/grub.cfg too


def test_secure_boot_with_the_certificate_enrolled(img, boot_dir):
    r, seconds = booted(img, boot_dir, "uefi-secboot")
    m = machine(r)
    print(f"Secure Boot boot to a verdict: {seconds:.1f} s")
    assert m["secure_boot"] == "on" and m["setup_mode"] is False and m["shim"] is True
    assert m["secure_boot_source"] == "efi variables" and m["cmdline"] == QUICK
    qr = next(x for x in records.parse(r.output) if x.get("type") == "qr")
    assert ";sb=on;" in qr["payload"]


def test_grub_fields_sit_where_grubs_layout_puts_them(img):
    data = img.read_bytes()
    boot = (usbimage.GRUB_PC_DIR / "boot.img").read_bytes()
    assert len(data) == usbimage.IMAGE_MB << 20 and data[510:512] == b"\x55\xaa"
    # boot.img's code kept; the fields grub-bios-setup sets on a hard disk set
    assert data[0:3] == boot[0:3] and data[0x5A:0x5C] == boot[0x5A:0x5C]
    assert data[0x68:0x1B8] == boot[0x68:0x1B8]
    assert struct.unpack_from("<Q", data, 0x5C)[0] == 1 and data[0x64] == 0xFF and data[0x66:0x68] == b"\x90\x90"
    assert boot[0x66] == 0xEB  # the jump those NOPs replace
    # one active partition of type 0xEF from 1 MiB to the end; the other three empty
    status, ptype, start, count = data[0x1BE], data[0x1C2], *struct.unpack_from("<II", data, 0x1C6)
    assert (status, ptype, start, count) == (0x80, 0xEF, 2048, len(data) // 512 - 2048)
    assert data[0x1CE:0x1FE] == bytes(48)
    # core.img at LBA 1, its blocklist naming the rest: LBA 2 on, at segment 0x820
    core = data[512:2048 * 512]
    assert core[:512] != bytes(512)
    bl_start, bl_len, bl_seg = struct.unpack_from("<QHH", core, 512 - 12)
    assert (bl_start, bl_seg) == (2, 0x820) and 100 < bl_len < 2046
    assert core[(bl_len + 1) * 512:] == bytes(len(core) - (bl_len + 1) * 512)  # nothing past it
    # the FAT: FAT16 with the fixed serial, its hidden sectors the partition's start
    vbr = data[2048 * 512:2049 * 512]
    assert vbr[0x36:0x3E] == b"FAT16   " and struct.unpack_from("<I", vbr, 0x27)[0] == usbimage.VOLUME_SERIAL
    assert struct.unpack_from("<I", vbr, 0x1C)[0] == 2048


def read_fat_file(img: Path, path: str, out: Path) -> bytes:
    r = subprocess.run(["mcopy", "-n", "-i", f"{img}@@1M", path, str(out)], capture_output=True, text=True, env=MTOOLS_ENV)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


def test_the_partition_holds_the_isos_chain_and_the_menu(img, tmp_path):
    shim, mm = secureboot.shim_files()
    want = {"::/EFI/BOOT/BOOTX64.EFI": shim, "::/EFI/BOOT/mmx64.efi": mm, "::/EFI/BOOT/grubx64.efi": PARTS / "grubx64.efi",
            "::/EFI/BOOT/clockbench.efi": PARTS / "clockbench.efi", "::/boot/clockbench.elf": BUILD / "clockbench.elf",
            "::/clockbench.cer": TEST_KEY / secureboot.CERT_DER_NAME}
    for i, (path, src) in enumerate(want.items()):
        assert read_fat_file(img, path, tmp_path / f"f{i}") == src.read_bytes(), path
    menu = read_fat_file(img, "::/boot/grub/grub.cfg", tmp_path / "grub.cfg").decode()
    template = (ROOT / "iso" / "grub.cfg").read_text()
    version = (BUILD / "version.txt").read_text().strip()
    assert menu == template.replace("@TIMEOUT@", "0").replace("@VERSION@", version)
    # signed with the tests' key, as `clockbench flash` checks: and not the private key anywhere
    assert "clockbench" in usbimage.check_image(img)
    assert b"PRIVATE KEY" not in img.read_bytes()


def build_cli(out: Path, *, epoch: str | None = "1764000000", cwd: Path = ROOT, tz: str = "UTC", umask: int = 0o022, **over):
    args = {"elf": BUILD / "clockbench.elf", "grub": PARTS / "grubx64.efi", "kernel": PARTS / "clockbench.efi",
            "cert-der": TEST_KEY / secureboot.CERT_DER_NAME, "grub-cfg": PARTS / "grub.cfg", **over}
    env = tool_env(TZ=tz)
    env.pop("SOURCE_DATE_EPOCH", None)
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = epoch
    cmd = [sys.executable, "-m", "clockbench", "usbimg", "--out", str(out)]
    for k, v in args.items():
        cmd += [f"--{k}", str(v)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=120,
                          preexec_fn=lambda: os.umask(umask))


def test_two_builds_are_byte_identical(img, tmp_path):
    """The same parts and SOURCE_DATE_EPOCH, built in another folder, zone,
    umask and second: the same bytes; another epoch changes the dates only."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    r1 = build_cli(tmp_path / "a" / "clockbench.img", cwd=tmp_path / "a", tz="Asia/Tokyo", umask=0o077)
    assert r1.returncode == 0, r1.stderr
    time.sleep(1.1)
    r2 = build_cli(tmp_path / "b" / "clockbench.img", cwd=tmp_path / "b", tz="America/New_York", umask=0o002)
    assert r2.returncode == 0, r2.stderr
    a, b = (tmp_path / "a" / "clockbench.img").read_bytes(), (tmp_path / "b" / "clockbench.img").read_bytes()
    assert a == b
    # the files' dates are the epoch's (2025-11-24 16:00:00 UTC), not the build's
    listing = subprocess.run(["mdir", "-i", f"{tmp_path / 'a' / 'clockbench.img'}@@1M", "::/EFI/BOOT"],
                             capture_output=True, text=True, env=MTOOLS_ENV).stdout
    assert listing.count("2025-11-24  16:00") == 6, listing  # . .. and the four programs
    r3 = build_cli(tmp_path / "c.img", epoch="1764003600")
    assert r3.returncode == 0, r3.stderr
    c = (tmp_path / "c.img").read_bytes()
    assert c != a and c[:2048 * 512] == a[:2048 * 512]  # MBR and core.img do not carry the date


def test_without_source_date_epoch_the_commit_date_is_used(img, tmp_path):
    r = build_cli(tmp_path / "x.img", epoch=None)
    assert r.returncode == 0, r.stderr
    commit = int(subprocess.run(["git", "log", "-1", "--format=%ct"], capture_output=True, text=True, cwd=ROOT).stdout)
    at = time.gmtime(commit - commit % 2)  # FAT keeps even seconds; mdir shows minutes, the hour padded with a space
    want = time.strftime("%Y-%m-%d  ", at) + f"{at.tm_hour:2d}:{at.tm_min:02d}"
    listing = subprocess.run(["mdir", "-i", f"{tmp_path / 'x.img'}@@1M", "::/"], capture_output=True, text=True, env=MTOOLS_ENV).stdout
    assert want in listing, (want, listing)


@pytest.mark.parametrize("case, status, message", [
    ("missing kernel", errors.NO_INPUT, r"clockbench\.elf not found"),
    ("unsigned GRUB", errors.BAD_INPUT, r"grubx64\.efi is not signed by .*clockbench\.cer"),
    ("kernel not a PE", errors.BAD_INPUT, r"is not a PE image \(no MZ header\)"),
    ("garbage certificate", errors.BAD_INPUT, r"is not a DER certificate"),
    ("ELF not an ELF", errors.BAD_INPUT, r"is not an ELF file"),
    ("bad epoch", errors.USAGE, r"SOURCE_DATE_EPOCH='yesterday' is not a time FAT can hold"),
])
def test_bad_input_is_one_line_and_leaves_nothing(img, tmp_path, case, status, message):
    import re

    junk = tmp_path / "junk"
    junk.write_bytes(b"not what it should be\n" * 10)
    over, epoch = {}, "1764000000"
    if case == "missing kernel":
        over["elf"] = tmp_path / "nosuch" / "clockbench.elf"
    elif case == "unsigned GRUB":
        over["grub"] = BUILD / "efi" / "grubx64.efi"  # the one grub-mkimage made, before signing
    elif case == "kernel not a PE":
        over["kernel"] = junk
    elif case == "garbage certificate":
        over["cert-der"] = junk
    elif case == "ELF not an ELF":
        over["elf"] = junk
    else:
        epoch = "yesterday"
    out = tmp_path / "out" / "clockbench.img"
    r = build_cli(out, epoch=epoch, **over)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == status, r.stderr
    assert len(lines) == 1 and lines[0].startswith("clockbench usbimg: ") and re.search(message, lines[0]), r.stderr
    assert not out.exists() and not list(tmp_path.glob("out/*"))


def fake_stick(tmp_path: Path):
    """A fake /sys with one removable 16 GB stick, sdb, and an empty mount table."""
    import types

    sysfs, proc = tmp_path / "sys", tmp_path / "proc"
    d = sysfs / "block" / "sdb"
    (d / "device").mkdir(parents=True)
    (d / "holders").mkdir()
    (d / "size").write_text(str(16 * 10**9 // 512))
    (d / "removable").write_text("1")
    (sysfs / "dev" / "block").mkdir(parents=True)
    (sysfs / "dev" / "block" / "8:16").symlink_to(d)
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text("")
    import stat as st

    dev_stat = lambda path: types.SimpleNamespace(st_mode=st.S_IFBLK | 0o600, st_rdev=os.makedev(8, 16))  # noqa: E731
    return sysfs, proc, dev_stat


def test_flash_checks_the_images_signatures_before_writing(img, tmp_path, capsys):
    import types

    sysfs, proc, dev_stat = fake_stick(tmp_path)
    written = []
    write = lambda image, device, progress=None: written.append(image) or "0" * 64  # noqa: E731
    args = lambda image: types.SimpleNamespace(device="/dev/sdb", iso=str(image), yes=True, force=False,  # noqa: E731
                                               check_secure_boot=True)
    assert flash.main(args(img), sysfs=sysfs, proc=proc, dev_stat=dev_stat, write=write) == 0
    assert written == [img]
    assert "Secure Boot: GRUB and the kernel are signed by CN=clockbench" in capsys.readouterr().out
    # the same image with one byte of the signed kernel changed on the partition
    data = bytearray(img.read_bytes())
    kernel = (PARTS / "clockbench.efi").read_bytes()
    at = data.find(kernel[:65536], 2048 * 512)
    assert at > 0 and data[at:at + len(kernel)] == kernel  # contiguous on a fresh FAT
    data[at + len(kernel) // 2] ^= 1
    bad = tmp_path / "tampered.img"
    bad.write_bytes(data)
    with pytest.raises(errors.BadInput, match=r"EFI/BOOT/clockbench\.efi is not signed by the certificate on the stick"):
        flash.main(args(bad), sysfs=sysfs, proc=proc, dev_stat=dev_stat, write=write)
    assert written == [img]
    junk = tmp_path / "other.img"  # a disk image, not ours: said so, not called an ISO
    junk.write_bytes(bytes(510) + b"\x55\xaa" + bytes(1 << 20))
    with pytest.raises(errors.BadInput, match=r"other\.img is not a clockbench disk image \(no EFI partition at LBA 2048\)"):
        flash.main(args(junk), sysfs=sysfs, proc=proc, dev_stat=dev_stat, write=write)
    assert written == [img]
    with pytest.raises(errors.NoInput, match=r"run `make img` first"):
        flash.main(args(tmp_path / "none.img"), sysfs=sysfs, proc=proc, dev_stat=dev_stat, write=write)
