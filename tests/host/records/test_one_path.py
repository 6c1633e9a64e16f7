"""One formatting path per figure (tools/clockbench/records/figures.py): the TSC's
read cost is the same text in every output of one log (the image's verdict
record, the HTML page's verdict, read-cost table and answers, the CI
summary, compare), both as measured and where the read lies below the
TSC's step, the fleet's column and the bare-and-OS table too; the RTC's
one-second step as seconds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clockbench.report import ci_formats, compare, os_side, report
from clockbench.records import figures, records, results
from clockbench.fleet import fleet
from clockbench.runs import store
from helpers.paths import ROOT

LOG = ROOT / "tests" / "fixtures" / "tcg-q35-emulator.log"  # a real TCG boot of the current image


def below_step(text: str) -> str:
    """The log as the image writes it where the TSC moves in 26-tick steps
    (10.0 ns at 2.6 GHz: the development machine's AMD host under KVM), its
    read's p50 within 3 steps: below_step, the batch's figure standing for a
    read, and the verdict record's words (kernel/results.c)."""
    text = re.sub(r'("type":"tsc_step","step_ticks":)\d+,"step_ns":[0-9.]+', r'\g<1>26,"step_ns":10.000', text)
    text = re.sub(r'("type":"latency","counter":"rdtsc",.*?)"below_step":false(.*?)"batch_ns_per_read":[0-9.]+',
                  r'\g<1>"below_step":true\g<2>"batch_ns_per_read":9.541', text)
    return re.sub(r'("type":"verdict","counter":"tsc",.*?"read_cost":)"[^"]*"',
                  lambda m: m.group(1) + '"below the TSC\'s step (10.0 ns): 9.54 ns a read by the batch"', text)


def outputs(text: str, tmp: Path) -> dict[str, str]:
    res = results.from_log(text, "x.log")
    report.augment(res, text)
    res["allan"] = []
    report.render_html(res, [], tmp / "report.html")
    page = (tmp / "report.html").read_text().replace("&#39;", "'")
    verdict = page.split('id="verdict"')[1].split("</table>")[0]
    tsc_row = re.search(r"<td>tsc</td><td class=\"n\">(.*?)</td>", verdict).group(1)
    cost = page.split('id="read-cost"')[1].split("</table>")[0]
    rdtsc_p50 = re.search(r"<td>rdtsc</td>(?:<td[^>]*>.*?</td>){2}<td[^>]*>(.*?)</td>", cost).group(1)
    answers = page.split('id="answers"')[1].split("</div>")[0]
    answer = re.search(r"<th>what a TSC read costs</th><td>(.*?)( in this emulator)?</td>", answers).group(1)
    md = ci_formats.markdown(res).replace("&#39;", "'")
    md_p50 = re.search(r"^\| rdtsc \| (.*?) \|", md, re.M).group(1)
    table = compare.table([res, res], ["a", "b"])
    cmp_cell = next(r for r in table if r[0] == "rdtsc read p50")[1]
    rec = next((v for v in records.of_type(records.parse_log(text).records, "verdict") if v["counter"] == "tsc"),
               {"read_cost": figures.read_cost(res["latency"]["rdtsc"], figures.tsc_step_ns(res))})  # an older image's log
    with store.Store(tmp / "runs.db") as db:
        db.add_log(text, "m", "x.log")
        (run,) = db.runs()
    bare = os_side.bare_cost(res, "rdtsc")
    return {"record": rec["read_cost"], "figures": figures.tsc_read_cost(res), "html verdict": tsc_row, "html read cost": rdtsc_p50,
            "html answers": answer, "summary.md": md_p50, "compare": re.sub(r" \d+(\.\d+)?x$", "", cmp_cell),
            "fleet": fleet.tsc_read(run), "bare and OS": bare}


def test_the_tsc_read_cost_is_one_text_everywhere(tmp_path):
    got = outputs(LOG.read_text(), tmp_path)
    assert len(set(got.values())) == 1, got
    assert re.fullmatch(r"\d+\.\d ns", got["record"])


def test_an_older_logs_tsc_read_cost_is_one_text_everywhere(tmp_path):
    """A log from before the verdict records: every output says it from the
    latency record, the same way."""
    got = outputs((ROOT / "tests" / "fixtures" / "tcg-q35.log").read_text(), tmp_path)
    assert set(got.values()) == {"10.0 ns"}, got


def test_the_latency_record_says_what_the_image_said(tmp_path):
    """Where the image wrote its own words, the latency record's figure
    formatted here says the same, to the 0.05 ns its 3 decimals allow."""
    res = results.from_log(LOG.read_text(), "x.log")
    own = figures.read_cost(res["latency"]["rdtsc"], figures.tsc_step_ns(res))
    said = figures.tsc_read_cost(res)
    assert abs(float(own[:-3]) - float(said[:-3])) <= 0.0501 and own.endswith(" ns") and said.endswith(" ns"), (own, said)


def test_a_read_below_the_step_is_one_text_everywhere(tmp_path):
    text = below_step(LOG.read_text())
    got = outputs(text, tmp_path)
    assert set(got.values()) == {"below the TSC's step (10.0 ns): 9.54 ns a read by the batch"}, got
    # the latency record alone says it the same way (an output with no verdict record)
    res = results.from_log(text, "x.log")
    assert figures.read_cost(res["latency"]["rdtsc"], figures.tsc_step_ns(res)) == got["record"]
    res["verdict_rows"] = []
    assert figures.tsc_read_cost(res) == got["record"]


def test_the_rtc_step_is_in_seconds_in_the_summary():
    res = results.from_log(LOG.read_text(), "x.log")
    md = ci_formats.markdown(res)
    assert "1000011844" not in md and not re.search(r"\d{7,}\.\d ns", md)
    rtc = res["resolution"].get("rtc") or {}
    assert figures.ns(1000011844.4) == "1.00 s"
    if figures._num(rtc.get("min_step_ns")) is not None:  # a run that timed two RTC edges or more
        assert re.search(r"^\| rtc \| .* \| 1\.00 s \|$", md, re.M), md


def test_the_terminal_verdicts_cost_line_is_not_its_advice():
    """An older log's verdict read from its terminal text: the line under a
    row that gives the batch's figure is the read's cost, not its advice."""
    text = ("== Verdict ==\n"
            "  counter     read p50  resolution               freq monotonic\n"
            "  tsc          9.54* ns     10.0 ns        +-0.054 ppm       yes\n"
            "           -> a good clock\n"
            "           -> * a read is below the TSC's step (10.0 ns): 9.54 ns a read by\n"
            "             the batch\n"
            "  hpet       9384.0 ns   9384.0 ns          reference       yes\n"
            "           -> a good reference; too slow to read for timestamps\n"
            "\n")
    v = report.verdict_text(report.sections(text.split("\n")))
    assert v["advice"]["tsc"] == "a good clock" and v["advice"]["hpet"].startswith("a good reference"), v
    assert v["rows"]["tsc"]["read"] == "9.54*", v


def test_the_read_cost_plot_draws_a_read_below_the_step_as_the_batch(tmp_path):
    """plots.read_cost: a row below the TSC's step is no distribution (its
    percentiles are the step's quantisation): it is drawn as the batch's
    figure, labelled as the tables say it; a row with no batch at the step,
    labelled not resolved; the others as measured. The plot is drawn."""
    from clockbench.report import plots

    res = results.from_log(below_step(LOG.read_text()), "x.log")
    res["latency"]["hpet"] = dict(res["latency"]["hpet"], below_step=True)  # no batch: a counter
    notes: list[str] = []
    series = {s["name"]: s for s in plots.read_cost_series(res, notes)}
    assert series["rdtsc"]["kind"] == "batch" and series["rdtsc"]["points"] == [(9.541, 0.5)], series["rdtsc"]
    assert "9.54 ns by the batch" in series["rdtsc"]["label"] and "below the TSC's step" in series["rdtsc"]["label"]
    assert series["hpet"]["kind"] == "unresolved" and series["hpet"]["points"] == [(10.0, 0.5)], series["hpet"]
    assert "not resolved" in series["hpet"]["label"]
    assert series["rdtscp"]["kind"] == "percentiles" and series["rdtscp"]["points"][1][0] == res["latency"]["rdtscp"]["p50_ns"]
    out = plots.read_cost(res, tmp_path / "read_cost.png", notes)
    assert out.stat().st_size > 1000 and any("below the TSC's step" in n for n in notes), notes


@pytest.mark.parametrize("value, u, shown", [
    (-0.3, 22, "0 \u00b1 22 ppm"),  # rounded to nothing: no sign, never "-0"
    (0.3, 22, "0 \u00b1 22 ppm"),
    (-0.036481, 0.3, "-0.04 \u00b1 0.30 ppm"),
    (12.0, 2.5, "+12.0 \u00b1 2.5 ppm"),
])
def test_a_figure_rounded_to_zero_has_no_sign(value, u, shown):
    assert figures.pm(value, u) == shown
