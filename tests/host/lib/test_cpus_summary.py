"""The "cpus" report for many CPUs (lib/cpus_analysis.c): when it
summarises, which APs stand out and why, the median interval width, the
pair of CPUs whose difference is bounded least tightly (CPU 0 among them)
and the offsets' spread. Known answers worked by hand."""

from __future__ import annotations

import ctypes

import pytest

from helpers.hostlib import as_json

i64, u32 = ctypes.c_int64, ctypes.c_uint32

UNMEASURED, OFFSET, WIDE, RATE, NO_RATE, WARPS, NO_WARP_TEST, CPUID = (1 << i for i in range(8))
BITS = 0x03


@pytest.fixture(scope="module")
def ca(lib):
    lib.shim_cpus_summary.restype = ctypes.c_char_p
    lib.shim_cpus_summary.argtypes = [ctypes.POINTER(i64), u32, u32]
    return lib


def ap(cpu, lo, hi, *, measured=True, warps=0, cross=100, rate=(0, 1000), bits=BITS, facts=True):
    """One AP: interval [lo, hi], warps (None: not tested) in cross comparisons, rate (mppm, unc) or None."""
    return [cpu, int(measured), lo, hi, 1000,
            int(warps is not None), warps or 0, 0, 0, 0,
            int(rate is not None), *(rate or (0, 0)),
            cross if warps is not None else 0, int(facts), bits]


def summary(ca, rows, bsp_bits=BITS):
    flat = [v for r in rows for v in r]
    return as_json(ca.shim_cpus_summary((i64 * max(1, len(flat)))(*flat), len(rows), bsp_bits))


def test_eight_cpus_are_shown_in_full_nine_are_summarised(ca):
    assert summary(ca, [ap(i, -10, 10) for i in range(1, 8)])["in_full"]
    assert not summary(ca, [ap(i, -10, 10) for i in range(1, 9)])["in_full"]


def test_a_quiet_machine_has_no_exceptions(ca):
    s = summary(ca, [ap(i, -50, 50 + i) for i in range(1, 32)])
    assert set(s["flags"]) == {0}
    assert s["median_width"] == 100 + 16  # widths 101..131, the 16th of 31 (index 15)


def test_each_reason_to_stand_out(ca):
    rows = [ap(i, -50, 50) for i in range(1, 20)]
    rows += [
        ap(20, 100, 200),                     # excludes 0: ahead
        ap(21, -5000, 5000),                  # 100x the median width
        ap(22, -50, 50, rate=(5000, 1000)),   # rate excludes 0
        ap(23, -50, 50, rate=None),           # no rate
        ap(24, -50, 50, warps=3),             # warps
        ap(25, -50, 50, warps=None),          # warp test not run
        ap(26, -50, 50, cross=0),             # the lock never passed
        ap(27, -50, 50, bits=BITS | 0x04),    # CPUID differs
        ap(28, 0, 0, measured=False, rate=None, warps=None),
        ap(29, 60, 40),                       # empty: inconsistent
    ]
    flags = dict(zip(range(1, 30), summary(ca, rows)["flags"]))
    assert all(flags[i] == 0 for i in range(1, 20))
    assert flags[20] == OFFSET
    assert flags[21] == WIDE
    assert flags[22] == RATE
    assert flags[23] == NO_RATE
    assert flags[24] == WARPS
    assert flags[25] == NO_WARP_TEST
    assert flags[26] == NO_WARP_TEST
    assert flags[27] == CPUID
    assert flags[28] == UNMEASURED
    assert flags[29] == OFFSET


def test_wide_means_over_ten_times_the_median(ca):
    rows = [ap(i, -50, 50) for i in range(1, 10)] + [ap(10, -500, 500), ap(11, -500, 510)]
    flags = summary(ca, rows)["flags"]
    assert flags[9] == 0  # exactly 10x: not wide
    assert flags[10] == WIDE


def test_the_worst_pair_is_the_widest_derived_interval(ca):
    # CPU 3 [-10, 400], CPU 5 [-300, 20]: 3 - 5 lies in [-30, 700], worst 700
    rows = [ap(1, -5, 5), ap(3, -10, 400), ap(5, -300, 20), ap(7, -1, 1)]
    s = summary(ca, rows)
    assert s["pair"] == [3, 5, -30, 700, 700]


def test_the_worst_pair_can_be_with_cpu_0(ca):
    # one AP only: the pair is it and CPU 0, its own interval
    s = summary(ca, [ap(4, -20, 80)])
    assert s["pair"] == [4, 0, -20, 80, 80]


def test_no_pair_and_no_spread_without_an_interval(ca):
    s = summary(ca, [ap(1, 0, 0, measured=False), ap(2, 5, 1)])
    assert s["pair"] is None and s["spread"] is None


def test_the_spread_includes_cpu_0(ca):
    # midpoints 100 (CPU 2) and 30 (CPU 1): CPU 0's 0 is the lowest
    s = summary(ca, [ap(1, 20, 40), ap(2, 90, 110)])
    assert s["spread"] == [0, 0, 100, 2, 0, 110]
    s = summary(ca, [ap(1, -40, -20), ap(2, -5, 15), ap(3, 10, 30)])
    assert s["spread"] == [-30, 1, 20, 3, -40, 30]
