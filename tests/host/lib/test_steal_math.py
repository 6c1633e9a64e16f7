"""KVM steal time against the stolen-time scan (lib/steal.c), with exact
integers: the steal area's layout, ticks to ns, and the comparison's
figures and uncertainties."""

from __future__ import annotations

import ctypes

from hypothesis import given, settings, strategies as st

u64, u32 = ctypes.c_uint64, ctypes.c_uint32
M64 = (1 << 64) - 1


class Window(ctypes.Structure):
    _fields_ = [("steal_before_ns", u64), ("steal_after_ns", u64), ("scan_ticks", u64), ("reads", u64),
                ("over_count", u64), ("over_ticks", u64), ("typical_ticks", u64), ("edge_ticks", u64),
                ("tsc_hz", u64), ("rate_ppm", u32)]


class Comparison(ctypes.Structure):
    _fields_ = [("valid", ctypes.c_bool), ("kvm_ns", u64), ("kvm_uncertainty_ns", u64), ("scan_ns", u64),
                ("scan_uncertainty_ns", u64), ("below_threshold_ns", u64), ("difference_ns", ctypes.c_int64),
                ("agree", ctypes.c_bool)]


def ticks_ns(lib, ticks, hz):
    lib.steal_ticks_ns.argtypes = [u64, u64]
    lib.steal_ticks_ns.restype = u64
    return lib.steal_ticks_ns(ticks, hz)


def compare(lib, **kw) -> Comparison:
    w = Window(**{"rate_ppm": 0, "edge_ticks": 0, **kw})
    c = Comparison()
    lib.steal_compare.argtypes = [ctypes.POINTER(Window), ctypes.POINTER(Comparison)]
    lib.steal_compare.restype = None
    lib.steal_compare(ctypes.byref(w), ctypes.byref(c))
    return c


def test_area_layout(lib):
    # msr.rst: steal at 0, version at 8, flags at 12, preempted at 16, 64 bytes in all
    lib.shim_steal_layout.restype = u64
    assert lib.shim_steal_layout() == 0 | 8 << 8 | 12 << 16 | 16 << 24 | 64 << 32


@settings(max_examples=500, deadline=None)
@given(st.integers(0, M64), st.integers(1, 18 * 10**9))
def test_ticks_to_ns_exact(lib, ticks, hz):
    assert ticks_ns(lib, ticks, hz) == (ticks * 10**9 // hz) & M64


def test_ticks_to_ns_no_rate(lib):
    assert ticks_ns(lib, 12345, 0) == 0


HZ = 2_000_000_000  # 0.5 ns a tick


def test_known_window(lib):
    # 1 s at 2 GHz, 100,000 turns of 1000 ticks (500 ns) typical; 100 gaps over
    # the threshold holding 200 ms; the other 99,900 turns hold 801 ms less, so
    # 99,900 * 1000 ticks + 2,000,000 ticks (1 ms) of jitter
    over_ticks = 400_000_000
    under_ticks = 99_900 * 1000 + 2_000_000
    c = compare(lib, steal_before_ns=5_000_000_000, steal_after_ns=5_190_000_000, scan_ticks=over_ticks + under_ticks,
                reads=100_000, over_count=100, over_ticks=over_ticks, typical_ticks=1000, edge_ticks=40_000,
                tsc_hz=HZ, rate_ppm=10_000)
    assert c.valid
    assert c.kvm_ns == 190_000_000
    assert c.kvm_uncertainty_ns == 20_000  # the edges: 40,000 ticks
    assert c.scan_ns == (over_ticks - 100 * 1000) // 2  # less each gap's own turn: 199.95 ms
    assert c.below_threshold_ns == 1_000_000
    assert c.scan_uncertainty_ns == 1_000_000 + 1_999_500  # and 1 % of the scan's count
    assert c.difference_ns == 9_950_000
    assert not c.agree  # 9.95 ms apart, 3.02 ms allowed


def test_agreement_edge(lib):
    base = dict(steal_before_ns=0, scan_ticks=2_000_000, reads=1000, over_count=1, over_ticks=1_001_000,
                typical_ticks=1000, edge_ticks=0, tsc_hz=HZ)
    # scan: 500 us exactly; below threshold: (999,000 - 999 * 1000) = 0
    assert compare(lib, steal_after_ns=500_000, **base).agree
    assert compare(lib, steal_after_ns=500_000, **base).difference_ns == 0
    # 1 ns apart with nothing allowed: disagree; an edge of 2 ticks (1 ns) allows it
    assert not compare(lib, steal_after_ns=500_001, **base).agree
    assert compare(lib, steal_after_ns=500_001, **{**base, "edge_ticks": 2}).agree
    assert compare(lib, steal_after_ns=500_001, **base).difference_ns == -1


def test_count_that_went_back_is_not_valid(lib):
    c = compare(lib, steal_before_ns=10, steal_after_ns=9, scan_ticks=1000, reads=10, over_count=0, over_ticks=0,
                typical_ticks=100, tsc_hz=HZ)
    assert not c.valid and not c.agree and c.kvm_ns == 0


def test_jitter_below_typical_is_not_negative(lib):
    # turns under the threshold faster than the typical (median) one: no negative uncertainty
    c = compare(lib, steal_before_ns=0, steal_after_ns=0, scan_ticks=50_000, reads=100, over_count=0, over_ticks=0,
                typical_ticks=1000, tsc_hz=HZ)
    assert c.below_threshold_ns == 0 and c.scan_ns == 0 and c.agree


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**9), st.integers(1, 10**4),
       st.integers(0, 10**9), st.integers(0, 10**5))
def test_uncertainties_cover_their_parts(lib, over_count, typical, over_extra, reads_extra, jitter, ppm):
    over_ticks = over_count * typical + over_extra
    reads = over_count + reads_extra
    scan_ticks = over_ticks + reads_extra * typical + jitter
    c = compare(lib, steal_before_ns=0, steal_after_ns=0, scan_ticks=scan_ticks, reads=reads, over_count=over_count,
                over_ticks=over_ticks, typical_ticks=typical, tsc_hz=HZ, rate_ppm=ppm)
    assert c.scan_ns == over_extra * 10**9 // HZ
    assert c.below_threshold_ns == jitter * 10**9 // HZ
    rate = -(-c.scan_ns * ppm // 10**6)
    assert c.scan_uncertainty_ns in (c.below_threshold_ns + rate, c.below_threshold_ns + rate + 1)
