"""The drift window's discontinuities are counted once, judged in one
place, and said in the same words everywhere (issue 39, point 3). A BIOS
run that passed showed "2 discontinuity(ies) in the drift window ... pit
too long to unwrap" as a red Problem, while the Discontinuities list said
3 (and 14 gaps), the frequency table 7 and 5, the terminal 7 and 5.

Now: the image counts a series' events once (lib/drift_analysis.c,
drift_count_events: discontinuities, gaps, gaps too long to unwrap,
residual steps within the reads' brackets), its terminal and its
`frequency` record give those counts; the host classifies the records with
one function (figures.event_class) for the list, the Warnings line, the
frequency table and the store's figure; a passed run has no Problems box
for them (the image's checks judge the run); no "(ies)" or "(s)"."""

from __future__ import annotations

import ctypes
import json
import re

import pytest

from helpers.hostlib import as_json
from clockbench.records import figures, records, results
from clockbench.report import report

GAP, STILL, JUMPED, BACK, TOO_LONG, TSC_BACK, RESIDUAL = range(7)


@pytest.fixture(scope="module")
def counts(lib):
    lib.shim_drift_counts.restype = ctypes.c_char_p
    lib.shim_drift_counts.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_int64), ctypes.c_uint32,
                                      ctypes.c_int64]

    def run(kinds, ticks=None, half=0):
        ticks = ticks or [0] * len(kinds)
        k = (ctypes.c_uint32 * len(kinds))(*kinds)
        t = (ctypes.c_int64 * len(kinds))(*ticks)
        return as_json(lib.shim_drift_counts(k, t, len(kinds), half))
    return run


def test_the_image_counts_each_event_once(counts):
    c = counts([GAP, GAP, STILL, TOO_LONG, GAP, RESIDUAL, RESIDUAL, JUMPED], [0, 0, 5, 0, 0, 3, 40, 9], half=10)
    assert (c["discontinuities"], c["gaps"], c["too_long"], c["within_bracket"]) == (3, 3, 1, 1)
    assert c["discontinuities"] + c["gaps"] + c["too_long"] + c["within_bracket"] == c["event_count"] == 8


def test_gaps_past_the_kept_list_are_still_gaps(counts):
    # 60 gaps and one stall: only 32 events are kept, the stall among them
    c = counts([GAP] * 30 + [STILL] + [GAP] * 30)
    assert (c["event_count"], c["discontinuities"], c["gaps"]) == (61, 1, 60)


def log_of(*recs) -> str:
    return "\n".join("@cb " + json.dumps(r) for r in recs)


def freq(counter, reference, disc, gaps, too_long=0):
    return {"type": "frequency", "counter": counter, "reference": reference, "hz": 2e9, "uncertainty_ppm": 0.1,
            "samples": 100, "segments": 2, "discontinuities": disc, "gaps": gaps, "too_long": too_long, "within_bracket": 0}


def passed_run() -> dict:
    """A BIOS run that passed: one stall of the HPET, a gap everyone saw, a
    gap too long for the PIT to unwrap, a residual step within its bracket."""
    recs = [{"type": "schema", "version": 1, "tool": "clockbench", "build": "b"},
            {"type": "machine", "vendor": "GenuineIntel", "brand": "B", "family": 6, "model": 1, "stepping": 1},
            {"type": "profile", "name": "quick", "tsc_hz": 2e9, "tsc_hz_source": "measured against hpet", "tsc_measured": True},
            {"type": "drift_window", "asked_s": 10, "ran_s": 10, "away_s": 0.1},
            {"type": "discontinuity", "counter": "tsc", "reference": "hpet", "kind": "reference stood still", "at_s": 1.0,
             "tsc_ns": 3e6, "counter_ns": 1e3, "bracket_half_ns": 100},
            {"type": "discontinuity", "counter": "tsc", "reference": "hpet", "kind": "gap", "at_s": 2.0, "tsc_ns": 2e7,
             "counter_ns": 2e7, "bracket_half_ns": 100},
            {"type": "discontinuity", "counter": "tsc", "reference": "pit", "kind": "gap", "at_s": 2.0, "tsc_ns": 2e7,
             "counter_ns": 2e7, "bracket_half_ns": 100},
            {"type": "discontinuity", "counter": "tsc", "reference": "pit", "kind": "too long to unwrap", "at_s": 3.0,
             "tsc_ns": 9e7, "counter_ns": None, "bracket_half_ns": 100},
            {"type": "discontinuity", "counter": "tsc", "reference": "acpi_pm", "kind": "residual step", "at_s": 4.0,
             "tsc_ns": 0, "counter_ns": 50, "bracket_half_ns": 100},
            freq("tsc", "hpet", 1, 1), freq("tsc", "pit", 0, 1, 1), freq("tsc", "acpi_pm", 0, 0),
            {"type": "check", "name": "x", "result": "PASS", "detail": ""},
            {"type": "summary", "pass": 1, "fail": 0, "skip": 0, "status": "passed"}]
    return results.from_log(log_of(*recs), "passed.log"), recs


def test_a_passed_run_has_no_problem_for_its_discontinuities_and_one_count_everywhere():
    res, recs = passed_run()
    res.setdefault("discontinuities", [r for r in recs if r["type"] == "discontinuity"])
    assert not [p for p in report.problems(res) if "discontinuit" in p["title"]]
    warn = [w for w in report.warnings(res) if "discontinuit" in w]
    assert warn == ["1 discontinuity in the drift window (hpet 1): a clock stood still, jumped or went back, "
                    "and every fit is cut there (see Discontinuities)."]
    events = figures.drift_events(res["discontinuities"])
    assert len(events[figures.DISCONTINUITY]) == 1 and len(events[figures.GAP]) == 2
    assert len(events[figures.TOO_LONG]) == 1 and len(events[figures.WITHIN_BRACKET]) == 1
    table = {r["pair"]: r["disc"] for r in report.frequency_rows(res)}
    assert table == {"tsc vs hpet": "1", "tsc vs pit": "0", "tsc vs acpi_pm": "0"}
    figs = {f.name: f.value for f in figures.derive(res, recs)}
    assert figs["discontinuities"] == 1


def test_an_older_log_counted_gaps_in_its_frequency_record_and_the_table_does_not():
    res, recs = passed_run()
    for f in res["frequency"]:
        f["discontinuities"] = 7  # every event, as older images counted
        del f["gaps"]
    res.setdefault("discontinuities", [r for r in recs if r["type"] == "discontinuity"])
    table = {r["pair"]: r["disc"] for r in report.frequency_rows(res)}
    assert table == {"tsc vs hpet": "1", "tsc vs pit": "0", "tsc vs acpi_pm": "0"}


def said_texts(path) -> list[str]:
    """A file's words as printed: a template whole, a Python file's strings."""
    import io
    import tokenize

    text = path.read_text()
    if path.suffix != ".py":
        return [text]
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type in kinds]


def test_no_plural_in_brackets_anywhere_in_the_host_tool():
    from pathlib import Path
    root = Path(report.__file__).resolve().parents[1]
    found = [f"{p.relative_to(root)}: {m.group(0)}" for p in sorted(root.rglob("*")) if p.suffix in (".py", ".j2")
             for t in said_texts(p) for m in re.finditer(r"[a-z]\((s|ies)\)", t)]
    assert found == []


def test_the_gaps_line_counts_as_the_terminal_does():
    res, recs = passed_run()
    assert report.gaps_said(res, 3) == (
        "Gaps where the loop was away and every clock ran on (they split nothing; one too long for a reference to unwrap "
        "is cut there, but no clock misbehaved): hpet 1, pit 2, acpi_pm 0")
    res["frequency"][0]["gaps"] = 131
    assert report.gaps_said(res, 3).endswith("hpet 131, pit 2, acpi_pm 0; the 3 the log keeps (the longest) listed")
