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

from . import results
from .errors import BadInput, CannotWrite, MissingTool

# The read targets in the order the image measures them (docs/output.md).
TARGETS = ("rdtsc", "rdtscp", "lfence;rdtsc", "mfence;rdtsc", "cpuid;rdtsc", "hpet", "acpi_pm", "pit")
RUN_FILES = ("results.json", "run.log")  # named for their folder, not themselves


def load(path: Path) -> dict:
    return results.load_path(path)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def _dict(v) -> dict:
    return v if isinstance(v, dict) else {}


# CPUID 0x40000000 signatures, as people name them
HYPERVISORS = {"KVMKVMKVM": "KVM", "TCGTCGTCGTCG": "QEMU TCG", "Microsoft Hv": "Hyper-V", "VMwareVMware": "VMware",
               "XenVMMXenVMM": "Xen", "VBoxVBoxVBox": "VirtualBox", "bhyve bhyve": "bhyve", "ACRNACRNACRN": "ACRN",
               "lrpepyh  vr": "Parallels", "QNXQVMBSQG": "QNX"}


def machine_of(res: dict) -> str:
    """The machine a run ran on, short, for people: CPU brand and hypervisor."""
    m = _dict(res.get("machine"))
    brand = m.get("brand") if isinstance(m.get("brand"), str) and m["brand"].strip() else m.get("vendor")
    brand = " ".join(str(brand).split()) if isinstance(brand, str) and brand.strip() else "unknown CPU"
    if "hypervisor" not in m:
        hv = "hypervisor unknown"
    elif m["hypervisor"]:
        hv = HYPERVISORS.get(str(m["hypervisor"]).strip(), str(m["hypervisor"]).strip())
    else:
        hv = "bare metal"
    return f"{brand}, {hv}"


def cpu_of(res: dict) -> str:
    """CPUID's vendor and family.model.stepping (the brand is in machine_of)."""
    m = _dict(res.get("machine"))
    fms = ".".join(str(m[k]) for k in ("family", "model", "stepping") if isinstance(m.get(k), int) and not isinstance(m.get(k), bool))
    vendor = m.get("vendor") if isinstance(m.get("vendor"), str) and m["vendor"].strip() else "?"
    return f"{vendor} {fms or '?'}"


def _key(res: dict) -> tuple:
    """Runs with the same key are runs of one machine."""
    m = _dict(res.get("machine"))
    return tuple(str(m.get(k)) for k in ("vendor", "brand", "family", "model", "stepping", "hypervisor"))


def run_names(paths: list[str]) -> list[str]:
    """A short name per run that tells them apart: the file's stem, or its
    folder's name for a file every run folder has (results.json, run.log);
    more of the path where those are alike; a number where the same file is
    given twice."""
    parts = [tuple(x for x in Path(p).resolve().parts if x != Path(p).resolve().anchor) or ("input",) for p in paths]

    def name(ps: tuple, depth: int) -> str:
        ps = list(ps)
        if ps and ps[-1] in RUN_FILES and len(ps) > 1:
            ps = ps[:-1]
        else:
            ps[-1] = Path(ps[-1]).stem or ps[-1]
        return "/".join(ps[-depth:])

    names = [name(p, 1) for p in parts]
    for depth in range(2, max(len(p) for p in parts) + 1):
        # deeper only where the paths differ: the same file twice is numbered
        dup = {n for n in names if len({p for p, m in zip(parts, names) if m == n}) > 1}
        if not dup:
            break
        names = [name(p, depth) if n in dup else n for p, n in zip(parts, names)]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if names.count(n) == 1 else f"{n} #{seen[n]}")
    return out


def ratio(v: float, base: float) -> str:
    """v / base, two significant figures or one decimal: "1.9x", "0.013x", "27x"."""
    r = v / base
    if abs(r) >= 9.95:
        return f"{r:.0f}x"
    if abs(r) >= 0.995:
        return f"{r:.1f}x"
    return f"{r:.2g}x"


def _p50(res: dict) -> dict[str, float]:
    """Read target -> p50 ns: each target once (the TSC is its rdtsc read)."""
    lat = _dict(res.get("latency"))
    return {name: r["p50_ns"] for name, r in lat.items() if isinstance(name, str) and _num(_dict(r).get("p50_ns"))}


def _hz(res: dict):
    hz = _dict(res.get("profile")).get("tsc_hz")
    return hz if _num(hz) and hz > 0 else None


def _checks(res: dict) -> str:
    s = _dict(res.get("summary"))
    code, _ = results.outcome(res)
    if not s:
        return "crashed" if code == 3 else "incomplete run"
    return f"{s.get('pass', '?')} passed, {s.get('fail', '?')} failed, {s.get('skip', '?')} skipped ({s.get('status', '?')})"


def _spread(values: list[float], unit: str, fmt: str) -> str:
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:{fmt}} {unit}"
    return f"{mean:{fmt}} {unit} ± {statistics.stdev(values):{fmt}} {unit}"


def table(runs: list[dict], names: list[str]) -> list[list[str]]:
    """Rows of cells; the first row names the columns."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(runs):
        groups.setdefault(_key(r), []).append(i)
    multi = [idx for idx in groups.values() if len(idx) > 1]
    heads = list(names) + [f"mean ± σ of {len(idx)} runs" for idx in multi]
    rows = [["", *heads]]
    none = [""] * len(multi)
    rows.append(["machine", *[machine_of(r) for r in runs], *[machine_of(runs[idx[0]]) for idx in multi]])
    rows.append(["CPU (family.model.stepping)", *[cpu_of(r) for r in runs], *[cpu_of(runs[idx[0]]) for idx in multi]])
    rows.append(["image build", *[str(r.get("build") or "-") for r in runs], *none])
    rows.append(["profile", *[str(_dict(r.get("profile")).get("name") or "-") for r in runs], *none])
    p50s = [_p50(r) for r in runs]
    targets = [t for t in TARGETS if any(t in p for p in p50s)]
    targets += sorted({t for p in p50s for t in p} - set(targets))
    for t in targets:
        base = p50s[0].get(t)
        cells = []
        for p in p50s:
            v = p.get(t)
            cells.append("-" if v is None else f"{v:.1f} ns" + (f" {ratio(v, base)}" if base else ""))
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
    rows.append(["TSC measured against", *[str(_dict(r.get("profile")).get("tsc_hz_source") or "-") for r in runs], *none])
    rows.append(["checks", *[_checks(r) for r in runs], *none])
    return rows


def as_text(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows) + "\n"


def as_html(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>clockbench compare</title><style>body{{font-family:sans-serif}}'
            f"td,th{{border:1px solid #ccc;padding:.2em .6em}}table{{border-collapse:collapse}}</style></head><body>"
            f"<h1>clockbench compare</h1><table><tr>{head}</tr>{body}</table></body></html>\n")


def _write_html(path, page: str) -> None:
    try:
        Path(path).write_text(page)
    except OSError as e:
        raise CannotWrite(f"cannot write {path}: {e.strerror or e}") from None
    print(f"clockbench compare: wrote {path}")


def _with_os(args, runs: list[dict]) -> int:
    """Bare and OS runs (os_side.py): the side-by-side table."""
    from . import os_side

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
        lines = os_side.os_machine_lines([runs[i] for i in oss], [names[i] for i in oss])
        sys.stdout.write("".join(l + "\n" for l in lines) + ("\n" if lines else "")
                         + "OS runs without a bare run: each call's p50 with its ratio to the first run's "
                           "(give a log of the image too for the bare reads)\n\n" + as_text(rows))
        if args.html:
            _write_html(args.html, as_html(rows).replace("<table>", "".join(f"<p><b>{html.escape(l)}</b></p>" for l in lines)
                                                      + "<table>", 1))
        return 0
    for i in bare:
        if not _p50(runs[i]) and _hz(runs[i]) is None:
            why = results.outcome(runs[i])[1]
            raise BadInput(f"{args.runs[i]}: holds nothing to compare (no read cost, no TSC frequency)" + (f"; {why}" if why else ""))
    if len(bare) > 1:
        sys.stdout.write(as_text(table([runs[i] for i in bare], run_names([args.runs[i] for i in bare]))))
        sys.stdout.write(f"\nThrough the OS, against the first bare run, {names[bare[0]]}:\n")
    t = os_side.side_by_side(runs[bare[0]], [runs[i] for i in oss], names[bare[0]], [names[i] for i in oss])
    sys.stdout.write(os_side.as_text(t))
    if args.html:
        try:
            page = os_side.as_html_page(t)
        except ImportError as e:
            raise MissingTool(f"{e.name or e} is not installed (`make deps`): the HTML table needs it") from None
        _write_html(args.html, page)
    return 0


def _l(v) -> list:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def main(args) -> int:
    runs = [load(Path(p)) for p in args.runs]
    from . import os_side

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
    sys.stdout.write(as_text(rows))
    if args.html:
        try:
            Path(args.html).write_text(as_html(rows))
        except OSError as e:
            raise CannotWrite(f"cannot write {args.html}: {e.strerror or e}") from None
        print(f"clockbench compare: wrote {args.html}")
    return 0
