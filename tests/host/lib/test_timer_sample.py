"""How many events a timer cell takes and what its tail is called
(lib/timer_analysis.c): the main rows (busy and hlt at 10 us and 100 us) take
at least 100 events, within a budget 5/2 the profile's; a p99 is named only
from 100 events, and below that the figure is the maximum, which the
percentile by rank equals (checked against numpy's inverted CDF)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st


class Wait(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 16), ("mwait", ctypes.c_bool), ("hlt", ctypes.c_bool), ("hint", ctypes.c_uint32)]


@pytest.fixture(scope="module")
def s(lib):
    lib.timer_main_cell.restype = ctypes.c_bool
    lib.timer_main_cell.argtypes = [ctypes.POINTER(Wait), ctypes.c_uint]
    lib.timer_cell_plan.restype = None
    lib.timer_cell_plan.argtypes = [ctypes.c_uint32, ctypes.c_uint64, ctypes.c_bool, ctypes.c_uint32,
                                    ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)]
    return lib


def plan(s, events, budget, main, most=1024):
    n, b = ctypes.c_uint32(), ctypes.c_uint64()
    s.timer_cell_plan(events, budget, main, most, ctypes.byref(n), ctypes.byref(b))
    return n.value, b.value


def test_main_cells_are_busy_and_hlt_at_10_and_100_us(s):
    busy, hlt, mwait = Wait(b"busy"), Wait(b"hlt", hlt=True), Wait(b"mwait_c1", mwait=True)
    got = {(w.name.decode(), d) for w in (busy, hlt, mwait) for d in range(4) if s.timer_main_cell(ctypes.byref(w), d)}
    assert got == {("busy", 1), ("busy", 2), ("hlt", 1), ("hlt", 2)}


def test_plan(s):
    assert plan(s, 32, 80, True) == (100, 200)      # quick: raised for a p99
    assert plan(s, 32, 80, False) == (32, 80)       # the other rows as the profile says
    assert plan(s, 256, 600, True) == (256, 600)    # standard already carries one
    assert plan(s, 32, 80, True, most=64) == (64, 200)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**6, 10**9), min_size=1, max_size=99))
def test_below_100_events_the_p99_by_rank_is_the_maximum(lib, values):
    arr = (ctypes.c_int64 * len(values))(*values)
    import json
    r = json.loads(lib.shim_latency(arr, len(values), 250).decode())
    assert r["p99"] == max(values) == int(np.percentile(values, 99, method="inverted_cdf"))


# --- time away: the reference stood still while the TSC ran ---

def stood_still(lib, advance, a0, b0, a1, b1, per_tsc, u):
    from fractions import Fraction
    from helpers.hostlib import XF

    def xf(f):
        f = Fraction(f)
        return lib.xf_div(lib.xf_from_u64(f.numerator), lib.xf_from_u64(f.denominator))

    lib.timer_stood_still_tsc.restype = ctypes.c_uint64
    lib.timer_stood_still_tsc.argtypes = [ctypes.c_uint64] * 5 + [XF, XF]
    return lib.timer_stood_still_tsc(advance, a0, b0, a1, b1, xf(per_tsc), xf(u))


def test_stood_still_known_answers(lib):
    from fractions import Fraction
    import math
    hpet = Fraction(1, 10)  # 100 MHz against a 1 GHz TSC
    # 1 ms of TSC, 1 ms of HPET: nothing
    assert stood_still(lib, 100_000, 0, 10, 1_000_010, 1_000_020, hpet, 0) == 0
    # a KVM pause of 1 s: 1.001 s of TSC, 1 ms of HPET
    got = stood_still(lib, 100_000, 0, 10, 1_001_000_010, 1_001_000_020, hpet, 0)
    assert got == 1_001_000_000 - (100_001 * 10)
    # with a 1 ppm uncertainty (3 sigma) the advance covers a little more
    want = 1_001_000_000 - math.ceil(Fraction(100_001) / (hpet * (1 - Fraction(3, 10**6))))
    assert stood_still(lib, 100_000, 0, 10, 1_001_000_010, 1_001_000_020, hpet, Fraction(1, 10**6)) == want
    # a TSC that went back, or brackets that overlap: nothing to say
    assert stood_still(lib, 5, 100, 200, 150, 300, hpet, 0) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(0, 10**10), st.integers(1, 10**4), st.integers(1, 10**4))
def test_stood_still_never_exceeds_the_stop(lib, run_ns, stop_ns, w0, w1):
    # a counter that ran run_ns and stood still stop_ns: never more than stop_ns is said
    from fractions import Fraction
    per = Fraction(3_579_545, 10**9)  # the PM timer against a 1 GHz TSC
    advance = int(run_ns * per)
    a0, b0 = 0, w0
    a1 = b0 + run_ns + stop_ns
    got = stood_still(lib, advance, a0, b0, a1, a1 + w1, per, 0)
    assert got <= stop_ns
    assert got >= stop_ns - 2 * (1 / per)  # within a tick or so of it
