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


def pvclock_tsc_hz(lib, mul, shift):
    import ctypes

    lib.shim_pvclock_tsc_hz.argtypes = [ctypes.c_uint32, ctypes.c_int8]
    lib.shim_pvclock_tsc_hz.restype = ctypes.c_uint64
    return lib.shim_pvclock_tsc_hz(mul, shift)


def test_kvmclock_scale_claims_the_rate_it_encodes(lib):
    # 1 GHz: 1 ns a tick, mul 2^31 with shift 1
    assert pvclock_tsc_hz(lib, 1 << 31, 1) == 1_000_000_000
    # 2.5 GHz: 0.4 ns a tick; KVM (kvm_get_time_scale) gives mul = 0.8 * 2^32, shift -1
    assert abs(pvclock_tsc_hz(lib, int(0.8 * 2**32), -1) - 2_500_000_000) <= 1
    assert pvclock_tsc_hz(lib, 0, 0) == 0 and pvclock_tsc_hz(lib, 1 << 31, 40) == 0


@settings(max_examples=500, deadline=None)
@given(st.integers(1, (1 << 32) - 1), st.integers(-8, 8))
def test_kvmclock_scale_rate_is_the_exact_quotient(lib, mul, shift):
    exact = (10**9 << 32) // mul
    exact = exact >> shift if shift >= 0 else exact << -shift
    assert pvclock_tsc_hz(lib, mul, shift) == (exact if exact <= M64 else 0)
