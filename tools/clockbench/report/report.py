"""`clockbench report LOG`: a run's raw log (or a results JSON file, or a
decoded QR code) into a results JSON file, PNG plots (one figure per
question, those the input has data for) and one self-contained HTML page
(templates/report.html.j2, Jinja2 with autoescaping) that carries what the
terminal report says: problems first, then warnings, the verdict, and every
section with its figures."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import sys
from pathlib import Path

from clockbench.records import figures, records, results, runinfo
from clockbench.report import ladder, os_side, pages, plots

PLOTS = plots.PLOTS

# ------------------------------------------------------------------ numbers


def _num(v) -> bool:
    return plots.number(v)


# one formatting path for every figure (figures.py): the page, the CI
# summary, compare and the fleet say each figure alike
sig, ns, pm, unc, hz = figures.sig, figures.ns, figures.pm, figures.unc, figures.hz


def count(v) -> str:
    return f"{v:,}".replace(",", "\u2009") if isinstance(v, int) and not isinstance(v, bool) else ("?" if v is None else str(v))


# ------------------------------------------------------------ the log's text

_SECTION = re.compile(r"^== (.+?) ==\s*$")
_BANNER = re.compile(r"^clockbench \S+: time counters")
_VERDICT_ROW = re.compile(r"^  (\S+)\s+(\S+) ns\s+(\S+) ns\s+(.+?)\s+(\S+)\s*$")
_VERDICT_ONLY = re.compile(r"^  (\S+) (present|absent): (.*)$")
_ADVICE = re.compile(r"^\s+-> (.*)$")


def terminal_text(text: str) -> list[str]:
    """The lines for people, as the terminal showed them: records, GRUB's
    menu and escape codes taken out, from the image's banner on."""
    lines = []
    for line in records.clean(text).split("\n"):
        if records.PREFIX in line:
            line = line.split(records.PREFIX)[0]
            if not line.strip():
                continue
        lines.append(line.rstrip())
    start = next((i for i, l in enumerate(lines) if _BANNER.match(l)), 0)
    lines = lines[start:]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def sections(lines: list[str]) -> list[dict]:
    """The terminal report cut at its "== Title ==" headers; the banner
    and what precedes the first header is the section "Start"."""
    out = [{"title": "Start", "lines": []}]
    for line in lines:
        m = _SECTION.match(line)
        if m:
            out.append({"title": m.group(1), "lines": []})
        else:
            out[-1]["lines"].append(line)
    for s in out:
        while s["lines"] and not s["lines"][0].strip():
            s["lines"].pop(0)
        while s["lines"] and not s["lines"][-1].strip():
            s["lines"].pop()
    return [s for s in out if s["lines"] or s["title"] != "Start"]


def _joined(lines: list[str]) -> list[str]:
    """Console-wrapped lines joined back: the console breaks a line near
    80 columns and indents the rest deeper than the line it continues."""
    out: list[list] = []  # [indent, text, length of its last physical line]
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if out and line.strip() and indent > out[-1][0] and out[-1][2] >= 60:
            out[-1][1] += " " + line.strip()
            out[-1][2] = len(line)
        else:
            out.append([indent, line.strip(), len(line)])
    return [t for _, t, _ in out]


def verdict_text(secs: list[dict]) -> dict:
    """The verdict table as the image printed it: each counter's row and
    its advice line (the advice is in no record)."""
    sec = next((s for s in secs if s["title"] == "Verdict"), None)
    advice, rows, last, cost_line = {}, {}, None, False
    for line in sec["lines"] if sec else []:
        m, only, adv = _VERDICT_ROW.match(line), _VERDICT_ONLY.match(line), _ADVICE.match(line)
        if cost_line and not adv and line.startswith("    ") and line.strip():
            continue  # the read's cost line, wrapped
        cost_line = False
        if m and m.group(1) != "counter":
            last = m.group(1)
            rows[last] = {"read": m.group(2), "resolution": m.group(3), "freq": m.group(4), "mono": m.group(5)}
        elif only:
            last = only.group(1)
            advice[last] = only.group(3)
        elif adv and last and adv.group(1).lstrip("* ").startswith("a read is"):
            cost_line = True  # the read's cost below the TSC's step, not its advice
        elif adv and last:
            advice[last] = adv.group(1)
        elif last and last in advice and line.startswith("    ") and line.strip():
            advice[last] += " " + line.strip()  # a wrapped advice line
        elif not line.strip() and (rows or advice):
            break  # the table ends at its first blank line
    return {"advice": advice, "rows": rows}


def _text_notes(lines: list[str]) -> list[str]:
    """The image's own "Note:" lines (a feature missing, an option it could
    not use) in a log older than its `note` records: joined across the
    console's wraps and across a break the image made by hand inside the
    sentence (a line of the same indent going on in lower case)."""
    out: list[str] = []
    note_indent = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if text.startswith("Note:"):
            out.append(text)
            note_indent = indent
        elif note_indent is not None and text and (indent > note_indent or (
                indent == note_indent and text[0].islower() and not out[-1].endswith(".")
                and not re.match(r"[a-z_]+:\s", text))):
            out[-1] += " " + text
        else:
            note_indent = None
    return out


def _fault_lines(lines: list[str]) -> list[str]:
    i = next((k for k, l in enumerate(lines) if l.startswith("FAULT:")), None)
    if i is None:
        return []
    out = [lines[i]]
    for l in lines[i + 1:]:
        if not l.startswith("  "):
            break
        out.append(l)
    return out


def augment(res: dict, text: str) -> dict:
    """What the page needs beyond the results structure, from the log:
    the terminal text, the verdict's advice, discontinuities, the drift
    window, CPUs. Kept in results.json too (extra members; compare ignores
    them)."""
    log = records.parse_log(text)
    recs, _ = records.join_parts(log.records)
    objs = lambda kind: [r for r in records.of_type(recs, kind) if isinstance(r, dict)]  # noqa: E731
    res.setdefault("discontinuities", objs("discontinuity"))
    res.setdefault("drift_window", (objs("drift_window") or [None])[0])
    res.setdefault("cpus", objs("cpu"))
    res.setdefault("tsc_sync", objs("tsc_sync"))
    res.setdefault("calibration", (objs("calibration") or [None])[0])
    res.setdefault("timers", objs("timer"))
    res.setdefault("timer_cells", [r for r in objs("timer_latency") if r.get("cpu", 0) == 0])
    lines = terminal_text(text)
    secs = sections(lines)
    res["terminal"] = {"sections": secs, "verdict": verdict_text(secs), "notes": _text_notes(lines),
                       "fault": _fault_lines(lines),
                       "ended": next((l for l in reversed(lines) if l.startswith("clockbench: run ended:")), None),
                       "last_line": next((l for l in reversed(lines) if l.strip()), None)}
    return res


# ------------------------------------------------------------ the page's parts


def _d(v) -> dict:
    return v if isinstance(v, dict) else {}


def _l(v) -> list:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _counter_key(name: str) -> str:
    return "rdtsc" if name == "tsc" else name


def outcome(res: dict) -> tuple[int, str]:
    """The run's status code and why, as results.outcome says it when the
    loader has it; else from the summary alone."""
    fn = getattr(results, "outcome", None)
    if fn:
        try:
            return fn(res)
        except Exception:  # noqa: BLE001 - an odd results file costs the line, not the page
            pass
    s = _d(res.get("summary"))
    if res.get("fault"):
        return 3, "the run crashed"
    if not s:
        return 4, "the log ends before the run did (no summary record)"
    return (0, "") if s.get("status") == "passed" else (1, f"the run ended: {s.get('status')}")


def problems(res: dict) -> list[dict]:
    """What went wrong, most serious first: a crash, an incomplete run,
    failed checks, discontinuities that cut the fit, records that could
    not be read. Each {"title", "detail": [lines]}."""
    out = []
    term = _d(res.get("terminal"))
    fault = _d(res.get("fault"))
    if fault or term.get("fault"):
        head = (f"The run crashed: CPU exception {fault.get('vector', '?')}, {fault.get('name', '?')}"
                + (f", at rip {fault['rip']}" if isinstance(fault.get("rip"), str) else "")) if fault else "The run crashed"
        out.append({"title": head, "kind": "crash", "pre": "\n".join(term.get("fault") or []),
                    "detail": ["Everything below was measured before the exception; what the run had not reached is missing."]})
    if not res.get("complete") and not fault:
        last = term.get("last_line")
        secs = [s["title"] for s in term.get("sections") or [] if s.get("title") != "Start"]
        detail = ["The log has no summary record: the run did not finish, or the log was cut."]
        if secs:
            detail.append(f"The last section it reached: \u201c{secs[-1]}\u201d.")
        if last:
            detail.append(f"Its last line: {last}")
        out.append({"title": "Incomplete run: the log ends before the run did", "kind": "incomplete", "detail": detail})
    failed = [c for c in _l(res.get("checks")) if c.get("result") == "FAIL"]
    if failed:
        out.append({"title": f"{figures.counted(len(failed), 'check', 'checks')} failed", "kind": "fail",
                    "detail": [f"{c.get('name', '?')}: {c.get('detail', '')}" for c in failed]})
    # the drift window's discontinuities are no problem of their own: the image's checks judge the run, and
    # Warnings says how many there were (drift_warning), in the words of the terminal and the Discontinuities list
    for name, m in _d(res.get("monotonicity")).items():
        if isinstance(m, dict) and ((_num(m.get("backward")) and m["backward"] > 0) or m.get("stuck")):
            out.append({"title": f"{name} is not monotonic", "kind": "fail",
                        "detail": [f"{figures.counted(m.get('backward') or 0, 'backward step', 'backward steps')}, "
                                   f"the largest {m.get('largest_backward_ticks')} ticks"
                                   + ("; it stopped moving in the drift window" if m.get("stuck") else "")]})
    if res.get("problems"):
        out.append({"title": f"{figures.counted(len(res['problems']), 'record', 'records')} could not be read", "kind": "log",
                    "detail": [str(p) for p in res["problems"]]})
    return out


def warnings(res: dict) -> list[str]:
    """What makes the figures mean less than they seem: a trapped RDTSC, an
    emulated CPU, a TSC that is not invariant or not measured, and the
    image's own notes."""
    out = []
    m, hw, cs, feat, prof = (_d(res.get(k)) for k in ("machine", "hwlat", "cpu_speed", "cpu_features", "profile"))
    if hw.get("rdtsc_intercepted"):
        cost = figures.tsc_read_cost(res)
        cost = f"a read is {cost}" if cost.startswith("below") else f"a read costs {cost} (p50)"
        out.append(f"The hypervisor appears to intercept RDTSC: {cost}, where hardware needs 10-40 ns. "
                   "Every TSC read here is a trip into the hypervisor.")
    if cs.get("emulated"):
        rate = cs.get("iterations_per_s")
        out.append("The CPU seems emulated: a one-instruction loop runs "
                   + (f"{sig(rate / 1e6)} million iterations per second" if _num(rate) else "far too few iterations")
                   + ", far below any hardware; the figures describe the emulator.")
    elif emulator(res):
        out.append(f"Under an emulator ({what_machine(res)}): every figure describes the emulator's clocks, not this computer's hardware.")
    # the image's notes, whole from its note records; an older log's joined from its text
    notes = ([f"Note: {n}" for n in res["image_notes"]] if res.get("image_notes")
             else [str(n) for n in _d(res.get("terminal")).get("notes") or []])
    notes = [n if n.endswith((".", "!", "?")) else n + "." for n in notes]
    if feat and feat.get("invariant_tsc") is False and not any("invariant" in n for n in notes):
        out.append("No invariant-TSC bit (CPUID.80000007h:EDX[8]): the TSC's rate may change with P-states or stop in deep C-states.")
    if prof and prof.get("tsc_measured") is False:
        out.append(f"The TSC's rate was not measured: ns figures use {prof.get('tsc_hz_source', 'a nominal rate')}.")
    if m.get("hypervisor") and m["hypervisor"] != TCG_SIGNATURE:
        out.append(f"Under a hypervisor ({m['hypervisor']}): the figures describe the virtual machine's clocks, not the hardware's.")
    if _num(hw.get("gaps")) and hw["gaps"] and _num(hw.get("total_gap_ns")) and _num(hw.get("window_s")) and hw["window_s"] > 0:
        share = hw["total_gap_ns"] / (hw["window_s"] * 1e9) * 100
        if share >= 0.1:
            out.append(f"Time was stolen from the CPU: {hw['gaps']} gaps, {ns(hw['total_gap_ns'])} in all "
                       f"({sig(share, 2)}% of the scan), the largest {ns(hw.get('max_gap_ns'))}.")
    said = drift_warning(res)
    if said:
        out.append(said)
    return out + [n for n in notes if n not in out]


def drift_warning(res: dict) -> str | None:
    """The drift window's discontinuities, counted once (figures.event_class),
    as a warning: the fits are cut there; whether the run passed is the
    image's checks' to say."""
    cuts = figures.drift_events(res.get("discontinuities"))[figures.DISCONTINUITY]
    if not cuts:
        return None
    by = {}
    for d in cuts:
        by[str(d.get("reference", "?"))] = by.get(str(d.get("reference", "?")), 0) + 1
    return (f"{figures.counted(len(cuts), 'discontinuity', 'discontinuities')} in the drift window "
            f"({', '.join(f'{k} {v}' for k, v in by.items())}): a clock stood still, jumped or went back, and every fit "
            "is cut there (see Discontinuities).")


def _discontinuity(d: dict) -> str:
    at = ns(d["at_s"] * 1e9) if _num(d.get("at_s")) else "?"
    moved = f"TSC +{ns(d.get('tsc_ns'))}" if _num(d.get("tsc_ns")) else ""
    ref = f"{d.get('reference', '?')} " + (f"+{ns(d['counter_ns'])}" if _num(d.get("counter_ns")) else "(cannot tell)")
    return f"at {at}: {d.get('reference', '?')} {d.get('kind', '?')}; {moved}, {ref}"


def verdict(res: dict) -> dict:
    """One row per counter, the numbers from the records rounded to what
    they carry, the advice as the image gave it; the TSC's frequency."""
    term = _d(_d(res.get("terminal")).get("verdict"))
    advice, text_rows = _d(term.get("advice")), _d(term.get("rows"))
    # the image's verdict records carry the whole advice; an older log's comes from its text
    made = {str(v.get("counter")): v for v in _l(res.get("verdict_rows"))}
    for name, v in made.items():
        if isinstance(v.get("advice"), str):
            advice[name] = (f"{v['qualifier']}: " if isinstance(v.get("qualifier"), str) else "") + v["advice"]
    if not made and emulator(res) and advice.get("tsc") and not advice["tsc"].startswith("in this emulator"):
        advice["tsc"] = "in this emulator: " + advice["tsc"]  # an older image's advice spoke as if of the hardware
    step_ns = figures.tsc_step_ns(res)
    lat, reso, mono = _d(res.get("latency")), _d(res.get("resolution")), _d(res.get("monotonicity"))
    freq = _l(res.get("frequency"))
    prof = _d(res.get("profile"))
    src = str(prof.get("tsc_hz_source") or "")
    ref = src.removeprefix("measured against ").strip() if src.startswith("measured against") else None
    tsc_f = next((f for f in freq if f.get("counter") == "tsc" and f.get("reference") == ref), None)
    rows = []
    for c in _l(res.get("counters")):
        name = str(c.get("name", "?"))
        key = _counter_key(name)
        row = {"counter": name, "advice": advice.get(name, ""), "bad": False}
        if not c.get("present"):
            row.update(read="absent", resolution="", freq="", mono="", advice=advice.get(name) or c.get("reason") or "")
            rows.append(row)
            continue
        la, rs, mo = _d(lat.get(key)), _d(reso.get(key) or reso.get(name)), _d(mono.get(key) or mono.get(name))
        read = la.get("p50_ns")
        # the image's rule (lib/verdict.c): a counter whose reads repeat
        # resolves its step; one that moves every read resolves the read cost
        step = rs.get("min_step_ns")
        repeats = _num(rs.get("zero_deltas")) and rs["zero_deltas"] > 0
        res_ns = step if (repeats and _num(step) and _num(read) and step > read) or (not _num(read) and _num(step)) else read
        unseen = repeats and not _num(step)  # every read the same: its step was never seen
        # (the RTC's 1 Hz in a window shorter than its second: the read's cost is no resolution, its nominal tick is)
        # the read's cost as every output says it (figures.read_cost; the image's own words where it wrote them)
        made_cost = made.get(name, {}).get("read_cost")
        row["read"] = (made_cost if isinstance(made_cost, str) else figures.read_cost(la, step_ns)) if la else \
            text_rows.get(name, {}).get("read", "-")
        made_res = made.get(name, {}).get("resolution")
        row["resolution"] = (f"{made_res} ns" if isinstance(made_res, str) and re.fullmatch(r"\d+\.\d", made_res)
                             else step_unseen(rs) if unseen
                             else ns(res_ns) if _num(res_ns) else "-")  # the image's own figure where it wrote one
        if name == "tsc" and tsc_f:
            row["freq"] = f"{hz(tsc_f.get('hz'), tsc_f.get('uncertainty_ppm'))}, {unc(tsc_f.get('uncertainty_ppm'))} vs the {ref}"
        elif name == ref:
            row["freq"] = "the reference"
        else:
            f = next((f for f in freq if f.get("counter") == name and _num(f.get("ppm_vs_nominal"))), None)
            row["freq"] = (pm(f["ppm_vs_nominal"], f.get("uncertainty_ppm")) + " vs nominal") if f else text_rows.get(name, {}).get("freq", "-")
        if mo:
            back = mo.get("backward")
            row["mono"] = "STUCK" if mo.get("stuck") else ("NO" if _num(back) and back > 0 else "yes" if _num(back) else "-")
        else:
            row["mono"] = text_rows.get(name, {}).get("mono", "-")
        row["bad"] = row["mono"] in ("NO", "STUCK") or row["advice"].startswith("do not trust")
        rows.append(row)
    tsc = None
    if tsc_f:
        tsc = {"hz": hz(tsc_f.get("hz"), tsc_f.get("uncertainty_ppm")), "reference": ref,
               "relative": unc(tsc_f.get("uncertainty_ppm")), "absolute": unc(tsc_f.get("absolute_uncertainty_ppm"))}
    elif prof:
        tsc = {"hz": hz(prof.get("tsc_hz")), "reference": None, "source": prof.get("tsc_hz_source"),
               "measured": prof["tsc_measured"] if isinstance(prof.get("tsc_measured"), bool) else src.startswith("measured")}
    return {"rows": rows, "tsc": tsc}


def gaps_said(res: dict, listed: int) -> str:
    """The Discontinuities section's gaps line: per reference as the
    terminal counts them (the `frequency` record's `gaps` and `too_long`),
    and how many of them the log lists (the image keeps 32 events a series,
    the longest gaps)."""
    per = [(str(f.get("reference")), int(f["gaps"]) + int(f.get("too_long") or 0)) for f in _l(res.get("frequency"))
           if f.get("counter") == "tsc" and _num(f.get("gaps"))]
    said = "where the loop was away and every clock ran on (they split nothing; one too long for a reference to unwrap " \
           "is cut there, but no clock misbehaved)"
    if not per:
        return f"{figures.counted(listed, 'gap', 'gaps')} {said}"
    return (f"Gaps {said}: {', '.join(f'{ref} {n}' for ref, n in per)}"
            + (f"; the {listed} the log keeps (the longest) listed" if listed != sum(n for _, n in per) else ""))


def step_unseen(rs: dict) -> str:
    """A counter whose reads never changed: no step was seen, so none is
    measured; its nominal tick is what it resolves ("1.00 s nominal (no step
    seen in 2000 reads)"), never its read's cost."""
    tick = rs.get("nominal_tick_ns")
    reads = f" in {count(rs['reads'])} reads" if isinstance(rs.get("reads"), int) else ""
    return (f"{ns(tick)} nominal (no step seen{reads})" if _num(tick) else f"no step seen{reads}")


def latency_rows(res: dict) -> tuple[list[dict], list[dict]]:
    rows, batches = [], []
    step_ns = figures.tsc_step_ns(res)
    for name, r in _d(res.get("latency")).items():
        if not isinstance(r, dict):
            continue
        row = {"counter": name, "n": count(r.get("n")), "truncated": bool(r.get("truncated")), "below_step": bool(r.get("below_step")),
               **{k: ns(r.get(f"{k}_ns")) if _num(r.get(f"{k}_ns")) else "-" for k in ("min", "p50", "mean", "p99", "p999", "max", "stddev")}}
        # the p50 is the read's cost, said as everywhere (figures.target_read_cost); below the TSC's step the
        # other figures are the step's quantisation, and the minimum no cost
        row["p50"] = figures.target_read_cost(res, name) if _num(r.get("p50_ns")) or r.get("below_step") else "-"
        if r.get("below_step"):
            row["min"] = "-"
        rows.append(row)
        if _num(r.get("batch_ns_per_read")):
            batches.append({"counter": name, "k": r.get("batch_k"), "per_read": ns(r["batch_ns_per_read"]),
                            "ticks": sig(r.get("batch_ticks_per_read"), 4)})
    return rows, batches


def resolution_rows(res: dict) -> list[dict]:
    out = []
    for name, r in _d(res.get("resolution")).items():
        if not isinstance(r, dict):
            continue
        deltas = r.get("deltas")
        zeros = r.get("zero_deltas")
        share = f" ({sig(100 * zeros / deltas, 2)}%)" if _num(zeros) and _num(deltas) and deltas > 0 and zeros else ""
        unseen = not _num(r.get("min_step_ns"))  # every read the same (the RTC within its second): no step to give
        out.append({"counter": name, "reads": count(r.get("reads")), "step": "not seen" if unseen else ns(r.get("min_step_ns")),
                    "step_ticks": "-" if unseen else count(r.get("min_step_ticks")), "gcd": count(r.get("step_gcd_ticks")),
                    "tick": ns(r.get("nominal_tick_ns"), 4), "repeats": count(zeros) + share, "distinct": count(r.get("distinct")),
                    "backward": count(r.get("backward")), "bad": _num(r.get("backward")) and r["backward"] > 0})
    return out


TSC_READS = ("rdtsc", "rdtscp", "lfence;rdtsc", "mfence;rdtsc", "cpuid;rdtsc")


def step_note(res: dict) -> str | None:
    """Why a TSC read's smallest step can be under the TSC's own step: the
    step (read cost's staircase) is from reads spaced by work; a
    back-to-back pair can land less than a step apart. The same words as
    the terminal's (experiments/exp_sequential.c)."""
    step = _d(res.get("tsc_step")).get("step_ticks")
    if not _num(step) or step <= 1:
        return None
    under = [name for name, r in _d(res.get("resolution")).items() if name in TSC_READS and isinstance(r, dict)
             and _num(r.get("min_step_ticks")) and 0 < r["min_step_ticks"] < step]
    if not under:
        return None
    return (f"{', '.join(under)}: a smallest step under the TSC's step ({step} ticks, {ns(figures.tsc_step_ns(res))}, "
            "read cost's staircase): back-to-back reads can land less than a step apart; reads spaced by work move by "
            "whole steps, and a read's timing is good only to the step.")


def frequency_rows(res: dict) -> list[dict]:
    out = []
    for f in _l(res.get("frequency")):
        u = f.get("uncertainty_ppm")
        seg = f.get("segments")
        out.append({"pair": f"{f.get('counter', '?')} vs {f.get('reference', '?')}", "hz": hz(f.get("hz"), u),
                    "vs_nominal": pm(f.get("ppm_vs_nominal"), u) if _num(f.get("ppm_vs_nominal")) else "no nominal",
                    "u": unc(u), "parts": " / ".join(sig(f.get(k), 2) for k in ("stderr_ppm", "correlated_ppm", "quantisation_ppm")),
                    "abs": unc(f.get("absolute_uncertainty_ppm")),
                    "samples": f"{count(f.get('samples'))} in {count(seg)} segment{'' if seg == 1 else 's'}",
                    "rms": ns(f.get("resid_rms_ns")),
                    "disc": count(figures.series_discontinuities(f, res.get("discontinuities"))),
                    "truncated": bool(f.get("truncated"))})
    return out


def stability_rows(res: dict) -> list[dict]:
    return [{"pair": f"tsc vs {s.get('reference', '?')}", "start": sig(s.get("start_s"), 3), "length": sig(s.get("length_s"), 3),
             "ppm": pm(s.get("ppm_vs_window"), s.get("stderr_ppm")), "samples": count(s.get("samples"))}
            for s in _l(res.get("stability"))]


def monotonicity_rows(res: dict) -> list[dict]:
    out = []
    for name, m in _d(res.get("monotonicity")).items():
        if not isinstance(m, dict):
            continue
        back = m.get("backward")
        out.append({"counter": name, "reads": count(m.get("reads")), "backward": count(back),
                    "largest": count(m.get("largest_backward_ticks")) if _num(m.get("largest_backward_ticks")) else "-",
                    "stalls": count(m.get("stalls")) if "stalls" in m else "-",
                    "longest": ns(m.get("longest_stall_ns")) if _num(m.get("longest_stall_ns")) else "-",
                    "wraps": count(m.get("wraps")) if "wraps" in m else "-",
                    "stuck": ("yes" if m.get("stuck") else "no") if "stuck" in m else "-",
                    "bad": (_num(back) and back > 0) or bool(m.get("stuck"))})
    return out


def stolen(res: dict) -> dict | None:
    hw = _d(res.get("hwlat"))
    if not hw:
        return None
    names = ["100 ns-1 \u00b5s", "1-10 \u00b5s", "10-100 \u00b5s", "100 \u00b5s-1 ms", "\u2265 1 ms"]
    bins = hw.get("decade_bins")
    return {"window": f"{sig(hw.get('window_s'), 3)} s", "iterations": count(hw.get("iterations")),
            "typical": ns(hw.get("typical_gap_ns")), "threshold": ns(hw.get("threshold_ns")), "gaps": count(hw.get("gaps")),
            "bins": list(zip(names, map(count, bins))) if isinstance(bins, list) and len(bins) == 5 else [],
            "largest": ns(hw.get("max_gap_ns")), "total": ns(hw.get("total_gap_ns")),
            "smi": "unavailable" if hw.get("smi_delta") is None else count(hw.get("smi_delta")),
            "intercepted": bool(hw.get("rdtsc_intercepted"))}


def check_rows(res: dict) -> list[dict]:
    order = {"FAIL": 0, "SKIP": 1, "PASS": 2}
    rows = [{"result": str(c.get("result", "?")), "name": str(c.get("name", "?")), "detail": str(c.get("detail", ""))}
            for c in _l(res.get("checks"))]
    return sorted(rows, key=lambda r: order.get(r["result"], -1))


def machine_rows(res: dict, meta: dict | None = None) -> list[tuple[str, str]]:
    m, prof, feat = _d(res.get("machine")), _d(res.get("profile")), _d(res.get("cpu_features"))
    rows = [("CPU", f"{m.get('brand', '?')} ({m.get('vendor', '?')}"
             + (f", family {m['family']}, model {m.get('model')}, stepping {m.get('stepping')})" if "family" in m else ")")),
            ("hypervisor", str(m["hypervisor"]) if m.get("hypervisor") else ("none" if m.get("hypervisor", 0) is None else "unknown")),
            ("boot", boot_line(m)),
            ("command line", str(m.get("cmdline", ""))),
            ("what it is", what_machine(res)),
            ("Secure Boot", secure_boot(res, meta)
             + (" (from the firmware's SecureBoot and SetupMode variables" + (", through shim" if m.get("shim") else "") + ")"
                if m.get("secure_boot_source") == "efi variables" else "")),
            ("console", f"serial {m.get('serial_port', '?')}, screen {m.get('screen', '?')}" if "screen" in m else "unknown"),
            ("profile", f"{prof.get('name', '?')}" + (f": {prof['drift_ms']} ms of drift, {prof.get('hwlat_ms', '?')} ms of stolen-time scan"
                                                      if "drift_ms" in prof else "") if prof else "unknown"),
            ("TSC rate for ns figures", f"{hz(prof.get('tsc_hz'))} ({prof.get('tsc_hz_source', '?')}"
             + (f"; {prof['tsc_reference_why']}" if prof.get("tsc_reference_why") else "") + ")" if prof else "unknown"),
            ("image build", str(res.get("build") or "unknown"))]
    if feat:
        flags = [k for k in ("tsc", "rdtscp", "invariant_tsc", "tsc_deadline", "tsc_adjust") if k in feat]
        rows.append(("CPU time features", ", ".join(f"{k} {'yes' if feat[k] else 'no'}" for k in flags)
                     + (f"; LFENCE {feat['lfence']}" if feat.get("lfence") else "")))
    cal = _d(res.get("calibration"))
    est = cal.get("estimate_hz")
    if cal and isinstance(est, (int, float)) and not isinstance(est, bool):
        rows.append(("quick TSC estimate", f"{sig(est / 1e6, 6)} MHz against {cal.get('source', '?')} (sizes the phases; not the measurement)"))
    elif cal:
        rows.append(("quick TSC estimate", f"none against {cal.get('source', '?')} (the calibration record states no rate)"))
    return rows


TCG_SIGNATURE = "TCGTCGTCGTCG"  # CPUID 0x40000000 under QEMU TCG (kernel/results.h)


def emulator(res: dict) -> bool:
    """The CPU is an emulator's: the image's own answer (cpu_speed's
    `answer`), else the machine record's TCG signature or a loop far below
    any hardware."""
    cs, m = _d(res.get("cpu_speed")), _d(res.get("machine"))
    if cs.get("answer") in ("emulator", "hardware"):
        return cs["answer"] == "emulator"
    return m.get("hypervisor") == TCG_SIGNATURE or bool(cs.get("emulated"))


def what_machine(res: dict) -> str:
    """Real hardware, a virtual machine or an emulator, from the machine record."""
    m = _d(res.get("machine"))
    hv = m.get("hypervisor")
    if emulator(res):
        if hv == TCG_SIGNATURE:
            return f"QEMU TCG, hypervisor signature \u201c{hv}\u201d"
        return "the CPU speed phase found a loop far below any hardware" + (f"; hypervisor \u201c{hv}\u201d" if hv else "")
    if hv:
        return f"a virtual machine, hypervisor signature \u201c{hv}\u201d"
    if m.get("hypervisor", 0) is None:
        return "real hardware (no hypervisor)"
    return "unknown (no machine record)"


def secure_boot(res: dict, meta: dict | None = None) -> str:
    """Secure Boot as the machine record says it; where the boot cannot have
    it (QEMU's own loader, a BIOS firmware by the run's metadata or by the
    image's reading of the Multiboot 2 tags, the PVH entry), not applicable
    rather than unknown."""
    m = _d(res.get("machine"))
    state = m.get("secure_boot")
    if state in ("on", "off"):
        return str(state)
    fw = str(_d(_d(meta).get("qemu")).get("firmware") or "").lower()
    if m.get("boot_protocol") == "pvh":
        return "not applicable (PVH entry: no UEFI)"
    if m.get("loader") == "qemu" or m.get("firmware") == "bios" or fw in ("bios", "seabios", "qboot"):
        return "not applicable (BIOS)"
    return str(state or "unknown")


def answers(res: dict, meta: dict | None = None) -> list[tuple[str, str]]:
    """The main answers, for the top of the page: what the machine is, which
    clock Linux would use, what a read costs, precise events, Secure Boot.
    Each from its record, in the one formatting path (figures.py)."""
    out = [("machine", what_machine(res) + (": the figures describe the emulator, not this computer's hardware"
                                            if emulator(res) else ""))]
    oc = _d(res.get("os_choice"))
    here = " in this emulator" if emulator(res) else ""
    if oc.get("clocksource"):
        out.append(("which clock", f"Linux{here} would use {oc['clocksource']} ({oc.get('why', '?')})"))
    elif oc:
        out.append(("which clock", str(oc.get("why") or "no clock Linux would use")))
    step = figures.tsc_step_ns(res)
    lat = _d(res.get("latency"))
    if _d(lat.get("rdtsc")):
        out.append(("what a TSC read costs", figures.tsc_read_cost(res) + here))
    if oc.get("counter") and oc.get("counter") != "tsc" and _d(lat.get(str(oc["counter"]))):
        out.append((f"what a {oc['counter']} read costs", figures.target_read_cost(res, str(oc["counter"])) + here))
    tc = _d(res.get("timer_choice"))
    if tc:
        if tc.get("timer"):
            p99 = f"{ns(tc['p99_ns'])} (p99)" if _num(tc.get("p99_ns")) else f"{ns(tc.get('max_ns'))} (the max of {tc.get('n', '?')})"
            out.append(("precise events", f"{tc['timer']}, waiting {tc.get('wait', '?')}: {ns(tc.get('p50_ns'))} late (p50), {p99} "
                                          f"at {ns(tc.get('delay_ns'))} ahead" + here))
        else:
            out.append(("precise events", "no timer delivered every interrupt on time"))
    out.append(("Secure Boot", secure_boot(res, meta)))
    return out


def timer_rows(res: dict) -> tuple[list[dict], list[dict]]:
    """The timer interrupts section: each timer, how its interrupt came and
    why not measured; each cell of the boot CPU's lateness."""
    timers = [{"timer": str(t.get("timer", "?")), "route": str(t.get("route") or "-"),
               "state": "measured" if t.get("measured") else f"not measured: {t.get('reason') or '?'}",
               "rate": (f"{hz(t['rate_hz'])}" if _num(t.get("rate_hz")) else "-")} for t in _l(res.get("timers"))]
    cells = [{"timer": str(c.get("timer", "?")), "wait": str(c.get("wait", "?")), "delay": ns(c.get("delay_ns")),
              "n": f"{count(c.get('n'))} of {count(c.get('asked'))}" if c.get("asked") is not None else count(c.get("n")),
              **{k: ns(c.get(f"{k}_ns")) if _num(c.get(f"{k}_ns")) else "-" for k in ("min", "p50", "p99", "max")},
              "early": count(c.get("early")), "lost": count(c.get("lost")),
              "bad": bool((_num(c.get("early")) and c["early"]) or (_num(c.get("lost")) and c["lost"]))}
             for c in _l(res.get("timer_cells"))]
    return timers, cells


# the `counter` record's reference_role (docs/output.md), in words
REFERENCE_ROLES = {"ranked": "ranked reference", "set aside": "set aside: never the default reference",
                   "last resort": "last resort reference", "no": "not a reference"}


def counter_role(c: dict) -> str:
    """How the image treats a counter as a reference, with its note (what
    the OS makes of it): "set aside: never the default reference; ignored by
    the OS (hardware-reduced ACPI)". "" when the record says neither."""
    role = c.get("reference_role")
    words = [REFERENCE_ROLES.get(role, str(role))] if isinstance(role, str) and role else []
    if isinstance(c.get("note"), str) and c["note"]:
        words.append(c["note"])
    return "; ".join(words)


def counter_rows(res: dict) -> list[dict]:
    return [{"name": str(c.get("name", "?")), "present": "present" if c.get("present") else "absent",
             "width": c["width_bits"] if _num(c.get("width_bits")) else ("calendar fields" if c.get("name") == "rtc" else "-"),
             "nominal": hz(c["nominal_hz"]) if _num(c.get("nominal_hz")) and c["nominal_hz"] else "unknown",
             "source": str(c.get("nominal_source") or c.get("reason") or ""), "access": str(c.get("access") or ""),
             "role": counter_role(c)}
            for c in _l(res.get("counters"))]


def rtc_rows(res: dict) -> list[dict]:
    """The `rtc` record's fields (docs/output.md), a row each: what, the
    value as every output says it (figures.py), and "bad" where the RTC
    failed a check. [] when the run has no rtc record."""
    r = _d(res.get("rtc"))
    if not r:
        return []
    rows = []

    def row(what, value, bad=False):
        rows.append({"what": what, "value": value, "bad": bool(bad)})

    def yes(v, t="yes", f="no"):
        return "?" if not isinstance(v, bool) else (t if v else f)

    if r.get("present") is not True:
        row("present", f"no: {r.get('reason') or 'no reason given'}")
        return rows
    if r.get("stuck"):
        row("stuck", "no update ended in a window of 1.5 s or more: the RTC does not count", True)
    row("date and time", f"{r['date']} {r.get('time', '?')} (the RTC's own, no time zone; read as the drift window opened)"
        if r.get("date") else f"unreadable: {r.get('date_problem') or '?'}", not r.get("date"))
    row("registers", ", ".join([yes(r.get("bcd"), "BCD", "binary"), yes(r.get("hour_24"), "24 h", "12 h"),
                                yes(r.get("battery_ok"), "battery held (VRT set)", "battery LOST (VRT clear)")]),
        r.get("battery_ok") is False)
    if "edges" in r:
        row("second edges", f"{count(r.get('edges'))} timed, {count(r.get('edges_used'))} fitted, {count(r.get('edges_wide'))} too wide, "
            f"{count(r.get('edges_outliers'))} outliers; {count(r.get('missed'))} missed (the loop was away)")
        row("window", f"{sig(r.get('window_s'))} s ({'the drift window' if r.get('window') == 'drift' else 'its own'}), "
            f"{sig(r.get('span_s'))} RTC seconds fitted" + (" (coarse: under 10 s)" if r.get("coarse") else ""))
        row("discontinuities", f"{count(r.get('discontinuities'))} (the RTC and the TSC disagree by half a second or more)",
            _num(r.get("discontinuities")) and r["discontinuities"] > 0)
        widest = f"widest bracket {ns(r['widest_edge_ns'])}" if _num(r.get("widest_edge_ns")) and r.get("edges_used") \
            else "no edges fitted"  # a log from before null: 0.0 with none fitted
        row("edge timing", f"{widest}, longest poll that caught one "
            f"{ns(_num(r.get('longest_spin_us')) and r['longest_spin_us'] * 1e3)}, first update waited "
            f"{ns(_num(r.get('phase_wait_ms')) and r['phase_wait_ms'] * 1e6)}")
        row("polling", f"{count(r.get('polls'))} polls, one every {ns(_num(r.get('call_gap_us')) and r['call_gap_us'] * 1e3)} on "
            f"average, the longest call {ns(_num(r.get('longest_call_us')) and r['longest_call_us'] * 1e3)}; "
            f"{count(r.get('bad_clock_reads'))} bad clock reads" + ("; the first 2,048 edges kept" if r.get("edges_full") else "")
            + (f"; stopped early: {r['stopped']}" if r.get("stopped") else ""))
    if _num(r.get("tsc_hz")):
        row("TSC by the RTC", f"{hz(r['tsc_hz'], r.get('fit_uncertainty_ppm'))} {unc(r.get('fit_uncertainty_ppm'))} (the fit alone)")
    if _num(r.get("ppm_tsc_vs_rtc")):
        ref = r.get("reference") or "the reference"
        row(f"the reference ({ref}) against the RTC", pm(r["ppm_tsc_vs_rtc"], r.get("uncertainty_ppm"))
            + f" (the TSC's rate by the RTC over its rate by {ref}, minus 1; the RTC crystal's tolerance "
            f"{unc(r.get('tolerance_ppm'))})", _num(r.get("uncertainty_ppm")) is not None and _num(r.get("tolerance_ppm")) is not None
            and abs(r["ppm_tsc_vs_rtc"]) > r["tolerance_ppm"] + r["uncertainty_ppm"])
    for c in ("hpet", "acpi_pm"):
        if _num(r.get(f"{c}_ppm_vs_rtc")):
            row(f"{c} by the RTC", pm(r[f"{c}_ppm_vs_rtc"], r.get(f"{c}_uncertainty_ppm")) + " from nominal")
    cost = figures.target_read_cost(res, "rtc")
    if cost != "-":
        row("a read of the seconds register", cost)
    step = figures._num(_d(_d(res.get("resolution")).get("rtc")).get("min_step_ns"))
    if step is not None:
        row("least time between two edges", ns(step))
    return rows


def cpu_rows(res: dict) -> tuple[list[dict], list[dict]]:
    cpus = [{"index": c.get("index", "-"), "apic": c.get("apic_id"), "state": "started" if c.get("started") else (c.get("reason") or "not started"),
             "adjust": "-" if c.get("tsc_adjust") is None else c.get("tsc_adjust"),
             "read": figures.read_cost({"p50_ns": c.get("read_p50_ns"), "below_step": c.get("read_below_step"),
                                        "batch_ns_per_read": c.get("batch_ns_per_read")}, figures.tsc_step_ns(res)),
             "bits": c.get("cpuid_time_bits", "-")} for c in _l(res.get("cpus"))]
    sync = []
    for s in _l(res.get("tsc_sync")):
        lo, hi = s.get("offset_lo_ticks"), s.get("offset_hi_ticks")
        sync.append({"cpu": s.get("cpu"), "offset": f"[{lo}, {hi}] ticks" if _num(lo) and _num(hi) else "intervals disagree",
                     "round_trip": count(s.get("round_trip_min_ticks")), "warps": count(s.get("warps")),
                     "rate": pm(s.get("rate_ppm"), s.get("rate_uncertainty_ppm")) if _num(s.get("rate_ppm")) else (s.get("rate_reason") or "-"),
                     "bad": (_num(s.get("warps")) and s["warps"] > 0) or not (_num(lo) and _num(hi) and lo <= 0 <= hi)})
    return cpus, sync


# Which of the image's sections each part of the page carries.
TERMINAL_OF = {
    "machine": ("Start", "CPU time features", "ACPI tables", "HPET", "ACPI PM timer", "Inventory of time counters",
                "Measuring", "Quick TSC estimate", "CPU speed", "HPET comparator"),
    "verdict": ("Verdict",),
    "read-cost": ("Read cost",),
    "sequential": ("Resolution",),
    "frequency": ("Frequency and drift",),
    "stolen": ("Time stolen",),
    "monotonicity": ("Monotonicity",),
    "cpus": ("CPUs and the TSC",),
    "timers": ("Timer interrupts",),
    "rtc": ("The RTC",),
}


def _terminal_for(res: dict, part: str) -> str:
    secs = _d(res.get("terminal")).get("sections") or []
    keep = [s for s in secs if any(s["title"].startswith(p) for p in TERMINAL_OF[part])]
    return "\n\n".join((f"== {s['title']} ==\n" if s["title"] != "Start" else "") + "\n".join(s["lines"]) for s in keep)


def other_sections(res: dict) -> list[dict]:
    """The terminal's sections no part of the page carries (an experiment
    newer than this page), shown as printed: {"id", "title", "text"}."""
    out = []
    for s in _d(res.get("terminal")).get("sections") or []:
        title = str(s.get("title", ""))
        if title == "Start" or any(title.startswith(p) for parts in TERMINAL_OF.values() for p in parts):
            continue
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        out.append({"id": f"term-{slug}", "title": title, "text": "\n".join(s.get("lines") or [])})
    return out


def run_meta(log_path: Path | None) -> dict:
    """The metadata `clockbench run` keeps beside a run's log (runs.py,
    metadata.json: when, on which host, under which QEMU), or {}."""
    if log_path is None:
        return {}
    try:
        meta = json.loads((log_path.parent / "metadata.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def run_date(log_path: Path | None, meta: dict | None = None) -> str | None:
    """When the run happened: when `clockbench run` started it, else when
    the log was last written (said so)."""
    meta = run_meta(log_path) if meta is None else meta
    started = meta.get("started")
    if isinstance(started, str):
        try:
            t = dt.datetime.fromisoformat(started)
            return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            return started
    if log_path is None:
        return None
    try:
        t = dt.datetime.fromtimestamp(log_path.stat().st_mtime, dt.timezone.utc)
    except OSError:
        return None
    return t.strftime("log written %Y-%m-%d %H:%M UTC")


def meta_rows(meta: dict) -> list[tuple[str, str]]:
    host, q = _d(meta.get("host")), _d(meta.get("qemu"))
    rows = []
    if host:
        rows.append(("host", f"{host.get('name', '?')}" + (f" ({host['cpu']})" if host.get("cpu") else "")))
    if q:
        rows.append(("QEMU", ", ".join(f"{k} {q[k]}" for k in ("version", "machine", "accel", "firmware", "boot", "cpu", "smp", "memory")
                                       if q.get(k) is not None)))
    v = _d(meta.get("vmm"))
    if v and v.get("name") != "qemu":
        rows.append(("monitor", ", ".join(str(x) for x in (v.get("version") or v.get("name"), v.get("binary"),
                                                             f"smp {v.get('smp')}", f"memory {v.get('memory')}") if x)))
    return rows


def page_title(res: dict, date: str | None) -> str:
    m = _d(res.get("machine"))
    who = str(m.get("brand") or m.get("vendor") or "unknown machine").strip()
    hv = m.get("hypervisor")
    what = f"{who} under {hv}" if hv else who
    return f"clockbench: {what}" + (f", {date}" if date else "")


def boot_line(m: dict) -> str:
    """How the image was booted, from the machine record: the loader and
    the protocol (Multiboot 1 or 2, or the PVH entry, which names no loader)."""
    if m.get("boot_protocol") == "pvh":
        return "PVH entry"
    if "loader" not in m:
        return "unknown"
    return f"{m.get('loader') or 'unnamed loader'} via Multiboot {m.get('multiboot', '?')}"


def _full_text(res: dict) -> str:
    return "\n".join(_d(res.get("terminal")).get("sections") and
                     ["\n".join(([f"== {x['title']} =="] if x["title"] != "Start" else []) + x["lines"] + [""])
                      for x in res["terminal"]["sections"]] or [])


STATUS_NAMES = {0: "passed", 1: "failed", 2: "nothing ran", 3: "crashed", 4: "incomplete"}


def render_os_html(res: dict, path: Path, notes=(), date: str | None = None, meta: dict | None = None,
                   plots_made=(), bare: dict | None = None) -> None:
    """A clockbench-os run's page, from templates/report_os.html.j2 (its rows
    from os_side.py; the languages' ladder from ladder.py, beneath the bare
    run's read when one is given)."""
    code, why = outcome(res)
    page = os_side.page(res)
    page["context"] += meta_rows(meta or {})
    page["ladder"] = [{**t, "text": ladder.as_rows(t)} for t in ladder.tables(res, bare)]
    page["runtimes"] = ladder.runtimes(res)
    page["summaries"] = ladder.summaries(res) if page["ladder"] else []
    page["ladder_fig"] = next(({"title": plots.LADDER_TITLE, "src": "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()}
                               for p in plots_made if p.stem == "ladder"), None)
    ctx = dict(title=os_side.page_title(res) + (f", {date}" if date else ""), status=STATUS_NAMES.get(code, "unknown"), why=why,
               summary=_d(res.get("summary")), source=str(res.get("source") or ""), problems=problems(res),
               warnings=os_side.warnings(res) + warnings(res), os=page, checks=check_rows(res), notes=list(notes),
               full_text=_full_text(res))
    path.write_text(pages.environment().get_template("report_os.html.j2").render(**ctx))


def render_html(res: dict, plots_made: list[Path], path: Path, title: str | None = None, notes=(), date: str | None = None,
                left_out: dict | None = None, meta: dict | None = None, os_table: dict | None = None) -> None:
    """The page, from templates/report.html.j2 (templates/report_os.html.j2
    for a clockbench-os run); os_table, os_side.side_by_side's, adds the
    section "Bare and through the OS". Built with .get() throughout:
    a record cut for length, or a results file from an older tool, lacks
    members and costs a cell, not the page."""
    if os_side.is_os(res):
        return render_os_html(res, path, notes, date, meta, plots_made)
    code, why = outcome(res)
    s = _d(res.get("summary"))
    lat_rows, batches = latency_rows(res)
    cpus, sync = cpu_rows(res)
    # the Allan series as allan_series makes them; anything else (an odd
    # results file) is left out of the table
    allan = [a for a in _l(res.get("allan")) if all(isinstance(a.get(k), list) for k in ("tau_s", "adev", "n"))
             and len(a["tau_s"]) == len(a["adev"]) == len(a["n"]) > 0 and all(_num(v) for v in a["tau_s"] + a["adev"])]
    figs = {}
    for p in plots_made:
        figs[p.stem] = {"title": plots.FIGURES.get(p.stem, p.stem), "alt": plots.FIGURES.get(p.stem, p.stem),
                        "src": "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()}
    status = STATUS_NAMES.get(code, "unknown")
    events = figures.drift_events(res.get("discontinuities"))
    ctx = dict(
        title=title or page_title(res, date), date=date, status=status, why=why, code=code, summary=s,
        source=str(res.get("source") or ""), problems=problems(res), warnings=warnings(res), verdict=verdict(res),
        machine=machine_rows(res, meta) + meta_rows(meta or {}), counters=counter_rows(res), latency=lat_rows, batches=batches,
        resolution=resolution_rows(res), step_note=step_note(res), frequency=frequency_rows(res), stability=stability_rows(res),
        drift_window=_d(res.get("drift_window")),
        cuts=[_discontinuity(d) for d in events[figures.DISCONTINUITY]],
        gaps=[_discontinuity(d) for d in events[figures.GAP] + events[figures.TOO_LONG]],
        gaps_said=gaps_said(res, len(events[figures.GAP]) + len(events[figures.TOO_LONG])),
        bracket_steps=[_discontinuity(d) for d in events[figures.WITHIN_BRACKET]],
        monotonicity=monotonicity_rows(res), stolen=stolen(res), cpus=cpus, sync=sync, checks=check_rows(res),
        figs=figs, left_out=left_out or {}, notes=list(notes), allan=allan,
        allan_taus=max((a["tau_s"] for a in allan), key=len, default=[]),
        terminal={k: _terminal_for(res, k) for k in TERMINAL_OF}, others=other_sections(res),
        answers=answers(res, meta), timers=timer_rows(res)[0], timer_cells=timer_rows(res)[1],
        timer_choice=_d(res.get("timer_choice")), rtc=rtc_rows(res),
        full_text=_full_text(res), bare_and_os=os_table,
        sig=sig, ns=ns, pm=pm,
    )
    path.write_text(pages.environment().get_template("report.html.j2").render(**ctx))


def render_plots(res: dict, out_dir: Path, notes: list[str] | None = None, left_out: dict | None = None) -> list[Path]:
    """The plots the input has data for. A plot with too little to show
    says why in left_out; what a plot leaves out, or a plot that fails
    outright, becomes a note: the page is written regardless."""
    notes = [] if notes is None else notes
    left_out = {} if left_out is None else left_out
    made = []
    for name, draw in plots.DRAW.items():
        try:
            made.append(draw(res, out_dir / f"{name}.png", notes))
        except plots.TooLittle as e:
            left_out[name] = str(e)
        except ImportError as e:
            left_out[name] = f"not drawn: {e.name or e} is not installed (`make deps`)"
            notes.append(f"the {plots.FIGURES[name]} figure needs {not_installed(e.name or str(e))}")
        except Exception as e:  # noqa: BLE001 - one plot's failure must not cost the page
            import matplotlib.pyplot as plt

            plt.close("all")
            left_out[name] = f"could not be drawn: {type(e).__name__}: {e}"
            notes.append(f"the {name.replace('_', ' ')} plot could not be drawn: {type(e).__name__}: {e}")
    return made


def not_installed(module: str) -> str:
    """Why a plot is missing when its module is: `make deps` installs it for
    Debian's python3, which build/venv/bin/clockbench runs; another python3
    on PATH (pyenv's) may still lack it after `make deps`, so say which."""
    return (f"{module}, which is not installed for {sys.executable}: run `make deps` and the tool as "
            "build/venv/bin/clockbench (Debian's python3 and its packages)")


def render_ladder_plot(res: dict, out_dir: Path, notes: list[str]) -> list[Path]:
    """An OS run's one figure: the ladder's cost per layer (plots.ladder),
    when it measured languages. Like every plot, a failure is a note."""
    tables = ladder.tables(res)
    if not tables:
        return []
    try:
        return [plots.ladder(tables, out_dir / "ladder.png", notes)]
    except plots.TooLittle as e:
        notes.append(f"the ladder plot is left out: {e}")
    except ImportError as e:
        notes.append(f"the ladder plot needs {not_installed(e.name or str(e))}")
    except Exception as e:  # noqa: BLE001 - the plot must not cost the page
        notes.append(f"the ladder plot could not be drawn: {type(e).__name__}: {e}")
    return []


def write(res: dict, out: Path, text: str | None = None, log_path: Path | None = None,
          os_table: dict | None = None) -> tuple[list[Path], list[str]]:
    """Everything `report` writes into out: results.json, the plots and
    report.html; the plots drawn and the notes (what was left out). An OS
    run (clockbench-os) has no plots."""
    if text is not None:
        augment(res, text)
    notes = list(res.get("notes") or [])
    is_os = os_side.is_os(res)
    if is_os:
        res.setdefault("allan", [])
    if res.get("allan") is None:
        try:
            res["allan"] = plots.allan_series(res, notes)
        except ImportError as e:
            res["allan"] = []
            notes.append(f"the Allan deviation needs {not_installed(e.name or str(e))}")
        except Exception as e:  # noqa: BLE001 - the Allan deviation must not cost the page
            res["allan"] = []
            notes.append(f"the Allan deviation could not be computed: {type(e).__name__}: {e}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    left_out: dict[str, str] = {}
    made = render_ladder_plot(res, out, notes) if is_os else render_plots(res, out, notes, left_out)
    meta = run_meta(log_path)
    render_html(res, made, out / "report.html", date=run_date(log_path, meta), notes=notes, left_out=left_out, meta=meta,
                os_table=os_table)
    return made, notes


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
        return getattr(e, "code", 2)
    out = Path(args.out or log_path.with_suffix(""))
    for p in res["problems"]:
        print(f"clockbench report: {log_path}: {p}", file=sys.stderr)
    is_log = not text.lstrip().startswith("{")
    os_table = None
    if getattr(args, "os_runs", None):  # `--os OS.log`, loaded and checked by commands.py

        names = runinfo.run_names([str(log_path), *map(str, args.os)])
        os_table = os_side.side_by_side(res, args.os_runs, names[0], names[1:])
        # each OS run's languages beneath this bare run's read (templates/os_side.html.j2)
        os_table["ladders"] = [{"name": n, "clocksource": t["clocksource"], "rows": ladder.as_rows(t)}
                               for r, n in zip(args.os_runs, names[1:]) for t in ladder.tables(r, res)]
        os_table["summaries"] = ladder.summaries_of(args.os_runs, names[1:])
    made, notes = write(res, out, text if is_log else None, log_path, os_table)
    for n in notes:
        print(f"clockbench report: {log_path}: note: {n}", file=sys.stderr)
    print(f"clockbench report: {out}/results.json, {len(made)} plots, {out}/report.html")
    newer = res.get("schema_version") is not None and res["schema_version"] > records.SCHEMA_VERSION
    return 1 if (res["problems"] and not res["complete"]) or newer else 0

