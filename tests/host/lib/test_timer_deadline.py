"""When each timer fires (lib/timer_deadline.c): the window [earliest,
earliest + width] from each mode's own semantics and tick. Known answers by
hand (QEMU's rates: the TCG PIT at 1,193,182 Hz, the HPET at 100 MHz, the
APIC timer at 1 GHz, the TSC at 1 GHz under -icount shift=0), and a model of
each device, with the phase of its clock and the instant of the write drawn
at random, whose firing must fall inside the window: an 8254 in mode 0 that
loads the count on the first falling CLK edge after the write and raises OUT
N edges later (the data sheet's N + 1 pulses), an HPET whose counter steps at
its tick edges and matches the comparator at the edge it reaches it, an APIC
timer whose divided clock decrements the count from its first edge after the
write (and QEMU's, which fires N + 1 ticks after it), and the TSC-deadline
timer at its value."""

from __future__ import annotations

import ctypes
from fractions import Fraction
import math

import pytest
from hypothesis import given, settings, strategies as st

from helpers.hostlib import XF, xf_value

TSC_DEADLINE, LAPIC_ONESHOT, HPET_MATCH, PIT_MODE0 = range(4)


class Fire(ctypes.Structure):
    _fields_ = [("earliest", ctypes.c_uint64), ("width", ctypes.c_uint64)]


@pytest.fixture(scope="module")
def d(lib):
    lib.timer_tsc_per_tick.restype = XF
    lib.timer_tsc_per_tick.argtypes = [XF, ctypes.c_uint32]
    lib.timer_fire_of.restype = Fire
    lib.timer_fire_of.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, XF]
    lib.timer_fire_rate_u.restype = ctypes.c_uint64
    lib.timer_fire_rate_u.argtypes = [ctypes.c_uint64, XF, XF, ctypes.c_uint]
    return lib


def xf(lib, f: Fraction) -> XF:
    f = Fraction(f)
    return lib.xf_div(lib.xf_from_u64(f.numerator), lib.xf_from_u64(f.denominator))


def per_tick(d, timer_hz, tsc_hz, divide=1):
    """TSC ticks per tick of the timer's counting clock, through the library."""
    return d.timer_tsc_per_tick(xf(d, Fraction(timer_hz) / Fraction(tsc_hz)), divide)


def fire(d, mode, t0, t1, count, timer_hz, tsc_hz, divide=1):
    f = d.timer_fire_of(mode, t0, t1, count, per_tick(d, timer_hz, tsc_hz, divide))
    return f.earliest, f.width


# --- known answers by hand ---

def test_tsc_per_tick(d):
    assert xf_value(per_tick(d, 100_000_000, 1_000_000_000)) == 10
    assert xf_value(per_tick(d, 100_000_000, 2_500_000_000, divide=16)) == 400
    assert abs(xf_value(per_tick(d, 1_193_182, 1_000_000_000)) - Fraction(10**9, 1_193_182)) < Fraction(1, 10**12)


def test_tsc_deadline_is_its_own_value(d):
    assert fire(d, TSC_DEADLINE, 5, 9, 123_456, 1, 1) == (123_456, 0)


def test_pit_mode0_qemu_tcg_exact_time(d):
    # 3 input clocks of 838.095 ns: the first edge loads, OUT rises 3 edges
    # later, so between 2514.3 and 3352.4 ns after the write
    assert fire(d, PIT_MODE0, 1000, 1005, 3, 1_193_182, 10**9) == (1000 + 2514, 839 + 5)
    # a count of 0 is 65536 (54.9 ms)
    e, w = fire(d, PIT_MODE0, 0, 0, 0, 1_193_182, 10**9)
    assert e == math.floor(Fraction(65536 * 10**9, 1_193_182)) and w == 839


def test_hpet_match_100mhz(d):
    # counter read between TSC 500 and 520 and target = read + 102: the read
    # value began at most 10 ns before the read, so the match is 101 to 102
    # ticks after 500 .. 520
    assert fire(d, HPET_MATCH, 500, 520, 102, 100_000_000, 10**9) == (500 + 1010, 10 + 20)


def test_lapic_divide(d):
    # N-1 to N+1 ticks after a write between TSC 100 and 110
    assert fire(d, LAPIC_ONESHOT, 100, 110, 1002, 10**9, 10**9) == (100 + 1001, 2 + 10)
    # a 100 MHz bus clock divided by 16 against a 2.5 GHz TSC: 400 TSC ticks a tick
    assert fire(d, LAPIC_ONESHOT, 0, 0, 5, 100_000_000, 2_500_000_000, divide=16) == (1600, 800)


def test_rate_uncertainty(d):
    # 3 x 20 ppm of 1193 PIT clocks (about 1 ms)
    tick = per_tick(d, 1_193_182, 10**9)
    want = math.ceil(3 * Fraction(20, 10**6) * 1193 * Fraction(10**9, 1_193_182))
    assert d.timer_fire_rate_u(1193, tick, xf(d, Fraction(20, 10**6)), 3) == want
    assert d.timer_fire_rate_u(1193, tick, xf(d, 0), 3) == 0


# --- each device modelled, phase and write drawn at random ---

def first_edge_after(t, phase, period):
    """The first edge phase + k*period strictly after t."""
    k = math.floor((t - phase) / period) + 1
    return phase + k * period


RATES = st.sampled_from([
    # (timer Hz, TSC Hz, divide)
    (1_193_182, 10**9, 1),                             # QEMU's TCG PIT, exact time
    (Fraction(14_318_180, 12), 2_599_998_000, 1),       # a real PIT on a 2.6 GHz TSC
    (100_000_000, 10**9, 1),                            # QEMU's HPET
    (14_318_180, 2_299_998_000, 1),                     # a 14.318 MHz HPET
    (10**9, 10**9, 1),                                  # QEMU's and KVM's APIC timer
    (100_000_000, 2_500_000_000, 16),                   # a 100 MHz bus, divide by 16
    (25_000_000, 2_445_430_000, 2),                     # a 25 MHz crystal, divide by 2
])


def check_inside(e, w, t_fire):
    # integer TSC: earliest is floored, so the instant is at most 1 tick past earliest + width
    assert e <= t_fire <= e + w + 1, (e, w, float(t_fire))


@settings(max_examples=300, deadline=None)
@given(RATES, st.integers(1, 60000), st.fractions(0, 1), st.integers(0, 10**6), st.integers(0, 5000), st.fractions(0, 1))
def test_pit_model_fires_inside(d, rate, n, phase_frac, t0, bracket, where):
    hz, tsc_hz, _ = rate
    clock = Fraction(tsc_hz) / Fraction(hz)                # TSC ticks per input clock
    t_write = t0 + where * bracket
    load = first_edge_after(t_write, phase_frac * clock, clock)   # loads, does not decrement
    out_high = load + n * clock                            # N more falling edges: N + 1 pulses in all
    e, w = fire(d, PIT_MODE0, t0, t0 + bracket, n, hz, tsc_hz)
    check_inside(e, w, out_high)


@settings(max_examples=300, deadline=None)
@given(RATES, st.integers(1, 10**6), st.fractions(0, 1), st.integers(10**4, 10**7), st.integers(0, 5000), st.fractions(0, 1))
def test_hpet_model_fires_inside(d, rate, n, phase_frac, t0, bracket, where):
    hz, tsc_hz, _ = rate
    period = Fraction(tsc_hz) / Fraction(hz)
    phase = phase_frac * period
    t_read = t0 + where * bracket
    value = math.floor((t_read - phase) / period)         # the counter steps at phase + k * period
    match = phase + (value + n) * period                  # the edge at which it reaches value + n
    e, w = fire(d, HPET_MATCH, t0, t0 + bracket, n, hz, tsc_hz)
    check_inside(e, w, match)


@settings(max_examples=300, deadline=None)
@given(RATES, st.integers(1, 10**6), st.fractions(0, 1), st.integers(0, 10**6), st.integers(0, 5000), st.fractions(0, 1))
def test_lapic_model_fires_inside(d, rate, n, phase_frac, t0, bracket, where):
    hz, tsc_hz, divide = rate
    tick = Fraction(tsc_hz) / Fraction(hz) * divide       # the divided clock
    t_write = t0 + where * bracket
    first = first_edge_after(t_write, phase_frac * tick, tick)
    zero = first + (n - 1) * tick                          # N decrements, the first at the first edge
    e, w = fire(d, LAPIC_ONESHOT, t0, t0 + bracket, n, hz, tsc_hz, divide)
    check_inside(e, w, zero)
    # QEMU's apic (hw/intc/apic_common.c, apic_next_timer): N + 1 ticks after the write
    check_inside(e, w, t_write + (n + 1) * tick)
