"""The image under the real microVM monitors, Cloud Hypervisor and
Firecracker (from VMM_DIR, ../shared/vmm: a missing one fails, never
skips), as `clockbench run --vmm` runs them (microvm.py): each with 1 vCPU
(the drift window only, 4 s) and 2 vCPUs (the timers, then the CPUs
experiment),
booted once each and read by every test here. On this machine's KVM, which
emulates every instruction, a run costs 20-40 s. The two 1-vCPU runs go
through `clockbench run --vmm ... --store DB` itself, as a user runs them,
report and store included (CLI_RUNS); the two 2-vCPU runs through
microvm.run, shared by the `vmm_boot` fixture. One more Firecracker run is
killed from outside in its drift window (a monitor that dies mid-run).

They are `timed`: they measure the TSC's rate, and must not share the CPU
with another VM. Known answer: the TSC's rate the image measures on either
monitor against the rate Cloud Hypervisor states in CPUID 0x40000010 (the
host's own TSC rate, in kHz), within the measurement's stated uncertainty
and the claim's rounding."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from helpers.boots import CliBoot
from helpers.paths import PVH_KERNEL, VMM_DIR
from helpers.tool import tool_env
from clockbench.machines import cloud_hypervisor, firecracker, host_tsc, microvm, qemu
from clockbench.records import records

pytestmark = pytest.mark.timed

SHORT = "only=drift duration=4"  # the TSC's rate against the best reference, 4 s of drift window
# Both CPUs started and compared, after the timers on each: a whole quick
# run takes 80 s on Firecracker here, half of it printing the report through
# a UART whose every byte the KVM emulates; this one about 35 s. On
# Firecracker a whole quick run once left its second vCPU behind (the timers
# job on it outran its budget under load, and the CPU took no more jobs);
# on Cloud Hypervisor the timers' set-up once wrote the legacy PIC, which it
# lacks (its log names each write).
TWO_JOBS = "only=timers,cpus"
# Firecracker's one reference is KVM's PIT, coarse (838 ns a tick): a 12 s
# window states the TSC's rate to about 0.2 ppm, fine enough for the known
# answer against the host's TSC to see a PIT taken at the wrong rate
# (issue 37: +0.56 ppm), which the 4 s window's +-0.5 ppm hides.
FC_LONG = "only=drift duration=12"
RUNS = {
    ("cloud-hypervisor", 1): dict(vmm="cloud-hypervisor", smp=1, append=SHORT),
    ("cloud-hypervisor", 2): dict(vmm="cloud-hypervisor", smp=2, append=TWO_JOBS),
    ("firecracker", 1): dict(vmm="firecracker", smp=1, append=FC_LONG),
    ("firecracker", 2): dict(vmm="firecracker", smp=2, append=TWO_JOBS),
}
IDS = [f"{v}-smp{n}" for v, n in RUNS]
# These go through `clockbench run` (report on, a store of their own); the others through microvm.run.
CLI_RUNS = (("cloud-hypervisor", 1), ("firecracker", 1))
CLI_TIMEOUT_S = 200
# A monitor's own log line, as each writes it: it must stay out of the serial log.
VMM_LOG_LINE = {"cloud-hypervisor": re.compile(r"^cloud-hypervisor: +\d+\.\d+s: "),
                "firecracker": re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+ \[anonymous-instance:")}


def boot_of(key: tuple[str, int], vmm_boot, tmp_root: Path):
    """The one run of configuration `key`: through the CLI for CLI_RUNS, else the shared microvm.run."""
    if key not in CLI_RUNS:
        return vmm_boot(**RUNS[key])
    return CliBoot(key[0], key[1], RUNS[key]["append"], tmp_root, CLI_TIMEOUT_S)


@pytest.fixture(params=list(RUNS), ids=IDS)
def run(request, vmm_boot, tmp_path_factory):
    vmm, smp = request.param
    b = boot_of(request.param, vmm_boot, tmp_path_factory.getbasetemp())
    b.vmm, b.smp = vmm, smp
    return b


@pytest.fixture(params=CLI_RUNS, ids=[f"{v}-smp{n}" for v, n in CLI_RUNS])
def cli_run(request, vmm_boot, tmp_path_factory):
    b = boot_of(request.param, vmm_boot, tmp_path_factory.getbasetemp())
    b.vmm, b.smp = request.param
    return b


def _one(b, kind: str, **match) -> dict:
    found = [r for r in records.of_type(b.records, kind) if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, f"{kind} {match}: {len(found)} records\n{b.explain()}"
    return found[0]


def test_the_run_reaches_its_verdict_with_no_failure(run):
    summary = _one(run, "summary")
    assert summary["status"] == "passed" and summary["fail"] == 0, run.explain()
    assert run.result.status == 0 and run.result.status_source == "summary", run.explain()
    assert run.lines("clockbench: run ended: passed (status 0)"), run.explain()
    machine = _one(run, "machine")
    assert machine["boot_protocol"] == "pvh" and machine["hypervisor"] == "KVMKVMKVM"


def test_the_monitor_powers_off_by_itself(run):
    """The image ends the machine after its verdict (ACPI S5 on Cloud
    Hypervisor, the i8042 reset on Firecracker): the monitor exits 0 on its
    own, and is not stopped after the grace period."""
    r = run.result
    assert r.notes == [] and r.vmm_exit == 0 and r.powered_off, run.explain()


def test_each_monitor_is_ended_its_own_way_and_never_through_0xf4(run):
    """Which way ended it, from the `ending` and power_off records: the
    machine taken for a VMM, not for QEMU (so isa-debug-exit, port 0xf4, is
    never written: neither monitor has it); on Cloud Hypervisor ACPI S5
    through the sleep control register its hardware-reduced FADT names (I/O
    0x600, SLP_TYP 5 from \\_S5: 0x34), which took; on Firecracker, whose
    DSDT has no \\_S5, S5 is not tried and the i8042 reset ends it."""
    [ending] = records.of_type(run.records, "ending")
    assert ending["machine"] == "vmm" and ending["hypervisor"] == "KVMKVMKVM", ending
    ways = [(r["type"], r["way"]) for r in run.records if r["type"] in ("power_off", "power_off_failed")]
    assert not [w for w in ways if w[1] == "isa_debug_exit"], ways
    assert "0xf4" not in "".join(run.lines("clockbench: ")), run.explain()
    if run.vmm == "cloud-hypervisor":
        assert ways == [("power_off", "acpi_s5")], ways
        detail = records.one(run.records, "power_off")["detail"]
        assert "writing 0x34 to SLEEP_CONTROL_REG (I/O 0x600)" in detail and "SLP_TYP 5" in detail, detail
    else:
        assert ways == [("power_off_failed", "acpi_s5"), ("power_off", "i8042_reset")], ways
        failed = records.one(run.records, "power_off_failed")
        assert failed["tried"] is False and "_S5_" in failed["reason"], failed


# What each monitor writes about a guest access to a port it has no device
# for (see cloud_hypervisor.py for its INFO level), and about its debug port.
CH_UNHANDLED = re.compile(r"Guest (?:PIO|MMIO) (?:read from|read to|write to) unregistered address (0x[0-9a-f]+)")
CH_DEBUG_PORT = "Debug I/O port"  # Cloud Hypervisor's writes to port 0x80 (devices: DEBUG_IOPORT_PREFIX)
FC_UNHANDLED = re.compile(r"IO (?:read|write) @ (0x[0-9a-f]+):0x[0-9a-f]+ failed: bus_error: MissingAddressRange")


def test_the_monitor_logs_no_access_to_a_port_it_lacks(run):
    """Quiet on VMMs: the monitor's own log (vmm-stderr.log for the CLI
    runs) names no access to a port it has no device for. Cloud Hypervisor
    (at INFO): no "Debug I/O port" line (port 0x80) and no "unregistered
    address" (before, 4400 lines for the PIT's 0x42/0x43, which it lacks,
    and 0x3d4/0x3d5); Firecracker: no MissingAddressRange (before: 0x3d4/
    0x3d5; 0x80, 0xf4 and 0x70/0x71 are the ports it names in README)."""
    err = run.result.stderr
    if run.vmm == "cloud-hypervisor":
        assert "INFO:" in err, "Cloud Hypervisor must log at INFO (-v) for this check to see an access: " + err[:500]
        assert CH_DEBUG_PORT not in err, [l for l in err.splitlines() if CH_DEBUG_PORT in l][:5]
        ports = sorted(set(CH_UNHANDLED.findall(err)))
    else:
        assert "Running Firecracker" in err, err[:500]
        ports = sorted(set(FC_UNHANDLED.findall(err)))
        assert not {"0x80", "0xf4", "0x70", "0x71"} & set(ports), ports
    assert ports == [], f"{run.vmm} logged guest accesses to ports it lacks: {ports}"


@pytest.mark.parametrize("vmm", microvm.VMM_NAMES)
def test_both_vcpus_are_started(vmm_boot, vmm):
    b = vmm_boot(**RUNS[(vmm, 2)])
    cpus = records.of_type(b.records, "cpu")
    assert len(cpus) == 2 and all(c["started"] for c in cpus), b.explain()


def test_firecrackers_second_vcpu_does_its_timers_and_then_its_cpus_part(vmm_boot):
    """Its own APIC timer and TSC-deadline timer, busy and halted (the PIT,
    routed to it, the watchdog), within its job's end; then the offset
    exchanges of the CPUs experiment, which a CPU left behind would not do."""
    b = vmm_boot(**RUNS[("firecracker", 2)])
    row = _one(b, "timer_cpu", cpu=1)
    assert row["measured"] and row["reason"] is None and row["took_ms"] <= row["job_ms"] + 1000, row
    ap = [r for r in records.of_type(b.records, "timer_latency") if r["cpu"] == 1]
    assert {(r["timer"], r["wait"]) for r in ap} == {(t, w) for t in ("lapic", "tsc_deadline") for w in ("busy", "hlt")}, ap
    assert sum(r["n"] for r in ap) > 0 and all(r["early"] == 0 and r["lost"] == 0 for r in ap), ap
    assert _one(b, "cpu", index=1)["reason"] is None, b.explain()
    sync = _one(b, "tsc_sync", cpu=1)
    assert sync["offset_lo_ticks"] is not None and sync["offset_lo_ticks"] <= 0 <= sync["offset_hi_ticks"], sync


def test_the_monitors_own_log_is_kept_apart_from_the_serial_log(run):
    own = VMM_LOG_LINE[run.vmm]
    assert not [l for l in run.output.split("\n") if own.match(l)], "the monitor's log lines leak into the serial log"
    assert [l for l in run.result.stderr.split("\n") if own.match(l)], run.result.stderr[:2000]


def _claimed_tsc_hz(b) -> int:
    """The TSC's rate Cloud Hypervisor states: CPUID 0x40000010 EAX, in kHz."""
    leaf = _one(b, "cpuid", leaf="0x40000010", subleaf=0)
    khz = int(leaf["eax"], 16)
    assert khz > 0, b.explain()
    return khz * 1000


def _tsc(b) -> dict:
    return _one(b, "frequency", counter="tsc")


def _agrees(freq: dict, claim_hz: int) -> tuple[bool, str]:
    """Within 3 times the stated uncertainty, plus the claim's rounding to 1 kHz."""
    allowed = 3 * freq["uncertainty_ppm"] * 1e-6 * freq["hz"] + 500
    off = freq["hz"] - claim_hz
    return abs(off) <= allowed, f"measured {freq['hz']:.0f} Hz against {freq['reference']}, claim {claim_hz} Hz: " \
                                f"{off:+.0f} Hz, allowed {allowed:.0f} Hz"


def test_cloud_hypervisor_measures_the_tsc_against_a_reference(vmm_boot, tmp_path_factory):
    """Cloud Hypervisor has no HPET and no PIT; its ACPI PM timer at I/O
    0x608 (X_PM_TMR_BLK, with PM_TMR_LEN 0: ACPICA, and so Linux, take the X_
    block's own width) must be found and be the reference, not kvmclock."""
    b = boot_of(("cloud-hypervisor", 1), vmm_boot, tmp_path_factory.getbasetemp())
    acpi = _one(b, "acpi")
    assert (acpi["pm_timer_field"], acpi["pm_timer_address"], acpi["pm_timer_len"], acpi["pm_timer_bits"]) == \
        ("X_PM_TMR_BLK", "0x608", 0, 32), acpi
    assert _one(b, "counter", name="acpi_pm")["present"] is True, b.explain()
    profile = _one(b, "profile")
    assert profile["tsc_measured"] is True and profile["tsc_hz_source"].startswith("measured against"), b.explain()
    tsc = _tsc(b)
    assert tsc["reference"] == "acpi_pm" and tsc["used"] is True, tsc
    assert 0 < tsc["uncertainty_ppm"] < 50, tsc
    ok, why = _agrees(tsc, _claimed_tsc_hz(b))
    assert ok, why


def test_firecracker_measures_the_tsc_against_its_pit_as_cloud_hypervisor_states_it(vmm_boot, tmp_path_factory):
    """The same host's TSC under both monitors: Firecracker's PIT-timed rate
    against the rate Cloud Hypervisor's CPUID leaf states."""
    fc = boot_of(("firecracker", 1), vmm_boot, tmp_path_factory.getbasetemp())
    ch = boot_of(("cloud-hypervisor", 1), vmm_boot, tmp_path_factory.getbasetemp())
    tsc = _tsc(fc)
    assert tsc["reference"] == "pit" and 0 < tsc["uncertainty_ppm"] < 50, tsc
    ok, why = _agrees(tsc, _claimed_tsc_hz(ch))
    assert ok, why


def test_the_tsc_is_the_hosts_as_measured_beside_the_run(cli_run):
    """Known answer (issue 37): neither monitor scales the TSC here, so the
    guest's TSC rate against its reference (Firecracker: KVM's in-kernel
    PIT; Cloud Hypervisor: its PM timer, both timed from the host's
    CLOCK_MONOTONIC) is the host's TSC against CLOCK_MONOTONIC, which
    `clockbench run` measured beside the run (metadata.json's host_tsc):
    within 2 of the run's stated uncertainties and the host's bound. A PIT
    taken at 14.31818 MHz / 12 instead of KVM's 1,193,181 Hz shows here as
    +0.56 ppm."""
    assert cli_run.code == 0, cli_run.explain()
    host = cli_run.meta["host_tsc"]
    assert host["measured"] and host["uncertainty_ppm"] < 0.05, host
    got = {g["reference"]: g for g in host["guest"]}
    want = "pit" if cli_run.vmm == "firecracker" else "acpi_pm"
    assert want in got and got[want]["used"], got
    print("\n" + host_tsc.describe_against(host))
    for ref, g in got.items():
        # held again from the records, not only as the tool judged it
        f = _one(cli_run, "frequency", counter="tsc", reference=ref)
        again = host_tsc.compare(f["hz"], f["uncertainty_ppm"], host["hz"], host["uncertainty_ppm"])
        assert again["agree"] == g["agree"] and again["agree"], (ref, again)


@pytest.fixture
def firecracker_two_vcpus(tmp_path_factory):
    """Firecracker with 2 vCPUs through `clockbench run`, the drift window
    as long as the 1-vCPU known answer's (FC_LONG): issue 37 asks for the
    host's-TSC known answer at 1 and 2 vCPUs."""
    b = CliBoot("firecracker", 2, FC_LONG, tmp_path_factory.getbasetemp(), CLI_TIMEOUT_S)
    b.vmm, b.smp = "firecracker", 2
    return b


def test_the_tsc_is_the_hosts_with_two_vcpus(firecracker_two_vcpus):
    test_the_tsc_is_the_hosts_as_measured_beside_the_run(firecracker_two_vcpus)


def test_each_monitor_s_counters_run_at_its_own_constants(vmm_boot, tmp_path_factory):
    """Issue 37: Firecracker's PIT is KVM's in-kernel one, KVM_PIT_FREQ =
    1,193,181 Hz, not the crystal's 1,193,181.667 Hz (0.56 ppm, the whole of
    the TSC's error against the host's rate); its APIC timer KVM's 1 GHz.
    Cloud Hypervisor states its APIC's 1 GHz in CPUID, which comes first."""
    fc = boot_of(("firecracker", 1), vmm_boot, tmp_path_factory.getbasetemp())
    pit = _one(fc, "counter", name="pit")
    assert (pit["nominal_hz"], pit["nominal_from"], pit["nominal_vmm"]) == (1_193_181, "vmm", "Firecracker"), pit
    assert pit["nominal_constant"] == "KVM_PIT_FREQ, Linux arch/x86/kvm/i8254.h" and pit["nominal_spread_ppm"] is None, pit
    assert "nominal: KVM's in-kernel PIT, 1,193,181 Hz (KVM_PIT_FREQ)" in fc.output, fc.explain()
    tsc = _tsc(fc)
    assert tsc["reference"] == "pit" and tsc["reference_nominal_hz"] == 1_193_181 and tsc["nominal_spread_ppm"] == 0, tsc
    lapic = _one(fc, "counter", name="lapic")
    assert (lapic["nominal_hz"], lapic["nominal_from"]) == (1e9, "vmm"), lapic
    ch = boot_of(("cloud-hypervisor", 1), vmm_boot, tmp_path_factory.getbasetemp())
    lapic = _one(ch, "counter", name="lapic")
    assert (lapic["nominal_hz"], lapic["nominal_from"]) == (1e9, "claimed"), lapic


def test_cloud_hypervisor_has_no_pit_and_the_image_does_not_probe_one(vmm_boot, tmp_path_factory):
    """Cloud Hypervisor's FADT is hardware-reduced and it is not QEMU or
    Firecracker: the PIT is not probed (its ports are not touched), and the
    counter says why; Firecracker, hardware-reduced too, keeps KVM's PIT."""
    ch = boot_of(("cloud-hypervisor", 1), vmm_boot, tmp_path_factory.getbasetemp())
    assert _one(ch, "acpi")["hardware_reduced"] is True
    pit = _one(ch, "counter", name="pit")
    assert pit["present"] is False and pit["reason"].startswith("not probed: hardware-reduced ACPI"), pit
    fc = boot_of(("firecracker", 1), vmm_boot, tmp_path_factory.getbasetemp())
    assert _one(fc, "acpi")["hardware_reduced"] is True and _one(fc, "counter", name="pit")["present"] is True


# --- `clockbench run --vmm`, as a user runs it --------------------------------

def test_clockbench_run_keeps_reports_and_stores_the_run(cli_run):
    """The CLI's own run: its exit status is the summary's; the run folder
    holds run.log (the serial log, whole), metadata.json naming the monitor,
    its version (as `--version` says it) and program, the report (HTML and
    results.json), the monitor's log; the store has the run as one row."""
    b = cli_run
    summary = _one(b, "summary")
    assert b.code == microvm.STATUS_CODES[summary["status"]] == 0, b.explain()
    m = b.meta
    assert (m["verdict"], m["exit"], m["status_source"], m["vmm_exit"], m["powered_off"]) == \
        (summary["status"], b.code, "summary", 0, True), m
    assert m["vmm"]["name"] == b.vmm and m["vmm"]["binary"] == str(b.binary.resolve()), m["vmm"]
    version = microvm.version(str(b.binary))
    assert version and m["vmm"]["version"] == version and version.lower().startswith(b.vmm.replace("-", " ").split()[0]), \
        (m["vmm"], version)
    assert m["vmm"]["smp"] == b.smp and m["cmdline"] == RUNS[(b.vmm, b.smp)]["append"], m
    log = (b.folder / "run.log").read_text()
    assert log.count('"type":"schema"') == 1 and log.count('"type":"summary"') == 1 and "clockbench: run ended: passed" in log
    assert m["report"] == str(b.folder / "report.html") and (b.folder / "report.html").stat().st_size > 1000, m["report"]
    results = json.loads((b.folder / "results.json").read_text())
    assert results, "results.json is empty"
    [kept] = [l for l in b.out.splitlines() if "run kept in" in l]
    assert all(f in kept for f in ("run.log", "metadata.json", "report.html", "results.json", "vmm-stderr.log")), kept
    with sqlite3.connect(f"file:{b.store}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT machine, status, exit, source, boot, log_path, cmdline FROM runs").fetchall()
    assert len(rows) == 1, rows
    machine, status, code, source, boot, log_path, cmdline = rows[0]
    assert machine.endswith(f"/{b.vmm}-smp{b.smp}") and (status, code, source, boot) == ("passed", 0, "run", "pvh"), rows
    # the command line as the image read it: Firecracker appends its own words (pci=off)
    assert Path(log_path) == b.folder / "run.log" and cmdline.split()[:len(m["cmdline"].split())] == m["cmdline"].split(), rows


def _children(pid: int) -> list[int]:
    kids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            kids += [int(k) for k in open(f"/proc/{pid}/task/{tid}/children").read().split()]
        except OSError:
            pass
    return kids


def _child_running(pid: int, program: Path) -> int | None:
    """The child of `pid` that runs `program` (its command line's first word)."""
    for k in _children(pid):
        try:
            if open(f"/proc/{k}/cmdline").read().split("\0")[0] == str(program):
                return k
        except OSError:
            pass
    return None


DRIFT_START = re.compile(r'"type":"phase".*"experiment":"drift".*"event":"start"')


def test_a_monitor_killed_mid_run_keeps_its_partial_log_and_says_so(tmp_path):
    """Firecracker killed from outside (SIGKILL) 2 s into a 30 s drift
    window: `clockbench run` exits 4 (no verdict), says the monitor was
    killed by SIGKILL, and keeps what came before: run.log with the run's
    start and no summary, metadata.json with the verdict, the status and the
    monitor's end."""
    binary = VMM_DIR / "firecracker"
    assert binary.is_file() and os.access(binary, os.X_OK), f"{binary} is missing: the microVM tests need it"
    runs_dir = tmp_path / "runs"
    argv = [sys.executable, "-m", "clockbench", "run", "--vmm", "firecracker", "--vmm-binary", str(binary),
            "--kernel", str(PVH_KERNEL), "--append", "only=drift duration=30", "--runs-dir", str(runs_dir),
            "--store", "none", "--no-report", "--timeout", "300"]
    t0 = time.monotonic()
    tool = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=tool_env())
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(tool.stdout), daemon=True)
    reader.start()
    killed = None
    try:
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline and tool.poll() is None:
            logs = list(runs_dir.glob("*/run.log"))
            if logs and DRIFT_START.search(logs[0].read_text(errors="replace")):
                break
            time.sleep(0.2)
        assert tool.poll() is None, "".join(out)[-3000:]
        # 2 s into a 30 s window (by the guest's clock, which runs with the
        # host's): the kill lands in it unless the log is read 28 s late
        time.sleep(2.0)
        killed = _child_running(tool.pid, binary)
        assert killed, f"no firecracker under the tool (pid {tool.pid}): {_children(tool.pid)}"
        os.kill(killed, signal.SIGKILL)
        code = tool.wait(timeout=60)
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    reader.join(timeout=10)
    said = "".join(out)
    print(f"\nkilled run: {time.monotonic() - t0:.1f} s")
    assert code == qemu.EXIT_NO_VERDICT, (code, said[-3000:])
    assert "no verdict: firecracker was killed by SIGKILL before the image reported" in said, said[-3000:]
    [folder] = [f for f in runs_dir.iterdir() if f.is_dir()]
    log = (folder / "run.log").read_text()
    assert log.count('"type":"schema"') == 1 and DRIFT_START.search(log), log[-2000:]
    assert '"type":"summary"' not in log and "run ended" not in log, log[-2000:]
    meta = json.loads((folder / "metadata.json").read_text())
    assert (meta["verdict"], meta["exit"], meta["vmm_exit"], meta["powered_off"], meta["status_source"]) == \
        ("no verdict", qemu.EXIT_NO_VERDICT, -signal.SIGKILL, False, None), meta
    assert meta["ended"] and 0 < meta["seconds"] < time.monotonic() - t0, meta


# --- the API sockets the snapshot and pause work will use --------------------

@pytest.mark.parametrize("vmm", microvm.VMM_NAMES)
def test_the_api_socket_answers(vmm):
    """Each monitor started with an API socket and no machine answers a
    request through vmrun.api_request (what pause and snapshot will use)."""
    binary = VMM_DIR / microvm.module(vmm).BINARY
    assert binary.is_file(), f"{binary} is missing: the microVM tests need it"
    with tempfile.TemporaryDirectory(prefix="clockbench-api-") as d:
        sock = Path(d) / "api.sock"
        cmd = [str(binary), "--api-socket", f"path={sock}"] if vmm == "cloud-hypervisor" else \
            [str(binary), "--api-sock", str(sock), "--log-path", "/dev/stderr"]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        t0 = time.monotonic()
        try:
            if vmm == "cloud-hypervisor":
                status, answer = cloud_hypervisor.api(sock, "vmm.ping")
                assert status == 200 and answer["build_version"].startswith("v"), (status, answer)
            else:
                status, answer = firecracker.api(sock, "GET", "/")
                assert status == 200 and answer["state"] == "Not started" and answer["vmm_version"], (status, answer)
        finally:
            proc.kill()
            proc.wait()
        assert time.monotonic() - t0 < 10
