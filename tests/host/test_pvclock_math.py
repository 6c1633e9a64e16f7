"""kvmclock and Hyper-V reference-page arithmetic (lib/pvclock.h)
against exact integers."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

M64 = (1 << 64) - 1


def exact_pvclock(tsc, stamp, system_time, mul, shift):
    delta = (tsc - stamp) & M64
    delta = delta >> -shift if shift < 0 else (delta << shift) & M64
    return (system_time + ((delta * mul) >> 32)) & M64


def exact_hv(tsc, scale, offset):
    return (((tsc * scale) >> 64) + offset) & M64


@settings(max_examples=500, deadline=None)
@given(st.integers(0, M64), st.integers(0, M64), st.integers(0, 1 << 62), st.integers(0, (1 << 32) - 1),
       st.integers(-32, 31))
def test_pvclock_matches_exact_arithmetic(lib, tsc, stamp, system_time, mul, shift):
    assert lib.shim_pvclock_ns(tsc, stamp, system_time, mul, shift) == exact_pvclock(tsc, stamp, system_time, mul, shift)


def test_pvclock_known_values(lib):
    # a 2.5 GHz TSC: 0.4 ns a tick is mul 0.8 * 2^32 with shift -1... here mul = 2^31 (0.5), shift -1 -> 0.25 ns/tick
    assert lib.shim_pvclock_ns(1_000_000 + 4000, 1_000_000, 7_000_000_000, 1 << 31, -1) == 7_000_000_000 + 1000
    # 1 GHz TSC as KVM encodes it: mul 2^31, shift 1 -> 1 ns per tick
    assert lib.shim_pvclock_ns(10**9, 0, 0, 1 << 31, 1) == 10**9
    # a delta with the top bits set does not overflow the 96-bit product
    assert lib.shim_pvclock_ns(M64, 0, 0, (1 << 32) - 1, 0) == (M64 * ((1 << 32) - 1)) >> 32 & M64


@settings(max_examples=500, deadline=None)
@given(st.integers(0, M64), st.integers(0, M64), st.integers(-(1 << 62), 1 << 62))
def test_hv_reference_time_matches_exact_arithmetic(lib, tsc, scale, offset):
    assert lib.shim_hv_ref_time(tsc, scale, offset) == exact_hv(tsc, scale, offset)


def test_hv_reference_time_known_value(lib):
    # a 2 GHz TSC: 100 ns is 200 ticks, scale = 2^64 / 200
    scale = (1 << 64) // 200
    assert lib.shim_hv_ref_time(2_000_000_000, scale, 5) == 10_000_000 - 1 + 5
