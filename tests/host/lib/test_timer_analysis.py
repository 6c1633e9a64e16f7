"""The timers experiment's pure part (lib/timer_analysis.c): rates against
the TSC and the margin that keeps a converted deadline from firing early,
the wait modes from CPUID leaf 5, the HPET comparator's I/O APIC input, the
watchdog, the tallies behind the checks, and the choice of timer. Known
answers are QEMU's (from real TCG runs: route capabilities 0xff0104 on q35,
0x4 on pc; leaf 5 EDX 0 under -cpu max) and hand-worked figures."""

from __future__ import annotations

import ctypes
from fractions import Fraction
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from helpers.hostlib import XF, as_json, xf_value

LAPIC, DEADLINE, HPET, PIT = range(4)
TIMERS, WAITS, DELAYS = 4, 9, 4
CELLS = TIMERS * WAITS * DELAYS
CHOICE_DELAY = 2  # 100 us
u8, u32, u64, i64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64


@pytest.fixture(scope="module")
def t(lib):
    lib.shim_timer_rate.restype = ctypes.c_char_p
    lib.shim_timer_rate.argtypes = [u64] * 7
    lib.shim_timer_distance.restype = i64
    lib.shim_timer_distance.argtypes = [u64, u64, ctypes.c_int]
    lib.shim_timer_waits.restype = ctypes.c_char_p
    lib.shim_timer_waits.argtypes = [ctypes.c_int, u32, u32, u32]
    lib.shim_timer_hpet_gsi.restype = ctypes.c_char_p
    lib.shim_timer_hpet_gsi.argtypes = [u32, u32, ctypes.POINTER(u32), ctypes.POINTER(u32)]
    lib.shim_timer_watchdog.restype = ctypes.c_int
    lib.shim_timer_watchdog.argtypes = [ctypes.c_int, u32, u32, ctypes.c_int]
    arrays = [ctypes.POINTER(u8), ctypes.POINTER(u32), ctypes.POINTER(u32), ctypes.POINTER(u64), ctypes.POINTER(u32)]
    lib.shim_timer_tally.restype = ctypes.c_char_p
    lib.shim_timer_tally.argtypes = arrays + [ctypes.POINTER(u32), ctypes.POINTER(i64)]
    lib.shim_timer_choose.restype = ctypes.c_char_p
    lib.shim_timer_choose.argtypes = [u32, ctypes.c_uint, ctypes.POINTER(u8), ctypes.POINTER(u32), ctypes.POINTER(u64),
                                      ctypes.POINTER(u32), ctypes.POINTER(i64)]
    for name in ("timer_ticks_for", "timer_tsc_ticks_of", "timer_delay_ticks", "timer_bound_ticks"):
        getattr(lib, name).restype = u64
    lib.timer_ticks_for.argtypes = [XF, XF, u64]
    lib.timer_tsc_ticks_of.argtypes = [XF, u64]
    lib.timer_delay_ticks.argtypes = [u64, u32]
    lib.timer_bound_ticks.argtypes = [u64, u64]
    lib.timer_bin_edge.restype = i64
    lib.timer_bin_edge.argtypes = [u64]
    for name in ("timer_margin_ppm", "timer_rate_u_ppm"):
        getattr(lib, name).restype = XF
    lib.timer_margin_ppm.argtypes = [XF]
    lib.timer_rate_u_ppm.argtypes = [XF, XF]
    lib.timer_rate_vs_reference.restype = None
    lib.timer_rate_vs_reference.argtypes = [XF] * 5 + [ctypes.POINTER(XF), ctypes.POINTER(XF)]
    return lib


def xf(lib, f: Fraction) -> XF:
    return lib.xf_div(lib.xf_from_u64(f.numerator), lib.xf_from_u64(f.denominator))


def close(a: Fraction, b: Fraction, rel=Fraction(1, 2**58)) -> bool:
    return abs(a - b) <= rel * abs(b)


# --- rates and deadlines ---

def rate(t, v0, a0, b0, v1, a1, b1, mask=2**64 - 1):
    r = as_json(t.shim_timer_rate(v0, a0, b0, v1, a1, b1, mask))
    return r["ok"], xf_value(r["ratio"]), xf_value(r["u"])


def test_rate_of_a_1ghz_timer_against_a_2_5ghz_tsc(t):
    # 40e6 ticks between midpoints 10^8 TSC ticks apart; brackets of 24 ticks each
    ok, ratio, u = rate(t, 5, 1000, 1024, 5 + 40_000_000, 100_001_000, 100_001_024)
    assert ok
    assert close(ratio, Fraction(2, 5))
    assert close(u, Fraction(48, 10**8) + Fraction(1, 40_000_000))


def test_rate_counts_across_a_wrap_of_its_width(t):
    # a 16-bit PIT from 65000 to 1000: 1536 ticks, not -64000
    ok, ratio, _ = rate(t, 65000, 0, 0, 1000, 3_000_000, 3_000_000, mask=0xFFFF)
    assert ok and close(ratio, Fraction(1536, 3_000_000))


def test_rate_from_midpoints_of_the_brackets(t):
    # midpoints 105 and 1105 (odd sums round down, as the integer halves do)
    ok, ratio, u = rate(t, 0, 100, 110, 500, 1100, 1110)
    assert ok and close(ratio, Fraction(500, 1000)) and close(u, Fraction(20, 1000) + Fraction(1, 500))


@pytest.mark.parametrize("args", [(7, 0, 10, 7, 1000, 1010), (0, 500, 500, 9, 500, 500)])
def test_a_counter_or_tsc_that_did_not_move_gives_no_rate(t, args):
    assert not rate(t, *args)[0]


def test_ticks_for_known_answers(t):
    two_fifths, zero = xf(t, Fraction(2, 5)), t.xf_from_u64(0)
    assert t.timer_ticks_for(two_fifths, zero, 1000) == 402                          # 400, the tick under way, the rounding
    assert t.timer_ticks_for(two_fifths, xf(t, Fraction(1, 10**4)), 10**6) == 400_122  # 400000 x 1.0003 + 2
    assert t.timer_ticks_for(t.xf_from_u64(1), zero, 0) == 2


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10**7), st.integers(1, 10**7), st.integers(0, 10**4), st.integers(1, 10**10))
def test_a_rate_error_within_the_margin_cannot_fire_early(t, num, den, u_ppm, d):
    """Counted at any true rate up to (1 + 3u) times the measured one, the
    programmed ticks minus the one under way last at least d TSC ticks."""
    per_tsc, u = Fraction(num, den), Fraction(u_ppm, 10**6)
    if per_tsc * d > 2**60:
        return
    ticks = t.timer_ticks_for(xf(t, per_tsc), xf(t, u), d)
    fastest = per_tsc * (1 + 3 * u)
    assert Fraction(ticks - 1) / fastest >= d * (1 - Fraction(1, 2**56))
    assert ticks <= per_tsc * d * (1 + 3 * u) + 3  # and not much later


def test_tsc_ticks_of_the_pit_watchdogs_most(t):
    per_tsc = Fraction(1_193_182, 2_299_998_000)
    want = Fraction(60000) / per_tsc
    assert abs(t.timer_tsc_ticks_of(xf(t, per_tsc), 60000) - want) <= Fraction(1, 2) + 1e-6


def test_margin_and_uncertainties_in_ppm(t):
    assert close(xf_value(t.timer_margin_ppm(xf(t, Fraction(1, 10**4)))), Fraction(300))
    assert close(xf_value(t.timer_rate_u_ppm(xf(t, Fraction(5, 10**5)), t.xf_from_u64(10))), Fraction(60))


def test_apic_timer_against_qemus_hpet_is_1ghz(t):
    # QEMU's APIC timer (1 GHz) and HPET (100 MHz) run from one host clock: the ratio is exact
    tsc = 2_299_998_000
    hz, u = XF(), XF()
    t.timer_rate_vs_reference(xf(t, Fraction(10**9, tsc)), xf(t, Fraction(1, 10**6)), xf(t, Fraction(10**8, tsc)),
                              xf(t, Fraction(2, 10**6)), t.xf_from_u64(10**8), ctypes.byref(hz), ctypes.byref(u))
    assert close(xf_value(hz), Fraction(10**9), Fraction(1, 2**56))
    assert close(xf_value(u), Fraction(3), Fraction(1, 2**56))


def test_delays_bounds_and_the_first_bin_edge(t):
    tsc = 2_299_998_000
    assert [t.timer_delay_ticks(tsc, ns) for ns in (1000, 10000, 100000, 1000000)] == [2299, 22999, 229999, 2299998]
    two_hundred_ms = tsc // 5
    assert t.timer_bound_ticks(2_299_998, two_hundred_ms) == two_hundred_ms       # 20 x 1 ms is under the floor
    assert t.timer_bound_ticks(229_999_800, two_hundred_ms) == 20 * 229_999_800  # 20 x 100 ms is over it
    assert t.timer_bin_edge(tsc) == 574   # 250 ns
    assert t.timer_bin_edge(1_000_000) == 1  # never 0


def test_distance_in_the_comparators_width(t):
    assert t.shim_timer_distance(5, 0xFFFF_FFF0, 0) == 21            # a 32-bit comparator across its wrap
    assert t.shim_timer_distance(0x1_0000_0005, 3, 0) == 2           # bits above 31 are not the comparator's
    assert t.shim_timer_distance(3, 5, 0) == -2
    assert t.shim_timer_distance(5, 10, 1) == -5
    assert t.shim_timer_distance(2**64 - 1, 1, 1) == -2               # 64 bits across the wrap
    assert t.shim_timer_distance(1 << 40, 0, 1) == 1 << 40


# --- wait modes and routes ---

def waits(t, monitor=True, max_leaf=0x16, edx=0, note_size=128):
    w = as_json(t.shim_timer_waits(monitor, max_leaf, edx, note_size))
    assert w["canary_intact"], w
    return w


def test_waits_without_monitor_or_leaf_5(t):
    w = waits(t, monitor=False)
    assert w["names"] == "busy,hlt" and w["kinds"] == [0, 1]
    assert w["note"] == "MWAIT not measured: CPUID.1:ECX[3] (MONITOR/MWAIT) is clear"
    w = waits(t, max_leaf=4)
    assert w["names"] == "busy,hlt"
    assert w["note"] == "MWAIT not measured: CPUID leaf 5 is not there to enumerate its C-states"


def test_waits_under_qemu_tcg(t):
    # -cpu max: leaf 5 EDX 0; C1 is always asked
    w = waits(t, edx=0)
    assert w["names"] == "busy,hlt,mwait_c1" and w["kinds"] == [0, 1, 2] and w["hints"] == [0, 0, 0]
    assert w["note"] == "MWAIT hints asked (leaf 5 EDX 0x0; the CPU may demote them): 0x00 (C1)"


def test_waits_follow_the_c_states_leaf_5_lists(t):
    w = waits(t, edx=0x00000200)  # C2 only listed: C1 and C2
    assert w["names"] == "busy,hlt,mwait_c1,mwait_c2" and w["hints"][2:] == [0x00, 0x10]
    w = waits(t, edx=0x00302020)  # C1, C3, C5
    assert w["names"] == "busy,hlt,mwait_c1,mwait_c3,mwait_c5" and w["hints"][2:] == [0x00, 0x20, 0x40]
    assert w["note"].endswith(": 0x00 (C1) 0x20 (C3) 0x40 (C5)")


def test_waits_at_most_nine_and_a_short_note_stays_in_bounds(t):
    w = waits(t, edx=0x11142120)  # every C-state C1..C7 listed
    assert w["names"].split(",")[2:] == [f"mwait_c{n}" for n in range(1, 8)]
    assert w["hints"][2:] == [n << 4 for n in range(7)]
    for size in (1, 20, 70, 90):
        short = waits(t, edx=0x11142120, note_size=size)
        assert short["names"] == w["names"]
        assert w["note"].startswith(short["note"]) and len(short["note"]) < size


def hpet_gsi(t, caps, ioapics=((0, 24),)):
    bases = (u32 * len(ioapics))(*[b for b, _ in ioapics])
    pins = (u32 * len(ioapics))(*[p for _, p in ioapics])
    r = as_json(t.shim_timer_hpet_gsi(caps, len(ioapics), bases, pins))
    return (r["ioapic"], r["gsi"], r["pin"]) if r["ioapic"] >= 0 else None


def test_hpet_route_on_qemus_machines(t):
    assert hpet_gsi(t, 0xFF0104) == (0, 16, 16)  # q35: GSI 16 first, above the ISA range
    assert hpet_gsi(t, 0x4) is None              # pc: only GSI 2, the PIT's input (legacy replacement instead)
    assert hpet_gsi(t, 0x80000001) is None       # GSI 0 (the 8259's) and 31 (past 24 pins)


def test_hpet_route_avoids_isa_inputs_it_must_not_take(t):
    assert hpet_gsi(t, 1 << 8 | 1 << 11) == (0, 11, 11)  # not the RTC's 8
    assert hpet_gsi(t, 1 << 10 | 1 << 20) == (0, 20, 20)  # above 15 first
    assert hpet_gsi(t, 1 << 0 | 1 << 2 | 1 << 8) is None
    assert hpet_gsi(t, 1 << 26, ioapics=((0, 24), (24, 8))) == (1, 26, 2)  # a second I/O APIC
    assert hpet_gsi(t, 1 << 26 | 1 << 5, ioapics=((0, 24), (32, 8))) == (0, 5, 5)  # 26 served by none


@pytest.mark.parametrize("id_, usable, clean, shared, want", [
    (LAPIC, 0b1111, 0b1111, False, PIT),      # the PIT first: KVM emulates it in the kernel
    (DEADLINE, 0b1111, 0b0111, False, HPET),  # the PIT lost an event busy: not fit
    (LAPIC, 0b0111, 0b0111, False, HPET),     # no PIT
    (LAPIC, 0b0011, 0b0011, False, -1),
    (HPET, 0b1111, 0b1111, False, LAPIC),
    (HPET, 0b1110, 0b1110, False, DEADLINE),
    (PIT, 0b1100, 0b1100, False, HPET),
    (PIT, 0b1100, 0b1100, True, -1),          # sharing a pin: never each other's watchdog
    (HPET, 0b1100, 0b1100, True, -1),
    (HPET, 0b1101, 0b1101, True, LAPIC),
    (LAPIC, 0b1101, 0b1101, True, PIT),       # the APIC timer may still use either
    (LAPIC, 0b0101, 0b0101, True, HPET),
])
def test_watchdog(t, id_, usable, clean, shared, want):
    assert t.shim_timer_watchdog(id_, usable, clean, shared) == want


# --- tallies and the choice ---

def grid(**fields):
    """Flat [timer][wait][delay] arrays from {field: {(timer, wait, delay): value}}."""
    types = {"ran": u8, "asked": u32, "came": u32, "early": u64, "lost": u32, "stray": u32, "p99": i64}
    out = {}
    for name, ctype in types.items():
        flat = [0] * CELLS
        for (tm, w, d), v in fields.get(name, {}).items():
            flat[(tm * WAITS + w) * DELAYS + d] = v
        out[name] = (ctype * CELLS)(*flat)
    return out


def tally(t, **fields):
    g = grid(**fields)
    return as_json(t.shim_timer_tally(g["ran"], g["asked"], g["came"], g["early"], g["lost"], g["stray"], g["p99"]))


def test_tally_counts_cells_that_ran(t):
    cells = [(LAPIC, 0, 0), (LAPIC, 1, 3), (PIT, 8, 2)]
    r = tally(t, ran={c: 1 for c in cells[:2]}, asked={c: 32 for c in cells}, lost={c: 1 for c in cells},
              stray={c: 2 for c in cells})
    assert r == {"type": "timer_tally", "asked": 64, "early": 0, "lost": 2, "stray": 4, "outcome": "lost"}


def test_tally_outcome_early_before_lost(t):
    c = (HPET, 0, 1)
    assert tally(t, ran={c: 1}, asked={c: 32})["outcome"] == "on_time"
    assert tally(t, ran={c: 1}, asked={c: 32}, early={c: 1}, lost={c: 3})["outcome"] == "early"
    assert tally(t, ran={c: 0}, asked={c: 32}, early={c: 1})["outcome"] == "on_time"  # a cell dropped after a fault


def choose(t, usable, waits_, **fields):
    g = grid(**fields)
    r = as_json(t.shim_timer_choose(usable, waits_, g["ran"], g["came"], g["early"], g["lost"], g["p99"]))
    return (r["timer"], r["wait"]) if r["timer"] >= 0 else None


def test_choice_is_the_lowest_p99_at_100us(t):
    d = CHOICE_DELAY
    p99 = {(LAPIC, 0, d): 900, (LAPIC, 1, d): 700, (HPET, 0, d): 800, (HPET, 2, d): 650, (PIT, 1, d): 600,
           (PIT, 1, 0): 1}  # another delay does not count
    came = {c: 32 for c in p99}
    assert choose(t, 0b1101, 3, came=came, p99=p99) == (PIT, 1)
    assert choose(t, 0b0101, 3, came=came, p99=p99) == (HPET, 2)
    assert choose(t, 0b0101, 2, came=came, p99=p99) == (LAPIC, 1)  # waits past the count are not looked at
    assert choose(t, 0b0000, 3, came=came, p99=p99) is None


def test_choice_leaves_out_a_timer_with_any_event_early_or_lost(t):
    d = CHOICE_DELAY
    p99 = {(LAPIC, 0, d): 900, (HPET, 0, d): 100, (PIT, 0, d): 200}
    came = {c: 32 for c in p99}
    assert choose(t, 0b1101, 1, came=came, p99=p99, early={(HPET, 0, 3): 1}) == (PIT, 0)
    assert choose(t, 0b1101, 1, came=came, p99=p99, lost={(HPET, 0, 0): 1, (PIT, 0, 1): 2}) == (LAPIC, 0)
    assert choose(t, 0b1101, 1, came={}, p99=p99) is None  # nothing came at 100 us


def test_choice_keeps_the_first_of_equals(t):
    d = CHOICE_DELAY
    p99 = {(LAPIC, 1, d): 500, (HPET, 0, d): 500}
    assert choose(t, 0b1111, 2, came={c: 1 for c in p99}, p99=p99) == (LAPIC, 1)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 15), st.integers(1, WAITS),
       st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, WAITS - 1), st.integers(0, 3)),
                       st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1), st.integers(-10**6, 10**6)), max_size=30))
def test_choice_matches_a_reference(t, usable, nwaits, cells):
    came = {c: v[0] for c, v in cells.items()}
    early = {c: v[1] for c, v in cells.items()}
    lost = {c: v[2] for c, v in cells.items()}
    p99 = {c: v[3] for c, v in cells.items()}
    best = None
    for tm in range(TIMERS):
        if not usable >> tm & 1:
            continue
        if any(early.get((tm, w, d), 0) or lost.get((tm, w, d), 0) for w, d in itertools.product(range(nwaits), range(DELAYS))):
            continue
        for w in range(nwaits):
            c = (tm, w, CHOICE_DELAY)
            if came.get(c, 0) and (best is None or p99[c] < p99[(best[0], best[1], CHOICE_DELAY)]):
                best = (tm, w)
    assert choose(t, usable, nwaits, came=came, early=early, lost=lost, p99=p99) == best
