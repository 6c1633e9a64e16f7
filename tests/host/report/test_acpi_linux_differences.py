"""`clockbench acpi`'s list of the points where Linux reads the tables
otherwise than the image (tools/clockbench/report/acpi.py, linux_differences), one
synthetic machine per branch, its tables built as the parser's tests build
them (acpi_builder) and read through lib/acpi.c by the host library, as the
tool reads a folder of binary tables. test_acpi_tool.py covers the
hardware-reduced PM timer and the placeholders on real machines; these are
the others: Linux reading another port, a register not 32 bits wide,
enabled repeats, online-capable CPUs."""

from __future__ import annotations

import sys

from helpers import acpi_builder as ab
from helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from clockbench.report import acpi  # noqa: E402


def differences(fadt: bytes | None = None, madt: bytes | None = None) -> tuple[list[str], dict]:
    tables = {"FACP": fadt if fadt is not None else ab.fadt(x_pm=ab.gas(1, 0x608)), "HPET": ab.hpet(),
              "APIC": madt if madt is not None else ab.madt([True, True])}
    src = acpi.Source("synthetic", "folder", [acpi.Table(sig, bytes(data), None, sig) for sig, data in tables.items()])
    v = acpi.view(src)
    return v["linux_differs"], v


def test_a_plain_machine_differs_in_nothing():
    got, v = differences()
    assert got == [] and v["pm_timer"]["found"] and v["acpi_record"]["cpus_enabled"] == 2


def test_linux_reading_another_port():
    """A revision 1 FADT that also fills X_PM_TMR_BLK: the image takes the
    X_ block (ACPICA's rule), Linux reads PM_TMR_BLK from a revision 1 FADT
    (acpi_parse_fadt)."""
    got, v = differences(fadt=ab.fadt(pm_tmr_blk=0x408, x_pm=ab.gas(1, 0x608), revision=1))
    pm = v["pm_timer"]
    assert (pm["field"], pm["address"], pm["linux_port"]) == ("X_PM_TMR_BLK", 0x608, 0x408)
    assert got == ["PM timer: Linux reads I/O port 0x408, the image X_PM_TMR_BLK 0x608"]


def test_a_register_not_32_bits_wide():
    got, v = differences(fadt=ab.fadt(x_pm=ab.gas(1, 0x608, width=24), pm_tmr_len=3))
    assert v["pm_timer"]["register_bits"] == 24
    assert got == ["PM timer: a 24-bit register by X_PM_TMR_BLK bit width; Linux reads 32 bits, as the image does"]
    # by PM_TMR_LEN alone (no X_ block): the same, named by its source
    got, _ = differences(fadt=ab.fadt(pm_tmr_blk=0x408, pm_tmr_len=2))
    assert got == ["PM timer: a 16-bit register by PM_TMR_LEN; Linux reads 32 bits, as the image does"]


def test_enabled_entries_that_repeat_an_apic_id():
    madt = ab.madt_entries([("lapic", 0, 0, 1), ("lapic", 1, 1, 1), ("lapic", 2, 1, 1), ("x2apic", 3, 0, 1)])
    got, v = differences(madt=madt)
    assert v["acpi_record"]["madt_enabled_repeats"] == 2 and v["acpi_record"]["cpus_enabled"] == 2
    assert got == ["CPUs: 2 enabled entries repeat an APIC ID: Linux rejects each repeat (\"APIC ID already reserved\"); "
                   "the image keeps the first"]


def test_online_capable_cpus():
    """ACPI 6.3+ Online Capable (flags bit 1) on disabled entries: CPUs
    Linux may hot-add; the image runs on the enabled ones only."""
    madt = ab.madt_entries([("lapic", 0, 0, 1), ("lapic", 1, 1, 0b10), ("x2apic", 2, 300, 0b10)])
    got, v = differences(madt=madt)
    assert v["acpi_record"]["cpus_online_capable"] == 2 and v["acpi_record"]["cpus_enabled"] == 1
    assert got == ["CPUs: 2 disabled but online-capable: Linux may bring them up later; the image does not"]


def test_every_branch_at_once_in_order():
    madt = ab.madt_entries([("lapic", 0, 0, 1), ("lapic", 1, 0, 1), ("lapic", 2, 1, 0b10), ("lapic", 3, 0xFF, 0)])
    got, _ = differences(fadt=ab.fadt(pm_tmr_blk=0x408, x_pm=ab.gas(1, 0x608, width=24), pm_tmr_len=3, revision=1), madt=madt)
    starts = ["PM timer: Linux reads I/O port 0x408", "PM timer: a 24-bit register", "CPUs: 1 placeholder",
              "CPUs: 1 enabled entries repeat", "CPUs: 1 disabled but online-capable"]
    assert len(got) == len(starts) and all(g.startswith(s) for g, s in zip(got, starts)), got
