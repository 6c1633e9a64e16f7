"""A read that held a stop of the machine is no cost of a read
(lib/stats.c: stats_drop_pairs_above, used by the read_cost experiment):
the pairs of a bracketed read and its empty bracket of which either is
longer than the limit are left out, the rest keep their order, and the
longest left out is kept to be reported."""

import ctypes

import pytest
from hypothesis import given, strategies as st


@pytest.fixture(scope="module")
def drop(lib):
    f = lib.stats_drop_pairs_above
    f.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_uint64,
                  ctypes.POINTER(ctypes.c_uint64)]
    f.restype = ctypes.c_size_t

    def run(full, empty, limit):
        n = len(full)
        a = (ctypes.c_uint64 * max(1, n))(*full)
        b = (ctypes.c_uint64 * max(1, n))(*empty)
        longest = ctypes.c_uint64(12345)
        kept = f(a, b, n, limit, ctypes.byref(longest))
        return list(a[:kept]), list(b[:kept]), longest.value

    return run


def test_a_read_that_held_a_stop_is_left_out(drop):
    # 2.3 GHz ticks: reads of 40-60 ticks, one held a 1.5 s stop, one empty bracket a 0.7 s one
    full = [40, 52, 3_450_000_000, 44, 60, 41]
    empty = [20, 21, 22, 1_610_000_000, 20, 20]
    a, b, longest = drop(full, empty, 1_150_000_000)  # 0.5 s
    assert a == [40, 52, 60, 41] and b == [20, 21, 20, 20]
    assert longest == 3_450_000_000


def test_nothing_left_out_when_nothing_is_long(drop):
    a, b, longest = drop([5, 6, 7], [1, 1, 1], 100)
    assert (a, b, longest) == ([5, 6, 7], [1, 1, 1], 0)
    assert drop([], [], 100) == ([], [], 0)


def test_the_limit_itself_is_kept(drop):
    assert drop([100, 101], [100, 0], 100) == ([100], [100], 101)


@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), max_size=60), st.integers(0, 2**40))
def test_against_a_model(drop, pairs, limit):
    a, b, longest = drop([p[0] for p in pairs], [p[1] for p in pairs], limit)
    kept = [p for p in pairs if max(p) <= limit]
    assert list(zip(a, b)) == kept
    assert longest == max((max(p) for p in pairs if max(p) > limit), default=0)
