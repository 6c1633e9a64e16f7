"""The "cpus" experiment's pure analysis (lib/cpus_analysis.c): the CPUID
time bits and APIC ID of one CPU, whether a tsc_skew= write took, which CPU
stands out among the offset intervals against CPU 0, the verdict they give,
and when the pairs of the other CPUs are listed. Known answers, worked by
hand; simulated CPUs with a known offset for the verdict."""

from __future__ import annotations

import ctypes
import random

import pytest

from helpers.hostlib import as_json

i64, u64, u32 = ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint32
INT64_MAX, INT64_MIN, UINT64_MAX = 2**63 - 1, -(2**63), 2**64 - 1

TSC, RDTSCP, INVARIANT, DEADLINE, ADJUST, X2APIC = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


@pytest.fixture(scope="module")
def ca(lib):
    lib.shim_cpus_time_bits.restype = ctypes.c_char_p
    lib.shim_cpus_time_bits.argtypes = [ctypes.POINTER(u32)]
    lib.shim_cpus_tally.restype = ctypes.c_char_p
    lib.shim_cpus_tally.argtypes = [ctypes.POINTER(i64), u32, u64]
    lib.cpus_skew_took.restype = ctypes.c_bool
    lib.cpus_skew_took.argtypes = [i64, i64]
    lib.cpus_pairs_listed.restype = ctypes.c_bool
    lib.cpus_pairs_listed.argtypes = [u32]
    return lib


REGS = ("l1_ebx", "l1_ecx", "l1_edx", "l7_ebx", "lb_ebx", "lb_edx", "e1_edx", "e7_edx")


def time_bits(ca, **regs):
    assert set(regs) <= set(REGS)
    raw = (u32 * len(REGS))(*(regs.get(name, 0) for name in REGS))
    return as_json(ca.shim_cpus_time_bits(raw))


# --- CPUID time bits ---

@pytest.mark.parametrize("reg, bit, want", [
    ("l1_edx", 4, TSC),          # CPUID.01h:EDX[4] TSC
    ("l1_ecx", 24, DEADLINE),    # CPUID.01h:ECX[24] TSC-deadline
    ("l1_ecx", 21, X2APIC),      # CPUID.01h:ECX[21] x2APIC
    ("l7_ebx", 1, ADJUST),       # CPUID.(07h,0):EBX[1] IA32_TSC_ADJUST
    ("e1_edx", 27, RDTSCP),      # CPUID.8000_0001h:EDX[27] RDTSCP
    ("e7_edx", 8, INVARIANT),    # CPUID.8000_0007h:EDX[8] invariant TSC
])
def test_each_time_bit_from_its_own_register_bit(ca, reg, bit, want):
    assert time_bits(ca, **{reg: 1 << bit})["bits"] == want
    # every other bit of that register says nothing about time
    assert time_bits(ca, **{reg: 0xFFFFFFFF & ~(1 << bit)})["bits"] & want == 0


def test_qemu_tcg_max_cpu(ca):
    # the boot CPU's leaves as a TCG boot with -cpu max recorded them (the
    # cpuid records of a 4-CPU run; QEMU 7.2, AuthenticAMD "QEMU TCG CPU"):
    # a TSC and RDTSCP, nothing else; the table printed 0x03
    r = time_bits(ca, l1_ebx=0x00040800, l1_ecx=0xF6D8320B, l1_edx=0x1FCBFBFD, l7_ebx=0x01D843A9,
                  e1_edx=0xEDD3FBFD, e7_edx=0)
    assert r == {"type": "cpus_time_bits", "bits": TSC | RDTSCP, "apic_id": 0}


def test_every_bit(ca):
    r = time_bits(ca, l1_ecx=(1 << 24) | (1 << 21), l1_edx=1 << 4, l7_ebx=1 << 1, e1_edx=1 << 27, e7_edx=1 << 8)
    assert r["bits"] == 0x3F


def test_apic_id_from_leaf_0b_where_it_is_implemented(ca):
    # the 8-bit initial APIC ID, CPUID.01h:EBX[31:24] ...
    assert time_bits(ca, l1_ebx=0xFE000000)["apic_id"] == 254
    # ... unless leaf 0Bh answers (EBX non-zero): its EDX is the full x2APIC ID
    assert time_bits(ca, l1_ebx=0xFF000000, lb_ebx=1, lb_edx=300)["apic_id"] == 300
    # EBX 0: leaf 0Bh is not implemented (or was not asked), its EDX means nothing
    assert time_bits(ca, l1_ebx=0x05000000, lb_ebx=0, lb_edx=300)["apic_id"] == 5


# --- tsc_skew= took or not ---

@pytest.mark.parametrize("ticks, moved, took", [
    (1_000_000, 1_000_024, True),      # moved by the skew and the 24 ticks between the two reads
    (1_000_000, 24, False),            # TCG ignores the write: only the reads' own distance
    (1_000_000, 500_001, True),        # within half of it
    (1_000_000, 500_000, False),       # exactly half off is not within
    (1_000_000, 1_499_999, True),
    (1_000_000, 1_500_000, False),
    (-1000, -990, True),
    (-1000, 1000, False),              # the wrong way
    (100_000_000, -100_000_000, False),
    (INT64_MAX, INT64_MIN, False),     # no overflow (UBSan would stop the test)
    (INT64_MIN, INT64_MAX, False),
    (INT64_MIN, INT64_MIN, True),
    (1, 1, False),                     # half of 1 tick is 0: nothing is within it
])
def test_skew_took(ca, ticks, moved, took):
    assert ca.cpus_skew_took(ticks, moved) is took


# --- the tally and the verdict ---

def row(cpu, lo, hi, *, measured=True, exchanges=1000, warps=None, kvm=None, rate=None):
    """One AP as the report sees it: its first interval [lo, hi], warps (None: not tested),
    kvmclock (warps, cross) or None, rate (mppm, uncertainty) or None."""
    return [cpu, int(measured), lo, hi, exchanges,
            int(warps is not None), warps or 0,
            int(kvm is not None), *(kvm or (0, 0)),
            int(rate is not None), *(rate or (0, 0))]


def tally(ca, rows, tsc_khz=1_000_000):
    flat = [v for r in rows for v in r]
    arr = (i64 * max(1, len(flat)))(*flat)
    return as_json(ca.shim_cpus_tally(arr, len(rows), tsc_khz))


def test_the_four_cpu_tcg_run(ca):
    # tests' TCG boot with 4 CPUs: every interval [-52, 104] at 2596.12 MHz (40.1 ns), rates holding 0
    rows = [row(1, -52, 104, warps=0, rate=(16_572_547, 23_160_430)),
            row(2, -52, 104, rate=(-28_218_945, 28_342_127)),
            row(3, -52, 104, warps=0, rate=(13, 168))]
    t = tally(ca, rows, tsc_khz=2_596_120)
    assert t["compared"] == 3 and t["all_contain"] and t["rates_agree"] and t["warps"] == 0
    assert (t["worst"], t["worst_ticks"], t["worst_excludes"]) == (1, 104, False)  # the first on a tie
    assert t["outcome"] == "synchronised"


def test_the_largest_bound_stands_out(ca):
    t = tally(ca, [row(1, -10, 20), row(2, -300, 5), row(3, -1, 250)])
    assert (t["worst"], t["worst_ticks"]) == (2, 300)
    assert t["outcome"] == "synchronised"


def test_coarse_bounds_say_how_little_they_tell(ca):
    # 1 GHz: one tick is one ns; the bound is 10000 ns
    assert tally(ca, [row(1, -10_000, 10_000)])["outcome"] == "synchronised"
    assert tally(ca, [row(1, -10_000, 10_001)])["outcome"] == "sync_coarse"
    # the same ticks at 2 GHz are half as many ns
    assert tally(ca, [row(1, -10_000, 20_000)], tsc_khz=2_000_000)["outcome"] == "synchronised"
    assert tally(ca, [row(1, -10_000, 20_002)], tsc_khz=2_000_000)["outcome"] == "sync_coarse"


def test_an_interval_that_excludes_zero_comes_first(ca):
    # CPU 1's interval is wider but holds 0; CPU 2's excludes it
    t = tally(ca, [row(1, -5000, 5000), row(2, 1000, 1200), row(3, -4000, 4000)])
    assert (t["worst"], t["worst_ticks"], t["worst_excludes"]) == (2, 1200, True)
    assert not t["all_contain"] and t["outcome"] == "offset"
    # of two that exclude 0, the larger |offset|
    t = tally(ca, [row(1, 100, 200), row(2, -3000, -2000), row(3, 150, 160)])
    assert (t["worst"], t["worst_ticks"]) == (2, 3000) and t["outcome"] == "offset"


def test_an_empty_interval_cannot_be_bounded(ca):
    # lo > hi: the TSCs moved against each other during the exchanges
    t = tally(ca, [row(1, 100, 200), row(2, 10, 5)])
    assert (t["worst"], t["worst_ticks"], t["worst_excludes"]) == (2, UINT64_MAX, True)
    assert t["outcome"] == "unbounded"
    # no exchange at all (the interval is the init's): inconsistent too
    t = tally(ca, [row(1, INT64_MIN, INT64_MAX, exchanges=0)])
    assert t["compared"] == 1 and t["worst"] == 1 and t["outcome"] == "unbounded"


def test_warps(ca):
    t = tally(ca, [row(1, -10, 10, warps=2), row(2, -10, 10, warps=1), row(3, -10, 10)])
    assert t["warps"] == 3 and t["outcome"] == "warps"
    # an offset that excludes 0 is named before the warps
    assert tally(ca, [row(1, 20, 30, warps=5)])["outcome"] == "offset"


def test_rates(ca):
    # a rate whose interval touches 0 agrees; one beside it does not
    assert tally(ca, [row(1, -10, 10, rate=(-500, 500)), row(2, -10, 10, rate=(500, 500))])["rates_agree"]
    t = tally(ca, [row(1, -10, 10, rate=(5000, 1000))])
    assert not t["rates_agree"] and t["outcome"] == "rate"
    assert tally(ca, [row(1, -10, 10, rate=(-5000, 4999))])["outcome"] == "rate"
    # warps are named before the rate
    assert tally(ca, [row(1, -10, 10, warps=1, rate=(5000, 1000))])["outcome"] == "warps"
    # extreme figures do not overflow
    assert tally(ca, [row(1, -10, 10, rate=(INT64_MAX, UINT64_MAX >> 1))])["rates_agree"]
    assert not tally(ca, [row(1, -10, 10, rate=(INT64_MIN, 1))])["rates_agree"]


def test_kvmclock_warps_are_summed_apart(ca):
    t = tally(ca, [row(1, -10, 10, kvm=(0, 40)), row(2, -10, 10, kvm=(3, 60))])
    assert (t["kvm_warps"], t["kvm_cross"]) == (3, 100)
    assert t["warps"] == 0 and t["outcome"] == "synchronised"


def test_nothing_compared(ca):
    t = tally(ca, [])
    assert (t["compared"], t["worst"], t["outcome"]) == (0, -1, "not_compared")
    # CPUs that never answered are not compared, whatever their figures say
    t = tally(ca, [row(1, 10, 5, measured=False, warps=3), row(2, 100, 200, measured=False)])
    assert (t["compared"], t["worst"], t["warps"], t["outcome"]) == (0, -1, 0, "not_compared")


def intervals(rng, d, n=50):
    """[lo, hi] from n simulated exchanges with a CPU whose TSC is CPU 0's plus d."""
    t, lo, hi = 10**12, INT64_MIN, INT64_MAX
    for _ in range(n):
        before = t
        t += rng.randint(1, 400)
        theirs = t + d
        t += rng.randint(1, 400)
        lo, hi = max(lo, theirs - t), min(hi, theirs - before)
    return lo, hi


def test_the_verdict_holds_the_truth(ca):
    """Simulated CPUs with known offsets: all at 0 is never called
    unsynchronised; an offset verdict names a CPU that really is off, on the
    side it really is."""
    rng = random.Random(7)
    for trial in range(200):
        offsets = {cpu: rng.choice([0, 0, 0, rng.randint(-3000, 3000)]) for cpu in range(1, rng.randint(2, 8))}
        rows = [row(cpu, *intervals(rng, d)) for cpu, d in offsets.items()]
        t = tally(ca, rows)
        if not any(offsets.values()):
            assert t["outcome"] in ("synchronised", "sync_coarse"), (offsets, t)
        if t["outcome"] == "offset":
            lo, hi = rows[[r[0] for r in rows].index(t["worst"])][2:4]
            d = offsets[t["worst"]]
            assert d != 0 and lo <= d <= hi and (lo > 0) == (d > 0), (offsets, t)
        for r in rows:
            assert r[2] <= offsets[r[0]] <= r[3]


# --- the pairs of the other CPUs ---

def test_pairs_listed_from_two_aps_to_eight_cpus(ca):
    assert [ca.cpus_pairs_listed(n) for n in range(10)] == [False, False] + [True] * 6 + [False, False]
    assert not ca.cpus_pairs_listed(63)
    assert not ca.cpus_pairs_listed(2**32 - 1)  # no wrap in aps + 1
