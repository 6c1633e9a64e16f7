"""`clockbench os-vm` for real: Debian's Linux kernel (fetched with apt, or
from the cache in build/linux/) booted under TCG in the image's QEMU
machine, with build/os/clockbench-os as /init, through the tool's real
command line. A missing program or a kernel that cannot be fetched fails
these tests: they are what `make test` checks the OS figures with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clockbench.machines import qemu
from clockbench.records import records
from helpers.paths import BUILD
from helpers.tool import tool_env

pytestmark = pytest.mark.timed  # Linux's clocks measured, rates against known answers

PROGRAM = BUILD / "os" / "clockbench-os"
ENV = tool_env()
TOOL_TIMEOUT_S = 300  # the tool's own bound; TCG reaches init in seconds, the program then measures


class OsRun:
    def __init__(self, proc: subprocess.CompletedProcess, log: Path):
        self.code, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.log = log.read_text() if log.is_file() else ""
        self.records = records.parse_log(self.log).records

    def of_type(self, kind: str) -> list[dict]:
        return [r for r in self.records if r.get("type") == kind]

    def explain(self) -> str:
        return f"exit {self.code}\n--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-2000:]}" \
               f"\n--- log ---\n{self.log[-3000:]}"


@pytest.fixture(scope="module")
def tcg_run(tmp_path_factory) -> OsRun:
    if not PROGRAM.is_file():
        pytest.fail(f"{PROGRAM} is missing: `make os` builds it")
    log = tmp_path_factory.mktemp("os-vm") / "os-vm.log"
    proc = subprocess.run([sys.executable, "-m", "clockbench", "os-vm", "--accel", "tcg", "--program", str(PROGRAM),
                           "--log", str(log), "--timeout", str(TOOL_TIMEOUT_S), "--no-lang", "--args=--quick"],
                          capture_output=True, text=True, timeout=TOOL_TIMEOUT_S + 120, env=ENV)
    run = OsRun(proc, log)
    # 66/69: the kernel could not be fetched (no network, no apt): a failure, not a skip
    assert run.code < 64, f"os-vm could not run: {run.explain()}"
    return run


def test_says_the_machine_and_kernel_first(tcg_run):
    lines = tcg_run.stdout.split("\n")
    config = next(l for l in lines if "Linux under" in l)
    assert "TCG" in config and "machine q35" in config and "cpu max" in config and "smp 1" in config \
        and "firmware bios" in config, config
    kernel = next(l for l in lines if l.startswith("clockbench os-vm: kernel "))
    assert "vmlinuz-" in kernel and "Debian linux-image-" in kernel, kernel


def test_the_program_ran_as_init_and_ended_with_its_verdict(tcg_run):
    schema = tcg_run.of_type("schema")
    assert '@cb {"type":"schema"' in tcg_run.log and schema, tcg_run.explain()
    summary = tcg_run.of_type("summary")
    assert len(summary) == 1, tcg_run.explain()
    name = summary[0]["status"]  # "passed" or "failed", as the image's summary says it
    assert name in ("passed", "failed"), summary
    status = {v: k for k, v in qemu.STATUS_NAMES.items()}[name]
    assert tcg_run.code == status, tcg_run.explain()
    assert f"the program ended: {name} (status {status})" in tcg_run.stdout


def test_the_terminal_shows_the_report_but_not_the_records(tcg_run):
    assert "@cb {" not in tcg_run.stdout
    assert tcg_run.log.count("@cb {") >= 2


def test_every_clocksource_is_measured_as_root_and_the_original_put_back(tcg_run):
    os_rec = tcg_run.of_type("os")[0]
    assert os_rec["init"] is True and os_rec["root"] is True and os_rec["switching"] is True
    # QEMU's q35 offers the TSC, the HPET and the PM timer; Linux lists all three
    assert set(os_rec["available_clocksources"].split()) >= {"tsc", "hpet", "acpi_pm"}, os_rec
    original = os_rec["clocksource"]
    switched = {c["name"]: c for c in tcg_run.of_type("os_clocksource")}
    assert set(switched) == set(os_rec["available_clocksources"].split()) - {original}
    assert all(c["selected"] for c in switched.values()), switched
    assert tcg_run.of_type("os_restore")[0] == {"type": "os_restore", "original": original, "now": original, "restored": True}
    measured = {r["clocksource"] for r in tcg_run.of_type("os_latency")}
    assert measured == set(os_rec["available_clocksources"].split())
    checks = {c["name"]: c["result"] for c in tcg_run.of_type("check")}
    assert checks["clocksource restored"] == "PASS" and checks["OS clocks measured"] == "PASS"
    assert checks["OS clocks monotonic"] == "PASS"


def p50(run, cs, call, path):
    return next(r["p50_ns"] for r in run.of_type("os_latency") if (r["clocksource"], r["call"], r["path"]) == (cs, call, path))


def test_hpet_and_pm_timer_have_no_vdso_path(tcg_run):
    # On x86-64 Linux 6.1 only the TSC (and the paravirtual clocks) have a
    # vDSO mode: on the HPET and the PM timer the vDSO falls back to the
    # syscall, so it costs what the syscall costs, and more than on the TSC.
    mono = "clock_gettime(CLOCK_MONOTONIC)"
    tsc_vdso = p50(tcg_run, "tsc", mono, "vdso")
    assert tsc_vdso < p50(tcg_run, "tsc", mono, "syscall")
    for cs in ("hpet", "acpi_pm"):
        vdso, sysc = p50(tcg_run, cs, mono, "vdso"), p50(tcg_run, cs, mono, "syscall")
        # under TCG a p50 of a few thousand calls moves by tens of percent
        # with the host's load (0.74x once): a vDSO path of its own would
        # cost a tenth of the syscall, as on tsc
        assert vdso >= 0.5 * sysc, (cs, vdso, sysc)
        assert vdso > 3 * tsc_vdso, (cs, vdso, tsc_vdso)


def test_tsc_rate_agrees_through_the_hpet_and_the_pm_timer(tcg_run):
    # Known answer: QEMU emulates the HPET and the PM timer from the same
    # host clock, so the TSC's rate against CLOCK_MONOTONIC_RAW must come
    # out the same on either clocksource, within the stated uncertainties.
    rate = {r["clocksource"]: r for r in tcg_run.of_type("os_tsc_rate")}
    h, p = rate["hpet"], rate["acpi_pm"]
    ppm = (h["hz"] / p["hz"] - 1) * 1e6
    u = (h["uncertainty_ppm"] ** 2 + p["uncertainty_ppm"] ** 2) ** 0.5
    assert abs(ppm) <= 3 * u, (h, p)
    assert 0 < u < 50


def test_on_the_tsc_clocksource_the_rate_is_the_kernels_calibration(tcg_run):
    # CLOCK_MONOTONIC_RAW on the TSC is the TSC scaled by the kernel's tsc_khz:
    # the rate read back must be the last rate the kernel log states
    rate = next(r for r in tcg_run.of_type("os_tsc_rate") if r["clocksource"] == "tsc")
    claims = [c["hz"] for c in tcg_run.of_type("os_claim") if c["what"] in ("tsc detected", "tsc refined") and c["hz"]]
    assert claims, tcg_run.of_type("os_claim")
    assert abs(rate["hz"] - claims[-1]) <= 1000 + 3 * rate["uncertainty_ppm"] * 1e-6 * rate["hz"], (rate, claims)


def test_coarse_clocks_step_by_the_tick(tcg_run):
    for r in tcg_run.of_type("os_resolution"):
        if "COARSE" in r["call"]:
            assert abs(r["min_step_ns"] - r["getres_ns"]) <= 0.01 * r["getres_ns"], r
