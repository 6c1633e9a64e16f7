"""The robustness matrix: one row per QEMU configuration, with the outcome
it must have. `make test` runs the rows marked fast (each kind of fault
once); `make test-matrix` runs every row and writes docs/robustness.md.

Each row: a name, the QemuConfig fields, the expected run status, regular
expressions that must match the serial output and ones that must not, and
ACPI tables to inject (built by tests/helpers/acpi_builder.py and passed with
QEMU's -acpitable, with QEMU's own HPET off unless the row says otherwise).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

PASSED, FAILED, NOTHING_RAN, CRASHED = 0, 1, 2, 3
NO_CRASH = [r"^FAULT:", r"^FAIL:"]


@dataclass
class Scenario:
    name: str
    config: dict
    status: int = PASSED
    must: list[str] = field(default_factory=lambda: [r"^SUMMARY: \d+ passed, 0 failed"])
    must_not: list[str] = field(default_factory=lambda: list(NO_CRASH))
    inject: list[tuple[str, dict]] = field(default_factory=list)  # (acpi_builder function, kwargs)
    needs_kvm: bool = False
    fast: bool = False
    timeout: int = 300


DIRECT = {"boot": "direct", "accel": "tcg"}
# the kernel QEMU's -kernel boots through its PVH entry (microvm rows); found here, not
# through helpers.paths: a pytest run outside the tree imports this module with only
# tests/boot on its path (tests/host/layout/test_matrix_guard.py)
PVH_KERNEL = Path(os.environ.get("CLOCKBENCH_BUILD", Path(__file__).resolve().parents[2] / "build")) / "clockbench-pvh.elf"
SUMMARY_OK = r"^SUMMARY: \d+ passed, 0 failed"

SCENARIOS = [
    # machines, firmware, accelerators
    Scenario("q35, SeaBIOS, TCG, direct", {**DIRECT, "machine": "q35"}, fast=True),
    Scenario("pc, SeaBIOS, TCG, direct", {**DIRECT, "machine": "pc"}),
    Scenario("q35, SeaBIOS, TCG, GRUB ISO", {"boot": "iso", "accel": "tcg", "machine": "q35"}),
    Scenario("q35, OVMF UEFI, TCG, GRUB ISO", {"boot": "iso", "accel": "tcg", "machine": "q35", "firmware": "uefi"}),
    Scenario("pc, OVMF UEFI, TCG, GRUB ISO", {"boot": "iso", "accel": "tcg", "machine": "pc", "firmware": "uefi"}),
    Scenario("q35, KVM, direct (qboot)", {"boot": "direct", "accel": "kvm", "firmware": "qboot"}, needs_kvm=True),
    Scenario("pc, KVM, direct (SeaBIOS)", {"boot": "direct", "accel": "kvm", "machine": "pc"}, needs_kvm=True),
    # CPUs and memory
    Scenario("4 CPUs", {**DIRECT, "smp": 4}, must=[SUMMARY_OK, r'"cpus_enabled":4']),
    Scenario("4 CPUs started, TSC compared", {**DIRECT, "smp": 4, "append": "only=cpus"},
             must=[SUMMARY_OK, r"^PASS: TSC synchronised across CPUs: 4 CPUs"]),
    Scenario("4 CPUs in 2 sockets", {**DIRECT, "smp": "4,sockets=2,cores=2", "append": "only=cpus"},
             must=[SUMMARY_OK, r"4 of 4 enabled CPUs running"]),
    Scenario("2 of 4 listed CPUs present (maxcpus)", {**DIRECT, "smp": "2,maxcpus=4", "append": "only=cpus"},
             must=[SUMMARY_OK, r"2 of 2 enabled CPUs running", r"disabled in the MADT: left alone"]),
    Scenario("KVM, 2 CPUs, x2APIC mode", {"boot": "direct", "accel": "kvm", "firmware": "qboot", "smp": 2,
                                          "append": "only=cpus x2apic=on"}, needs_kvm=True,
             must=[SUMMARY_OK, r"x2APIC mode \(switched by x2apic=on\)", r"^PASS: TSC synchronised across CPUs"]),
    # timer interrupts: each timer measured, or skipped with its reason; no wait hangs
    Scenario("timers: HPET offered no I/O APIC input (legacy replacement)",
             {**DIRECT, "append": "only=timers", "extra": ["-global", "hpet.hpet-intcap=0x80000001"]},
             must=[SUMMARY_OK, r"route: legacy replacement", r"^PASS: timer interrupts: hpet", r"^PASS: timer interrupts: pit"]),
    Scenario("timers: pc, qemu64, no HPET (no TSC-deadline, no MWAIT)",
             {**DIRECT, "machine": "pc", "cpu": "qemu64", "append": "only=timers", "extra": ["-machine", "hpet=off"]},
             must=[SUMMARY_OK, r"^SKIP: timer interrupts: tsc_deadline: not measured: CPUID.1:ECX\[24\] clear",
                   r"^PASS: timer interrupts: lapic", r"^PASS: timer interrupts: pit", r"MWAIT not measured"]),
    Scenario("timers: KVM, x2APIC mode", {"boot": "direct", "accel": "kvm", "firmware": "qboot",
                                          "append": "only=timers x2apic=on"}, needs_kvm=True,
             must=[SUMMARY_OK, r"^PASS: timer interrupts: tsc_deadline", r"^PASS: timer interrupts: lapic"]),
    Scenario("128 MiB", {**DIRECT, "memory": "128M"}, must=[SUMMARY_OK, r"^Memory: +1[0-9][0-9] MiB usable"]),
    Scenario("8 GiB", {**DIRECT, "memory": "8G"}, must=[SUMMARY_OK, r"^Memory: +81[0-9][0-9] MiB usable"]),
    Scenario("CPU qemu64: no RDTSCP, no invariant TSC", {**DIRECT, "cpu": "qemu64"}, fast=True,
             must=[SUMMARY_OK, r"rdtscp +skipped: no RDTSCP", r"^SKIP: invariant TSC"]),
    Scenario("CPU EPYC: RDTSCP, AMD LFENCE MSR", {**DIRECT, "cpu": "EPYC"},
             must=[SUMMARY_OK, r"rdtscp +available", r"LFENCE: (serialising|not serialising|unknown)"]),
    Scenario("CPU host under KVM, invariant TSC", {"boot": "direct", "accel": "kvm", "firmware": "qboot"},
             needs_kvm=True, must=[SUMMARY_OK, r"^PASS: invariant TSC"]),
    # devices missing
    Scenario("no HPET (hpet=off)", {**DIRECT, "extra": ["-machine", "hpet=off"]}, fast=True,
             must=[SUMMARY_OK, r"^SKIP: hpet: no valid HPET table", r"tsc vs acpi_pm"]),
    Scenario("no ACPI (pc, acpi=off)", {**DIRECT, "machine": "pc", "extra": ["-machine", "acpi=off"]}, fast=True,
             must=[SUMMARY_OK, r"^SKIP: ACPI tables: no valid RSDP", r"^SKIP: acpi_pm: no ACPI tables found", r"measured against pit"]),
    Scenario("no PIT (pit=off)", {**DIRECT, "extra": ["-machine", "pit=off"]}, fast=True,
             must=[SUMMARY_OK, r"^SKIP: pit: channel 2 did not count"]),
    Scenario("no serial port (-serial none)", {**DIRECT, "serial": False}, fast=True, must=[]),
    Scenario("no HPET, no ACPI, no PIT: the RTC calibrates", {**DIRECT, "machine": "pc", "extra": ["-machine", "acpi=off,pit=off"]},
             must=[SUMMARY_OK, r"^SKIP: TSC frequency: no HPET, PM timer or PIT", r"the quick estimate against the RTC's second edges"]),
    Scenario("no counter and no RTC: only the TSC", {**DIRECT, "boot": "pvh", "kernel": PVH_KERNEL, "machine": "microvm",
                                                    "extra": ["-machine", "microvm,acpi=off,pit=off,rtc=off"]},
             must=[SUMMARY_OK, r"^SKIP: TSC frequency: no HPET, PM timer or PIT", r"nominal: an assumed 2 GHz"]),
    # injected ACPI tables (QEMU recomputes the checksum of every table it is
    # given, so a bad checksum cannot be injected this way: host tests and the
    # fuzzer cover it)
    Scenario("injected HPET table, base in ordinary RAM", {**DIRECT, "extra": ["-machine", "hpet=off"]},
             inject=[("hpet", {"base": 0x9000})], fast=True,
             must=[SUMMARY_OK, r"^SKIP: hpet: capabilities 0x[0-9a-f]+ give period \d+ fs, outside"]),
    Scenario("injected HPET table, base far above 4 GiB", {**DIRECT, "extra": ["-machine", "hpet=off"]},
             inject=[("hpet", {"base": 0x40_0000_0000})],
             must=[SUMMARY_OK, r"^SKIP: hpet: (capabilities 0x0+ give period 0 fs|registers at 0x4000000000 read all ones)"]),
    Scenario("injected HPET table, I/O space base", {**DIRECT, "extra": ["-machine", "hpet=off"]},
             inject=[("hpet", {"base": 0x1000, "space": 1})],
             must=[SUMMARY_OK, r"^SKIP: hpet: HPET table gives address space 1"]),
    Scenario("duplicate HPET table", {**DIRECT}, inject=[("hpet", {"base": 0xFED00000, "number": 1})],
             must=[SUMMARY_OK, r"another HPET table", r"^PASS: hpet: present"]),
    # faults
    Scenario("fault inside the HPET probe", {**DIRECT, "append": "probe_fault=hpet"}, fast=True,
             must=[SUMMARY_OK, r"^SKIP: hpet: fault probing base 0xfed00000: general protection"]),
    Scenario("fault inside the ACPI parser", {**DIRECT, "append": "probe_fault=acpi"},
             must=[SUMMARY_OK, r"^SKIP: ACPI tables: reading them faulted", r"measured against pit"]),
    Scenario("fault inside the PM timer probe", {**DIRECT, "append": "probe_fault=pm"},
             must=[SUMMARY_OK, r"^SKIP: acpi_pm: fault probing port"]),
    Scenario("fault outside any probe: crash report", {**DIRECT, "append": "crash=pf"}, status=CRASHED, fast=True,
             must=[r"^FAULT: CPU exception 14: page fault", r"cr2 00007fff00000000"], must_not=[r"^SUMMARY:"]),
    Scenario("CPU without long mode", {**DIRECT, "cpu": "qemu32"}, status=NOTHING_RAN, fast=True,
             must=[r"no 64-bit long mode"], must_not=[r"^SUMMARY:"]),
    Scenario("safe mode: HPET and PIT left alone", {**DIRECT, "append": "safe"},
             must=[SUMMARY_OK, r"^SKIP: hpet: not programmed: safe mode", r"measured against acpi_pm"]),
]


class RobustnessNotWritten(UserWarning):
    """docs/robustness.md was left as it was: the run left rows out."""


def robustness_table(rows: list[str], outcomes: list[tuple[str, str, float]], when: str,
                     qemu_version: str) -> tuple[str | None, str]:
    """docs/robustness.md's text from one run of the matrix (rows: the
    names that should have run; outcomes: (name, outcome, seconds) of those
    that did), or None when rows were left out (-k, -x, Ctrl-C, a crash): a
    partial run never replaces the whole table with its few rows. The
    second value says what happened, naming every row that did not run."""
    ran = {name for name, _, _ in outcomes}
    missing = [r for r in rows if r not in ran]
    if missing:
        return None, (f"docs/robustness.md not written: {len(missing)} of {len(rows)} rows did not run "
                      f"({'; '.join(missing)}); `make test-matrix` runs them all")
    by_name = {name: (outcome, secs) for name, outcome, secs in outcomes}
    lines = [
        "# Robustness matrix",
        "",
        "Written by `make test-matrix` (tests/boot/test_matrix.py) from its own run; do not edit by hand.",
        f"Run {when}, QEMU {qemu_version}.",
        "",
        "| scenario | outcome | seconds |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {name} | {by_name[name][0]} | {by_name[name][1]:.1f} |" for name in rows]
    return "\n".join(lines) + "\n", f"docs/robustness.md written: all {len(rows)} rows"


def say_not_written(message: str) -> None:
    """The "not written" message where pytest shows it even when every test
    passed (its warnings summary); stderr in a fixture's teardown is hidden."""
    warnings.warn(message, RobustnessNotWritten, stacklevel=2)
