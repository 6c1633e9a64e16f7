"""Every language cost with its uncertainty, and one answer per language
across the clocksources (issue 44, sections 1, 3 and 4), in the host tool:
the store keeps each p50's 95% interval, the OS run's page shows it in the
ladder and gives one line per API across the clocksources (lang_summary),
`compare` of two OS runs says whether two costs differ beyond their
intervals and when two rows compare different runtimes, in under 160
columns. From real clockbench-os runs of this project's host
(tests/fixtures/os-lang-intervals.log: `clockbench-os --current-only`, every
language, 20000 calls, clocksource tsc) and of Debian's Linux under TCG
(tests/fixtures/os-vm-lang-intervals.log: `clockbench os-vm --accel tcg
--lang go,python --args "--quick --lang-calls 100"`, on tsc, hpet and
acpi_pm)."""

from __future__ import annotations

import copy
import json
import re

import pytest

from helpers.paths import FIXTURES
from helpers.tool import run_cli, run_process
from clockbench.records import figures, records, results
from clockbench.report import ladder, report
from clockbench.runs import store

HOST = FIXTURES / "os-lang-intervals.log"
VM = FIXTURES / "os-vm-lang-intervals.log"


def lang(text: str, language: str, api: str, cs: str = "tsc") -> dict:
    return next(r for r in results.from_log(text)["lang_clock"]
                if (r["language"], r["api"], r["clocksource"]) == (language, api, cs))


def edited(text: str, edit) -> str:
    """The log with each lang_clock record passed through edit (which
    changes it in place), every other line as it was."""
    out = []
    for line in text.split("\n"):
        if line.startswith("@cb {") and '"type":"lang_clock"' in line:
            rec = copy.deepcopy(records.parse_log(line).records[0])
            edit(rec)
            line = "@cb " + json.dumps(rec, separators=(",", ":"))
        out.append(line)
    return "\n".join(out)


def test_every_lang_clock_record_has_its_interval_around_its_p50():
    for r in results.from_log(HOST.read_text())["lang_clock"]:
        lo, hi = figures.lang_interval(r)
        assert lo is not None and lo <= r["p50_ns"] <= hi, r["api"]


def test_the_store_keeps_each_cost_with_its_interval(tmp_path):
    text = HOST.read_text()
    with store.open_store(tmp_path / "runs.sqlite") as st:
        run_id, _ = st.add_log(text, "host", str(HOST))
        figs = next(r for r in st.runs() if r["id"] == run_id).figures
    go = lang(text, "go", "time.Now")
    lo, hi = go["p50_ci_ns"]
    p50 = figs["lang_p50_ns:tsc/go/time.Now"]
    assert p50.uncertainty == pytest.approx(max(go["p50_ns"] - lo, hi - go["p50_ns"]))
    assert figs["lang_p50_ci_lo_ns:tsc/go/time.Now"].value == pytest.approx(lo)
    assert figs["lang_p50_ci_hi_ns:tsc/go/time.Now"].value == pytest.approx(hi)
    assert len([n for n in figs if n.startswith("lang_p50_ci_lo_ns:")]) == 23
    # an older log's records have no interval: no figure for it, and no uncertainty made up
    with store.open_store(tmp_path / "old.sqlite") as st:
        run_id, _ = st.add_log((FIXTURES / "os-lang-host.log").read_text(), "old", "old")
        old = next(r for r in st.runs() if r["id"] == run_id).figures
    assert old["lang_p50_ns:tsc/go/time.Now"].uncertainty is None and not any(n.startswith("lang_p50_ci_") for n in old)


def test_the_pages_ladder_gives_each_cost_its_interval_and_one_line_per_api(tmp_path):
    res = results.from_log(VM.read_text())
    report.write(res, tmp_path)
    page = (tmp_path / "report.html").read_text()
    section = page[page.index('<section id="ladder">'):]
    section = section[:section.index("</section>")]
    assert section.count("<th>95% interval</th>") == 3
    for r in res["lang_clock"]:
        lo, hi = r["p50_ci_ns"]
        cell = f'<td class="n">{ladder.cost_text(r["p50_ns"])}</td><td class="n">{ladder.interval_text(r["p50_ns"], lo, hi)}</td>'
        assert cell in section, (r["clocksource"], r["api"], cell)
    # one line per API across the clocksources, from the lang_summary records
    answers = re.findall(r"<li>(.*?)</li>", section[section.index('id="ladder-answers"'):])
    assert len(answers) == len(res["lang_summary"]) == 7
    go = next(a for a in answers if a.startswith("Go time.Now: "))
    assert re.fullmatch(r"Go time\.Now: \d+ ns \([\d.]+-[\d.]+\) on tsc, vDSO; [\d.]+ µs \([\d.]+-[\d.]+\) on hpet, 2\.\d system calls "
                        r"a call; [\d.]+ µs \([\d.]+-[\d.]+\) on acpi_pm, 2\.\d system calls a call", go), go


def test_one_clocksource_measured_says_what_the_others_would_mean(tmp_path):
    res = results.from_log(HOST.read_text())
    lines = [s["line"] for s in ladder.summaries(res)]
    assert len(lines) == 23
    go = next(l for l in lines if l.startswith("Go time.Now: "))
    assert go.endswith("on tsc, vDSO; not measured: kvm-clock (read in the vDSO too: no system call)"), go
    # a clocksource read by a system call: what that would cost, from the raw syscall measured here
    res["lang_summary"][0]["offered_not_measured"] = {"hpet": "syscall"}
    said = ladder.summaries(res)[0]["line"]
    raw = next(r["p50_ns"] for r in res["os_latency"] if (r["call"], r["path"]) == ("clock_gettime(CLOCK_MONOTONIC)", "syscall"))
    assert f"hpet (a system call a call: the raw syscall alone costs {figures.ns(raw)} here" in said, said


def test_the_ladder_page_loads_in_a_browser(tmp_path):
    from test_report_html import body_data, browser, text_of

    res = results.from_log(VM.read_text())
    report.write(res, tmp_path)
    dom = browser(tmp_path / "report.html", tmp_path)
    assert body_data(dom, "loaded") == "yes" and body_data(dom, "errors") == ""
    shown = text_of(dom)
    for s in ladder.summaries(res):
        assert s["line"] in shown, s["line"]


def test_compare_says_whether_two_costs_differ_beyond_their_intervals(capsys, tmp_path):
    text = HOST.read_text()

    def slower_go(r):  # Go's costs twice as high, interval and all: beyond it
        if r["language"] == "go":
            r["p50_ns"] *= 2
            r["p50_ci_ns"] = [v * 2 for v in r["p50_ci_ns"]]

    other = tmp_path / "other.log"
    other.write_text(edited(text, slower_go))
    r = run_cli(capsys, "compare", HOST, other)
    assert r.code == 0, r
    lines = r.out.split("\n")
    assert max(map(len, lines)) < 160
    a, b = lang(text, "go", "time.Now"), lang(other.read_text(), "go", "time.Now")
    want = (f"Go time.Now on tsc: {ladder.cost_text(a['p50_ns'])} ({ladder.interval_text(a['p50_ns'], *a['p50_ci_ns'])}) vs "
            f"{ladder.cost_text(b['p50_ns'])} ({ladder.interval_text(b['p50_ns'], *b['p50_ci_ns'])}): slower in other")
    assert any(l.strip().startswith(want) for l in lines), (want, r.out)
    # the same run's costs overlap themselves: no difference claimed
    rust = next(l for l in lines if l.strip().startswith("Rust Instant::now on tsc: "))
    assert rust.endswith("the intervals overlap: no difference shown"), rust
    # and the other way round, faster
    r = run_cli(capsys, "compare", other, HOST)
    assert any(l.strip().startswith("Go time.Now on tsc: ") and "faster in os-lang-intervals" in l for l in r.out.split("\n")), r.out


def test_compare_of_a_host_and_a_vm_stays_under_160_columns_as_a_user_runs_it(tmp_path):
    r = run_process("compare", str(HOST), str(VM), "--html", str(tmp_path / "c.html"))
    assert r.code == 0, r.err
    assert max(map(len, r.out.split("\n"))) < 160, max(r.out.split("\n"), key=len)
    r = run_process("compare", str(FIXTURES / "tcg-q35.log"), str(VM))
    assert r.code == 0, r.err
    assert max(map(len, r.out.split("\n"))) < 160, max(r.out.split("\n"), key=len)


def test_compare_says_when_two_rows_compare_different_runtimes(capsys, tmp_path):
    text = HOST.read_text()
    py = lang(text, "python", "perf_counter_ns")

    def debian(r):
        if r["language"] == "python":
            r["runtime"], r["runtime_exe"] = "CPython 3.11.2", "/usr/bin/python3.11"

    other = tmp_path / "debian.log"
    other.write_text(edited(text, debian))
    r = run_cli(capsys, "compare", HOST, other)
    assert r.code == 0, r
    flat = " ".join(r.out.split())
    assert (f"Python: different runtimes, {py['runtime']} ({py['runtime_exe']}) in os-lang-intervals vs CPython 3.11.2 "
            "(/usr/bin/python3.11) in debian") in flat, r.out
    # the same runtime on both sides, and a native probe found at another path: no such line
    assert "Go: different runtimes" not in flat and "Java: different runtimes" not in flat
    r = run_cli(capsys, "compare", HOST, VM)
    assert "Go: different runtimes" not in " ".join(r.out.split()), r.out


def test_the_bare_and_os_table_gives_the_line_per_api_too(capsys, tmp_path):
    bare = FIXTURES / "tcg-q35.log"
    lines = [s["line"] for s in ladder.summaries(results.from_log(VM.read_text()))]
    r = run_cli(capsys, "compare", bare, VM, "--html", tmp_path / "c.html")
    assert r.code == 0, r
    flat = " ".join(r.out.split())
    page = (tmp_path / "c.html").read_text()
    for line in lines:
        assert line in flat and f"<li>{line}</li>" in page, line
    r = run_cli(capsys, "report", bare, "--os", VM, "--out", tmp_path / "rep")
    assert r.code == 0, r
    page = (tmp_path / "rep" / "report.html").read_text()
    assert all(f"<li>{line}</li>" in page for line in lines)
