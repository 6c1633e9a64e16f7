"""The kernel's integer-only arithmetic against exact references: extended
float (xf) against Python Fractions, statistics against numpy, and the
least-squares fit against an exact rational solution, with realistic TSC
values near 2^50 where IEEE doubles lose precision."""

import ctypes
import random
from fractions import Fraction

import numpy as np
import pytest

from helpers.hostlib import as_json, xf_value

EPS = Fraction(1, 2**61)  # a few ulps of a 64-bit mantissa


def close(got: Fraction, want: Fraction, rel=EPS):
    if want == 0:
        return got == 0
    return abs(got - want) <= abs(want) * rel


def test_xf_exact_conversions(lib):
    for v in [0, 1, -1, 2**63 - 1, -(2**63), 123456789, 2**50 + 1]:
        assert xf_value(lib.xf_from_i64(v)) == v
    assert xf_value(lib.xf_from_u64(2**64 - 1)) == 2**64 - 1
    for v in [2**100 + 12345, -(2**90) - 7, 2**64, -1]:
        hi, lo = v >> 64, v & (2**64 - 1)
        assert close(xf_value(lib.shim_xf_from_parts(hi, lo)), Fraction(v))


def test_xf_operations_match_fractions(lib):
    rng = random.Random(7)
    for _ in range(3000):
        a = rng.randint(-(2**62), 2**62) >> rng.randint(0, 60)
        b = (rng.randint(-(2**62), 2**62) >> rng.randint(0, 60)) or 1
        xa, xb = lib.xf_from_i64(a), lib.xf_from_i64(b)
        A, B = Fraction(a), Fraction(b)
        assert close(xf_value(lib.xf_mul(xa, xb)), A * B)
        assert close(xf_value(lib.xf_div(xa, xb)), A / B)
        s = A + B
        got = xf_value(lib.xf_add(xa, xb))
        assert abs(got - s) <= max(abs(A), abs(B)) * EPS  # addition: relative to the operands
        assert lib.xf_cmp(xa, xb) == (A > B) - (A < B)
    for v in [0, 1, 2, 3, 10**12, 2**63 - 1, 7 * 2**40 + 3]:
        r = xf_value(lib.xf_sqrt(lib.xf_from_i64(v)))
        assert close(r * r, Fraction(v), rel=Fraction(1, 2**60))


def test_xf_cancellation_is_exact_for_integers(lib):
    big = 2**50 + 3
    d = lib.xf_sub(lib.xf_from_i64(big), lib.xf_from_i64(big - 1))
    assert xf_value(d) == 1


def test_xf_to_fixed_rounds_half_away(lib):
    third = lib.xf_div(lib.xf_from_i64(1), lib.xf_from_i64(3))
    assert lib.xf_to_fixed(third, 6) == 333333
    assert lib.xf_to_fixed(lib.xf_neg(third), 6) == -333333
    two_thirds = lib.xf_div(lib.xf_from_i64(2), lib.xf_from_i64(3))
    assert lib.xf_to_fixed(two_thirds, 3) == 667
    half = lib.xf_div(lib.xf_from_i64(1), lib.xf_from_i64(2))
    assert lib.xf_to_fixed(half, 0) == 1
    assert lib.xf_to_fixed(lib.xf_from_i64(2**62), 3) == 2**63 - 1  # saturates
    assert lib.xf_to_fixed(lib.xf_from_i64(0), 9) == 0
    assert lib.xf_to_fixed(lib.xf_from_u64(100_000_000), 6) == 100_000_000_000_000


def arr(values, ctype=ctypes.c_uint64):
    return (ctype * len(values))(*values)


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 20011])
def test_summary_against_numpy(lib, n):
    rng = np.random.default_rng(n)
    data = (rng.lognormal(4, 1.0, n) + 20).astype(np.uint64)
    data[rng.integers(0, n)] = 10**9 if n > 2 else data[0]  # an outlier
    s = as_json(lib.shim_summary(arr([int(v) for v in data]), n))
    assert s["n"] == n
    assert s["min"] == data.min() and s["max"] == data.max()
    srt = np.sort(data)
    for key, q in (("p50", Fraction(1, 2)), ("p99", Fraction(99, 100)), ("p999", Fraction(999, 1000))):
        rank = max(1, -(-q * n // 1))  # nearest rank, ceil(q * n), computed exactly
        assert s[key] == srt[rank - 1], key
        # numpy agrees except where its floating-point q * n lands just above an integer
        if (q * n).denominator != 1:
            assert s[key] == np.percentile(data, float(q) * 100, method="inverted_cdf"), key
    exact_mean = Fraction(int(data.astype(object).sum()), n)
    assert close(xf_value(s["mean"]), exact_mean, rel=Fraction(1, 10**15))
    var = sum((Fraction(int(v)) - exact_mean) ** 2 for v in data) / n
    got = xf_value(s["stddev"])
    assert abs(got * got - var) <= var * Fraction(1, 10**12) + Fraction(1, 10**12)


def test_summary_of_nothing(lib):
    s = as_json(lib.shim_summary(None, 0))
    assert s["n"] == 0 and s["max"] == 0


def test_sort_handles_duplicates_and_extremes(lib):
    values = [5, 2**64 - 1, 0, 5, 3, 2**64 - 1, 1]
    s = as_json(lib.shim_summary(arr(values), len(values)))
    assert s["min"] == 0 and s["max"] == 2**64 - 1 and s["p50"] == 5


def test_histogram_runs(lib):
    data = sorted([10, 10, 10, 12, 13, 13, 40])
    out = (ctypes.c_uint64 * 20)()
    distinct = lib.shim_histogram(arr(data), len(data), out, 10)
    assert distinct == 4
    assert list(out[:8]) == [10, 3, 12, 1, 13, 2, 40, 1]
    # more distinct values than room: the count is still the whole count
    out2 = (ctypes.c_uint64 * 4)()
    assert lib.shim_histogram(arr(list(range(100))), 100, out2, 2) == 100
    assert list(out2) == [0, 1, 1, 1]


def exact_fit(xs, ys):
    n = len(xs)
    mx = Fraction(sum(xs), n)
    my = Fraction(sum(ys), n)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    b = sxy / sxx
    ssr = sum(((y - my) - b * (x - mx)) ** 2 for x, y in zip(xs, ys))
    return b, my - b * mx, ssr, sxx


def run_fit(lib, xs, ys):
    return as_json(lib.shim_fit(arr(xs, ctypes.c_int64), arr(ys, ctypes.c_int64), len(xs)))


def test_fit_with_tsc_values_near_2_to_50(lib):
    # A 2.6 GHz TSC that has run for days (values near 2^50), sampled against
    # a 100 MHz HPET for one second, with a little bracket jitter.
    rng = random.Random(3)
    x0 = 2**50 + 123456789
    ratio = Fraction(100_000_000, 2_600_123_457)
    xs, ys = [], []
    for i in range(2000):
        x = x0 + i * 1_300_000 + rng.randint(-40, 40)
        xs.append(x)
        ys.append(int(ratio * (x - x0)) + rng.randint(-1, 1))
    b, a, ssr, sxx = exact_fit(xs, ys)
    r = run_fit(lib, xs, ys)
    assert r["ok"]
    assert close(xf_value(r["slope"]), b, rel=Fraction(1, 10**15))
    se = xf_value(r["slope_stderr"])
    assert close(se * se, ssr / (len(xs) - 2) / sxx, rel=Fraction(1, 10**9))
    rms = xf_value(r["resid_rms"])
    assert close(rms * rms, ssr / len(xs), rel=Fraction(1, 10**9))
    # IEEE doubles, as numpy.polyfit uses them, lose the slope's low digits here
    x = np.array(xs, dtype=np.float64)
    naive = (len(x) * (x * np.array(ys, float)).sum() - x.sum() * sum(ys)) / (len(x) * (x * x).sum() - x.sum() ** 2)
    assert abs(Fraction(naive) - b) > abs(b) * Fraction(1, 10**9), "the naive double formula should be visibly off"


def test_fit_exact_line_has_zero_error(lib):
    xs = [2**49 + 10 * i for i in range(50)]
    ys = [7 + 3 * i for i in range(50)]
    r = run_fit(lib, xs, ys)
    assert close(xf_value(r["slope"]), Fraction(3, 10))
    assert xf_value(r["slope_stderr"]) < Fraction(1, 10**15)


def test_fit_refuses_degenerate_input(lib):
    assert not run_fit(lib, [1, 2], [1, 2])["ok"]
    assert not run_fit(lib, [5, 5, 5], [1, 2, 3])["ok"]


def test_fit_general_path_beyond_the_fast_bounds(lib):
    # more than 2^14 points takes the extended-float path; it must agree
    rng = random.Random(11)
    xs = [i * 5000 + rng.randint(0, 30) for i in range(20000)]
    ys = [x // 23 + rng.randint(-1, 1) for x in xs]
    b, a, ssr, sxx = exact_fit(xs, ys)
    r = run_fit(lib, xs, ys)
    assert close(xf_value(r["slope"]), b, rel=Fraction(1, 10**12))
    se = xf_value(r["slope_stderr"])
    assert close(se * se, ssr / (len(xs) - 2) / sxx, rel=Fraction(1, 10**6))


def test_fit_intercept_in_caller_coordinates(lib):
    xs = [1000 + 10 * i for i in range(10)]
    ys = [500 + 3 * i + (i % 2) for i in range(10)]
    b, a, ssr, sxx = exact_fit(xs, ys)
    r = run_fit(lib, xs, ys)
    assert close(xf_value(r["intercept"]), a, rel=Fraction(1, 10**12))
