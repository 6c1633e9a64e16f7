"""`clockbench fleet`: one table for many machines, from the store of runs.

One row per machine (its latest run, or every run with --all), grouped by
CPU (vendor, brand, family.model.stepping) and firmware. Within its group
each figure is compared with robust statistics: the median m and the median
absolute deviation MAD; a machine is an outlier when |x - m| exceeds
max(K x 1.4826 x MAD, the figure's floor): 1.4826 x MAD estimates one
standard deviation for normal data, K = 3.5 of them (Iglewicz and Hoaglin's
modified z-score limit, 0.6745 (x - m) / MAD > 3.5), and the floor is the
least difference that matters for that figure (so that a group of nearly
identical machines does not flag noise). Figures that do not depend on the
CPU model (stolen time, stalls, timer lateness, cross-CPU offsets) are
compared with the whole fleet when a group has fewer than MIN_GROUP
machines; the TSC's rate only ever within its group. A failed check or a run
that did not pass is flagged whatever the group, and so is a figure past an
absolute limit (a TSC off its claim by more than 100 ppm, a crystal off its
nominal rate by more than the HPET's 500 ppm). A figure that states its own
uncertainty u (the TSC's rate, its offset from its claim, a crystal's) is
flagged only when it is also more than U_K x u from the median or past the
absolute limit: a short or disturbed run whose figure cannot tell is not an
outlier, however far its value lies.

clockbench-os runs measure Linux on a host, not the machine bare: they are
the rows of a section of their own, one per Linux host (osfleet.py), with
what sets some hosts apart said in words."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import re
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from clockbench import errors
from clockbench.fleet import osfleet
from clockbench.records import figures
from clockbench.runs import store

K = 3.5
MAD_SCALE = 1.4826
MIN_GROUP = 3
U_K = 3  # standard uncertainties a figure must lie beyond, as the image's own checks ask


def _fig(run: store.Run, name: str, scale: float = 1.0) -> float | None:
    f = run.figures.get(name)
    return f.value * scale if f is not None else None


def _u(run: store.Run, name: str, relative_ppm: bool = False) -> float | None:
    """A figure's stated standard uncertainty, in its unit (relative_ppm: in
    ppm of its value), or None when it states none."""
    f = run.figures.get(name)
    if f is None or f.uncertainty is None:
        return None
    if relative_ppm:
        return f.uncertainty / f.value * 1e6 if f.value else None
    return f.uncertainty


def _stolen_ms(run: store.Run) -> float | None:
    # the longest single gap, in the stolen-time scan or the drift window: a sum (away_s) would
    # grow with every ordinary preemption of a busy host
    vals = [v for v in (_fig(run, "stolen_max_ns", 1e-6), _fig(run, "gap_max_ns", 1e-6)) if v is not None]
    return max(vals) if vals else None


def _stall_ms(run: store.Run) -> float | None:
    vals = [v for v in (_fig(run, "stall_max_ns", 1e-6), _fig(run, "cut_max_ns", 1e-6)) if v is not None]
    return max(vals) if vals else None


@dataclass(frozen=True)
class Metric:
    key: str
    title: str  # as a column heads it
    what: str  # as a flag names it
    unit: str
    get: Callable[[store.Run], float | None]
    floor: float  # the least deviation from the median that matters, in unit
    high_only: bool = True  # only a value above the median is bad
    fleet_fallback: bool = True  # compared with the whole fleet when the group is small
    absolute: float | None = None  # |x| beyond this is flagged whatever the others do
    relative_to_median: bool = False  # deviations in ppm of the median (the TSC's rate)
    uncertainty: Callable[[store.Run], float | None] | None = None  # the figure's own, in the deviations' unit


METRICS = [
    Metric("tsc_mhz", "TSC MHz", "TSC rate far from its group's", "ppm", lambda r: _fig(r, "tsc_hz", 1e-6), 10.0,
           high_only=False, fleet_fallback=False, relative_to_median=True, uncertainty=lambda r: _u(r, "tsc_hz", True)),
    Metric("tsc_claim_ppm", "vs claim ppm", "TSC far from its claim", "ppm", lambda r: _fig(r, "tsc_vs_claim_ppm"), 10.0,
           high_only=False, absolute=100.0, uncertainty=lambda r: _u(r, "tsc_vs_claim_ppm")),
    Metric("crystal_ppm", "crystal ppm", "a crystal off its nominal rate", "ppm", lambda r: _fig(r, "crystal_ppm"), 10.0,
           high_only=False, absolute=500.0, uncertainty=lambda r: _u(r, "crystal_ppm")),
    Metric("offset_us", "CPU offset us", "cross-CPU TSC offset", "us", lambda r: _fig(r, "cpu_offset_proven_ns", 1e-3), 1.0),
    # the median lateness: a p99 of 32 interrupts is one interrupt, which on a shared host
    # measures the host's scheduler more than the machine
    Metric("timer_p50_us", "timer p50 us", "timer lateness (p50, 100 us ahead)", "us", lambda r: _fig(r, "timer_p50_ns", 1e-3),
           1000.0),
    # a second: a busy host preempts a virtual machine for most of one now and then
    Metric("stolen_ms", "stolen ms", "time stolen from the CPU", "ms", _stolen_ms, 1000.0),
    Metric("stall_ms", "stall ms", "a clock stood still or jumped", "ms", _stall_ms, 50.0),
]
BY_KEY = {m.key: m for m in METRICS}


def threshold_text() -> str:
    floors = ", ".join(f"{m.key} {m.floor:g} {m.unit}" for m in METRICS)
    return (f"outlier: |x - median| > max({K:g} x {MAD_SCALE} x MAD, floor) within the group (CPU and firmware; "
            f"the whole fleet for all but the TSC rate when a group has under {MIN_GROUP} machines); floors: {floors}; "
            f"absolute limits: TSC vs claim 100 ppm, crystal 500 ppm; a figure that states its uncertainty u only when "
            f"also beyond {U_K} u; any failed check or run that did not pass")


@dataclass
class Flag:
    metric: str
    what: str
    value: float | None = None
    median: float | None = None
    mad: float | None = None
    limit: float | None = None
    unit: str = ""
    against: str = "group"  # "group", "fleet" or "absolute"; "checks" for a failed check

    def text(self) -> str:
        if self.metric == "checks":
            return self.what
        if self.against == "absolute":
            return f"{self.what}: {_n(self.value)} {self.unit} (limit {_n(self.limit)})"
        if self.median is None:  # the value is itself the deviation (the TSC's rate, in ppm of the median)
            return (f"{self.what}: {'+' if self.value >= 0 else ''}{_n(self.value)} {self.unit} from the {self.against} median "
                    f"(MAD {_n(self.mad)}, limit {_n(self.limit)})")
        dev = self.value - self.median
        return (f"{self.what}: {_n(self.value)} {self.unit}, {'+' if dev >= 0 else ''}{_n(dev)} from the {self.against} median "
                f"{_n(self.median)} (MAD {_n(self.mad)}, limit {_n(self.limit)})")


def _n(v) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 0.1 else f"{v:.2g}"


@dataclass
class Row:
    run: store.Run
    values: dict[str, float | None]
    flags: list[Flag] = field(default_factory=list)

    @property
    def machine(self) -> str:
        return self.run["machine"]


@dataclass
class Group:
    key: tuple
    rows: list[Row]
    stats: dict[str, dict] = field(default_factory=dict)

    @property
    def title(self) -> str:
        vendor, brand, fms, firmware = self.key
        return f"{brand or vendor or 'unknown CPU'} ({vendor or '?'} {fms}), firmware {firmware or 'unknown'}"


def group_key(run: store.Run) -> tuple:
    fms = ".".join("?" if run[k] is None else str(run[k]) for k in ("cpu_family", "cpu_model", "cpu_stepping"))
    return (run["cpu_vendor"], run["cpu_brand"], fms, run["firmware"])


def robust(values: list[float]) -> tuple[float, float]:
    m = statistics.median(values)
    return m, statistics.median(abs(v - m) for v in values)


def _deviations(metric: Metric, vals: list[float], median: float) -> list[float]:
    if metric.relative_to_median:
        return [(v / median - 1) * 1e6 for v in vals] if median else [0.0 for _ in vals]
    return [v - median for v in vals]


def _within_its_uncertainty(metric: Metric, row: Row, distance: float) -> bool:
    """Whether the row's figure lies within U_K of its own stated standard
    uncertainties of what it is compared with (the median, or the limit)."""
    u = metric.uncertainty(row.run) if metric.uncertainty else None
    return u is not None and distance <= U_K * u


def analyse(runs: list[store.Run]) -> list[Group]:
    rows = [Row(r, {m.key: m.get(r) for m in METRICS}) for r in runs]
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        groups.setdefault(group_key(row.run), []).append(row)
    out = [Group(k, v) for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))]
    for g in out:
        for m in METRICS:
            members = [r for r in g.rows if r.values[m.key] is not None]
            against = "group"
            pool = members
            if len(members) < MIN_GROUP and m.fleet_fallback:
                pool = [r for r in rows if r.values[m.key] is not None]
                against = "fleet"
            if len(pool) < MIN_GROUP:
                g.stats[m.key] = {"n": len(pool), "against": against, "median": None, "mad": None, "limit": None,
                                  "note": f"under {MIN_GROUP} machines: not compared"}
            else:
                vals = [r.values[m.key] for r in pool]
                med, _ = robust(vals)
                devs = _deviations(m, vals, med)
                _, mad = robust(devs)
                limit = max(K * MAD_SCALE * mad, m.floor)
                g.stats[m.key] = {"n": len(pool), "against": against, "median": med, "mad": mad, "limit": limit}
                for r in members:
                    x = r.values[m.key]
                    dev = _deviations(m, [x], med)[0]
                    if _within_its_uncertainty(m, r, abs(dev)):
                        continue
                    if (dev > limit) or (not m.high_only and dev < -limit):
                        r.flags.append(Flag(m.key, m.what, dev if m.relative_to_median else x,
                                            None if m.relative_to_median else med, mad, limit, m.unit, against))
            if m.absolute is not None:
                for r in members:
                    x = r.values[m.key]
                    if abs(x) > m.absolute and not _within_its_uncertainty(m, r, abs(x) - m.absolute) \
                            and not any(f.metric == m.key for f in r.flags):
                        r.flags.append(Flag(m.key, m.what, x, None, None, m.absolute, m.unit, "absolute"))
        for r in g.rows:
            failed = [c["name"] for c in r.run.checks if c["result"] == "FAIL"]
            if failed:
                r.flags.append(Flag("checks", f"failed check{'s' if len(failed) > 1 else ''}: {', '.join(failed)}",
                                    against="checks"))
            if r.run["status"] != "passed":
                why = r.run["reason"] or r.run["status"]
                r.flags.append(Flag("checks", f"the run did not pass: {r.run['status']} ({why})", against="checks"))
    return out


# -- output -------------------------------------------------------------------

COLUMNS = ["machine", "date (UTC)", "status", "TSC read", *[m.title for m in METRICS], "flags"]


def tsc_read(run: store.Run) -> str:
    """The TSC's read cost as every output says it (figures.read_cost): the
    text kept with the figure; a run stored before it, from its p50."""
    f = run.figures.get("tsc_read_ns")
    if f is not None and f.detail:
        return f.detail
    p50 = run.figures.get("read_p50_ns:rdtsc")
    return figures.read_cost({"p50_ns": p50.value}) if p50 is not None else "-"


_BELOW = re.compile(r"below the TSC's step \((\S+) ns\): (?:(\S+) ns a read by the batch|not resolved)")


def short_cost(text: str) -> tuple[str, bool]:
    """A read cost for a table cell, as the image's verdict prints it: below
    the TSC's step, the batch's figure starred ("9.54* ns"), or "<10.0* ns"
    where no batch ran; (the cell, whether it is starred). The whole words
    go once under the table."""
    m = _BELOW.fullmatch(text)
    if not m:
        return text, False
    return (f"{m.group(2)}* ns" if m.group(2) else f"<{m.group(1)}* ns"), True


STAR_NOTE = ("* below the TSC's step: the batch's per-read figure (<: the step itself, no batch ran); "
             "its p50 is the step's quantisation, not a cost")


def _cells(row: Row, g: Group) -> list[str]:
    r = row.run
    vals = []
    for m in METRICS:
        v = row.values[m.key]
        if v is not None and m.relative_to_median:
            med = g.stats[m.key].get("median")
            vals.append(f"{v:.3f}" + (f" ({(v / med - 1) * 1e6:+.1f} ppm)" if med else ""))
        else:
            vals.append(_n(v))
    flagged = sorted({f.metric for f in row.flags})
    return [r["machine"], (r["started"] or "?")[:19].replace("T", " "), r["status"], tsc_read(r), *vals,
            ("OUTLIER: " + ", ".join(flagged)) if flagged else "ok"]


def _stat_text(m: Metric, s: dict) -> str:
    if m.relative_to_median:
        return f"{m.key} median {s['median']:.6f} MHz, MAD {_n(s['mad'])} ppm, limit {_n(s['limit'])} ppm (n={s['n']})"
    return f"{m.key} median {_n(s['median'])} MAD {_n(s['mad'])} limit {_n(s['limit'])} {m.unit} (n={s['n']})"


def as_text(groups: list[Group], all_runs: bool, left_out: list[str] | None = None,
            os_fleet: osfleet.OsFleet | None = None) -> str:
    unit = "run" if all_runs else "machine"
    hosts = f"; {_count(len(os_fleet.rows), 'Linux host run' if all_runs else 'Linux host')} (clockbench-os)" if os_fleet else ""
    if not groups:  # only clockbench-os runs: the Linux hosts' section alone
        lines = [f"clockbench fleet: no run of the image on a bare machine{hosts}"]
        if left_out:
            lines.append("Left out: " + "; ".join(left_out))
        return "\n".join(lines + [""] + osfleet.as_text(os_fleet, all_runs)) + "\n"
    lines = [f"clockbench fleet: {_count(sum(len(g.rows) for g in groups), unit)} in {_count(len(groups), 'group')}{hosts}",
             threshold_text()]
    if left_out:
        lines.append("Left out: " + "; ".join(left_out))
    # a figure compared with the whole fleet has the same statistics in every
    # group that falls back to it: said once, here
    fleet_wide = {}
    for g in groups:
        for m in METRICS:
            s = g.stats[m.key]
            if s.get("against") == "fleet" and s.get("median") is not None:
                fleet_wide[m.key] = _stat_text(m, s)
    if fleet_wide:
        lines.append("Whole fleet (for groups under " f"{MIN_GROUP} {unit}s): " + "; ".join(fleet_wide.values()))
    lines.append("")
    for g in groups:
        lines.append(f"== {g.title}: {_count(len(g.rows), unit)}")
        rows = [COLUMNS] + [_cells(r, g) for r in g.rows]
        starred = False
        for x in rows[1:]:  # the read-cost cell short, as the verdict's: the sentence would make the row 250 wide
            x[3], star = short_cost(x[3])
            starred |= star
        widths = [max(len(x[i]) for x in rows) for i in range(len(COLUMNS))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in rows]
        stat = [_stat_text(m, s) for m in METRICS
                if (s := g.stats[m.key]).get("median") is not None and s.get("against") == "group"]
        if starred:
            lines.append("  " + STAR_NOTE)
        if stat:
            lines.append("  Group: " + "; ".join(stat))
        lines.append("")
    flagged = [(g, r) for g in groups for r in g.rows if r.flags]
    if flagged:
        lines.append(f"Outliers: {len(flagged)}")
        for g, r in flagged:
            lines.append(f"  {r.machine} (run {r.run['id']}):")
            lines += [f"    {f.text()}" for f in r.flags]
    else:
        lines.append("Outliers: none")
    if os_fleet is not None:
        lines += [""] + osfleet.as_text(os_fleet, all_runs)
    return "\n".join(lines) + "\n"


def as_json(groups: list[Group], all_runs: bool, left_out: list[str] | None = None,
            os_fleet: osfleet.OsFleet | None = None) -> dict:
    return {
        "format": "clockbench-fleet", "version": 1, "rows": "runs" if all_runs else "latest run per machine",
        "threshold": {"k": K, "mad_scale": MAD_SCALE, "min_group": MIN_GROUP, "u_k": U_K, "text": threshold_text(),
                      "floors": {m.key: {"floor": m.floor, "unit": m.unit, "absolute": m.absolute} for m in METRICS}},
        "groups": [{
            "cpu_vendor": g.key[0], "cpu_brand": g.key[1], "family_model_stepping": g.key[2], "firmware": g.key[3],
            "title": g.title, "stats": g.stats,
            "machines": [{"machine": r.machine, "run_id": r.run["id"], "started": r.run["started"], "status": r.run["status"],
                          "place": r.run.get("place"), "values": r.values,
                          "outlier": bool(r.flags), "flags": [{**f.__dict__, "text": f.text()} for f in r.flags]}
                         for r in g.rows],
        } for g in groups],
        "outliers": sorted({r.machine for g in groups for r in g.rows if r.flags}),
        "left_out": left_out or [],
        # the Linux hosts (clockbench-os runs): osfleet.as_json, docs/fleet.md ("Linux hosts"); null when there are none
        "os_hosts": osfleet.as_json(os_fleet, all_runs) if os_fleet is not None else None,
    }


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def plots(groups: list[Group]) -> list[dict]:
    """The TSC's rate against its claim (else its group's median) per
    machine, with its uncertainty; the cross-CPU offsets; the stolen time."""
    from clockbench.report.plots import _plt

    plt = _plt()
    rows = [(g, r) for g in groups for r in g.rows]
    out = []
    names, ppm, err, colors, basis = [], [], [], [], []
    for g, r in rows:
        hz = r.run.figures.get("tsc_hz")
        claim = r.run.figures.get("tsc_claim_hz")
        med = g.stats["tsc_mhz"].get("median")
        if hz is None:
            continue
        if claim is not None and claim.value:
            ref, what = claim.value, "claim"
        elif med:
            ref, what = med * 1e6, "group median"
        else:
            continue
        names.append(r.machine)
        ppm.append((hz.value / ref - 1) * 1e6)
        err.append((hz.uncertainty or 0) / ref * 1e6)
        colors.append("#c0392b" if r.flags else "#2c7fb8")
        basis.append(what)
    if names:
        fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(names) + 2), 3.6))
        ax.errorbar(range(len(names)), ppm, yerr=err, fmt="none", ecolor="#555")
        ax.scatter(range(len(names)), ppm, c=colors, zorder=3)
        ax.axhline(0, color="#888", lw=0.8)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel("TSC rate - reference (ppm)")
        ax.set_title("The TSC's measured rate against its claim (or its group's median); red: an outlier")
        out.append({"id": "tsc", "title": "TSC rate against its claim", "src": _png(fig),
                    "note": ", ".join(sorted(set(basis))) + " as the reference"})
    for key, title, ylabel in (("offset_us", "Cross-CPU TSC offset (the largest the bounds prove)", "us"),
                               ("stolen_ms", "Time stolen from the CPU (longest gap)", "ms"),
                               ("stall_ms", "A clock stood still or jumped (longest)", "ms")):
        pts = [(r.machine, r.values[key], bool(r.flags)) for g, r in rows if r.values[key] is not None]
        if not pts:
            continue
        fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(pts) + 2), 3.2))
        ax.bar(range(len(pts)), [p[1] for p in pts], color=["#c0392b" if p[2] else "#2c7fb8" for p in pts])
        ax.set_xticks(range(len(pts)), [p[0] for p in pts], rotation=45, ha="right", fontsize=7)
        ax.set_ylabel(ylabel)
        ax.set_title(title + "; red: an outlier")
        out.append({"id": key, "title": title, "src": _png(fig), "note": ""})
    return out


def write_html(groups: list[Group], all_runs: bool, path: Path, source: str, left_out: list[str] | None = None,
               os_fleet: osfleet.OsFleet | None = None) -> None:
    from clockbench.report.pages import environment

    os_plot = osfleet.plot(os_fleet) if os_fleet is not None else None
    os_langs = osfleet.languages_present(os_fleet) if os_fleet is not None else []
    page = environment().get_template("fleet.html.j2").render(
        title="clockbench fleet", source=source, threshold=threshold_text(), groups=groups, columns=COLUMNS,
        cells=_cells, metrics=METRICS, fmt=_n, plots=plots(groups) + ([os_plot] if os_plot else []), all_runs=all_runs,
        left_out=left_out or [], os_fleet=os_fleet, os_columns=osfleet.columns(os_fleet) if os_fleet else [],
        os_cells=lambda r: osfleet.cells(r, os_langs), os_apis=osfleet.apis_line(os_fleet) if os_fleet else "",
        os_threshold=osfleet.threshold_text(os_fleet) if os_fleet else "", date=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    path.write_text(page)


def _newest(kept: list[store.Run], all_runs: bool) -> list[store.Run]:
    if all_runs:
        return kept
    newest: dict[str, store.Run] = {}
    for r in kept:  # oldest first: the last one seen is the newest
        newest[r["machine"]] = r
    return sorted(newest.values(), key=lambda r: (r["started"] or "", r["id"]))


def machine_runs(every: list[store.Run], all_runs: bool) -> tuple[list[store.Run], list[str]]:
    """The runs of the image that are a machine's rows (each machine's
    latest, or all of them), and what was left out and why: a run that never
    reached the image (status "did not run") is no measurement of its
    machine. clockbench-os runs measure Linux on the machine, not the machine
    bare: they are the Linux hosts' rows (os_runs)."""
    kept, left = [], 0
    for r in every:
        if r["status"] == store.DID_NOT_RUN:
            left += 1
        elif r.get("tool") != store.OS_TOOL:
            kept.append(r)
    notes = [f"{_count(left, 'run')} that never reached the image (did not run)"] if left else []
    return _newest(kept, all_runs), notes


def os_runs(every: list[store.Run], all_runs: bool) -> list[store.Run]:
    """The clockbench-os runs that are the Linux hosts' rows: each host's
    latest (or all of them)."""
    return _newest([r for r in every if r.get("tool") == store.OS_TOOL and r["status"] != store.DID_NOT_RUN], all_runs)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def main(args) -> int:
    with store.open_store(args.store, create=False) as st:
        every = st.runs(latest=False)
    if not every:
        raise errors.NoInput(f"{args.store}: the store holds no runs (`clockbench run`, `capture`, `import`)")
    runs, left_out = machine_runs(every, args.all)
    hosts = os_runs(every, args.all)
    if not runs and not hosts:
        raise errors.NoInput(f"{args.store}: no run of a bare machine or a Linux host to compare; left out: {'; '.join(left_out)}")
    groups = analyse(runs)
    os_fleet = osfleet.analyse(hosts) if hosts else None
    if args.json:
        text = json.dumps(as_json(groups, args.all, left_out, os_fleet), indent=1, default=str) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            try:
                Path(args.json).write_text(text)
            except OSError as e:
                raise errors.CannotWrite(f"cannot write {args.json}: {e.strerror or e}") from None
    if args.html:
        try:
            import jinja2  # noqa: F401
            import matplotlib  # noqa: F401
        except ImportError as e:
            raise errors.MissingTool(f"{e.name} is not installed (`make deps`); the terminal and JSON need none of it") from None
        try:
            write_html(groups, args.all, Path(args.html), str(args.store), left_out, os_fleet)
        except OSError as e:
            raise errors.CannotWrite(f"cannot write {args.html}: {e.strerror or e}") from None
    if args.json != "-":
        sys.stdout.write(as_text(groups, args.all, left_out, os_fleet))
        if args.html:
            print(f"clockbench fleet: {args.html}")
    flagged = any(r.flags for g in groups for r in g.rows) or bool(os_fleet and os_fleet.outliers)
    return 1 if (flagged and args.outlier_check) else 0


def add_parser(sub, add_store_argument) -> None:
    p = sub.add_parser("fleet", help="one table for many machines from the store, outliers flagged within their group; "
                       "the Linux hosts' clockbench-os runs in a section of their own",
                       description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_store_argument(p)
    p.add_argument("--all", action="store_true", help="a row per run, not only each machine's latest")
    p.add_argument("--json", metavar="FILE", help="also write the table as JSON ('-': only JSON, on standard output)")
    p.add_argument("--html", metavar="FILE", help="also write an HTML page with plots")
    # dest is not "check": __main__ runs an args.check(args) hook before a command
    p.add_argument("--check", dest="outlier_check", action="store_true", help="exit 1 when any machine is flagged (for CI)")
    p.set_defaults(func=main)
