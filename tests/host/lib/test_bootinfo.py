"""Multiboot 1 and 2 information parsing from crafted byte buffers."""

import struct

from helpers.hostlib import as_json

MB1 = 0x2BADB002
MB2 = 0x36D76289


def parse(lib, magic, mem: bytes, info_addr: int):
    return as_json(lib.shim_bootinfo(magic, mem, info_addr))


def mb2_tag(kind: int, body: bytes) -> bytes:
    raw = struct.pack("<II", kind, 8 + len(body)) + body
    return raw + b"\0" * (-len(raw) % 8)


def mb2_info(*tags: bytes, end=True) -> bytes:
    body = b"".join(tags) + (struct.pack("<II", 0, 8) if end else b"")
    return struct.pack("<II", 8 + len(body), 0) + body


def mmap_tag(entries):
    body = struct.pack("<II", 24, 0) + b"".join(struct.pack("<QQII", b, l, t, 0) for b, l, t in entries)
    return mb2_tag(6, body)


def test_mb2_all_tags(lib):
    rsdp_v1 = b"RSD PTR " + bytes(12)
    rsdp_v2 = b"RSD PTR " + bytes(28)
    fb = struct.pack("<QIIIBBH", 0xFD000000, 4096, 1024, 768, 32, 1, 0) + bytes([16, 8, 8, 8, 0, 8])
    info = mb2_info(
        mb2_tag(1, b"profile=quick\0"),
        mb2_tag(2, b"GRUB 2.06\0"),
        mmap_tag([(0, 0x9FC00, 1), (0x100000, 0x7EE0000, 1), (0xFFFC0000, 0x40000, 2)]),
        mb2_tag(8, fb),
        mb2_tag(14, rsdp_v1),
        mb2_tag(15, rsdp_v2),
        mb2_tag(99, b"unknown tags are skipped"),
    )
    r = parse(lib, MB2, info, 0)
    assert r["ok"] and r["protocol"] == 2 and r["error"] == ""
    assert r["cmdline"] == "profile=quick"
    assert r["loader"] == "GRUB 2.06"
    assert r["mem"] == [0, 0x9FC00, 1, 0x100000, 0x7EE0000, 1, 0xFFFC0000, 0x40000, 2]
    assert r["rsdp_old"] and r["rsdp_new"] and r["rsdp_new_len"] == 36
    assert r["rsdp_old_sig"] == "RSD PTR "
    assert r["fb"] and r["fb_addr"] == 0xFD000000 and r["fb_width"] == 1024 and r["fb_height"] == 768
    assert r["fb_pitch"] == 4096 and r["fb_bpp"] == 32 and r["fb_type"] == 1 and r["fb_red_pos"] == 16 and r["fb_blue_size"] == 8


def test_mb2_at_an_offset_in_memory(lib):
    info = mb2_info(mb2_tag(1, b"x=1\0"))
    mem = bytes(0x1000) + info
    assert parse(lib, MB2, mem, 0x1000)["cmdline"] == "x=1"


def test_mb2_tag_overrunning_total_size_is_rejected_keeping_earlier_tags(lib):
    good = mb2_tag(1, b"kept=1\0")
    bad = struct.pack("<II", 2, 4096)  # claims 4 KiB inside a tiny structure
    info = mb2_info(good, bad, end=False)
    r = parse(lib, MB2, info + bytes(64), 0)
    assert not r["ok"]
    assert "bad size 4096" in r["error"]
    assert r["cmdline"] == "kept=1"


def test_mb2_missing_end_tag(lib):
    r = parse(lib, MB2, mb2_info(mb2_tag(1, b"a\0"), end=False), 0)
    assert not r["ok"] and "no end tag" in r["error"]


def test_mb2_implausible_total_size(lib):
    r = parse(lib, MB2, struct.pack("<II", 1 << 30, 0) + bytes(8), 0)
    assert not r["ok"] and "total_size" in r["error"]
    r = parse(lib, MB2, struct.pack("<II", 4, 0) + bytes(8), 0)
    assert not r["ok"]


def test_mb2_memory_map_with_larger_entries_and_truncation(lib):
    # entry_size 32: the parser must step by the declared size
    body = struct.pack("<II", 32, 0) + b"".join(struct.pack("<QQII", i << 20, 4096, 1, 0) + bytes(8) for i in range(70))
    r = parse(lib, MB2, mb2_info(mb2_tag(6, body)), 0)
    assert r["ok"] and r["mem_truncated"]
    assert len(r["mem"]) == 64 * 3
    assert r["mem"][3] == 1 << 20


def test_mb1_with_pointers(lib):
    # layout: info at 0x100, cmdline at 0x200, loader at 0x240, mmap at 0x300
    mem = bytearray(0x400)
    flags = (1 << 2) | (1 << 6) | (1 << 9)
    entries = b"".join(struct.pack("<IQQI", 20, b, l, t) for b, l, t in [(0, 0x9FC00, 1), (0x100000, 0xFEE0000, 1)])
    struct.pack_into("<I", mem, 0x100, flags)
    struct.pack_into("<I", mem, 0x100 + 16, 0x200)
    struct.pack_into("<II", mem, 0x100 + 44, len(entries), 0x300)
    struct.pack_into("<I", mem, 0x100 + 64, 0x240)
    mem[0x200:0x20F] = b"kernel a=1 b=2\0"
    mem[0x240:0x245] = b"qemu\0"
    mem[0x300:0x300 + len(entries)] = entries
    r = parse(lib, MB1, bytes(mem), 0x100)
    assert r["ok"] and r["protocol"] == 1
    assert r["cmdline"] == "kernel a=1 b=2"
    assert r["loader"] == "qemu"
    assert r["mem"] == [0, 0x9FC00, 1, 0x100000, 0xFEE0000, 1]
    assert not r["rsdp_old"] and not r["rsdp_new"]


def test_mb1_flags_clear_means_fields_ignored(lib):
    mem = bytearray(0x200)
    struct.pack_into("<I", mem, 16, 0xDEAD)  # cmdline pointer, but flag clear
    r = parse(lib, MB1, bytes(mem), 0)
    assert r["ok"] and r["cmdline"] == "" and r["mem"] == []


def test_mb1_bad_mmap_entry_size(lib):
    mem = bytearray(0x200)
    struct.pack_into("<I", mem, 0, 1 << 6)
    struct.pack_into("<II", mem, 44, 48, 0x100)
    struct.pack_into("<I", mem, 0x100, 4)  # entry size below 20
    r = parse(lib, MB1, bytes(mem), 0)
    assert not r["ok"] and "entry size 4 at offset 0 does not fit" in r["error"]


def test_mb1_huge_mmap_entry_size_cannot_loop_or_overrun(lib):
    # size + 4 would wrap to 0 in 32 bits: the walk must stop, not spin
    mem = bytearray(0x200)
    struct.pack_into("<I", mem, 0, 1 << 6)
    struct.pack_into("<II", mem, 44, 48, 0x100)
    struct.pack_into("<I", mem, 0x100, 0xFFFFFFFC)
    r = parse(lib, MB1, bytes(mem), 0)
    assert not r["ok"] and "does not fit" in r["error"]


def test_mb2_huge_mmap_entry_size_is_rejected(lib):
    body = struct.pack("<II", 0xFFFFFFF8, 0) + bytes(24)
    r = parse(lib, MB2, mb2_info(mb2_tag(6, body)), 0)
    assert not r["ok"] and "does not fit" in r["error"] and r["mem"] == []


def test_unknown_magic(lib):
    r = parse(lib, 0x12345678, bytes(64), 0)
    assert not r["ok"] and r["protocol"] == 0 and "0x12345678" in r["error"]


# Xen's PVH start_info (xen/include/public/arch-x86/hvm/start_info.h)
PVH = 0x336EC578
START = 0x40  # where the tests' start_info sits (EBX)


def pvh_image(version=1, cmdline=b"profile=quick\0", rsdp=None, memmap=((0, 0x9FC00, 1), (0x100000, 0xFF00000, 1)),
              entries=None, magic=PVH) -> bytes:
    """A guest memory image: start_info at 0x40, the command line at 0x100,
    the RSDP at 0x200, the memory map at 0x300, as a VMM lays them out."""
    mem = bytearray(0x1000)
    cmd_at = 0x100 if cmdline is not None else 0
    rsdp_at = 0x200 if rsdp is not None else 0
    map_at = 0x300 if memmap else 0
    n = len(memmap) if entries is None else entries
    struct.pack_into("<IIIIQQQ", mem, START, magic, version, 0, 0, 0, cmd_at, rsdp_at)
    if version >= 1:
        struct.pack_into("<QII", mem, START + 40, map_at, n, 0)
    if cmdline is not None:
        mem[cmd_at:cmd_at + len(cmdline)] = cmdline
    if rsdp is not None:
        mem[rsdp_at:rsdp_at + len(rsdp)] = rsdp
    for i, (base, length, kind) in enumerate(memmap or ()):
        struct.pack_into("<QQII", mem, map_at + 24 * i, base, length, kind, 0)
    return bytes(mem)


def rsdp(revision: int, length: int = 36) -> bytes:
    raw = bytearray(b"RSD PTR " + bytes(28))
    raw[15] = revision
    struct.pack_into("<I", raw, 20, length)
    return bytes(raw)


def test_pvh_version_1_gives_command_line_memory_map_and_rsdp(lib):
    r = parse(lib, PVH, pvh_image(rsdp=rsdp(2)), START)
    assert r["ok"] and r["protocol"] == 3 and r["protocol_name"] == "PVH" and r["pvh_version"] == 1 and r["error"] == ""
    assert r["cmdline"] == "profile=quick" and r["loader"] == ""
    assert r["mem"] == [0, 0x9FC00, 1, 0x100000, 0xFF00000, 1]
    assert r["rsdp_new"] and r["rsdp_new_len"] == 36 and not r["rsdp_old"]


def test_pvh_acpi_1_rsdp_is_20_bytes(lib):
    r = parse(lib, PVH, pvh_image(rsdp=rsdp(0)), START)
    assert r["rsdp_old"] and not r["rsdp_new"] and r["rsdp_old_sig"] == "RSD PTR "


def test_pvh_rsdp_with_a_wild_length_copies_acpi_2_size(lib):
    r = parse(lib, PVH, pvh_image(rsdp=rsdp(2, length=0xFFFFFFFF)), START)
    assert r["rsdp_new"] and r["rsdp_new_len"] == 36


def test_pvh_version_0_has_no_memory_map(lib):
    r = parse(lib, PVH, pvh_image(version=0), START)
    assert r["ok"] and r["pvh_version"] == 0 and r["mem"] == [] and r["cmdline"] == "profile=quick"


def test_pvh_without_command_line_or_acpi(lib):
    r = parse(lib, PVH, pvh_image(cmdline=None), START)
    assert r["ok"] and r["cmdline"] == "" and not r["rsdp_new"] and not r["rsdp_old"]


def test_pvh_xen_memory_types_beyond_e820_are_reserved(lib):
    r = parse(lib, PVH, pvh_image(memmap=((0, 0x1000, 6), (0x1000, 0x1000, 7), (0x2000, 0x1000, 3))), START)
    assert r["mem"] == [0, 0x1000, 2, 0x1000, 0x1000, 2, 0x2000, 0x1000, 3]


def test_pvh_memory_map_beyond_the_table_is_cut_and_said(lib):
    r = parse(lib, PVH, pvh_image(memmap=[(i * 0x1000, 0x1000, 1) for i in range(70)]), START)
    assert r["ok"] and r["mem_truncated"] and len(r["mem"]) == 64 * 3


def test_pvh_absurd_entry_count_is_refused(lib):
    r = parse(lib, PVH, pvh_image(entries=1_000_000), START)
    assert not r["ok"] and "1000000 entries" in r["error"] and r["cmdline"] == "profile=quick"


def test_pvh_wrong_magic_in_start_info_is_refused(lib):
    r = parse(lib, PVH, pvh_image(magic=0x12345678), START)
    assert not r["ok"] and "0x12345678" in r["error"]


def test_pvh_with_no_start_info_is_refused(lib):
    r = parse(lib, PVH, pvh_image(), 0)
    assert not r["ok"] and "no start_info" in r["error"] and r["protocol_name"] == "PVH"
EFI_STATE = 0x43424553  # lib/bootinfo.h, BOOTINFO_MB2_TAG_EFI_STATE (efi/stub.c writes it)


def efi_state_tag(secure_boot: int, setup_mode: int, shim: int = 0, fw_rev: int = 0x10000, vendor: bytes = b"") -> bytes:
    return mb2_tag(EFI_STATE, struct.pack("<BBBBII", 1, secure_boot, setup_mode, shim, fw_rev, 0x2004C) + vendor)


def test_secure_boot_state_from_the_efi_entry(lib):
    r = parse(lib, MB2, mb2_info(efi_state_tag(1, 0, shim=1, vendor=b"EDK II\0"), mb2_tag(12, struct.pack("<Q", 0x7F9EE018))), 0)
    assert r["ok"] and r["efi_state"] and r["secure_boot"] == "on"
    assert r["efi_setup_mode"] == 0 and r["efi_shim"] and r["efi_fw_revision"] == 0x10000
    assert r["efi_system_table"] == 0x7F9EE018 and r["efi_firmware_vendor"] == "EDK II"
    assert parse(lib, MB2, mb2_info(efi_state_tag(0, 1)), 0)["secure_boot"] == "off"
    # SecureBoot unreadable (0xFF): unknown, not off
    assert parse(lib, MB2, mb2_info(efi_state_tag(0xFF, 0xFF)), 0)["secure_boot"] == "unknown"


def test_secure_boot_unknown_without_the_efi_entry(lib):
    """GRUB's multiboot2 and Multiboot 1 boots carry no state: unknown."""
    assert parse(lib, MB2, mb2_info(mb2_tag(1, b"a\0")), 0)["secure_boot"] == "unknown"
    short = mb2_tag(EFI_STATE, b"\x01\x01")  # too short to trust
    r = parse(lib, MB2, mb2_info(short), 0)
    assert r["ok"] and not r["efi_state"] and r["secure_boot"] == "unknown"
