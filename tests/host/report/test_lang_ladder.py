"""The ladder in the host tool (issue 36, section 6), from a real
clockbench-os log of this project's machine with every language measured
(tests/fixtures/os-lang-host.log: `clockbench-os --current-only` on
a 2-CPU AMD EPYC Firecracker KVM guest, Linux 6.18, clocksource tsc): the ladder's rows and their order, the
ratio to a given bare read, the flags on claims finer than the step seen,
the OS run's page with its table and plot, `compare` of OS runs with the
languages side by side, and the store keeping the lang_clock figures."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from helpers.paths import FIXTURES
from helpers.tool import run_cli
from clockbench.records import figures, records, results
from clockbench.report import ladder, plots, report
from clockbench.runs import store

FIXTURE = FIXTURES / "os-lang-host.log"
TEXT = FIXTURE.read_text()
# The languages and APIs in the fixture, in the probes' contract's order.
APIS = {"cpp-libstdc++": 3, "cpp-libc++": 3, "rust": 2, "go": 2, "java": 3, "python": 5, "node": 3, "dotnet": 2}


@pytest.fixture()
def res() -> dict:
    return results.from_log(TEXT)


def row(table: dict, layer: str, read: str) -> dict:
    return next(r for r in table["rows"] if (r["layer"], r["read"]) == (layer, read))


def test_every_api_of_every_language_is_a_record(res):
    got = [(r["language"], r["api"]) for r in res["lang_clock"]]
    assert len(got) == sum(APIS.values()) == 23 and {l for l, _ in got} == set(APIS)


def test_one_ladder_per_clocksource_from_the_bare_read_up(res):
    tables = ladder.tables(res)
    assert [t["clocksource"] for t in tables] == ["tsc"]
    rows = tables[0]["rows"]
    assert [r["layer"] for r in rows[:5]] == ["bare", "vDSO", "libc", "libc", "syscall"]
    assert rows[0]["read"].startswith("rdtsc (user space; no bare run given)")
    assert len(rows) == 5 + 23
    steady = row(tables[0], "C++ (libstdc++)", "steady_clock")
    assert (steady["clock"], steady["path"], steady["method"]) == ("MONOTONIC", "vDSO (0/1000)", "tsc")
    go = row(tables[0], "Go", "time.Now")
    assert go["clock"] == "REALTIME+MONOTONIC"
    cpu = row(tables[0], "Python", "process_time_ns")
    assert (cpu["path"], cpu["clock"], cpu["method"]) == ("syscall (1000/1000)", "PROCESS_CPUTIME_ID (CPU time: not the clocksource)",
                                                          "batch")
    # the user-space rdtsc is under the TSC's step here: its p50 only bounds it, so each ratio is a least one
    assert steady["ratio"].startswith(">=") and steady["ratio"].endswith("x")


def test_a_claim_finer_than_the_step_seen_is_flagged_and_a_true_one_is_not(res):
    t = ladder.tables(res)[0]
    perf = row(t, "Python", "perf_counter")
    assert perf["claimed"] == "1.00 ns" and perf["flag"] is True and perf["step"] != "-"
    sw = row(t, ".NET", "Stopwatch.GetTimestamp")
    assert sw["claimed"] == "100 ns" and sw["step"] == "100 ns" and sw["flag"] is False
    assert row(t, "Rust", "Instant::now")["claimed"] == "none stated"


def test_ratios_are_to_the_bare_runs_read_when_one_is_given(res):
    bare = {"latency": {"rdtscp": {"p50_ns": 10.0}}, "resolution": {}}
    t = ladder.tables(res, bare)[0]
    assert t["rows"][0]["read"].startswith("rdtscp (the image")
    for r in t["rows"][1:]:
        if r["p50_ns"] is not None:
            assert r["ratio"] == f"{r['p50_ns'] / 10.0:.1f}x", r


def test_the_os_runs_page_has_the_ladder_and_its_plot(res, tmp_path):
    made, notes = report.write(res, tmp_path, log_path=FIXTURE)
    assert [p.name for p in made] == ["ladder.png"] and (tmp_path / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "report.html").read_text()
    section = page[page.index('<section id="ladder">'):]
    section = section[:section.index("</section>")]
    assert plots.LADDER_TITLE in section and "data:image/png;base64," in section
    for r in res["lang_clock"]:
        assert f">{r['api']}<" in section, r["api"]
    assert section.count('class="n flag"') == sum(1 for r in res["lang_clock"] if r["claim_finer_than_step"]) + 4, \
        "each flagged language claim, and clockbench-os's four 1 ns clock_getres rows"
    assert "CPython 3.11" in section and "Mono 6.8" in section


def test_an_os_run_without_languages_has_no_ladder(tmp_path):
    text = "\n".join(l for l in TEXT.split("\n") if '"type":"lang_' not in l)
    res = results.from_log(text)
    made, _ = report.write(res, tmp_path)
    assert made == [] and 'id="ladder"' not in (tmp_path / "report.html").read_text()


def test_compare_of_two_os_runs_sets_the_languages_side_by_side(capsys, tmp_path):
    slower = []
    for line in TEXT.split("\n"):
        rec = records.parse_log(line).records if "@cb {" in line else []
        if rec and rec[0].get("type") == "lang_clock" and rec[0].get("language") == "go":
            rec = copy.deepcopy(rec[0])
            rec["p50_ns"] = rec["p50_ns"] * 2
            line = "@cb " + json.dumps(rec, separators=(",", ":"))
        slower.append(line)
    other = tmp_path / "vm.log"
    other.write_text("\n".join(slower))
    r = run_cli(capsys, "compare", FIXTURE, other)
    assert r.code == 0, r
    go = next(l for l in r.out.split("\n") if l.startswith("Go time.Now on tsc "))
    assert re.search(r"\(2\.0x\), vDSO \(0/1000\), REALTIME\+MONOTONIC", go), go
    assert sum(1 for l in r.out.split("\n") if re.match(r"\S.* on tsc  ", l) and "(" in l) >= 23


def test_the_store_keeps_each_apis_figures(tmp_path):
    with store.open_store(tmp_path / "runs.sqlite") as st:
        run_id, _ = st.add_log(TEXT, "host", str(FIXTURE))
        run = next(r for r in st.runs() if r["id"] == run_id)
    figs = run.figures
    go = figs["lang_p50_ns:tsc/go/time.Now"]
    rec = next(r for r in results.from_log(TEXT)["lang_clock"] if (r["language"], r["api"]) == ("go", "time.Now"))
    assert go.value == pytest.approx(rec["p50_ns"]) and go.unit == "ns" and "CLOCK_REALTIME+CLOCK_MONOTONIC" in go.detail
    assert figs["lang_syscalls_per_1000:tsc/python/process_time_ns"].value == 1000
    assert figs["lang_claimed_ns:tsc/dotnet/Stopwatch.GetTimestamp"].value == 100
    assert "finer than the least step" in figs["lang_claimed_ns:tsc/python/perf_counter"].detail
    assert len([n for n in figs if n.startswith("lang_p50_ns:")]) == 23


VM = FIXTURE.parent / "os-vm-lang-tcg.log"  # tests/boot/test_os_vm_lang.py's run: os-vm --accel tcg --lang cpp-libstdc++,go,python,dotnet --args "--quick --lang-calls 100"


def test_a_host_and_a_vm_side_by_side(capsys):
    r = run_cli(capsys, "compare", FIXTURE, VM)
    assert r.code == 0, r
    lines = r.out.split("\n")
    sw = {cs: next(l for l in lines if l.startswith(f".NET Stopwatch.GetTimestamp on {cs} ")) for cs in ("tsc", "hpet", "acpi_pm")}
    cells = [c for c in re.split(r"\s{2,}", sw["tsc"]) if c]
    assert all("vDSO (0/1000), MONOTONIC" in c for c in cells[1:3]) and "x)" in cells[2], sw["tsc"]
    # the host has only tsc: its cell is "-"; the VM's hpet and acpi_pm make a syscall a call
    for cs in ("hpet", "acpi_pm"):
        cells = [c for c in re.split(r"\s{2,}", sw[cs]) if c]
        assert cells[1] == "-" and "syscall (1000/1000), MONOTONIC" in cells[2], sw[cs]


def test_the_vms_ladders_say_the_article_s_stopwatch_table():
    res = results.from_log(VM.read_text())
    tables = {t["clocksource"]: t for t in ladder.tables(res)}
    assert list(tables) == ["tsc", "hpet", "acpi_pm"]
    for cs, t in tables.items():
        sw = row(t, ".NET", "Stopwatch.GetTimestamp")
        assert sw["claimed"] == "100 ns" and sw["path"] == ("vDSO (0/1000)" if cs == "tsc" else "syscall (1000/1000)"), sw
        # a step coarser than twice the 100 ns claimed (the HPET's, the PM timer's under TCG) flags it
        step_ns = next(r["least_step_ns"] for r in res["lang_clock"]
                       if (r["clocksource"], r["api"]) == (cs, "Stopwatch.GetTimestamp"))
        assert sw["flag"] is (step_ns > 200), (cs, sw)
        assert row(t, "vDSO", "clock_gettime(CLOCK_MONOTONIC)")["path"] == "vDSO entry"


def test_a_bare_runs_report_shows_the_os_runs_ladder_beneath_its_read(capsys, tmp_path):
    bare = FIXTURE.parent / "tcg-q35.log"
    r = run_cli(capsys, "report", bare, "--os", VM, "--out", tmp_path / "rep")
    assert r.code == 0, r
    page = (tmp_path / "rep" / "report.html").read_text()
    for cs in ("tsc", "hpet", "acpi_pm"):
        assert f"The ladder of os-vm-lang-tcg on clocksource {cs}" in page, cs
    at = page.index("The ladder of os-vm-lang-tcg on clocksource hpet")
    assert "hpet (the image, no OS)" in page[at:at + 3000] and "Stopwatch.GetTimestamp" in page[at:]


def test_order_and_threads_are_shown_and_a_monotonic_clock_that_went_back_is_flagged(res, tmp_path):
    """Each API's order across CPUs and its cost per thread count are in a
    table of their own under each ladder; a clock clockbench-os judged
    (`order_judged`) that went back is flagged, a wall clock that did is not."""
    recs = [r for r in res["lang_clock"] if r["clocksource"] == res["lang_clock"][0]["clocksource"]]
    steady = next(r for r in recs if (r["language"], r["api"]) == ("cpp-libstdc++", "steady_clock"))
    wall = next(r for r in recs if (r["language"], r["api"]) == ("cpp-libstdc++", "system_clock"))
    steady.update(order_judged=True, cross_cpu_backward=2, cross_cpu_max_backward_ns=40.0, cross_cpu_rounds=400)
    wall.update(order_judged=False, cross_cpu_backward=5, cross_cpu_max_backward_ns=900.0)
    [table] = [t for t in ladder.tables(res) if t["clocksource"] == steady["clocksource"]]
    got = {(r["layer"], r["read"]): r for r in table["order"]}
    assert len(got) == len(recs)
    s = got[("C++ (libstdc++)", "steady_clock")]
    assert (s["rounds"], s["cross_backward"], s["worst"], s["judged"], s["bad"]) == ("400", "2", figures.ns(40.0), True, True), s
    w = got[("C++ (libstdc++)", "system_clock")]
    assert (w["cross_backward"], w["judged"], w["bad"]) == ("5", False, False), w
    assert s["threads"][0] == figures.ns(steady["threads_1_ns"]), s
    # a count the scheduler disturbed is marked, as in clockbench-os's table; more threads than CPUs too
    steady.update(threads_disturbed=True, threads_disturbed_cpus={"2": [1]}, threads_over_cpus=[])
    wall.update(threads_over_cpus=[2])
    [marked] = [t for t in ladder.tables(res) if t["clocksource"] == steady["clocksource"]]
    cells = {r["read"]: r["threads"] for r in marked["order"] if r["layer"] == "C++ (libstdc++)"}
    assert cells["steady_clock"][:2] == [figures.ns(steady["threads_1_ns"]), figures.ns(steady["threads_2_ns"]) + "~"], cells
    assert cells["system_clock"][1] == figures.ns(wall["threads_2_ns"]) + ">", cells
    report.write(res, tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "In order, across CPUs and threads (clocksource" in page
    row = re.search(r'<tr class="bad"><td class="nw">C\+\+ \(libstdc\+\+\)</td><td class="nw">steady_clock</td>.*?</tr>', page)
    assert row and "flag" in row.group(0), page[page.index("In order, across"):][:3000]
    assert not re.search(r'<tr class="bad"><td class="nw">C\+\+ \(libstdc\+\+\)</td><td class="nw">system_clock</td>', page)
