"""The raw USB disk image, build/clockbench.img (`make img`; memtest86+ ships
one beside its ISO): written to a stick with `clockbench flash --image` or
dd, it boots a legacy BIOS through GRUB (i386-pc) and UEFI through the same
Secure Boot chain as the ISO's EFI system partition.

Layout (an MBR disk; no root, no loop device, no mount: mtools writes the
FAT partition in place with `-i IMG@@OFFSET`):

  LBA 0          GRUB's boot.img, patched as grub-bios-setup patches it for
                 a hard disk, with our partition table
  LBA 1..2047    GRUB's core.img (grub-mkimage -O i386-pc, every module the
                 menu needs built in; prefix (,msdos1)/boot/grub: the first
                 partition of the disk GRUB was booted from)
  LBA 2048..     partition 1: FAT, type 0xEF (EFI system partition), active:
                   /EFI/BOOT/BOOTX64.EFI   shim (Microsoft-signed)
                   /EFI/BOOT/mmx64.efi     MokManager
                   /EFI/BOOT/grubx64.efi   our GRUB, signed with KEY_DIR
                   /EFI/BOOT/clockbench.efi the kernel as a signed EFI program
                   /boot/clockbench.elf    the Multiboot kernel (BIOS)
                   /boot/grub/grub.cfg     iso/grub.cfg's menu
                   /clockbench.cer         the certificate, for MokManager

grub-bios-setup cannot do the BIOS part on a file without root: it probes
the device holding its -d folder (here the host's root disk) and stops. So
the two sectors' fields are written here, from GRUB 2.06's own layout:
include/grub/i386/pc/boot.h (GRUB_BOOT_MACHINE_BPB_START 0x3, _BPB_END 0x5a,
_KERNEL_SECTOR 0x5c, _BOOT_DRIVE 0x64, _DRIVE_CHECK 0x66, _WINDOWS_NT_MAGIC
0x1b8, _PART_START 0x1be), grub-core/boot/i386/pc/diskboot.S (the blocklist
at the end of core.img's first sector: start u64, len u16, segment u16) and
what util/setup.c does when it embeds core.img after the MBR of a hard disk
(the BPB taken from the disk, 0xff "use the BIOS's boot drive", the drive
check jump replaced by two NOPs, the disk's table from 0x1b8 on; the
Reed-Solomon codes left out, as --no-rs-codes does).

Reproducible: the same inputs and SOURCE_DATE_EPOCH give the same bytes
(fixed volume serial and disk signature, file dates from the epoch in UTC,
files written in sorted order; tests/boot/test_usbimage.py builds it twice).
Bad input is one ToolError line, and nothing is left behind (a temporary
file renamed into place at the end)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

from clockbench import errors
from clockbench.release import secureboot

SECTOR = 512
PART_START = 2048  # LBA of the FAT partition: 1 MiB, the usual alignment; core.img lives before it
IMAGE_MB = 16  # room for shim, MokManager, GRUB, both kernels (about 5 MB) with margin
PART_TYPE_ESP = 0xEF  # "EFI system partition" in an MBR (UEFI 2.10, 5.2.2)
VOLUME_SERIAL = 0x434C4B42  # "CLKB": the FAT volume serial, fixed (mformat would pick one at random)
DISK_SIGNATURE = 0x434C4B42  # the MBR's disk signature at 0x1b8, fixed as well
VOLUME_LABEL = "CLOCKBENCH"
CLUSTER_SECTORS = 4  # 2 KiB clusters: 7680 of them in 15 MiB, so FAT16 (mformat's default would be FAT12)
HEADS, SECTORS_PER_TRACK = 64, 32  # the FAT's geometry (as secureboot.make_esp) and the table's CHS

# include/grub/i386/pc/boot.h (GRUB 2.06)
BPB_START, BPB_END = 0x3, 0x5A
KERNEL_SECTOR = 0x5C  # u64: the LBA of core.img's first sector
BOOT_DRIVE = 0x64  # u8: 0xff = the drive the BIOS booted from (DL)
DRIVE_CHECK = 0x66  # a 2-byte jmp; setup.c puts two NOPs here on a hard disk
WINDOWS_NT_MAGIC = 0x1B8  # from here to 0x1fe: the disk signature and the partition table
PART_TABLE = 0x1BE
BLOCKLIST = SECTOR - 12  # diskboot.S: the last 12 bytes of core.img's first sector
KERNEL_SEG = 0x800  # GRUB_BOOT_I386_PC_KERNEL_SEG: diskboot.img loads at 0x8000, the rest right after

GRUB_PC_DIR = Path("/usr/lib/grub/i386-pc")
GRUB_PREFIX = "(,msdos1)/boot/grub"  # no drive: GRUB fills in the one it booted from
# iso/grub.cfg's commands on a BIOS: the disk, the table, the FAT, the menu,
# Multiboot 2, the serial port and the SMBIOS string `clockbench run` passes
GRUB_PC_MODULES = ["biosdisk", "part_msdos", "fat", "normal", "configfile", "search", "search_fs_file", "test", "echo",
                   "regexp", "smbios", "serial", "terminal", "all_video", "multiboot2", "boot", "sleep", "ls", "cat",
                   "reboot", "halt"]

# (path on the FAT, the build's name for it), in the order written: sorted
FAT_DIRS = ["::/EFI", "::/EFI/BOOT", "::/boot", "::/boot/grub"]
ESP_FILES = {  # as on the ISO's EFI partition (secureboot.ESP_FILES), plus the BIOS side
    "BOOTX64.EFI": "::/EFI/BOOT/BOOTX64.EFI", "clockbench.efi": "::/EFI/BOOT/clockbench.efi",
    "grubx64.efi": "::/EFI/BOOT/grubx64.efi", "mmx64.efi": "::/EFI/BOOT/mmx64.efi",
    "clockbench.elf": "::/boot/clockbench.elf", "grub.cfg": "::/boot/grub/grub.cfg", "clockbench.cer": "::/clockbench.cer",
}


def source_date_epoch(env=os.environ, cwd: Path | None = None) -> int:
    """SOURCE_DATE_EPOCH (the Makefile exports it), else the last commit's date."""
    value = env.get("SOURCE_DATE_EPOCH")
    if value is None:
        r = subprocess.run(["git", "log", "-1", "--format=%ct"], capture_output=True, text=True, cwd=cwd)
        value = r.stdout.strip() if r.returncode == 0 else ""
        if not value:
            raise errors.UsageError("SOURCE_DATE_EPOCH is not set and `git log` gives no commit date: set it "
                                    "(e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct))")
    if not value.isdigit() or not 315532800 <= int(value) < 4102444800:  # FAT dates: 1980 to 2099
        raise errors.UsageError(f"SOURCE_DATE_EPOCH={value!r} is not a time FAT can hold (seconds since 1970, 1980 to 2099)")
    return int(value)


def _chs(lba: int) -> bytes:
    """The 3-byte CHS address of an LBA in the table's geometry (past
    cylinder 1023: the 1023/254/63 marker)."""
    c, rem = divmod(lba, HEADS * SECTORS_PER_TRACK)
    h, s = divmod(rem, SECTORS_PER_TRACK)
    if c > 1023:
        return bytes([0xFE, 0xFF, 0xFF])
    return bytes([h, ((c >> 2) & 0xC0) | (s + 1), c & 0xFF])


def mbr(boot_img: bytes, total_sectors: int) -> bytes:
    """Sector 0: boot.img's code as grub-bios-setup leaves it on a blank hard
    disk, then the disk signature and one active partition, type 0xEF."""
    if len(boot_img) != SECTOR or boot_img[510:512] != b"\x55\xaa":
        raise errors.BadInput("GRUB's boot.img is not a 512-byte boot sector (grub-pc-bin; `make deps`)")
    s = bytearray(boot_img)
    s[BPB_START:BPB_END] = bytes(BPB_END - BPB_START)  # setup.c copies the disk's own BPB: none on a blank disk
    struct.pack_into("<Q", s, KERNEL_SECTOR, 1)
    s[BOOT_DRIVE] = 0xFF
    s[DRIVE_CHECK:DRIVE_CHECK + 2] = b"\x90\x90"
    s[WINDOWS_NT_MAGIC:SECTOR] = bytes(SECTOR - WINDOWS_NT_MAGIC)
    struct.pack_into("<I", s, WINDOWS_NT_MAGIC, DISK_SIGNATURE)
    last = total_sectors - 1
    entry = bytes([0x80]) + _chs(PART_START) + bytes([PART_TYPE_ESP]) + _chs(last) + struct.pack("<II", PART_START, total_sectors - PART_START)
    s[PART_TABLE:PART_TABLE + 16] = entry
    s[510:512] = b"\x55\xaa"
    return bytes(s)


def patch_core(core: bytes) -> bytes:
    """core.img for LBA 1: its first sector's blocklist names the rest
    (LBA 2 on, len sectors, loaded at segment 0x820), as setup.c writes it."""
    n = (len(core) + SECTOR - 1) // SECTOR
    if n < 2:
        raise errors.BadInput(f"grub-mkimage made a core.img of {len(core)} bytes: too small to be one")
    if n > PART_START - 1:
        raise errors.BadInput(f"core.img is {n} sectors: more than the {PART_START - 1} before the partition")
    c = bytearray(core) + bytes(n * SECTOR - len(core))
    struct.pack_into("<QHH", c, BLOCKLIST, 2, n - 1, KERNEL_SEG + (SECTOR >> 4))
    return bytes(c)


def _run(cmd: list[str], what: str, env: dict | None = None) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        why = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise errors.CannotWrite(f"{what} failed: {why[:200]}")


def _check_inputs(elf: Path, grub_efi: Path, kernel_efi: Path, cert_der: Path, grub_cfg: Path) -> None:
    """Each input there, of its kind, and the two EFI programs signed by the
    certificate that goes on the stick (as `clockbench flash` checks)."""
    for p in (elf, grub_efi, kernel_efi, cert_der, grub_cfg):
        if not p.is_file():
            raise errors.NoInput(f"{p} not found (`make img` builds it)")
    with elf.open("rb") as f:
        if f.read(4) != b"\x7fELF":
            raise errors.BadInput(f"{elf} is not an ELF file: not the kernel (`make kernel`)")
    if b"menuentry" not in grub_cfg.read_bytes():
        raise errors.BadInput(f"{grub_cfg} has no menuentry: not the stick's GRUB menu (iso/grub.cfg)")
    for p in (grub_efi, kernel_efi):
        secureboot.check_pe(p)
    x509, _, serialization, _ = secureboot._crypto()
    try:
        cert = x509.load_der_x509_certificate(cert_der.read_bytes())
    except ValueError:
        raise errors.BadInput(f"{cert_der} is not a DER certificate") from None
    secureboot.check_cert_use(cert, cert_der)
    verify_signed([grub_efi, kernel_efi], cert.public_bytes(serialization.Encoding.PEM), lambda p: f"{p} is not signed by {cert_der}")


def verify_signed(files: list[Path], cert_pem: bytes, why) -> None:
    if not shutil.which("sbverify"):
        raise errors.MissingTool("sbverify is not installed (Debian package sbsigntool; `make deps`)")
    with tempfile.TemporaryDirectory(prefix="clockbench-img-") as d:
        pem = Path(d) / "cert.pem"
        pem.write_bytes(cert_pem)
        for p in files:
            r = subprocess.run(["sbverify", "--cert", str(pem), str(p)], capture_output=True, text=True)
            if r.returncode:
                raise errors.BadInput(why(p))


def build(out: Path, elf: Path, grub_efi: Path, kernel_efi: Path, cert_der: Path, grub_cfg: Path, epoch: int,
          shim_dir: Path = secureboot.SHIM_DIR, grub_pc_dir: Path = GRUB_PC_DIR) -> None:
    """Writes the disk image to out (a temporary beside it, renamed at the end)."""
    _check_inputs(elf, grub_efi, kernel_efi, cert_der, grub_cfg)
    shim, mm = secureboot.shim_files(shim_dir)
    boot_img = grub_pc_dir / "boot.img"
    if not boot_img.is_file():
        raise errors.MissingTool(f"{boot_img} not found: install grub-pc-bin (`make deps`)")
    for tool in ("grub-mkimage", "mformat", "mmd", "mcopy"):
        if not shutil.which(tool):
            raise errors.MissingTool(f"{tool} is not installed (grub-common, mtools; `make deps`)")
    sources = {"BOOTX64.EFI": shim, "mmx64.efi": mm, "grubx64.efi": grub_efi, "clockbench.efi": kernel_efi,
               "clockbench.elf": elf, "grub.cfg": grub_cfg, "clockbench.cer": cert_der}
    total = IMAGE_MB << 20
    need = sum(p.stat().st_size for p in sources.values())
    if need > total - (PART_START * SECTOR) - (1 << 20):  # a MiB for the FAT's own tables and clusters' slack
        raise errors.BadInput(f"the stick's files take {need / 1e6:.1f} MB: more than the {IMAGE_MB} MB image holds")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise errors.CannotWrite(f"cannot make {out.parent}: {e.strerror}") from None
    tmp = out.with_name(out.name + ".tmp")
    core = out.with_name(out.name + ".core.tmp")
    # mtools stamps new files and folders with SOURCE_DATE_EPOCH (mtools 4.0.32);
    # FAT keeps local time, so the zone is fixed
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch), "TZ": "UTC0", "MTOOLS_SKIP_CHECK": "1"}
    try:
        _run(["grub-mkimage", "-O", "i386-pc", "-d", str(grub_pc_dir), "-o", str(core), "-p", GRUB_PREFIX, *GRUB_PC_MODULES],
             "grub-mkimage (i386-pc)")
        core_img = patch_core(core.read_bytes())
        with tmp.open("wb") as f:
            f.truncate(total)
            f.write(mbr(boot_img.read_bytes(), total // SECTOR))
            f.write(core_img)
        part = f"{tmp}@@{PART_START * SECTOR}"
        _run(["mformat", "-i", part, "-N", f"{VOLUME_SERIAL:08X}", "-v", VOLUME_LABEL, "-T", str(total // SECTOR - PART_START),
              "-c", str(CLUSTER_SECTORS), "-h", str(HEADS), "-s", str(SECTORS_PER_TRACK), "-H", str(PART_START), "::"], "mformat", env)
        _run(["mmd", "-i", part, *FAT_DIRS], "mmd", env)
        for name, dest in sorted(ESP_FILES.items(), key=lambda kv: kv[1]):
            _run(["mcopy", "-i", part, str(sources[name]), dest], f"mcopy {name}", env)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        core.unlink(missing_ok=True)


# ---- reading an image back (clockbench flash) --------------------------------

def is_disk_image(path: Path) -> bool:
    """An MBR with our partition at PART_START (not the ISO, whose first
    sector is a hybrid MBR and which says CD001 at 0x8001)."""
    try:
        with path.open("rb") as f:
            head = f.read(0x8006)
    except OSError:
        return False
    if len(head) < SECTOR or head[510:512] != b"\x55\xaa" or head[0x8001:0x8006] == b"CD001":
        return False
    start = struct.unpack_from("<I", head, PART_TABLE + 8)[0]
    return head[PART_TABLE + 4] == PART_TYPE_ESP and start == PART_START


def check_image(image: Path) -> str:
    """Before a stick is written: the image's partition holds the Secure Boot
    chain (shim, MokManager, GRUB, the kernel, the certificate) and the BIOS
    side, its certificate is valid for code signing, and GRUB and the kernel
    verify against it. Returns the certificate's subject."""
    if not is_disk_image(image):
        raise errors.BadInput(f"{image} is not a clockbench disk image (no EFI partition at LBA {PART_START}): `make img`")
    if not shutil.which("mcopy"):
        raise errors.MissingTool("mcopy is not installed (mtools; `make deps`): it reads the image's partition")
    _, _, serialization, _ = secureboot._crypto()
    with tempfile.TemporaryDirectory(prefix="clockbench-img-") as d:
        for name, src in ESP_FILES.items():
            r = subprocess.run(["mcopy", "-n", "-i", f"{image}@@{PART_START * SECTOR}", src, str(Path(d) / name)],
                               capture_output=True, text=True, env={**os.environ, "MTOOLS_SKIP_CHECK": "1"})
            if r.returncode:
                raise errors.BadInput(f"{image}: its partition has no {src[3:]}: rebuild it (`make img`)")
        cert = secureboot._iso_cert(image, Path(d) / "clockbench.cer")
        verify_signed([Path(d) / "grubx64.efi", Path(d) / "clockbench.efi"], cert.public_bytes(serialization.Encoding.PEM),
                      lambda p: f"{image}: EFI/BOOT/{p.name} is not signed by the certificate on the stick: rebuild it (`make img`)")
        return cert.subject.rfc4514_string()


def main(args) -> int:
    epoch = source_date_epoch()
    build(Path(args.out), Path(args.elf), Path(args.grub), Path(args.kernel), Path(args.cert_der), Path(args.grub_cfg), epoch)
    return 0


def add_parser(sub) -> None:
    u = sub.add_parser("usbimg", help="(the Makefile's) make the raw USB disk image from the signed parts")
    u.add_argument("--out", required=True, help="the disk image to write, e.g. build/clockbench.img")
    u.add_argument("--elf", required=True, help="the Multiboot kernel, /boot/clockbench.elf")
    u.add_argument("--grub", required=True, help="the signed GRUB, EFI/BOOT/grubx64.efi")
    u.add_argument("--kernel", required=True, help="the signed kernel, EFI/BOOT/clockbench.efi")
    u.add_argument("--cert-der", required=True, help="the certificate in DER, /clockbench.cer")
    u.add_argument("--grub-cfg", required=True, help="the menu, /boot/grub/grub.cfg (iso/grub.cfg filled in)")
    u.set_defaults(func=main)
