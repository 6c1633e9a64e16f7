"""The image's bare reads beside the same clocks through Linux
(clockbench-os, docs/output.md "The OS side"): the one place the
side-by-side table is built, for `clockbench compare BARE OS` (text and
--html) and for the "Bare and through the OS" section of `clockbench
report BARE --os OS`; and the parts of an OS run's own report page.

Per clocksource the OS run measured: the bare read p50 of the counter
beneath it, clock_gettime(CLOCK_MONOTONIC)'s p50 by libc, the vDSO called
directly and the syscall, each with its ratio to the bare read ("1.8x"),
and the resolution: clock_getres (claimed), the least step seen through
the OS, the bare counter's least step. Then the other clocks in rows of
their own (coarse, CPU time, gettimeofday, time, clock, rdtsc and rdtscp
from user space beside the bare ones), and the context: which machine,
kernel, clocksource, CPU and pinning, and the TSC rate each side measured.
Two runs whose machines differ (runinfo.machine_key: CPUID identity and
hypervisor) are compared with a warning saying so. A missing figure is
"-", never an error: every value is checked before it is used."""

from __future__ import annotations

import math

from clockbench.records import figures, runinfo
from clockbench.report import pages, plots

OS_TOOL = "clockbench-os"
# The one wording of the ladders' "!" (ladder.CLAIM_SHARE: half the least step), in compare's text and HTML alike.
CLAIM_LEGEND = "!: a resolution claimed finer than half the least step seen"
MONOTONIC = "clock_gettime(CLOCK_MONOTONIC)"
PATHS = ("libc", "vdso", "syscall")

# Linux's clocksource name -> the bare image's counter beneath it: the key
# of its `latency` record, and the keys its `resolution` record may have.
# Linux reads the TSC with rdtsc_ordered() (arch/x86/include/asm/msr.h:
# RDTSCP where the CPU has it, else LFENCE;RDTSC), in the kernel and in the
# vDSO alike: that read, not a plain RDTSC, is the bare cost beneath it.
TSC_READS = ("rdtscp", "lfence;rdtsc", "rdtsc")
CLOCKSOURCES = {
    "tsc": ("rdtscp", ("tsc", "rdtsc")),
    "hpet": ("hpet", ("hpet",)),
    "acpi_pm": ("acpi_pm", ("acpi_pm",)),
    "kvm-clock": ("kvmclock", ("kvmclock",)),
    "hyperv_clocksource_tsc_page": ("hv_ref_page", ("hv_ref_page",)),
    "hyperv_clocksource_msr": ("hv_ref_counter", ("hv_ref_counter",)),
}

# The calls with rows of their own (measured on the clocksource in use at
# start): what they are, and the bare read they stand beside.
OTHER_CALLS = (
    ("clock_gettime(CLOCK_REALTIME_COARSE)", "coarse (a tick)", None),
    ("clock_gettime(CLOCK_MONOTONIC_COARSE)", "coarse (a tick)", None),
    ("clock_gettime(CLOCK_PROCESS_CPUTIME_ID)", "CPU time", None),
    ("clock_gettime(CLOCK_THREAD_CPUTIME_ID)", "CPU time", None),
    ("gettimeofday", "wall clock, in \u00b5s", None),
    ("time", "wall clock, in s", None),
    ("clock", "CPU time, in clock_t", None),
    ("rdtsc", "the TSC from user space", "rdtsc"),
    ("rdtscp", "the TSC from user space", "rdtscp"),
)


def bare_counter(clocksource: str, bare: dict | None = None) -> str | None:
    """The bare read (a `latency` key) beneath a Linux clocksource, or None;
    for the TSC, the first of TSC_READS the bare run measured."""
    if clocksource == "tsc" and bare is not None:
        lat = _d(bare.get("latency"))
        return next((k for k in TSC_READS if k in lat), TSC_READS[0])
    return CLOCKSOURCES.get(clocksource, (None, ()))[0]


# ------------------------------------------------------------------ values


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _d(v) -> dict:
    return v if isinstance(v, dict) else {}


def _l(v) -> list[dict]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _s(v) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def is_os(res: dict) -> bool:
    """A run of clockbench-os (its schema record's tool; for a results file
    without one, its OS records)."""
    tool = res.get("tool")
    if isinstance(tool, str):
        return tool == OS_TOOL
    return isinstance(res.get("os"), dict) or bool(_l(res.get("os_latency")))


def sig(x, digits: int = 3) -> str:
    """x to `digits` significant figures (plots.sig); "-" when not a number,
    as every missing figure in these tables."""
    return plots.sig(x, digits, missing="-")


def dur(v) -> str:
    """A duration in ns in the unit that suits it, up to 4 significant
    figures, exact ones kept short: "0.385 ns", "20 ns", "4 ms", "1 s"."""
    if not _num(v):
        return "-"
    units = (("s", 1e9), ("ms", 1e6), ("\u00b5s", 1e3), ("ns", 1.0))
    for i, (unit, scale) in enumerate(units):
        if abs(v) >= scale or unit == "ns":
            if i > 0 and abs(float(f"{v / scale:.4g}")) >= 1000:  # 999.99996 ms printed is 1 s, not "1000 ms"
                unit, scale = units[i - 1]
            return f"{v / scale:.4g} {unit}"
    return f"{v:.4g} ns"


def cost(v) -> str:
    """A read cost as compare shows one: "30.0 ns"."""
    return f"{v:.1f} ns" if _num(v) else "-"


def with_ratio(v, base) -> str:
    """An OS cost with its ratio to the bare read: "30.0 ns 3.0x"."""
    if not _num(v):
        return "-"
    return cost(v) + (f" {runinfo.ratio(v, base)}" if _num(base) and base > 0 else "")


def os_cost(res: dict, lat: dict, base=None) -> str:
    """An OS call's cost from its os_latency record, in clockbench-os's own
    words: a p50 below the TSC's step (its `below_step`) is "below the TSC's
    step (10.0 ns)" as its table prints it, never the step's multiple as if
    it were a cost, and has no ratio; else the p50 with its ratio to the
    bare read."""
    lat = _d(lat)
    if lat.get("below_step") is True:
        return figures.read_cost(lat, figures.tsc_step_ns(res), unresolved="")
    return with_ratio(lat.get("p50_ns"), base)


def _hz(v) -> str:
    return f"{v:.0f} Hz" if _num(v) else "-"


def _u(v) -> str:
    return f"\u00b1{sig(v, 2)} ppm" if _num(v) else "\u00b1? ppm"


# ------------------------------------------------------------ the records


def os_record(res: dict) -> dict:
    return _d(res.get("os"))


def clocksources(res: dict) -> list[str]:
    """The clocksources an OS run measured or tried, the one in use at the
    start first."""
    names: list[str] = []
    for n in [os_record(res).get("clocksource")] + [r.get("clocksource") for k in ("os_tsc_rate", "os_latency", "os_resolution")
                                                    for r in _l(res.get(k))] + [r.get("name") for r in _l(res.get("os_clocksources"))]:
        if _s(n) and n not in names:
            names.append(n)
    return names


def first_clocksource(res: dict) -> str | None:
    """The clocksource in use at the start: every call was measured on it."""
    cs = _s(os_record(res).get("clocksource"))
    if cs:
        return cs
    names = [r.get("clocksource") for r in _l(res.get("os_latency")) if _s(r.get("clocksource"))]
    return names[0] if names else None


def _find(res: dict, kind: str, clocksource, call, path=None) -> dict:
    for r in _l(res.get(kind)):
        if r.get("clocksource") == clocksource and r.get("call") == call and (path is None or r.get("path") == path):
            return r
    return {}


def latency(res: dict, clocksource, call, path=None) -> dict:
    return _find(res, "os_latency", clocksource, call, path)


def resolution(res: dict, clocksource, call, path=None) -> dict:
    return _find(res, "os_resolution", clocksource, call, path)


def tsc_rate(res: dict, clocksource=None) -> dict:
    """The OS run's os_tsc_rate record on that clocksource (the first one
    when not named)."""
    recs = _l(res.get("os_tsc_rate"))
    cs = clocksource or first_clocksource(res)
    return next((r for r in recs if r.get("clocksource") == cs), recs[0] if recs and clocksource is None else {})


def bare_p50(bare: dict, key) -> float | None:
    """The bare read's p50, None below the TSC's step (no figure: no ratio is drawn from it)."""
    lat = _d(_d(bare.get("latency")).get(key)) if isinstance(key, str) else {}
    v = lat.get("p50_ns")
    return v if _num(v) and not lat.get("below_step") else None


def bare_cost(bare: dict, key) -> str:
    """The bare read's cost as every output says it (figures.read_cost)."""
    lat = _d(_d(bare.get("latency")).get(key)) if isinstance(key, str) else {}
    return figures.target_read_cost(bare, key) if lat else "-"


def bare_step(bare: dict, clocksource_or_key: str) -> float | None:
    """The bare counter's least step in back-to-back reads: a read's own
    key ("rdtscp"), or for a clocksource its counter's (the TSC's is
    its `tsc` resolution, else its rdtsc read's: give the read that
    stands beneath it, as clocksource_rows does, to get that read's)."""
    keys = CLOCKSOURCES.get(clocksource_or_key, (None, (clocksource_or_key,)))[1]
    reso = _d(bare.get("resolution"))
    for k in keys:
        v = _d(reso.get(k)).get("min_step_ns")
        if _num(v):
            return v
    return None


def bare_tsc(bare: dict) -> tuple[float | None, float | None, str]:
    """The bare run's TSC rate, its uncertainty relative to its reference
    (the `frequency` record against the reference the profile names) and
    what it was measured against."""
    prof = _d(bare.get("profile"))
    hz = prof.get("tsc_hz") if _num(prof.get("tsc_hz")) and prof["tsc_hz"] > 0 else None
    src = _s(prof.get("tsc_hz_source")) or "?"
    ref = src.removeprefix("measured against ").strip() if src.startswith("measured against") else None
    f = next((f for f in _l(bare.get("frequency")) if f.get("counter") == "tsc" and f.get("reference") == ref), {})
    u = f.get("uncertainty_ppm") if _num(f.get("uncertainty_ppm")) else None
    return hz, u, (f"vs {ref}" if ref else src)


def _counter_state(bare: dict, key: str | None) -> str:
    """Why a bare counter has no figure: absent, or not measured."""
    if key is None:
        return "no bare counter for this clocksource"
    if _d(_d(bare.get("latency")).get(key)).get("below_step") is True:
        return f"the bare {key} read is below the TSC's step: no ratio to it"
    name = "tsc" if key in TSC_READS else key
    c = next((c for c in _l(bare.get("counters")) if c.get("name") == name), None)
    if c is not None and c.get("present") is False:
        return f"the bare run had no {name}" + (f": {c['reason']}" if _s(c.get("reason")) else "")
    return f"the bare run did not measure {name}"


# ------------------------------------------------------------ context


def kernel_of(res: dict) -> str:
    o = os_record(res)
    if not o:
        return "-"
    return " ".join(str(o[k]) for k in ("os", "kernel") if _s(o.get(k))) or "?"


def _pinned(o: dict) -> str:
    if not o:
        return "-"
    cpu, online = o.get("pinned_cpu"), o.get("cpus_online")
    if isinstance(cpu, int) and not isinstance(cpu, bool):
        return f"CPU {cpu}" + (f" of {online}" if isinstance(online, int) and not isinstance(online, bool) else "")
    return "not pinned" + (f": {o['pin_reason']}" if _s(o.get("pin_reason")) else "")


def _realtime(o: dict) -> str:
    if not o:
        return "-"
    if o.get("realtime") is True:
        return "yes (SCHED_FIFO, memory locked)"
    return "no" + (f": {o['realtime_reason']}" if _s(o.get("realtime_reason")) else "")


def _switched(res: dict) -> str:
    o = os_record(res)
    if not o:
        return "-"
    tried = _l(res.get("os_clocksources"))
    if not tried:
        if o.get("switching") is False:
            return "none" + (f": {o['switching_reason']}" if _s(o.get("switching_reason")) else "")
        return "none"
    out = []
    for c in tried:
        name = str(c.get("name", "?"))
        out.append(name if c.get("selected") is True else f"{name} (not taken" + (f": {c['reason']}" if _s(c.get("reason")) else "") + ")")
    restore = _d(res.get("os_restore"))
    if restore:
        out.append("restored" if restore.get("restored") is True else f"NOT restored (now {restore.get('now', '?')})")
    return ", ".join(out)


def _vdso(o: dict) -> str:
    if not o:
        return "-"
    if o.get("vdso") is True:
        return "yes: __vdso_clock_gettime, also called directly"
    return "no" + (f": {o['vdso_reason']}" if _s(o.get("vdso_reason")) else "")


def _tsc_cell(res: dict, bare_hz, bare_u=None, against: str = "the bare run's") -> str:
    """An OS run's TSC rate on its first clocksource, with its difference
    from the bare run's in ppm (+- both uncertainties combined)."""
    r = tsc_rate(res)
    if not _num(r.get("hz")):
        return "-"
    cs = r.get("clocksource", "?")
    cell = f"{_hz(r['hz'])} {_u(r.get('uncertainty_ppm'))} vs {r.get('reference', '?')} on {cs}"
    if cs == "tsc":
        cell += " (the kernel's calibration read back)"
    if _num(bare_hz) and bare_hz > 0:
        both = (f" \u00b1{sig(math.hypot(bare_u, r['uncertainty_ppm']), 2)}" if _num(bare_u) and _num(r.get("uncertainty_ppm"))
                else "")  # the two uncertainties combined
        cell += f"; {(r['hz'] / bare_hz - 1) * 1e6:+.3f}{both} ppm from {against}"
    return cell


def machine_line(bare: dict, other: dict, bare_name: str, other_name: str) -> tuple[bool, str]:
    """(same, the line saying so): a warning when the machines differ."""
    if runinfo.machine_key(bare) == runinfo.machine_key(other):
        # CPUID cannot tell nesting levels apart: a QEMU guest run with -cpu
        # host shows its host's identity. The bare image booted by QEMU and
        # an OS run that was not a VM's init ran at different levels.
        bare_loader = str((bare.get("machine") or {}).get("loader") or "")
        os_init = (other.get("os") or {}).get("init") if isinstance(other.get("os"), dict) else None
        if bare_loader == "qemu" and os_init is False:
            return False, (f"different machines, probably: {bare_name} was booted by QEMU (-kernel), {other_name} ran as a "
                           f"program, not as a VM's init; CPUID shows the same {runinfo.machine_of(bare)} ({runinfo.cpu_of(bare)}) "
                           "to a guest run with -cpu host: the ratios compare different levels of virtualisation")
        return True, (f"same machine (CPUID identity and hypervisor): {runinfo.machine_of(bare)}, {runinfo.cpu_of(bare)}")
    return False, (f"different machines: {bare_name} ran on {runinfo.machine_of(bare)} ({runinfo.cpu_of(bare)}), "
                   f"{other_name} on {runinfo.machine_of(other)} ({runinfo.cpu_of(other)}): the ratios compare different hardware")


def context_rows(runs: list[dict], names: list[str], bare: dict | None = None) -> list[list[str]]:
    """The context of each run, a column each: machine, kernel,
    clocksource, CPU and pinning, the TSC rate measured. With a bare run,
    it is the first column and the OS rates are set against its rate."""
    bare_hz = bare_u = None
    if bare is not None:
        bare_hz, bare_u, bare_ref = bare_tsc(bare)
    elif runs:
        bare_hz = tsc_rate(runs[0]).get("hz")
    rows = [["", *[f"{n} (bare)" if bare is not None and r is bare else f"{n} (through the OS)" for r, n in zip(runs, names)]]]
    rows.append(["machine", *[runinfo.machine_of(r) for r in runs]])
    rows.append(["CPU (family.model.stepping)", *[runinfo.cpu_of(r) for r in runs]])
    rows.append(["build", *[str(_s(r.get("build")) or "-") for r in runs]])
    rows.append(["kernel", *["none: the bare image" if r is bare else kernel_of(r) for r in runs]])
    rows.append(["clocksource in use at start", *[
        (f"- (Linux would choose {_d(r.get('os_choice')).get('clocksource')} here, by its ratings)"
         if _s(_d(r.get("os_choice")).get("clocksource")) else "-") if r is bare
        else str(_s(os_record(r).get("clocksource")) or "-") for r in runs]])
    rows.append(["available clocksources", *["-" if r is bare else str(_s(os_record(r).get("available_clocksources")) or "-")
                                              for r in runs]])
    rows.append(["clocksources switched to", *["-" if r is bare else _switched(r) for r in runs]])
    rows.append(["pinned to", *["-" if r is bare else _pinned(os_record(r)) for r in runs]])
    rows.append(["real-time", *["-" if r is bare else _realtime(os_record(r)) for r in runs]])
    rows.append(["vDSO", *["-" if r is bare else _vdso(os_record(r)) for r in runs]])
    rows.append(["profile", *[str(_s(_d(r.get("profile")).get("name")) or "-") for r in runs]])
    cells = []
    for r in runs:
        if r is bare:
            cells.append(f"{_hz(bare_hz)} {_u(bare_u)} {bare_ref}" if bare_hz else "-")
        else:
            cells.append(_tsc_cell(r, bare_hz if bare is not None or r is not runs[0] else None, bare_u,
                                   "the bare run's" if bare is not None else "the first run's"))
    rows.append(["TSC rate", *cells])
    rows.append(["checks", *[runinfo.checks_line(r) for r in runs]])
    return rows


# ------------------------------------------------------------ the tables

CS_HEAD = ["clocksource", "bare counter", "bare read p50", "libc p50", "vDSO p50", "syscall p50",
           "clock_getres", "OS least step", "bare least step", "note"]
OTHER_HEAD = ["call", "what", "path", "bare read p50", "OS p50", "clock_getres", "OS least step", "bare least step"]


def clocksource_rows(bare: dict, os_run: dict) -> list[list[str]]:
    """Per clocksource the OS run measured or tried: the bare read p50
    beneath it, CLOCK_MONOTONIC by each path with its ratio to it, and
    the resolution claimed and seen. The first row names the columns."""
    rows = [list(CS_HEAD)]
    first = first_clocksource(os_run)
    tried = {c["name"]: c for c in _l(os_run.get("os_clocksources")) if isinstance(c.get("name"), str)}
    for cs in clocksources(os_run):
        key = bare_counter(cs, bare)
        base = bare_p50(bare, key)
        # the least step of the read beneath, by its own key: rdtscp's, not
        # rdtsc's (they differ where the TSC is coarse)
        step = bare_step(bare, key) if key else None
        cells = [os_cost(os_run, latency(os_run, cs, MONOTONIC, p), base) for p in PATHS]
        reso = next((r for r in (resolution(os_run, cs, MONOTONIC, p) for p in PATHS) if r), {})
        notes = []
        if cs == first:
            notes.append("in use at start")
        t = tried.get(cs)
        if t is not None and t.get("selected") is not True:
            notes.append("not taken" + (f": {t['reason']}" if _s(t.get("reason")) else ""))
        if base is None:
            notes.append(_counter_state(bare, key))
        rows.append([cs, key or "-", bare_cost(bare, key), *cells,
                     dur(reso.get("getres_ns")), dur(reso.get("min_step_ns")), dur(step), "; ".join(notes)])
    return rows


def other_rows(bare: dict | None, os_run: dict) -> list[list[str]]:
    """The clocks with rows of their own, on the clocksource in use at the
    start; rdtsc and rdtscp beside the bare reads."""
    rows = [list(OTHER_HEAD)]
    cs = first_clocksource(os_run)
    for call, what, key in OTHER_CALLS:
        # the host's own C library where it was measured (path libc), else the static copy's
        lat = latency(os_run, cs, call, "libc") or latency(os_run, cs, call)
        reso = (resolution(os_run, cs, call, lat.get("path")) if lat else {}) or resolution(os_run, cs, call)
        base = bare_p50(bare, key) if bare is not None and key else None
        rows.append([call, what, str(lat.get("path") or reso.get("path") or "-"),
                     bare_cost(bare, key) if bare is not None and key else "-", os_cost(os_run, lat, base),
                     dur(reso.get("getres_ns")), dur(reso.get("min_step_ns")),
                     dur(bare_step(bare, key)) if bare is not None and key else "-"])
    return rows


def side_by_side(bare: dict, os_runs: list[dict], bare_name: str, os_names: list[str]) -> dict:
    """The whole comparison of one bare run with OS runs, as rows of text
    cells (the first row of each table names its columns):
    {"machines": [{"name", "same", "line"}], "context": rows,
     "runs": [{"name", "clocksource", "clocksources": rows, "other": rows}]}."""
    machines = []
    for r, n in zip(os_runs, os_names):
        same, line = machine_line(bare, r, bare_name, n)
        machines.append({"name": n, "same": same, "line": line})
    out_runs = []
    for r, n in zip(os_runs, os_names):
        run = {"name": n, "clocksource": first_clocksource(r) or "?", "clocksources": clocksource_rows(bare, r),
               "other": other_rows(bare, r)}
        run["other_caption"] = other_caption(run)
        run["heading"] = heading(bare_name, n)
        out_runs.append(run)
    return {"bare": bare_name, "machines": machines, "context": context_rows([bare, *os_runs], [bare_name, *os_names], bare),
            "runs": out_runs, "caption": CS_CAPTION, "claim_legend": CLAIM_LEGEND}


CS_CAPTION = ("clock_gettime(CLOCK_MONOTONIC) through the OS by each path, p50, with its ratio to the bare read of the counter "
              "beneath the clocksource; its resolution claimed (clock_getres) and seen (least step in back-to-back reads), "
              "beside the bare counter's least step")


def other_caption(run: dict) -> str:
    return (f"The other clocks, each in its own row: measured on clocksource {run['clocksource']} (in use at the start); "
            "rdtsc and rdtscp from user space beside the bare reads")


def heading(bare_name: str, os_names: str) -> str:
    """ "tcg-q35 (the image, no OS) and os-vm through the OS": a run named
    bare is never "bare bare"."""
    return f"{bare_name} (the image, no OS) and {os_names} through the OS"


def as_text(t: dict) -> str:
    """The comparison for a terminal: the machine lines (a warning when
    they differ) above the tables."""
    import textwrap

    wrap = lambda s: textwrap.fill(s, 110, break_on_hyphens=False)  # noqa: E731
    out = []
    for m in t["machines"]:
        out.append(textwrap.fill(("" if m["same"] else "WARNING: ") + m["line"], runinfo.WIDTH, subsequent_indent="  ",
                                 break_on_hyphens=False))
    out.append("")
    out.append(runinfo.as_text(t["context"], runinfo.WIDTH))
    for r in t["runs"]:
        out.append(wrap(f"{heading(t['bare'], r['name'])}, per clocksource: {CS_CAPTION}:"))
        out.append(runinfo.as_text(r["clocksources"], runinfo.WIDTH))
        out.append(wrap(r["other_caption"] + ":"))
        out.append(runinfo.as_text(r["other"], runinfo.WIDTH))
    return "\n".join(out)


def as_html_page(t: dict) -> str:
    """The page `compare BARE OS --html` writes (templates/compare_os.html.j2,
    autoescaped); ImportError without Jinja2."""

    title = "clockbench compare: " + heading(t["bare"], ", ".join(r["name"] for r in t["runs"]))
    return pages.environment().get_template("compare_os.html.j2").render(t=t, title=title)


# ------------------------------------------------------------ OS runs alone


def os_vs_os(runs: list[dict], names: list[str]) -> list[list[str]]:
    """OS runs side by side without a bare run: context, then every call
    measured, its p50 with its ratio to the first run's."""
    rows = context_rows(runs, names)
    seen: list[tuple] = []
    for r in runs:
        for lat in _l(r.get("os_latency")):
            k = (lat.get("clocksource"), lat.get("call"), lat.get("path"))
            if all(isinstance(x, str) for x in k) and k not in seen:
                seen.append(k)
    for cs, call, path in seen:
        lats = [latency(r, cs, call, path) for r in runs]
        base = lats[0].get("p50_ns") if _num(lats[0].get("p50_ns")) and lats[0].get("below_step") is not True else None
        rows.append([f"{call} ({path}) on {cs}, p50", *[os_cost(r, x, base) for r, x in zip(runs, lats)]])
    return rows


def os_machine_lines(runs: list[dict], names: list[str]) -> list[str]:
    out = []
    for r, n in zip(runs[1:], names[1:]):
        same, line = machine_line(runs[0], r, names[0], n)
        if not same:
            out.append("WARNING: " + line)
    return out


# ------------------------------------------------------------ an OS run's own page


def page_title(res: dict) -> str:
    m = _d(res.get("machine"))
    who = str(_s(m.get("brand")) or _s(m.get("vendor")) or "unknown machine").strip()
    hv = m.get("hypervisor")
    return f"clockbench-os: {who}" + (f" under {hv}" if _s(hv) else "") + f", through {kernel_of(res)}"


def _libc(res: dict) -> str:
    """The C libraries behind the libc rows (the os_libc record): the host's
    own, or why it was not measured; and the static copy in clockbench-os."""
    rec = _d(res.get("os_libc"))
    if not rec:
        return "-"

    def lib(d) -> str:
        d = _d(d)
        return f"{d.get('name') or '?'} {d.get('version') or '(version unknown)'} ({d.get('file') or '?'})"
    host = f"the host's: {lib(rec['libc'])}" if rec.get("measured") is True and isinstance(rec.get("libc"), dict) else \
        f"the host's not measured: {rec.get('reason') or '?'}"
    return host + (f"; libc-static: {lib(rec['static_libc'])}, linked into clockbench-os" if isinstance(rec.get("static_libc"), dict) else "")


def context(res: dict) -> list[tuple[str, str]]:
    """The OS run's context, for its page: [(label, value)]."""
    o = os_record(res)
    prof = _d(res.get("profile"))
    rows = [("machine", f"{runinfo.machine_of(res)} ({runinfo.cpu_of(res)})"),
            ("kernel", kernel_of(res) + (f" ({o['kernel_version']})" if _s(o.get("kernel_version")) else "")),
            ("clocksource in use at start", str(_s(o.get("clocksource")) or "-")),
            ("available clocksources", str(_s(o.get("available_clocksources")) or "-")),
            ("clocksources switched to", _switched(res)),
            ("run as", ("root" if o.get("root") is True else "not root" if o.get("root") is False else "-")
             + ("; the init (PID 1)" if o.get("init") is True else "")),
            ("pinned to", _pinned(o)), ("real-time", _realtime(o)), ("vDSO", _vdso(o)), ("C library", _libc(res)),
            ("profile", str(_s(prof.get("name")) or "-")),
            ("TSC rate for ns figures", f"{_hz(prof.get('tsc_hz'))} ({prof.get('tsc_hz_source', '?')})" if prof else "-"),
            ("program build", str(_s(res.get("build")) or "-"))]
    return rows


def call_rows(res: dict, clocksource: str) -> list[dict]:
    """Every call measured on a clocksource: its cost and its resolution."""
    out = []
    for lat in [r for r in _l(res.get("os_latency")) if r.get("clocksource") == clocksource]:
        reso = resolution(res, clocksource, lat.get("call"), lat.get("path"))
        back = reso.get("backward")
        below = lat.get("below_step") is True  # the step's multiple, not a cost: said so, as clockbench-os's table does
        lib = lat.get("libc") if isinstance(lat.get("libc"), dict) else {}
        which = " ".join(str(lib[k]) for k in ("name", "version") if _s(lib.get(k)))
        out.append({"call": str(lat.get("call", "?")), "path": str(lat.get("path", "?")) + (f" ({which})" if which else ""),
                    "n": str(lat["n"]) if isinstance(lat.get("n"), int) else "-",
                    **{k: cost(lat.get(f"{k}_ns")) for k in ("min", "p50", "p99", "max")},
                    **({"min": "-", "p50": os_cost(res, lat), "p99": "-"} if below else {}),
                    "getres": dur(reso.get("getres_ns")), "step": dur(reso.get("min_step_ns")),
                    "backward": str(back) if isinstance(back, int) else "-", "bad": isinstance(back, int) and back > 0})
    # a resolution without its cost (a record cut or lost)
    for reso in [r for r in _l(res.get("os_resolution")) if r.get("clocksource") == clocksource]:
        if not latency(res, clocksource, reso.get("call"), reso.get("path")):
            back = reso.get("backward")
            out.append({"call": str(reso.get("call", "?")), "path": str(reso.get("path", "?")), "n": "-",
                        **{k: "-" for k in ("min", "p50", "p99", "max")},
                        "getres": dur(reso.get("getres_ns")), "step": dur(reso.get("min_step_ns")),
                        "backward": str(back) if isinstance(back, int) else "-", "bad": isinstance(back, int) and back > 0})
    return out


def page(res: dict) -> dict:
    """What an OS run's page shows beyond the checks and the text: its
    context, the kernel's claims, and per clocksource the TSC rate and
    every call's cost and resolution."""
    first = first_clocksource(res)
    tried = {c["name"]: c for c in _l(res.get("os_clocksources")) if isinstance(c.get("name"), str)}
    per = []
    for cs in clocksources(res):
        r = tsc_rate(res, cs)
        rate = None
        if _num(r.get("hz")):
            rate = (f"TSC rate against {r.get('reference', '?')}: {_hz(r['hz'])} {_u(r.get('uncertainty_ppm'))} "
                    f"(statistical {sig(r.get('stderr_ppm'), 2)}, correlated {sig(r.get('correlated_ppm'), 2)}, "
                    f"quantisation {sig(r.get('quantisation_ppm'), 2)} ppm; {sig(r.get('window_s'), 3)} s, "
                    f"{r.get('kept', '?')} of {r.get('samples', '?')} samples kept, narrowest bracket {dur(r.get('narrowest_bracket_ns'))})")
            if cs == "tsc":
                rate += ": on the TSC clocksource CLOCK_MONOTONIC_RAW is the TSC scaled by the kernel's own calibration, so this is that calibration read back"
        t = tried.get(cs)
        note = ("in use at the start: every call" if cs == first else "the calls whose cost depends on the clocksource")
        if t is not None and t.get("selected") is not True:
            note = "not taken" + (f": {t['reason']}" if _s(t.get("reason")) else "")
        per.append({"name": cs, "note": note, "rate": rate, "calls": call_rows(res, cs)})
    claims = [{"what": str(c.get("what", "?")), "detail": str(c.get("detail", "")),
               "hz": f"{c['hz'] / 1e6:.3f} MHz" if _num(c.get("hz")) else "-", "source": str(c.get("source", "?"))}
              for c in _l(res.get("os_claims"))]
    return {"context": context(res), "clocksources": per, "claims": claims}


def warnings(res: dict) -> list[str]:
    """What makes an OS run's figures mean less than they seem."""
    o = os_record(res)
    out = []
    if not o:
        return ["The log has no os record: which kernel and clocksource the figures were taken with is not known."]
    if not isinstance(o.get("pinned_cpu"), int) or isinstance(o.get("pinned_cpu"), bool):
        out.append("Not pinned to a CPU" + (f" ({o['pin_reason']})" if _s(o.get("pin_reason")) else "")
                   + ": a read may migrate between CPUs mid-measurement.")
    if o.get("switching") is False:
        out.append("Only the clocksource in use was measured" + (f": {o['switching_reason']}" if _s(o.get("switching_reason")) else "."))
    if o.get("vdso") is False:
        out.append("No vDSO" + (f" ({o['vdso_reason']})" if _s(o.get("vdso_reason")) else "") + ": every clock_gettime is a syscall.")
    restore = _d(res.get("os_restore"))
    if restore and restore.get("restored") is False:
        out.append(f"The clocksource was not put back: it was {restore.get('original', '?')}, it is now {restore.get('now', '?')}.")
    return out
