"""Boot tests of the foundation: the image really boots under QEMU by every
path a user takes, prints what it read through CPUID, and ends with the
documented status."""

from __future__ import annotations

import pytest

import boots
from clockbench.records import records

PASSED, FAILED, NOTHING_RAN, CRASHED = 0, 1, 2, 3


def host_cpu_brand() -> str | None:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def assert_complete_run(b, status=PASSED):
    assert b.status == status, b.explain()
    summary = records.one(b.records, "summary")
    assert b.lines("SUMMARY: "), b.explain()
    assert summary["status"] == {PASSED: "passed", FAILED: "failed", NOTHING_RAN: "nothing ran"}[status]
    schema = records.one(b.records, "schema")
    assert schema["version"] == records.SCHEMA_VERSION


@pytest.mark.parametrize("firmware", ["bios", "uefi"])
def test_iso_boots_through_grub_multiboot2(boot, firmware):
    b = boot(boot="iso", firmware=firmware, accel="tcg", timeout=180)
    assert_complete_run(b)
    m = records.one(b.records, "machine")
    assert m["multiboot"] == 2
    # on UEFI GRUB chainloads the kernel's EFI entry, which hands over Multiboot 2 itself
    assert m["loader"].startswith("GRUB" if firmware == "bios" else "clockbench EFI")
    assert "profile=quick" in m["cmdline"]


def test_direct_boot_reads_cpuid_of_the_named_model(boot):
    # Under TCG, QEMU's EPYC model reports AMD's vendor and a fixed brand string.
    b = boot(**boots.TCG_EPYC)  # test_inventory.py reads it too
    assert_complete_run(b)
    m = records.one(b.records, "machine")
    assert m["multiboot"] == 1
    assert m["vendor"] == "AuthenticAMD"
    assert m["brand"] == "AMD EPYC Processor"
    assert m["family"] == 23
    assert m["hypervisor"] == "TCGTCGTCGTCG"
    assert "hello=1" in m["cmdline"]
    assert any(l.startswith("CPU:") and "AMD EPYC Processor" in l for l in b.output.split("\n"))


def test_direct_boot_under_kvm_sees_the_host_cpu(boot, kvm):
    b = boot(**boots.KVM_Q35)
    assert_complete_run(b)
    m = records.one(b.records, "machine")
    assert m["hypervisor"] == "KVMKVMKVM"
    brand = host_cpu_brand()
    if brand:
        assert m["brand"] == brand


@pytest.mark.parametrize(
    "how,vector,name",
    [("ud2", 6, "invalid opcode (#UD)"), ("pf", 14, "page fault (#PF)"), ("gp", 13, "general protection (#GP)"), ("de", 0, "divide error (#DE)")],
)
def test_fault_prints_report_and_ends_crashed(boot, how, vector, name):
    b = boot(boot="direct", accel="tcg", append=f"crash={how}")
    assert b.status == CRASHED, b.explain()
    fault = records.one(b.records, "fault")
    assert fault["vector"] == vector and fault["name"] == name
    assert b.lines(f"FAULT: CPU exception {vector}: {name}")
    for reg in ("rip", "cr2", "rax", "r15", "error code"):
        assert reg in b.output
    if how == "pf":
        assert fault["cr2"] == "0x7fff00000000"
    assert not records.of_type(b.records, "summary"), "a crash must not report a summary"


def test_no_serial_port_still_ends_with_status(boot):
    b = boot(boot="direct", accel="tcg", serial=False)
    assert b.status == PASSED, b.explain()
    assert b.output == ""


def test_cpu_without_long_mode_says_so_and_stops(boot):
    b = boot(boot="direct", accel="tcg", cpu="qemu32")
    assert b.status == NOTHING_RAN, b.explain()
    assert "no 64-bit long mode" in b.output


def test_serial_port_from_command_line(boot):
    # COM2 does not exist on this machine (only one -serial): never a silent
    # run; the console says so and falls back to COM1 (tests/boot/test_cmdline_values.py).
    b = boot(boot="direct", accel="tcg", append="serial=com2")
    assert b.status == PASSED, b.explain()
    assert b.lines("Note: no UART answers at serial=com2") and b.lines("SUMMARY: ")
