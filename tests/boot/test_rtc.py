"""The RTC (experiments/exp_rtc.c): the date read safely, its second boundaries
timed by the TSC over the drift window, and the TSC's rate against it.

Known answer: with `-rtc clock=vm` QEMU's RTC counts QEMU_CLOCK_VIRTUAL
(hw/rtc/mc146818rtc.c), the clock its HPET counts too, so the TSC's rate
by the RTC equals its rate by the HPET, within the two stated
uncertainties. `base=` sets the date the RTC starts from; `clock=host`
follows the host's wall clock (QEMU's default, base UTC). microvm with
rtc=off has nothing on ports 0x70/0x71: absent, with the reason, and the
run ends normally.
"""

from __future__ import annotations

import datetime as dt

import pytest

import boots
from clockbench.records import records

pytestmark = pytest.mark.timed  # the RTC's seconds timed by the TSC, known answers


def rtc(b):
    return records.one(b.records, "rtc")


def check(b):
    return records.one(b.records, "check", name="TSC agrees with the RTC")


def utc_of(r):
    return dt.datetime.fromisoformat(f"{r['date']}T{r['time']}").replace(tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def clock_vm(boot):
    b = boot(**boots.TCG_RTC_VM_10S)
    assert b.status == 0, b.explain()
    return b


def test_clock_vm_tsc_by_the_rtc_is_its_rate_by_the_hpet(clock_vm):
    r = rtc(clock_vm)
    assert r["present"] and r["window"] == "drift", r
    assert r["edges"] >= 5 and r["edges_used"] >= 4 and r["discontinuities"] == 0, r
    assert r["reference"] == "hpet" and not r.get("stuck"), r
    freq = records.one(clock_vm.records, "frequency", counter="tsc", reference="hpet")
    u = (r["fit_uncertainty_ppm"] ** 2 + freq["uncertainty_ppm"] ** 2) ** 0.5
    assert u > 0 and r["uncertainty_ppm"] == pytest.approx(u, rel=1e-3, abs=2e-6), (r, freq)
    assert abs(r["tsc_hz"] - freq["hz"]) <= 3 * u * 1e-6 * freq["hz"], (r, freq)
    assert abs(r["ppm_tsc_vs_rtc"]) <= 3 * r["uncertainty_ppm"], r
    # the HPET and PM timer through the TSC: both counted from the same clock
    assert abs(r["hpet_ppm_vs_rtc"]) <= 3 * r["hpet_uncertainty_ppm"], r
    assert abs(r["acpi_pm_ppm_vs_rtc"]) <= 3 * r["acpi_pm_uncertainty_ppm"], r
    assert check(clock_vm)["result"] == "PASS"


def test_clock_vm_records_like_every_counter(clock_vm):
    c = records.one(clock_vm.records, "counter", name="rtc")
    assert c["present"] and c["access"] == "CMOS ports 0x70/0x71" and c["nominal_hz"] == 1
    assert "nominal" in c["nominal_source"]
    lat = records.one(clock_vm.records, "latency", counter="rtc")
    assert lat["n"] > 100 and 0 < lat["p50_ns"] <= lat["max_ns"], lat
    res = records.one(clock_vm.records, "resolution", counter="rtc")
    assert res["nominal_tick_ns"] == 1_000_000_000 and res["min_step_ticks"] == 1, res
    assert res["min_step_ns"] == pytest.approx(1e9, rel=1e-3), res  # one RTC second by the TSC
    mono = records.one(clock_vm.records, "monotonicity", counter="rtc")
    assert mono["backward"] == 0 and not mono["stuck"], mono
    assert "Run measured from" in clock_vm.output


def test_base_date(boot):
    b = boot(accel="tcg", extra=["-rtc", "base=2020-02-29T12:34:56,clock=vm"], append="duration=3 only=drift,rtc",
             timeout=300)
    assert b.status == 0, b.explain()
    r = rtc(b)
    assert r["date"] == "2020-02-29" and r["bcd"] and r["hour_24"], r
    # read when the drift window opened: seconds after the VM started
    assert "12:34:56" <= r["time"] <= "12:35:56", r
    assert r["edges"] >= 1, r


def test_clock_host_gives_the_host_date(boot):
    before = dt.datetime.now(dt.timezone.utc)
    b = boot(accel="tcg", extra=["-rtc", "clock=host"], append="duration=5 only=drift,rtc", timeout=300)
    after = dt.datetime.now(dt.timezone.utc)
    assert b.status == 0, b.explain()
    r = rtc(b)
    assert before - dt.timedelta(seconds=2) <= utc_of(r) <= after + dt.timedelta(seconds=2), (before, r, after)
    assert r["edges"] >= 3 and r["edges_used"] >= 2, r
    # the host's wall clock and QEMU's virtual clock run alike (both slewed alike by NTP)
    assert abs(r["ppm_tsc_vs_rtc"]) <= 100 + 3 * r["uncertainty_ppm"], r
    assert check(b)["result"] == "PASS"


def test_no_rtc_is_absent_and_nothing_hangs(boot):
    b = boot(accel="tcg", machine="microvm,rtc=off", append="duration=2 only=drift,rtc", timeout=120)
    assert b.status == 0, b.explain()
    r = rtc(b)
    assert not r["present"] and "0xFF" in r["reason"], r
    c = records.one(b.records, "counter", name="rtc")
    assert not c["present"] and c["reason"] == r["reason"]
    assert check(b)["result"] == "SKIP"
    assert not [x for x in records.of_type(b.records, "latency") if x["counter"] == "rtc"]


def test_the_widest_bracket_is_said_in_a_unit_that_shows_it(clock_vm):
    """Fitted edges: the record's widest bracket is a figure and the human
    line gives it in ns under 1 us (never "0.0 us")."""
    r = rtc(clock_vm)
    assert r["widest_edge_ns"] > 0, r
    want = f"widest bracket {r['widest_edge_ns']:.1f} ns" if r["widest_edge_ns"] < 1000 else "widest bracket "
    said = " ".join(clock_vm.output.split())  # the console wraps long lines
    assert want in said and "widest bracket 0.0" not in said


def test_no_edge_fitted_is_no_figure(boot):
    """A window of 1 s, opened just after an edge, mostly holds one edge:
    nothing is fitted, the record has no widest bracket (null, not 0.0) and
    the line says so. (QEMU's first update after boot can end late, and the
    window then holds two: the figure is then a real one, never 0.0.)"""
    b = boot(accel="tcg", extra=["-rtc", "clock=vm"], append="duration=1 only=drift,rtc", timeout=120)
    assert b.status in (0, 1), b.explain()
    r = rtc(b)
    said = " ".join(b.output.split())
    assert r["present"], r
    if r["edges_used"] == 0:
        assert r["widest_edge_ns"] is None, r
        assert "no edges fitted" in said and "widest bracket" not in said
    else:
        assert r["widest_edge_ns"] > 0 and "widest bracket 0.0" not in said, r
