"""Timer lateness summaries (lib/latency.c) against numpy, and the
TSC-deadline errata table (lib/deadline_errata.c)."""

from __future__ import annotations

import ctypes

import numpy as np
from hypothesis import given, settings, strategies as st

from helpers.hostlib import as_json


def summarise(lib, values, edge=250):
    arr = (ctypes.c_int64 * max(1, len(values)))(*values)
    return as_json(lib.shim_latency(arr, len(values), edge))


def expected_bin(v, edge, bins=20):
    if v < 0:
        return 0
    b, e = 1, edge
    while b < bins - 1 and v >= e:
        b, e = b + 1, e * 2
    return b


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-10**9, max_value=10**12), min_size=1, max_size=300),
       st.integers(min_value=1, max_value=10**6))
def test_summary_matches_numpy(lib, values, edge):
    s = summarise(lib, values, edge)
    a = np.array(values, dtype=np.int64)
    assert s["n"] == len(values)
    assert s["min"] == a.min() and s["max"] == a.max()
    for key, q in (("p50", 50), ("p99", 99), ("p999", 99.9)):
        assert s[key] == int(np.percentile(a, q, method="inverted_cdf")), (key, values)
    assert s["early"] == int((a < 0).sum())
    assert abs(s["mean_x1000"] - round(sum(values) * 1000 / len(values))) <= 1
    want = [0] * 20
    for v in values:
        want[expected_bin(v, edge)] += 1
    assert s["bins"] == want


def test_bins_double_from_the_first_edge(lib):
    s = summarise(lib, [0, 249, 250, 499, 500, 10**12], 250)
    assert s["bin_low"][:4] == [0, 250, 500, 1000]
    assert s["bins"][1] == 2 and s["bins"][2] == 2 and s["bins"][3] == 1 and s["bins"][19] == 1


def test_early_values_sort_below_zero(lib):
    s = summarise(lib, [5, -3, 7, -1000])
    assert s["min"] == -1000 and s["early"] == 2 and s["bins"][0] == 2


def erratum(lib, family, model, stepping):
    return as_json(lib.shim_deadline_erratum(family, model, stepping))


def test_listed_parts_and_their_microcode(lib):
    assert erratum(lib, 6, 0x3C, 3) == {"type": "erratum", "listed": True, "part": "Haswell", "min_microcode": 0x22}
    assert erratum(lib, 6, 0x9E, 9)["min_microcode"] == 0x52
    assert erratum(lib, 6, 0x3F, 2)["min_microcode"] == 0x3a   # Haswell-EP
    assert erratum(lib, 6, 0x3F, 4)["min_microcode"] == 0x0f   # Haswell-EX
    assert erratum(lib, 6, 0x56, 5)["min_microcode"] == 0x0e000003
    assert erratum(lib, 6, 0x55, 7)["listed"] and erratum(lib, 6, 0x55, 7)["min_microcode"] == 0


def test_unlisted_parts(lib):
    assert not erratum(lib, 6, 0x3F, 3)["listed"]     # a Haswell-X stepping the table does not name
    assert not erratum(lib, 6, 0x8F, 0)["listed"]     # Sapphire Rapids
    assert not erratum(lib, 0x19, 0x3C, 0)["listed"]  # an AMD family with the same model number
