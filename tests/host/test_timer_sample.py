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
