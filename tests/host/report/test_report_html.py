"""The HTML report (tools/clockbench/report/report.py, plots.py, templates/): every
fixture log rendered and loaded in headless Chromium; a crashed, an
incomplete and a cut run; hostile strings escaped; numbers rounded to their
uncertainty; the Allan deviation against a known answer; odd records never
cost the page."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clockbench.records import figures, records, results
from clockbench.report import plots, report
from helpers.browser import CHROMIUM, dom as browser_dom
from helpers.paths import FIXTURES, ROOT
from helpers.tool import need_tool

# the image's logs; a clockbench-os log (os-*.log) has a page of its own,
# without plots (test_os_side.py)
LOGS = sorted(p for p in FIXTURES.glob("*.log") if not p.name.startswith("os-"))
SECTIONS = ("verdict", "machine", "read-cost", "sequential", "frequency", "stolen", "monotonicity", "rtc", "checks", "terminal")


def allantools_present() -> bool:
    try:
        plots.allantools()
    except ImportError:
        return False
    return True


def build(text: str, out: Path, log_path: Path | None = None) -> tuple[dict, list[Path], list[str], str]:
    res = results.from_log(text, source=str(log_path or "test.log"))
    made, notes = report.write(res, out, text, log_path)
    return res, made, notes, (out / "report.html").read_text()


def page_only(text: str, out: Path, log_path: Path | None = None) -> tuple[dict, str]:
    """The page without its figures (drawing them takes seconds), for
    tests of what the page says."""
    res = results.from_log(text, source=str(log_path or "test.log"))
    report.augment(res, text)
    res["allan"] = []
    out.mkdir(parents=True, exist_ok=True)
    meta = report.run_meta(log_path)
    report.render_html(res, [], out / "report.html", date=report.run_date(log_path, meta), meta=meta)
    return res, (out / "report.html").read_text()


def browser(page: Path, tmp: Path) -> str:
    """The page's DOM after Chromium loaded it, with the probe's findings
    (helpers/browser.py: injected into a copy only, the page itself has no script)."""
    need_tool("chromium", CHROMIUM)
    return browser_dom(page.read_text(), tmp)


def body_data(dom: str, key: str) -> str:
    m = re.search(rf'data-{key}="([^"]*)"', dom)
    assert m, f"the probe did not run: no data-{key} in the DOM"
    return m.group(1)


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_fixtures_are_logs_and_generated_output_is_not_kept():
    assert len(LOGS) >= 2, "run `make fixtures`"
    assert "tests/fixtures/*/" in (ROOT / ".gitignore").read_text().split("\n")
    if not (ROOT / ".git").exists() or not shutil.which("git"):
        return
    git = lambda *a: set(subprocess.run(["git", "-C", str(ROOT), "ls-files", *a, "tests/fixtures"],  # noqa: E731
                                        capture_output=True, text=True, check=True).stdout.split())
    kept = git() - git("--deleted")
    assert kept and all(p.endswith(".log") for p in kept), sorted(p for p in kept if not p.endswith(".log"))


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_every_fixture_renders_and_loads_in_chromium(log, tmp_path):
    need_tool("allantools", allantools_present())
    res, made, notes, page = build(log.read_text(), tmp_path / "out", log)
    stems = {p.stem for p in made}
    # the quick profile has two sub-windows (one, when a gap cut one short): the frequency figure says so instead
    assert stems == set(plots.PLOTS) - {"frequency"}, notes
    assert 1 <= len(res["stability"]) <= 2 and f"No plot: only {len(res['stability'])} sub-window{'' if len(res['stability']) == 1 else 's'}" in page
    for p in made:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["format"] == "clockbench-results" and saved["allan"] and saved["terminal"]["sections"]

    dom = browser(tmp_path / "out" / "report.html", tmp_path)
    assert body_data(dom, "loaded") == "yes"
    assert body_data(dom, "errors") == ""
    images = body_data(dom, "images").split(",")
    assert images == ["ok"] * len(made)
    for section in SECTIONS:
        assert f'id="{section}"' in dom, section
    title = re.search(r"<title>(.*?)</title>", dom).group(1)
    m = res["machine"]
    assert m["brand"] in title and "run.log" not in title and re.search(r"\d{4}-\d\d-\d\d", title)
    # the verdict carries the image's advice and the TSC's measured frequency
    for counter, advice in report.verdict_text(report.sections(report.terminal_text(log.read_text())))["advice"].items():
        assert advice in text_of(dom), counter
    tsc = next(f for f in res["frequency"] if f["counter"] == "tsc" and f["reference"] == "hpet")
    assert f"TSC {report.hz(tsc['hz'], tsc['uncertainty_ppm'])}" in text_of(dom)
    # the terminal's sections are all on the page
    for s in report.sections(report.terminal_text(log.read_text())):
        if s["title"] != "Start":
            assert f"== {s['title']} ==" in dom, s["title"]


def test_the_title_names_the_machine_and_the_date_of_a_kept_run(tmp_path):
    run = tmp_path / "2026-11-21T16-30-05-abc"
    run.mkdir()
    (run / "run.log").write_text(LOGS[0].read_text())
    (run / "metadata.json").write_text(json.dumps({"started": "2026-11-21T16:30:05+00:00", "host": {"name": "box", "cpu": "AMD EPYC 9654"},
                                                   "qemu": {"version": "7.2.0", "machine": "q35", "accel": "kvm"}}))
    res, page = page_only(LOGS[0].read_text(), tmp_path / "out", run / "run.log")
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    assert title == f"clockbench: {res['machine']['brand']} under {res['machine']['hypervisor']}, 2026-11-21 16:30 UTC"
    assert "box (AMD EPYC 9654)" in page and "version 7.2.0, machine q35, accel kvm" in page


def test_the_kvm_fixture_warns_of_a_trapped_rdtsc_and_an_emulated_cpu(tmp_path):
    log = FIXTURES / "kvm-q35.log"
    if not log.exists():
        pytest.skip("no KVM fixture (`make fixtures` on a machine with /dev/kvm)")
    res, page = page_only(log.read_text(), tmp_path / "out", log)
    warn = text_of(page.split('id="warnings"')[1].split("</section>")[0]).replace("&#39;", "'")
    recs = records.parse_log(log.read_text()).records
    lat = records.one(recs, "latency", counter="rdtsc")
    cost = figures.tsc_read_cost(results.from_log(log.read_text(), str(log)))
    if lat.get("below_step"):  # the batch's figure, in the words every output uses (figures.read_cost)
        batch = float(re.search(r"([\d.]+) ns a read by the batch$", cost).group(1))  # the image rounds its exact figure
        assert abs(batch - lat["batch_ns_per_read"]) <= 0.0051 and f"intercept RDTSC: a read is {cost}," in warn, (cost, warn)
    else:
        assert f"intercept RDTSC: a read costs {lat['p50_ns']:.1f} ns (p50)" in warn
    assert "CPU seems emulated" in warn and "KVMKVMKVM" in warn
    # stolen time and the discontinuities the log holds
    assert "gaps over" in page
    gaps = [d for d in records.of_type(recs, "discontinuity") if d["kind"] in ("gap", "too_long")]
    if gaps:
        # the gaps line as report.gaps_said words it, the same on the page
        assert report.gaps_said(res, len(gaps)) in page.replace("&#39;", "'")


def test_the_images_own_notes_are_warnings(tmp_path):
    _, page = page_only((FIXTURES / "tcg-q35.log").read_text(), tmp_path / "out")
    warn = text_of(page.split('id="warnings"')[1].split("</section>")[0]).replace("&#39;", "'")
    # joined across the console's line break, and said once
    assert warn.count("invariant") == 1
    assert "Note: no invariant-TSC bit: the TSC rate may change with P-states or stop in deep C-states" in warn


def test_a_screenshot_is_not_blank(tmp_path):
    need_tool("chromium", CHROMIUM)
    from PIL import Image

    build(LOGS[0].read_text(), tmp_path / "out", LOGS[0])
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,3000",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", (tmp_path / "out" / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    im = Image.open(shot).convert("L")
    assert im.size == (1200, 3000)
    lo, hi = im.getextrema()
    assert hi - lo > 200  # text and plots, not an empty page
    assert len(set(im.resize((60, 150)).getdata())) > 20


def test_a_section_the_page_does_not_know_is_shown_as_printed(tmp_path):
    text = LOGS[0].read_text().replace("\n== Verdict ==", "\n== Something new ==\n  widgets: 1000, late by 2 us\n\n== Verdict ==", 1)
    _, page = page_only(text, tmp_path / "out")
    part = page.split('<section id="term-something-new">')[1].split("</section>")[0]
    assert "<h2>Something new</h2>" in part and "widgets: 1000, late by 2 us" in part


def test_hostile_strings_are_escaped(tmp_path):
    evil = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'
    text = LOGS[0].read_text()
    text = re.sub(r'("type":"machine","vendor":"[^"]*","brand":)"[^"]*"', lambda m: m.group(1) + json.dumps(evil), text, count=1)
    text = re.sub(r'("type":"check","name":)"[^"]*"', lambda m: m.group(1) + json.dumps(evil), text, count=1)
    text = text.replace("\n== Verdict ==\n", f"\nNote: {evil}\n== Verdict ==\n", 1)
    _, page = page_only(text, tmp_path / "out")
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 3  # title, check, note
    if CHROMIUM:
        dom = browser(tmp_path / "out" / "report.html", tmp_path)
        # the hostile script never ran (it would set the title), and the
        # only script element is the test's own probe
        assert "<title>pwned</title>" not in dom and "&lt;script&gt;document.title" in dom
        assert dom.count("<script") == 1
        assert len(re.findall(r"<img ", dom)) == len(list((tmp_path / "out").glob("*.png")))
        assert body_data(dom, "errors") == ""


def crashed_log() -> str:
    """A run that faulted in the middle: the fixture's first half, then the
    image's fault report as a real crash=ud2 run prints it."""
    text = LOGS[0].read_text()
    cut = text.index("\n== Frequency and drift")
    return text[:cut] + """
FAULT: CPU exception 6: invalid opcode (#UD)
  error code 0x0  rip 000000000010ac57  cr2 0000000000000000  rflags
    0000000000000046
  rax 0000000000000000 rbx 000000000013e03b rcx 0000000000000001 rdx
    0000000000000000
@cb {"type":"fault","vector":6,"name":"invalid opcode (#UD)","error_code":0,"rip":"0x10ac57","cr2":"0x0"}
clockbench: run ended: crashed (status 3). Halted; it is safe to power off.
"""


def first_section(page: str) -> str:
    return re.search(r'<section id="([a-z-]+)"', page).group(1)


def test_a_crashed_run_says_so_first(tmp_path):
    res, page = page_only(crashed_log(), tmp_path / "out")
    assert first_section(page) == "problems"
    problems = page.split('id="problems"')[1].split("</section>")[0]
    assert "The run crashed: CPU exception 6, invalid opcode (#UD), at rip 0x10ac57" in problems
    assert "rax 0000000000000000" in problems  # the register dump, as printed
    assert 'class="status crashed"' in page
    # what ran before the fault is still there
    assert "rdtsc" in page.split('id="read-cost"')[1] and res["latency"]


def test_failed_checks_are_on_top_and_highlighted(tmp_path):
    text = LOGS[0].read_text()
    text = text.replace('"name":"monotonic","result":"PASS","detail":"hpet: no backward step',
                        '"name":"monotonic","result":"FAIL","detail":"hpet: 3 backward step', 1)
    text = re.sub(r'("type":"summary","pass":)(\d+),"fail":0', lambda m: f'{m.group(1)}{int(m.group(2)) - 1},"fail":1', text)
    text = text.replace('"status":"passed"}', '"status":"failed"}')
    _, page = page_only(text, tmp_path / "out")
    assert first_section(page) == "problems" and 'class="status failed"' in page
    assert "1 check failed" in page and "monotonic: hpet: 3 backward step in the sequential reads" in text_of(page)
    checks = page.split('id="checks"')[1]
    first_row = re.search(r"<tr class=\"([^\"]*)\"><td class=\"result-(\w+)\">", checks)
    assert first_row.groups() == ("bad", "FAIL")


def test_an_incomplete_run_says_so_first(tmp_path):
    text = LOGS[0].read_text()
    _, page = page_only(text[: len(text) // 2], tmp_path / "out")
    assert first_section(page) == "problems"
    problems = text_of(page.split('id="problems"')[1].split("</section>")[0])
    assert "Incomplete run: the log ends before the run did" in problems
    assert "The last section it reached" in problems
    assert 'class="status incomplete"' in page


def test_a_record_cut_inside_an_array_costs_a_note_not_the_page(tmp_path):
    need_tool("allantools", allantools_present())
    lines = LOGS[0].read_text().split("\n")
    i = next(k for k, l in enumerate(lines) if '"type":"residuals"' in l and '"reference":"hpet"' in l and '"part":1' in l)
    lines[i] = lines[i][: lines[i].index('"resid_ps":[') + 30]  # cut inside the array
    j = next(k for k, l in enumerate(lines) if '"type":"histogram"' in l)
    lines[j] = lines[j][:120]
    res, made, notes, page = build("\n".join(lines), tmp_path / "out")
    assert (tmp_path / "out" / "report.html").stat().st_size > 50_000
    assert {p.stem for p in made} >= {"read_cost", "sequential_reads", "residuals", "allan"}
    assert any("residuals record (counter tsc, reference hpet)" in n and "Allan" in n for n in notes)
    assert "tsc vs hpet" not in {a["reference"] for a in res["allan"]} and len(res["allan"]) == 2
    assert len(res["problems"]) == 2
    assert "2 records could not be read" in page and 'id="notes"' in page


def test_numbers_are_rounded_to_their_uncertainty():
    assert report.pm(-0.036481, 0.296423) == "-0.04 \u00b1 0.30 ppm"
    assert report.pm(0.150847, 0.0213) == "+0.151 \u00b1 0.021 ppm"
    assert report.pm(12.5, 3.0) == "+12.5 \u00b1 3.0 ppm"
    assert report.pm(1234.0, 56.0, "ns") == "+1234 \u00b1 56 ns"
    assert report.hz(2596120077.904, 0.213749) == "2596.12008 MHz"
    assert report.hz(2596120121.185, 0.0051) == "2596.120121 MHz"
    assert report.ns(401088.535) == "401 \u00b5s" and report.ns(9.7) == "9.70 ns" and report.ns(2.5e9) == "2.50 s"
    assert report.unc(0.213749) == "\u00b10.21 ppm"
    assert report.sig(0.000123456, 2) == "0.00012" and report.sig(0, 3) == "0"


def test_the_page_shows_no_unrounded_figure(tmp_path):
    _, page = page_only(LOGS[0].read_text(), tmp_path / "out")
    # the terminal's own text (in <details>) is verbatim; everything else is rounded
    visible = text_of(re.sub(r"<details.*?</details>", "", page.split('id="terminal"')[0], flags=re.S))
    # a frequency in MHz carries as many digits as its uncertainty allows
    long = re.findall(r"\d+\.\d{5,}(?![\d])(?! MHz)", visible)
    assert not long, long[:5]
    assert "0.150847" not in visible and "2596120077.904" not in visible


def test_frequency_over_time_is_drawn_with_enough_sub_windows(tmp_path):
    text = LOGS[0].read_text()
    # a standard profile's sub-windows, each as the image writes them
    stab = "\n".join('@cb {"type":"stability","counter":"tsc","reference":"hpet","start_s":%d.000,"length_s":1.000,'
                     '"hz":2596120000.0,"ppm_vs_window":%.6f,"stderr_ppm":0.05,"samples":500}' % (k, 0.1 * math.sin(k))
                     for k in range(60))
    text = re.sub(r'@cb \{"type":"stability".*\n', "", text)
    text = text.replace("\n== Verdict ==", "\n" + stab + "\n== Verdict ==", 1)
    res, made, notes, page = build(text, tmp_path / "out")
    assert "frequency" in {p.stem for p in made} and len(res["stability"]) == 60
    assert 'id="fig-frequency"' in page and "No plot: only" not in page


def test_allan_deviation_of_white_phase_noise_is_the_known_answer():
    need_tool("allantools", allantools_present())
    import numpy as np

    rng = np.random.default_rng(1)
    sigma_ps, step_ms, n = 1000.0, 16, 4096
    res = {"residuals": [{"type": "residuals", "counter": "tsc", "reference": "hpet", "t_ms": [k * step_ms for k in range(n)],
                          "resid_ps": [float(x) for x in rng.normal(0, sigma_ps, n)]}]}
    notes: list[str] = []
    (a,) = plots.allan_series(res, notes)
    assert not notes and a["tau0_s"] == pytest.approx(0.016)
    # white phase noise: sigma_y(tau)^2 = 3 sigma_x^2 / tau^2
    expected = math.sqrt(3) * sigma_ps * 1e-12 / 0.016
    assert a["tau_s"][0] == pytest.approx(0.016) and a["adev"][0] == pytest.approx(expected, rel=0.1)
    k = a["tau_s"].index(pytest.approx(0.128))
    assert a["adev"][0] / a["adev"][k] == pytest.approx(8, rel=0.25)  # a slope of -1


def test_too_few_residuals_give_a_note_not_an_allan_plot(tmp_path):
    need_tool("allantools", allantools_present())
    res = {"residuals": [{"type": "residuals", "counter": "tsc", "reference": "pit", "t_ms": [1, 2, 3], "resid_ps": [1, 2, 3]}]}
    notes: list[str] = []
    assert plots.allan_series(res, notes) == []
    assert "3 residual samples" in notes[0]
    with pytest.raises(plots.TooLittle):
        plots.allan({**res, "allan": []}, tmp_path / "a.png", notes)


def test_a_results_file_and_a_qr_code_render_too(tmp_path):
    res, _, _, _ = build(LOGS[0].read_text(), tmp_path / "a")
    back = results.load_any((tmp_path / "a" / "results.json").read_text(), "results.json")
    made, _ = report.write(back, tmp_path / "b")
    page = (tmp_path / "b" / "report.html").read_text()
    assert 'id="verdict"' in page and len(made) >= 3
    from clockbench.records import decode

    qr = records.one(records.parse(LOGS[0].read_text()), "qr")["payload"]
    res = results.from_qr(decode.parse_payload(qr), "qr")
    made, notes = report.write(res, tmp_path / "c")
    page = (tmp_path / "c" / "report.html").read_text()
    assert [p.stem for p in made] == ["read_cost"] and "only the median is known" in " ".join(notes)
    assert "a results file or a decoded QR code carries no text" in page


# Odd values a record's members might carry: a cut, a garbled or a hostile log.
ODD = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=20), st.lists(st.integers(), max_size=4), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_odd_members_never_cost_the_page(data, tmp_path):
    lines = LOGS[0].read_text().split("\n")
    idx = [k for k, l in enumerate(lines) if l.startswith(records.PREFIX) and '"type":"schema"' not in l]
    for k in data.draw(st.lists(st.sampled_from(idx), min_size=1, max_size=6, unique=True)):
        rec = json.loads(lines[k][len(records.PREFIX):])
        key = data.draw(st.sampled_from(sorted(k2 for k2 in rec if k2 != "type")))
        rec[key] = data.draw(ODD)
        lines[k] = records.PREFIX + json.dumps(rec, allow_nan=True)
    text = "\n".join(lines)
    res = results.from_log(text, "odd.log")
    report.augment(res, text)
    notes: list[str] = []
    res["allan"] = []
    report.render_html(res, [], tmp_path / "odd.html", notes=notes)
    page = (tmp_path / "odd.html").read_text()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")


def test_odd_members_never_cost_the_plots(tmp_path):
    text = LOGS[0].read_text()
    text = re.sub(r'"p50_ns":[0-9.]+', '"p50_ns":"fast"', text, count=2)
    text = re.sub(r'"bins":\[', '"bins":["x",', text, count=1)
    text = re.sub(r'"t_ms":\[\d+,', '"t_ms":[null,', text, count=1)
    text = re.sub(r'"ppm_vs_window":[-0-9.]+', '"ppm_vs_window":[]', text, count=1)
    res, made, notes, page = build(text, tmp_path / "out")
    assert {"read_cost", "sequential_reads", "residuals"} <= {p.stem for p in made}
    assert any("latency record" in n for n in notes) and any("residuals record" in n for n in notes)
    assert page.rstrip().endswith("</html>")


# ------------------------------------------------ what a reader of the page meets

# Run in the page by Chromium (a copy of the page; the page itself has no
# script): at a 1280 px window, the tables that stick out, the main answers'
# place, the sentences of the warnings, the verdict's advice and the answers,
# and the visible text (closed <details> and the terminal's own <pre> left out).
LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  const out = {width: innerWidth, height: innerHeight, wide: [], sentences: [], answers: null, visible: ""};
  const shown = el => { for (let e = el.parentElement; e; e = e.parentElement) if (e.tagName === "DETAILS" && !e.open) return false; return true; };
  for (const t of document.querySelectorAll("table")) {
    const r = t.getBoundingClientRect();
    if (r.right > innerWidth + 0.5) out.wide.push((t.closest("section") || {id: "header"}).id + ": " + Math.round(r.right) + " px: "
                                                + (t.rows[0] ? t.rows[0].innerText.replace(/\\s+/g, " ") : ""));
  }
  for (const el of document.querySelectorAll("#warnings li, td.advice, #answers td"))
    out.sentences.push({kind: el.closest("#warnings") ? "warning" : el.closest("#answers") ? "answer" : "advice", text: el.innerText});
  const a = document.getElementById("answers");
  if (a) { const r = a.getBoundingClientRect(); out.answers = {top: r.top, bottom: r.bottom, shown: shown(a), text: a.innerText}; }
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), parts = [];
  for (let n = walk.nextNode(); n; n = walk.nextNode())
    if (n.parentElement && !n.parentElement.closest("pre, script, style") && shown(n.parentElement)) parts.push(n.textContent);
  out.visible = parts.join(" ");
  const rtc = document.getElementById("rtc");
  if (rtc) out.rtc = {indexed: !!document.querySelector('nav a[href="#rtc"]'), shown: shown(rtc),
                      rows: Array.from(rtc.querySelectorAll("table tr")).slice(1).map(tr => Array.from(tr.cells).map(c => c.innerText)),
                      bare_pre: Array.from(rtc.querySelectorAll("pre")).filter(p => !p.closest("details")).length,
                      right: Math.round(rtc.getBoundingClientRect().right)};
  const pre = document.createElement("pre"); pre.id = "layout-probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


def layout(page: Path, tmp: Path) -> dict:
    need_tool("chromium", CHROMIUM)
    probed = tmp / "layout.html"
    probed.write_text(page.read_text().replace("</body>", LAYOUT_PROBE))
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800", "--hide-scrollbars",
                          "--virtual-time-budget=5000", f"--user-data-dir={tmp / 'profile'}", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', run.stdout, re.S)
    assert m, "the layout probe did not run"
    import html as _html

    return json.loads(_html.unescape(m.group(1)))


def cut_sentences(sentences: list[dict], text: str) -> list[str]:
    """Sentences the page cut short: a bracket or quote left open, a text the
    log's records hold longer, or one that stops at the end of a line of the
    log while the next line goes on with its sentence (same or deeper indent,
    in lower case, not a new "name: ..." item)."""
    recs = records.parse_log(text).records
    whole = [" ".join(str(v).split()) for r in recs for k, v in r.items() if isinstance(v, str) and k in ("text", "advice", "reason", "why", "detail")]
    lines = records.clean(text).split("\n")
    cut = []
    for s in sentences:
        t = " ".join(s["text"].split())
        bare = t[:-1] if t.endswith(".") else t
        if not t:
            continue
        if t.count("(") != t.count(")") or t.count("\u201c") != t.count("\u201d") or t.count('"') % 2:
            cut.append(f"{s['kind']}: unbalanced: {t}")
            continue
        if any(w != bare and w.startswith(bare) and len(bare) > 20 for w in whole):
            cut.append(f"{s['kind']}: the record says more: {t}")
            continue
        tail = bare[-25:]
        for i, line in enumerate(lines[:-1]):
            nxt = lines[i + 1]
            if len(tail) >= 10 and line.rstrip().endswith(tail) and nxt.strip() and not nxt.startswith(records.PREFIX):
                ind, nind = len(line) - len(line.lstrip()), len(nxt) - len(nxt.lstrip())
                if nind >= ind and nxt.strip()[0].islower() and not re.match(r"[a-z_;]+( \w+)?:\s", nxt.strip()):
                    cut.append(f"{s['kind']}: the log goes on with \u201c{nxt.strip()[:30]}\u201d: {t}")
    return cut


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_the_page_fits_says_whole_sentences_and_answers_first(log, tmp_path):
    text = log.read_text()
    res, _ = page_only(text, tmp_path / "out", log)
    got = layout(tmp_path / "out" / "report.html", tmp_path)
    assert got["width"] == 1280
    assert not got["wide"], got["wide"]
    # the main answers: at the top, open, visible without a click or a scroll
    a = got["answers"]
    assert a and a["shown"] and 0 <= a["top"] and a["bottom"] <= got["height"], a
    for what in ("machine", "which clock", "what a TSC read costs", "precise events", "Secure Boot"):
        assert what in a["text"], what
    hv = res["machine"].get("hypervisor")
    if hv == report.TCG_SIGNATURE:
        assert "the figures describe the emulator, not this computer's hardware" in a["text"]
        assert "Linux in this emulator would use" in a["text"]
        assert "unknown" not in a["text"].split("Secure Boot")[1]  # a BIOS boot cannot have it: not applicable
    elif (res.get("cpu_speed") or {}).get("emulated"):  # PVM's KVM here emulates every instruction
        assert "far below any hardware" in a["text"] and "the figures describe the emulator" in a["text"]
    elif hv:
        assert "a virtual machine" in a["text"]
    # the TSC's read cost is the one text (figures.read_cost)
    assert figures.tsc_read_cost(res) in a["text"]
    visible = got["visible"]
    assert "None" not in visible and "0.000001" not in visible
    assert not re.search(r"\bnan\b|\binf\b", visible)
    cut = cut_sentences(got["sentences"], text)
    assert not cut, cut
    # the timer interrupts: a section of its own, in the page's index
    assert 'href="#timers"' in (tmp_path / "out" / "report.html").read_text()
    # the RTC: a section of its own, in the index, its record's fields a table as the page shows it (not raw text)
    rtc, rec = got.get("rtc"), res.get("rtc") or {}
    assert rtc and rtc["indexed"] and rtc["shown"] and rtc["bare_pre"] == 0 and rtc["right"] <= got["width"], rtc
    assert [r[0] for r in rtc["rows"]] == [r["what"] for r in report.rtc_rows(res)] and rtc["rows"], rtc["rows"]
    shown = dict((r[0], r[1]) for r in rtc["rows"])
    assert shown["date and time"].startswith(f"{rec['date']} {rec['time']}"), shown
    assert shown["second edges"].startswith(f"{rec['edges']} timed, {rec['edges_used']} fitted"), shown
    if figures._num(rec.get("ppm_tsc_vs_rtc")) is not None:  # fitted: the reference's crystal against the RTC's, rounded to its +-
        assert figures.pm(rec["ppm_tsc_vs_rtc"], rec["uncertainty_ppm"]) in shown[f"the reference ({rec['reference']}) against the RTC"]
    assert "The RTC" not in [o["title"] for o in report.other_sections(res)]


def test_the_cut_sentence_check_fails_on_the_old_page(tmp_path):
    """The check above fails on what the page used to show: the verdict's
    advice cut at "(CPUID", a note cut at "the standard"."""
    text = (FIXTURES / "tcg-q35.log").read_text()
    old = [{"kind": "advice", "text": "the hypervisor offers no Hyper-V interface (CPUID"},
           {"kind": "warning", "text": "Note: coarse: 1 s between the first and last edge (2 edges); the standard"},
           {"kind": "warning", "text": "Note: coarse: 1 s between the first and last edge (2 edges); the standard."}]
    assert len(cut_sentences(old, text)) == 3
    assert cut_sentences([{"kind": "warning", "text": "Note: coarse: 1 s between the first and last edge (2 edges); the standard "
                                                      "profile's 60 s makes the figure meaningful."}], text) == []


def test_numbers_take_the_unit_their_size_asks_for():
    assert report.hz(1) == "1 Hz" and report.hz(32768) == "32.768 kHz" and report.hz(3579545) == "3.579545 MHz"
    assert report.ns(1000011844.4) == "1.00 s"


def test_the_emulator_fixture_answers_in_words(tmp_path):
    """The image under TCG: cpu_speed answers in words, the verdict and
    Linux's choice say they describe the emulator (a real boot's log)."""
    log = FIXTURES / "tcg-q35-emulator.log"
    text = log.read_text()
    recs = records.parse_log(text).records
    assert records.one(recs, "cpu_speed")["answer"] == "emulator"
    human = "\n".join(report.terminal_text(text))
    assert "Hardware or an emulator? An emulator" in human
    assert "An OS in this emulator: Linux would use" in human
    assert "-> in this emulator: cheap, but not invariant" in human
    tsc = next(v for v in records.of_type(recs, "verdict") if v["counter"] == "tsc")
    assert tsc["qualifier"] == "in this emulator"
    _, page = page_only(text, tmp_path / "out", log)
    assert "in this emulator: cheap, but not invariant" in text_of(page)


def test_the_counters_table_shows_each_counters_role_and_note(tmp_path):
    """A hardware-reduced machine's PM timer (the `counter` record's
    reference_role "set aside" and its note): the counters table says both,
    as Chromium shows the page; the others say their role."""
    text = (FIXTURES / "kvm-q35.log").read_text()  # its counter records carry reference_role
    before = '"name":"acpi_pm","present":true'
    assert before in text
    lines = []
    for line in text.split("\n"):
        if line.startswith("@cb ") and '"type":"counter"' in line and '"name":"acpi_pm"' in line:
            rec = json.loads(line[4:])
            rec.update(reference_role="set aside", note="ignored by the OS (hardware-reduced ACPI)")
            line = "@cb " + json.dumps(rec, separators=(",", ":"))
        lines.append(line)
    page_only("\n".join(lines), tmp_path / "out")
    dom = browser(tmp_path / "out" / "report.html", tmp_path)
    table = re.search(r"<h3>Time counters</h3>\s*<table>(.*?)</table>", dom, re.S).group(1)
    rows = {re.sub(r"<[^>]+>", "", r[0]): [text_of(c).strip() for c in r] for r in
            [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)]}
    assert rows["counter"][-1] == "as a reference"
    assert rows["acpi_pm"][-1] == "set aside: never the default reference; ignored by the OS (hardware-reduced ACPI)"
    assert rows["hpet"][-1] == "ranked reference" and rows["tsc"][-1] == "not a reference"
