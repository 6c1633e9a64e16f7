"""A stop of the machine, sized (lib/rtc_fit.c rtc_jump_across,
rtc_largest_discontinuity; lib/drift_analysis.c drift_stop_judge), by
known answers: RTC edges made from a wall clock that ran on while the TSC
stood still for a chosen time (TCG), or ran with it (KVM), give back that
step within the bound they state, and each clock's verdict follows from
its advance against the stop's length."""

import ctypes
import random
from fractions import Fraction

import pytest

from helpers.hostlib import as_json, xf_value

HZ = 2_299_998_000
NS = 10**9


def edges_across(stop_s, t_stop_s=4.3, n_before=5, n_after=5, width=400, late_first_ns=0, sod0=50000, seed=1):
    """UIP edges at whole wall seconds; the TSC stands still for stop_s of
    wall time at wall time t_stop_s. The first edge after the stop can end
    late_first_ns late (QEMU's update timer after a resume)."""
    rng = random.Random(seed)
    a, b, sod = [], [], []
    secs = [k for k in range(0, 40) if k < t_stop_s][-n_before:] + \
        [k for k in range(0, 40) if k > t_stop_s + stop_s][:n_after]
    first_after = True
    for k in secs:
        tsc_s = Fraction(k) if k < t_stop_s else Fraction(k) - Fraction(stop_s)
        t = 10**12 + int(tsc_s * HZ)
        if k > t_stop_s and first_after:
            t += late_first_ns * HZ // NS
            first_after = False
        lo = t - rng.randint(0, width)
        a.append(lo)
        b.append(lo + width)
        sod.append(sod0 + k)
    at = 10**12 + int(Fraction(t_stop_s) * HZ)
    return a, b, sod, at


def jump(lib, a, b, sod, at, tsc_per_s=HZ, u_rel_ppb=100, rms=0, hz=HZ):
    n = len(a)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    return as_json(lib.shim_rtc_jump((u64 * n)(*a), (u64 * n)(*b), (u32 * n)(*sod), n, at, tsc_per_s, u_rel_ppb, rms, hz))


@pytest.mark.parametrize("stop_s", [Fraction(3000855, 10**6), Fraction(5, 1), Fraction(1, 2), Fraction(1234567, 10**6)])
def test_the_rtc_step_is_the_stop_within_its_bound(lib, stop_s):
    a, b, sod, at = edges_across(stop_s)
    j = jump(lib, a, b, sod, at)
    assert j["found"]
    step, u = xf_value(j["step_ns"]), xf_value(j["u_ns"])
    assert abs(step - stop_s * NS) <= u, (float(step), float(u))
    assert u < 2000  # far better than a second: two half brackets and the rate's share
    assert j["largest_at"] != 0 or stop_s < Fraction(1, 2) + Fraction(1, 10**3)


def test_a_late_first_edge_after_the_stop_is_passed_over(lib):
    a, b, sod, at = edges_across(Fraction(3), late_first_ns=13_000_000)
    j = jump(lib, a, b, sod, at)
    assert abs(xf_value(j["step_ns"]) - 3 * NS) <= xf_value(j["u_ns"]), j
    # with only one edge after the stop there is no next to take: the late one, and its error
    a, b, sod, at = edges_across(Fraction(3), late_first_ns=13_000_000, n_after=1)
    j = jump(lib, a, b, sod, at)
    assert abs(xf_value(j["step_ns"]) - (3 * NS - 13_000_000)) < 2000, j


def test_no_step_when_the_tsc_ran_on(lib):
    a, b, sod, at = edges_across(0)
    j = jump(lib, a, b, sod, at)
    assert abs(xf_value(j["step_ns"])) <= xf_value(j["u_ns"])
    assert j["largest_at"] == 0


def test_the_rate_s_uncertainty_widens_the_bound(lib):
    a, b, sod, at = edges_across(Fraction(3))
    tight = jump(lib, a, b, sod, at, u_rel_ppb=0)
    # the edges used: wall second 4 before the stop, 9 after it (8, the first, passed over): 2 s of TSC time
    loose = jump(lib, a, b, sod, at, u_rel_ppb=10_000)  # 10 ppm over 2 s: 20 us
    assert xf_value(loose["u_ns"]) - xf_value(tight["u_ns"]) == pytest.approx(20_000, rel=0.001)
    rms = jump(lib, a, b, sod, at, rms=HZ // 1000)  # a 1 ms residual RMS: 2 ms more, and 0.1 ppm of 2 s
    assert xf_value(rms["u_ns"]) - xf_value(tight["u_ns"]) == pytest.approx(2e6 + 200, rel=0.001)


def test_not_held_or_no_rate(lib):
    a, b, sod, at = edges_across(Fraction(3))
    assert not jump(lib, a, b, sod, a[0] - 1)["found"]
    assert not jump(lib, a, b, sod, b[-1] + 10**9)["found"]
    assert not jump(lib, a, b, sod, at, tsc_per_s=0)["found"]


STILL, RAN, PARTLY, SHORT = 0, 1, 2, 3


@pytest.mark.parametrize("advanced, u, wall, u_wall, verdict", [
    (0, 10_000_000, 3_000_000_000, 10_000_000, STILL),
    (7_500_000, 10_000_000, 3_000_000_000, 10_000_000, STILL),   # the HPET under KVM: 7.5 ms
    (3_000_500_000, 10_000_000, 3_000_000_000, 10_000_000, RAN),
    (1_500_000_000, 10_000_000, 3_000_000_000, 10_000_000, PARTLY),
    (-3_000_000_000, 10_000_000, 3_000_000_000, 10_000_000, PARTLY),
    (0, 10_000_000, 50_000_000, 10_000_000, SHORT),              # 50 ms is within twice (10 + 10 + 10 ms)
    (30_000_001, 0, 3_000_000_000, 20_000_000, PARTLY),
    (30_000_000, 0, 3_000_000_000, 20_000_000, STILL),
])
def test_stop_verdicts(lib, advanced, u, wall, u_wall, verdict):
    assert lib.shim_stop_judge(advanced, u, wall, u_wall) == verdict


def test_a_lone_bad_edge_is_no_stop_beside_a_real_one(lib):
    """An edge whose clock read one second off (or that came a second late)
    makes two intervals disagree, but its step, taken to the edge after,
    is nothing: the stop is the largest step, not the largest disagreement."""
    a, b, sod, at = edges_across(Fraction(3), n_before=4, n_after=8)
    sod[-3] += 1  # a misread: the interval before it disagrees by a second
    j = jump(lib, a, b, sod, at)
    assert j["largest_found"]
    assert abs(xf_value(j["largest_step_ns"]) - 3 * NS) <= xf_value(j["u_ns"]), j
    assert a[3] <= j["largest_jump_at"] <= b[4], j
