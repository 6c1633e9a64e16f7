"""Unwrapping counter differences by elapsed TSC time (lib/unwrap.c),
against an exact integer model of the rules in lib/unwrap.h, on the
counters a PC has: the 16-bit PIT, the 24-bit ACPI PM timer, a 32-bit and a
64-bit HPET, read against a 2.3 GHz TSC."""

import random
from dataclasses import dataclass

import pytest

from helpers.hostlib import as_json

TSC_HZ = 2_300_000_000
M64 = 2**64 - 1


@dataclass
class Counter:
    name: str
    mask: int
    millihz: int
    tol_ppm: int = 200
    slack: int = 2
    tsc_hz: int = TSC_HZ

    def args(self):
        return (self.mask, self.millihz, self.tsc_hz, self.tol_ppm, self.slack)

    def ticks(self, tsc):
        """Whole ticks the counter makes in `tsc` TSC ticks at its nominal rate."""
        return tsc * self.millihz // (1000 * TSC_HZ)


PIT = Counter("pit", 0xFFFF, 1_193_181_667)
PM = Counter("pm", 0xFFFFFF, 3_579_545_000)
HPET32 = Counter("hpet32", 0xFFFFFFFF, 100_000_000_000)
HPET64 = Counter("hpet64", M64, 100_000_000_000)
COUNTERS = [PIT, PM, HPET32, HPET64]


def ceil_div(a, b):
    return -(-a // b)


def model_bounds(mask, millihz, tsc_hz, tol, slack, t_min, t_max):
    """min_expected and max_expected exactly as unwrap.h defines them."""
    hi = ceil_div(t_max * millihz * (10**6 + tol), 10**9 * tsc_hz) + slack
    lo = 0 if tol >= 10**6 else max(0, t_min * millihz * (10**6 - tol) // (10**9 * tsc_hz) - slack)
    return lo, min(hi, M64)


def model_step(mask, millihz, tsc_hz, tol, slack, prev, a0, b0, now, a1, b1):
    """The rules of unwrap.h in Python integers: (kind, advance, backward)."""
    signed = lambda v: v - 2**64 if v >= 2**63 else v
    if signed((a1 - b0) % 2**64) < 0 or signed((b0 - a0) % 2**64) < 0 or signed((b1 - a1) % 2**64) < 0:
        return "TSC_BACKWARD", 0, 0
    lo, hi = model_bounds(mask, millihz, tsc_hz, tol, slack, (a1 - b0) % 2**64, (b1 - a0) % 2**64)
    if hi >= mask:
        return "GAP", 0, 0
    d = (now - prev) & mask
    if d <= hi:
        return ("SLOW" if d < lo else "NORMAL"), d, 0
    back = (prev - now) & mask
    if back <= mask // 2 + 1:
        return "BACKWARD", 0, back
    return "FAST", d, 0


def step(lib, c, prev, a0, b0, now, a1, b1):
    r = as_json(lib.shim_unwrap_step(*c.args(), prev, a0, b0, now, a1, b1))
    want = model_step(*c.args(), prev, a0, b0, now, a1, b1)
    assert (r["kind"], r["advance"], r["backward"]) == want, (c.name, r, want)
    if r["kind"] != "TSC_BACKWARD":
        lo, hi = model_bounds(*c.args(), a1 - b0, b1 - a0)
        assert (r["min_expected"], r["max_expected"]) == (lo, hi)
    return r


def read_pair(lib, c, gap_tsc, stopped_tsc=0, bracket=60, start=10**12, c0=12345):
    """Two readings gap_tsc apart (read instants mid-bracket), the counter
    standing still for stopped_tsc of the gap; returns the step and the true advance."""
    t0 = start
    t1 = start + gap_tsc
    v0 = c0 + c.ticks(t0 - start)
    true_adv = c.ticks(t1 - start - stopped_tsc)
    v1 = c0 + true_adv
    h = bracket // 2
    r = step(lib, c, v0 & c.mask, t0 - h, t0 + h, v1 & c.mask, t1 - h, t1 + h)
    return r, true_adv


def test_expected_ticks_exact(lib):
    rng = random.Random(5)
    for _ in range(2000):
        mhz = rng.randint(1, 2**64 - 1) >> rng.randint(0, 63)
        hz = max(1, rng.randint(1, 2**64 - 1) >> rng.randint(0, 63))
        t = rng.randint(0, 2**64 - 1) >> rng.randint(0, 63)
        want = min(t * mhz // (1000 * hz), M64)  # saturates
        assert lib.shim_unwrap_expected_ticks(mhz, hz, t) == want
    # one second of TSC is one nominal second of each counter
    assert lib.shim_unwrap_expected_ticks(PIT.millihz, TSC_HZ, TSC_HZ) == 1_193_181
    assert lib.shim_unwrap_expected_ticks(PM.millihz, TSC_HZ, TSC_HZ) == 3_579_545
    assert lib.shim_unwrap_expected_ticks(HPET32.millihz, TSC_HZ, 23) == 1
    assert lib.shim_unwrap_expected_ticks(HPET32.millihz, TSC_HZ, 22) == 0


def test_step_matches_the_model_on_random_input(lib):
    rng = random.Random(9)
    for _ in range(5000):
        width = rng.choice([16, 24, 32, 64])
        c = Counter("r", M64 if width == 64 else (1 << width) - 1, rng.choice([PIT, PM, HPET32]).millihz,
                    rng.choice([0, 1, 100, 10**6, 2**32 - 1]), rng.choice([0, 1, 3, 2**63]))
        a0 = rng.randint(0, 2**64 - 1)
        b0 = (a0 + rng.randint(0, 200)) % 2**64
        a1 = (b0 + rng.randint(-50, 2**rng.randint(1, 40))) % 2**64
        b1 = (a1 + rng.randint(-5, 200)) % 2**64
        prev = rng.randint(0, 2**64 - 1)
        now = (prev + rng.randint(-(2**20), 2**rng.randint(1, 63))) % 2**64
        step(lib, c, prev, a0, b0, now, a1, b1)  # asserts against the model


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_limit_is_where_gap_begins(lib, c):
    limit = lib.shim_unwrap_limit_tsc(*c.args())
    if c.mask == M64:
        assert limit == M64
        return
    assert model_bounds(*c.args(), limit, limit)[1] < c.mask <= model_bounds(*c.args(), limit + 1, limit + 1)[1]
    # about one wrap at the fastest allowed rate
    wrap_tsc = c.mask * 1000 * TSC_HZ * 10**6 // (c.millihz * (10**6 + c.tol_ppm))
    assert abs(limit - wrap_tsc) <= 2 * c.slack * TSC_HZ * 1000 // c.millihz + 1000
    # one TSC tick either side of the limit: exact, then a gap
    assert step(lib, c, 0, 0, 0, 5, limit, limit)["kind"] == "SLOW"
    assert step(lib, c, 0, 0, 0, 5, limit + 1, limit + 1)["kind"] == "GAP"


def test_limits_in_seconds(lib):
    secs = {c.name: lib.shim_unwrap_limit_tsc(*c.args()) / TSC_HZ for c in COUNTERS}
    assert 0.054 < secs["pit"] < 0.0550  # 65536 / 1.193 MHz
    assert 4.68 < secs["pm"] < 4.69  # 2^24 / 3.58 MHz
    assert 42.9 < secs["hpet32"] < 42.95  # 2^32 / 100 MHz
    assert secs["hpet64"] > 1e8


def test_saturating_limits(lib):
    # the slack alone spans a wrap: nothing is ever exact
    assert lib.shim_unwrap_limit_tsc(0xFFFF, PIT.millihz, TSC_HZ, 0, 0xFFFF) == 0
    # a 64-bit counter far faster than the TSC saturates max_expected: a limit below ~0
    assert lib.shim_unwrap_limit_tsc(M64, 2**63, 1, 0, 0) < M64


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_normal_steps(lib, c):
    for gap in (230, 23_000, 2_300_000, 20_000_000):  # 0.1 us .. 8.7 ms
        r, adv = read_pair(lib, c, gap)
        assert r["kind"] == "NORMAL" and r["advance"] == adv


@pytest.mark.parametrize("c", [PIT, PM, HPET32], ids=lambda c: c.name)
def test_just_below_and_above_one_wrap(lib, c):
    limit = lib.shim_unwrap_limit_tsc(*c.args())
    # the counter ran at nominal rate for the longest exact step: nearly a whole wrap, recovered exactly
    r, adv = read_pair(lib, c, limit - 60, bracket=60)
    assert r["kind"] == "NORMAL" and r["advance"] == adv
    assert adv > c.mask * 0.999
    r, _ = read_pair(lib, c, limit - 58, bracket=60)
    assert r["kind"] == "GAP"


GAPS_S = [0.1, 1, 5, 30]
# where a whole wrap fits into the gap (at the top of the rate tolerance), the step is a GAP
EXACT = {
    "pit": [False, False, False, False],  # wraps every 55 ms
    "pm": [True, True, False, False],  # every 4.69 s
    "hpet32": [True, True, True, True],  # every 42.9 s
    "hpet64": [True, True, True, True],
}


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_lost_wraps_in_a_gap(lib, c):
    for gap_s, exact in zip(GAPS_S, EXACT[c.name]):
        r, adv = read_pair(lib, c, int(gap_s * TSC_HZ))
        if exact:
            assert r["kind"] == "NORMAL" and r["advance"] == adv, (gap_s, r)
        else:
            assert r["kind"] == "GAP" and adv > c.mask, (gap_s, r)


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_reference_stood_still_in_a_gap(lib, c):
    for gap_s, exact in zip(GAPS_S, EXACT[c.name]):
        gap = int(gap_s * TSC_HZ)
        r, adv = read_pair(lib, c, gap, stopped_tsc=gap * 6 // 10)
        if exact:
            assert r["kind"] == "SLOW" and r["advance"] == adv, (gap_s, r)
            assert r["advance"] < r["min_expected"]
        else:
            assert r["kind"] == "GAP"  # cannot tell a stop from lost wraps


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_backward_step(lib, c):
    r = step(lib, c, 100, 0, 30, 93, 2300, 2330)
    assert r["kind"] == "BACKWARD" and r["backward"] == 7
    # across the wrap: from 2 back to the top of the range is 4 ticks back
    r = step(lib, c, 2, 0, 30, c.mask - 1, 2300, 2330)
    assert r["kind"] == "BACKWARD" and r["backward"] == 4


def test_backward_half_range_rule(lib):
    # 16 bits: back by exactly half the range is still backward, one more is a jump ahead
    c = PIT
    assert step(lib, c, 40000, 0, 0, 40000 - 32768, 23, 23)["kind"] == "BACKWARD"
    r = step(lib, c, 40000, 0, 0, 40000 - 32769, 23, 23)
    assert r["kind"] == "FAST" and r["advance"] == 32767
    # 64 bits: a difference of 2^63 or more is backward
    assert step(lib, HPET64, 2**63, 0, 0, 0, 23, 23)["backward"] == 2**63
    assert step(lib, HPET64, 0, 0, 0, 2**63 - 1, 23, 23)["kind"] == "FAST"


@pytest.mark.parametrize("c", [PM, HPET32, HPET64], ids=lambda c: c.name)
def test_tsc_jumped_forward(lib, c):
    # 1 ms of real time, but the TSC jumped 0.5 s ahead in it: the counter
    # advanced far less than the TSC time requires
    real = 2_300_000
    jump = TSC_HZ // 2
    adv = c.ticks(real)
    r = step(lib, c, 500, 0, 40, 500 + adv, real + jump, real + jump + 40)
    assert r["kind"] == "SLOW" and r["advance"] == adv and r["min_expected"] > 10 * adv


def test_tsc_jump_on_the_pit_is_a_gap(lib):
    r = step(lib, PIT, 500, 0, 40, 500 + 1193, 2_300_000 + TSC_HZ // 2, 2_300_000 + TSC_HZ // 2 + 40)
    assert r["kind"] == "GAP"


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_tsc_backward(lib, c):
    r = step(lib, c, 10, 10**9, 10**9 + 50, 20, 10**9 + 49, 10**9 + 90)  # second bracket starts before the first ends
    assert r["kind"] == "TSC_BACKWARD" and r["advance"] == 0
    assert step(lib, c, 10, 10**9, 10**9 + 50, 20, 10**6, 10**6 + 50)["kind"] == "TSC_BACKWARD"
    assert step(lib, c, 10, 10**9, 10**9 + 50, 20, 10**9 + 60, 10**9 + 55)["kind"] == "TSC_BACKWARD"  # inverted bracket
    # equal ends are not backward: a bracket of one TSC read
    assert step(lib, c, 10, 10**9, 10**9, 10, 10**9, 10**9)["kind"] == "NORMAL"


@pytest.mark.parametrize("c", COUNTERS, ids=lambda c: c.name)
def test_counter_jumped_forward(lib, c):
    # 1 ms of TSC, and the counter went 20000 ticks further than that allows
    # (less than half the PIT's range, so not mistaken for a step back)
    real = 2_300_000
    adv = c.ticks(real) + 20_000
    r = step(lib, c, 7, 0, 40, (7 + adv) & c.mask, real, real + 40)
    if c is PIT:
        # 1193 + 20000 ticks: back distance 65536 - 21193 > 32768
        assert r["kind"] == "FAST" and r["advance"] == adv
    else:
        assert r["kind"] == "FAST" and r["advance"] == adv and adv > r["max_expected"]


def test_quantised_counter_needs_slack(lib):
    # a counter that moves in steps of 16 ticks (as an emulated one may):
    # 1000 TSC ticks are 43.5 HPET ticks, read as 32 or 48
    tight = Counter("q0", 0xFFFFFFFF, 100_000_000_000, tol_ppm=0, slack=0)
    loose = Counter("q16", 0xFFFFFFFF, 100_000_000_000, tol_ppm=0, slack=16)
    assert step(lib, tight, 0, 0, 0, 48, 1000, 1000)["kind"] == "FAST"
    assert step(lib, tight, 0, 0, 0, 32, 1000, 1000)["kind"] == "SLOW"
    for adv in (32, 48):
        r = step(lib, loose, 0, 0, 0, adv, 1000, 1000)
        assert r["kind"] == "NORMAL" and r["advance"] == adv
    assert step(lib, loose, 0, 0, 0, 44 + 17, 1000, 1000)["kind"] == "FAST"
    # the bounds themselves: 43.478 ticks rounded down and up, widened by the slack
    r = step(lib, loose, 0, 0, 0, 40, 1000, 1000)
    assert (r["min_expected"], r["max_expected"]) == (43 - 16, 44 + 16)
    # slack larger than the expected count floors min_expected at 0
    assert step(lib, loose, 0, 0, 0, 0, 10, 10)["min_expected"] == 0


def test_rate_tolerance_widens_the_bounds(lib):
    # 1 s on a 100 MHz counter with 100 ppm: 99_990_000 .. 100_010_000 ticks
    c = Counter("tol", 0xFFFFFFFF, 100_000_000_000, tol_ppm=100, slack=0)
    r = step(lib, c, 0, 0, 0, 100_000_000, TSC_HZ, TSC_HZ)
    assert (r["min_expected"], r["max_expected"]) == (99_990_000, 100_010_000)
    assert step(lib, c, 0, 0, 0, 100_010_000, TSC_HZ, TSC_HZ)["kind"] == "NORMAL"
    assert step(lib, c, 0, 0, 0, 100_010_001, TSC_HZ, TSC_HZ)["kind"] == "FAST"
    assert step(lib, c, 0, 0, 0, 99_989_999, TSC_HZ, TSC_HZ)["kind"] == "SLOW"


def test_readings_above_the_width_are_masked(lib):
    r = step(lib, PM, 0xAB000010, 0, 40, 0xCD000020, 10280, 10320)  # 16 ticks take 10281 TSC ticks
    assert r["kind"] == "NORMAL" and r["advance"] == 0x10


def test_bounds_round_outward_exactly(lib):
    # t * 1 mHz * (10^6 + 1) / (10^9 * 2 Hz) lands 1/(2 * 10^9) above an
    # integer: max_expected must round up from the exact quotient, which a
    # rounding at each division in turn gets right only if every one rounds up
    t = pow(10**6 + 1, -1, 2 * 10**9)  # t (10^6 + 1) = 1 mod 2 * 10^9
    c = Counter("odd", M64, 1, tol_ppm=1, slack=0, tsc_hz=2)
    r = step(lib, c, 0, 0, 0, 0, t, t)
    assert r["max_expected"] == (t * (10**6 + 1)) // (2 * 10**9) + 1
