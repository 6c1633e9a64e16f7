"""Acceptance tests: figures you can trust when time misbehaves.

The image is stopped from outside in the middle of its drift window, and must
report what happened as a finding (a `discontinuity` record) while every
frequency it states still agrees with an undisturbed run's within the
uncertainty it states itself. The faults (qemu.Fault) and what each does to
the guest's clocks (PLATFORM.md):

- SIGSTOP of QEMU: QEMU stops, the host's clocks run on, so every guest clock
  has moved ahead alike on resumption: a "gap". It does the same under KVM
  (the guest's TSC is the host's, QEMU's HPET and PM timer follow the host's
  clock), so it runs under TCG only.
- a monitor pause under KVM: the guest's TSC runs on while QEMU's HPET and
  PM timer stand still: "reference stood still".
- a monitor pause under TCG: every guest clock stops with the VM, but not to
  the nanosecond: the TSC comes back 0.05 to 0.8 us off the HPET, PM timer and
  PIT (measured with QEMU 7.2, whatever the pause's length), 50 to 200 times
  the residuals of an undisturbed TCG fit. No rate changed: that step must
  not bend the frequencies.

The records they rely on (docs/output.md):
  phase         {"experiment": "drift", "event": "start", "window_ms"}, before the window
  frequency     {"counter", "reference", "hz", "ppm_vs_nominal", "stderr_ppm", "uncertainty_ppm"
                 (total standard uncertainty, relative to the reference), "absolute_uncertainty_ppm",
                 "window_s", "samples", "segments"}
  discontinuity {"counter": "tsc", "reference", "at_s" (into the window), "tsc_ns", "counter_ns"
                 (null when the reference cannot tell), "kind"}, one per event
  check, summary

Every run is a direct boot; the undisturbed baselines and each disturbed run
are booted once and shared by the tests that read them. The KVM runs are
the shared KVM runs of tests/boot/boots.py: KVM_Q35 (every experiment, a 4 s
window) undisturbed, and KVM_PAUSED, paused once while the timers are
measured and once in the drift window, the one these tests read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import pytest

import boots
from clockbench.machines import qemu
from clockbench.records import records

pytestmark = pytest.mark.timed  # each run is a measurement, stopped from outside

PHASE_START = boots.PHASE_START
WINDOW_S = 4  # drift window of the baselines and of runs whose stall leaves time enough after it
DELAY_S = 1.0  # from the phase record to the fault: about a second into the window
AFTER_S = 2  # a SIGSTOP's stall counts in the window's time: this much window is left after it
# Placed by wall time from the line that opens the window, and why that
# holds (issue 44, item 6): the window is sized in the guest's time, and
# under TCG the guest's TSC is the host's, so the stall lies inside the
# window whenever the host reads the phase line less than AFTER_S late (the
# host's delay only moves the stall later, never earlier); a pause stops the
# window's clocks with it, so it cannot run past one. located() asks more:
# the stall within a second of when the host sent the stop, i.e. the line
# read less than a second late, where a loaded host's is milliseconds (its
# gaps of 10-100 ms are why the test asks for a stall of the stop's length
# there and not anywhere in the window).

FREQUENCY_KEYS = {"type", "counter", "reference", "hz", "ppm_vs_nominal", "stderr_ppm", "uncertainty_ppm",
                  "absolute_uncertainty_ppm", "window_s", "samples", "segments"}
DISCONTINUITY_KEYS = {"type", "counter", "reference", "at_s", "tsc_ns", "counter_ns", "kind", "bracket_half_ns"}
KINDS = {"gap", "reference stood still", "reference jumped", "reference went back", "tsc went back", "too long to unwrap",
         "residual step"}
EVERY_CLOCK_RAN = {"gap", "too long to unwrap"}  # what a stall of the whole machine may be called
PAIRS = [("tsc", "hpet"), ("tsc", "acpi_pm"), ("tsc", "pit"), ("acpi_pm", "hpet"), ("pit", "hpet")]

# Known answers (PLATFORM.md): QEMU derives the HPET and the PM timer from one
# clock, so their ratio is exactly nominal; its PIT runs at exactly 1,193,182 Hz
# under TCG and, in KVM's kernel, at 1,193,181 Hz, against that same clock.
PIT_NOMINAL_HZ = Fraction(14_318_180, 12)
PIT_TRUE_HZ = {"tcg": 1_193_182, "kvm": 1_193_181}
# Records carry ppm to 6 decimals and hz to 3: half a unit of each, per record.
PPM_ROUNDING = 0.5e-6
HZ_ROUNDING = 0.0005


@dataclass(frozen=True)
class Case:
    accel: str
    kind: str | None = None  # None: undisturbed
    stall_s: float = 0.0

    @property
    def window_s(self) -> int:
        if self.kind == "sigstop":
            return max(WINDOW_S, math.ceil(DELAY_S + self.stall_s + AFTER_S))
        return WINDOW_S

    @property
    def id(self) -> str:
        return f"{self.accel}-{self.kind}-{self.stall_s:g}s" if self.kind else f"{self.accel}-undisturbed"

    def boot_args(self) -> dict:
        if self.accel == "kvm":
            assert self.kind in (None, "pause") and self.window_s == WINDOW_S, self
            return dict(boots.KVM_PAUSED if self.kind else boots.KVM_Q35)
        # the timers are not what these runs test
        kw = {"boot": "direct", "accel": self.accel, "append": f"duration={self.window_s} skip=timers",
              "timeout": 60 + 2 * self.window_s}
        if self.kind:
            kw["faults"] = [qemu.Fault(self.kind, PHASE_START, delay_s=DELAY_S, duration_s=self.stall_s)]
        return kw


BASELINES = [Case("tcg"), Case("kvm")]
SIGSTOPS = [Case("tcg", "sigstop", s) for s in (0.1, 1.0, 5.0)]
PAUSES = [Case("tcg", "pause", 1.0), Case("kvm", "pause", 1.0)]


def ids(cases):
    return [c.id for c in cases]


@pytest.fixture(scope="module")
def booted(boot):
    """Each case's run, booted once however many tests read it (the boot fixture shares it)."""
    return lambda case: boot(**case.boot_args())


@pytest.fixture
def run(request, booted):
    """The run of the case the test is parametrised with, and its accelerator's baseline."""
    case = request.param
    if case.accel == "kvm":
        request.getfixturevalue("kvm")  # skips when KVM is unusable
    return case, booted(case), booted(Case(case.accel))


def fails(b) -> list[dict]:
    return [c for c in records.of_type(b.records, "check") if c["result"] == "FAIL"]


def assert_passed(b):
    assert b.status == 0, b.explain()
    assert not fails(b), (fails(b), b.explain())
    s = records.one(b.records, "summary")
    assert s["fail"] == 0 and s["status"] == "passed", s


def window_start(b) -> dict:
    return records.one(b.records, "phase", experiment="drift", event="start")


def injection(case: Case, b) -> qemu.Injection:
    """The run's fault in the drift window, which must have gone as asked."""
    inj = boots.injection(b, PHASE_START)
    assert inj.trigger_s is not None, f"no drift phase record (/{PHASE_START}/), so nothing was injected\n{b.explain()}"
    assert inj.injected and inj.error is None and inj.cut_short is None, f"{inj.describe()}\n{b.explain()}"
    assert abs(inj.stopped_s - case.stall_s) < 0.1 + 0.1 * case.stall_s, inj.describe()
    return inj


def frequency(b, counter: str, reference: str) -> dict:
    f = records.one(b.records, "frequency", counter=counter, reference=reference)
    assert FREQUENCY_KEYS <= set(f), f
    return f


def disagreement(run_b, base_b, counter: str, reference: str) -> str | None:
    """Why the two runs' figures for the pair disagree beyond 3 x their combined
    standard uncertainty, or None when they agree."""
    a, b = frequency(run_b, counter, reference), frequency(base_b, counter, reference)
    if a["ppm_vs_nominal"] is not None and b["ppm_vs_nominal"] is not None:
        diff, rounding = a["ppm_vs_nominal"] - b["ppm_vs_nominal"], 2 * PPM_ROUNDING
    else:
        diff = (a["hz"] - b["hz"]) / b["hz"] * 1e6
        rounding = HZ_ROUNDING * (1 / a["hz"] + 1 / b["hz"]) * 1e6
    limit = 3 * math.hypot(a["uncertainty_ppm"], b["uncertainty_ppm"]) + rounding + 6 * PPM_ROUNDING
    if abs(diff) <= limit:
        return None
    return (f"{counter} vs {reference}: {diff:+.6f} ppm from the baseline, limit {limit:.6f} "
            f"(u {a['uncertainty_ppm']} here, {b['uncertainty_ppm']} undisturbed)\n  run  {a}\n  base {b}")


def assert_agrees(run_b, base_b, pairs, inj):
    problems = [p for p in (disagreement(run_b, base_b, c, r) for c, r in pairs) if p]
    assert not problems, "\n".join(problems + [f"fault: {inj.describe()}"])


def discontinuities(b) -> list[dict]:
    found = records.of_type(b.records, "discontinuity")
    for d in found:
        assert DISCONTINUITY_KEYS <= set(d) and d["counter"] == "tsc" and d["kind"] in KINDS, d
        assert d["reference"] in {"hpet", "acpi_pm", "pit"}, d
    return found


def near(value: float, target: float, tolerance: float) -> bool:
    return abs(value - target) <= tolerance * target


def located(d: dict, b, inj: qemu.Injection) -> bool:
    """In the window, and when the fault was, give or take a second: the window
    began about when its phase record reached the host (the fault's trigger),
    and the TSC ran through the fault, so the event spans from stop_sent_s to
    stop_sent_s + stopped_s of window time; at_s may name either end."""
    window = window_start(b)["window_ms"] / 1000
    return 0 < d["at_s"] < window and inj.stop_sent_s - 1.0 < d["at_s"] < inj.stop_sent_s + inj.stopped_s + 1.0


def assert_located(d: dict, b, inj: qemu.Injection):
    assert located(d, b, inj), (d, window_start(b)["window_ms"], inj.describe())


# a. undisturbed baselines


@pytest.mark.parametrize("run", BASELINES, ids=ids(BASELINES), indirect=True)
def test_baseline_passes_and_announces_its_window(run):
    case, b, _ = run
    assert_passed(b)
    start = window_start(b)
    assert start["window_ms"] == case.window_s * 1000, start
    first_result = min((i for i, r in enumerate(b.records) if r["type"] in ("frequency", "discontinuity")),
                       default=len(b.records))
    assert b.records.index(start) < first_result, "the phase record must come before the window's results"


@pytest.mark.parametrize("run", BASELINES, ids=ids(BASELINES), indirect=True)
def test_baseline_frequency_records(run):
    case, b, _ = run
    for counter, reference in PAIRS:
        f = frequency(b, counter, reference)
        assert f["samples"] > 100 and f["segments"] >= 1, f
        # the window runs longer by the time the loop was away (made up for): what was sampled is the length asked
        assert abs(f["window_s"] - f["away_s"] - case.window_s) < 0.1 * case.window_s, f
        assert 0 < f["stderr_ppm"] <= f["uncertainty_ppm"], f  # the total covers the statistical part
        assert f["absolute_uncertainty_ppm"] is None or f["absolute_uncertainty_ppm"] >= f["uncertainty_ppm"], f


@pytest.mark.parametrize("run", BASELINES, ids=ids(BASELINES), indirect=True)
def test_baseline_known_answers_lie_within_the_stated_uncertainty(run):
    case, b, _ = run
    pm = frequency(b, "acpi_pm", "hpet")
    assert abs(pm["ppm_vs_nominal"]) <= 3 * pm["uncertainty_ppm"] + 2 * PPM_ROUNDING, pm
    pit = frequency(b, "pit", "hpet")
    true_ppm = float((PIT_TRUE_HZ[case.accel] - PIT_NOMINAL_HZ) / PIT_NOMINAL_HZ * 10**6)
    assert abs(pit["ppm_vs_nominal"] - true_ppm) <= 3 * pit["uncertainty_ppm"] + 2 * PPM_ROUNDING, (pit, true_ppm)


@pytest.mark.parametrize("run", BASELINES, ids=ids(BASELINES), indirect=True)
def test_baseline_has_no_false_discontinuity(run):
    # an undisturbed run can still lose the CPU to the host for a moment, but
    # every clock runs on meanwhile. The one other thing it may show is a
    # residual step no larger than the reads' own timing can make, and then
    # the record must say so: under TCG the HPET's reads take QEMU's lock
    # before or after its clock is read, and the level of a 4 s fit moved by
    # 30-40 ns (3-4 HPET ticks, in 270 ns brackets) in 1 of 8 runs here
    _, b, _ = run
    wrong = [d for d in discontinuities(b) if d["kind"] not in EVERY_CLOCK_RAN
             and not (d["kind"] == "residual step" and abs(d["counter_ns"]) <= d["bracket_half_ns"])]
    assert not wrong, wrong
    for d in discontinuities(b):
        if d["kind"] == "residual step":
            assert "the reads' timing may have moved, not a clock" in b.output, d
    # nor does the whole run's account name a stop: the RTC, the HPET and
    # (under KVM) kvmclock kept step with the TSC within their uncertainties
    rc = records.one(b.records, "run_clocks")
    assert rc["stopped"] is False, rc
    assert rc["hpet_step_ns"] is not None and (rc["kvmclock_step_ns"] is not None) == (b.result.accel == "kvm"), rc


# b, c. stalls and pauses mid-window


@pytest.mark.parametrize("run", SIGSTOPS + PAUSES, ids=ids(SIGSTOPS + PAUSES), indirect=True)
def test_disturbed_run_passes(run):
    case, b, _ = run
    injection(case, b)
    assert_passed(b)
    assert window_start(b)["window_ms"] == case.window_s * 1000


AGREEING = SIGSTOPS + [Case("tcg", "pause", 1.0)]


@pytest.mark.parametrize("run", AGREEING, ids=ids(AGREEING), indirect=True)
def test_frequencies_agree_with_the_undisturbed_run(run):
    # every clock ran on through a SIGSTOP, and every clock stopped through a
    # TCG pause: no ratio changed, so no figure may move beyond its uncertainty
    case, b, base = run
    inj = injection(case, b)
    assert_passed(base)
    assert_agrees(b, base, PAIRS, inj)


@pytest.mark.parametrize("run", SIGSTOPS, ids=ids(SIGSTOPS), indirect=True)
def test_sigstop_is_reported_as_a_gap(run):
    case, b, _ = run
    inj = injection(case, b)
    # the host's sleep overshoots most, relatively, in the shortest stall
    tolerance = 0.5 if case.stall_s < 1 else 0.2
    found = discontinuities(b)
    # a busy host takes the CPU from QEMU now and then, for 10-100 ms: gaps of
    # their own anywhere in the window, one as long as a short stall at times.
    # The stall's events are those of its length when it was.
    stall = [d for d in found if near(d["tsc_ns"] / 1e9, inj.stopped_s, tolerance) and located(d, b, inj)]
    assert stall, (f"no discontinuity with tsc_ns within {tolerance:.0%} of the {inj.stopped_s:.3f} s stall, when it was",
                   found, inj.describe())
    for d in stall:
        # the whole machine stopped and every clock ran on: nothing stood still or jumped
        assert d["kind"] in EVERY_CLOCK_RAN, d
    # the 64-bit HPET can always tell how far it ran, and it ran as far as the TSC
    hpet = [d for d in stall if d["reference"] == "hpet"]
    assert hpet and all(d["kind"] == "gap" and d["counter_ns"] is not None for d in hpet), stall
    assert all(near(d["counter_ns"], d["tsc_ns"], tolerance) for d in hpet), hpet


def test_a_stall_after_many_short_gaps_is_still_reported(boot):
    # A busy host, made on purpose: QEMU stopped 50 times for 15 ms, 50 ms
    # apart (40 ms let a busy host merge them), then for 1.5 s. The report
    # keeps 32 events a reference; the first gaps must not crowd the stall
    # out (they did: the 5 s case failed so). The window's time counts the
    # stops: 7 s end 2 s after the stall.
    short = [qemu.Fault("sigstop", PHASE_START, delay_s=0.05 * i, duration_s=0.015) for i in range(50)]
    stall = qemu.Fault("sigstop", PHASE_START, delay_s=2.6, duration_s=1.5)
    b = boot(boot="direct", accel="tcg", append="duration=7 skip=timers", faults=[*short, stall], timeout=120)
    assert_passed(b)
    inj = b.result.injections[-1]
    assert inj.fault is stall and inj.injected and inj.error is None, inj.describe()
    hpet = frequency(b, "tsc", "hpet")
    assert hpet["discontinuities"] + hpet["gaps"] > 32, ("fewer gaps than the report keeps: this tests nothing", hpet)
    found = [d for d in discontinuities(b) if d["reference"] == "hpet"]
    gap = [d for d in found if d["kind"] == "gap" and near(d["tsc_ns"] / 1e9, inj.stopped_s, 0.2) and located(d, b, inj)]
    assert gap, (f"no hpet gap of the {inj.stopped_s:.3f} s stall among the {len(found)} kept", found, inj.describe())
    assert near(gap[0]["counter_ns"], gap[0]["tsc_ns"], 0.2), gap


KVM_PAUSE = [Case("kvm", "pause", 1.0)]


@pytest.mark.parametrize("run", KVM_PAUSE, ids=ids(KVM_PAUSE), indirect=True)
def test_kvm_pause_agrees_on_the_tsc_frequency(run):
    case, b, base = run
    inj = injection(case, b)
    assert_passed(base)
    assert_agrees(b, base, [("tsc", "hpet")], inj)
    claim = [c for c in records.of_type(b.records, "check") if "claim" in c["name"].lower() and c["result"] == "FAIL"]
    assert not claim, claim  # the TSC's rate did not change; only the HPET stood still


@pytest.mark.parametrize("run", KVM_PAUSE, ids=ids(KVM_PAUSE), indirect=True)
def test_kvm_pause_is_reported_as_the_reference_standing_still(run):
    case, b, _ = run
    inj = injection(case, b)
    found = discontinuities(b)
    still = [d for d in found if d["kind"] == "reference stood still" and near(d["tsc_ns"] / 1e9, inj.stopped_s, 0.3)]
    assert still, (f"no 'reference stood still' with tsc_ns within 30 % of the {inj.stopped_s:.3f} s pause",
                   found, inj.describe())
    for d in still:
        assert_located(d, b, inj)
        assert d["counter_ns"] is not None and d["counter_ns"] < 0.5 * d["tsc_ns"], d


@pytest.mark.parametrize("run", SIGSTOPS + PAUSES, ids=ids(SIGSTOPS + PAUSES), indirect=True)
def test_disturbed_known_answers_lie_within_the_stated_uncertainty(run):
    # whatever the fault did, the ratios QEMU fixes must still come out within
    # 3 of the run's own stated uncertainty: a step on the TSC's side that only
    # one reference told must not bend the others
    case, b, _ = run
    injection(case, b)
    pm = frequency(b, "acpi_pm", "hpet")
    assert abs(pm["ppm_vs_nominal"]) <= 3 * pm["uncertainty_ppm"] + 2 * PPM_ROUNDING, pm
    pit = frequency(b, "pit", "hpet")
    true_ppm = float((PIT_TRUE_HZ[case.accel] - PIT_NOMINAL_HZ) / PIT_NOMINAL_HZ * 10**6)
    assert abs(pit["ppm_vs_nominal"] - true_ppm) <= 3 * pit["uncertainty_ppm"] + 2 * PPM_ROUNDING, (pit, true_ppm)
