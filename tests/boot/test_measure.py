"""Boot tests of the measurement engine against known answers.

QEMU emulates the HPET and the ACPI PM timer from the same host clock, so
their ratio is exactly nominal (100 MHz / 3.579545 MHz): the measured ratio
must agree within 3 of its stated uncertainty (uncertainty_ppm) and within
5 ppm. QEMU's TCG PIT runs at exactly 1,193,182 Hz from the same clock. Under KVM
the guest's TSC runs at the host's TSC rate, which the host kernel states
in its `tsc: Detected ... MHz` line: the measurement must agree within 50 ppm.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import boots
from clockbench.records import records

pytestmark = pytest.mark.timed  # known answers of rates measured against the host's clock

LATENCY_KEYS = {"type", "counter", "n", "min_ns", "p50_ns", "mean_ns", "p99_ns", "p999_ns", "max_ns", "stddev_ns"}
FREQUENCY_KEYS = {"type", "counter", "reference", "hz", "ppm_vs_nominal", "stderr_ppm", "uncertainty_ppm",
                  "absolute_uncertainty_ppm", "window_s", "samples", "segments"}


@pytest.fixture(scope="module")
def tcg_run(boot):
    b = boot(**boots.TCG_Q35)
    assert b.status == 0, b.explain()
    return b


def assert_ratio_is_nominal(b):
    f = records.one(b.records, "frequency", counter="acpi_pm", reference="hpet")
    assert f["samples"] >= 100
    ppm, u = f["ppm_vs_nominal"], f["uncertainty_ppm"]
    assert abs(ppm) <= 5, f
    assert abs(ppm) <= 3 * u + 0.001, f  # 0.001 ppm: the record's rounding
    assert u >= f["stderr_ppm"] and f["absolute_uncertainty_ppm"] == 500
    assert abs(f["hz"] - 3_579_545) <= 3_579_545 * 5e-6


def test_hpet_pm_ratio_is_nominal_under_tcg(tcg_run):
    assert_ratio_is_nominal(tcg_run)


def test_tcg_pit_runs_at_qemus_rate(tcg_run):
    f = records.one(tcg_run.records, "frequency", counter="pit", reference="hpet")
    err_ppm = (f["hz"] - 1_193_182) / 1_193_182 * 1e6
    assert abs(err_ppm) <= 3 * f["uncertainty_ppm"] + 0.001, f


def test_tcg_pit_nominal_is_qemus_pit_freq(tcg_run):
    """Under TCG the image knows QEMU's PIT (lib/vmm_rates.c): its nominal is
    PIT_FREQ, 1,193,182 Hz, not the crystal's 1,193,181.667 Hz, and the
    records say where it comes from (issue 37)."""
    c = records.one(tcg_run.records, "counter", name="pit")
    assert c["nominal_hz"] == 1_193_182 and c["nominal_from"] == "vmm" and c["nominal_vmm"] == "QEMU (TCG)", c
    assert c["nominal_constant"] == "PIT_FREQ, QEMU include/hw/timer/i8254.h" and c["nominal_spread_ppm"] is None, c
    assert c["nominal_source"] == "QEMU's PIT, 1,193,182 Hz (PIT_FREQ)", c
    assert "nominal: QEMU's PIT, 1,193,182 Hz (PIT_FREQ)" in tcg_run.output
    f = records.one(tcg_run.records, "frequency", counter="tsc", reference="pit")
    assert f["reference_nominal_hz"] == 1_193_182 and f["reference_nominal_from"] == "vmm", f
    assert f["nominal_spread_ppm"] == 0, f
    pm = records.one(tcg_run.records, "counter", name="acpi_pm")
    assert pm["nominal_constant"] == "PM_TIMER_FREQUENCY, QEMU include/hw/acpi/acpi.h", pm
    lapic = records.one(tcg_run.records, "counter", name="lapic")
    assert lapic["nominal_hz"] == 1e9 and lapic["nominal_from"] == "vmm", lapic
    # QEMU's APIC counts its virtual clock's ns, as the HPET does: exactly nominal
    pair = records.one(tcg_run.records, "frequency", counter="lapic", reference="hpet")
    assert abs(pair["ppm_vs_nominal"]) <= 3 * pair["uncertainty_ppm"] + 0.001, pair


def test_tsc_by_the_pit_agrees_with_the_hpet_within_the_stated_uncertainty(boot):
    """The known answer of issue 37: the TSC measured against QEMU's PIT
    agrees with the TSC measured against the HPET (and the PM timer) within
    the stated uncertainty. With the crystal's nominal the PIT's figure was
    0.28 ppm off, within the 2 s run's +-0.5 ppm: over 10 s the figure's
    real error (about 0.01 ppm here) tells the two nominals apart, whatever
    the uncertainty a loaded host makes the image state."""
    b = boot(**boots.TCG_RTC_VM_10S)
    assert b.status == 0, b.explain()
    by = {ref: records.one(b.records, "frequency", counter="tsc", reference=ref) for ref in ("hpet", "acpi_pm", "pit")}
    pit = by["pit"]
    for ref in ("hpet", "acpi_pm"):
        other = by[ref]
        u = (pit["uncertainty_ppm"] ** 2 + other["uncertainty_ppm"] ** 2) ** 0.5
        off = (pit["hz"] - other["hz"]) / other["hz"] * 1e6
        assert abs(off) <= u + 0.001, (ref, off, u)
    # nearer PIT_FREQ than the crystal's 14.31818 MHz / 12, 0.279 ppm away
    crystal_off = (1_193_182 / (14_318_180 / 12) - 1) * 1e6
    off = (pit["hz"] - by["hpet"]["hz"]) / by["hpet"]["hz"] * 1e6
    assert abs(off) < crystal_off / 2, (off, crystal_off)
    pair = records.one(b.records, "frequency", counter="pit", reference="hpet")
    assert abs(pair["ppm_vs_nominal"]) <= 3 * pair["uncertainty_ppm"] + 0.001, pair


def test_every_target_has_latency_resolution_and_monotonicity(tcg_run):
    names = {"rdtsc", "rdtscp", "lfence;rdtsc", "mfence;rdtsc", "cpuid;rdtsc", "hpet", "acpi_pm", "pit"}
    for name in names:
        lat = records.one(tcg_run.records, "latency", counter=name)
        assert LATENCY_KEYS <= set(lat), lat
        assert lat["n"] > 100
        assert lat["min_ns"] <= lat["p50_ns"] <= lat["p99_ns"] <= lat["p999_ns"] <= lat["max_ns"]
        assert lat["min_ns"] <= lat["mean_ns"] <= lat["max_ns"]
        res = records.one(tcg_run.records, "resolution", counter=name)
        assert {"min_step_ns", "nominal_tick_ns"} <= set(res)
        mono = records.one(tcg_run.records, "monotonicity", counter=name)
        assert mono["backward"] == 0
        parts = [h for h in records.of_type(tcg_run.records, "histogram") if h["counter"] == name]
        assert parts and len(parts) == parts[0]["parts"]
        counted = sum(c for h in parts for c in h["bins"][1::2])
        kept_bins = sum(len(h["bins"]) // 2 for h in parts)
        # every tabled delta is in the records, unless there were more distinct deltas than records hold
        assert counted == res["deltas"] or (res["distinct"] > kept_bins and counted < res["deltas"])
        # the deltas that span a budget check (after every 64th read) are left out, nothing else
        assert res["deltas"] == res["reads"] - 1 - (res["reads"] - 1) // 64 - mono["backward"]


def test_resolution_knows_the_nominal_ticks(tcg_run):
    hpet = records.one(tcg_run.records, "resolution", counter="hpet")
    assert hpet["nominal_tick_ns"] == 10.0  # 10,000,000 fs
    pm = records.one(tcg_run.records, "resolution", counter="acpi_pm")
    assert abs(pm["nominal_tick_ns"] - 1e9 / 3_579_545) < 1e-6
    pit = records.one(tcg_run.records, "resolution", counter="pit")
    assert abs(pit["nominal_tick_ns"] - 1e9 / 1_193_182) < 1e-6  # QEMU's PIT_FREQ (lib/vmm_rates.c)
    # the PM timer ticks slower than it can be read under QEMU: repeated values, one-tick steps
    assert pm["min_step_ticks"] == 1


def test_frequency_records_and_tsc_reference(tcg_run):
    prof = records.one(tcg_run.records, "profile")
    assert prof["name"] == "quick" and prof["tsc_measured"] and prof["tsc_hz_source"] == "measured against hpet"
    for ref in ("hpet", "acpi_pm", "pit"):
        f = records.one(tcg_run.records, "frequency", counter="tsc", reference=ref)
        assert FREQUENCY_KEYS <= set(f)
        # the window asked, once the time the loop was away is taken out: a host that took the CPU
        # from QEMU for 0.4 s (make test, 2026-12-07: window_s 2.406) lengthens what ran, not what was sampled
        assert abs(f["window_s"] - f["away_s"] - 2.0) < 0.2, f
        # every reference agrees on the TSC within 3 of its stated uncertainty
        assert abs(f["hz"] - prof["tsc_hz"]) / prof["tsc_hz"] * 1e6 <= 3 * f["uncertainty_ppm"] + 0.001, f
    # two 1 s sub-windows in the 2 s window; one that held the host taking
    # the CPU (a gap, with a busy host beside the run) is left out, never bent
    stab = [s for s in records.of_type(tcg_run.records, "stability") if s["reference"] == "hpet"]
    assert 1 <= len(stab) <= 2, stab
    assert all(s["length_s"] == 1.0 for s in stab), stab


def test_verdict_checks_and_summary(tcg_run):
    out = tcg_run.output
    for section in ("== Quick TSC estimate", "== Read cost", "== Resolution", "== Monotonicity", "== Frequency and drift",
                    "== Time stolen", "== CPU speed", "== HPET comparator", "== Verdict"):
        assert section in out
    checks = records.of_type(tcg_run.records, "check")
    assert any(c["name"] == "frequency within tolerance" and c["result"] == "PASS" for c in checks)
    s = records.one(tcg_run.records, "summary")
    assert s["fail"] == 0 and s["pass"] == sum(c["result"] == "PASS" for c in checks)
    assert records.one(tcg_run.records, "memory")["used_bytes"] > 0
    assert not records.one(tcg_run.records, "cpu_speed")["emulated"]


def test_under_tcg_the_verdict_speaks_of_the_emulator(tcg_run):
    """TCG's translated loop runs at hardware speed: the signature answers
    "hardware or an emulator?", in words, and the verdict, the TSC's advice
    and Linux's choice say they describe the emulator."""
    cs = records.one(tcg_run.records, "cpu_speed")
    assert (cs["answer"], cs["answer_by"]) == ("emulator", "signature"), cs
    out = " ".join(tcg_run.output.split())
    assert 'Hardware or an emulator? An emulator: the hypervisor signature "TCGTCGTCGTCG" is QEMU\'s TCG' in out
    assert "every figure below describes the emulator's clocks, not this computer's hardware" in out
    assert "An OS in this emulator: Linux would use" in out and "An OS here:" not in out
    tsc = next(v for v in records.of_type(tcg_run.records, "verdict") if v["counter"] == "tsc")
    assert tsc["qualifier"] == "in this emulator" and f"-> in this emulator: {tsc['advice']}" in out
    # the verdict names the reference every ns figure rests on: the TSC's frequency record's
    freq = next(f for f in records.of_type(tcg_run.records, "frequency") if f["counter"] == "tsc")
    assert tsc["reference"] == freq["reference"] == "hpet", (tsc, freq)
    assert all(v["reference"] is None for v in records.of_type(tcg_run.records, "verdict") if v["counter"] != "tsc")
    assert records.one(tcg_run.records, "os_choice")["emulator"] is True
    # each verdict record's read cost is the latency record's p50, to the 0.1 ns it prints
    lat = {r["counter"]: r for r in records.of_type(tcg_run.records, "latency")}
    for v in records.of_type(tcg_run.records, "verdict"):
        if v.get("read_cost") and v["counter"] in ("tsc", "hpet", "acpi_pm", "pit", "lapic"):
            row = lat["rdtsc" if v["counter"] == "tsc" else v["counter"]]
            if row.get("below_step"):  # no cost of its own: the batch's (seen for the TSC under TCG on a loaded host)
                got = re.fullmatch(r"below the TSC's step \(\d+\.\d ns\): (\d+\.\d\d) ns a read by the batch", v["read_cost"])
                assert got and abs(float(got[1]) - row["batch_ns_per_read"]) <= 0.0051, (v, row)
                continue
            assert re.fullmatch(r"\d+\.\d ns", v["read_cost"]) and abs(float(v["read_cost"][:-3]) - row["p50_ns"]) <= 0.0501, (v, row)
    # every note whole in its record, and the text says it
    for n in records.of_type(tcg_run.records, "note"):
        assert f"Note: {n['text']}" in out


def test_report_fits_80_columns(tcg_run):
    long = [l for l in tcg_run.output.split("\n") if not l.startswith("@cb ") and len(l) > 80]
    assert not long, long[:5]


def test_pm_timer_survives_its_24_bit_wrap(boot):
    # 6 s of drift: the 24-bit PM timer wraps every 4.69 s
    b = boot(boot="direct", accel="tcg", append="duration=6", timeout=300)
    assert b.status == 0, b.explain()
    mono = records.one(b.records, "monotonicity", counter="acpi_pm")
    assert mono["wraps"] >= 1 and mono["backward"] == 0 and not mono["stuck"]
    assert_ratio_is_nominal(b)
    f = records.one(b.records, "frequency", counter="acpi_pm", reference="hpet")
    assert abs(f["window_s"] - f["away_s"] - 6.0) < 0.5, f


def host_tsc_hz() -> float | None:
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # the refined calibration when the kernel made one, else the first estimate
    m = re.search(r"tsc: Refined TSC clocksource calibration: ([0-9.]+) MHz", log) or re.search(r"tsc: Detected ([0-9.]+) MHz", log)
    return float(m.group(1)) * 1e6 if m else None


def test_kvm_tsc_matches_the_host_and_ratio_is_nominal(boot, kvm):
    b = boot(**boots.KVM_Q35)
    assert b.status == 0, b.explain()
    assert_ratio_is_nominal(b)
    host = host_tsc_hz()
    if host is None:
        pytest.skip("the host's dmesg has no readable 'tsc:' line")
    prof = records.one(b.records, "profile")
    assert prof["tsc_measured"]
    assert abs(prof["tsc_hz"] - host) / host * 1e6 < 50, (prof["tsc_hz"], host)


def test_kvm_pit_is_chosen_by_measurement_or_carries_the_spread(boot, kvm):
    """QEMU+KVM's PIT is KVM's in-kernel one (KVM_PIT_FREQ, QEMU's default
    kernel-irqchip=on) or QEMU's own (PIT_FREQ): the guest cannot ask, so
    the drift measures it against the HPET and chooses the nearer when its
    uncertainty separates them; otherwise the midpoint stands with half the
    0.838 ppm spread in every uncertainty relative to the PIT. Either way the
    PIT's figure and the TSC's by the PIT agree with the HPET's within what
    is stated; QEMU's own PIT is never chosen here."""
    b = boot(**boots.KVM_Q35)
    assert b.status == 0, b.explain()
    c = records.one(b.records, "counter", name="pit")
    assert c["nominal_vmm"] == "QEMU+KVM" and c["nominal_hz"] == 1_193_181.5 and c["nominal_spread_ppm"] == 0.42, c
    ch = records.one(b.records, "nominal_choice", counter="pit")
    assert ch["reference"] == "hpet" and ch["chosen"] in ("KVM_PIT_FREQ", None), ch
    f = records.one(b.records, "frequency", counter="tsc", reference="pit")
    pair = records.one(b.records, "frequency", counter="pit", reference="hpet")
    if ch["chosen"]:
        assert ch["nominal_hz"] == 1_193_181 and ch["spread_ppm"] == 0 and f["reference_nominal_hz"] == 1_193_181, (ch, f)
        assert f["nominal_spread_ppm"] == 0 and ch["off_a_ppm"] <= 3 * ch["uncertainty_ppm"] < ch["off_b_ppm"], ch
    else:
        assert ch["nominal_hz"] == 1_193_181.5 and ch["spread_ppm"] == 0.42 and f["nominal_spread_ppm"] == 0.42, (ch, f)
        assert f["uncertainty_ppm"] >= 0.42 and pair["uncertainty_ppm"] >= 0.42, (f, pair)
    assert abs(pair["ppm_vs_nominal"]) <= 3 * pair["uncertainty_ppm"] + 0.001, pair
    hpet = records.one(b.records, "frequency", counter="tsc", reference="hpet")
    off = abs(f["hz"] - hpet["hz"]) / hpet["hz"] * 1e6
    assert off <= 3 * (f["uncertainty_ppm"] ** 2 + hpet["uncertainty_ppm"] ** 2) ** 0.5 + 0.001, (f, hpet)


def test_records_are_whole_and_long_ones_come_in_parts(tcg_run):
    # no record was cut for length; the residuals (128 points) come in parts
    # whose arrays join to their full length
    assert not [r for r in tcg_run.records if r.get("truncated")]
    parts = [r for r in records.of_type(tcg_run.records, "residuals") if r["reference"] == "hpet"]
    assert len(parts) == parts[0]["parts"] > 1 and [p["part"] for p in parts] == list(range(len(parts)))
    joined, notes = records.join_parts(tcg_run.records)
    [whole] = [r for r in records.of_type(joined, "residuals") if r["reference"] == "hpet"]
    assert not notes and len(whole["t_ms"]) == len(whole["resid_ps"]) == 128
    assert whole["t_ms"] == sorted(whole["t_ms"])
