"""One common slope across segments with their own offsets (lib/segfit.c),
against exact rational least squares and numpy's lstsq on the equivalent
design matrix (one indicator column per segment, and x)."""

import ctypes
import random
from fractions import Fraction

import numpy as np
import pytest

from helpers.hostlib import XF, as_json, series, xf_value

REL = Fraction(1, 10**15)  # the precision goal for the slope


def close(got, want, rel):
    return abs(got - want) <= abs(want) * rel


def runs(segs):
    out, i = [], 0
    while i < len(segs):
        j = i + 1
        while j < len(segs) and segs[j] == segs[i]:
            j += 1
        out.append((i, j))
        i = j
    return out


def exact_segfit(xs, ys, segs, max_segments=64):
    """The model of segfit.h in Fractions: slope, stderr^2, SSR, intercepts, and the points used."""
    used = [r for r in runs(segs) if r[1] - r[0] >= 2][:max_segments]
    parts = []
    for i, j in used:
        m = j - i
        sx, sy = sum(xs[i:j]), sum(ys[i:j])
        sxx = Fraction(m * sum(x * x for x in xs[i:j]) - sx * sx, m)
        sxy = Fraction(m * sum(x * y for x, y in zip(xs[i:j], ys[i:j])) - sx * sy, m)
        syy = Fraction(m * sum(y * y for y in ys[i:j]) - sy * sy, m)
        parts.append((sxx, sxy, syy, Fraction(sx, m), Fraction(sy, m)))
    Sxx = sum(p[0] for p in parts)
    b = sum(p[1] for p in parts) / Sxx
    ssr = sum(syy - 2 * b * sxy + b * b * sxx for sxx, sxy, syy, _, _ in parts)
    n = sum(j - i for i, j in used)
    var = ssr / (n - len(used) - 1) / Sxx
    intercepts = [my - b * mx for _, _, _, mx, my in parts]
    return {"slope": b, "var": var, "ssr": ssr, "n": n, "intercepts": intercepts, "used": used}


def fit(lib, xs, ys, segs=None, k=0):
    return as_json(lib.shim_segfit(*series(xs, ys, segs), k))


def all_segments(lib, xs, ys, segs):
    first = fit(lib, xs, ys, segs)
    return first, [fit(lib, xs, ys, segs, k) for k in range(first["segments"])]


def segmented_series(rng, segments, per_segment, x0, dx, ratio, noise, gap=10**6):
    """A TSC-like x and a counter-like y with a random offset per segment."""
    xs, ys, segs = [], [], []
    x = x0
    for s in range(segments):
        off = rng.randint(-(10**6), 10**6)
        for _ in range(per_segment):
            x += dx + rng.randint(0, dx // 10)
            xs.append(x)
            ys.append(int(ratio * x) + off + (rng.randint(-noise, noise) if noise else 0))
            segs.append(s)
        x += gap
    return xs, ys, segs


def test_one_segment_equals_fit_line(lib):
    rng = random.Random(1)
    xs, ys, segs = segmented_series(rng, 1, 2000, 2**50 + 12345, 1_150_000, Fraction(1, 23), 1)
    r = fit(lib, xs, ys, segs, 0)
    line = as_json(lib.shim_fit((ctypes.c_int64 * len(xs))(*xs), (ctypes.c_int64 * len(ys))(*ys), len(xs)))
    assert r["ok"] and r["n"] == 2000 and r["segments"] == 1 and r["dropped"] == 0
    assert close(xf_value(r["slope"]), xf_value(line["slope"]), Fraction(1, 2**60))
    for key in ("slope_stderr", "resid_rms"):
        assert close(xf_value(r[key]), xf_value(line[key]), Fraction(1, 2**58)), key
    # b x0 with x0 near 2^50 rounds at 2^-18 ticks, in either fit
    assert abs(xf_value(r["intercept"]) - xf_value(line["intercept"])) < Fraction(1, 10**4)
    e = exact_segfit(xs, ys, segs)
    assert close(xf_value(r["slope"]), e["slope"], REL)


def test_noiseless_segments_recover_the_slope_exactly(lib):
    # x = x0 + 23 k, y = offset_s + k: the slope is exactly 1/23 in every segment
    rng = random.Random(2)
    xs, ys, segs = [], [], []
    k = 0
    for s in range(12):
        off = rng.randint(-(2**40), 2**40)
        for _ in range(rng.randint(2, 300)):
            k += rng.randint(1, 5000)
            xs.append(2**50 + 23 * k)
            ys.append(off + k)
            segs.append(s)
        k += rng.randint(10**6, 10**9)  # a gap
    r, per = all_segments(lib, xs, ys, segs)
    assert r["ok"] and r["segments"] == 12
    assert close(xf_value(r["slope"]), Fraction(1, 23), Fraction(1, 2**61))
    assert xf_value(r["slope_stderr"]) < Fraction(1, 23) * Fraction(1, 10**17)
    assert xf_value(r["resid_rms"]) < Fraction(1, 10**3)
    e = exact_segfit(xs, ys, segs)
    for seg, want in zip(per, e["intercepts"]):
        assert abs(xf_value(seg["intercept"]) - want) < Fraction(1, 10**3)


def lstsq(xs, ys, segs):
    """numpy's answer on the design matrix [indicator columns | x]; x centred
    and scaled to unit spread, or the doubles lose digits to the conditioning."""
    ids = sorted(set(segs))
    xd = np.array(xs, dtype=float)
    xm, xs_scale = xd.mean(), xd.std()
    A = np.zeros((len(xs), len(ids) + 1))
    for i, s in enumerate(segs):
        A[i, ids.index(s)] = 1.0
    A[:, -1] = (xd - xm) / xs_scale
    y = np.array(ys, dtype=float)
    coef, res, rank, _ = np.linalg.lstsq(A, y, rcond=None)
    dof = len(xs) - A.shape[1]
    ssr = float(((A @ coef - y) ** 2).sum())
    cov = ssr / dof * np.linalg.inv(A.T @ A)
    slope = coef[-1] / xs_scale
    se = float(np.sqrt(cov[-1, -1])) / xs_scale
    return slope, se, [coef[j] - slope * xm for j in range(len(ids))], ssr


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_noisy_segments_match_numpy_lstsq(lib, seed):
    rng = random.Random(seed)
    xs, ys, segs = segmented_series(rng, rng.randint(2, 8), rng.randint(20, 400), 10**6, 5000, Fraction(7, 3), 50)
    r, per = all_segments(lib, xs, ys, segs)
    slope, se, intercepts, ssr = lstsq(xs, ys, segs)
    assert r["ok"]
    assert abs(float(xf_value(r["slope"])) - slope) <= abs(slope) * 1e-10
    assert abs(float(xf_value(r["slope_stderr"])) - se) <= se * 1e-6
    assert abs(float(xf_value(r["resid_rms"])) ** 2 * r["n"] - ssr) <= ssr * 1e-8
    for seg, a in zip(per, intercepts):
        assert abs(float(xf_value(seg["intercept"])) - a) < 1e-4
    e = exact_segfit(xs, ys, segs)
    assert close(xf_value(r["slope"]), e["slope"], REL)
    assert close(xf_value(r["slope_stderr"]) ** 2, e["var"], Fraction(1, 10**12))


def test_precision_at_2_to_50_with_many_points_and_segments(lib):
    # 64 segments of 256 points, x and y near 2^50 (days of TSC, a counter of similar rate)
    rng = random.Random(6)
    xs, ys, segs = segmented_series(rng, 64, 256, 2**49, 2**33, Fraction(999_983, 1_000_000), 3, gap=2**35)
    assert max(xs) < 2**50 and max(ys) < 2**50 and len(xs) == 16384
    r = fit(lib, xs, ys, segs)
    e = exact_segfit(xs, ys, segs)
    assert r["ok"] and r["segments"] == 64 and r["n"] == 16384
    assert close(xf_value(r["slope"]), e["slope"], REL)
    # the part of SSR from the segments' slopes differing from b rests on
    # b_s - b, about 2^-42 here, from values good to 2^-63: 2^-21 of a
    # fraction of SSR, far below what a standard error needs
    assert close(xf_value(r["slope_stderr"]) ** 2, e["var"], Fraction(1, 10**9))
    assert close(xf_value(r["resid_rms"]) ** 2, e["ssr"] / e["n"], Fraction(1, 10**9))


def test_general_path_beyond_the_exact_bounds(lib):
    rng = random.Random(7)
    # a segment of more than 2^14 points, and one spanning more than 2^50
    xs, ys, segs = segmented_series(rng, 1, 20000, 10**9, 5000, Fraction(1, 23), 2)
    x = xs[-1] + 10**6
    for i in range(500):
        x += 2**42 + rng.randint(0, 2**30)
        xs.append(x)
        ys.append(int(Fraction(1, 23) * x) + 77 + rng.randint(-2, 2))
        segs.append(1)
    assert xs[-1] - xs[20000] > 2**50
    r = fit(lib, xs, ys, segs)
    e = exact_segfit(xs, ys, segs)
    assert r["ok"] and r["segments"] == 2
    assert close(xf_value(r["slope"]), e["slope"], Fraction(1, 10**13))
    assert close(xf_value(r["slope_stderr"]) ** 2, e["var"], Fraction(1, 10**6))


def test_negative_slope(lib):
    rng = random.Random(8)
    xs, ys, segs = segmented_series(rng, 3, 100, 0, 1000, Fraction(-5, 7), 4)
    r = fit(lib, xs, ys, segs)
    e = exact_segfit(xs, ys, segs)
    assert e["slope"] < 0 and close(xf_value(r["slope"]), e["slope"], REL)
    assert close(xf_value(r["slope_stderr"]) ** 2, e["var"], Fraction(1, 10**12))


def test_lone_points_are_dropped(lib):
    rng = random.Random(9)
    xs, ys, segs = segmented_series(rng, 4, 50, 10**6, 5000, Fraction(3, 1), 10)
    # a lone point before, between and after the segments, far off the line
    xl, yl, sl = [], [], []
    for i, (x, y, s) in enumerate(zip(xs, ys, segs)):
        if i == 0 or segs[i - 1] != s:
            xl.append(x - 1)
            yl.append(y + 10**6)
            sl.append(2 * s)
        xl.append(x)
        yl.append(y)
        sl.append(2 * s + 1)
    xl.append(xs[-1] + 1)
    yl.append(0)
    sl.append(1000)
    clean = fit(lib, xs, ys, segs)
    r, per = all_segments(lib, xl, yl, sl)
    assert r["dropped"] == 5 and r["n"] == 200 and r["segments"] == 4
    assert [p["seg_id"] for p in per] == [1, 3, 5, 7] and [p["seg_n"] for p in per] == [50] * 4
    for key in ("slope", "slope_stderr", "resid_rms"):
        assert r[key] == clean[key], key  # the same sums: bit for bit


def test_more_than_64_segments(lib):
    rng = random.Random(10)
    xs, ys, segs = segmented_series(rng, 70, 5, 10**6, 5000, Fraction(2, 3), 3)
    r = fit(lib, xs, ys, segs)
    first64 = fit(lib, xs[:320], ys[:320], segs[:320])
    assert r["ok"] and r["segments"] == 64 and r["n"] == 320 and r["dropped"] == 30
    assert r["slope"] == first64["slope"] and r["slope_stderr"] == first64["slope_stderr"]
    assert fit(lib, xs, ys, segs, 63)["seg_id"] == 63


def test_degenerate_inputs(lib):
    assert not fit(lib, [1, 2], [1, 2])["ok"]
    r = fit(lib, [5, 5, 5, 9, 9], [1, 2, 3, 4, 5], [0, 0, 0, 1, 1])
    assert not r["ok"] and r["n"] == 5  # no x spread in any segment
    r = fit(lib, [1, 2, 3], [1, 5, 9], [0, 1, 2])
    assert not r["ok"] and r["n"] == 0 and r["dropped"] == 3
    # two segments of two points: one degree of freedom, and a fit
    xs, ys, segs = [0, 10, 100, 110], [0, 21, 500, 519], [0, 0, 1, 1]
    r = fit(lib, xs, ys, segs)
    e = exact_segfit(xs, ys, segs)
    assert r["ok"] and xf_value(r["slope"]) == e["slope"] == 2
    assert close(xf_value(r["slope_stderr"]) ** 2, e["var"], Fraction(1, 10**15))


def residuals(lib, xs, ys, segs):
    out = (XF * len(xs))()
    ok = lib.shim_segfit_residuals(*series(xs, ys, segs), out)
    return ok, [xf_value(v) for v in out]


def test_residuals(lib):
    rng = random.Random(11)
    xs, ys, segs = segmented_series(rng, 3, 300, 2**48, 1_150_000, Fraction(1, 23), 2)
    segs = [0] + [s + 1 for s in segs[1:]]  # the first point alone in segment 0
    ok, res = residuals(lib, xs, ys, segs)
    e = exact_segfit(xs, ys, segs)
    assert ok and res[0] == 0  # not used
    for (i, j), a in zip(e["used"], e["intercepts"]):
        for p in range(i, j):
            want = ys[p] - a - e["slope"] * xs[p]
            assert abs(res[p] - want) < Fraction(1, 10**4)
    assert abs(sum(res)) < Fraction(1, 10**3)  # each segment's residuals sum to zero


def find_step(lib, xs, ys, segs, min_step, k):
    return as_json(lib.shim_segfit_find_step(*series(xs, ys, segs), lib.xf_from_i64(min_step), k))


def test_find_step_finds_an_injected_step(lib):
    rng = random.Random(12)
    for at, size in ((700, 40), (1500, -25), (80, 60)):
        xs, ys, segs = segmented_series(rng, 1, 2000, 2**45, 1_150_000, Fraction(1, 23), 2)
        ys = [y + (size if i >= at else 0) for i, y in enumerate(ys)]
        # a level shift of 32 points each side, against the noise of consecutive differences
        r = find_step(lib, xs, ys, segs, 6, 3)
        assert r["found"] and r["at"] == at
        assert abs(xf_value(r["size"]) - size) <= 5
        # cut there and fit again: nothing left, and the slope is back
        cut = [0 if i < at else 1 for i in range(len(xs))]
        assert not find_step(lib, xs, ys, cut, 6, 3)["found"]
        refit = fit(lib, xs, ys, cut)
        assert abs(xf_value(refit["slope"]) - Fraction(1, 23)) < 4 * xf_value(refit["slope_stderr"]) + Fraction(1, 10**9)


def test_find_step_finds_nothing_in_clean_noisy_data(lib):
    rng = random.Random(13)
    xs, ys, segs = segmented_series(rng, 5, 400, 2**45, 1_150_000, Fraction(1, 23), 2)
    # uniform noise of +-2 ticks and the rounding down of y: consecutive residuals differ by 5 at most
    r = find_step(lib, xs, ys, segs, 6, 3)
    assert r["ok"] and not r["found"]
    # the segment boundaries themselves (offsets of up to 10^6) are not steps
    assert abs(xf_value(r["size"])) <= 6
    # the thresholds: a step below min_step or below k_rms * rms is not reported
    ys2 = [y + (12 if i >= 1000 else 0) for i, y in enumerate(ys)]
    assert find_step(lib, xs, ys2, segs, 6, 3)["at"] == 1000
    assert find_step(lib, xs, ys2, segs, 6, 3)["found"]
    assert not find_step(lib, xs, ys2, segs, 20, 3)["found"]
    assert not find_step(lib, xs, ys2, segs, 6, 100)["found"]
