"""A run's key figures, from its parsed records (results.py), and the one
formatting path for each figure every output prints (the HTML report, the
CI summary, `compare`, the fleet): `ns`, `hz`, `pm`, `unc` and `read_cost`.
The figures are what the store
of runs keeps per run and `clockbench fleet` compares across machines. Each
figure is one row: a name, a value, its uncertainty where the image states
one, a unit, and what it was measured against. The record names and keys are
docs/output.md's ("Machine records"); a figure whose record is missing is
simply absent (a run without a second CPU has no cross-CPU offset)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from clockbench.records import records

# ------------------------------------------------------------ formatting


def sig(x, digits: int = 3, missing: str = "?") -> str:
    """x to `digits` significant figures, never in exponent form; whole
    digits are kept (401089 stays 401089 at 3 figures)."""
    if _num(x) is None:
        return missing
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    if abs(float(f"{x:.{max(0, digits - 1 - magnitude)}f}")) >= 10 ** (magnitude + 1):
        magnitude += 1  # rounding carried into the next decade: 0.9999 is "1.00", not "1.000"
    decimals = max(0, digits - 1 - magnitude)
    return f"{x:.{decimals}f}"


def ns(x, digits: int = 3) -> str:
    """A duration given in ns, in the unit that suits it: 9.70 ns, 18.1 us,
    401 us, 1.00 s (the RTC's one-second step is "1.00 s", never
    "1000011844.4 ns", and 999999936.6 ns is "1.00 s" too, never "1000 ms":
    the unit is chosen on the figure as printed)."""
    if _num(x) is None:
        return "?"
    units = (("s", 1e9), ("ms", 1e6), ("\u00b5s", 1e3), ("ns", 1.0))
    for i, (unit, scale) in enumerate(units):
        if abs(x) >= scale or unit == "ns":
            text = sig(x / scale, digits)
            if i > 0 and abs(float(text)) >= 1000:  # rounded up to 1000 of this unit: the next one up
                unit, scale = units[i - 1]
                text = sig(x / scale, digits)
            return f"{text} {unit}"
    return f"{sig(x, digits)} ns"


def _decimals_for(u: float) -> int:
    """Decimal places that show an uncertainty to two significant figures."""
    return max(0, 1 - math.floor(math.log10(abs(u))))


def pm(value, u, unit: str = "ppm", signed: bool = True) -> str:
    """value +- u, both rounded to the uncertainty's second significant
    figure: "-0.04 +- 0.30 ppm", never "-0.036481 ppm"."""
    if _num(value) is None:
        return "?"
    if _num(u) is None or u <= 0:
        return f"{value:+g} {unit}".strip() if signed else f"{value:g} {unit}".strip()
    d = _decimals_for(u)
    v = f"{value:+.{d}f}" if signed else f"{value:.{d}f}"
    if float(v) == 0:  # rounded to nothing: "0 +- 22 ppm", never "-0 +- 22 ppm"
        v = f"{0:.{d}f}"
    return f"{v} \u00b1 {u:.{d}f} {unit}".strip()


def unc(u, unit: str = "ppm") -> str:
    return f"\u00b1{sig(u, 2)} {unit}" if _num(u) is not None else "?"


def hz(value, unc_ppm=None) -> str:
    """A frequency in the unit its size asks for (MHz from 1 MHz, kHz from
    1 kHz, else Hz), with as many digits as its relative uncertainty allows
    ("2596.12008 MHz" at 0.21 ppm); a nominal rate with none stated to the
    Hz: "3.579545 MHz", "32.768 kHz", "1 Hz" (never "0.000001 MHz"), and
    below 1 Hz to 6 significant figures ("0.5 Hz", never "0 Hz"). The unit
    is chosen on the figure as printed: 999999.9999 Hz is "1.000000 MHz",
    not "1000 kHz"."""
    if _num(value) is None:
        return "?"
    units = (("MHz", 1e6), ("kHz", 1e3), ("Hz", 1.0))
    i = next(k for k, (u, s) in enumerate(units) if abs(value) >= s or u == "Hz")
    while True:
        unit, scale = units[i]
        x = value / scale
        if _num(unc_ppm) is not None and unc_ppm > 0 and value:
            text = f"{x:.{_decimals_for(x * unc_ppm * 1e-6)}f}"
        elif unit == "Hz" and value and abs(x) < 1:
            text = f"{x:.{5 - math.floor(math.log10(abs(x)))}f}".rstrip("0").rstrip(".")
        else:
            text = f"{x:.{ {'MHz': 6, 'kHz': 3, 'Hz': 0}[unit] }f}"
            if unit != "MHz" and "." in text:
                text = text.rstrip("0").rstrip(".")
        if i == 0 or abs(float(text)) < 1000:
            return f"{text} {unit}"
        i -= 1  # rounded up to 1000 of this unit: the next one up


def read_cost(lat: dict | None, step_ns=None, unresolved: str = ": not resolved") -> str:
    """One read's cost as every output says it, the image's words
    (docs/output.md, `latency`'s `below_step`; kernel/results.c,
    results_read_cost): "29.6 ns", or, where the p50 lies within a few of
    the TSC's steps, "below the TSC's step (10.0 ns): 9.54 ns a read by the
    batch" (": not resolved" without a batch: clockbench-os, which has no
    batch, says nothing more, unresolved=""). "-" when not measured."""
    lat = _dict(lat)
    if lat.get("below_step"):
        step = f"below the TSC's step ({_num(step_ns):.1f} ns)" if _num(step_ns) is not None else "below the TSC's step"
        batch = _num(lat.get("batch_ns_per_read"))
        return f"{step}: {batch:.2f} ns a read by the batch" if batch is not None else f"{step}{unresolved}"
    p50 = _num(lat.get("p50_ns"))
    return f"{p50:.1f} ns" if p50 is not None else "-"


def tsc_step_ns(raw_or_res) -> float | None:
    """The TSC's own step in ns (the `tsc_step` record), from a log's
    records or a results structure (its "tsc_step")."""
    if isinstance(raw_or_res, dict):
        return _num(_dict(raw_or_res.get("tsc_step")).get("step_ns"))
    rec = (records.of_type(raw_or_res or [], "tsc_step") or [None])[0]
    return _num(_dict(rec).get("step_ns"))


def target_read_cost(res: dict, target: str) -> str:
    """A read target's cost, one text for every output: the image's own
    words where its `verdict` record gives them (the TSC's is its rdtsc
    read), else read_cost of its `latency` record, which says the same
    (its p50 is kept to 3 decimals; the image rounds the exact figure, so
    only its own text is the same to the last digit)."""
    counter = "tsc" if target == "rdtsc" else target
    said = next((v.get("read_cost") for v in res.get("verdict_rows") or [] if isinstance(v, dict) and v.get("counter") == counter),
                None)
    if isinstance(said, str) and said:
        return said
    return read_cost(_dict(res.get("latency")).get(target), tsc_step_ns(res))


def tsc_read_cost(res: dict) -> str:
    """The TSC's read cost (its plain RDTSC read), one text for every output."""
    return target_read_cost(res, "rdtsc")


@dataclass(frozen=True)
class Figure:
    name: str  # e.g. "tsc_hz", "rate_ppm:acpi_pm", "read_p50_ns:hpet"
    value: float
    uncertainty: float | None = None
    unit: str = ""
    detail: str = ""  # what it is relative to, or where it came from


def _num(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _dict(v) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v) -> list[dict]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def tsc_claim(claims: list[dict]) -> dict | None:
    """The TSC rate the CPU or hypervisor states: CPUID 0x15 (with 0x16),
    the hypervisor's 0x40000010, Hyper-V's MSR, in that order of trust."""
    order = ("cpuid.15h", "cpuid.15h+16h", "cpuid.40000010h", "hv.msr.40000022")
    tsc = [c for c in claims if c.get("what") == "tsc" and _num(c.get("hz"))]
    tsc.sort(key=lambda c: order.index(c["source"]) if c.get("source") in order else len(order))
    return tsc[0] if tsc else None


def within_bracket(d: dict) -> bool:
    """A residual step the image says its reads' timing could make
    (docs/output.md, `discontinuity`'s `bracket_half_ns`)."""
    size, half = _num(d.get("counter_ns")), _num(d.get("bracket_half_ns"))
    return d.get("kind") == "residual step" and size is not None and half is not None and abs(size) <= half


# The drift window's events in the words every output uses (docs/output.md,
# "discontinuity"; the image's lib/drift_analysis.h, drift_count_events):
DISCONTINUITY = "discontinuity"  # a clock stood still, jumped or went back: it cuts every series
GAP = "gap"  # the loop was away and every clock ran on: it splits nothing
TOO_LONG = "too long to unwrap"  # a gap longer than the reference can count (the PIT's 55 ms): no clock misbehaved
WITHIN_BRACKET = "within bracket"  # a residual step no larger than its reads' brackets: their timing, not a clock


def event_class(d: dict) -> str:
    """Which of the four a `discontinuity` record is: the one place that
    says it, for the HTML report, its Warnings and the store's figure."""
    kind = d.get("kind")
    if kind == "gap":
        return GAP
    if kind == "too long to unwrap":
        return TOO_LONG
    if within_bracket(d):
        return WITHIN_BRACKET
    return DISCONTINUITY


def drift_events(discs) -> dict[str, list[dict]]:
    """The drift window's `discontinuity` records by event_class."""
    out: dict[str, list[dict]] = {DISCONTINUITY: [], GAP: [], TOO_LONG: [], WITHIN_BRACKET: []}
    for d in _list(discs):
        out[event_class(d)].append(d)
    return out


def counted(n: int, one: str, many: str) -> str:
    """ "1 discontinuity", "3 discontinuities": never a plural in brackets."""
    return f"{n} {one if n == 1 else many}"


def series_discontinuities(freq: dict, discs) -> int | None:
    """A frequency record's series' discontinuities, as the image's terminal
    counts them: its own `discontinuities` where it also gives `gaps` (then it
    is the one count); an older log's counted every event, gaps included, so
    its listed records are counted instead (by the series' name: the
    reference for the TSC's pairs, else the counter)."""
    freq = _dict(freq)
    if "gaps" in freq and _num(freq.get("discontinuities")) is not None:
        return int(freq["discontinuities"])
    name = freq.get("reference") if freq.get("counter") == "tsc" else freq.get("counter")
    listed = [d for d in _list(discs) if d.get("reference") == name]
    if not listed and freq.get("counter") != "tsc":
        return None  # a series that is no reference lists none of its events
    return sum(1 for d in listed if event_class(d) == DISCONTINUITY)


# a lang_clock figure its run marked `disturbed` (issue 48: cut by a bound, starved, or slow in every
# round): said in the figure's detail, which the fleet reads back
BUSY_WORDS = "disturbed: the host was busy during its run"


def lang_interval(rec: dict) -> tuple[float | None, float | None]:
    """A lang_clock record's (or a lang_summary entry's) `p50_ci_ns`, the
    median's 95% interval [lo, hi] in ns (docs/output.md); (None, None)
    when the record has none (an older probe) or it does not hold a
    number pair with lo <= hi."""
    ci = _dict(rec).get("p50_ci_ns")
    if isinstance(ci, list) and len(ci) == 2:
        lo, hi = _num(ci[0]), _num(ci[1])
        if lo is not None and hi is not None and lo <= hi:
            return lo, hi
    return None, None


def interval(lo, hi) -> str:
    """An interval as every output prints it, in the unit of its upper
    end: "35.9-36.6 ns", "1.45-1.49 \u00b5s"; "" when there is none."""
    if _num(lo) is None or _num(hi) is None:
        return ""
    unit = ns(hi).split(" ")[1]
    scale = {"s": 1e9, "ms": 1e6, "\u00b5s": 1e3, "ns": 1.0}[unit]
    return f"{sig(lo / scale)}-{sig(hi / scale)} {unit}"


OS_CALL = "clock_gettime(CLOCK_MONOTONIC)"
# "libc": the host's own C library (clockbench-os's helper; a log from before it: the static copy, then so
# named); "libc-static": the glibc linked into clockbench-os, the bundle's copy
OS_PATHS = {"vdso": "the vDSO called directly", "libc": "libc", "libc-static": "the glibc linked into clockbench-os (the bundle's copy)",
            "syscall": "the raw syscall"}


def derive(res: dict, raw: list[dict] | None = None) -> list[Figure]:
    """The figures of one run. `res` is results.from_log's structure;
    `raw` the log's records (records.parse_log), for the records results.py
    does not gather (freq_claim, tsc_sync, timer_choice, drift_window,
    discontinuity)."""
    raw = raw or []
    out: list[Figure] = []
    add = lambda *a, **k: out.append(Figure(*a, **k))  # noqa: E731
    prof = _dict(res.get("profile"))
    freqs = _list(res.get("frequency"))
    tsc_hz = _num(prof.get("tsc_hz"))
    tsc_fit = next((f for f in freqs if f.get("counter") == "tsc" and isinstance(prof.get("tsc_hz_source"), str)
                    and f.get("reference") and f["reference"] in prof["tsc_hz_source"]), None)
    if tsc_hz is not None and prof.get("tsc_measured"):  # a claimed, estimated or assumed rate is no figure to compare
        u = _num(tsc_fit.get("uncertainty_ppm")) if tsc_fit else None
        add("tsc_hz", tsc_hz, u * tsc_hz * 1e-6 if u is not None else None, "Hz", str(prof.get("tsc_hz_source") or ""))
    claim = tsc_claim(records.of_type(raw, "freq_claim"))
    if claim:
        add("tsc_claim_hz", float(claim["hz"]), None, "Hz", str(claim.get("source")))
        if tsc_hz is not None and prof.get("tsc_measured"):
            ppm = (tsc_hz / claim["hz"] - 1) * 1e6
            u = _num(tsc_fit.get("uncertainty_ppm")) if tsc_fit else None
            add("tsc_vs_claim_ppm", ppm, u, "ppm", f"measured against {tsc_fit.get('reference') if tsc_fit else '?'}, "
                f"claimed by {claim.get('source')}")
    crystal = [c for c in records.of_type(raw, "freq_claim") if c.get("what") == "crystal" and _num(c.get("hz"))]
    if crystal:
        add("crystal_claim_hz", float(crystal[0]["hz"]), None, "Hz", str(crystal[0].get("source")))
    # every counter's rate: the TSC against each reference, the others against the best one
    worst_crystal = None
    for f in freqs:
        c, ref = f.get("counter"), f.get("reference")
        hz, u = _num(f.get("hz")), _num(f.get("uncertainty_ppm"))
        if not isinstance(c, str) or hz is None:
            continue
        add(f"rate_hz:{c}/{ref}", hz, u * hz * 1e-6 if u is not None else None, "Hz", f"{c} against {ref}")
        ppm = _num(f.get("ppm_vs_nominal"))
        if ppm is not None:
            add(f"rate_ppm:{c}/{ref}", ppm, u, "ppm", f"{c} against {ref}, from its nominal rate")
            if c != "tsc" and (worst_crystal is None or abs(ppm) > abs(worst_crystal[0])):
                worst_crystal = (ppm, u, f"{c} against {ref}")
    if worst_crystal:
        add("crystal_ppm", worst_crystal[0], worst_crystal[1], "ppm",
            f"the counter furthest from its nominal rate: {worst_crystal[2]}")
    # the TSC's read cost as every output says it (read_cost): its text in the detail, for the fleet's
    # column; the value is the p50, or below the TSC's step the batch's figure that stands for a read
    rdtsc = _dict(_dict(res.get("latency")).get("rdtsc"))
    read_value = _num(rdtsc.get("batch_ns_per_read")) if rdtsc.get("below_step") else _num(rdtsc.get("p50_ns"))
    if read_value is not None:
        add("tsc_read_ns", read_value, None, "ns", tsc_read_cost(res))
    for name, lat in sorted(_dict(res.get("latency")).items()):
        p50 = _num(_dict(lat).get("p50_ns"))
        if p50 is not None and not _dict(lat).get("below_step"):  # below the TSC's step: no figure to compare
            add(f"read_p50_ns:{name}", p50, None, "ns", "one read, p50")
    # the TSC across CPUs: the worst bound on any CPU's offset from the boot CPU's
    sync = records.of_type(raw, "tsc_sync")
    worst = proven = None
    warps = 0
    for s in sync:
        lo, hi = _num(s.get("offset_lo_ns")), _num(s.get("offset_hi_ns"))
        if lo is not None and hi is not None:
            w = max(abs(lo), abs(hi))
            worst = w if worst is None else max(worst, w)
            # the least offset the interval proves: 0 when it holds 0
            p = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
            proven = p if proven is None else max(proven, p)
        warps += int(_num(s.get("warps")) or 0)
    if worst is not None:
        add("cpu_offset_worst_ns", worst, None, "ns", f"the widest bound on a CPU's TSC offset from CPU 0's, {counted(len(sync), 'CPU', 'CPUs')}")
        add("cpu_offset_proven_ns", proven, None, "ns", "the largest offset from CPU 0's TSC the bounds prove (0: every "
            "interval holds 0)")
    if sync:
        add("cpu_warps", float(warps), None, "", "cross-CPU readings that went back")
    cpus = [c for c in records.of_type(raw, "cpu") if c.get("started")]
    if cpus:
        add("cpus", float(len(cpus)), None, "", "CPUs started")
    # timer lateness: the timer the image chose, at 100 us ahead
    choice = (records.of_type(raw, "timer_choice") or [None])[0]
    # each percentile on its own: a short run states a p50 but too few events for a p99
    for pct in ("p50", "p99"):
        if choice and _num(choice.get(f"{pct}_ns")) is not None:
            add(f"timer_{pct}_ns", float(choice[f"{pct}_ns"]), None, "ns", f"{choice.get('timer')} {choice.get('wait')}, 100 us ahead")
    # time stolen: the longest gap in the tight loop, and the drift window's time away
    hw = _dict(res.get("hwlat"))
    if _num(hw.get("max_gap_ns")) is not None:
        add("stolen_max_ns", float(hw["max_gap_ns"]), None, "ns", "the longest gap in the stolen-time scan")
        add("stolen_total_ns", float(hw.get("total_gap_ns") or 0), None, "ns", f"over {hw.get('window_s')} s scanned")
    dw = (records.of_type(raw, "drift_window") or [None])[0]
    if dw and _num(dw.get("away_s")) is not None:
        add("away_s", float(dw["away_s"]), None, "s", "time the drift loop was away (gaps of 10 ms or more)")
    # the longest single gap in the drift window (the CPU away: both clocks ran on)
    gaps = [abs(_num(d.get("tsc_ns")) or 0.0) for d in records.of_type(raw, "discontinuity") if d.get("kind") == "gap"]
    if dw is not None:
        add("gap_max_ns", max(gaps, default=0.0), None, "ns", "the longest gap in the drift window, where the CPU was away")
    # a clock that stood still, jumped or went back: the drift window's events other than gaps
    # ("too long to unwrap" is a gap longer than a reference can count: the PIT's 55 ms)
    # (a residual step no larger than half its reads' bracket may be the reads' timing, not a clock: not counted)
    cuts = drift_events(records.of_type(raw, "discontinuity"))[DISCONTINUITY]
    if dw is not None or cuts:
        add("discontinuities", float(len(cuts)), None, "", "drift-window events where a clock stood still, jumped or went back")

        def disagreement(d: dict) -> float:
            """How far the two clocks disagree across the event (a residual step: its size)."""
            tsc, ref = _num(d.get("tsc_ns")), _num(d.get("counter_ns"))
            if d.get("kind") == "residual step":
                return abs(ref or 0.0)
            return abs((tsc or 0.0) - (ref or 0.0))

        big = max(cuts, key=disagreement) if cuts else None
        add("cut_max_ns", disagreement(big) if big else 0.0, None, "ns",
            f"the largest such disagreement: {big.get('reference')} {big.get('kind')} at {big.get('at_s')} s" if big else "none")
    stalls = [(float(m["longest_stall_ns"]), name) for name, m in _dict(res.get("monotonicity")).items()
              if isinstance(m, dict) and _num(m.get("longest_stall_ns")) is not None]
    if stalls:
        ns, name = max(stalls)
        add("stall_max_ns", ns, None, "ns", f"the longest a counter stood still while the TSC ran ({name})")
    # clockbench-os's own CLOCK_MONOTONIC (os_latency): through the vDSO called directly, the host's libc,
    # the static copy of glibc in clockbench-os and the raw syscall, per clocksource: the floor beneath the
    # languages' figures
    for r in _list(res.get("os_latency")):
        cs, path, p50 = r.get("clocksource"), r.get("path"), _num(r.get("p50_ns"))
        if r.get("call") == OS_CALL and isinstance(cs, str) and path in OS_PATHS and p50 is not None:
            lib = r.get("libc") if isinstance(r.get("libc"), dict) else {}
            by = (f"the host's own C library, {lib.get('name')} {lib.get('version') or 'of unknown version'} ({lib.get('file')})"
                  if path == "libc" and lib else OS_PATHS[path])
            lo, hi = lang_interval(r)  # the median's 95% interval, where the record gives one (as lang_clock's)
            add(f"os_p50_ns:{cs}/{path}", p50, max(p50 - lo, hi - p50) if lo is not None else None, "ns",
                f"clockbench-os, {OS_CALL} by {by}, one call, p50"
                + ("; under 3 of the TSC's steps: the step's, not a cost" if r.get("below_step") else "")
                + (f"; 95% interval {lo:.3f}-{hi:.3f} ns" if lo is not None else ""))
            if lo is not None:
                add(f"os_p50_ci_lo_ns:{cs}/{path}", lo, None, "ns", "the lower end of the p50's 95% interval")
                add(f"os_p50_ci_hi_ns:{cs}/{path}", hi, None, "ns", "the upper end of the p50's 95% interval")
    # the languages' clocks (clockbench-os, lang_clock): per clocksource, language and API
    for r in _list(res.get("lang_clock")):
        cs, lang, api = r.get("clocksource"), r.get("language"), r.get("api")
        if not all(isinstance(x, str) for x in (cs, lang, api)):
            continue
        key = f"{cs}/{lang}/{api}"
        what = f"{r.get('runtime') or lang}, {r.get('method') or '?'} method, {r.get('path') or '?'} path, {r.get('clock_id') or '?'}"
        p50 = _num(r.get("p50_ns"))
        if p50 is not None:
            lo, hi = lang_interval(r)
            # the figure's uncertainty: the wider side of the median's 95% interval (issue 44); both ends kept beside it
            half = max(p50 - lo, hi - p50) if lo is not None and hi is not None else None
            add(f"lang_p50_ns:{key}", p50, half, "ns",
                what + (": a batch's cost per call" if r.get("method") == "batch" else ": one call, p50")
                + (f"; 95% interval {lo:.3f}-{hi:.3f} ns" if half is not None else "")
                + (f"; {BUSY_WORDS}" if r.get("disturbed") is True else ""))
            if half is not None:
                add(f"lang_p50_ci_lo_ns:{key}", lo, None, "ns", "the lower end of the p50's 95% interval (order statistics, "
                    "widened by the timer's step)")
                add(f"lang_p50_ci_hi_ns:{key}", hi, None, "ns", "the upper end of the p50's 95% interval (order statistics, "
                    "widened by the timer's step)")
        if _num(r.get("syscalls_per_1000")) is not None:
            add(f"lang_syscalls_per_1000:{key}", float(r["syscalls_per_1000"]), None, "", what)
        if _num(r.get("least_step_ns")) is not None:
            add(f"lang_least_step_ns:{key}", float(r["least_step_ns"]), None, "ns", "least non-zero step in back-to-back reads")
        if _num(r.get("claimed_resolution_ns")) is not None:
            add(f"lang_claimed_ns:{key}", float(r["claimed_resolution_ns"]), None, "ns", str(r.get("claim_source") or "")
                + ("; finer than the least step seen" if r.get("claim_finer_than_step") is True else ""))
    s = _dict(res.get("summary"))
    for k in ("pass", "fail", "skip"):
        if _num(s.get(k)) is not None:
            add(f"checks_{k}", float(s[k]), None, "", "")
    return out
