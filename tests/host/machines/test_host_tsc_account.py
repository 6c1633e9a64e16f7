"""The host's own TSC rate beside a run (tools/clockbench/machines/host_tsc.py,
tools/native/host_tsc.c) and the known answer it gives the guest's: the
comparison must fail a guest whose TSC is off by more than its stated
uncertainty and the host's, as issue 37's Firecracker runs were (+0.56 ppm,
+-0.2 stated)."""

from __future__ import annotations

import time

import pytest

from clockbench.machines import host_tsc


def test_a_guest_056_ppm_off_with_02_stated_fails():
    host_hz = 2_596_132_173.4
    guest_hz = host_hz * (1 + 0.56e-6)
    c = host_tsc.compare(guest_hz, 0.2, host_hz, 0.005)
    assert c["agree"] is False, c
    assert c["off_ppm"] == pytest.approx(0.56, abs=1e-6) and c["limit_ppm"] == pytest.approx(0.405)
    assert host_tsc.compare(host_hz * (1 - 0.56e-6), 0.2, host_hz, 0.005)["agree"] is False
    # the limit: two of the guest's standard uncertainties and the host's bound, no more
    assert host_tsc.compare(host_hz * (1 + 0.40e-6), 0.2, host_hz, 0.005)["agree"] is True
    assert host_tsc.compare(host_hz * (1 + 0.41e-6), 0.2, host_hz, 0.005)["agree"] is False
    # the suite's usual 3 u would have let it through: that is why the limit is not 3 u
    assert 0.56 <= 3 * 0.2 + 0.005
    # the host's own uncertainty counts
    assert host_tsc.compare(guest_hz, 0.2, host_hz, 0.16)["agree"] is True


def test_no_rate_is_refused():
    for bad in [(0, 0.2, 1e9, 0.01), (1e9, None, 1e9, 0.01), (1e9, -1, 1e9, 0.01), (1e9, 0.2, 0, 0.01)]:
        with pytest.raises(ValueError):
            host_tsc.compare(*bad)


def test_the_rate_and_its_bound_from_two_marks():
    a = host_tsc.Mark(tsc=1_000_000, half_ticks=50, ns=10_000, step_ticks=25, res_ns=1)
    b = host_tsc.Mark(tsc=1_000_000 + 2_600_000_000, half_ticks=70, ns=10_000 + 1_000_000_000, step_ticks=30, res_ns=1)
    r = host_tsc.rate(a, b)
    assert r["hz"] == pytest.approx(2.6e9)
    # (50 + 70) ticks of 2.6e9, and 2 ns of 1 s
    assert r["uncertainty_ppm"] == pytest.approx(120 / 2.6e9 * 1e6 + 2e-3)
    assert r["span_s"] == pytest.approx(1.0) and r["step_ticks"] == 30
    with pytest.raises(ValueError):
        host_tsc.rate(b, a)


def guest_records(hz_by_ref: dict[str, tuple[float, float]], used: str) -> list[dict]:
    return [{"type": "frequency", "counter": "tsc", "reference": ref, "hz": hz, "uncertainty_ppm": u, "used": ref == used}
            for ref, (hz, u) in hz_by_ref.items()] + [
        {"type": "frequency", "counter": "acpi_pm", "reference": "hpet", "hz": 3579545.0, "uncertainty_ppm": 0.05}]


def test_every_reference_is_held_against_the_host():
    """Figures measured on this machine: a TCG run before the image took
    QEMU's PIT rate (issue 37), whose HPET agrees to 0.004 u and whose PIT
    is 0.283 ppm low (1.9 u: inside 2 u, so this check alone cannot see
    that defect), and Firecracker's PIT as issue 37 saw it, which it must
    catch."""
    host = {"measured": True, "hz": 2596132173.425, "uncertainty_ppm": 0.0054}
    recs = guest_records({"hpet": (2596132173.337, 0.008403), "acpi_pm": (2596132174.063, 0.047919),
                          "pit": (2596131437.67, 0.148653)}, used="hpet")
    got = {g["reference"]: g for g in host_tsc.known_answers(recs, host)}
    assert set(got) == {"hpet", "acpi_pm", "pit"}
    assert got["hpet"]["agree"] and got["hpet"]["used"] and got["acpi_pm"]["agree"]
    assert got["pit"]["off_ppm"] == pytest.approx(-0.2834, abs=1e-3) and got["pit"]["agree"]
    assert host_tsc.known_answers(recs, {"measured": False, "reason": "x"}) == []
    # Firecracker under issue 37: +0.58 ppm against KVM's PIT, +-0.2 stated with a long enough window
    fc = host_tsc.known_answers(guest_records({"pit": (2596132173.425 * (1 + 0.58e-6), 0.2)}, used="pit"), host)
    assert [g["agree"] for g in fc] == [False]
    line = host_tsc.describe_against({**host, "span_s": 11.5, "clocks": {}, "guest": fc})
    assert "OUTSIDE" in line and "+0.580 ppm" in line, line


def test_the_host_library_marks_the_tsc_against_both_clocks(lib):
    """The real measurement, over 0.3 s: a rate in the GHz, its bound below
    1 ppm, and the two clocks within their bounds of each other (they differ
    only by NTP's correction)."""
    a = host_tsc.mark()
    time.sleep(0.3)
    b = host_tsc.mark()
    rates = {k: host_tsc.rate(a[k], b[k]) for k in host_tsc.CLOCKS}
    for k, r in rates.items():
        assert 1e8 < r["hz"] < 1e10, (k, r)
        assert 0 < r["uncertainty_ppm"] < 1, (k, r)
        assert min(r["half_ticks"]) >= r["step_ticks"] / 2, (k, r)
    assert a["monotonic"].res_ns >= 1


def test_a_run_too_short_states_no_rate(lib):
    b = host_tsc.Beside()
    b.start()
    got = b.result()
    assert got["measured"] is False and "too short" in got["reason"], got


def test_a_missing_library_is_said(monkeypatch, tmp_path):
    monkeypatch.setenv("CLOCKBENCH_BUILD", str(tmp_path))
    monkeypatch.setattr(host_tsc, "_fn", None)
    b = host_tsc.Beside()
    b.start()
    got = b.result()
    assert got["measured"] is False and "make tool" in got["reason"], got
