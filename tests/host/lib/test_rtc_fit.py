"""The RTC's pure logic (lib/rtc_fit.c): its calendar registers decoded
in every data and hour mode; the TSC's rate fitted against its second
boundaries, checked against numpy's least squares and against the truth
the edges were made from; the edges between them (a bracket's middle, one
RTC second by two edges, the least steps) and the seconds register's steps,
by known answers; and the rate by the RTC held against the drift
reference's (the TSC's, another counter's through it, agreement within a
tolerance + 3 u), against exact arithmetic."""

import ctypes
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from helpers.hostlib import XF, as_json, xf_value

BINARY, H24 = 0x04, 0x02  # register B: DM (binary data) and 24/12
HZ = 2_299_998_000  # a TSC rate of the kind our machines have


def bcd(v):
    return (v // 10) << 4 | (v % 10)


def decode(lib, sec, mn, hour, day, month, year, reg_b):
    return as_json(lib.shim_rtc_decode(sec, mn, hour, day, month, year, reg_b))


def encode(y, mo, d, h, mi, s, reg_b):
    """The registers an RTC in this mode shows for the time (MC146818A)."""
    conv = (lambda v: v) if reg_b & BINARY else bcd
    if reg_b & H24:
        hour = conv(h)
    else:
        hour = conv(h % 12 or 12) | (0x80 if h >= 12 else 0)
    return conv(s), conv(mi), hour, conv(d), conv(mo), conv(y % 100)


def test_bcd_24h_as_seabios_leaves_it(lib):
    d = decode(lib, 0x56, 0x34, 0x12, 0x29, 0x02, 0x20, H24)
    assert d["valid"] and (d["year"], d["month"], d["day"]) == (2020, 2, 29)
    assert (d["hour"], d["min"], d["sec"]) == (12, 34, 56)
    assert d["seconds_of_day"] == 12 * 3600 + 34 * 60 + 56


def test_binary_and_12_hour_modes(lib):
    assert decode(lib, 56, 34, 12, 29, 2, 20, BINARY | H24)["hour"] == 12
    # 12 h: 12 AM is midnight, 12 PM noon, PM in bit 7
    for reg, want in ((0x12, 0), (0x92, 12), (0x81, 13), (0x01, 1), (0x91, 23)):
        got = decode(lib, 0, 0, reg, 1, 1, 0, 0)
        assert got["valid"] and got["hour"] == want, (hex(reg), got)
    assert decode(lib, 0, 0, 0x80 | 11, 1, 1, 0, BINARY)["hour"] == 23


def test_an_rtc_that_ignores_the_12_hour_bit_is_read_as_24_hour(lib):
    """Cloud Hypervisor v53: register B 0x00 (12 h, BCD), the hour counting
    0-23. After noon the hour reads 0x13: refused before, which left the
    RTC with no edges every afternoon. Read as 24-hour, as Linux reads it."""
    for reg, want in ((0x13, 13), (0x23, 23), (0x00, 0)):
        got = decode(lib, 0x07, 0x37, reg, 0x26, 0x11, 0x26, 0)
        assert got["valid"] and got["clock_valid"] and got["hour"] == want, (hex(reg), got)
        assert got["hour_mode_ignored"] is True, got
    assert decode(lib, 0, 0, 0x11, 1, 1, 0, 0)["hour_mode_ignored"] is False  # 11 AM: no contradiction to see
    assert decode(lib, 0, 0, 0x13, 1, 1, 0, H24)["hour_mode_ignored"] is False


def test_invalid_fields_are_refused(lib):
    assert not decode(lib, 0x5A, 0, 0, 1, 1, 0, H24)["valid"]  # not BCD
    assert not decode(lib, 60, 0, 0, 1, 1, 0, BINARY | H24)["valid"]
    assert not decode(lib, 0, 0, 0x93, 1, 1, 0, 0)["valid"]  # 13 PM in 12 h mode
    assert not decode(lib, 0, 0, 0x24, 1, 1, 0, 0)["valid"]  # 24 in 12 h mode
    assert not decode(lib, 0, 0, 24, 1, 1, 0, BINARY | H24)["valid"]
    bad_date = decode(lib, 0x10, 0x20, 0x08, 0x00, 0x13, 0x20, H24)  # day 0, month 13
    assert not bad_date["valid"] and bad_date["clock_valid"] and bad_date["seconds_of_day"] == 8 * 3600 + 20 * 60 + 10
    assert decode(lib, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF)["valid"] is False  # nothing on the ports


@settings(max_examples=300, deadline=None)
@given(st.integers(2000, 2099), st.integers(1, 12), st.integers(1, 31), st.integers(0, 23), st.integers(0, 59),
       st.integers(0, 59), st.sampled_from([0, BINARY, H24, BINARY | H24]))
def test_every_mode_round_trips(lib, y, mo, d, h, mi, s, reg_b):
    got = decode(lib, *encode(y, mo, d, h, mi, s, reg_b), reg_b)
    assert got["valid"], got
    assert (got["year"], got["month"], got["day"], got["hour"], got["min"], got["sec"]) == (y, mo, d, h, mi, s)
    assert got["seconds_of_day"] == h * 3600 + mi * 60 + s


# --- the fit ---


def fit(lib, a, b, sod, hz=HZ):
    n = len(a)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    return as_json(lib.shim_rtc_fit((u64 * n)(*a), (u64 * n)(*b), (u32 * n)(*sod), n, hz))


def make_edges(rng, n, rate, width=(200, 600), jitter=0.0, start_sod=50000, seconds=None, t0=10**12):
    """Edges at t0 + k * rate TSC ticks (k the RTC seconds), each bracket
    [a, b] of the given width holding the edge at a random place, the whole
    bracket moved by Gaussian jitter (ticks) when asked."""
    seconds = seconds if seconds is not None else list(range(n))
    a, b, sod, truth = [], [], [], []
    for k in seconds:
        t = t0 + Fraction(rate) * k
        w = rng.randint(*width)
        lo = int(t) - rng.randint(0, w) + int(rng.gauss(0, jitter))
        a.append(lo)
        b.append(lo + w)
        sod.append((start_sod + k) % 86400)
        truth.append(t)
    return a, b, sod


def numpy_slope(a, b, seconds):
    mids = np.array([(x + y) / 2 for x, y in zip(a, b)], dtype=np.float64)
    s = np.array(seconds, dtype=np.float64)
    slope, _ = np.polyfit(s - s[0], mids - mids[0], 1)
    return slope


def test_slope_matches_numpy_and_the_bracket_bound_holds(lib):
    rng = random.Random(1)
    for trial in range(40):
        rate = HZ * (1 + rng.uniform(-50e-6, 50e-6))
        n = rng.randint(3, 300)
        a, b, sod = make_edges(rng, n, rate)
        f = fit(lib, a, b, sod)
        assert f["fitted"] and f["used"] == n and f["span_s"] == n - 1, f
        assert f["discontinuities"] == 0 and f["wide"] == 0 and f["outliers"] == 0
        got = xf_value(f["tsc_per_s"])
        assert abs(float(got) - numpy_slope(a, b, range(n))) <= 1e-9 * rate
        # every edge lies inside its bracket: the bound must cover the error
        err = abs(got - Fraction(rate)) / Fraction(rate)
        assert err <= xf_value(f["bracket_rel"]) * (1 + Fraction(1, 10**9)), (trial, float(err), f)
        assert xf_value(f["uncertainty_rel"]) >= xf_value(f["bracket_rel"])


def test_two_edges(lib):
    a, b, sod = [1000, 1000 + HZ + 37], [1400, 1000 + HZ + 237], [7, 8]
    f = fit(lib, a, b, sod)
    assert f["fitted"] and f["used"] == 2 and f["span_s"] == 1
    assert xf_value(f["tsc_per_s"]) == Fraction((a[1] + b[1]) - (a[0] + b[0]), 2)
    assert xf_value(f["stderr_rel"]) == 0
    # (w1 + w2) / 2 over the span, relative
    want = Fraction(400 + 200, 2) / xf_value(f["tsc_per_s"])
    assert abs(xf_value(f["bracket_rel"]) - want) <= want * Fraction(1, 10**15)


def test_too_few_edges(lib):
    assert not fit(lib, [], [], [])["fitted"]
    assert not fit(lib, [5], [9], [100])["fitted"]
    f = fit(lib, [5, 9], [9, 12], [100, 100])  # the RTC did not move
    assert not f["fitted"] and f["discontinuities"] == 1 and f["backward"] == 1


def test_uncertainty_covers_the_truth_with_jitter(lib):
    """Gaussian jitter of the brackets themselves (the TSC read late, the
    host away): the stated uncertainty, statistics included, covers the
    truth at 3 u nearly always."""
    rng = random.Random(7)
    misses = 0
    trials = 200
    for _ in range(trials):
        rate = HZ * (1 + rng.uniform(-100e-6, 100e-6))
        n = rng.randint(8, 80)
        a, b, sod = make_edges(rng, n, rate, width=(100, 200), jitter=rng.choice([0, 50, 500, 5000]))
        f = fit(lib, a, b, sod)
        assert f["fitted"]
        err = abs(xf_value(f["tsc_per_s"]) - Fraction(rate)) / Fraction(rate)
        if err > 3 * xf_value(f["uncertainty_rel"]):
            misses += 1
    assert misses <= trials // 50, misses


def test_missed_seconds_and_midnight_are_continuous(lib):
    rng = random.Random(3)
    seconds = [0, 1, 2, 5, 6, 7, 9, 10, 14, 15]  # edges the loop missed in between
    a, b, sod = make_edges(rng, 0, HZ, seconds=seconds, start_sod=86395)  # through midnight
    f = fit(lib, a, b, sod)
    assert f["fitted"] and f["used"] == len(seconds) and f["span_s"] == 15 and f["discontinuities"] == 0, f
    assert abs(xf_value(f["tsc_per_s"]) / HZ - 1) <= xf_value(f["bracket_rel"])


def test_a_set_clock_splits_and_the_longest_run_is_fitted(lib):
    rng = random.Random(4)
    a, b, sod = make_edges(rng, 30, HZ)
    # the clock set back an hour after edge 9, and forward 10 s after edge 24
    sod = [s - 3600 if 10 <= i else s for i, s in enumerate(sod)]
    sod = [s + 10 if 25 <= i else s for i, s in enumerate(sod)]
    f = fit(lib, a, b, sod)
    assert f["discontinuities"] == 2 and f["backward"] == 1, f
    assert f["fitted"] and f["used"] == 15 and f["span_s"] == 14, f  # edges 10..24
    assert abs(xf_value(f["tsc_per_s"]) / HZ - 1) <= xf_value(f["bracket_rel"])


def test_wide_brackets_and_late_edges_are_left_out(lib):
    rng = random.Random(5)
    n = 20
    a, b, sod = make_edges(rng, n, HZ, width=(300, 300))
    # edge 0 read while the host was away: a 5 ms bracket
    a[0] -= 5_000_000
    # edge 7 late by 60 us with a narrow bracket (QEMU's latched UIP)
    a[7] += 138_000
    b[7] += 138_000
    f = fit(lib, a, b, sod)
    assert f["wide"] == 1 and f["outliers"] == 1 and f["used"] == n - 2, f
    assert abs(xf_value(f["tsc_per_s"]) / HZ - 1) <= xf_value(f["bracket_rel"]) * (1 + Fraction(1, 10**9))


def test_long_windows_are_thinned(lib):
    rng = random.Random(6)
    n = 3000  # more than the fit's 512 buffers: every k-th edge and the last
    rate = HZ * (1 + 12.5e-6)
    a, b, sod = make_edges(rng, n, rate)
    f = fit(lib, a, b, sod)
    assert f["fitted"] and 400 <= f["used"] <= 512 and f["span_s"] == n - 1, f
    err = abs(xf_value(f["tsc_per_s"]) - Fraction(rate)) / Fraction(rate)
    assert err <= xf_value(f["bracket_rel"]) * (1 + Fraction(1, 10**9))


# --- the edges between them, and the seconds register's steps ---

SAME, FORWARD, BACKWARD = 0, 1, 2  # enum rtc_step


@pytest.fixture(scope="module")
def rl(lib):
    """The library with the edge helpers' types declared."""
    u8, u32, u64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64
    lib.shim_rtc_tsc_mid.restype = u64
    lib.shim_rtc_tsc_mid.argtypes = [u64, u64]
    lib.shim_rtc_period_tsc.restype = u64
    lib.shim_rtc_period_tsc.argtypes = [u64, u64, u32, u64, u64, u32, u64]
    lib.shim_rtc_min_steps.restype = ctypes.c_char_p
    lib.shim_rtc_min_steps.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.POINTER(u32), u32]
    lib.shim_rtc_seconds_step.restype = ctypes.c_int
    lib.shim_rtc_seconds_step.argtypes = [u8, u8]
    return lib


def period(rl, p, q, hz=HZ):
    return rl.shim_rtc_period_tsc(*p, *q, hz)


def min_steps(rl, a, b, sod):
    n = len(a)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    return as_json(rl.shim_rtc_min_steps((u64 * n)(*a), (u64 * n)(*b), (u32 * n)(*sod), n))


def test_bracket_middle_rounds_down_and_never_overflows(rl):
    top = 2**64 - 1
    for a, b, want in ((3, 5, 4), (1, 2, 1), (0, 0, 0), (7, 7, 7), (top, top, top), (top - 1, top, top - 1), (0, top, top // 2)):
        assert rl.shim_rtc_tsc_mid(a, b) == want, (a, b)
    rng = random.Random(8)
    for _ in range(2000):
        a, b = rng.randrange(2**64), rng.randrange(2**64)
        assert rl.shim_rtc_tsc_mid(a, b) == (a + b) // 2


def test_period_by_two_edges(rl):
    # one second: the middles' distance; three (a missed edge between): a third of it, rounded down
    assert period(rl, (1000, 1400, 100), (1000 + HZ, 1400 + HZ, 101)) == HZ
    assert period(rl, (1000, 1400, 100), (1000 + 3 * HZ + 7, 1400 + 3 * HZ + 8, 103)) == (3 * HZ + 7) // 3
    # through midnight: 86399 -> 1 is two seconds
    assert period(rl, (0, 0, 86399), (2 * HZ + 2, 2 * HZ + 2, 1)) == HZ + 1


def test_period_far_from_the_estimate_is_the_estimate(rl):
    est = 1_000_000_000
    lo, hi = est - est // 10, est + est // 10
    assert period(rl, (0, 0, 5), (lo, lo, 6), est) == est  # 10 % off exactly: not kept
    assert period(rl, (0, 0, 5), (lo + 1, lo + 1, 6), est) == lo + 1
    assert period(rl, (0, 0, 5), (hi, hi, 6), est) == est
    assert period(rl, (0, 0, 5), (hi - 1, hi - 1, 6), est) == hi - 1
    assert period(rl, (0, 0, 5), (est, est, 5), est) == est  # the RTC did not move
    assert period(rl, (est, est, 5), (0, 0, 6), est) == est  # the TSC went back
    assert period(rl, (0, 0, 5), (est, est, 7), est) == est  # half the estimate a second


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**62), st.integers(0, 10**6), st.integers(0, 86399), st.integers(0, 3 * HZ), st.integers(0, 10**6),
       st.integers(0, 5), st.integers(1, 2**40))
def test_period_matches_its_definition(rl, pa, pw, psod, dt, qw, secs, est):
    qa, qsod = pa + dt, (psod + secs) % 86400
    got = period(rl, (pa, pa + pw, psod), (qa, qa + qw, qsod), est)
    pm, qm = (2 * pa + pw) // 2, (2 * qa + qw) // 2
    per = (qm - pm) // secs if secs and qm > pm else 0
    assert got == (per if est - est // 10 < per < est + est // 10 else est)


def test_least_steps(rl):
    assert min_steps(rl, [], [], []) == {"type": "rtc_min_steps", "min_step_s": 0, "min_step_tsc": 0}
    assert min_steps(rl, [5], [9], [10])["min_step_s"] == 0
    # seconds 0, 2, 3, 4 (one missed): the one-second steps are HZ + 40 and HZ - 30
    t = [0, 2 * HZ, 3 * HZ + 40, 4 * HZ + 10]
    got = min_steps(rl, t, [x + 100 for x in t], [50, 52, 53, 54])
    assert got["min_step_s"] == 1 and got["min_step_tsc"] == HZ - 30, got
    # no two edges one second apart: no step in TSC time; a count that stood still is not a step
    t = [0, 2 * HZ, 2 * HZ + 5, 5 * HZ]
    got = min_steps(rl, t, t, [86399, 1, 1, 4])
    assert got["min_step_s"] == 2 and got["min_step_tsc"] == 0, got


def test_seconds_register_steps(rl):
    assert rl.shim_rtc_seconds_step(0x10, 0x10) == SAME
    assert rl.shim_rtc_seconds_step(0x10, 0x11) == FORWARD
    assert rl.shim_rtc_seconds_step(0x59, 0x00) == FORWARD  # BCD wrap
    assert rl.shim_rtc_seconds_step(59, 0) == FORWARD  # binary wrap
    assert rl.shim_rtc_seconds_step(0x58, 0x00) == BACKWARD
    assert rl.shim_rtc_seconds_step(0x30, 0x10) == BACKWARD
    for prev in range(256):
        for now in range(256):
            want = SAME if now == prev else BACKWARD if now < prev and prev not in (0x59, 59) else FORWARD
            assert rl.shim_rtc_seconds_step(prev, now) == want, (prev, now)


# --- the rate by the RTC against the drift reference's ---


@pytest.fixture(scope="module")
def rv(lib):
    """The library with the comparison's types declared."""
    for name in ("shim_rtc_tsc_vs", "shim_rtc_counter_vs"):
        getattr(lib, name).restype = ctypes.c_char_p
        getattr(lib, name).argtypes = [XF, XF, XF, XF, ctypes.c_uint32]
    return lib


def xf(lib, v):
    v = Fraction(v)
    return lib.xf_div(lib.xf_from_i64(v.numerator), lib.xf_from_i64(v.denominator))


def tsc_vs(rv, tsc_per_rtc_s, u_fit, tsc_hz, u_tsc, tolerance=100):
    r = as_json(rv.shim_rtc_tsc_vs(xf(rv, tsc_per_rtc_s), xf(rv, u_fit), xf(rv, tsc_hz), xf(rv, u_tsc), tolerance))
    return {k: (xf_value(v) if isinstance(v, list) else v) for k, v in r.items()}


def counter_vs(rv, ppm_ref, u_ref, ratio, u_fit, tolerance=100):
    r = as_json(rv.shim_rtc_counter_vs(xf(rv, ppm_ref), xf(rv, u_ref), xf(rv, ratio), xf(rv, u_fit), tolerance))
    return {k: (xf_value(v) if isinstance(v, list) else v) for k, v in r.items()}


def near(got, want, tol=Fraction(1, 10**9)):
    return abs(got - Fraction(want)) <= tol


def test_tsc_by_the_rtc_against_the_reference(rv):
    # 12.5 ppm fast by the RTC; uncertainties 3 and 4 ppm make 5
    v = tsc_vs(rv, Fraction(HZ) * (1 + Fraction(125, 10**7)), 3, HZ, 4)
    assert near(v["ratio"], 1 + Fraction(125, 10**7), Fraction(1, 10**15)) and near(v["ppm"], Fraction(25, 2)), v
    assert near(v["u_ppm"], 5) and v["agrees"], v
    v = tsc_vs(rv, Fraction(HZ) * (1 - Fraction(40, 10**6)), Fraction(1, 10), HZ, 0, tolerance=0)
    assert near(v["ppm"], -40) and near(v["u_ppm"], Fraction(1, 10)) and not v["agrees"], v
    v = tsc_vs(rv, HZ, 0, HZ, 0, tolerance=0)  # the same rate: 0 +-0 agrees even with no tolerance
    assert v["ppm"] == 0 and v["u_ppm"] == 0 and v["agrees"], v


def test_another_counter_through_the_tsc(rv):
    # 10 ppm fast by the reference, and the TSC 5 ppm fast by the RTC against it: (1 + 10e-6)(1 + 5e-6) - 1
    ratio = 1 + Fraction(5, 10**6)
    v = counter_vs(rv, 10, Fraction(2, 10), ratio, Fraction(1, 10))
    assert near(v["ppm"], Fraction(1500005, 100000)), v
    assert abs(v["u_ppm"] ** 2 - Fraction(5, 100)) <= Fraction(1, 10**15), v
    # the reference itself: 0 ppm from nominal by definition, its rate by the RTC is the ratio's
    assert near(counter_vs(rv, 0, 0, ratio, 0)["ppm"], 5)
    assert near(counter_vs(rv, -20, 0, 1, 0)["ppm"], -20)


def test_agreement_is_the_tolerance_plus_three_u(rv):
    # u = 2 ppm, tolerance 100 ppm: the limit is 106 ppm, either sign
    for ppm, want in ((Fraction(105999, 1000), True), (Fraction(106001, 1000), False), (0, True)):
        for sign in (1, -1):
            v = counter_vs(rv, sign * ppm, 2, 1, 0, tolerance=100)
            assert near(v["u_ppm"], 2) and v["agrees"] is want, (sign * ppm, v)


@settings(max_examples=300, deadline=None)
@given(st.integers(10**6, 5 * 10**9), st.integers(-10**6, 10**6), st.integers(0, 10**6), st.integers(0, 10**6),
       st.integers(-10**9, 10**9), st.integers(0, 100))
def test_comparison_matches_exact_arithmetic(rv, hz, ppb, u_fit_ppb, u_ref_ppb, ref_ppb, tolerance):
    """The figures within 1e-9 ppm of exact arithmetic (the uncertainty within 1e-12 of itself), and the
    agreement test right wherever the figure is not within 1e-9 ppm of its limit."""
    rate = Fraction(hz) * (1 + Fraction(ppb, 10**9))
    u_fit, u_ref = Fraction(u_fit_ppb, 1000), Fraction(u_ref_ppb, 1000)
    v = tsc_vs(rv, rate, u_fit, hz, u_ref, tolerance)
    want_ppm, want_u2 = Fraction(ppb, 1000), u_fit**2 + u_ref**2
    assert near(v["ppm"], want_ppm), v
    assert abs(v["u_ppm"] ** 2 - want_u2) <= want_u2 / 10**12 + Fraction(1, 10**24), v
    limit = tolerance + 3 * v["u_ppm"]
    if abs(abs(want_ppm) - limit) > Fraction(1, 10**9):
        assert v["agrees"] is (abs(want_ppm) <= limit), v
    ratio = 1 + Fraction(ppb, 10**9)
    c = counter_vs(rv, Fraction(ref_ppb, 1000), u_ref, ratio, u_fit, tolerance)
    want = ((1 + Fraction(ref_ppb, 10**9)) * ratio - 1) * 10**6
    assert near(c["ppm"], want), c
