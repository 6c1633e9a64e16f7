"""The OS side's pure half (os/os_analysis.c): the sequential-reads table of
back-to-back reads, plain and run-length encoded, against a Python model,
and the kernel log's TSC claims as Linux 6.x prints them."""

from __future__ import annotations

import ctypes
import math
from collections import Counter
from functools import reduce

from hypothesis import given, settings, strategies as st

from helpers.hostlib import as_json


def model(values, check_every):
    deltas, back, largest = [], 0, 0
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        if b < a:
            back += 1
            largest = max(largest, a - b)
            continue
        if check_every and i % check_every == check_every - 1:
            continue
        deltas.append(b - a)
    nonzero = sorted({d for d in deltas if d})
    return {"reads": len(values), "deltas": len(deltas), "zero_deltas": deltas.count(0), "backward": back,
            "largest_backward": largest, "min_step": nonzero[0] if nonzero else 0,
            "step_gcd": reduce(math.gcd, nonzero, 0), "max_delta": max(deltas, default=0),
            "distinct": len(set(deltas)), "bins": sorted(Counter(deltas).items())[:32]}


def analyse(lib, values, check_every):
    arr = (ctypes.c_uint64 * max(1, len(values)))(*values)
    return as_json(lib.shim_os_sequence(arr, len(values), check_every))


def flat(bins):
    return [x for pair in bins for x in pair]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**63), min_size=0, max_size=400), st.sampled_from([0, 1, 2, 64]))
def test_sequence_matches_model(lib, values, check_every):
    got, want = analyse(lib, values, check_every), model(values, check_every)
    assert got["bins"] == flat(want.pop("bins"))
    for k, v in want.items():
        assert got[k] == v, (k, values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=10**12), st.integers(min_value=1, max_value=50)), min_size=1, max_size=200))
def test_run_length_encoded_equals_the_expanded_run(lib, runs):
    # consecutive entries hold different values, as the reading loop writes them
    runs = [r for i, r in enumerate(runs) if i == 0 or r[0] != runs[i - 1][0]]
    values = [v for v, c in runs for _ in range(c)]
    v = (ctypes.c_uint64 * len(runs))(*[r[0] for r in runs])
    c = (ctypes.c_uint64 * len(runs))(*[r[1] for r in runs])
    got = as_json(lib.shim_os_sequence_rle(v, c, len(runs)))
    want = model(values, 0)
    assert got["bins"] == flat(want.pop("bins"))
    for k, val in want.items():
        assert got[k] == val, (k, runs)


def test_a_coarse_clock_steps_by_its_tick(lib):
    # 4 ms ticks read every 10 ns: the table is repeats and one step size
    tick, values = 4_000_000, []
    for t in range(0, 20_000_000, 10):
        values.append(t // tick * tick)
    runs = [(v, values.count(v)) for v in sorted(set(values))]
    v = (ctypes.c_uint64 * len(runs))(*[r[0] for r in runs])
    c = (ctypes.c_uint64 * len(runs))(*[r[1] for r in runs])
    got = as_json(lib.shim_os_sequence_rle(v, c, len(runs)))
    assert got["min_step"] == tick and got["step_gcd"] == tick
    assert got["zero_deltas"] == len(values) - len(runs)
    assert got["bins"] == [0, len(values) - len(runs), tick, len(runs) - 1]


CLAIMS = [
    ("[    0.000000] tsc: Detected 2599.998 MHz processor", "tsc detected", 2599998, "processor"),
    ("<6>[    0.000000] tsc: Detected 2300.000 MHz TSC", "tsc detected", 2300000, "TSC"),
    ("[    1.402115] tsc: Refined TSC clocksource calibration: 2596.119 MHz", "tsc refined", 2596119, ""),
    ("[    0.004000] tsc: Fast TSC calibration using PIT", "tsc calibrated by", 0, "using PIT"),
    ("[    0.396000] tsc: Marking TSC unstable due to clocksource watchdog", "tsc unstable", 0, "clocksource watchdog"),
    ("[    0.512000] clocksource: Switched to clocksource kvm-clock", "clocksource switched", 0, "kvm-clock"),
    ("[    0.1] tsc: Detected 3000 MHz processor", "tsc detected", 3000000, "processor"),
    # the watchdog demoting a clocksource (kernel/time/clocksource.c), and tsc.c's own finding
    ("[  104.3] clocksource: timekeeping watchdog on CPU1: Marking clocksource 'tsc' as unstable because the skew is too large:",
     "clocksource unstable", 0, "tsc"),
    ("[    2.0] TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'.", "tsc unstable", 0,
     "found unstable after boot"),
]


def test_kernel_log_claims(lib):
    for line, what, khz, detail in CLAIMS:
        got = as_json(lib.shim_os_claim(line.encode()))
        assert got == {"type": "os_claim", "claim": True, "what": what, "khz": khz, "detail": detail}, line


def test_lines_that_are_not_claims(lib):
    for line in ("", "tsc: Detected MHz processor", "[0.0] clocksource: tsc-early: mask: 0xffffffffffffffff",
                 "Linux version 6.1.0-56-amd64", "tsc: Refined TSC clocksource calibration: fast"):
        assert as_json(lib.shim_os_claim(line.encode()))["claim"] is False, line
