"""A 1 Hz clock is not shown with nanosecond resolution, and one value has
one face (issue 39, point 2). The RTC's reads repeat for a whole second: a
window that never sees its second change has no step, so the verdict gives
its nominal tick and says no step was seen, never its read's cost standing
in for one; the resolution table says "not seen"; the Monotonicity row has
no bare "?" where no step went back; and 999999936.6 ns is "1.00 s"
everywhere, never "1000 ms" (the unit is chosen on the figure as printed)."""

from __future__ import annotations

import json

from clockbench.records import figures, results
from clockbench.report import os_side, report


def log_of(*recs) -> str:
    return "\n".join("@cb " + json.dumps(r) for r in recs)


def rtc_run(step_ns=None) -> dict:
    return results.from_log(log_of(
        {"type": "schema", "version": 1, "tool": "clockbench", "build": "b"},
        {"type": "machine", "vendor": "GenuineIntel", "brand": "B", "family": 6, "model": 1, "stepping": 1},
        {"type": "profile", "name": "quick", "tsc_hz": 2e9, "tsc_hz_source": "measured against hpet", "tsc_measured": True},
        {"type": "counter", "name": "rtc", "present": True, "nominal_hz": 1},
        {"type": "latency", "counter": "rtc", "n": 2000, "min_ns": 200.0, "p50_ns": 220.3, "p99_ns": 300.0},
        {"type": "resolution", "counter": "rtc", "min_step_ns": step_ns, "nominal_tick_ns": 1000000000,
         "min_step_ticks": 1 if step_ns else None, "step_gcd_ticks": 1, "reads": 2000, "deltas": 1999,
         "zero_deltas": 1999 if step_ns is None else 1998, "distinct": 0 if step_ns is None else 1, "backward": 0},
        {"type": "monotonicity", "counter": "rtc", "reads": 2001, "backward": 0, "largest_backward_ticks": None,
         "discontinuities": 0, "stuck": False},
        {"type": "summary", "pass": 1, "fail": 0, "skip": 0, "status": "passed"}), "rtc.log")


def verdict_row(res, name="rtc"):
    return next(r for r in report.verdict(res)["rows"] if r["counter"] == name)


def test_an_rtc_whose_second_never_changed_has_no_nanosecond_resolution():
    row = verdict_row(rtc_run())
    assert row["read"] == "220.3 ns"
    assert row["resolution"] == "1.00 s nominal (no step seen in 2\u2009000 reads)"
    reso = next(r for r in report.resolution_rows(rtc_run()) if r["counter"] == "rtc")
    assert reso["step"] == "not seen" and reso["step_ticks"] == "-"


def test_an_rtc_that_stepped_shows_its_step():
    assert verdict_row(rtc_run(999999936.614))["resolution"] == "1.00 s"


def test_no_bare_question_mark_in_the_monotonicity_row():
    row = next(r for r in report.monotonicity_rows(rtc_run()) if r["counter"] == "rtc")
    assert "?" not in row.values()
    assert row["largest"] == "-"


def test_one_second_has_one_face():
    assert figures.ns(999999936.614) == "1.00 s" == figures.ns(1e9)
    assert figures.ns(999.9996) == "1.00 \u00b5s" and figures.ns(999_999.6) == "1.00 ms"
    assert figures.ns(999.4) == "999 ns" and figures.ns(0.9999) == "1.00 ns"
    assert figures.sig(99.96) == "100" and figures.sig(0.09996) == "0.100"
    assert os_side.dur(999999936.6) == "1 s" and os_side.dur(999999.99) == "1 ms" and os_side.dur(32000001) == "32 ms"
