"""Builds ACPI tables as bytes (ACPI 6.5, 5.2; IA-PC HPET 1.0a, 3.2.4), for
the parser's unit tests and as seeds for its fuzzer."""

from __future__ import annotations

import struct


def checksum_fix(raw: bytearray, at: int, length: int | None = None) -> bytearray:
    raw[at] = 0
    raw[at] = (-sum(raw[: length or len(raw)])) & 0xFF
    return raw


def table(sig: bytes, body: bytes, revision: int = 1, oem: bytes = b"CLOCKB") -> bytearray:
    length = 36 + len(body)
    hdr = struct.pack("<4sIBB6s8sI4sI", sig, length, revision, 0, oem, b"TESTTBL ", 1, b"CBNC", 1)
    return checksum_fix(bytearray(hdr + body), 9)


def gas(space: int, address: int, width: int = 32, access: int | None = None) -> bytes:
    """A Generic Address Structure (ACPI 6.5, 5.2.3.2); access size 1-4 is byte..qword."""
    return struct.pack("<BBBBQ", space, width, 0, (3 if width == 32 else 4) if access is None else access, address)


def fadt(pm_tmr_blk: int = 0x608, x_pm: bytes | None = None, flags: int = 0, pm_tmr_len: int = 4, length: int = 276,
         revision: int | None = None) -> bytearray:
    body = bytearray(length - 36)
    struct.pack_into("<I", body, 76 - 36, pm_tmr_blk)
    body[91 - 36] = pm_tmr_len
    struct.pack_into("<I", body, 112 - 36, flags)
    if x_pm is not None and length >= 220:
        body[208 - 36:220 - 36] = x_pm
    return table(b"FACP", bytes(body), revision=(6 if length >= 244 else 1) if revision is None else revision)


def cloud_hypervisor_fadt(dsdt: int = 0x1000) -> bytearray:
    """The FADT Cloud Hypervisor v53.0 makes on x86-64, field by field as its
    source writes them: vmm/src/acpi.rs, create_facp_table (commit 9ed824d6d,
    the v53.0 build in ../shared/vmm), with the addresses from
    vmm/src/device_manager.rs (add_acpi_devices: the shutdown/reset device at
    I/O 0x600, the PM timer at I/O 0x608) and the GAS helper of the
    acpi_tables crate it locks (0.2.1, sdt.rs GenericAddress::io_port_address
    ::<T>: bit width 8 * size_of T, and the ACPI access-size code for that
    size, so the u32 PM timer is 32 bits, dword access). Not nested Hyper-V,
    so no PM1a blocks. test_acpi.py checks this against the bytes the v53.0
    binary hands a guest (CH_V53_FADT_HEX, dumped by the image)."""
    def io_gas(port: int, size: int) -> bytes:
        return struct.pack("<BBBBQ", 1, 8 * size, 0, {1: 1, 2: 2, 4: 3, 8: 4}[size], port)

    raw = bytearray(276)
    struct.pack_into("<4sIBB6s8sI4s4s", raw, 0, b"FACP", 276, 6, 0, b"CLOUDH", b"CHFACP  ", 1, b"RVAT",
                     bytes([0, 0, 0, 1]))
    raw[116:128] = io_gas(0x600, 1)          # RESET_REG
    raw[128] = 1                             # RESET_VALUE
    raw[244:256] = io_gas(0x600, 1)          # SLEEP_CONTROL_REG
    raw[256:268] = io_gas(0x600, 1)          # SLEEP_STATUS_REG
    raw[208:220] = io_gas(0x608, 4)          # X_PM_TMR_BLK; PM_TMR_BLK and PM_TMR_LEN stay 0
    struct.pack_into("<I", raw, 112, (1 << 20) | (1 << 10) | (1 << 8))  # HW_REDUCED_ACPI, RESET_REG_SUP, TMR_VAL_EXT
    raw[131] = 3                             # FADT minor version
    struct.pack_into("<Q", raw, 140, dsdt)   # X_DSDT
    raw[268:276] = b"CLOUDHYP"               # hypervisor vendor identity
    return checksum_fix(raw, 9)


def hpet(base: int = 0xFED00000, block_id: int = 0x8086A201, number: int = 0, min_tick: int = 0x80, space: int = 0) -> bytearray:
    body = struct.pack("<I", block_id) + gas(space, base, 64) + struct.pack("<BHB", number, min_tick, 0)
    return table(b"HPET", body)


def madt(cpus: list[bool], x2apic: list[bool] = ()) -> bytearray:
    body = struct.pack("<II", 0xFEE00000, 1)
    for i, enabled in enumerate(cpus):
        body += struct.pack("<BBBBI", 0, 8, i, i, 1 if enabled else 0)
    for i, enabled in enumerate(x2apic):
        body += struct.pack("<BBHIII", 9, 16, 0, 100 + i, 1 if enabled else 0, 100 + i)
    return table(b"APIC", body)


def madt_entries(entries: list[tuple], lapic: int = 0xFEE00000) -> bytearray:
    """A MADT from raw entries: ("lapic", uid, id, flags), ("x2apic", uid, id, flags),
    ("override", address), ("ioapic", id, address, gsi_base), ("iso", bus, source,
    gsi, flags) or ("raw", bytes)."""
    body = struct.pack("<II", lapic, 1)
    for e in entries:
        if e[0] == "lapic":
            body += struct.pack("<BBBBI", 0, 8, e[1], e[2], e[3])
        elif e[0] == "x2apic":
            body += struct.pack("<BBHIII", 9, 16, 0, e[2], e[3], e[1])
        elif e[0] == "override":
            body += struct.pack("<BBHQ", 5, 12, 0, e[1])
        elif e[0] == "ioapic":  # ("ioapic", id, address, gsi_base)
            body += struct.pack("<BBBBII", 1, 12, e[1], 0, e[2], e[3])
        elif e[0] == "iso":  # ("iso", bus, source, gsi, flags)
            body += struct.pack("<BBBBIH", 2, 10, e[1], e[2], e[3], e[4])
        else:
            body += e[1]
    return table(b"APIC", body)


def rsdp(rsdt: int, xsdt: int | None = None, oem: bytes = b"CLOCKB") -> bytearray:
    if xsdt is None:
        raw = bytearray(struct.pack("<8sB6sBI", b"RSD PTR ", 0, oem, 0, rsdt))
        return checksum_fix(raw, 8)
    raw = bytearray(struct.pack("<8sB6sBIIQB3s", b"RSD PTR ", 0, oem, 2, rsdt, 36, xsdt, 0, b"\0\0\0"))
    checksum_fix(raw, 8, 20)
    return checksum_fix(raw, 32)


class Memory:
    """Physical memory as a bytearray at base; place() lays tables out."""

    def __init__(self, base: int = 0, size: int = 0x100000):
        self.base = base
        self.data = bytearray(size)
        self.cursor = base + 0x1000 if base else 0x1000

    def put(self, addr: int, raw: bytes) -> int:
        off = addr - self.base
        self.data[off:off + len(raw)] = raw
        return addr

    def place(self, raw: bytes, align: int = 16) -> int:
        self.cursor = (self.cursor + align - 1) // align * align
        addr = self.put(self.cursor, raw)
        self.cursor += len(raw)
        return addr


def root_table(addresses: list[int], xsdt: bool) -> bytearray:
    if xsdt:
        return table(b"XSDT", b"".join(struct.pack("<Q", a) for a in addresses))
    return table(b"RSDT", b"".join(struct.pack("<I", a) for a in addresses))


def standard_machine(xsdt: bool = True, tables: list[bytes] | None = None, where: str = "bios"):
    """A memory image with RSDP in the BIOS area (or EBDA) and the given tables."""
    mem = Memory(0, 0x100000)
    if tables is None:
        tables = [fadt(x_pm=gas(1, 0x608), flags=0), hpet(), madt([True, True, False])]
    addrs = [mem.place(t) for t in tables]
    rsdt_addr = mem.place(root_table(addrs, xsdt=False))
    xsdt_addr = mem.place(root_table(addrs, xsdt=True)) if xsdt else None
    ptr = rsdp(rsdt_addr, xsdt_addr)
    if where == "ebda":
        struct.pack_into("<H", mem.data, 0x40E, 0x9FC00 >> 4)
        mem.put(0x9FC00 + 0x40, ptr)
    else:
        mem.put(0xF5A00, ptr)
    return mem, ptr
