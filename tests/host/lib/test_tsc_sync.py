"""The offset-interval arithmetic of lib/tsc_sync.c: bounds from
request-reply exchanges, their intersection, the rate between two sets, and
the tsc_skew= parser. Exact answers, worked by hand or with Fractions."""

from __future__ import annotations

import ctypes
import random
from fractions import Fraction

import pytest

i64, u64, u32 = ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint32


class Offset(ctypes.Structure):
    _fields_ = [("exchanges", u32), ("lo", i64), ("hi", i64), ("round_trip_min", u64), ("best_lo", i64), ("best_hi", i64)]


@pytest.fixture(scope="module")
def ts(lib):
    P = ctypes.POINTER(Offset)
    lib.tsc_offset_init.argtypes = [P]
    lib.tsc_offset_add.argtypes = [P, u64, u64, u64]
    lib.tsc_offset_consistent.argtypes = [P]
    lib.tsc_offset_consistent.restype = ctypes.c_bool
    lib.tsc_offset_mid.argtypes = [P]
    lib.tsc_offset_mid.restype = i64
    lib.tsc_offset_half.argtypes = [P]
    lib.tsc_offset_half.restype = u64
    lib.tsc_offset_contains.argtypes = [P, i64]
    lib.tsc_offset_contains.restype = ctypes.c_bool
    lib.tsc_offset_worst.argtypes = [P]
    lib.tsc_offset_worst.restype = u64
    lib.tsc_offset_rate.argtypes = [P, P, u64, ctypes.POINTER(i64), ctypes.POINTER(u64)]
    lib.tsc_offset_rate.restype = ctypes.c_bool
    lib.tsc_offset_between.argtypes = [P, P, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.tsc_offset_between.restype = ctypes.c_bool
    lib.tsc_skew_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(u32), ctypes.POINTER(i64)]
    lib.tsc_skew_parse.restype = ctypes.c_bool
    return lib


def offset(ts, exchanges):
    o = Offset()
    ts.tsc_offset_init(ctypes.byref(o))
    for before, theirs, after in exchanges:
        ts.tsc_offset_add(ctypes.byref(o), before % 2**64, theirs % 2**64, after % 2**64)
    return o


def test_one_exchange_bounds_the_offset(ts):
    # the AP read 1150 between the boot CPU's 1000 and 1100: d in [50, 150]
    o = offset(ts, [(1000, 1150, 1100)])
    assert (o.lo, o.hi, o.round_trip_min, o.exchanges) == (50, 150, 100, 1)
    assert ts.tsc_offset_consistent(ctypes.byref(o))
    assert ts.tsc_offset_mid(ctypes.byref(o)) == 100 and ts.tsc_offset_half(ctypes.byref(o)) == 50
    assert ts.tsc_offset_contains(ctypes.byref(o), 50) and not ts.tsc_offset_contains(ctypes.byref(o), 0)
    assert ts.tsc_offset_worst(ctypes.byref(o)) == 150


def test_exchanges_intersect_and_the_shortest_is_kept(ts):
    o = offset(ts, [(1000, 1150, 1100), (2000, 2090, 2200), (3000, 3120, 3060)])
    # bounds [50,150], [-110,90], [60,120] -> [60, 90]
    assert (o.lo, o.hi) == (60, 90)
    assert o.round_trip_min == 60 and (o.best_lo, o.best_hi) == (60, 120)


def test_the_truth_is_always_inside(ts):
    """Simulated CPUs with a known offset and random delays: the interval
    always holds it, and narrows as exchanges accumulate."""
    rng = random.Random(11)
    for d in (0, 1, -1, 120, -4_000_000, 2**40):
        t, ex = 10**12, []
        for _ in range(200):
            before = t
            t += rng.randint(1, 300)
            theirs = t + d
            t += rng.randint(1, 300)
            ex.append((before, theirs, t))
            t += rng.randint(0, 1000)
        o = offset(ts, ex)
        assert o.lo <= d <= o.hi, (d, o.lo, o.hi)
        assert o.hi - o.lo < 100


def test_a_wrap_of_the_64_bit_tsc_between_reads_is_harmless(ts):
    o = offset(ts, [(2**64 - 50, 2**64 - 10, 50)])  # after wrapped
    assert (o.lo, o.hi, o.round_trip_min) == (-60, 40, 100)


def test_boot_cpu_going_back_gives_no_bound(ts):
    o = offset(ts, [(1000, 5, 900)])
    assert o.exchanges == 0 and not ts.tsc_offset_consistent(ctypes.byref(o))


def test_an_empty_intersection_is_inconsistent(ts):
    # [0, 10] then [20, 30]: the TSCs moved against each other
    o = offset(ts, [(100, 110, 110), (200, 230, 210)])
    assert o.lo == 20 and o.hi == 10 and not ts.tsc_offset_consistent(ctypes.byref(o))


def test_midpoint_and_half_width_cover_odd_and_extreme_intervals(ts):
    for lo, hi in ((-3, 4), (-7, -2), (5, 5), (-(2**62), 2**62 - 1)):
        o = Offset(exchanges=1, lo=lo, hi=hi)
        m, h = ts.tsc_offset_mid(ctypes.byref(o)), ts.tsc_offset_half(ctypes.byref(o))
        assert m - h <= lo and hi <= m + h and 2 * h <= hi - lo + 1, (lo, hi, m, h)


def rate(ts, first, second, elapsed):
    r, u = i64(), u64()
    ok = ts.tsc_offset_rate(ctypes.byref(first), ctypes.byref(second), elapsed, ctypes.byref(r), ctypes.byref(u))
    return ok, r.value, u.value


def test_rate_from_two_intervals(ts):
    # d moved from [-10, 10] to [990, 1010] in 10^9 ticks: 1 ppm +- 0.02
    ok, r, u = rate(ts, Offset(exchanges=1, lo=-10, hi=10), Offset(exchanges=1, lo=990, hi=1010), 10**9)
    assert ok and r == 1000 and u == 21  # 10^-3 ppm; +1 for rounding
    # the interval [r - u, r + u] covers every rate the bounds allow
    lo, hi = Fraction(990 - 10, 10**9) * 10**9, Fraction(1010 + 10, 10**9) * 10**9
    assert r - u <= lo and hi <= r + u


def test_rate_rounds_negative_and_covers(ts):
    for first, second, e in (((-7, 3), (-20, -9), 333_333), ((0, 1), (-1, 0), 3), ((5, 9), (5, 9), 10**12)):
        ok, r, u = rate(ts, Offset(exchanges=1, lo=first[0], hi=first[1]), Offset(exchanges=1, lo=second[0], hi=second[1]), e)
        assert ok
        lo = Fraction(second[0] - first[1], e) * 10**9
        hi = Fraction(second[1] - first[0], e) * 10**9
        assert r - u <= lo and hi <= r + u, (first, second, r, u)


def test_no_rate_without_consistent_intervals_or_time(ts):
    good = Offset(exchanges=1, lo=0, hi=1)
    assert not rate(ts, good, Offset(exchanges=1, lo=2, hi=1), 100)[0]
    assert not rate(ts, Offset(), good, 100)[0]
    assert not rate(ts, good, good, 0)[0]


@pytest.mark.parametrize("text,want", [
    (b"1:1000", (1, 1000)), (b"3:-250000", (3, -250000)), (b"2:+0x10", (2, 16)), (b"0:5", (0, 5)),
    (b"1:0", None), (b"1", None), (b"x:5", None), (b"1:", None), (b"1:-", None), (b"1:12a", None), (b"", None),
    (b"1:9223372036854775808", None),
])
def test_tsc_skew_parse(ts, text, want):
    c, t = u32(), i64()
    ok = ts.tsc_skew_parse(text, ctypes.byref(c), ctypes.byref(t))
    assert ok == (want is not None)
    if want:
        assert (c.value, t.value) == want


def test_pairs_derived_from_the_star_hold_the_truth(ts):
    # CPU 1 and CPU 2 each measured against CPU 0; their own difference must
    # lie in [lo1 - hi2, hi1 - lo2] whatever the true offsets were
    rng = random.Random(11)
    for _ in range(200):
        true1, true2 = rng.randint(-10**6, 10**6), rng.randint(-10**6, 10**6)
        o1 = offset(ts, [(t, t + rng.randint(1, 300) + true1, t + rng.randint(301, 900)) for t in range(10**9, 10**9 + 5000, 500)])
        o2 = offset(ts, [(t, t + rng.randint(1, 300) + true2, t + rng.randint(301, 900)) for t in range(10**9, 10**9 + 5000, 500)])
        lo, hi = i64(), i64()
        assert ts.tsc_offset_between(ctypes.byref(o1), ctypes.byref(o2), ctypes.byref(lo), ctypes.byref(hi))
        assert lo.value == o1.lo - o2.hi and hi.value == o1.hi - o2.lo
        assert lo.value <= true1 - true2 <= hi.value


def test_pairs_need_consistent_intervals(ts):
    empty = Offset()
    ts.tsc_offset_init(ctypes.byref(empty))
    good = offset(ts, [(100, 150, 200)])
    lo, hi = i64(), i64()
    assert not ts.tsc_offset_between(ctypes.byref(good), ctypes.byref(empty), ctypes.byref(lo), ctypes.byref(hi))
