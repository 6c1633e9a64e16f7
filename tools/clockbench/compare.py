"""`clockbench compare A B [...]`: runs side by side (logs or results JSON
files): read costs with ratios to the first run, the TSC frequency with ppm
differences, and the checks."""

from __future__ import annotations

import html
import sys
from pathlib import Path

from . import results


def load(path: Path) -> dict:
    return results.load_any(path.read_text(errors="replace"), source=str(path))


def table(runs: list[dict], names: list[str]) -> list[list[str]]:
    rows = [["", *names]]
    label = lambda r: (r.get("machine") or {}).get("hypervisor") or "no hypervisor"  # noqa: E731
    rows.append(["hypervisor", *[label(r) for r in runs]])
    rows.append(["profile", *[(r.get("profile") or {}).get("name", "?") for r in runs]])
    p50s = [results.read_cost_p50(r) for r in runs]
    counters = []
    for p in p50s:
        counters += [c for c in p if c not in counters]
    for c in counters:
        base = p50s[0].get(c)
        cells = []
        for p in p50s:
            v = p.get(c)
            if v is None:
                cells.append("-")
            elif base:
                cells.append(f"{v:.1f} ns (x{v / base:.2f})")
            else:
                cells.append(f"{v:.1f} ns")
        rows.append([f"{c} read p50", *cells])
    hz = [(r.get("profile") or {}).get("tsc_hz") for r in runs]
    cells = []
    for h in hz:
        if h is None:
            cells.append("-")
        elif hz[0]:
            cells.append(f"{h:.0f} Hz ({(h / hz[0] - 1) * 1e6:+.2f} ppm)")
        else:
            cells.append(f"{h:.0f} Hz")
    rows.append(["TSC frequency", *cells])
    rows.append(["TSC measured against", *[(r.get("profile") or {}).get("tsc_hz_source", "-") for r in runs]])
    rows.append(["checks", *[f"{(r.get('summary') or {}).get('pass', '?')} passed, {(r.get('summary') or {}).get('fail', '?')} failed"
                             for r in runs]])
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


def main(args) -> int:
    runs, names = [], []
    for p in args.runs:
        try:
            runs.append(load(Path(p)))
        except (OSError, ValueError) as e:
            print(f"clockbench compare: {e}", file=sys.stderr)
            return 2
        names.append(Path(p).stem)
    rows = table(runs, names)
    sys.stdout.write(as_text(rows))
    if args.html:
        Path(args.html).write_text(as_html(rows))
        print(f"clockbench compare: wrote {args.html}")
    return 0
