"""CI formats (tools/clockbench/report/ci_formats.py) from saved logs through
`clockbench report LOG --junit/--tap/--markdown`: JUnit XML parsed with
xml.etree and counted against the log's own check records and summary, TAP
read back with a small TAP 13 parser, Markdown for an issue. No QEMU: the
fixtures are real runs, and failed and crashed variants of them."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from helpers.logs import EPYC, KVM, LOGS, TCG, crashed_log, cut_inside_an_array, failed_log
from helpers.tool import run_cli
from clockbench.report import ci_formats
from clockbench.records import records, results


def checks_of(text: str) -> list[dict]:
    return records.of_type(records.parse_log(text).records, "check")


def summary_of(text: str) -> dict:
    return records.one(records.parse_log(text).records, "summary")


# --- a small TAP 13 reader, enough to hold the output to the format ---

TAP_LINE = re.compile(r"^(ok|not ok) (\d+)(?: - ((?:[^#\\]|\\.)*?))?\s*(?:# (SKIP|TODO)\b ?(.*))?$")


def parse_tap(text: str) -> dict:
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "TAP version 13", lines[0]
    plan = re.fullmatch(r"1\.\.(\d+)(?: # .*)?", lines[1])
    assert plan, f"no plan on the second line: {lines[1]!r}"
    tests, i = [], 2
    while i < len(lines):
        m = TAP_LINE.match(lines[i])
        assert m, f"not a TAP test line: {lines[i]!r}"
        t = {"ok": m.group(1) == "ok", "n": int(m.group(2)), "desc": re.sub(r"\\(.)", r"\1", m.group(3) or ""),
             "directive": m.group(4), "reason": m.group(5), "yaml": {}}
        i += 1
        if i < len(lines) and lines[i] == "  ---":
            i += 1
            while lines[i] != "  ...":
                key, _, value = lines[i].strip().partition(": ")
                t["yaml"][key] = json.loads(value) if value.startswith('"') else value
                i += 1
            i += 1
        tests.append(t)
    assert [t["n"] for t in tests] == list(range(1, len(tests) + 1)), "tests are numbered 1..N in order"
    assert len(tests) == int(plan.group(1)), "the plan counts the tests"
    return {"plan": int(plan.group(1)), "tests": tests}


def report(capsys, tmp_path, text: str, *formats: str):
    log = tmp_path / "run.log"
    log.write_text(text)
    args = ["report", log, "--out", tmp_path / "out", "--no-html"]
    for f in formats:
        args += [f"--{f}", tmp_path / f"out.{f}"] if f != "tap-" else ["--tap"]
    return run_cli(capsys, *args)


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_junit_has_one_case_per_check(capsys, tmp_path, log):
    text = log.read_text()
    r = report(capsys, tmp_path, text, "junit")
    assert r.code == 0, r.err
    root = ET.parse(tmp_path / "out.junit").getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    checks, s = checks_of(text), summary_of(text)
    cases = suite.findall("testcase")
    assert len(cases) == len(checks) == s["pass"] + s["fail"] + s["skip"]
    assert suite.get("tests") == str(len(checks)) and suite.get("failures") == "0" and suite.get("errors") == "0"
    assert suite.get("skipped") == str(s["skip"]) == str(len(suite.findall("testcase/skipped")))
    assert len({c.get("name") for c in cases}) == len(cases), "test case names are unique"
    for case, check in zip(cases, checks):
        assert case.get("name").startswith(check["name"])
        skipped = case.find("skipped")
        assert (skipped is not None) == (check["result"] == "SKIP")
        if skipped is not None:
            assert skipped.get("message") == check["detail"]
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    m = records.one(records.parse_log(text).records, "machine")
    build = records.one(records.parse_log(text).records, "schema")["build"]
    assert props["build"] == build and props["hypervisor"] == m["hypervisor"] and props["status"] == "0"


def test_junit_of_a_failed_run_carries_the_failures(capsys, tmp_path):
    r = report(capsys, tmp_path, failed_log(), "junit", "tap", "markdown")
    assert r.code == 1
    root = ET.parse(tmp_path / "out.junit").getroot()
    assert root.get("failures") == "2" and root.get("errors") == "0"
    failures = {c.get("name"): c.find("failure") for c in root.iter("testcase") if c.find("failure") is not None}
    assert set(failures) == {"hpet", "ACPI tables"}
    assert failures["hpet"].get("message") == 'made to fail by the test <&> "hpet"' == failures["hpet"].text
    tap = parse_tap((tmp_path / "out.tap").read_text())
    bad = [t for t in tap["tests"] if not t["ok"]]
    assert [t["desc"] for t in bad] == ["ACPI tables", "hpet"]
    assert bad[1]["yaml"] == {"message": 'made to fail by the test <&> "hpet"', "severity": "fail"}
    md = (tmp_path / "out.markdown").read_text()
    s = records.one(records.parse_log(failed_log()).records, "summary")
    assert s["fail"] == 2 and f"failed ({s['pass']} passed, 2 failed, {s['skip']} skipped)" in md
    assert '- **hpet**: made to fail by the test &lt;&amp;&gt; "hpet"' in md


def test_tap_to_standard_output_alone(capsys, tmp_path):
    text = EPYC.read_text()
    r = report(capsys, tmp_path, text, "tap-")
    assert r.code == 0
    tap = parse_tap(r.out)  # nothing but TAP on standard output
    checks, s = checks_of(text), summary_of(text)
    assert tap["plan"] == len(checks)
    assert sum(t["directive"] == "SKIP" for t in tap["tests"]) == s["skip"]
    assert all(t["ok"] for t in tap["tests"])
    skip = next(t for t in tap["tests"] if t["directive"] == "SKIP")
    assert skip["reason"] == next(c["detail"] for c in checks if c["result"] == "SKIP")
    assert "results.json" in r.err


def test_a_crashed_run_is_an_error_case(capsys, tmp_path):
    text = crashed_log()
    r = report(capsys, tmp_path, text, "junit", "tap", "markdown")
    assert r.code == 3
    root = ET.parse(tmp_path / "out.junit").getroot()
    cases = root.findall("testsuite/testcase")
    assert len(cases) == len(checks_of(text)) + 1 and root.get("errors") == "1"
    err = cases[-1].find("error")
    assert cases[-1].get("name") == "run ended" and "CPU exception 6 (invalid opcode)" in err.get("message")
    tap = parse_tap((tmp_path / "out.tap").read_text())
    assert not tap["tests"][-1]["ok"] and tap["tests"][-1]["yaml"]["severity"] == "error"
    md = (tmp_path / "out.markdown").read_text()
    assert md.startswith("### clockbench: AuthenticAMD QEMU TCG CPU version 2.5+: crashed")
    assert "> **the run crashed: CPU exception 6" in md


def test_an_incomplete_log_is_an_error_case(capsys, tmp_path):
    r = report(capsys, tmp_path, cut_inside_an_array(), "junit", "tap")
    assert r.code == 4
    root = ET.parse(tmp_path / "out.junit").getroot()
    assert root.get("errors") == "1"
    assert "no summary record" in root.find("testsuite/testcase[@name='run ended']/error").get("message")
    assert parse_tap((tmp_path / "out.tap").read_text())["tests"][-1]["desc"] == "run ended"


def test_odd_and_hostile_check_records(capsys, tmp_path):
    """Control characters XML cannot carry, '#' in a TAP description, a
    check cut for length, repeated names: every file still parses."""
    lines = TCG.read_text().split("\n")
    at = next(i for i, l in enumerate(lines) if '"type":"summary"' in l)
    odd = [{"type": "check", "name": "weird \x01\x1b[31m # name", "result": "PASS", "detail": "a\x00b # c \\ d"},
           {"type": "check", "name": "cut", "truncated": True},
           {"type": "check", "name": "twice", "result": "PASS", "detail": "x"},
           {"type": "check", "name": "twice", "result": "PASS", "detail": "x"},
           {"type": "check", "name": 7, "result": "SKIP", "detail": ["not", "text"]}]
    lines[at:at] = ["@cb " + json.dumps(o) for o in odd]
    r = report(capsys, tmp_path, "\n".join(lines), "junit", "tap", "markdown")
    assert r.code == 0, r.err
    root = ET.parse(tmp_path / "out.junit").getroot()
    names = [c.get("name") for c in root.iter("testcase")]
    assert len(names) == len(set(names)) and "twice #1" in names and "twice #2" in names
    cut = next(c for c in root.iter("testcase") if c.get("name") == "cut")
    assert "incomplete" in cut.find("failure").get("message")
    tap = parse_tap((tmp_path / "out.tap").read_text())
    weird = next(t for t in tap["tests"] if t["desc"].startswith("weird"))
    assert weird["ok"] and weird["directive"] is None and "# name" in weird["desc"]
    assert len(tap["tests"]) == len(names)


def test_a_passed_run_in_markdown(capsys, tmp_path):
    r = report(capsys, tmp_path, KVM.read_text(), "markdown")
    assert r.code == 0
    md = (tmp_path / "out.markdown").read_text()
    recs = records.parse_log(KVM.read_text()).records
    s, prof = records.one(recs, "summary"), records.one(recs, "profile")
    hpet = records.one(recs, "latency", counter="hpet")["p50_ns"]
    m = records.one(recs, "machine")  # the host the fixture was made on: its CPU as the image names it
    assert md.startswith(f"### clockbench: {m['vendor']} {m['brand']}: passed ({s['pass']} passed, 0 failed, {s['skip']} skipped)")
    assert "| hypervisor | KVMKVMKVM |" in md and f"| TSC | {round(prof['tsc_hz'])} Hz (measured against hpet) |" in md
    assert f"| hpet | {hpet:.1f} ns |" in md and "**Failed checks:**" not in md
    assert f"<details><summary>All {s['pass'] + s['skip']} checks</summary>" in md


def test_formats_from_a_results_file_and_a_qr_code_agree(capsys, tmp_path):
    res = results.from_log(KVM.read_text(), "kvm")
    assert ci_formats.junit(results.load_any(json.dumps(res), "r")) == ci_formats.junit(res)
    qr = {"format": "clockbench-qr", "build": "b", "cpu": "V Brand", "hypervisor": None, "counters": [],
          "summary": {"pass": 1, "fail": 0, "skip": 0, "status": "passed"}}
    from_qr = results.load_any(json.dumps(qr), "qr")
    assert results.outcome(from_qr) == (0, "")
    assert parse_tap(ci_formats.tap(from_qr))["plan"] == 0  # a QR code carries counts, not the checks


def test_run_offers_the_formats(capsys):
    r = run_cli(capsys, "run", "--help")
    flat = " ".join(r.out.split())
    assert r.code == 0 and "--junit FILE" in flat and "--tap [FILE]" in flat and "--markdown FILE" in flat


def test_a_decoded_qr_code_gives_its_failed_and_skipped_checks(capsys, tmp_path):
    """The summary screen's QR code names failed and skipped checks (not
    passed ones, not details): a photo of a laptop's screen still gives CI
    the failures."""
    payload = ("CB1;b=x;cpu=GenuineIntel Core;fms=6.85.4;hv=-;prof=quick;tsc_hz=2000000000;tsc_src=hpet;c=tsc,100,100,1,yes;"
               "sum=5,4,1;st=failed;fail=hpet,monotonic,+2;skip=invariant TSC")
    r = run_cli(capsys, "decode", "--text", payload, "--out", tmp_path / "qr.json")
    assert r.code == 0, r.err
    r = run_cli(capsys, "report", tmp_path / "qr.json", "--no-html", "--out", tmp_path / "out", "--junit", tmp_path / "j.xml")
    assert r.code == 1 and "4 checks failed: hpet, monotonic, 2 more failed checks" in r.err
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "3", "1")
    assert [c.get("name") for c in root.iter("testcase")] == ["hpet", "monotonic", "2 more failed checks", "invariant TSC"]
