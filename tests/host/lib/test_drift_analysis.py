"""The drift experiment's pure analysis (lib/drift_analysis.c): each reading
judged against the TSC time since the last (a continuous counter, a gap of
the loop, a reference that stood still, jumped or went back, too long to
unwrap, the TSC going back, a stall), the cuts shared by every series, the
narrow samples kept, the residuals' spread and the sub-windows' length.
Known answers, worked by hand: a 1 GHz TSC and a 10 MHz counter (100 TSC
ticks a count, PLATFORM.md's HPET under TCG), 32 bits wide unless said."""

from __future__ import annotations

import ctypes

import pytest

from helpers.hostlib import as_json

i64, u64, u32, u8 = ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint8
P64, P32, PI64 = ctypes.POINTER(u64), ctypes.POINTER(u32), ctypes.POINTER(i64)

TSC_HZ = 1_000_000_000
COUNTER_MHZ = 10_000_000_000  # 10 MHz, in mHz
TICK = 100                    # TSC ticks per counter tick
MASK32 = 2**32 - 1
GAP = 10_000_000              # 10 ms: the loop away this long is a gap
STALL = 1_000                 # 10 counter ticks
CUTS_MAX = 64
EVENTS_KEPT = 32


@pytest.fixture(scope="module")
def da(lib):
    lib.shim_drift_track.restype = ctypes.c_char_p
    lib.shim_drift_track.argtypes = [u64, u64, u64, u32, u64, P64, P64, P64, u32, u64, u64, u64, P64, P32,
                                     ctypes.POINTER(u8)]
    lib.shim_drift_cuts.restype = ctypes.c_char_p
    lib.shim_drift_cuts.argtypes = [P64, P32, u32, PI64, P32, u32, P32]
    lib.shim_drift_keep_narrow.restype = ctypes.c_char_p
    lib.shim_drift_keep_narrow.argtypes = [PI64, PI64, P32, P32, u32]
    lib.drift_mid.restype = u64
    lib.drift_mid.argtypes = [u64, u64]
    lib.drift_stall_tsc.restype = u64
    lib.drift_stall_tsc.argtypes = [u64, u64, u64]
    lib.drift_residual_index.restype = u32
    lib.drift_residual_index.argtypes = [u32, u32, u32]
    lib.drift_sub_len.restype = i64
    lib.drift_sub_len.argtypes = [u64, u64, u32]
    return lib


def names(da) -> list[str]:
    return [n.decode() for n in (ctypes.c_char_p * 7).in_dll(da, "drift_event_names")]


def track(da, reads, mask=MASK32, start=0, tol_ppm=1000, slack=2):
    """reads: (value, a, b) per reading, the first the reference. Returns the
    record, and per later reading (y, segment, in_stall)."""
    n = len(reads)
    v = (u64 * n)(*(r[0] for r in reads))
    a = (u64 * n)(*(r[1] for r in reads))
    b = (u64 * n)(*(r[2] for r in reads))
    y, seg, stall = (u64 * n)(), (u32 * n)(), (u8 * n)()
    rec = as_json(da.shim_drift_track(mask, COUNTER_MHZ, TSC_HZ, tol_ppm, slack, v, a, b, n, start, GAP, STALL, y, seg, stall))
    return rec, [(y[i], seg[i], bool(stall[i])) for i in range(1, n)]


def steady(t0, count, every=TICK * 10, v0=0, width=20):
    """Readings of a counter running at its nominal rate, one every `every` TSC ticks."""
    return [((v0 + (t0 + i * every) // TICK) & MASK32, t0 + i * every, t0 + i * every + width) for i in range(count)]


def events(rec, da):
    kinds = names(da)
    return [dict(kind=kinds[k], at=at, tsc=ts, known=bool(kn), counter=ct)
            for k, at, ts, kn, ct in zip(rec["kind"], rec["at_tsc"], rec["tsc_ticks"], rec["counter_known"],
                                         rec["counter_ticks"])]


def test_event_names_are_the_records_kinds(da):
    # docs/output.md's "discontinuity" kinds; tests/boot/test_stalls.py holds the same set
    assert names(da) == ["gap", "reference stood still", "reference jumped", "reference went back",
                         "too long to unwrap", "tsc went back", "residual step"]


def test_mid_does_not_overflow(da):
    assert da.drift_mid(10, 20) == 15
    assert da.drift_mid(3, 5) == 4
    assert da.drift_mid(2**64 - 1, 2**64 - 1) == 2**64 - 1
    assert da.drift_mid(2**64 - 3, 2**64 - 1) == 2**64 - 2


def test_stall_is_ten_ticks_or_the_floor(da):
    assert da.drift_stall_tsc(TSC_HZ, COUNTER_MHZ, 0) == 10 * TICK
    assert da.drift_stall_tsc(TSC_HZ, COUNTER_MHZ, 10_000) == 10_000
    # the PIT at 1,193,182 Hz: 838 TSC ticks a count, rounded down
    assert da.drift_stall_tsc(TSC_HZ, 1_193_182_000, 0) == 8380


def test_steady_counter_has_no_event_and_one_segment(da):
    reads = steady(1000, 50)
    rec, per = track(da, reads, start=1000)
    assert rec["reads"] == 49 and rec["event_count"] == 0 and rec["gaps"] == 0 and rec["stalls"] == 0
    assert rec["wraps"] == 0 and rec["backward"] == 0 and rec["tsc_back"] == 0
    # y: counter ticks since the first reading, 10 a reading
    assert [p[0] for p in per] == [10 * i for i in range(1, 50)]
    assert {p[1] for p in per} == {0} and not any(p[2] for p in per)


def test_wrap_is_counted_and_unwrapped(da):
    # a 32-bit counter 25 ticks short of its wrap
    reads = steady(0, 6, v0=2**32 - 25)
    rec, per = track(da, reads)
    assert rec["wraps"] == 1 and rec["event_count"] == 0
    assert [p[0] for p in per] == [10, 20, 30, 40, 50]


def test_gap_where_every_clock_ran_is_told_but_cuts_nothing(da):
    # the loop away 50 ms (more than GAP), the counter running on meanwhile
    reads = steady(0, 10) + steady(50_000_000, 10)
    rec, per = track(da, reads)
    assert rec["gaps"] == 1 and rec["away_tsc"] == 50_000_000 - 9 * 1000
    [ev] = events(rec, da)
    assert ev["kind"] == "gap" and ev["known"]
    # judged from the last narrow reading (at 9000) to the first after the gap: 49,991,000 TSC ticks
    assert ev["tsc"] == 50_000_000 - 9000 and ev["counter"] == (50_000_000 - 9000) // TICK
    assert ev["at"] == 50_000_000 + 10
    assert {p[1] for p in per} == {0}, "a gap where every clock ran is no new segment"


def test_gap_after_wide_readings_is_measured_from_the_reading_before_it(da):
    # A loaded host: narrow readings, then 300 ms of wide ones (each 2,000
    # ticks: past 3 x the narrowest + 16), then the loop away 1 s, then narrow
    # ones again. The last narrow reading is 300 ms before the gap, so a gap
    # measured from it would be 1.3 s long; it is the reading just before the
    # gap that bounds it: 1 s and one reading interval. (A 1 s SIGSTOP under
    # TCG was so reported as 1.16-1.3 s by the HPET, and missed by a test.)
    narrow = steady(0, 10)
    wide = steady(10_000, 300, every=1_000_000, width=2000)
    last = wide[-1][1]
    after = steady(last + 1_000_000_000, 10)
    rec, _ = track(da, narrow + wide + after)
    [ev] = events(rec, da)
    assert ev["kind"] == "gap" and ev["known"]
    before_mid, after_mid = last + 1000, after[0][1] + 10
    assert ev["tsc"] == after_mid - before_mid == 1_000_000_000 - 990
    # the counter over the same span, as the readings give it (its bracket midpoints' ticks)
    assert ev["counter"] == after[0][0] - wide[-1][0]
    assert ev["at"] == after_mid


def test_reference_that_stood_still_is_an_event_and_a_new_segment(da):
    # the counter stops for 1 ms (1,000,000 TSC ticks) while the loop runs on: a stall; it resumes
    # 10,000 counts behind, so across the step from 9000 to 1,010,000 it advanced 10 counts, not 10,010
    before = steady(0, 10)
    last_v = before[-1][0]
    stopped = [(last_v, t, t + 20) for t in range(10_000, 1_009_000, 1000)]
    after = [(v - 10_000, a, b) for v, a, b in steady(1_010_000, 5)]
    rec, per = track(da, before + stopped + after)
    assert rec["stalls"] == 1 and rec["longest_stall_tsc"] >= 999_000
    [ev] = events(rec, da)
    assert ev["kind"] == "reference stood still" and ev["known"]
    assert ev["tsc"] == 1_010_000 - 9000 and ev["counter"] == 10
    assert [p[1] for p in per[-6:]] == [0, 1, 1, 1, 1, 1]
    # no sample is taken while it stands still: in_stall holds until it moves
    assert per[len(before) + 2][2] and not per[-1][2]
    # y runs on by what the counter advanced, not by the TSC's time
    assert per[-1][0] == per[len(before) - 2][0] + 10 + 4 * 10


def test_jump_forward_and_back(da):
    reads = steady(0, 5)
    jumped = [((v + 5_000) & MASK32, a, b) for v, a, b in steady(5000, 3)]
    back = [((v + 5_000 - 2_000) & MASK32, a, b) for v, a, b in steady(8000, 2)]
    rec, per = track(da, reads + jumped + back)
    evs = events(rec, da)
    assert [e["kind"] for e in evs] == ["reference jumped", "reference went back"]
    assert evs[0]["counter"] == 5_010
    assert evs[1]["counter"] == -(2_000 - 10)
    assert rec["backward"] == 1 and rec["largest_backward"] == 1_990
    assert [p[1] for p in per][-6:] == [0, 1, 1, 1, 2, 2]


def test_too_long_to_unwrap(da):
    # a 24-bit counter (the PM timer's width) unwraps 1.67 s at 10 MHz; the loop away 3 s
    mask24 = 2**24 - 1
    reads = [(v & mask24, a, b) for v, a, b in steady(0, 5)]
    reads += [(v & mask24, a, b) for v, a, b in steady(3_000_000_000, 3)]
    rec, per = track(da, reads, mask=mask24)
    [ev] = events(rec, da)
    assert ev["kind"] == "too long to unwrap" and not ev["known"] and ev["counter"] == 0
    assert rec["gaps"] == 1 and per[-1][1] == 1


def test_tsc_went_back(da):
    reads = steady(1_000_000, 5)
    # the next bracket starts 500 ticks before the last one ended
    reads.append((reads[-1][0] + 1, reads[-1][2] - 500, reads[-1][2] - 480))
    rec, per = track(da, reads)
    [ev] = events(rec, da)
    assert ev["kind"] == "tsc went back" and ev["tsc"] == 500
    assert rec["tsc_back"] == 1 and per[-1][1] == 1


def test_events_past_the_kept_ones_are_counted(da):
    reads = steady(0, 2)
    v, t = reads[-1][0], reads[-1][1]
    for i in range(40):  # 40 jumps of 1000 counts
        t += 1000
        v += 1010
        reads.append((v, t, t + 20))
    rec, _ = track(da, reads)
    assert rec["event_count"] == 40 and len(rec["kind"]) == EVENTS_KEPT


def cuts(da, at, kinds=None, x=(), sg=None):
    n = len(x)
    kinds = kinds if kinds is not None else [99] * len(at)
    out = (u32 * max(n, 1))()
    rec = as_json(da.shim_drift_cuts((u64 * max(len(at), 1))(*at), (u32 * max(len(at), 1))(*kinds), len(at),
                                     (i64 * max(n, 1))(*x), (u32 * max(n, 1))(*(sg or [0] * n)), n, out))
    return rec, list(out)[:n]


def test_cuts_are_sorted_and_unique(da):
    rec, _ = cuts(da, [500, 100, 300, 100, 500])
    assert rec["at"] == [100, 300, 500] and rec["count"] == 3 and not rec["overflowed"]


def test_cuts_overflow_is_said(da):
    rec, _ = cuts(da, list(range(CUTS_MAX + 5, 0, -1)))
    assert rec["count"] == CUTS_MAX and rec["overflowed"]
    # the first 64 asked for were kept: from 69 down to 6
    assert rec["at"] == list(range(6, CUTS_MAX + 6))


def test_gaps_cut_nothing_other_events_cut(da):
    kinds = [0, 1, 2, 3, 4, 5, 6]  # gap, stood still, jumped, went back, too long, tsc back, residual step
    rec, _ = cuts(da, [10, 20, 30, 40, 50, 60, 70], kinds)
    assert rec["at"] == [20, 30, 40, 50, 60, 70]


def test_cuts_split_each_segment(da):
    # samples at x = 0..9, in own segments 0 (x < 5) and 1; cuts at 3 and 7
    x = list(range(10))
    sg = [0] * 5 + [1] * 5
    _, out = cuts(da, [7, 3], x=x, sg=sg)
    k = CUTS_MAX + 1
    # a cut at t counts for the samples at or after it
    assert out == [0, 0, 0, 1, 1, k + 1, k + 1, k + 2, k + 2, k + 2]
    assert len(set(out)) == 4


def keep(da, w, x=None):
    n = len(w)
    xs = (i64 * n)(*(x or [10 * i for i in range(n)]))
    ys = (i64 * n)(*[100 + i for i in range(n)])
    sg = (u32 * n)(*[i // 4 for i in range(n)])
    rec = as_json(da.shim_drift_keep_narrow(xs, ys, sg, (u32 * n)(*w), n))
    k = rec["kept"]
    return rec, list(xs)[:k], list(ys)[:k], list(sg)[:k]


def test_keep_narrow_keeps_within_twice_the_narrowest(da):
    # w = width + 1: widths 10, -, 19, 20, 21, 40, 10, -
    rec, x, y, sg = keep(da, [11, 0, 20, 21, 22, 41, 11, 0])
    assert rec["filled"] == 6 and rec["min_width"] == 10 and rec["kept"] == 4
    assert x == [0, 20, 30, 60] and y == [100, 102, 103, 106] and sg == [0, 0, 0, 1]


def test_keep_narrow_allows_four_ticks_for_narrow_brackets(da):
    # narrowest width 1: limit max(2, 1 + 4) = 5
    rec, x, _, _ = keep(da, [2, 6, 7, 3])
    assert rec["min_width"] == 1 and x == [0, 10, 30]


def test_keep_narrow_with_no_sample(da):
    rec, _, _, _ = keep(da, [0, 0, 0])
    assert rec == {"type": "drift_keep_narrow", "kept": 0, "filled": 0, "min_width": None}


def test_residual_index_spreads_from_first_to_last(da):
    assert [da.drift_residual_index(j, 5, 128) for j in range(5)] == [0, 1, 2, 3, 4]
    picked = [da.drift_residual_index(j, 1000, 128) for j in range(128)]
    assert picked[0] == 0 and picked[-1] == 999 and picked == sorted(set(picked))
    assert picked[64] == 64 * 999 // 127


def test_sub_len_is_a_second_until_there_are_too_many(da):
    one_s = TSC_HZ
    assert da.drift_sub_len(60 * one_s, one_s, 64) == one_s
    assert da.drift_sub_len(63 * one_s, one_s, 64) == one_s
    # 64 s and more would need 65 sub-windows: the span over 64, plus one
    assert da.drift_sub_len(64 * one_s, one_s, 64) == one_s + 1
    assert da.drift_sub_len(300 * one_s, one_s, 64) == 300 * one_s // 64 + 1


def test_gap_is_told_from_the_first_reading_whose_bracket_cannot_hold_it(da):
    # after the loop was away, the first change comes in a bracket of 500
    # ticks: wider than the fit's samples (3 x 20 + 16) but nothing beside a
    # 10 ms gap, and it begins after the gap: the gap is told from it, and
    # measured from the reading just before the gap (at 9000)
    reads = steady(0, 10)
    t = 50_000_000
    reads.append((t // TICK, t, t + 500))
    reads += steady(t + 1000, 3)
    rec, per = track(da, reads)
    [ev] = events(rec, da)
    assert ev["kind"] == "gap" and ev["at"] == t + 250
    assert ev["tsc"] == (t + 250) - (9000 + 10)
    assert {p[1] for p in per} == {0}
    # a bracket that holds the gap (it began before it) could have been read
    # before it: the gap waits for the next reading that cannot
    reads = steady(0, 10)
    reads.append((t // TICK, 9100, t + 500))
    reads += steady(t + 1000, 3)
    rec, _ = track(da, reads)
    [ev] = events(rec, da)
    assert ev["kind"] == "gap" and ev["at"] == t + 1000 + 10
    assert ev["tsc"] == (t + 1000 + 10) - (9000 + 10)


def test_two_gaps_with_wide_readings_between_are_told_apart(da):
    # a short gap (20 ms), wide readings for 300 ms (2,000 ticks each: no
    # narrow change), then the loop away 1 s: two gaps, each its own length,
    # not one spanning both (the drift window's stall, reported 1.3 s long)
    reads = steady(0, 10)
    wide = steady(9000 + 20_000_000, 300, every=1_000_000, width=2000)
    last = wide[-1][1]
    after = steady(last + 1_000_000_000, 10)
    rec, _ = track(da, reads + wide + after)
    short, stall = events(rec, da)
    assert short["kind"] == stall["kind"] == "gap"
    assert short["tsc"] == (wide[0][1] + 1000) - (9000 + 10)
    assert stall["tsc"] == (after[0][1] + 10) - (last + 1000) == 1_000_000_000 - 990
    assert stall["counter"] == after[0][0] - wide[-1][0]


@pytest.mark.parametrize("still, stalled", [(STALL, False), (STALL + 1, True)])
def test_stall_starts_past_the_bound(da, still, stalled):
    # one unchanged reading `still` TSC ticks after the last (the loop was not away)
    reads = steady(0, 3)
    v, a, b = reads[-1]
    reads.append((v, a + still, b + still))
    rec, per = track(da, reads)
    assert rec["stalls"] == int(stalled) and per[-1][2] == stalled
    assert rec["longest_stall_tsc"] == (still if stalled else 0) and rec["event_count"] == 0


def test_keep_narrow_limit_for_a_three_tick_bracket(da):
    # narrowest width 3: limit max(6, 3 + 4) = 7
    rec, x, _, _ = keep(da, [4, 8, 9])
    assert rec["min_width"] == 3 and x == [0, 10]


def test_a_long_gap_after_many_short_ones_is_kept(da):
    """The SIGSTOP flake: on a loaded host the loop is away 10 ms and more
    many times a second; 40 such gaps came before the 5 s stop, and only the
    first 32 events were kept, so the stop went unreported. Now a full list
    gives up its shortest gap for a longer one."""
    reads, t = [], 0
    for i in range(40):  # 40 short gaps of 12-13 ms
        reads += steady(t, 3)
        t = reads[-1][1] + 12_000_000 + i * 10_000
    reads += steady(t, 3)
    t = reads[-1][1] + 5_000_000_000  # the 5 s stop, every clock running on
    reads += steady(t, 3)
    rec, _ = track(da, reads)
    evs = events(rec, da)
    assert rec["event_count"] == 41 and len(evs) == EVENTS_KEPT
    assert max(e["tsc"] for e in evs) >= 5_000_000_000, "the long stop was crowded out"
    assert [e["at"] for e in evs] == sorted(e["at"] for e in evs), "kept in time order"
    shortest_kept = min(e["tsc"] for e in evs)
    assert shortest_kept >= 12_000_000 + 8 * 10_000 - 3 * 1000, "the shortest gaps gave way first"


# -- the quick estimate's uncertainty and the drift's check of it (issue 30, item 7) --------------

@pytest.fixture(scope="module")
def cal(lib):
    lib.cal_estimate_u_ppm.restype = u64
    lib.cal_estimate_u_ppm.argtypes = [u64, u64, u64]

    class Judge(ctypes.Structure):
        _fields_ = [("off_ppm", i64), ("limit_ppm", u64), ("agree", ctypes.c_bool)]

    lib.cal_vs_drift_judge.restype = ctypes.c_bool
    lib.cal_vs_drift_judge.argtypes = [u64, u64, u64, u64, ctypes.POINTER(Judge)]

    def judge(est_hz, est_u, measured_mhz, measured_u):
        j = Judge()
        ok = lib.cal_vs_drift_judge(est_hz, est_u, measured_mhz, measured_u, ctypes.byref(j))
        return ok, j.off_ppm, j.limit_ppm, j.agree

    return lib, judge


def test_estimate_uncertainty_adds_spread_one_tick_and_edges(cal):
    lib, _ = cal
    # 1,000,000 HPET ticks a window: 1 ppm; 11,932 PIT ticks: 84 ppm (83.8, rounded up); 16 ticks: 62,500
    assert lib.cal_estimate_u_ppm(178, 1_000_000, 0) == 179
    assert lib.cal_estimate_u_ppm(20, 11_932, 25) == 20 + 84 + 25
    assert lib.cal_estimate_u_ppm(0, 16, 0) == 62_500
    assert lib.cal_estimate_u_ppm(0, 0, 0) == 1_000_000  # no ticks: nothing known
    assert lib.cal_estimate_u_ppm(2**63, 1, 0) == 2**64 - 1  # no wrap to a small figure


def test_the_issues_8_percent_is_caught(cal):
    _, judge = cal
    # 2378 MHz estimated (+-300 ppm stated), 2596.12 MHz measured +-0.5 ppm: -84,000 ppm, limit 300 + 1.5
    ok, off, limit, agree = judge(2_378_000_000, 300, 2_596_120_000_000, 1)
    assert ok and off == round((2378 / 2596.12 - 1) * 1e6) and limit == 300 + 3 + 1 and not agree


def test_within_the_stated_uncertainty_agrees_and_past_it_does_not(cal):
    _, judge = cal
    m = 2_299_998_031_696  # mHz
    assert judge(2_300_000_000, 40, m, 1)[1:] == (1, 44, True)  # the TCG boot's figures
    # 100 ppm off, stated 40 + 3 x 20: right on the limit agrees, one past does not
    assert judge(2_300_230_000, 40, 2_300_000_000_000, 20)[1:] == (100, 101, True)
    assert judge(2_300_232_300, 40, 2_300_000_000_000, 20)[1:] == (101, 101, True)
    assert judge(2_300_234_600, 40, 2_300_000_000_000, 20)[1:] == (102, 101, False)
    # and below: the sign is kept
    assert judge(2_299_765_400, 40, 2_300_000_000_000, 20)[1:] == (-102, 101, False)


def test_never_wider_than_one_percent_and_claims_get_one_percent(cal):
    _, judge = cal
    # a huge stated uncertainty cannot pass 8 %: the limit stays 1 %
    assert judge(2_116_000_000, 200_000, 2_300_000_000_000, 1)[2:] == (10_000, False)
    assert judge(2_116_000_000, 9_000, 2_300_000_000_000, 1_000)[2:] == (10_000, False)
    # a claim or an assumption (0: states none): 1 %
    assert judge(2_000_000_000, 0, 2_300_000_000_000, 1)[1:] == (-130_435, 10_000, False)
    assert judge(2_310_000_000, 0, 2_300_000_000_000, 1)[1:] == (4_348, 10_000, True)


def test_nothing_to_compare(cal):
    _, judge = cal
    assert judge(0, 40, 2_300_000_000_000, 1)[0] is False
    assert judge(2_300_000_000, 40, 0, 1)[0] is False
    assert judge(19_000_000_000, 40, 2_300_000_000_000, 1)[0] is False  # past 18 GHz: out of the 64-bit range
