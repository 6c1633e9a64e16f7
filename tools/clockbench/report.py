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


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numbers(rec: dict, *keys: str) -> bool:
    return all(_number(rec.get(k)) for k in keys)


def _drawable(rec: dict, ok, plot: str, notes: list[str]) -> bool:
    """Whether a plot can draw rec; a note when it cannot, so a cut or odd
    record costs its own line on the plot, never the plot or the page."""
    if rec.get("truncated") or not ok(rec):
        notes.append(f"{records.describe(rec)} is incomplete: left out of the {plot} plot")
        return False
    return True


def plot_read_cost(res: dict, path: Path, notes: list[str]) -> bool:
    lat = {n: r for n, r in res["latency"].items() if _drawable(r, lambda r: _numbers(r, "p50_ns"), "read cost", notes)}
    if not lat:
        return False
    plt = _plt()
    names = list(lat)
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(names) + 1.5))
    for i, n in enumerate(names):
        r = lat[n]  # a decoded QR code carries only the p50
        if _numbers(r, "min_ns", "max_ns", "p99_ns", "p999_ns"):
            ax.plot([r["min_ns"], r["max_ns"]], [i, i], color="0.75", lw=1)
            ax.plot([r["p50_ns"], r["p99_ns"]], [i, i], color="tab:blue", lw=5, solid_capstyle="butt")
            ax.plot(r["p999_ns"], i, "r|", ms=10)
        ax.plot(r["p50_ns"], i, "k|", ms=14)
    ax.set_yticks(range(len(names)), names)
    ax.set_xscale("log")
    ax.set_xlabel("read cost (ns, log scale): grey min-max, blue p50-p99, black p50, red p99.9")
    ax.set_title("What does one read cost?")
    return _save(fig, path)


def plot_sequential(res: dict, path: Path, notes: list[str]) -> bool:
    hists = res["histograms"]
    if not hists:
        return False
    plt = _plt()
    names = list(hists)
    fig, axes = plt.subplots(len(names), 1, figsize=(7, 1.6 * len(names) + 0.8), squeeze=False)
    for ax, n in zip(axes[:, 0], names):
        bins = hists[n]
        r = res["resolution"].get(n) or {}
        tick = r["nominal_tick_ns"] if _numbers(r, "nominal_tick_ns") and r["nominal_tick_ns"] > 0 else 1
        ax.bar([b[0] * tick for b in bins], [b[1] for b in bins], width=max(tick, 1e-3), color="tab:green")
        ax.set_yscale("log")
        ax.set_ylabel(f"{n}\nreads")
        ax.axvline(tick, color="k", ls=":", lw=1)
    axes[-1, 0].set_xlabel("delta between consecutive reads (ns); dotted: one nominal tick")
    axes[0, 0].set_title("Sequential reads: what resolution do you get?")
    return _save(fig, path)


def plot_frequency(res: dict, path: Path, notes: list[str]) -> bool:
    ok = lambda s: (isinstance(s.get("reference"), str) and _numbers(s, "start_s", "ppm_vs_window")  # noqa: E731
                    and (s.get("stderr_ppm") is None or _numbers(s, "stderr_ppm")))
    stab = [s for s in res["stability"] if _drawable(s, ok, "frequency", notes)]
    if not stab:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3))
    for ref in sorted({s["reference"] for s in stab}):
        pts = [s for s in stab if s["reference"] == ref]
        ax.errorbar([p["start_s"] + 0.5 for p in pts], [p["ppm_vs_window"] for p in pts], yerr=[p.get("stderr_ppm") or 0 for p in pts],
                    fmt="o-", capsize=3, label=f"tsc vs {ref}")
    ax.axhline(0, color="k", lw=1, label="whole-window fit")
    ax.set_xlabel("time into the drift window (s)")
    ax.set_ylabel("TSC frequency, ppm from the\nwhole-window fit")
    ax.set_title("Does the TSC's frequency drift?")
    ax.legend()
    return _save(fig, path)


def _residual_series(r: dict) -> bool:
    t, y = r.get("t_ms"), r.get("resid_ps")
    return (isinstance(t, list) and isinstance(y, list) and len(t) == len(y)
            and all(_number(v) for v in t + y))


def plot_residuals(res: dict, path: Path, notes: list[str]) -> bool:
    rs = [r for r in res["residuals"] if _drawable(r, _residual_series, "residuals", notes)]
    if not rs:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3))
    for r in rs:
        ax.plot([t / 1000 for t in r["t_ms"]], [p / 1000 for p in r["resid_ps"]], ".", ms=3, label=f"tsc vs {r.get('reference', '?')}")
    ax.axhline(0, color="k", lw=1)
    ax.set_xlabel("time into the drift window (s)")
    ax.set_ylabel("reference reading minus\nthe fitted line (ns)")
    ax.set_title("Residuals of the drift fit")
    ax.legend(markerscale=3)
    return _save(fig, path)


def render_plots(res: dict, out_dir: Path, notes: list[str] | None = None) -> list[Path]:
    """The plots the input has data for. What a plot leaves out, or a plot
    that fails outright, becomes a note: the page is written regardless."""
    notes = [] if notes is None else notes
    made = []
    for name, fn in zip(PLOTS, (plot_read_cost, plot_sequential, plot_frequency, plot_residuals)):
        p = out_dir / f"{name}.png"
        try:
            if fn(res, p, notes):
                made.append(p)
        except Exception as e:  # noqa: BLE001 - one plot's failure must not cost the page
            import matplotlib.pyplot as plt

            plt.close("all")
            notes.append(f"the {name.replace('_', ' ')} plot could not be drawn: {type(e).__name__}: {e}")
    return made


def _table(rows: list[list], head: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{b}</table>"


def render_html(res: dict, plots: list[Path], path: Path, title: str = "clockbench report", notes: list[str] = ()) -> None:
    """The page. Built with .get() throughout: a record cut for length or
    a results file from an older tool lacks members, and costs a cell, not
    the page."""
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
        n = c.get("name", "?")
        key = "rdtsc" if n == "tsc" else n
        if not c.get("present"):
            verdict.append([n, "absent", "", "", "", c.get("reason") or ""])
            continue
        l, r, mono = lat.get(key, {}), res["resolution"].get(key) or res["resolution"].get(n, {}), res["monotonicity"].get(key) or res["monotonicity"].get(n, {})
        freq = [f for f in res["frequency"] if f.get("counter") == n]
        fe = ""
        if freq and freq[0].get("ppm_vs_nominal") is not None:
            fe = f"{freq[0]['ppm_vs_nominal']} ppm vs nominal" + (f" (+- {freq[0]['stderr_ppm']})" if freq[0].get("stderr_ppm") is not None else "")
        verdict.append([n, l.get("p50_ns", ""), r.get("min_step_ns", ""), fe, "yes" if mono.get("backward") == 0 else "NO", c.get("nominal_source") or ""])
    checks = _table([[c.get("result", "?"), c.get("name", "?"), c.get("detail", "")] for c in res["checks"]], ["result", "check", "detail"])
    imgs = "".join(f'<figure><img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}"></figure>'
                   for p in plots)
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in res["problems"])
    noted = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:90%}}img{{max-width:100%}}.bad{{color:#b00}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p><b>{s.get('pass', '?')} passed, {s.get('fail', '?')} failed, {s.get('skip', '?')} skipped</b>: {html.escape(str(s.get('status', 'incomplete run')))}</p>
{'<p class="bad">Problems reading the log:</p><ul>' + problems + '</ul>' if problems else ''}
<h2>Machine</h2>{ident}
<h2>Verdict</h2>{_table(verdict, ['counter', 'read p50 (ns)', 'smallest step (ns)', 'frequency', 'monotonic', 'nominal from / reason'])}
<h2>Figures</h2>{imgs}
{'<p>Left out:</p><ul>' + noted + '</ul>' if noted else ''}
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
    notes = list(res.get("notes") or [])
    plots = render_plots(res, out, notes)
    for n in notes:
        print(f"clockbench report: {log_path}: note: {n}", file=sys.stderr)
    render_html(res, plots, out / "report.html", title=f"clockbench report: {log_path.name}", notes=notes)
    print(f"clockbench report: {out}/results.json, {len(plots)} plots, {out}/report.html")
    newer = res["schema_version"] is not None and res["schema_version"] > records.SCHEMA_VERSION
    return 1 if (res["problems"] and not res["complete"]) or newer else 0
