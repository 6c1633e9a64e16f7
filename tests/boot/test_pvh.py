"""The PVH entry (boot/pvh.asm, lib/bootinfo.c): the way QEMU's -kernel
(for an ELF with no Multiboot 1 header), Firecracker and Cloud Hypervisor
start a kernel. Booted through QEMU's own PVH loader on q35, pc and
microvm, with and without ACPI: the banner and the machine record say PVH,
and the command line, the memory map and the ACPI root the VMM handed over
are the ones it was given."""

from __future__ import annotations

import re

import pytest

import boots
from clockbench.records import records

from helpers.paths import PVH_KERNEL
ONLY = "only=read_cost marker=pvh-7"  # the banner, discovery and one experiment: enough to see what was handed over


def pvh_boot(boot, machine: str, append: str = ONLY, memory: str = "256M", **kw):
    assert PVH_KERNEL.is_file(), f"{PVH_KERNEL} is missing: `make kernel` builds it"
    return boot(boot="pvh", kernel=PVH_KERNEL, accel="tcg", machine=machine, memory=memory, append=append, timeout=120, **kw)


def usable_mib(b) -> int:
    (line,) = b.lines("Memory:")
    return int(re.match(r"Memory: +(\d+) MiB usable", line).group(1))


@pytest.mark.parametrize("machine", ["q35", "pc"])
def test_pvh_on_a_pc_machine_hands_over_command_line_memory_and_acpi(boot, machine):
    b = pvh_boot(boot, machine, memory="384M")
    assert b.status == 0, b.explain()
    m = records.one(b.records, "machine")
    assert m["boot_protocol"] == "pvh" and m["multiboot"] is None, m
    assert m["cmdline"] == ONLY
    assert b.lines("Boot:       PVH entry (start_info version 1)"), b.explain()
    # the map QEMU built from -m: all of it usable but the BIOS area and the holes below 1 MiB
    assert 370 <= usable_mib(b) <= 384, b.lines("Memory:")
    acpi = records.one(b.records, "acpi")
    assert acpi["rsdp_found"] and acpi["rsdp_source"].startswith("PVH start_info RSDP"), acpi
    assert records.one(b.records, "check", name="boot memory map")["result"] == "PASS"
    hpet = [c for c in records.of_type(b.records, "counter") if c["name"] == "hpet"]
    assert hpet and hpet[0]["present"], "QEMU's HPET, found through the ACPI root the PVH loader handed over"


def test_the_multiboot_kernel_still_boots_by_multiboot_1(boot):
    """The same note is in build/clockbench.elf, but its Multiboot 1 header
    comes first for QEMU's -kernel: direct boot is unchanged (read from the
    shared direct boot of every experiment, tests/boot/boots.py)."""
    b = boot(**boots.TCG_Q35)
    assert b.status == 0, b.explain()
    m = records.one(b.records, "machine")
    assert m["boot_protocol"] == "multiboot1" and m["multiboot"] == 1


@pytest.mark.parametrize("acpi", ["on", "off"])
def test_pvh_on_microvm(boot, acpi):
    """microvm: no PCI, no firmware tables unless asked; with acpi=off there
    is no RSDP anywhere and the run goes on without the ACPI counters."""
    b = pvh_boot(boot, "microvm", extra=["-machine", f"microvm,acpi={acpi},rtc=on"])
    assert b.status == 0, b.explain()
    assert records.one(b.records, "machine")["boot_protocol"] == "pvh"
    assert 240 <= usable_mib(b) <= 256
    acpi_rec = records.one(b.records, "acpi")
    if acpi == "on":
        assert acpi_rec["rsdp_found"] and acpi_rec["rsdp_source"].startswith("PVH start_info RSDP"), acpi_rec
    else:
        assert not acpi_rec["rsdp_found"], acpi_rec
        pm = [c for c in records.of_type(b.records, "counter") if c["name"] == "acpi_pm"]
        assert pm and not pm[0]["present"] and pm[0]["reason"], pm
