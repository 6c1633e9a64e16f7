"""The quick calibration under stress (issue 30, item 7: once an estimate
8 % low passed its 0.5 % spread check).

One boot under TCG and one under KVM (issue 37, item 4) make the quick
estimate REPEATS more times (cal_repeat=N, only=calibrate), each in a
`calibration_repeat` record, while
- a busy process runs on each of the host's cores for the whole boot, and
- QEMU is stopped from outside during the repeats, by SIGSTOP (the host's
  clocks run on: every guest clock jumps alike) and by the monitor's
  stop/cont (under TCG every guest clock stops with the VM; under KVM the
  guest's TSC runs on while QEMU's HPET and PM timer stand still: a window
  across it sees the TSC run against a reference that did not),
  alternately.

Where a SIGSTOP lands is placed by what the guest says it is doing, not by
wall time: cal_hold=I:MS makes the image hold windows against its first
reference open before repeat I, saying so first, until they see a step of
MS; the stop is sent when that line is read. Once a stop was sent 20 ms
after the previous repeat's line, into windows against the first reference
that last 50 ms when their first round holds together: a host that acted
some 30 ms late put it after them, in the second reference's windows (whose
throws the record does not count) or later, and on a fresh machine's first
`make test` (issue 44, item 6) a 0.3 s stop threw nothing in its repeat.

Known answer: under TCG and KVM alike the guest's TSC is the host's
(PLATFORM.md), whose rate the `boot` fixture measures beside the run
(tests/conftest.py, machines/host_tsc.py: to a hundredth of a ppm). Every
estimate the image accepted must lie within its own stated uncertainty
(and the host measurement's) of it, so an 8 % error, or any error past what
the estimate states, fails here. An estimate the image did not accept must
say why.

The drift's later check of the estimate (calibration_check) is tested on a
machine with one reference (pc, no HPET, no ACPI: the PIT alone), where the
calibration has nothing to hold an estimate against: cal_bias= makes it 8 %
low, and the drift's measured rate must catch it, say it and fail its check.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from clockbench.machines import qemu
from clockbench.records import records

pytestmark = pytest.mark.timed  # stops QEMU from outside, under a host CPU hog

REPEATS = 16
# (repeat the fault falls in, kind, seconds stopped)
FAULTS = [(3, "sigstop", 0.3), (5, "pause", 0.3), (7, "sigstop", 1.0), (9, "pause", 1.0), (11, "sigstop", 0.05),
          (13, "pause", 0.05)]
# A SIGSTOP's repeat holds its windows open until they see a step of half
# the stop (the image's cal_hold=I:MS); the stop is sent once the line that
# says so is read, so it lands in them however late the host reads it.
# (Half: the guest sees the stop from when its vCPU thread stopped, which on
# a loaded host may be some milliseconds after the signal was sent, to the
# SIGCONT: seen 48 ms of a 50 ms stop. A step the size of the stop itself
# might never come, and the hold would run out. A loaded host's own
# preemptions, 10-100 ms, are steps too, and one as long as half the stop
# can end the hold before the stop comes: the window then throws that step
# instead, which is still what is checked here.)
HOLDS = {i: round(s * 1000 / 2) for i, kind, s in FAULTS if kind == "sigstop"}
# A monitor pause is placed by wall time, DELAY_S after the line that ends
# the repeat before its own: nothing below depends on where it lands (under
# TCG every guest clock stops with the VM, so no window can see it; under
# KVM its effect is judged by the estimates alone), so a late one is no
# failure, and a repeat cannot hold for a pause under TCG: it shows no step.
DELAY_S = 0.02


# Not to place the stop (the hold waits for it however late it comes) but to
# keep it off the first window's first reads: the host reads the line within
# a fraction of a millisecond, as the first window is choosing its start
# among its first reads, and a stop there falls before the window, seen by
# none (seen: 2 of 12 stops, sent at once)
HOLD_DELAY_S = 0.02


def fault(i: int, kind: str, s: float) -> qemu.Fault:
    if kind == "sigstop":
        # the whole line: a stop sent on its first words lands while the rest is still going out
        return qemu.Fault(kind, rf"repeat {i} of {REPEATS}: holding .*\n", delay_s=HOLD_DELAY_S, duration_s=s)
    return qemu.Fault(kind, rf"repeat {i - 1} of {REPEATS}: \d", delay_s=DELAY_S, duration_s=s)


def hogs(n: int = 2) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


# Under KVM here (PVM: every instruction emulated) the boot and 16 repeats
# take tens of seconds more than under TCG.
STRESSED = {"tcg": dict(boot="direct", accel="tcg", timeout=90),
            "kvm": dict(boot="direct", accel="kvm", firmware="qboot", timeout=400)}


@pytest.fixture(scope="module", params=list(STRESSED))
def stressed(request, boot):
    if request.param == "kvm":
        request.getfixturevalue("kvm")  # skips where KVM is unusable
    faults = [fault(*f) for f in FAULTS]
    holds = ",".join(f"{i}:{ms}" for i, ms in HOLDS.items())
    procs = hogs()
    try:
        b = boot(append=f"only=calibrate cal_repeat={REPEATS} cal_hold={holds}", faults=faults, **STRESSED[request.param])
    finally:
        for p in procs:
            p.kill()
            p.wait()
    b.accel = request.param
    return b


def host_truth(b) -> tuple[float, float]:
    """The host's TSC rate measured beside run b, and its bound in ppm."""
    assert b.host_tsc["measured"], b.host_tsc
    return b.host_tsc["hz"], b.host_tsc["uncertainty_ppm"]


def test_every_repeat_ran_and_every_stop_happened(stressed):
    b = stressed
    assert b.status is not None and not b.result.timed_out, b.explain()
    reps = records.of_type(b.records, "calibration_repeat")
    assert [r["i"] for r in reps] == list(range(1, REPEATS + 1)), b.explain()
    assert len(b.result.injections) == len(FAULTS)
    for inj in b.result.injections:
        assert inj.injected and not inj.error and not inj.cut_short, inj.describe()
    # Each SIGSTOP lands while its repeat holds windows open (the image
    # waits for the step, up to 10 s), and every guest clock jumps across it
    # under TCG and KVM alike: the window it falls in throws it away. A stop
    # can also fall where no window is, between two windows or among a
    # window's first reads (a window starts at the narrowest of them, after
    # the stop): the window beside it is then kept, rightly, and says so;
    # that is a few reads in thousands, so one of the three at least is
    # thrown. What must never happen: no step seen, or a window kept across it.
    # (A monitor pause stops every guest clock under TCG, the TSC too: a
    # window across it sees nothing to throw; its effect under KVM is judged
    # by the estimates alone, below.)
    outcomes = []
    for i, kind, s in FAULTS:
        if kind != "sigstop":
            continue
        rep = reps[i - 1]
        assert rep["hold_ms"] == HOLDS[i], rep
        assert rep["hold_outcome"] in ("thrown", "outside the window"), rep
        assert rep["hold_step_ms"] >= HOLDS[i], rep
        outcomes.append(rep["hold_outcome"])
    stops = [inj for inj in b.result.injections if inj.fault.kind == "sigstop"]
    print(f"\n{b.accel}: held stops (repeat, outcome, windows held, step ms, stopped ms): " + ", ".join(
        f"({i}, {reps[i - 1]['hold_outcome']}, {reps[i - 1]['hold_windows']}, {reps[i - 1]['hold_step_ms']}, "
        f"{inj.stopped_s * 1000:.0f})" for i, inj in zip(HOLDS, stops)))
    assert "thrown" in outcomes, outcomes


def test_every_accepted_estimate_is_within_its_stated_uncertainty(stressed):
    truth, truth_ppm = host_truth(stressed)
    reps = records.of_type(stressed.records, "calibration_repeat")
    accepted = [r for r in reps if r["accepted"]]
    # enough must hold together, or the check below tests nothing. Half
    # did on a quiet host; with six other engineers' work beside the two
    # hogs (load 13 on 2 cores) 4 (TCG) and 5 (KVM) of 16 did, the rest
    # saying why (every round's windows interrupted), which the next test
    # checks: a quarter is what this check needs, not what the host allows
    assert len(accepted) >= REPEATS // 4, reps
    bad = []
    for r in accepted:
        off_ppm = (r["estimate_hz"] - truth) / truth * 1e6
        if not 0 < r["uncertainty_ppm"] < 5000 or abs(off_ppm) > r["uncertainty_ppm"] + truth_ppm:
            bad.append((r["i"], r["reference"], round(off_ppm, 1), r["uncertainty_ppm"]))
    worst = max(accepted, key=lambda r: abs(r["estimate_hz"] / truth - 1) * 1e6 / max(r["uncertainty_ppm"], 1e-9))
    print(f"\n{stressed.accel}: {len(accepted)} of {REPEATS} accepted; the worst {(worst['estimate_hz'] / truth - 1) * 1e6:+.1f} "
          f"ppm from the host's TSC, +-{worst['uncertainty_ppm']} stated ({worst['reference']})")
    assert not bad, f"estimates past their stated uncertainty (i, reference, ppm off, +-ppm) against {truth:.0f} Hz: {bad}"


def test_a_rejected_estimate_says_why(stressed):
    for r in records.of_type(stressed.records, "calibration_repeat"):
        if r["accepted"]:
            assert r["rejected_why"] is None and r["estimate_hz"], r
        else:
            assert r["rejected_why"] in ("no round of windows held together", "the second reference disagrees"), r
            assert (r["estimate_hz"] is None) == (r["rejected_why"] == "no round of windows held together"), r


def test_the_first_estimate_states_its_uncertainty_and_holds_it(stressed):
    truth, truth_ppm = host_truth(stressed)
    (cal,) = records.of_type(stressed.records, "calibration")
    checks = [c for c in records.of_type(stressed.records, "check") if c["name"] == "quick TSC estimate agrees across references"]
    if cal["uncertainty_ppm"] is None:
        # no round held together against any reference: the estimate says it is no measurement
        assert cal["source"].startswith(("claimed by", "an assumed")) and not checks, cal
    elif not checks or checks[0]["result"] == "PASS":
        assert abs(cal["estimate_hz"] - truth) / truth * 1e6 <= cal["uncertainty_ppm"] + truth_ppm, (cal, truth)


# -- the later check, on a machine with one reference -------------------------------------------

BIAS_PPM = -80000  # the 8 % low
ONE_REFERENCE = dict(boot="direct", accel="tcg", machine="pc", extra=["-machine", "hpet=off,acpi=off"], timeout=120)


@pytest.fixture(scope="module")
def biased(boot):
    return boot(append=f"duration=2 only=drift cal_bias={BIAS_PPM}", **ONE_REFERENCE)


def test_one_reference_lets_a_wrong_estimate_through_at_calibration(biased):
    (cal,) = records.of_type(biased.records, "calibration")
    assert cal["source"] == "pit" and "second" not in cal and cal["bias_injected_ppm"] == BIAS_PPM, cal
    assert "no second reference to check it against" in biased.output


def test_the_drift_check_catches_the_wrong_estimate_and_says_so(biased):
    b = biased
    truth, truth_ppm = host_truth(b)
    (cc,) = records.of_type(b.records, "calibration_check")
    (prof,) = records.of_type(b.records, "profile")
    assert prof["tsc_measured"] and prof["tsc_reference"] == "pit", prof
    # the measured rate is the truth within its own uncertainty (and the host measurement's)
    assert abs(cc["measured_hz"] - truth) / truth * 1e6 <= 3 * cc["measured_uncertainty_ppm"] + truth_ppm, (cc, truth)
    assert abs(cc["off_ppm"] - BIAS_PPM) <= 3 * cc["measured_uncertainty_ppm"] + cc["estimate_uncertainty_ppm"], cc
    assert cc["agree"] is False and cc["limit_ppm"] <= 10000, cc
    (check,) = [c for c in records.of_type(b.records, "check") if c["name"] == "quick TSC estimate agrees with the measured rate"]
    assert check["result"] == "FAIL" and str(cc["off_ppm"]) in check["detail"], check
    assert "the quick TSC estimate was" in b.output and "times the length asked" in b.output, b.explain()
    # every ns figure uses the measured rate, not the estimate
    assert prof["tsc_hz"] == pytest.approx(cc["measured_hz"]) and "measured against pit" in prof["tsc_hz_source"], prof
    assert b.status == 1, b.explain()


def test_an_unbiased_estimate_passes_the_drift_check(boot):
    b = boot(append="duration=2 only=drift", **ONE_REFERENCE)
    (cc,) = records.of_type(b.records, "calibration_check")
    checks = [c for c in records.of_type(b.records, "check") if c["name"] == "quick TSC estimate agrees with the measured rate"]
    if cc["estimate_uncertainty_ppm"] is None:
        # a loaded host starved every round against the PIT: the estimate is no measurement, and the
        # drift says how far off it was without failing a check the calibration never claimed
        assert not checks and cc["limit_ppm"] == 10000, cc
        assert cc["agree"] or "the quick TSC estimate was" in b.output, b.explain()
        return
    assert cc["agree"] is True and abs(cc["off_ppm"]) <= cc["limit_ppm"], cc
    assert checks and checks[0]["result"] == "PASS", checks
    assert b.status == 0, b.explain()
