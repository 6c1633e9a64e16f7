"""The host tool on records that come in parts, are cut for length, or carry
arrays that do not pair up: parts are joined, and nothing of the kind costs
`clockbench report` its page (small hand-made logs, no QEMU)."""

from __future__ import annotations

import argparse
import json

import pytest

from clockbench.records import records, results


def log(*recs: dict, complete: bool = True) -> str:
    lines = ["clockbench test: time counters", "@cb " + json.dumps({"type": "schema", "version": 1, "tool": "clockbench", "build": "t"})]
    lines += ["@cb " + json.dumps(r, separators=(",", ":")) for r in recs]
    if complete:
        lines += ["SUMMARY: 1 passed, 0 failed, 0 skipped",
                  "@cb " + json.dumps({"type": "summary", "pass": 1, "fail": 0, "skip": 0, "status": "passed"})]
    return "\n".join(lines) + "\n"


def hist(part: int, parts: int, bins: list[int], counter: str = "hpet") -> dict:
    return {"type": "histogram", "counter": counter, "part": part, "parts": parts, "distinct": 6, "bins": bins}


def resid(t_ms, resid_ps, reference="hpet", **more) -> dict:
    return {"type": "residuals", "counter": "tsc", "reference": reference, **more, "t_ms": t_ms, "resid_ps": resid_ps}


# --- joining parts ---

def test_parts_are_joined_in_part_order_where_the_first_came():
    recs = [{"type": "a"}, hist(2, 3, [5, 6]), hist(0, 3, [1, 2]), {"type": "b"}, hist(1, 3, [3, 4])]
    joined, notes = records.join_parts(recs)
    assert notes == []
    assert joined == [{"type": "a"}, {"type": "histogram", "counter": "hpet", "parts": 3, "distinct": 6, "bins": [1, 2, 3, 4, 5, 6]},
                      {"type": "b"}]


def test_residuals_in_parts_join_every_array():
    recs = [resid([0, 1], [10, -10], part=0, parts=2), resid([0, 1], [7, 7], reference="pit", part=0, parts=1),
            resid([2, 3], [20, -20], part=1, parts=2)]
    joined, notes = records.join_parts(recs)
    assert notes == []
    assert [(r["reference"], r["t_ms"], r["resid_ps"]) for r in joined] == [("hpet", [0, 1, 2, 3], [10, -10, 20, -20]),
                                                                         ("pit", [0, 1], [7, 7])]


def test_one_based_parts_are_accepted():
    joined, notes = records.join_parts([hist(1, 2, [1, 2]), hist(2, 2, [3, 4])])
    assert notes == [] and joined[0]["bins"] == [1, 2, 3, 4] and "truncated" not in joined[0]


@pytest.mark.parametrize("parts, said", [
    ([hist(0, 3, [1, 2]), hist(2, 3, [5, 6])], "part 1 of 3 missing"),
    ([hist(0, 2, [1, 2]), hist(1, 2, [3, 4]), hist(1, 2, [3, 4])], "part 1 repeated"),
    ([hist(0, 2, [1, 2]), hist(1, 2, [3, 4]) | {"truncated": True}], "a part was cut for length"),
    ([hist(0, 2, [1, 2]), {k: v for k, v in hist(1, 2, [3, 4]).items() if k != "bins"}], "do not carry the same arrays"),
])
def test_a_record_with_a_part_wrong_is_marked_and_named(parts, said):
    joined, notes = records.join_parts(parts)
    assert len(joined) == 1 and joined[0]["truncated"] is True
    assert len(notes) == 1 and said in notes[0] and "histogram record (counter hpet)" in notes[0]


def test_results_leave_an_incomplete_histogram_out_with_notes():
    res = results.from_log(log(hist(0, 2, [1, 10, 2, 5], counter="pit"), hist(0, 3, [1, 2]), hist(2, 3, [5, 6]),
                               hist(1, 2, [3, 1], counter="pit")))
    assert res["histograms"] == {"pit": [[1, 10], [2, 5], [3, 1]]}
    assert any("part 1 of 3 missing" in n for n in res["notes"])
    assert any("(counter hpet) is incomplete" in n for n in res["notes"])
    assert not res["problems"] and res["complete"]


def test_results_name_a_record_cut_for_length():
    res = results.from_log(log(resid([0, 1], [1, 2]) | {"truncated": True}))
    assert res["notes"] == ['the residuals record (counter tsc, reference hpet) was too long for one line and was cut ("truncated": true)']


def test_records_without_their_naming_member_are_not_fatal():
    res = results.from_log(log({"type": "latency", "p50_ns": 3.0}, {"type": "latency", "counter": "hpet", "truncated": True},
                               {"type": "histogram", "part": 0, "parts": 1, "bins": [1, 2]}))
    assert res["latency"] == {"hpet": {"type": "latency", "counter": "hpet", "truncated": True}}
    assert results.read_cost_p50(res) == {}
    assert res["histograms"] == {}


# --- the report ---

@pytest.fixture
def report_of(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from clockbench.report import report

    def run(text: str):
        path = tmp_path / "run.log"
        path.write_text(text)
        out = tmp_path / "out"
        code = report.main(argparse.Namespace(log=str(path), out=str(out)))
        return code, out, capsys.readouterr().err

    return run


LATENCY = {"type": "latency", "counter": "hpet", "n": 10, "min_ns": 1.0, "p50_ns": 2.0, "mean_ns": 2.0, "p99_ns": 3.0, "p999_ns": 4.0,
           "max_ns": 5.0, "stddev_ns": 1.0}
COUNTER = {"type": "counter", "name": "hpet", "present": True, "reason": None, "nominal_hz": 1e8, "nominal_source": "HPET",
           "width_bits": 64, "access": "MMIO"}


def test_mismatched_residuals_cost_their_series_not_the_page(report_of):
    """The crash this replaces: "x and y must have same first dimension"."""
    code, out, err = report_of(log(COUNTER, LATENCY, resid([0, 1, 2], [5, 6])))
    assert code == 0
    assert (out / "report.html").exists() and (out / "results.json").exists()
    assert not (out / "residuals.png").exists() and (out / "read_cost.png").exists()
    assert "note: the residuals record (counter tsc, reference hpet) is incomplete: left out of the residuals plot" in err
    assert "left out of the residuals plot" in (out / "report.html").read_text()


def test_a_truncated_residuals_record_is_left_out_and_the_whole_one_drawn(report_of):
    whole = resid(list(range(0, 1000, 100)), [i * 7 for i in range(10)], reference="acpi_pm")
    cut = {"type": "residuals", "counter": "tsc", "reference": "hpet", "t_ms": list(range(10)), "truncated": True}
    code, out, err = report_of(log(COUNTER, cut, whole))
    assert code == 0
    assert (out / "residuals.png").exists()
    assert "(counter tsc, reference hpet) is incomplete: left out of the residuals plot" in err
    assert "reference acpi_pm" not in err


def test_residuals_in_parts_are_drawn_as_one_series(report_of):
    code, out, err = report_of(log(resid([0, 100], [1, 2], part=0, parts=2), resid([200, 300], [3, 4], part=1, parts=2)))
    assert code == 0 and "incomplete" not in err  # (4 samples are too few for an Allan deviation: that note is fine)
    res = json.loads((out / "results.json").read_text())
    assert [(r["t_ms"], r["resid_ps"]) for r in res["residuals"]] == [([0, 100, 200, 300], [1, 2, 3, 4])]
    assert (out / "residuals.png").exists()


def test_truncated_and_odd_records_everywhere_still_give_a_page(report_of):
    text = log(
        {"type": "machine", "vendor": "V", "truncated": True},
        {"type": "counter", "name": "hpet", "truncated": True},
        {"type": "counter", "present": True},
        {"type": "latency", "counter": "rdtsc", "p50_ns": 50.0, "truncated": True},
        {"type": "latency", "counter": "hpet", "p50_ns": "fast"},
        {"type": "latency", "counter": "pit", "p50_ns": 200.0},
        {"type": "resolution", "counter": "pit", "nominal_tick_ns": "x"},
        hist(0, 1, [1, 10, 2], counter="pit"),
        hist(0, 1, [1, 10, 2, 5], counter="acpi_pm"),
        {"type": "stability", "counter": "tsc", "reference": "hpet", "start_s": 0, "ppm_vs_window": 0.1},
        {"type": "stability", "counter": "tsc", "reference": "hpet", "start_s": 1, "truncated": True},
        {"type": "frequency", "counter": "hpet", "truncated": True},
        {"type": "check", "name": "x", "truncated": True},
    )
    code, out, err = report_of(text)
    assert code == 0
    page = (out / "report.html").read_text()
    assert "<h2>Left out</h2>" in page and "incomplete" in page
    # one usable sub-window is too few for a frequency plot (a table instead)
    assert sorted(p.stem for p in out.glob("*.png")) == ["read_cost", "sequential_reads"]
    for what in ("latency record (counter rdtsc) is incomplete", "latency record (counter hpet) is incomplete",
                 "histogram record (counter pit) is incomplete", "stability record (counter tsc, reference hpet) is incomplete",
                 "machine record was too long"):
        assert what in err, what


def test_an_old_results_file_without_notes_still_reports(report_of, tmp_path):
    res = results.from_log(log(COUNTER, LATENCY))
    del res["notes"]
    code, out, err = report_of(json.dumps(res))
    assert code == 0 and (out / "report.html").exists()
