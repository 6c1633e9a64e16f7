"""The report's figures (matplotlib, PNG): one function per question, each
drawing only what its records hold and returning a note instead of a plot
when there is too little to draw honestly. The Allan deviation is computed
with allantools from the drift fit's residuals (docs/output.md, the
`residuals` record)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from clockbench.records import figures, records

# name -> (title in the page, what the figure answers)
FIGURES = {
    "read_cost": "Read cost: the distribution of one read, every target",
    "sequential_reads": "Sequential reads: the deltas between back-to-back reads",
    "frequency": "TSC frequency over time, against each reference",
    "residuals": "Residuals of the drift fit",
    "allan": "Allan deviation of the TSC against each reference",
}
PLOTS = tuple(FIGURES)

# Sub-windows a frequency-over-time plot needs before a line means anything.
MIN_STABILITY_POINTS = 4
# Residual samples the Allan deviation needs for two octaves of tau.
MIN_ALLAN_POINTS = 16


class TooLittle(Exception):
    """The records hold too little for this figure: the message says what."""


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def sig(x, digits: int = 3, missing: str = "?") -> str:
    """x to `digits` significant figures, never in exponent form; whole
    digits are kept (401089 stays 401089 at 3 figures); `missing` for
    anything that is not a number."""
    if not number(x):
        return missing
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:.{decimals}f}"


def numbers(rec, *keys: str) -> bool:
    return isinstance(rec, dict) and all(number(rec.get(k)) for k in keys)


def _whole(rec, ok, plot: str, notes: list[str]) -> bool:
    """Whether rec can be drawn; a note when not, so a cut or odd record
    costs its own line, never the figure or the page."""
    if not isinstance(rec, dict):
        notes.append(f"a record that is not an object was left out of the {plot} plot")
        return False
    if rec.get("truncated") or not ok(rec):
        notes.append(f"{records.describe(rec)} is incomplete: left out of the {plot} plot")
        return False
    return True


def allantools():
    """allantools, from Debian's site or, where `make deps` put it (it is
    not packaged in Debian), build/pydeps of this repository."""
    try:
        import allantools as at
    except ImportError:
        pydeps = Path(__file__).resolve().parents[3] / "build" / "pydeps"
        if not pydeps.is_dir():
            raise
        sys.path.append(str(pydeps))
        import allantools as at
    return at


# ---------------------------------------------------------------- read cost

_QUANTILES = (("min_ns", None), ("p50_ns", 0.5), ("p99_ns", 0.99), ("p999_ns", 0.999), ("max_ns", None))


def read_cost_series(res: dict, notes: list[str]) -> list[dict]:
    """What the read-cost plot draws for each target: its recorded
    percentiles as (ns, share) points, or one point at 0.5 for a figure that
    stands alone (`kind` "percentiles", "p50 only", "batch", "unresolved").
    A read whose p50 lies below the TSC's step (`below_step`) has no
    percentiles worth drawing (they are the step's quantisation): it is the
    batch's per-read figure, as every table says it (figures.read_cost), or,
    with no batch, a mark at the step labelled so."""
    step = figures.tsc_step_ns(res)
    out = []
    for name, r in (res.get("latency") or {}).items():
        if not _whole(r, lambda r: numbers(r, "p50_ns") or r.get("below_step") is True, "read cost", notes):
            continue
        if r.get("below_step") is True:
            if numbers(r, "batch_ns_per_read") and r["batch_ns_per_read"] > 0:
                out.append({"name": name, "kind": "batch", "points": [(r["batch_ns_per_read"], 0.5)],
                            "label": f"{name}: below the TSC's step, {r['batch_ns_per_read']:.2f} ns by the batch"})
            elif number(step) and step > 0:
                out.append({"name": name, "kind": "unresolved", "points": [(step, 0.5)],
                            "label": f"{name}: below the TSC's step ({step:.1f} ns), not resolved"})
            continue
        if not numbers(r, "min_ns", "p99_ns", "p999_ns", "max_ns", "n") or r["n"] < 2:
            out.append({"name": name, "kind": "p50 only", "points": [(r["p50_ns"], 0.5)], "label": f"{name} (p50 only)"})
            continue
        n = r["n"]
        # nearest-rank percentiles: at least q of the reads cost at most x.
        # min and max sit at the first and last plotting positions,
        # (k - 0.5) / n, so the logit axis can hold them; steps, because
        # nothing is known between two recorded percentiles
        pts = [(r["min_ns"], 0.5 / n)] + [(r[k], q) for k, q in _QUANTILES[1:4]] + [(r["max_ns"], 1 - 0.5 / n)]
        out.append({"name": name, "kind": "percentiles", "points": pts, "label": name, "n": n})
    return out


def read_cost(res: dict, path: Path, notes: list[str]) -> Path:
    """The CDF of each target's read cost through its recorded percentiles,
    on a log x axis and a logit y axis (the tails are where reads differ);
    a read below the TSC's step as the batch's figure (read_cost_series)."""
    series = read_cost_series(res, notes)
    if not series:
        raise TooLittle("no read cost was measured")
    positive = [x for s in series for x, _ in s["points"] if number(x) and x > 0]
    floor = min(positive) / 3 if positive else 0.1  # where a 0 is drawn: a log axis has no zero
    plt = _plt()
    from matplotlib.ticker import NullLocator

    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    only_p50, edge = [], 0.5
    markers = "os^vDPX*<>"
    for i, s in enumerate(series):
        style = dict(color=f"C{i % 10}", marker=markers[i % len(markers)], ms=4, alpha=0.85)
        pts = [(max(x, floor), q) for x, q in s["points"]]
        if s["kind"] == "percentiles":
            edge = min(edge, 0.5 / s["n"])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], drawstyle="steps-post", lw=1.3, label=s["label"], **style)
            continue
        if s["kind"] == "p50 only":
            only_p50.append(s["name"])  # a decoded QR code carries only the p50
        elif s["kind"] == "batch":
            style.update(marker="*", ms=9, mfc="none")
        else:
            style.update(marker="<", ms=7)
        ax.plot([pts[0][0]], [pts[0][1]], ls="none", label=s["label"], **style)
    ax.set_xscale("log")
    ax.set_yscale("logit")
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_ylim(edge / 2, 1 - edge / 2)
    ticks = [q for q in (0.0001, 0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999) if edge / 2 < q < 1 - edge / 2]
    ax.set_yticks(ticks, [f"{100 * q:g}%" for q in ticks])
    ax.set_xlabel(f"read cost (ns, log scale; a 0 is drawn at {floor:.2g} ns)")
    ax.set_ylabel("share of reads costing at most x")
    ax.set_title("What does one read cost? (min, p50, p99, p99.9, max; steps between)")
    if any(s["kind"] in ("batch", "unresolved") for s in series):
        # how the plot draws it, said on the plot: nothing is left out, so no note (they are "Left out" on the page)
        fig.text(0.01, 0.005, "star: a read below the TSC's step, at the batch's per-read figure; triangle: at the step, "
                 "where no batch ran (its percentiles are the step's quantisation)", fontsize=7, va="bottom")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    if only_p50:
        notes.append(f"read cost: only the median is known for {', '.join(only_p50)} (a decoded QR code)")
    return _save(fig, path)


# ------------------------------------------------------------ sequential reads

def _bins(pairs) -> list[tuple[float, int]]:
    return [(float(d), int(c)) for d, c in pairs if number(d) and number(c) and c > 0]


def sequential_reads(res: dict, path: Path, notes: list[str]) -> Path:
    """Per target, the deltas between consecutive reads as bars at their
    values on log axes; repeats (delta 0) are said in words, a log axis has
    no zero."""
    hists = {n: _bins(b) for n, b in (res.get("histograms") or {}).items() if isinstance(b, list)}
    hists = {n: b for n, b in hists.items() if b}
    if not hists:
        raise TooLittle("no sequential reads were recorded")
    plt = _plt()
    from matplotlib.ticker import NullLocator

    names = list(hists)
    cols = 2 if len(names) > 1 else 1
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(8, 1.9 * rows + 0.8), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax, n in zip(axes.flat, names):
        bins = hists[n]
        r = (res.get("resolution") or {}).get(n) or {}
        tick = r["nominal_tick_ns"] if numbers(r, "nominal_tick_ns") and r["nominal_tick_ns"] > 0 else None
        scale = tick or 1.0
        moved = [(d * scale, c) for d, c in bins if d > 0]
        zeros = sum(c for d, c in bins if d == 0)
        total = sum(c for _, c in bins)
        lat = (res.get("latency") or {}).get(n) or {}
        p50 = lat["p50_ns"] if numbers(lat, "p50_ns") and lat["p50_ns"] > 0 else None
        if lat.get("below_step") is True:  # the step's quantisation: the batch's figure stands for a read
            p50 = lat["batch_ns_per_read"] if numbers(lat, "batch_ns_per_read") and lat["batch_ns_per_read"] > 0 else None
        if moved:
            xs = [x for x, _ in moved]
            # each bar spans at most a factor of 1.15 around its value, and
            # never past half-way (in log terms) to its neighbours
            left = [x / 1.075 if i == 0 else max(x / 1.075, math.sqrt(x * xs[i - 1])) for i, x in enumerate(xs)]
            right = [x * 1.075 if i == len(xs) - 1 else min(x * 1.075, math.sqrt(x * xs[i + 1])) for i, x in enumerate(xs)]
            ax.bar(left, [c for _, c in moved], width=[r - l for l, r in zip(left, right)],
                   align="edge", color="tab:green", edgecolor="darkgreen", lw=0.3)
            ax.set_xscale("log")
            ax.set_yscale("log")
            # the nominal tick and the read cost are drawn when they are near
            # the deltas (a TSC tick of 0.4 ns beside 9 us deltas is not)
            marks = [v for v in (tick, p50) if v and min(xs) / 100 <= v <= max(xs) * 100]
            lo, hi = min(xs + marks), max(xs + marks)
            ax.set_xlim(lo / 2.5, hi * 2.5)
            ax.set_ylim(0.7, max(c for _, c in moved) * 2.5)
            ax.yaxis.set_minor_locator(NullLocator())  # minor ticks on 8 log axes cost seconds
            if tick in marks:
                ax.axvline(tick, color="k", ls=":", lw=1)
            if p50 in marks:
                ax.axvline(p50, color="tab:red", ls="--", lw=1)
        else:
            ax.text(0.5, 0.5, "every read saw the same value", transform=ax.transAxes, ha="center")
        label = f"{n}: {total} deltas"
        if zeros:
            label += f"; {zeros} repeats ({100 * zeros / total:.0f}%)"
        ax.set_title(label, fontsize=8)
        if not tick:
            notes.append(f"sequential reads: {n} has no nominal tick; its deltas are drawn in ticks")
    for ax in axes[-1]:
        ax.set_xlabel("delta between consecutive reads (ns)")
    for ax in axes[:, 0]:
        ax.set_ylabel("reads")
    fig.suptitle("Sequential reads: dotted one nominal tick, dashed the read cost p50", fontsize=9)
    return _save(fig, path)


# ------------------------------------------------------------------ frequency

def _stability(res: dict, notes: list[str]) -> dict[str, list[dict]]:
    ok = lambda s: (isinstance(s.get("reference"), str) and numbers(s, "start_s", "ppm_vs_window")  # noqa: E731
                    and (s.get("stderr_ppm") is None or numbers(s, "stderr_ppm")))
    by: dict[str, list[dict]] = {}
    for s in res.get("stability") or []:
        if _whole(s, ok, "frequency", notes):
            by.setdefault(s["reference"], []).append(s)
    return by


def frequency(res: dict, path: Path, notes: list[str]) -> Path:
    """The TSC's rate in each sub-window against each reference, ppm from
    the whole-window fit, with the sub-window's standard error as bars."""
    by = _stability(res, notes)
    if not by:
        raise TooLittle("no sub-window fits were recorded (the drift experiment did not run)")
    most = max(len(v) for v in by.values())
    if most < MIN_STABILITY_POINTS:
        raise TooLittle(f"only {most} sub-window{'' if most == 1 else 's'} of {by[next(iter(by))][0].get('length_s', 1)} s: too few to show a "
                        f"drift over time (the table lists them; profile=standard gives 60)")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    for i, (ref, pts) in enumerate(sorted(by.items())):
        pts = sorted(pts, key=lambda p: p["start_s"])
        half = [p.get("length_s", 1) / 2 if numbers(p, "length_s") else 0.5 for p in pts]
        ax.errorbar([p["start_s"] + h for p, h in zip(pts, half)], [p["ppm_vs_window"] for p in pts],
                    yerr=[p.get("stderr_ppm") or 0 for p in pts], xerr=half, fmt="o", ms=3, capsize=2,
                    color=f"C{i}", label=f"tsc vs {ref}")
    ax.axhline(0, color="k", lw=1)
    ax.set_xlabel("time into the drift window (s)")
    ax.set_ylabel("ppm from the whole-window fit")
    ax.set_title("Does the TSC's frequency drift? (bars: each sub-window's standard error)")
    ax.legend(fontsize=8)
    return _save(fig, path)


# ------------------------------------------------------------------ residuals

def residual_series(r: dict) -> bool:
    t, y = r.get("t_ms"), r.get("resid_ps")
    return (isinstance(r.get("reference"), str) and isinstance(t, list) and isinstance(y, list) and len(t) == len(y) > 0
            and all(number(v) for v in t + y))


def _residuals(res: dict, plot: str, notes: list[str]) -> list[dict]:
    return [r for r in res.get("residuals") or [] if _whole(r, residual_series, plot, notes)]


def residuals(res: dict, path: Path, notes: list[str]) -> Path:
    rs = _residuals(res, "residuals", notes)
    if not rs:
        raise TooLittle("no fit residuals were recorded")
    plt = _plt()
    fig, axes = plt.subplots(len(rs), 1, figsize=(7.5, 1.6 * len(rs) + 0.9), sharex=True, squeeze=False)
    # gaps (the CPU away, every clock running) split nothing: only cuts are marked
    cuts = [d for d in res.get("discontinuities") or [] if numbers(d, "at_s") and d.get("kind") != "gap"]
    for i, (ax, r) in enumerate(zip(axes[:, 0], rs)):
        ax.plot([t / 1000 for t in r["t_ms"]], [p / 1000 for p in r["resid_ps"]], ".", ms=3, color=f"C{i}")
        ax.axhline(0, color="k", lw=0.8)
        for d in cuts:
            if d.get("reference") in (None, r["reference"]):
                ax.axvline(d["at_s"], color="tab:red", ls="--", lw=1)
        ax.set_ylabel(f"vs {r['reference']}\n(ns)")
    axes[-1, 0].set_xlabel("time into the drift window (s)" + ("; dashed: a discontinuity that cuts the fit" if cuts else ""))
    axes[0, 0].set_title("Reference reading minus the fitted line (the TSC's time error against it)")
    return _save(fig, path)


# -------------------------------------------------------------- Allan deviation

def allan_series(res: dict, notes: list[str]) -> list[dict]:
    """Per reference, the overlapping Allan deviation of the TSC from the
    fit residuals (phase data, s): taus in octaves of the sample spacing.
    The residual samples are evenly spaced slots of the window (docs/output.md),
    so tau0 is their median spacing."""
    import numpy as np

    at = allantools()
    out = []
    for r in _residuals(res, "Allan deviation", notes):
        t = np.asarray(r["t_ms"], dtype=float) / 1000
        x = np.asarray(r["resid_ps"], dtype=float) * 1e-12
        if len(t) < MIN_ALLAN_POINTS or np.any(np.diff(t) <= 0):
            notes.append(f"Allan deviation: tsc vs {r['reference']} has {len(t)} residual samples"
                         f"{'' if len(t) < MIN_ALLAN_POINTS else ' out of order'}: left out")
            continue
        tau0 = float(np.median(np.diff(t)))
        taus, adev, err, n = at.oadev(x, rate=1 / tau0, data_type="phase", taus="octave")
        keep = (adev > 0) & np.isfinite(adev)
        if not keep.any():
            notes.append(f"Allan deviation: tsc vs {r['reference']}: every deviation is zero")
            continue
        out.append({"reference": r["reference"], "tau0_s": tau0, "samples": len(t),
                    "tau_s": taus[keep].tolist(), "adev": adev[keep].tolist(), "err": err[keep].tolist(),
                    "n": [int(k) for k in n[keep]]})
    return out


def allan(res: dict, path: Path, notes: list[str]) -> Path:
    series = res.get("allan") if res.get("allan") is not None else allan_series(res, notes)
    if not series:
        raise TooLittle("no usable fit residuals for an Allan deviation")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for i, s in enumerate(series):
        ax.errorbar(s["tau_s"], s["adev"], yerr=s["err"], fmt="o-", ms=3, capsize=2, color=f"C{i}",
                    label=f"tsc vs {s['reference']} (tau0 {s['tau0_s'] * 1000:.3g} ms, {s['samples']} samples)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"averaging time $\tau$ (s)")
    ax.set_ylabel("overlapping Allan deviation\n" + r"$\sigma_y(\tau)$ (fractional)")
    ax.set_title("Allan deviation of the TSC, from the drift fit's residuals (allantools)")
    ax.legend(fontsize=7)
    return _save(fig, path)


DRAW = {"read_cost": read_cost, "sequential_reads": sequential_reads, "frequency": frequency,
        "residuals": residuals, "allan": allan}


# ------------------------------------------------------------ the ladder (clockbench-os with the languages)

LADDER_TITLE = "The ladder: what one read costs at each layer, per clocksource"


def ladder(tables: list[dict], path: Path, notes: list[str]) -> Path:
    """Cost p50 per layer, one panel per clocksource (report/ladder.py's
    tables): the bare read at the top, then the vDSO, libc, the syscall and
    each language's APIs, on a log axis; a batch's cost per call is hatched
    (not a single call), a row with no cost is left out and said."""
    panels = [t for t in tables if any(number(r.get("p50_ns")) and r["p50_ns"] > 0 for r in t["rows"])]
    if not panels:
        raise TooLittle("no layer has a cost")
    plt = _plt()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    height = max(len(t["rows"]) for t in panels) * 0.2 + 1.2
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels) + 1.6, height), squeeze=False, sharey=False)
    layers: list[str] = []
    for t in panels:
        for r in t["rows"]:
            if r["layer"] not in layers:
                layers.append(r["layer"])
    # ten layers and more (the OS's, eight languages): a palette of twenty, so no two share a colour
    palette = plt.get_cmap("tab20")
    colour = {layer: palette(i % 20) for i, layer in enumerate(layers)}
    missing = []
    for ax, t in zip(axes[0], panels):
        rows = [r for r in t["rows"] if number(r.get("p50_ns")) and r["p50_ns"] > 0]
        missing += [f"{r['layer']} {r['read']} on {t['clocksource']}" for r in t["rows"] if r not in rows]
        ys = list(range(len(rows)))[::-1]
        # a p50 under the TSC's step is the step's, not a cost: drawn faint, its label marked "<"
        below = [str(r.get("cost", "")).startswith("<") for r in rows]
        for y, r, low in zip(ys, rows, below):
            ax.barh(y, r["p50_ns"], color=colour[r["layer"]], hatch="//" if r.get("method") == "batch" else None,
                    edgecolor="white" if r.get("method") == "batch" else None, height=0.75, alpha=0.35 if low else 1.0)
        ax.set_yticks(ys, [("< " if low else "") + f"{r['layer']} {r['read']}"[:44] for r, low in zip(rows, below)], fontsize=6.5)
        ax.set_xscale("log")
        # the costs span one or two decades: labels at 1, 2 and 5 of each, in
        # plain ns, so that a bar can be read (the default labels 10^2 alone)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("p50 cost per read (ns, log scale)")
        ax.set_title(f"clocksource {t['clocksource']}")
    fig.suptitle("What does one read cost, from the bare counter up to each language?\n"
                 "(p50; hatched: a batch's cost per call, not one call alone;\n"
                 "faint, marked \"<\": under the TSC's step, a bound, not a cost)", fontsize=9)
    if missing:
        notes.append(f"ladder plot: no cost for {', '.join(missing)}")
    return _save(fig, path)
