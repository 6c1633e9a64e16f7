"""Secure Boot on a BIOS boot: Multiboot 2 information with no EFI tag (a
loader started by UEFI always passes the system table, tag 11 or 12;
Multiboot 2 spec 3.6.13-3.6.16) means the machine booted by BIOS, where
Secure Boot does not exist: "not applicable (BIOS)", in the image and in
the host report, never "unknown"."""

import struct

from clockbench.report import report
from test_bootinfo import MB1, MB2, efi_state_tag, mb2_info, mb2_tag, parse


def test_multiboot2_with_no_efi_tag_is_a_bios_boot(lib):
    # GRUB under SeaBIOS: a command line, a loader name, a memory map, the ACPI 1.0 RSDP
    info = mb2_info(mb2_tag(1, b"quick\0"), mb2_tag(2, b"GRUB 2.06\0"), mb2_tag(14, b"RSD PTR " + bytes(12)))
    r = parse(lib, MB2, info, 0)
    assert r["ok"] and r["firmware"] == "bios" and r["secure_boot_shown"] == "not applicable (BIOS)"
    assert r["secure_boot"] == "unknown"  # the machine record's word is unchanged: nothing was read
    assert r["efi_system_table"] == 0 and not r["efi_boot_services"]


def test_any_efi_tag_is_a_uefi_boot(lib):
    """GRUB under UEFI: the 64-bit (or a 32-bit firmware's) system table,
    and tag 18 when it left boot services running; Secure Boot is then
    unknown unless clockbench's EFI entry read it."""
    cases = [
        (mb2_tag(12, struct.pack("<Q", 0x7F9EE018)), 0x7F9EE018, False),
        (mb2_tag(11, struct.pack("<I", 0x3F8E0018)), 0x3F8E0018, False),
        (mb2_tag(12, struct.pack("<Q", 0x7F9EE018)) + mb2_tag(18, b""), 0x7F9EE018, True),
        (mb2_tag(18, b""), 0, True),
    ]
    for tags, table, bs in cases:
        r = parse(lib, MB2, mb2_info(mb2_tag(1, b"\0"), tags), 0)
        assert r["ok"] and r["firmware"] == "uefi", tags
        assert r["secure_boot"] == r["secure_boot_shown"] == "unknown"
        assert r["efi_system_table"] == table and r["efi_boot_services"] == bs
    r = parse(lib, MB2, mb2_info(efi_state_tag(0, 0)), 0)
    assert r["firmware"] == "uefi" and r["secure_boot_shown"] == "off"


def test_multiboot1_cannot_tell(lib):
    mem = bytearray(0x100)
    struct.pack_into("<I", mem, 0, 0)  # flags: nothing
    r = parse(lib, MB1, bytes(mem), 0)
    assert r["ok"] and r["firmware"] is None and r["secure_boot_shown"] == "unknown"


def mb1_with_loader(name: bytes) -> bytes:
    mem = bytearray(0x100)
    struct.pack_into("<I", mem, 0, 1 << 9)  # flags: the loader's name
    struct.pack_into("<I", mem, 64, 0x80)
    mem[0x80:0x80 + len(name) + 1] = name + b"\0"
    return bytes(mem)


def test_qemus_own_multiboot1_loader_is_a_bios_boot_as_the_report_says(lib):
    """QEMU's -kernel Multiboot loader is an option ROM that only SeaBIOS or
    qboot runs: the image says what the host report says."""
    r = parse(lib, MB1, mb1_with_loader(b"qemu"), 0)
    assert r["ok"] and r["loader"] == "qemu" and r["secure_boot"] == "unknown"
    assert r["secure_boot_shown"] == "not applicable (BIOS)" == report.secure_boot({"machine": {"loader": "qemu"}})
    # GRUB can load a Multiboot 1 kernel under UEFI too: there it cannot tell
    r = parse(lib, MB1, mb1_with_loader(b"GRUB 2.06"), 0)
    assert r["secure_boot_shown"] == "unknown"


def test_a_pvh_boot_has_no_uefi_in_the_image_and_the_report(lib):
    from test_bootinfo import PVH, START, pvh_image

    r = parse(lib, PVH, pvh_image(), START)
    assert r["ok"] and r["firmware"] is None and r["secure_boot"] == "unknown"
    shown = report.secure_boot({"machine": {"boot_protocol": "pvh", "secure_boot": "unknown"}})
    assert r["secure_boot_shown"] == shown == "not applicable (PVH entry: no UEFI)"


def test_the_report_says_not_applicable_for_a_bios_grub_boot():
    """A stick booted by GRUB under BIOS on a real machine: the loader is
    GRUB, not qemu, and no metadata names the firmware; the image's
    `firmware` says bios."""
    res = {"machine": {"loader": "GRUB 2.06", "boot_protocol": "multiboot2", "secure_boot": "unknown", "firmware": "bios"}}
    assert report.secure_boot(res) == "not applicable (BIOS)"
    res["machine"]["firmware"] = "uefi"
    assert report.secure_boot(res) == "unknown"
    # the run's metadata naming a BIOS firmware says the same
    res["machine"]["firmware"] = None
    assert report.secure_boot(res, {"qemu": {"firmware": "seabios"}}) == "not applicable (BIOS)"
    assert report.secure_boot(res, {"qemu": {"firmware": "uefi"}}) == "unknown"
    res["machine"]["secure_boot"] = "off"
    assert report.secure_boot(res) == "off"
