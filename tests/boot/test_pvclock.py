"""Paravirtual clocks: kvmclock under KVM (on and off), Hyper-V's reference
counter and TSC page (QEMU's hv-time under KVM), absent under TCG; and the
clocksource Linux would pick from what was found. kvmclock's figures are
read from the shared KVM runs of tests/boot/boots.py."""

from __future__ import annotations

import pytest

import boots
from clockbench.machines import qemu
from clockbench.records import records

KVM_CPU = qemu.KVM_CPU


def counter(b, name):
    return records.one(b.records, "counter", name=name)


def freq(b, name):
    return next(r for r in records.of_type(b.records, "frequency") if r["counter"] == name)


@pytest.fixture(scope="module")
def kvm_run(boot, kvm):
    # what kvmclock's figures need: read cost, sequential reads, the drift window
    b = boot(**boots.KVM_Q35)
    assert b.status == 0, b.explain()
    return b


def test_kvmclock_is_found_and_measured_like_every_counter(kvm_run):
    c = counter(kvm_run, "kvmclock")
    assert c["present"] and c["width_bits"] == 64 and c["nominal_hz"] == 1e9, c
    pv = records.one(kvm_run.records, "pvclock")
    assert pv["registered"] and pv["tsc_to_system_mul"] > 0 and -32 < pv["tsc_shift"] < 32, pv
    assert isinstance(pv["stable_bit"], bool)
    lat = records.one(kvm_run.records, "latency", counter="kvmclock")
    assert lat["p50_ns"] > 0
    res = records.one(kvm_run.records, "resolution", counter="kvmclock")
    assert res["backward"] == 0, res
    mono = records.one(kvm_run.records, "monotonicity", counter="kvmclock")
    assert mono["backward"] == 0, mono


@pytest.mark.timed
def test_kvmclock_runs_at_1ghz_against_the_hpet(kvm_run):
    # kvmclock is the host's TSC scaled to ns; the HPET is QEMU's host clock:
    # they agree to the host's own TSC calibration, a few ppm
    f = freq(kvm_run, "kvmclock")
    assert f["reference"] == "hpet", f
    assert abs(f["ppm_vs_nominal"]) <= 3 * f["uncertainty_ppm"] + 50, f


def test_with_an_invariant_tsc_linux_would_use_the_tsc(kvm_run):
    c = records.one(kvm_run.records, "os_choice")
    assert c["clocksource"] == "tsc" and c["rating"] == 300 and "kvm-clock" in c["why"], c
    # a KVM that emulates every instruction (PVM here) is an emulator to the image, and the line says so
    here = "An OS in this emulator" if records.one(kvm_run.records, "cpu_speed")["answer"] == "emulator" else "An OS here"
    assert f"{here}: Linux would use tsc" in kvm_run.output


def test_without_an_invariant_tsc_linux_would_use_kvm_clock(boot, kvm):
    # the run test_steal.py reads too, with steal time off besides
    b = boot(**boots.KVM_NO_INVTSC_NO_STEAL)
    assert b.status == 0, b.explain()
    c = records.one(b.records, "os_choice")
    assert c["clocksource"] == "kvm-clock" and c["rating"] == 400, c


def test_kvmclock_off(boot, kvm):
    b = boot(boot="direct", accel="kvm", firmware="qboot", cpu=KVM_CPU + ",-kvmclock", append="only=cpu_speed", timeout=400)
    assert b.status == 0, b.explain()
    c = counter(b, "kvmclock")
    assert not c["present"] and "does not offer kvmclock" in c["reason"], c


def test_hyperv_reference_counter_and_page(boot, kvm):
    b = boot(boot="direct", accel="kvm", firmware="qboot", cpu=KVM_CPU + ",hv-time,hv-frequencies", append="only=read_cost",
             timeout=400)
    if b.status is None and "kvm_buf_set_msrs" in b.result.stderr:
        # QEMU asserts when the host's KVM refuses the Hyper-V MSRs it sets up
        # (seen under the PVM KVM of our CI): no Hyper-V guest can run here
        pytest.skip("this host's KVM does not emulate Hyper-V's MSRs (QEMU aborts in kvm_buf_set_msrs)")
    assert b.status == 0, b.explain()
    for name in ("hv_ref_counter", "hv_ref_page"):
        c = counter(b, name)
        assert c["present"] and c["nominal_hz"] == 1e7, c
        assert records.one(b.records, "latency", counter=name)["p50_ns"] > 0
    hv = records.one(b.records, "hyperv")
    assert hv["page_valid"] and hv["between_checked"] > 0 and hv["between_outside"] == 0, hv
    check = records.one(b.records, "check", name="Hyper-V reference counter within its TSC page")
    assert check["result"] == "PASS", check
    claims = {(c["source"], c["what"]) for c in records.of_type(b.records, "freq_claim")}
    assert ("hv.msr.40000022", "tsc") in claims, claims


def test_tcg_has_no_paravirtual_clock(boot):
    b = boot(**boots.TCG_Q35)
    assert b.status == 0, b.explain()
    for name in ("kvmclock", "hv_ref_counter", "hv_ref_page"):
        c = counter(b, name)
        assert not c["present"] and c["reason"], c


def test_kvmclock_across_cpus(boot, kvm):
    # kvm-unit-tests' kvmclock test: every CPU reads its own page; no reading
    # may go back across CPUs (the two CPUs are in x2APIC mode: no matter here)
    b = boot(**boots.KVM_X2APIC)
    assert b.status == 0, b.explain()
    [sync] = records.of_type(b.records, "tsc_sync")
    assert sync["kvmclock_warps"] == 0, sync
    check = records.one(b.records, "check", name="kvmclock monotonic across CPUs")
    assert check["result"] == ("PASS" if sync["kvmclock_warp_cross"] else "SKIP"), (check, sync)


# A microVM under KVM with no HPET, PM timer or PIT (no ACPI, pit=off): the
# machine Firecracker-like VMMs give, where kvmclock is the TSC's reference
# of last resort. Only the drift window, 2 s, to keep the KVM boot short.
KVM_KVMCLOCK_ONLY = dict(boot="pvh", accel="kvm", machine="microvm", extra=["-machine", "microvm,acpi=off,pit=off,rtc=off"],
                         append="only=drift duration=2", timeout=400)


@pytest.mark.timed
def test_kvmclock_is_the_reference_when_no_counter_answers(boot, kvm):
    """Known answer: kvmclock is the host's time scaled from this TSC by
    the rate KVM states in its mul/shift, so the TSC's rate fitted against
    it must come out at that stated rate (and at the CPUID 0x40000010 claim,
    the same host rate in kHz), within the uncertainty the run states; that
    uncertainty carries the half-kHz rounding of KVM's rate, and the run
    says it checks the stated rate, not an independent crystal."""
    from helpers.paths import PVH_KERNEL
    b = boot(kernel=PVH_KERNEL, **KVM_KVMCLOCK_ONLY)
    assert b.status == 0, b.explain()
    for name in ("hpet", "acpi_pm", "pit"):
        assert not counter(b, name)["present"], counter(b, name)
    assert counter(b, "kvmclock")["present"] and counter(b, "kvmclock")["reference_role"] == "last resort"
    prof = records.one(b.records, "profile")
    assert prof["tsc_measured"] and prof["tsc_reference"] == "kvmclock" and prof["tsc_hz_source"] == "measured against kvmclock"
    assert "not an independent crystal" in prof["tsc_reference_why"], prof
    (f,) = [r for r in records.of_type(b.records, "frequency") if r["counter"] == "tsc" and r["reference"] == "kvmclock"]
    assert f["used"] and f["reference_why"] == prof["tsc_reference_why"], f
    pv = records.one(b.records, "pvclock")
    mul, shift = pv["tsc_to_system_mul"], pv["tsc_shift"]
    stated = (10**9 << 32) // mul
    stated = stated >> shift if shift >= 0 else stated << -shift
    assert abs(f["stated_hz"] - stated) <= 1, (f["stated_hz"], stated)
    rounding_ppm = 500 / stated * 1e6
    assert f["quantisation_ppm"] >= rounding_ppm * 0.99 and f["uncertainty_ppm"] >= rounding_ppm * 0.99, f
    assert f["absolute_uncertainty_ppm"] == 500
    off_ppm = (f["hz"] / f["stated_hz"] - 1) * 1e6
    # The host's writes of kvmclock's page in the window are counted (each
    # re-anchors kvmclock to the host's clock), and the report says whether
    # kvmclock ran at its stated scaling throughout.
    updates, rescaled = f["kvmclock_page_updates"], f["kvmclock_scale_changed"]
    said = [l for l in b.lines("    ") if "kvmclock's page" in l]
    if updates is None:
        assert rescaled is None and said and "kvmclock's page was being written" in said[0], (f, said)
    else:
        assert isinstance(rescaled, bool) and (updates or not rescaled), f  # a new mul/shift comes in a write
    if updates == 0:
        assert said and "did not write kvmclock's page in the window" in said[0], said
    elif updates:
        assert said and f"wrote kvmclock's page {updates} time" in said[0], said
    # On this PVM host the fit once came out 1.7 ppm off the stated scaling
    # over a 2 s window (+-0.46 ppm stated then), and once 0.62 ppm off
    # (+-0.28) with no page write in the window: the reads had moved inside
    # their brackets (issue 37). That move is now in the stated uncertainty
    # (`bracket_drift_ppm`, the widest kept bracket over the window), and
    # the known answer allows nothing beyond 3 u.
    assert f["bracket_drift_ppm"] > 0 and f["uncertainty_ppm"] >= f["bracket_drift_ppm"] * 0.999, f
    print(f"\nthe TSC against kvmclock: {off_ppm:+.3f} ppm from its stated scaling, +-{f['uncertainty_ppm']:.3f} stated "
          f"(bracket drift {f['bracket_drift_ppm']:.3f}); page writes {f['kvmclock_page_updates']}")
    allowed = 3 * f["uncertainty_ppm"]
    assert abs(off_ppm) <= allowed, \
        f"{f['hz']} Hz vs stated {f['stated_hz']}: {off_ppm:+.3f} ppm, allowed {allowed:.3f}; page writes {updates}"
    claims = [c for c in records.of_type(b.records, "freq_claim") if c["what"] == "tsc" and c["source"] == "cpuid.40000010h"]
    for c in claims:
        assert abs((f["hz"] / c["hz"] - 1) * 1e6) <= allowed, (f, c)
    assert any("Reference: no HPET, PM timer or PIT answered: kvmclock" in line for line in b.lines("  Reference:")), b.explain()
