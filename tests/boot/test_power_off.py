"""How the image ends the machine (kernel/finish.c): QEMU is recognised from
its firmware (the DSDT's fw_cfg device, _HID "QEMU0002") before anything is
written to isa-debug-exit's port; without that device, `poweroff` powers
QEMU off by ACPI S5: PIIX4's and ICH9's PM1a control block (pc, q35) and
the hardware-reduced GED sleep control register (microvm, the way Cloud
Hypervisor's is driven). QEMU exits 0 on S5 (hw/acpi/core.c,
acpi_pm1_cnt_write; hw/acpi/generic_event_device.c)."""

from __future__ import annotations

import pytest

from clockbench.records import records

import boots
from helpers.paths import PVH_KERNEL

ONLY = "only=cpu_speed poweroff"  # discovery and the shortest experiment: the end is what is tested


def ended_by_s5(b, register: str):
    r = b.result
    assert not r.timed_out and r.qemu_exit == 0 and r.status is None, b.explain()
    lines = b.output.split("\n")
    at = [i for i, l in enumerate(lines) if l.startswith("clockbench: machine:")]
    assert at and lines[at[0]].startswith("clockbench: machine: qemu"), lines[-20:]
    assert lines[at[0] + 1].startswith("  identified by: the DSDT declares QEMU's fw_cfg"), lines[at[0]:at[0] + 3]
    end = records.one(b.records, "ending")
    assert end["machine"] == "qemu" and end["poweroff"] and "QEMU0002" in end["identified_by"], end
    ways = [p["way"] for p in records.of_type(b.records, "power_off")]
    assert ways[0] == "isa_debug_exit" and ways[-1] == "acpi_s5", ways
    failed = records.of_type(b.records, "power_off_failed")
    assert [f["way"] for f in failed] == ["isa_debug_exit"], failed
    s5 = records.of_type(b.records, "power_off")[-1]
    assert register in s5["detail"], s5
    assert "clockbench: halted" not in b.output, "S5 ended the machine: nothing after it"


@pytest.mark.parametrize("machine,register", [("q35", "X_PM1a_CNT_BLK (I/O 0x604)"), ("pc", "PM1a_CNT_BLK (I/O 0x604)")])
def test_poweroff_without_isa_debug_exit_is_acpi_s5(boot, machine, register):
    b = boot(boot="direct", accel="tcg", machine=machine, append=ONLY, debug_exit=False, timeout=90)
    ended_by_s5(b, register)
    assert "writing 0x2001" in records.of_type(b.records, "power_off")[-1]["detail"], "SLP_TYP 0 (\\_S5), SLP_EN, SCI_EN kept"


def test_poweroff_on_microvm_uses_the_sleep_control_register(boot):
    assert PVH_KERNEL.is_file(), f"{PVH_KERNEL} is missing: `make kernel` builds it"
    b = boot(boot="pvh", kernel=PVH_KERNEL, accel="tcg", machine="microvm", append=ONLY, debug_exit=False, timeout=90,
             extra=["-machine", "microvm,acpi=on,rtc=on"])
    ended_by_s5(b, "SLEEP_CONTROL_REG (MMIO 0x")
    assert "writing 0x34" in records.of_type(b.records, "power_off")[-1]["detail"], "(5 << 2) | SLP_EN: \\_S5 says 5"


def test_qemu_with_isa_debug_exit_reports_the_status_there(boot):
    """The shared TCG q35 run: found as QEMU, the status leaves by port 0xf4 and nothing else is tried."""
    b = boot(**boots.TCG_Q35)
    assert b.status is not None and b.result.qemu_exit == ((0x10 + b.status) << 1) | 1, b.explain()
    end = records.one(b.records, "ending")
    assert end["machine"] == "qemu" and not end["poweroff"] and end["hypervisor"] == "TCGTCGTCGTCG", end
    offs = records.of_type(b.records, "power_off")
    assert [p["way"] for p in offs] == ["isa_debug_exit"], offs
    assert f"writing 0x{0x10 + b.status:02x} to I/O 0xf4" in offs[0]["detail"]
    assert not records.of_type(b.records, "power_off_failed")
