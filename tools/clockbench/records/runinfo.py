"""What every comparison of runs needs, below compare, the OS side and the
report alike: which machine a run ran on, a short name per run, a ratio as
people read it, the checks in one phrase, and a plain-text table."""

from __future__ import annotations

from pathlib import Path

from clockbench.records import results

RUN_FILES = ("results.json", "run.log")  # named for their folder, not themselves


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


def machine_key(res: dict) -> tuple:
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


def checks_line(res: dict) -> str:
    s = _dict(res.get("summary"))
    code, _ = results.outcome(res)
    if not s:
        return "crashed" if code == 3 else "incomplete run"
    return f"{s.get('pass', '?')} passed, {s.get('fail', '?')} failed, {s.get('skip', '?')} skipped ({s.get('status', '?')})"


# `compare`'s tables fit a terminal this wide (issue 44: under 160 columns).
WIDTH = 159


def _fit(widths: list[int], words: list[int], width: int) -> list[int]:
    """Column widths that fit `width` with two spaces between columns: the
    widest columns are narrowed to one common cap, as little as that takes,
    never below their longest word (a clock's name is not cut in two)
    unless nothing else fits."""
    room = width - 2 * (len(widths) - 1)
    if sum(widths) <= room:
        return widths
    # the first column names the row: kept whole while it is not the widest part of the line
    floor = [w if i == 0 and w <= 60 else min(w, max(k, 8)) for i, (w, k) in enumerate(zip(widths, words))]
    cap = max(widths)
    while cap > 8 and sum(max(f, min(w, cap)) for w, f in zip(widths, floor)) > room:
        cap -= 1
    return [max(f, min(w, cap)) if sum(max(f, min(w, cap)) for w, f in zip(widths, floor)) <= room else min(w, cap)
            for w, f in zip(widths, floor)]


def as_text(rows: list[list[str]], width: int | None = None) -> str:
    """Rows of cells as columns; with a width, the widest columns' cells
    wrap onto lines of their own beneath, so that no line is wider."""
    import textwrap

    natural = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    words = [max((len(x) for r in rows for x in r[i].split()), default=0) for i in range(len(rows[0]))]
    widths = _fit(natural, words, width) if width else natural
    out = []
    for r in rows:
        cells = [textwrap.wrap(c, w, break_on_hyphens=False) or [""] if len(c) > w else [c] for c, w in zip(r, widths)]
        for k in range(max(len(c) for c in cells)):
            out.append("  ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths)).rstrip())
    return "\n".join(out) + "\n"
