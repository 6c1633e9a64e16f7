"""`clockbench compare A B [...]`: runs side by side (logs, results JSON
files or decoded QR codes). One column per run, headed by the run's name
(its file, or its folder for a results.json) with its machine and CPU in
the rows beneath; one row per read target with its p50 and
its ratio to the first run ("1.9x"); the TSC frequency with its difference
in ppm; the checks. When one machine has several runs, a column for it
gives the mean and standard deviation over them, as hyperfine does.

`clockbench compare BARE OS [OS ...]` (a run of the image and runs of
clockbench-os, in any order): per clocksource the OS measured, the bare
read p50 of the counter beneath it, clock_gettime(CLOCK_MONOTONIC) through
the OS by libc, the vDSO and the syscall with its ratio to the bare read,
and the resolution claimed (clock_getres) and seen; the coarse, CPU-time
and other clocks in rows of their own; which kernel, clocksource, CPU and
pinning, and a warning when the two ran on different machines. Several
bare runs: the usual table of them, then the OS runs against the first.
OS runs alone: their calls side by side."""

from __future__ import annotations

import html
import statistics
import sys
from pathlib import Path

from clockbench.records import figures, results
from clockbench.report import ladder, os_side
from clockbench.runs import store
from clockbench.records.runinfo import as_text, checks_line, cpu_of, machine_key, machine_of, ratio, run_names
from clockbench.errors import BadInput, CannotWrite, MissingTool

# The read targets in the order the image measures them (docs/output.md).
TARGETS = ("rdtsc", "rdtscp", "lfence;rdtsc", "mfence;rdtsc", "cpuid;rdtsc", "hpet", "acpi_pm", "pit")


def load(path: Path) -> dict:
    return results.load_path(path)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def _dict(v) -> dict:
    return v if isinstance(v, dict) else {}


def _p50(res: dict) -> dict[str, float]:
    """Read target -> p50 ns: each target once (the TSC is its rdtsc read).
    A p50 below the TSC's step is no figure (docs/output.md, below_step):
    left out, so that no ratio is drawn from it."""
    lat = _dict(res.get("latency"))
    return {name: r["p50_ns"] for name, r in lat.items()
            if isinstance(name, str) and _num(_dict(r).get("p50_ns")) and not _dict(r).get("below_step")}


def _hz(res: dict):
    hz = _dict(res.get("profile")).get("tsc_hz")
    return hz if _num(hz) and hz > 0 else None


def _spread(values: list[float], unit: str, fmt: str) -> str:
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:{fmt}} {unit}"
    return f"{mean:{fmt}} {unit} ± {statistics.stdev(values):{fmt}} {unit}"


def _boot(res: dict) -> str:
    """How the image was started: its loader and protocol."""
    m = _dict(res.get("machine"))
    loader, proto = m.get("loader"), m.get("boot_protocol") or (f"multiboot{m['multiboot']}" if m.get("multiboot") else None)
    return " ".join(str(x) for x in (loader or None, f"({proto})" if proto else None) if x) or "-"


def _firmware(res: dict) -> str:
    """What the image knows of the firmware: only its EFI entry reads it."""
    m = _dict(res.get("machine"))
    if m.get("firmware_vendor"):
        return f"UEFI, {m['firmware_vendor']}" + (f", Secure Boot {m['secure_boot']}" if m.get("secure_boot") else "")
    return "not through UEFI" if m else "-"


def _counters_present(res: dict) -> tuple:
    """The counters the machine has: two VMMs on one host give the same CPU
    and hypervisor, but not the same devices (Firecracker a PIT, Cloud
    Hypervisor a PM timer)."""
    return tuple(sorted(str(c.get("name")) for c in res.get("counters") or [] if isinstance(c, dict) and c.get("present")))


def repeat_key(res: dict) -> tuple:
    """Runs with the same key are repeats of one measurement: the same
    machine (the same CPU, hypervisor and counters), booted the same way,
    with the same profile. Only these are averaged; a BIOS and a UEFI run of
    one machine are two columns, not a mean, and so are two VMMs on one host."""
    return (*machine_key(res), _counters_present(res), _boot(res), _firmware(res),
            str(_dict(res.get("profile")).get("name")))


def table(runs: list[dict], names: list[str]) -> list[list[str]]:
    """Rows of cells; the first row names the columns."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(runs):
        groups.setdefault(repeat_key(r), []).append(i)
    multi = [idx for idx in groups.values() if len(idx) > 1]
    heads = list(names) + [f"mean ± σ of {len(idx)} runs" for idx in multi]
    rows = [["", *heads]]
    none = [""] * len(multi)
    rows.append(["machine", *[machine_of(r) for r in runs], *[machine_of(runs[idx[0]]) for idx in multi]])
    rows.append(["CPU (family.model.stepping)", *[cpu_of(r) for r in runs], *[cpu_of(runs[idx[0]]) for idx in multi]])
    rows.append(["firmware", *[_firmware(r) for r in runs], *[_firmware(runs[idx[0]]) for idx in multi]])
    rows.append(["boot", *[_boot(r) for r in runs], *[_boot(runs[idx[0]]) for idx in multi]])
    if len({_counters_present(r) for r in runs}) > 1:  # machines told apart by their devices, not their CPU
        said = lambda r: " ".join(_counters_present(r)) or "-"  # noqa: E731
        rows.append(["counters present", *[said(r) for r in runs], *[said(runs[idx[0]]) for idx in multi]])
    rows.append(["image build", *[str(r.get("build") or "-") for r in runs], *none])
    rows.append(["profile", *[str(_dict(r.get("profile")).get("name") or "-") for r in runs], *none])
    p50s = [_p50(r) for r in runs]
    # a target every run read below the TSC's step has no p50 but still a row
    measured = [set(p) | {t for t, lat in _dict(r.get("latency")).items() if _dict(lat).get("below_step")} for r, p in zip(runs, p50s)]
    targets = [t for t in TARGETS if any(t in m for m in measured)]
    targets += sorted({t for m in measured for t in m} - set(targets))
    for t in targets:
        base = p50s[0].get(t)
        cells = []
        for r, p in zip(runs, p50s):
            v = p.get(t)
            lat = _dict(_dict(r.get("latency")).get(t))
            # a read below the TSC's step has no ratio, but says what it is, as every output does (figures.read_cost)
            cells.append(figures.target_read_cost(r, t) if v is None and lat else
                         "-" if v is None else figures.target_read_cost(r, t) + (f" {ratio(v, base)}" if base else ""))
        group_vals = [[p50s[i][t] for i in idx if t in p50s[i]] for idx in multi]
        group_base = statistics.fmean(group_vals[0]) if group_vals and group_vals[0] else None
        for idx, vals in zip(multi, group_vals):
            if not vals:
                cells.append("-")
                continue
            cell = _spread(vals, "ns", ".1f")
            if group_base and len(multi) > 1:
                cell += f" {ratio(statistics.fmean(vals), group_base)}"
            if len(vals) != len(idx):
                cell += f" (n={len(vals)})"
            cells.append(cell)
        rows.append([f"{t} read p50", *cells])
    hz = [_hz(r) for r in runs]
    cells = []
    for h in hz:
        if h is None:
            cells.append("-")
        elif hz[0]:
            cells.append(f"{h:.0f} Hz ({(h / hz[0] - 1) * 1e6:+.2f} ppm)")
        else:
            cells.append(f"{h:.0f} Hz")
    for idx in multi:
        vals = [hz[i] for i in idx if hz[i] is not None]
        if vals:
            mean = statistics.fmean(vals)
            sd_ppm = statistics.stdev(vals) / mean * 1e6 if len(vals) > 1 else 0.0
            cells.append(f"{mean:.0f} Hz ± {sd_ppm:.2f} ppm" if len(vals) > 1 else f"{mean:.0f} Hz (n=1)")
        else:
            cells.append("-")
    rows.append(["TSC frequency", *cells])
    rows.append(["TSC frequency from", *[str(_dict(r.get("profile")).get("tsc_hz_source") or "-") for r in runs], *none])
    rows.append(["checks", *[checks_line(r) for r in runs], *none])
    return rows


def as_html(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>clockbench compare</title><style>body{{font-family:sans-serif}}'
            f"td,th{{border:1px solid #ccc;padding:.2em .6em}}table{{border-collapse:collapse}}</style></head><body>"
            f"<h1>clockbench compare</h1><table><tr>{head}</tr>{body}</table></body></html>\n")


def _write_html(path, page: str) -> None:
    """Written before the table is printed: a file that cannot be written is
    one line (73), not a table and then an error."""
    try:
        Path(path).write_text(page)
    except OSError as e:
        raise CannotWrite(f"cannot write {path}: {e.strerror or e}") from None


def _with_os(args, runs: list[dict]) -> int:
    """Bare and OS runs (os_side.py): the side-by-side table."""

    names = run_names(list(args.runs))
    for p, r in zip(args.runs, runs):
        if os_side.is_os(r) and not _l(r.get("os_latency")) and not _l(r.get("os_tsc_rate")):
            why = results.outcome(r)[1]
            raise BadInput(f"{p}: an OS run that holds nothing to compare (no os_latency, no os_tsc_rate records)"
                           + (f"; {why}" if why else ""))
        code, why = results.outcome(r)
        if code not in (0, 1):
            print(f"clockbench compare: {p}: {why}", file=sys.stderr)
    bare = [i for i, r in enumerate(runs) if not os_side.is_os(r)]
    oss = [i for i, r in enumerate(runs) if os_side.is_os(r)]
    if not bare:
        rows = os_side.os_vs_os([runs[i] for i in oss], [names[i] for i in oss])
        # the languages side by side: each cell its p50 (its ratio to the first run's), path and clock; a table of its
        # own in the text, so that the context's long cells do not narrow its columns
        langs = ladder.side_by_side([runs[i] for i in oss])
        os_runs, os_names = [runs[i] for i in oss], [names[i] for i in oss]
        lines = os_side.os_machine_lines(os_runs, os_names) + ladder.runtime_differences(os_runs, os_names)
        diffs = ladder.differences(os_runs, os_names)
        if args.html:
            _write_html(args.html, as_html(rows + langs).replace("<table>", "".join(f"<p><b>{html.escape(l)}</b></p>" for l in lines)
                                                      + "<table>", 1).replace("</table>", "</table>" + "".join(
                                                          f"<p>{html.escape(l)}</p>" for l in diffs), 1))
        sys.stdout.write("".join(_wrap(l) + "\n" for l in lines) + ("\n" if lines else "")
                         + _wrap("OS runs without a bare run: each call's p50 with its ratio to the first run's (give a log of "
                                 "the image too for the bare reads); a language's cell: its p50 (95% interval), path and clock; b: a "
                                 "batch's cost per call, not one call alone") + "\n\n" + as_text(rows, WIDTH)
                         + ("\n" + as_text([["language, API, clocksource", *rows[0][1:]], *langs], WIDTH) if langs else "")
                         + ("\nEach language's cost against the first run's, beyond their 95% intervals or not:\n"
                            + "".join(_wrap(l, "  ") + "\n" for l in diffs) if diffs else ""))
        if args.html:
            print(f"clockbench compare: wrote {args.html}")
        return 0
    for i in bare:
        if not _p50(runs[i]) and _hz(runs[i]) is None:
            why = results.outcome(runs[i])[1]
            raise BadInput(f"{args.runs[i]}: holds nothing to compare (no read cost, no TSC frequency)" + (f"; {why}" if why else ""))
    out = ""
    if len(bare) > 1:
        out += as_text(table([runs[i] for i in bare], run_names([args.runs[i] for i in bare])), WIDTH)
        out += f"\nThrough the OS, against the first bare run, {names[bare[0]]}:\n"
    t = os_side.side_by_side(runs[bare[0]], [runs[i] for i in oss], names[bare[0]], [names[i] for i in oss])
    # each OS run's ladder of languages, beneath the bare run's read of the counter under each clocksource
    t["ladders"] = [{"name": names[i], "clocksource": lt["clocksource"], "rows": ladder.as_rows(lt)}
                    for i in oss for lt in ladder.tables(runs[i], runs[bare[0]])]
    t["summaries"] = ladder.summaries_of([runs[i] for i in oss], [names[i] for i in oss])
    out += os_side.as_text(t)
    for lt in t["ladders"]:
        out += "\n" + _wrap(f"The ladder of {lt['name']} on clocksource {lt['clocksource']}, beneath the bare read of "
                            f"{names[bare[0]]} (the image, no OS): p50 with its 95% interval; method tsc: one call between "
                            f"serialised TSC reads, batch: a batch's cost per call; {os_side.CLAIM_LEGEND}:") + "\n" \
            + as_text(lt["rows"], WIDTH)
    for sm in t["summaries"]:
        out += f"\nEach language's clocks across the clocksources in {sm['name']}:\n" + "".join(_wrap(l, "  ") + "\n" for l in sm["lines"])
    if len(oss) > 1:  # the OS runs' languages against each other too, as without a bare run
        os_runs, os_names = [runs[i] for i in oss], [names[i] for i in oss]
        said = ladder.runtime_differences(os_runs, os_names) + ladder.differences(os_runs, os_names)
        if said:
            out += (f"\nEach language's cost in the OS runs against {os_names[0]}'s, beyond their 95% intervals or not:\n"
                    + "".join(_wrap(l, "  ") + "\n" for l in said))
    if args.html:
        try:
            page = os_side.as_html_page(t)
        except ImportError as e:
            raise MissingTool(f"{e.name or e} is not installed (`make deps`): the HTML table needs it") from None
        _write_html(args.html, page)
    sys.stdout.write(out)
    if args.html:
        print(f"clockbench compare: wrote {args.html}")
    return 0


# compare's lines fit a terminal this wide (issue 44: under 160 columns)
WIDTH = 159


def _wrap(line: str, indent: str = "") -> str:
    import textwrap

    return textwrap.fill(line, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False,
                         break_long_words=False)


def _l(v) -> list:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def main(args) -> int:
    # a log, a results file, or a run's id in the store ("run 3" from here on)
    loaded = [store.load_run(p, getattr(args, "store", None) or store.DEFAULT, load) for p in args.runs]
    runs = [r for r, _ in loaded]
    args.runs = [name for _, name in loaded]

    if any(os_side.is_os(r) for r in runs):
        return _with_os(args, runs)
    for p, r in zip(args.runs, runs):
        if not _p50(r) and _hz(r) is None:
            why = results.outcome(r)[1]
            raise BadInput(f"{p}: holds nothing to compare (no read cost, no TSC frequency)" + (f"; {why}" if why else ""))
        code, why = results.outcome(r)
        if code not in (0, 1):
            print(f"clockbench compare: {p}: {why}", file=sys.stderr)
    rows = table(runs, run_names(list(args.runs)))
    if args.html:
        _write_html(args.html, as_html(rows))
    sys.stdout.write(as_text(rows, WIDTH))
    if args.html:
        print(f"clockbench compare: wrote {args.html}")
    return 0
