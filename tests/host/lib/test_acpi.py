"""ACPI discovery on crafted tables: the good cases, every rejection, and
that nothing is read before it is checked."""

import json
import struct

from helpers import acpi_builder as ab
from helpers.hostlib import as_json


def discover(lib, mem: ab.Memory, tag_new: bytes | None = None, tag_old: bytes | None = None):
    return as_json(lib.shim_acpi(bytes(mem.data), len(mem.data), mem.base, tag_new, len(tag_new or b""), tag_old))


def messages(r):
    return [r[f"m{i}"] for i in range(r["messages"])]


def test_good_xsdt_machine(lib):
    mem, _ = ab.standard_machine(xsdt=True)
    r = discover(lib, mem)
    assert r["rsdp_found"] and r["rsdp_source"] == "BIOS area 0xE0000-0xFFFFF" and r["rsdp_address"] == 0xF5A00
    assert r["revision"] == 2 and r["oem_id"] == "CLOCKB"
    assert r["root_found"] and r["xsdt"] and r["table_count"] == 3
    assert r["pm"] and r["pm_space"] == 1 and r["pm_address"] == 0x608 and r["pm_field"] == "X_PM_TMR_BLK"
    assert not r["pm_32bit"]
    assert r["hpet"] and r["hpet_address"] == 0xFED00000 and r["hpet_space"] == 0
    assert r["hpet_comparators"] == 3 and r["hpet_64bit"] and r["hpet_min_tick"] == 0x80
    assert r["madt"] and r["cpus_enabled"] == 2 and r["cpus_listed"] == 3
    assert messages(r) == []


def test_rsdt_only_system(lib):
    mem, _ = ab.standard_machine(xsdt=False)
    r = discover(lib, mem)
    assert r["revision"] == 0 and r["root_found"] and not r["xsdt"]
    assert r["pm"] and r["hpet"] and r["madt"]


def test_rsdp_in_ebda_is_found_first(lib):
    mem, _ = ab.standard_machine(where="ebda")
    r = discover(lib, mem)
    assert r["rsdp_source"] == "EBDA" and r["rsdp_address"] == 0x9FC40


def test_multiboot_tags_come_first_new_then_old(lib):
    mem, ptr = ab.standard_machine(xsdt=True)
    r = discover(lib, mem, tag_new=bytes(ptr))
    assert r["rsdp_source"] == "multiboot2 ACPI 2.0+ tag" and r["rsdp_address"] == 0
    old = ab.rsdp(struct.unpack_from("<I", ptr, 16)[0])
    r = discover(lib, mem, tag_old=bytes(old))
    assert r["rsdp_source"] == "multiboot2 ACPI 1.0 tag" and not r["xsdt"]
    # a corrupt new tag is reported and the old one used
    bad = bytearray(ptr)
    bad[30] ^= 0xFF
    r = discover(lib, mem, tag_new=bytes(bad), tag_old=bytes(old))
    assert r["rsdp_source"] == "multiboot2 ACPI 1.0 tag"
    assert any("extended checksum" in m for m in messages(r))


def test_rsdp_with_bad_checksum_is_skipped_in_the_scan(lib):
    mem, ptr = ab.standard_machine()
    mem.data[0xF5A00 + 8] ^= 1  # break the 20-byte checksum
    r = discover(lib, mem)
    assert not r["rsdp_found"]
    assert "no valid RSDP" in messages(r)[-1]
    assert not r["hpet"] and not r["pm"]


def test_bad_xsdt_falls_back_to_rsdt(lib):
    mem, ptr = ab.standard_machine(xsdt=True)
    xsdt = struct.unpack_from("<Q", ptr, 24)[0]
    mem.data[xsdt + 36] ^= 0x55  # corrupt an entry: checksum fails
    r = discover(lib, mem)
    assert r["root_found"] and not r["xsdt"] and r["hpet"]
    assert any(m.startswith("XSDT table checksum") for m in messages(r))
    assert "falling back from the XSDT to the RSDT" in messages(r)


def test_hpet_table_checksum_is_named(lib):
    t = ab.hpet()
    t[9] = (t[9] + 0x3C) & 0xFF  # sum of bytes is now 0x3c
    mem, _ = ab.standard_machine(tables=[ab.fadt(), t])
    r = discover(lib, mem)
    assert not r["hpet"]
    assert r["hpet_reason"].startswith("HPET table checksum 0x3c, expected 0x00")
    assert r["pm"]  # the rest goes on


def test_truncated_and_oversized_lengths(lib):
    short = ab.hpet()
    struct.pack_into("<I", short, 4, 20)  # below the header size
    huge = ab.fadt()
    struct.pack_into("<I", huge, 4, 0x7FFFFFFF)
    mem, _ = ab.standard_machine(tables=[huge, short])
    r = discover(lib, mem)
    assert not r["hpet"] and not r["pm"]
    assert "length 20 outside 36" in r["hpet_reason"]
    assert "length 2147483647 outside" in r["pm_reason"]


def test_hpet_table_too_short_for_its_fields(lib):
    t = ab.table(b"HPET", bytes(10))
    mem, _ = ab.standard_machine(tables=[t])
    r = discover(lib, mem)
    assert not r["hpet"] and "46 bytes, expected at least 56" in r["hpet_reason"]


def test_table_pointing_outside_memory(lib):
    mem = ab.Memory(0, 0x100000)
    rsdt = mem.place(ab.root_table([0xFFFFF000], xsdt=False))
    xsdt = mem.place(ab.root_table([0x10_0000_0000], xsdt=True))
    mem.put(0xF5A00, ab.rsdp(rsdt, xsdt))
    r = discover(lib, mem)
    assert r["root_found"] and r["table_count"] == 1
    assert any("unreachable: outside the test memory" in m for m in messages(r))


def test_pm_timer_memory_space_and_32bit_flag(lib):
    f = ab.fadt(pm_tmr_blk=0x608, x_pm=ab.gas(0, 0xFED80000), flags=1 << 8)
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_space"] == 0 and r["pm_address"] == 0xFED80000 and r["pm_32bit"]
    # Linux reads a PM timer only through an I/O port: noted, still measured, not set aside
    assert r["pm_linux_port"] == 0 and r["pm_os_ignored"] and not r["pm_set_aside"] and "I/O port" in r["pm_os_note"]


def test_pm_timer_legacy_block_when_no_extended_field(lib):
    f = ab.fadt(pm_tmr_blk=0xB008, length=116)  # ACPI 1.0 sized FADT
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_space"] == 1 and r["pm_address"] == 0xB008 and r["pm_field"] == "PM_TMR_BLK"


def test_pm_timer_absent(lib):
    mem, _ = ab.standard_machine(tables=[ab.fadt(pm_tmr_blk=0, flags=1 << 20)])
    r = discover(lib, mem)
    assert not r["pm"] and "hardware-reduced" in r["pm_reason"] and r["pm_linux_port"] == 0
    # an X_ block outside I/O and memory space: ACPICA rejects it, and Linux reads no port
    mem, _ = ab.standard_machine(tables=[ab.fadt(pm_tmr_blk=0, x_pm=ab.gas(2, 0x608))])
    r = discover(lib, mem)
    assert not r["pm"] and "address space 2" in r["pm_reason"] and r["pm_linux_port"] == 0


def pm_messages(r):
    ms = [m for m in messages(r) if "PM_TMR" in m or "PM timer" in m]
    assert all(len(m) < 111 for m in ms), ms  # whole, not cut at the buffer's end
    return ms


def test_pm_timer_rules_standard_machine(lib):
    """X_ and 32-bit blocks agree, PM_TMR_LEN 4, 32-bit X_ width: no message."""
    mem, _ = ab.standard_machine()
    r = discover(lib, mem)
    assert r["pm"] and r["pm_width"] == 32 and r["pm_width_from"] == "X_PM_TMR_BLK bit width"
    assert r["pm_linux_port"] == 0x608 and not r["pm_os_ignored"] and r["pm_os_note"] == "" and r["pm_conflicts"] == 0


# The FADT Cloud Hypervisor v53.0 (../shared/vmm) handed the image on
# 2026-11-26 (`dump_acpi`, one vCPU, 256 MiB): its X_DSDT is 0xa0024.
CH_V53_FADT_HEX = (
    "464143501401000006d7434c4f5544484348464143502020010000005256415400000001000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000005100001080001000600000000000001000003000000000000000024000a00"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000120000308060000000000000000000000000000000000000000000000000000"
    "00000000010800010006000000000000010800010006000000000000434c4f5544485950"
)


def test_cloud_hypervisor_fadt_builder_matches_the_real_bytes():
    real = bytes.fromhex(CH_V53_FADT_HEX)
    assert len(real) == 276 and sum(real) % 256 == 0
    assert bytes(ab.cloud_hypervisor_fadt(dsdt=0xA0024)) == real


def test_pm_timer_cloud_hypervisor_fadt(lib):
    """Cloud Hypervisor v53's FADT (see acpi_builder.cloud_hypervisor_fadt):
    hardware-reduced, PM_TMR_BLK 0 and PM_TMR_LEN 0, X_PM_TMR_BLK I/O 0x608.
    ACPICA leaves a hardware-reduced FADT unconverted, so its X_ block stands,
    and Linux (FADT revision 6, X_ block in I/O space) reads port 0x608: a
    PM timer, 32 bits wide by the X_ block. Two contradictions, one message each."""
    f = bytearray(bytes.fromhex(CH_V53_FADT_HEX))
    assert f == ab.cloud_hypervisor_fadt(dsdt=0xA0024) and f[8] == 6
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_field"] == "X_PM_TMR_BLK" and r["pm_space"] == 1 and r["pm_address"] == 0x608
    assert r["pm_len"] == 0 and r["pm_width"] == 32 and r["pm_width_from"] == "X_PM_TMR_BLK bit width"
    assert r["hw_reduced"] and r["fadt_revision"] == 6 and r["pm_32bit"]
    assert r["pm_linux_port"] == 0x608 and not r["pm_os_ignored"] and not r["pm_set_aside"] and r["pm_os_note"] == ""
    assert r["pm_reason"] == ""
    ms = pm_messages(r)
    assert r["pm_conflicts"] == 2 and len(ms) == 2, ms
    assert any("PM_TMR_LEN 0 but X_PM_TMR_BLK is 32 bits wide" in m for m in ms)
    assert any("hardware-reduced" in m and "Linux reads it" in m for m in ms)


def test_pm_timer_access_size_contradicts_width(lib):
    f = ab.fadt(x_pm=ab.gas(1, 0x608, width=32, access=4))
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    ms = pm_messages(r)
    assert r["pm"] and r["pm_width"] == 32 and r["pm_conflicts"] == 1
    assert "access size 4 (64-bit) for a 32-bit register" in ms[0]


def test_pm_timer_hardware_reduced_tablet(lib):
    """A hardware-reduced FADT that fills only PM_TMR_BLK (tablets: 0x408):
    ACPICA does not copy it into the X_ block, whose space ID stays 0, so
    Linux reads no PM timer. The image probes it, labelled and set aside."""
    f = ab.fadt(pm_tmr_blk=0x408, flags=1 << 20, x_pm=bytes(12), revision=5)
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_field"] == "PM_TMR_BLK" and r["pm_address"] == 0x408 and r["pm_width"] == 32
    assert r["pm_linux_port"] == 0 and r["pm_os_ignored"] and r["pm_set_aside"]
    assert r["pm_os_note"] == "ignored by the OS (hardware-reduced ACPI)"
    ms = pm_messages(r)
    assert r["pm_conflicts"] == 1 and len(ms) == 1 and "ignored by the OS" in ms[0] and "0x408" in ms[0]
    # the same, but the X_ block says I/O space with address 0: Linux falls back to PM_TMR_BLK
    f = ab.fadt(pm_tmr_blk=0x408, flags=1 << 20, x_pm=ab.gas(1, 0), revision=5)
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_linux_port"] == 0x408 and not r["pm_set_aside"] and not r["pm_os_ignored"]
    assert any("Linux reads it" in m for m in pm_messages(r))
    # not hardware-reduced: ACPICA converts the 32-bit block, Linux reads it, no message
    f = ab.fadt(pm_tmr_blk=0x408, x_pm=bytes(12), revision=5)
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_linux_port"] == 0x408 and not r["pm_set_aside"] and r["pm_conflicts"] == 0


def test_pm_timer_x_and_32bit_blocks_disagree(lib):
    f = ab.fadt(pm_tmr_blk=0x408, x_pm=ab.gas(1, 0x608))
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_address"] == 0x608 and r["pm_linux_port"] == 0x608
    ms = pm_messages(r)
    assert r["pm_conflicts"] == 1 and "X_PM_TMR_BLK 0x608 and PM_TMR_BLK 0x408 disagree" in ms[0]


def test_pm_timer_len_and_x_width_disagree(lib):
    f = ab.fadt(pm_tmr_len=3, x_pm=ab.gas(1, 0x608))
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_width"] == 32 and r["pm_width_from"] == "X_PM_TMR_BLK bit width"
    ms = pm_messages(r)
    assert r["pm_conflicts"] == 1 and "PM_TMR_LEN 3 but X_PM_TMR_BLK is 32 bits wide" in ms[0]
    # an X_ block of no width: PM_TMR_LEN gives it
    f = ab.fadt(pm_tmr_len=4, x_pm=ab.gas(1, 0x608, width=0, access=0))
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_width"] == 32 and r["pm_width_from"] == "PM_TMR_LEN" and r["pm_conflicts"] == 0
    # a 16-bit register: read as 32 bits, as Linux does, and said
    f = ab.fadt(pm_tmr_len=2, x_pm=ab.gas(1, 0x608, width=16, access=2))
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_width"] == 16
    assert any("16 bits wide (by X_PM_TMR_BLK bit width), not 32" in m for m in pm_messages(r))


def test_pm_timer_32bit_block_without_length(lib):
    """PM_TMR_BLK set, PM_TMR_LEN 0: ACPICA warns, Linux reads the port anyway."""
    mem, _ = ab.standard_machine(tables=[ab.fadt(pm_tmr_len=0)])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_width"] == 0 and r["pm_width_from"] == "none stated" and r["pm_linux_port"] == 0x608
    ms = pm_messages(r)
    assert r["pm_conflicts"] == 1 and "with no width (PM_TMR_LEN 0)" in ms[0]


def test_pm_timer_revision_1_reads_only_the_32bit_block(lib):
    """Linux reads PM_TMR_BLK from a revision 1 FADT, whatever its X_ fields say."""
    f = ab.fadt(pm_tmr_blk=0, x_pm=ab.gas(1, 0x608), revision=1)
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm"] and r["pm_address"] == 0x608 and r["pm_linux_port"] == 0 and r["pm_os_ignored"]
    assert not r["pm_set_aside"] and "revision 1" in r["pm_os_note"]
    f = ab.fadt(pm_tmr_blk=0x408, x_pm=ab.gas(1, 0x608), revision=1)
    mem, _ = ab.standard_machine(tables=[f])
    r = discover(lib, mem)
    assert r["pm_linux_port"] == 0x408 and any("Linux reads port 0x408, not X_PM_TMR_BLK 0x608" in m for m in pm_messages(r))


def test_duplicate_hpet_tables_use_the_first(lib):
    mem, _ = ab.standard_machine(tables=[ab.hpet(base=0xFED00000), ab.hpet(base=0xFED01000, number=1)])
    r = discover(lib, mem)
    assert r["hpet"] and r["hpet_tables"] == 2 and r["hpet_address"] == 0xFED00000
    assert any("another HPET table" in m for m in messages(r))


def test_madt_with_x2apic_and_a_broken_entry(lib):
    m = ab.madt([True], x2apic=[True, False])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert r["cpus_enabled"] == 2 and r["cpus_listed"] == 3
    bad = bytearray(m)
    bad[44 + 1] = 0  # first entry length 0
    mem, _ = ab.standard_machine(tables=[ab.checksum_fix(bad, 9)])
    r = discover(lib, mem)
    assert r["madt"] and r["cpus_listed"] == 0
    assert any("bad length 0" in msg for msg in messages(r))


def test_no_acpi_at_all(lib):
    r = discover(lib, ab.Memory(0, 0x100000))
    assert not r["rsdp_found"] and r["messages"] == 1


def test_memory_smaller_than_the_bios_area(lib):
    r = discover(lib, ab.Memory(0, 0x1000))
    assert not r["rsdp_found"]
    assert any("BIOS area skipped" in m for m in messages(r))


def cpu_rows(r):
    c = r["cpus"]
    return [tuple(c[i:i + 5]) for i in range(0, len(c), 5)]


def test_madt_lists_each_cpu_with_id_uid_and_flags(lib):
    m = ab.madt_entries([("lapic", 0, 0, 1), ("lapic", 1, 2, 1), ("lapic", 2, 4, 0), ("lapic", 3, 6, 2),
                         ("x2apic", 300, 0x1000, 1)])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    # (apic id, uid, type, enabled, online capable)
    assert cpu_rows(r) == [(0, 0, 0, 1, 0), (2, 1, 0, 1, 0), (4, 2, 0, 0, 0), (6, 3, 0, 0, 1), (0x1000, 300, 9, 1, 0)]
    assert r["cpus_listed"] == 5 and r["cpus_enabled"] == 3 and r["cpus_online_capable"] == 1
    assert r["lapic_address"] == 0xFEE00000 and not r["lapic_overridden"]
    assert not any("APIC table" in msg for msg in messages(r))


def test_online_capable_is_ignored_while_enabled(lib):
    # ACPI 6.5, Table 5.37: Online Capable is reserved while Enabled is set
    mem, _ = ab.standard_machine(tables=[ab.madt_entries([("lapic", 0, 0, 3)])])
    r = discover(lib, mem)
    assert cpu_rows(r) == [(0, 0, 0, 1, 0)] and r["cpus_online_capable"] == 0


def test_madt_lapic_override_and_duplicate_ids(lib):
    m = ab.madt_entries([("lapic", 0, 0, 1), ("override", 0x1_2345_6000), ("x2apic", 7, 0, 1), ("lapic", 1, 1, 1)])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert r["lapic_address"] == 0x1_2345_6000 and r["lapic_overridden"]
    assert cpu_rows(r) == [(0, 0, 0, 1, 0), (1, 1, 0, 1, 0)]
    assert r["cpus_listed"] == 2
    assert r["enabled_repeats"] == 1
    assert "APIC table: 1 enabled entries repeat an enabled CPU's APIC ID (1 IDs, first 0): the first is used" in messages(r)


def test_madt_short_entries_are_skipped_not_read(lib):
    short_lapic = bytes([0, 6, 1, 1, 1, 0])  # type 0 must be 8 bytes
    short_x2 = bytes([9, 12]) + bytes(10)  # type 9 must be 16
    m = ab.madt_entries([("raw", short_lapic), ("raw", short_x2), ("lapic", 0, 3, 1)])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert cpu_rows(r) == [(3, 0, 0, 1, 0)]
    assert sum("too short; skipped" in msg for msg in messages(r)) == 2


def test_madt_keeps_at_most_256_cpus_and_counts_the_rest(lib):
    m = ab.madt_entries([("x2apic", i, i, 1) for i in range(300)])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert r["cpu_count"] == 256 and r["cpus_dropped"] and r["cpus_listed"] == 300 and r["cpus_enabled"] == 300


def test_madt_shorter_than_its_header(lib):
    mem, _ = ab.standard_machine(tables=[ab.table(b"APIC", b"\0\0\0\0")])
    r = discover(lib, mem)
    assert not r["madt"] and r["cpu_count"] == 0
    assert any("too short for its header" in msg for msg in messages(r))


def isa_irq(r, irq):
    v = r["isa_irqs"]
    return tuple(v[3 * irq:3 * irq + 3])


def test_madt_io_apics_and_source_overrides(lib):
    # QEMU's q35 table: one I/O APIC at 0xFEC00000 from GSI 0; IRQ 0 -> GSI 2;
    # IRQ 9 (SCI) level, active high; plus one active-low level override.
    m = ab.madt_entries([("lapic", 0, 0, 1), ("ioapic", 0, 0xFEC00000, 0), ("ioapic", 1, 0xFEC01000, 24),
                         ("iso", 0, 0, 2, 0), ("iso", 0, 9, 9, 0b1101), ("iso", 0, 11, 20, 0b1111)])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert r["ioapics"] == [0, 0xFEC00000, 0, 1, 0xFEC01000, 24]
    assert isa_irq(r, 0) == (2, 0, 0)        # the PIT moves to GSI 2, ISA defaults
    assert isa_irq(r, 9) == (9, 0, 1)        # level, active high
    assert isa_irq(r, 11) == (20, 1, 1)      # level, active low
    assert isa_irq(r, 8) == (8, 0, 0)        # no override: identity, edge, high
    # GSIs 0, 2, 23 on the first (24 pins each), 24 on the second at pin 0, 40 on the second at pin 16
    assert r["gsi_home"] == [0, 0, 0, 2, 0, 23, 1, 0, 1, 16]


def test_madt_without_io_apic_routes_nothing(lib):
    mem, _ = ab.standard_machine(tables=[ab.madt_entries([("lapic", 0, 0, 1)])])
    r = discover(lib, mem)
    assert r["ioapics"] == [] and r["gsi_home"] == [-1, 0, -1, 0, -1, 0, -1, 0, -1, 0]
    assert isa_irq(r, 0) == (0, 0, 0)


def test_madt_short_io_apic_entry_is_skipped(lib):
    m = ab.madt_entries([("lapic", 0, 0, 1), ("raw", bytes([1, 8]) + bytes(6)), ("raw", bytes([2, 6]) + bytes(4))])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert r["ioapics"] == []
    assert sum("too short; skipped" in msg for msg in messages(r)) == 2


def every_kind_of_repeat() -> list[tuple]:
    """255 processor entries with every kind of repeated APIC ID real MADTs
    have (and the one contradiction they should not): 51 enabled CPUs,
    72 placeholders, 51 disabled copies of enabled CPUs (one of them met
    before its enabled entry), 30 disabled repeats of disabled IDs, 3
    enabled repeats, 38 plain disabled CPUs."""
    e = [("lapic", 250, 40, 0)]                                    # disabled, before its enabled entry
    e += [("lapic", i, i, 1) for i in range(40)]                   # 40 enabled CPUs, IDs 0-39
    e += [("x2apic", 300 + i, 300 + i, 1) for i in range(10)]      # 10 enabled x2APIC CPUs
    e += [("lapic", 200, 0xFF, 0)] * 60                            # placeholders, disabled
    e += [("x2apic", 0xFFFFFFFF, 0xFFFFFFFF, 0)] * 10
    e += [("lapic", 201, 0xFF, 1)] * 2                             # placeholders marked enabled
    e += [("lapic", 100 + i % 25, i % 25, 0) for i in range(50)]   # IDs 0-24, two disabled copies each
    e += [("lapic", 41, 40, 1)]                                    # the enabled entry of ID 40
    e += [("lapic", 150 + k, 100 + k, 0) for k in range(10) for _ in range(4)]  # IDs 100-109, 4 disabled each
    e += [("x2apic", 5 + k, 5 + k, 1) for k in range(3)]           # IDs 5-7 again, enabled
    e += [("lapic", 60 + k, 200 + k, 0) for k in range(38)]        # plain disabled CPUs
    assert len(e) == 255
    return e


def test_a_255_entry_madt_gives_one_message_per_kind_of_repeat(lib):
    mem, _ = ab.standard_machine(tables=[ab.fadt(x_pm=ab.gas(1, 0x608)), ab.hpet(), ab.madt_entries(every_kind_of_repeat())])
    r = discover(lib, mem)
    assert r["cpus_listed"] == 99 and r["cpus_enabled"] == 51 and r["cpus_x2apic"] == 10
    assert (r["placeholders"], r["placeholders_enabled"]) == (72, 2)
    assert (r["disabled_copies"], r["disabled_shared"], r["enabled_repeats"]) == (51, 30, 3)
    # every entry is one CPU or one repeat of one kind
    assert r["cpus_listed"] + r["placeholders"] + r["disabled_copies"] + r["disabled_shared"] + r["enabled_repeats"] == 255
    assert [m for m in messages(r) if m.startswith("APIC table")] == [
        "APIC table: 72 placeholder entries (APIC ID 0xFF/0xFFFFFFFF, 2 enabled): no CPU; Linux skips them too",
        "APIC table: 51 disabled copies of 26 enabled CPUs' APIC IDs (first ID 40): the enabled entry counts",
        "APIC table: 30 disabled entries repeat another disabled one's APIC ID (10 IDs, first 100): one CPU each",
        "APIC table: 3 enabled entries repeat an enabled CPU's APIC ID (3 IDs, first 5): the first is used",
    ]
    assert not r["messages_dropped"] and r["hpet_reason"] == "" and r["pm_reason"] == ""
    # ID 40: the enabled entry met second replaces the disabled one, its UID with it
    record = lib.shim_acpi_record(False).decode()
    assert record.startswith("@cb {") and record.endswith("}\n") and '"truncated"' not in record
    rec = json.loads(record[4:])
    assert (rec["cpus_enabled"], rec["cpus_listed"], rec["madt_placeholders"], rec["madt_disabled_copies"],
            rec["madt_disabled_shared"], rec["madt_enabled_repeats"]) == (51, 99, 72, 51, 30, 3)


def test_enabled_entry_after_its_disabled_copy_is_the_cpu(lib):
    m = ab.madt_entries([("lapic", 9, 3, 0), ("lapic", 8, 3, 2), ("x2apic", 7, 3, 1)])
    mem, _ = ab.standard_machine(tables=[m])
    r = discover(lib, mem)
    assert cpu_rows(r) == [(3, 7, 9, 1, 0)]
    assert (r["cpus_listed"], r["cpus_enabled"], r["cpus_online_capable"], r["cpus_x2apic"]) == (1, 1, 0, 1)
    assert r["disabled_copies"] == 2


def test_reasons_survive_a_full_message_list(lib):
    """12 messages from the MADT's broken entries fill the list; the HPET's
    and the PM timer's reasons are still their own tables' messages."""
    short = [("raw", bytes([1, 8]) + bytes(6))] * 14
    mem, _ = ab.standard_machine(tables=[ab.madt_entries(every_kind_of_repeat() + short)])
    r = discover(lib, mem)
    assert r["messages"] == 12 and r["messages_dropped"]
    assert r["hpet_reason"] == "no valid HPET table in the XSDT"
    assert r["pm_reason"] == "no valid FACP (FADT) table, so no ACPI PM timer"
    listed = [lib.shim_acpi_message(i).decode() for i in range(12)]
    assert all(m.startswith("APIC table") for m in listed)  # the reasons were dropped from the list, not from the counters
    record = lib.shim_acpi_record(False).decode()
    assert '"truncated"' not in record and json.loads(record[4:])["messages_dropped"] is True


def test_the_acpi_record_always_fits(lib):
    """Every count at its largest and every string at its longest, escaped:
    the record still ends whole, under RECORD_MAX_CHARS (2048)."""
    mem, _ = ab.standard_machine(tables=[ab.madt_entries(every_kind_of_repeat())])
    discover(lib, mem)
    worst = lib.shim_acpi_record(True).decode()
    assert '"truncated"' not in worst and worst.endswith("}\n") and len(worst) < 2048
    rec = json.loads(worst[4:])
    assert rec["madt_enabled_repeats"] == 0xFFFFFFFF and rec["faulted"] is True
