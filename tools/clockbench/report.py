"""`clockbench report LOG`: a run's raw log (or a results JSON file, or a
decoded QR code) into a results JSON file, PNG plots (one figure per
question, those the input has data for) and one self-contained HTML page."""

from __future__ import annotations

import base64
import html
import json
import sys
from pathlib import Path

from . import records, results

PLOTS = ("read_cost", "sequential_reads", "frequency", "residuals")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})
    return plt


def _save(fig, path: Path) -> bool:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def plot_read_cost(res: dict, path: Path) -> bool:
    lat = res["latency"]
    if not lat:
        return False
    plt = _plt()
    names = list(lat)
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(names) + 1.5))
    for i, n in enumerate(names):
        r = lat[n]  # a decoded QR code carries only the p50
        if "min_ns" in r:
            ax.plot([r["min_ns"], r["max_ns"]], [i, i], color="0.75", lw=1)
            ax.plot([r["p50_ns"], r["p99_ns"]], [i, i], color="tab:blue", lw=5, solid_capstyle="butt")
            ax.plot(r["p999_ns"], i, "r|", ms=10)
        ax.plot(r["p50_ns"], i, "k|", ms=14)
    ax.set_yticks(range(len(names)), names)
    ax.set_xscale("log")
    ax.set_xlabel("read cost (ns, log scale): grey min-max, blue p50-p99, black p50, red p99.9")
    ax.set_title("What does one read cost?")
    return _save(fig, path)


def plot_sequential(res: dict, path: Path) -> bool:
    hists = res["histograms"]
    if not hists:
        return False
    plt = _plt()
    names = list(hists)
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 1.6 * len(names) + 0.8), squeeze=False)
    for ax, n in zip(axes[:, 0], names):
        bins = hists[n]
        tick = (res["resolution"].get(n) or {}).get("nominal_tick_ns") or 1
        ax.bar([b[0] * tick for b in bins], [b[1] for b in bins], width=max(tick, 1e-3), color="tab:green")
        ax.set_yscale("log")
        ax.set_ylabel(f"{n}\nreads")
        ax.axvline(tick, color="k", ls=":", lw=1)
    axes[-1, 0].set_xlabel("delta between consecutive reads (ns); dotted: one nominal tick")
    axes[0, 0].set_title("Sequential reads: what resolution do you get?")
    return _save(fig, path)


def plot_frequency(res: dict, path: Path) -> bool:
    stab = res["stability"]
    if not stab:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3))
    for ref in sorted({s["reference"] for s in stab}):
        pts = [s for s in stab if s["reference"] == ref]
        ax.errorbar([p["start_s"] + 0.5 for p in pts], [p["ppm_vs_window"] for p in pts], yerr=[p["stderr_ppm"] for p in pts],
                    fmt="o-", capsize=3, label=f"tsc vs {ref}")
    ax.axhline(0, color="k", lw=1, label="whole-window fit")
    ax.set_xlabel("time into the drift window (s)")
    ax.set_ylabel("TSC frequency, ppm from the\nwhole-window fit")
    ax.set_title("Does the TSC's frequency drift?")
    ax.legend()
    return _save(fig, path)


def plot_residuals(res: dict, path: Path) -> bool:
    rs = res["residuals"]
    if not rs:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3))
    for r in rs:
        ax.plot([t / 1000 for t in r["t_ms"]], [p / 1000 for p in r["resid_ps"]], ".", ms=3, label=f"tsc vs {r['reference']}")
    ax.axhline(0, color="k", lw=1)
    ax.set_xlabel("time into the drift window (s)")
    ax.set_ylabel("reference reading minus\nthe fitted line (ns)")
    ax.set_title("Residuals of the drift fit")
    ax.legend(markerscale=3)
    return _save(fig, path)


def render_plots(res: dict, out_dir: Path) -> list[Path]:
    made = []
    for name, fn in zip(PLOTS, (plot_read_cost, plot_sequential, plot_frequency, plot_residuals)):
        p = out_dir / f"{name}.png"
        if fn(res, p):
            made.append(p)
    return made


def _table(rows: list[list], head: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{b}</table>"


def render_html(res: dict, plots: list[Path], path: Path, title: str = "clockbench report") -> None:
    m = res.get("machine") or {}
    prof = res.get("profile") or {}
    s = res.get("summary") or {}
    ident = _table([["CPU", f"{m.get('vendor', '?')} {m.get('brand', '?')}"], ["hypervisor", m.get("hypervisor") or "none"],
                    ["boot", f"{m.get('loader', '?')} (Multiboot {m.get('multiboot', '?')})"], ["command line", m.get("cmdline", "")],
                    ["profile", prof.get("name", "?")], ["TSC", f"{prof.get('tsc_hz', '?')} Hz ({prof.get('tsc_hz_source', '?')})"],
                    ["build", res.get("build")]], ["", ""])
    lat = res["latency"]
    verdict = []
    for c in res["counters"]:
        n = c["name"]
        key = "rdtsc" if n == "tsc" else n
        if not c["present"]:
            verdict.append([n, "absent", "", "", "", c["reason"]])
            continue
        l, r, mono = lat.get(key, {}), res["resolution"].get(key) or res["resolution"].get(n, {}), res["monotonicity"].get(key) or res["monotonicity"].get(n, {})
        freq = [f for f in res["frequency"] if f["counter"] == n]
        fe = ""
        if freq and freq[0]["ppm_vs_nominal"] is not None:
            fe = f"{freq[0]['ppm_vs_nominal']} ppm vs nominal" + (f" (+- {freq[0]['stderr_ppm']})" if freq[0]["stderr_ppm"] is not None else "")
        verdict.append([n, l.get("p50_ns", ""), r.get("min_step_ns", ""), fe, "yes" if mono.get("backward") == 0 else "NO", c.get("nominal_source") or ""])
    checks = _table([[c["result"], c["name"], c["detail"]] for c in res["checks"]], ["result", "check", "detail"])
    imgs = "".join(f'<figure><img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}"></figure>'
                   for p in plots)
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in res["problems"])
    doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:90%}}img{{max-width:100%}}.bad{{color:#b00}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p><b>{s.get('pass', '?')} passed, {s.get('fail', '?')} failed, {s.get('skip', '?')} skipped</b>: {html.escape(str(s.get('status', 'incomplete run')))}</p>
{'<p class="bad">Problems reading the log:</p><ul>' + problems + '</ul>' if problems else ''}
<h2>Machine</h2>{ident}
<h2>Verdict</h2>{_table(verdict, ['counter', 'read p50 (ns)', 'smallest step (ns)', 'frequency', 'monotonic', 'nominal from / reason'])}
<h2>Figures</h2>{imgs}
<h2>Checks</h2>{checks}
</body></html>
"""
    path.write_text(doc)


def main(args) -> int:
    log_path = Path(args.log)
    try:
        text = log_path.read_text(errors="replace")
    except OSError as e:
        print(f"clockbench report: {log_path}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        res = results.load_any(text, source=str(log_path))
    except ValueError as e:
        print(f"clockbench report: {e}", file=sys.stderr)
        return 2
    out = Path(args.out or log_path.with_suffix(""))
    out.mkdir(parents=True, exist_ok=True)
    for p in res["problems"]:
        print(f"clockbench report: {log_path}: {p}", file=sys.stderr)
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    plots = render_plots(res, out)
    render_html(res, plots, out / "report.html", title=f"clockbench report: {log_path.name}")
    print(f"clockbench report: {out}/results.json, {len(plots)} plots, {out}/report.html")
    newer = res["schema_version"] is not None and res["schema_version"] > records.SCHEMA_VERSION
    return 1 if (res["problems"] and not res["complete"]) or newer else 0
