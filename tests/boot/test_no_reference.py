"""Calibration without a counter reference (experiments/exp_calibrate.c):
a machine with no HPET, no PM timer and no PIT times the TSC against the
RTC's second edges, and every ns figure says so. Known answer: under TCG
the TSC is the host's and, with -rtc clock=vm, the RTC and the HPET both
follow QEMU's virtual clock, so the rate by the RTC on a machine with
nothing else must agree, within the uncertainties the two runs state, with
the rate the drift experiment measures against the HPET on a q35 machine."""

from __future__ import annotations

import math

import pytest

from clockbench.records import records

pytestmark = pytest.mark.timed  # rates against the RTC's edges: a loaded host makes the poll miss them

RTC_FOLLOWS_THE_VIRTUAL_CLOCK = ["-rtc", "clock=vm"]
FEW = "skip=timers,hpet_comparator,cpus,stolen,rtc"  # calibration, reads and the drift window: what the figures need


def test_the_rtc_calibrates_the_tsc_when_no_counter_answers(boot):
    bare = boot(boot="direct", accel="tcg", machine="pc", append=FEW, timeout=180,
                extra=["-machine", "pc,acpi=off,pit=off", *RTC_FOLLOWS_THE_VIRTUAL_CLOCK])
    assert bare.status == 0, bare.explain()
    cal = records.one(bare.records, "calibration")
    assert cal["rtc_ok"] and cal["source"].startswith("the RTC's second edges"), cal
    assert cal["rtc_seconds"] >= 1 and 0 < cal["rtc_uncertainty_ppm"] < 50, cal
    prof = records.one(bare.records, "profile")
    assert not prof["tsc_measured"] and prof["tsc_hz_source"].startswith("the quick estimate against the RTC's second edges")
    assert any("TSC " in l and "the RTC's second" in l for l in bare.lines("== Read cost")), "the ns table says what it rests on"

    ref = boot(boot="direct", accel="tcg", machine="q35", append=FEW, timeout=180, extra=RTC_FOLLOWS_THE_VIRTUAL_CLOCK)
    assert ref.status == 0, ref.explain()
    assert records.one(ref.records, "profile")["tsc_measured"]
    (by_hpet,) = [f for f in records.of_type(ref.records, "frequency") if f["counter"] == "tsc" and f["reference"] == "hpet"]
    u_ref = by_hpet["uncertainty_ppm"]
    diff_ppm = (cal["estimate_hz"] / by_hpet["hz"] - 1) * 1e6
    # the estimate is whole Hz: half a Hz of rounding at GHz rates is 0.0005 ppm
    bound = 3 * math.hypot(cal["rtc_uncertainty_ppm"], u_ref) + 0.001
    assert abs(diff_ppm) <= bound, f"RTC {cal['estimate_hz']} Hz vs HPET {by_hpet['hz']} Hz: {diff_ppm:+.3f} ppm, bound {bound:.3f}"
