"""Boot tests of discovery: under QEMU, whose timer hardware is known
(HPET at 0xFED00000 with period 10,000,000 fs, PM timer at port 0x608 in
QEMU 7.2; see ../shared/PLATFORM.md), the inventory must report what the
ACPI tables and the devices say, and every missing piece must be a SKIP
with its reason while the run still passes."""

from __future__ import annotations

import pytest

import boots
from clockbench.records import records

QEMU_HPET_BASE = "0xfed00000"
QEMU_HPET_PERIOD_FS = 10_000_000
# QEMU 7.2 places the PM timer at 0x608 (q35; pc under SeaBIOS); OVMF moves
# the PIIX4 power-management block of the pc machine to 0xb000.
QEMU_PM_PORT = {("pc", "uefi"): "0xb008"}


def counter(b, name):
    return records.one(b.records, "counter", name=name)


def checks(b, result):
    return {c["name"]: c["detail"] for c in records.of_type(b.records, "check") if c["result"] == result}


@pytest.mark.parametrize(
    "machine,firmware,boot_path",
    [("q35", "bios", "direct"), ("pc", "bios", "direct"), ("q35", "uefi", "iso"), ("pc", "uefi", "iso")],
)
def test_inventory_matches_acpi_and_qemu(boot, machine, firmware, boot_path):
    # q35 by SeaBIOS and direct boot is boots.TCG_Q35, which other modules read too
    b = boot(boot=boot_path, firmware=firmware, machine=machine, accel="tcg", timeout=300)
    assert b.status == 0, b.explain()
    acpi = records.one(b.records, "acpi")
    assert acpi["rsdp_found"] and acpi["tables"] >= 4
    if boot_path == "iso" and firmware == "uefi":
        assert acpi["rsdp_source"].startswith("multiboot2 ACPI"), "GRUB on UEFI passes the RSDP in a tag"
    # HPET: where the table says, what QEMU has
    assert acpi["hpet_base"] == QEMU_HPET_BASE
    hpet = records.one(b.records, "hpet")
    assert hpet["base"] == acpi["hpet_base"]
    assert hpet["period_fs"] == QEMU_HPET_PERIOD_FS
    assert hpet["comparators"] == 3 and hpet["counter_64bit"] and hpet["revision"] == 1
    c = counter(b, "hpet")
    assert c["present"] and c["width_bits"] == 64 and c["nominal_hz"] == 100_000_000
    assert c["nominal_source"] == "HPET capabilities: period 10000000 fs"
    comparator = records.one(b.records, "hpet_comparator")
    assert comparator["oneshot_matched"] and comparator["periodic_ok"]
    # PM timer: at the FADT's port
    port = QEMU_PM_PORT.get((machine, firmware), "0x608")
    assert acpi["pm_timer_address"] == port and acpi["pm_timer_space"] == "io"
    c = counter(b, "acpi_pm")
    assert c["present"] and c["width_bits"] == acpi["pm_timer_bits"] == 24
    assert c["access"].startswith(f"I/O port {port}")
    assert c["nominal_hz"] == 3_579_545
    assert counter(b, "pit")["present"] and counter(b, "tsc")["present"]
    assert acpi["cpus_enabled"] == 1
    # the record is whole, its MADT counts QEMU's one CPU entry and no repeat
    assert "truncated" not in acpi and not acpi["messages_dropped"]
    assert (acpi["cpus_listed"], acpi["madt_placeholders"], acpi["madt_disabled_copies"]) == (1, 0, 0)
    assert acpi["messages"] == len(records.of_type(b.records, "acpi_message"))
    assert not checks(b, "FAIL")


def test_hpet_off_is_a_skip_with_the_reason(boot):
    b = boot(boot="direct", accel="tcg", extra=["-machine", "hpet=off"])
    assert b.status == 0, b.explain()
    c = counter(b, "hpet")
    assert not c["present"] and c["reason"] == "no valid HPET table in the RSDT"
    assert checks(b, "SKIP")["hpet"] == c["reason"]
    assert counter(b, "acpi_pm")["present"]


def test_acpi_off_keeps_tsc_and_pit(boot):
    b = boot(boot="direct", accel="tcg", machine="pc", extra=["-machine", "acpi=off"])
    assert b.status == 0, b.explain()
    skips = checks(b, "SKIP")
    assert "no valid RSDP" in skips["ACPI tables"]
    for name in ("hpet", "acpi_pm"):
        assert not counter(b, name)["present"] and counter(b, name)["reason"] == "no ACPI tables found"
    assert counter(b, "tsc")["present"] and counter(b, "pit")["present"]


def test_cpu_without_rdtscp_skips_that_variant(boot):
    b = boot(boot="direct", accel="tcg", cpu="qemu64")
    assert b.status == 0, b.explain()
    v = records.one(b.records, "tsc_variant", name="rdtscp")
    assert not v["available"] and "CPUID.80000001h:EDX[27] clear" in v["reason"]
    f = records.one(b.records, "cpu_features")
    assert not f["rdtscp"] and not f["invariant_tsc"]
    assert records.one(b.records, "tsc_variant", name="rdtsc")["available"]


def test_named_cpu_model_with_rdtscp(boot):
    b = boot(**boots.TCG_EPYC)  # test_foundation.py reads it too
    assert b.status == 0, b.explain()
    assert records.one(b.records, "tsc_variant", name="rdtscp")["available"]
    f = records.one(b.records, "cpu_features")
    assert f["lfence"] in ("serialising", "not serialising", "unknown")  # AMD: read from MSR 0xC0011029


def test_safe_mode_leaves_hpet_and_pit_alone(boot):
    b = boot(boot="direct", accel="tcg", append="safe")
    assert b.status == 0, b.explain()
    for name in ("hpet", "pit"):
        assert "safe mode" in counter(b, name)["reason"]
    assert not records.of_type(b.records, "hpet")


def test_kvm_reports_hypervisor_and_its_tsc_claim(boot, kvm):
    b = boot(**boots.KVM_Q35)
    assert b.status == 0, b.explain()
    m = records.one(b.records, "machine")
    assert m["hypervisor"] == "KVMKVMKVM"
    claims = records.of_type(b.records, "freq_claim")
    tsc = counter(b, "tsc")
    if claims:
        # the nominal TSC figure is a claim and says so
        assert tsc["nominal_source"].endswith("(claimed)")
        assert tsc["nominal_hz"] == claims[0]["hz"] or any(c["hz"] == tsc["nominal_hz"] for c in claims)
    assert counter(b, "hpet")["present"] and counter(b, "acpi_pm")["present"]
