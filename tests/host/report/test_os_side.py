"""The bare image beside the OS side (tools/clockbench/report/os_side.py): the
side-by-side table of `clockbench compare BARE OS` and of the report's
"Bare and through the OS" section, from the fixture logs (a warning for
different machines, figures checked against the records on the same
machine), the clocksource-to-counter mapping, missing figures; an OS run's
own report page; the command line; the page in headless Chromium."""

from __future__ import annotations

import html
import json
import math
import re

import pytest

from helpers.logs import KVM, TCG
from helpers.paths import FIXTURES
from helpers.tool import not_installed, run_cli
from clockbench.report import compare, os_side, report
from clockbench import errors
from clockbench.records import records, results
from test_report_html import body_data, browser, text_of

OS_FC = FIXTURES / "os-firecracker-host.log"  # clockbench-os on this host: a Firecracker KVM guest
OS_TCG = FIXTURES / "os-vm-tcg-q35.log"  # clockbench-os as the init of Linux under QEMU TCG q35: tcg-q35.log's machine


def need_fixture(path):
    """A fixture `make fixtures` writes: missing is a failure under CI, a skip elsewhere."""
    if not path.exists():
        not_installed(f"{path.name} is missing: run `make fixtures`")


def plain(page: str) -> str:
    """A page's text as shown: tags out, entities (&#34; too) decoded."""
    return html.unescape(text_of(page))


def load(path):
    return results.from_log(path.read_text(), str(path))


def recs(path):
    return records.parse_log(path.read_text()).records


def row(rows, label):
    found = [r for r in rows if r[0] == label]
    assert len(found) == 1, f"{label!r} is not one row: {[r[0] for r in rows]}"
    return dict(zip(rows[0], found[0]))


def log_of(*recs_: dict) -> str:
    return "\n".join("@cb " + json.dumps(r) for r in recs_)


SCHEMA_OS = {"type": "schema", "version": 1, "tool": "clockbench-os", "build": "t"}
MACHINE = {"type": "machine", "vendor": "GenuineIntel", "brand": "Brand A", "family": 6, "model": 85, "stepping": 4, "hypervisor": None}
SUMMARY = {"type": "summary", "pass": 1, "fail": 0, "skip": 0, "status": "passed"}


def lat(cs, call, path, p50):
    return {"type": "os_latency", "clocksource": cs, "call": call, "path": path, "n": 100, "min_ns": p50, "p50_ns": p50, "p99_ns": p50}


def bare_made(**p50) -> dict:
    return results.from_log(log_of({"type": "schema", "version": 1, "tool": "clockbench", "build": "b"}, MACHINE,
                                   {"type": "profile", "name": "quick", "tsc_hz": 2e9, "tsc_hz_source": "measured against hpet"},
                                   *[{"type": "latency", "counter": k, "p50_ns": v} for k, v in p50.items()], SUMMARY))


# ------------------------------------------------------------ results


def as_ns(cell: str) -> float:
    """"1.182 \u00b5s" -> 1182.0: a duration cell back in ns."""
    value, unit = cell.split()
    return float(value) * {"ns": 1, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9}[unit]


def test_an_os_log_keeps_its_records_and_has_an_outcome():
    res = load(OS_FC)
    r = recs(OS_FC)
    assert res["tool"] == "clockbench-os" and os_side.is_os(res)
    assert res["os"] == records.one(r, "os")
    assert res["os_latency"] == records.of_type(r, "os_latency") and len(res["os_latency"]) == 24
    assert res["os_resolution"] == records.of_type(r, "os_resolution")
    assert res["os_tsc_rate"] == records.of_type(r, "os_tsc_rate") and len(res["os_tsc_rate"]) == 2
    assert res["os_claims"] == records.of_type(r, "os_claim") and res["os_clocksources"] == records.of_type(r, "os_clocksource")
    assert res["os_restore"] == records.one(r, "os_restore")
    assert results.outcome(res) == (0, "")
    # the bare image's keys are all still there, empty
    assert res["latency"] == {} and res["machine"]["loader"] == "linux" and res["summary"]["status"] == "passed"
    assert results.load_any(OS_FC.read_text(), "os.log")["tool"] == "clockbench-os"


def test_a_bare_log_is_not_an_os_run_and_an_older_results_file_still_loads():
    res = load(TCG)
    assert res["tool"] == "clockbench" and not os_side.is_os(res)
    assert res["os_latency"] == [] and res["os"] is None and res["os_choice"]["clocksource"] == records.one(recs(TCG), "os_choice")["clocksource"]
    older = {k: v for k, v in res.items() if k != "tool" and not k.startswith("os")}
    back = results.load_any(json.dumps(older), "old.json")
    assert back["os_latency"] == [] and back["os"] is None and back["tool"] is None and not os_side.is_os(back)
    with pytest.raises(errors.BadInput):
        results.load_any(json.dumps({**older, "os_latency": {"a": 1}}), "bad.json")


# ------------------------------------------------------------ the table


@pytest.mark.parametrize("cs, counter", [("tsc", "rdtscp"), ("hpet", "hpet"), ("acpi_pm", "acpi_pm"), ("kvm-clock", "kvmclock"),
                                         ("hyperv_clocksource_tsc_page", "hv_ref_page"),
                                         ("hyperv_clocksource_msr", "hv_ref_counter"), ("jiffies", None)])
def test_clocksources_map_to_the_bare_counters(cs, counter):
    assert os_side.bare_counter(cs) == counter


def test_different_machines_are_said_so_above_the_table():
    bare, osr = load(TCG), load(OS_FC)
    t = os_side.side_by_side(bare, [osr], "tcg-q35", ["os-firecracker-host"])
    [m] = t["machines"]
    assert not m["same"] and m["line"].startswith("different machines: tcg-q35 ran on QEMU TCG CPU version 2.5+, QEMU TCG")
    assert "os-firecracker-host on AMD EPYC, KVM" in m["line"] and m["line"].endswith("the ratios compare different hardware")
    text = os_side.as_text(t)
    assert text.startswith("WARNING: different machines: ")
    assert text.index("different machines") < text.index("clocksource in use at start")
    # the figures are there all the same, from the records
    cs = t["runs"][0]["clocksources"]
    assert [r[0] for r in cs[1:]] == ["tsc", "kvm-clock"]
    bare_p50 = records.one(recs(TCG), "latency", counter="rdtsc")["p50_ns"]
    vdso = records.one(recs(OS_FC), "os_latency", clocksource="tsc", call="clock_gettime(CLOCK_MONOTONIC)", path="vdso")["p50_ns"]
    tsc = row(cs, "tsc")
    assert tsc["bare read p50"] == f"{bare_p50:.1f} ns" and tsc["vDSO p50"] == f"{vdso:.1f} ns {compare.ratio(vdso, bare_p50)}"
    # a clocksource with no bare counter keeps its OS row
    kvm = row(cs, "kvm-clock")
    assert kvm["bare read p50"] == "-" and kvm["bare counter"] == "kvmclock" and kvm["libc p50"] == "30.0 ns"
    assert "the bare run had no kvmclock" in kvm["note"]


def test_the_context_says_kernel_clocksource_cpu_and_pinning():
    bare, osr = load(TCG), load(OS_FC)
    rows = os_side.side_by_side(bare, [osr], "tcg-q35", ["fc"])["context"]
    assert rows[0] == ["", "tcg-q35 (bare)", "fc (through the OS)"]
    assert row(rows, "machine")["fc (through the OS)"] == "AMD EPYC, KVM"
    assert row(rows, "kernel")["fc (through the OS)"] == "Linux 6.18.44-fc-v657"
    assert row(rows, "clocksource in use at start") == {"": "clocksource in use at start",
                                                         "tcg-q35 (bare)": f"- (Linux would choose {records.one(recs(TCG), 'os_choice')['clocksource']} here, by its ratings)",
                                                         "fc (through the OS)": "tsc"}
    assert row(rows, "available clocksources")["fc (through the OS)"] == "tsc kvm-clock"
    assert row(rows, "clocksources switched to")["fc (through the OS)"] == "kvm-clock, restored"
    assert row(rows, "pinned to")["fc (through the OS)"] == "CPU 1 of 2"
    assert row(rows, "real-time")["fc (through the OS)"] == "no: not asked for (--rt)"
    rate = records.one(recs(OS_FC), "os_tsc_rate", clocksource="tsc")
    bare_hz = records.one(recs(TCG), "profile")["tsc_hz"]
    bare_u = records.one(recs(TCG), "frequency", counter="tsc", reference="hpet")["uncertainty_ppm"]
    tsc = row(rows, "TSC rate")
    assert tsc["tcg-q35 (bare)"] == f"{bare_hz:.0f} Hz \u00b1{os_side.sig(bare_u, 2)} ppm vs hpet"
    assert tsc["fc (through the OS)"].startswith(f"{rate['hz']:.0f} Hz \u00b1{os_side.sig(rate['uncertainty_ppm'], 2)} ppm "
                                                 "vs CLOCK_MONOTONIC_RAW on tsc")
    both = os_side.sig(math.hypot(bare_u, rate["uncertainty_ppm"]), 2)
    assert f"{(rate['hz'] / bare_hz - 1) * 1e6:+.3f} \u00b1{both} ppm from the bare run's" in tsc["fc (through the OS)"]


def test_the_other_clocks_have_rows_of_their_own():
    bare, osr = load(TCG), load(OS_FC)
    other = os_side.side_by_side(bare, [osr], "b", ["o"])["runs"][0]["other"]
    assert [r[0] for r in other[1:]] == [c for c, _, _ in os_side.OTHER_CALLS]
    coarse = row(other, "clock_gettime(CLOCK_MONOTONIC_COARSE)")
    assert coarse["OS p50"] == "10.0 ns" and coarse["clock_getres"] == "4 ms" and coarse["OS least step"] == "4 ms"
    assert coarse["bare read p50"] == "-"
    cpu = row(other, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)")
    lat = records.one(recs(OS_FC), "os_latency", clocksource="tsc", call="clock_gettime(CLOCK_PROCESS_CPUTIME_ID)")
    res = records.one(recs(OS_FC), "os_resolution", clocksource="tsc", call="clock_gettime(CLOCK_PROCESS_CPUTIME_ID)")
    assert cpu["OS p50"] == f"{lat['p50_ns']:.1f} ns"
    assert as_ns(cpu["OS least step"]) == pytest.approx(res["min_step_ns"], rel=0.01)
    assert row(other, "time")["OS least step"] == "1 s" and row(other, "gettimeofday")["OS least step"] == "1 \u00b5s"
    rdtscp = row(other, "rdtscp")
    bare_p50 = records.one(recs(TCG), "latency", counter="rdtscp")["p50_ns"]
    os_p50 = records.one(recs(OS_FC), "os_latency", call="rdtscp")["p50_ns"]
    assert rdtscp["path"] == "instruction" and rdtscp["bare read p50"] == f"{bare_p50:.1f} ns"
    assert rdtscp["OS p50"] == f"{os_p50:.1f} ns {compare.ratio(os_p50, bare_p50)}" and rdtscp["bare least step"] == "0.385 ns"


def test_the_same_machine_bare_and_through_linux():
    need_fixture(OS_TCG)
    bare, osr = load(TCG), load(OS_TCG)
    t = os_side.side_by_side(bare, [osr], "tcg-q35", ["os-vm-tcg-q35"])
    [m] = t["machines"]
    assert m["same"] and m["line"].startswith("same machine (CPUID identity and hypervisor)"), m["line"]
    assert os_side.as_text(t).startswith("same machine (CPUID identity and hypervisor)")
    cs = t["runs"][0]["clocksources"]
    measured = {r["clocksource"] for r in recs(OS_TCG) if r["type"] == "os_latency"}
    assert {r[0] for r in cs[1:]} >= measured
    checked = 0
    for name in measured:
        r = row(cs, name)
        key = os_side.bare_counter(name, load(TCG))
        try:
            base = records.one(recs(TCG), "latency", counter=key)["p50_ns"]
        except LookupError:
            assert r["bare read p50"] == "-"
            continue
        assert r["bare read p50"] == f"{base:.1f} ns"
        for path, head in (("libc", "libc p50"), ("vdso", "vDSO p50"), ("syscall", "syscall p50")):
            found = [x for x in recs(OS_TCG) if x["type"] == "os_latency" and x["clocksource"] == name
                     and x["call"] == "clock_gettime(CLOCK_MONOTONIC)" and x["path"] == path]
            if not found:
                assert r[head] == "-"
                continue
            v = found[0]["p50_ns"]
            assert r[head] == f"{v:.1f} ns {compare.ratio(v, base)}"
            said = float(r[head].split()[-1].rstrip("x"))
            assert said == pytest.approx(v / base, rel=0.06)  # two significant figures
            checked += 1
        reso = [x for x in recs(OS_TCG) if x["type"] == "os_resolution" and x["clocksource"] == name
                and x["call"] == "clock_gettime(CLOCK_MONOTONIC)" and x["path"] == "libc"]
        if reso:
            assert r["clock_getres"] == os_side.dur(reso[0]["getres_ns"]) and r["OS least step"] == os_side.dur(reso[0]["min_step_ns"])
    assert checked, "no clocksource of the OS run has a bare counter with a read cost"
    if "tsc" in measured:
        assert row(cs, "tsc")["bare least step"] == os_side.dur(records.one(recs(TCG), "resolution", counter="rdtsc")["min_step_ns"])


def test_missing_figures_are_dashes_never_errors():
    bare = bare_made(rdtsc=20.0)  # no hpet read, no resolution, no frequency
    osr = results.from_log(log_of(SCHEMA_OS, MACHINE, lat("hpet", "clock_gettime(CLOCK_MONOTONIC)", "syscall", 300.0),
                                  lat("jiffies", "clock_gettime(CLOCK_MONOTONIC)", "libc", 50.0), SUMMARY))
    assert os_side.is_os(osr) and osr["os"] is None
    t = os_side.side_by_side(bare, [osr], "b", ["o"])
    assert t["machines"][0]["same"]
    cs = t["runs"][0]["clocksources"]
    hpet = row(cs, "hpet")
    assert hpet["bare read p50"] == "-" and hpet["syscall p50"] == "300.0 ns" and hpet["vDSO p50"] == "-"
    assert hpet["clock_getres"] == "-" and hpet["bare least step"] == "-" and "did not measure hpet" in hpet["note"]
    jiffies = row(cs, "jiffies")
    assert jiffies["bare counter"] == "-" and jiffies["libc p50"] == "50.0 ns" and "no bare counter" in jiffies["note"]
    other = t["runs"][0]["other"]
    assert all(c == "-" for r in other[1:] for c in r[2:] if r[0] != "rdtsc" or c != "20.0 ns")
    ctx = t["context"]
    for label in ("kernel", "clocksource in use at start", "pinned to", "real-time", "TSC rate"):
        assert row(ctx, label)["o (through the OS)"] == "-", label
    assert "WARNING" not in os_side.as_text(t)
    # an OS run with nothing at all
    empty = results.from_log(log_of(SCHEMA_OS))
    t = os_side.side_by_side(bare, [empty], "b", ["o"])
    assert len(t["runs"][0]["clocksources"]) == 1 and os_side.as_text(t)
    assert "hypervisor unknown" in row(t["context"], "machine")["o (through the OS)"]


def test_odd_members_cost_a_cell(tmp_path):
    text = OS_FC.read_text()
    text = re.sub(r'"p50_ns":[0-9.]+', '"p50_ns":"fast"', text, count=3)
    text = text.replace('"pinned_cpu":1', '"pinned_cpu":[1]').replace('"clocksource":"tsc","available', '"clocksource":7,"available')
    osr = results.from_log(text)
    t = os_side.side_by_side(load(TCG), [osr], "b", ["o"])
    assert os_side.as_text(t) and row(t["context"], "pinned to")["o (through the OS)"] == "not pinned"
    assert row(t["runs"][0]["clocksources"], "tsc")["libc p50"] == "-"
    report.render_os_html(osr, tmp_path / "odd.html")
    assert (tmp_path / "odd.html").read_text().rstrip().endswith("</html>")


# ------------------------------------------------------------ the command line


def test_compare_bare_and_os_on_the_command_line(capsys, tmp_path):
    r = run_cli(capsys, "compare", TCG, OS_FC)
    assert r.code == 0, r.err
    lines = r.out.split("\n")
    assert lines[0].startswith("WARNING: different machines: tcg-q35 ran on QEMU TCG")
    assert any(l.startswith("clocksource  bare counter  bare read p50  libc p50") for l in lines)
    assert any(l.startswith("tsc ") and "rdtsc" in l and "3.0x" in l for l in lines)
    assert any(l.startswith("kvm-clock ") for l in lines)
    assert any(l.startswith("clock_gettime(CLOCK_REALTIME_COARSE)") for l in lines)
    assert "rdtsc read p50" not in r.out  # not the usual table
    # either order: the bare run is the base
    assert run_cli(capsys, "compare", OS_FC, TCG).out == r.out


def test_several_bare_runs_get_the_usual_table_then_the_os_side(capsys):
    r = run_cli(capsys, "compare", TCG, KVM, OS_FC)
    assert r.code == 0, r.err
    assert r.out.index("rdtsc read p50") < r.out.index("Through the OS, against the first bare run, tcg-q35")
    assert "different machines: tcg-q35 ran on" in r.out


def test_compare_html_is_written_and_escaped(capsys, tmp_path):
    evil = '<script>alert("k")</script>&'
    log = tmp_path / "os.log"
    log.write_text(OS_FC.read_text().replace('"kernel":"6.18.44-fc-v657"', '"kernel":' + json.dumps(evil)))
    r = run_cli(capsys, "compare", TCG, log, "--html", tmp_path / "c.html")
    assert r.code == 0, r.err
    assert f"wrote {tmp_path / 'c.html'}" in r.out
    page = (tmp_path / "c.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(&#34;k&#34;)&lt;/script&gt;&amp;" in page
    assert 'class="machine-warning"' in page and "different machines:" in page and "the ratios compare different hardware" in page
    # the page carries every cell of the text's tables
    t = os_side.side_by_side(load(TCG), [results.from_log(log.read_text())], "tcg-q35", ["os"])
    for rows in (t["context"], t["runs"][0]["clocksources"], t["runs"][0]["other"]):
        for r_ in rows:
            for c in r_:
                assert c in plain(page), c


def test_compare_of_os_runs_alone(capsys, tmp_path):
    r = run_cli(capsys, "compare", OS_FC, OS_FC, "--html", tmp_path / "c.html")
    assert r.code == 0, r.err
    assert "OS runs without a bare run" in r.out
    line = next(l for l in r.out.split("\n") if l.startswith("clock_gettime(CLOCK_MONOTONIC) (syscall) on tsc, p50"))
    p50 = records.one(recs(OS_FC), "os_latency", clocksource="tsc", call="clock_gettime(CLOCK_MONOTONIC)", path="syscall")["p50_ns"]
    assert line.split()[-6:] == [f"{p50:.1f}", "ns", "1.0x", f"{p50:.1f}", "ns", "1.0x"]
    assert (tmp_path / "c.html").read_text().count("<tr>") > 20


def test_compare_of_an_os_run_with_nothing_to_compare(capsys, tmp_path):
    log = tmp_path / "empty-os.log"
    log.write_text(log_of(SCHEMA_OS, MACHINE, SUMMARY))
    r = run_cli(capsys, "compare", TCG, log)
    assert r.code == errors.BAD_INPUT and "holds nothing to compare" in r.err


def test_report_of_an_os_log_without_html(capsys, tmp_path):
    r = run_cli(capsys, "report", OS_FC, "--out", tmp_path / "out", "--no-html", "--junit", tmp_path / "j.xml")
    assert r.code == 0, r.err
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["tool"] == "clockbench-os" and saved["os"]["kernel"] == "6.18.44-fc-v657" and len(saved["os_latency"]) == 24
    assert "OS clocks measured" in (tmp_path / "j.xml").read_text()


def test_report_of_an_os_log_with_its_page(capsys, tmp_path):
    r = run_cli(capsys, "report", OS_FC, "--out", tmp_path / "out")
    assert r.code == 0, r.err
    assert "0 plots" in r.out and not list((tmp_path / "out").glob("*.png"))
    page = (tmp_path / "out" / "report.html").read_text()
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    assert title.startswith("clockbench-os: AMD EPYC under KVMKVMKVM, through Linux 6.18.44-fc-v657")
    for section in ("os-context", "os-clocksources", "os-claims", "checks", "terminal"):
        assert f'id="{section}"' in page, section
    text = text_of(page)
    assert "clocksource tsc (in use at the start: every call)" in text and "clocksource kvm-clock" in text
    rate = records.one(recs(OS_FC), "os_tsc_rate", clocksource="tsc")
    assert f"TSC rate against CLOCK_MONOTONIC_RAW: {rate['hz']:.0f} Hz \u00b1{rate['uncertainty_ppm']:.2g} ppm" in text
    pinned = records.one(recs(OS_FC), "os")
    assert f"pinned to CPU {pinned['pinned_cpu']} of {pinned['cpus_online']}" in text
    claim = records.one(recs(OS_FC), "os_claim", what="tsc detected")
    assert f"tsc detected {claim['detail']} {claim['hz'] / 1e6:.3f} MHz" in text
    assert "OS clocks monotonic" in text and 'class="status passed"' in page
    syscall = records.one(recs(OS_FC), "os_latency", clocksource="kvm-clock", call="clock_gettime(CLOCK_MONOTONIC)", path="syscall")
    assert f"clock_gettime(CLOCK_MONOTONIC) syscall 20000 {syscall['min_ns']:.1f} ns {syscall['p50_ns']:.1f} ns" in text
    assert "Sequential reads" not in page and 'id="verdict"' not in page


def test_report_of_a_bare_log_with_the_os_side(capsys, tmp_path):
    r = run_cli(capsys, "report", TCG, "--os", OS_FC, "--out", tmp_path / "out")
    assert r.code == 0, r.err
    page = (tmp_path / "out" / "report.html").read_text()
    part = page.split('<section id="bare-and-os">')[1].split("</section>")[0]
    assert "<h2>Bare and through the OS</h2>" in part and 'class="machine-warning"' in part
    assert 'href="#bare-and-os"' in page
    t = os_side.side_by_side(load(TCG), [load(OS_FC)], "tcg-q35", ["os-firecracker-host"])
    for c in t["runs"][0]["clocksources"][1]:
        assert c in plain(part), c
    # the wrong way round, or not an OS run
    assert run_cli(capsys, "report", OS_FC, "--os", OS_FC, "--out", tmp_path / "x").code == errors.BAD_INPUT
    r = run_cli(capsys, "report", TCG, "--os", KVM, "--out", tmp_path / "y", "--no-html")
    assert r.code == errors.BAD_INPUT and "not a clockbench-os run" in r.err


def test_the_page_without_the_os_side_has_no_such_section(tmp_path):
    res = load(TCG)
    report.augment(res, TCG.read_text())
    res["allan"] = []
    report.render_html(res, [], tmp_path / "p.html")
    page = (tmp_path / "p.html").read_text()
    assert "bare-and-os" not in page


# ------------------------------------------------------------ in a browser


def test_the_os_side_in_chromium(tmp_path):
    res = load(TCG)
    report.augment(res, TCG.read_text())
    res["allan"] = []
    other = OS_TCG if OS_TCG.exists() else OS_FC
    t = os_side.side_by_side(res, [load(other)], "tcg-q35", [other.stem])
    report.render_html(res, [], tmp_path / "report.html", os_table=t)
    dom = browser(tmp_path / "report.html", tmp_path)
    assert body_data(dom, "loaded") == "yes" and body_data(dom, "errors") == ""
    part = dom.split('<section id="bare-and-os">')[1].split("</section>")[0]
    shown = plain(part)
    assert t["machines"][0]["line"] in shown
    assert part.count("<table") == 3 and part.count("<tr>") == sum(len(x) for x in (t["context"], t["runs"][0]["clocksources"],
                                                                                    t["runs"][0]["other"]))
    for rows in (t["runs"][0]["clocksources"], t["runs"][0]["other"]):
        for r in rows:
            assert all(c in shown for c in r), r
    # and an OS run's own page
    osr = load(OS_FC)
    report.augment(osr, OS_FC.read_text())
    report.render_html(osr, [], tmp_path / "os.html")
    dom = browser(tmp_path / "os.html", tmp_path)
    assert body_data(dom, "loaded") == "yes" and body_data(dom, "errors") == ""
    assert "clocksource kvm-clock" in text_of(dom) and dom.count('id="clocksource-') == 2


def test_the_tsc_is_set_beside_the_read_linux_makes():
    # rdtsc_ordered(): RDTSCP, else LFENCE;RDTSC, else (no bare figure for those) RDTSC
    assert os_side.bare_counter("tsc", {"latency": {"rdtsc": {}, "rdtscp": {}, "lfence;rdtsc": {}}}) == "rdtscp"
    assert os_side.bare_counter("tsc", {"latency": {"rdtsc": {}, "lfence;rdtsc": {}}}) == "lfence;rdtsc"
    assert os_side.bare_counter("tsc", {"latency": {"rdtsc": {}}}) == "rdtsc"


def test_the_sequential_reads_tables_reach_the_results():
    res = load(OS_TCG)
    tables = {(h["clocksource"], h["call"], h["path"]): h for h in res["os_histograms"]}
    for r in records.of_type(recs(OS_TCG), "os_resolution"):
        h = tables[r["clocksource"], r["call"], r["path"]]
        pairs = list(zip(h["bins"][::2], h["bins"][1::2]))
        assert len(pairs) == min(r["distinct"], 256)
        assert sum(c for _, c in pairs) <= r["deltas"]
        assert pairs == sorted(pairs) and (r["zero_deltas"] == 0 or pairs[0] == (0, r["zero_deltas"]))
