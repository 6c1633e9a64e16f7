"""How the image ends the machine: the FADT's PM1 control blocks and sleep
control register, \\_S5 from the DSDT (lib/aml.c), QEMU's fw_cfg device in
the DSDT, read from real tables.

Where the bytes come from:
- tests/host/data/acpi-qemu-7.2-{pc,q35,microvm}.json: this machine's QEMU
  7.2.22 (Debian 12), `-machine pc|q35|microvm -accel tcg -m 64 -nodefaults`,
  the firmware's tables saved from guest memory with the monitor's pmemsave.
- Cloud Hypervisor v53 (source commit 9ed824d6d, the one the binary in
  ../shared/vmm was built from): vmm/src/device_manager.rs,
  create_s5_sleep_state(), whose unit test pins the bytes used here; its FADT
  fields from vmm/src/acpi.rs, create_facp_table() (HW_REDUCED, sleep control
  at I/O 0x600, with and without the PM1a blocks it adds for nested Hyper-V).
- Firecracker v1.16.1: src/acpi-tables/src/aml.rs's test of a one-element
  _S5_ package (Firecracker's own DSDT has no _S5)."""

import ctypes
import json
import struct

import pytest

from helpers import acpi_builder as ab
from helpers.hostlib import as_json
from helpers.paths import HOST_DATA

# Cloud Hypervisor v53: Name(_S5_, Package(){5, 5, 0, 0})
CH_S5 = bytes([0x08, 0x5F, 0x53, 0x35, 0x5F, 0x12, 0x08, 0x04, 0x0A, 0x05, 0x0A, 0x05, 0x00, 0x00])
# Firecracker v1.16.1 aml.rs test: Name(_S5_, Package(){5})
FC_S5 = bytes([0x08, 0x5F, 0x53, 0x35, 0x5F, 0x12, 0x04, 0x01, 0x0A, 0x05])


@pytest.fixture(scope="module")
def power(lib):
    lib.shim_acpi_power.restype = ctypes.c_char_p
    lib.shim_acpi_power.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint32]
    lib.shim_aml_s5.restype = ctypes.c_char_p
    lib.shim_aml_s5.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
    lib.shim_aml_has_string_hid.restype = ctypes.c_bool
    lib.shim_aml_has_string_hid.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p]
    return lib


def s5(lib, aml: bytes):
    return as_json(lib.shim_aml_s5(aml, len(aml)))


def qemu_machine(lib, name: str):
    f = json.loads((HOST_DATA / f"acpi-qemu-7.2-{name}.json").read_text())
    mem, rsdp = bytes.fromhex(f["tables"]), bytes.fromhex(f["rsdp"])
    return as_json(lib.shim_acpi_power(mem, len(mem), f["base"], rsdp, len(rsdp)))


@pytest.mark.parametrize("name", ["pc", "q35"])
def test_qemu_pc_and_q35_s5_through_pm1a(power, name):
    r = qemu_machine(power, name)
    # QEMU's PIIX4 and ICH9 PM: PM1a control at I/O 0x604 (SeaBIOS's PM base
    # 0x600 + 4), 2 bytes; \_S5 = Package(){0, 0, 0, 0}: SLP_TYP 0 is soft off
    # in hw/acpi/core.c acpi_pm1_cnt_write
    assert r["dsdt"] and not r["hardware_reduced"]
    assert r["pm1a_cnt"] == [1, 16, 0x604] and r["pm1_cnt_len"] == 2
    assert r["pm1b_cnt"][2] == 0
    assert r["pm1a_cnt_field"] == ("X_PM1a_CNT_BLK" if name == "q35" else "PM1a_CNT_BLK")
    assert r["s5"] and r["slp_typa"] == 0 and r["slp_typb"] == 0, r["s5_why"]
    assert r["qemu_fw_cfg"]
    assert r["sleep_control"][2] == 0
    assert r["iapc_valid"] == (name == "q35")


def test_qemu_microvm_s5_through_the_ged_sleep_register(power):
    r = qemu_machine(power, "microvm")
    # hardware-reduced, the GED's sleep control register in MMIO (space 0),
    # \_S5 = Package(){5, 0, 0, 0} (ACPI_GED_SLP_TYP_S5)
    assert r["hardware_reduced"] and r["dsdt"]
    assert r["sleep_control"][0] == 0 and r["sleep_control"][1] == 8 and r["sleep_control"][2] != 0
    assert r["s5"] and r["slp_typa"] == 5
    assert r["qemu_fw_cfg"]


def ch_machine(legacy_pm1a: bool, dsdt_aml: bytes = CH_S5, vendor: bytes = b"CLOUDHYP"):
    """Cloud Hypervisor v53's FADT as vmm/src/acpi.rs builds it."""
    mem = ab.Memory(0, 0x100000)
    dsdt = ab.table(b"DSDT", dsdt_aml, revision=6, oem=b"CLOUDH")
    dsdt_addr = mem.place(dsdt)
    body = bytearray(276 - 36)
    put = lambda off, fmt, *v: struct.pack_into(fmt, body, off - 36, *v)
    put(112, "<I", (1 << 20) | (1 << 10) | (1 << 8))
    put(140, "<Q", dsdt_addr)
    body[244 - 36:256 - 36] = struct.pack("<BBBBQ", 1, 8, 0, 1, 0x600)
    body[256 - 36:268 - 36] = struct.pack("<BBBBQ", 1, 8, 0, 1, 0x600)
    body[208 - 36:220 - 36] = struct.pack("<BBBBQ", 1, 32, 0, 3, 0x608)
    body[268 - 36:276 - 36] = vendor
    if legacy_pm1a:
        put(64, "<I", 0x610)
        body[89 - 36] = 2
        body[172 - 36:184 - 36] = struct.pack("<BBBBQ", 1, 16, 0, 2, 0x610)
    fadt = ab.table(b"FACP", bytes(body), revision=6, oem=b"CLOUDH")
    fadt_addr = mem.place(fadt)
    xsdt_addr = mem.place(ab.root_table([fadt_addr], xsdt=True))
    ptr = ab.rsdp(0, xsdt_addr, oem=b"CLOUDH")
    return mem, bytes(ptr)


@pytest.mark.parametrize("legacy_pm1a", [False, True])
def test_cloud_hypervisor_sleep_control_register(power, legacy_pm1a):
    mem, ptr = ch_machine(legacy_pm1a)
    r = as_json(power.shim_acpi_power(bytes(mem.data), len(mem.data), mem.base, ptr, len(ptr)))
    assert r["hardware_reduced"] and r["sleep_control"] == [1, 8, 0x600]
    assert r["s5"] and r["slp_typa"] == 5 and r["slp_typb"] == 5
    # the value the image writes: (SLP_TYP << 2) | SLP_EN (1 << 5) = 0x34, the
    # byte Cloud Hypervisor's AcpiShutdownDevice exits on
    assert (r["slp_typa"] << 2) | (1 << 5) == 0x34
    assert r["hypervisor_vendor"] == "CLOUDHYP" and not r["qemu_fw_cfg"]
    # the PM1a block it adds for nested Hyper-V is read but is not the way on a
    # hardware-reduced machine (kernel/finish.c uses SLEEP_CONTROL_REG there)
    assert r["pm1a_cnt"][2] == (0x610 if legacy_pm1a else 0)


def test_s5_real_encodings(power):
    r = s5(power, CH_S5)
    assert r["found"] and (r["slp_typa"], r["slp_typb"], r["elements"], r["offset"]) == (5, 5, 4, 0)
    r = s5(power, FC_S5)
    assert r["found"] and (r["slp_typa"], r["slp_typb"], r["elements"]) == (5, 5, 1)
    # \_S5_ under the root prefix, ZeroOp/OneOp/Word/DWord/QWord data, after other AML
    pre = bytes([0x10, 0x05, 0x5C, 0x5F, 0x53, 0x42, 0x5F])  # Scope(\_SB_) {}
    for elem, want in [(b"\x00", 0), (b"\x01", 1), (b"\x0b\x07\x00", 7), (b"\x0c\x06\x00\x00\x00", 6),
                       (b"\x0e" + (3).to_bytes(8, "little"), 3)]:
        body = bytes([2]) + elem + b"\x0a\x02"
        aml = pre + b"\x08\x5c_S5_\x12" + bytes([1 + len(body)]) + body
        r = s5(power, aml)
        assert r["found"] and r["slp_typa"] == want and r["slp_typb"] == 2 and r["offset"] == len(pre), (elem, r)
    # a two-byte PkgLength: lead 0x40 | low nibble, then the next 8 bits
    body = bytes([2, 0x0A, 5, 0x0A, 6]) + b"\xa3" * 20  # padding counted in the length
    n = 2 + len(body)
    aml = b"\x08_S5_\x12" + bytes([0x40 | (n & 0xF), n >> 4]) + body
    r = s5(power, aml)
    assert r["found"] and (r["slp_typa"], r["slp_typb"]) == (5, 6)


@pytest.mark.parametrize("aml,why", [
    (b"", "no \\_S5_ package in the DSDT (0 bytes"),
    (b"\x08_S4_\x12\x04\x01\x0a\x05", "no \\_S5_ package"),
    (b"\x08_S5_", "the table ends after its name"),
    (b"\x08_S5_\x0a\x05", "is not a package (opcode 0x0a)"),
    (b"\x08_S5_\x12", "the package ends before its PkgLength"),
    (b"\x08_S5_\x12\x08\x04\x0a\x05", "PkgLength 8 does not fit"),
    (b"\x08_S5_\x12\x01", "PkgLength 1 does not fit"),
    (b"\x08_S5_\x12\x70\x00\x04", "bad PkgLength lead byte 0x70"),
    (b"\x08_S5_\x12\xc0\x01", "PkgLength is cut off"),
    (b"\x08_S5_\x12\x02\x00", "declares no elements"),
    (b"\x08_S5_\x12\x03\x02\x0a", "element 0 is not an integer"),
    (b"\x08_S5_\x12\x03\x02\x0a\x05", "element 0 is not an integer"),
    (b"\x08_S5_\x12\x04\x02\x0a\x05", "the package ends before element 1"),
    (b"\x08_S5_\x12\x04\x02\x0a\x09\x00", "element 0 is 9, not a 3-bit SLP_TYP"),
    (b"\x08_S5_\x12\x04\x02\xff\x00", "element 0 is 18446744073709551615"),
    (b"\x08_S5_\x12\x05\x02\x0a\x05\x5b", "element 1 is not an integer (opcode 0x5b)"),
])
def test_s5_malformed_gives_a_reason(power, aml, why):
    r = s5(power, aml)
    assert not r["found"] and why in r["why"], r


def test_s5_every_truncation_of_real_bytes_is_safe(power):
    for src in (CH_S5, FC_S5):
        for n in range(len(src)):
            r = s5(power, src[:n])
            assert not r["found"] and r["why"]


def test_s5_parse_of_the_qemu_dsdt_every_prefix(power):
    """Every truncation of q35's real DSDT: an answer or a reason, never a crash."""
    f = json.loads((HOST_DATA / "acpi-qemu-7.2-q35.json").read_text())
    tables = bytes.fromhex(f["tables"])
    dsdt = tables[0x40:]  # the DSDT sits at base + 0x40
    assert dsdt[:4] == b"DSDT"
    length = struct.unpack_from("<I", dsdt, 4)[0]
    aml = dsdt[36:length]
    full = s5(power, aml)
    assert full["found"]
    for n in range(0, len(aml), 97):
        r = s5(power, aml[:n])
        assert r["found"] or r["why"]
    # the \_S5_ name cut anywhere in its package is a reason
    for n in range(full["offset"], full["offset"] + 11):
        r = s5(power, aml[:n])
        assert not r["found"] and r["why"]


def test_string_hid(power):
    aml = b"\x5b\x82\x10FWCF\x08_HID\x0dQEMU0002\x00"
    assert power.shim_aml_has_string_hid(aml, len(aml), b"QEMU0002")
    assert not power.shim_aml_has_string_hid(aml, len(aml), b"QEMU000")
    assert not power.shim_aml_has_string_hid(aml[:-1], len(aml) - 1, b"QEMU0002")
    # an EISA-id _HID (DWordConst) is not a string
    eisa = b"\x08_HID\x0c\x41\xd0\x0b\x00"
    assert not power.shim_aml_has_string_hid(eisa, len(eisa), b"PNP0B00")


def test_missing_dsdt_and_short_fadt(power):
    mem, ptr = ch_machine(False)
    # X_DSDT pointing nowhere: a reason, the sleep register still read
    fadt_at = bytes(mem.data).find(b"FACP")
    struct.pack_into("<Q", mem.data, fadt_at + 140, 0x7FFF0000)
    ab.checksum_fix(mem.data, fadt_at + 9, None) if False else None
    raw = bytearray(mem.data[fadt_at:fadt_at + 276])
    ab.checksum_fix(raw, 9)
    mem.data[fadt_at:fadt_at + 276] = raw
    r = as_json(power.shim_acpi_power(bytes(mem.data), len(mem.data), mem.base, ptr, len(ptr)))
    assert not r["dsdt"] and not r["s5"] and "not usable" in r["s5_why"]
    assert r["sleep_control"] == [1, 8, 0x600]
    # an ACPI 1.0 FADT (116 bytes): PM1a from the 32-bit field, no X_ fields
    body = bytearray(116 - 36)
    struct.pack_into("<I", body, 64 - 36, 0xB004)
    body[89 - 36] = 2
    mem2 = ab.Memory(0, 0x100000)
    fadt = mem2.place(ab.table(b"FACP", bytes(body)))
    rsdt = mem2.place(ab.root_table([fadt], xsdt=False))
    p = bytes(ab.rsdp(rsdt))
    r = as_json(power.shim_acpi_power(bytes(mem2.data), len(mem2.data), 0, p, len(p)))
    assert r["pm1a_cnt"] == [1, 16, 0xB004] and r["pm1a_cnt_field"] == "PM1a_CNT_BLK"
    assert not r["iapc_valid"] and r["hypervisor_vendor"] == ""
    assert not r["s5"] and "names no DSDT" in r["s5_why"]
