"""Property-based tests (hypothesis) of the host tool's commands on input
nobody planned for: arbitrary bytes, and the real fixture logs (QEMU runs)
with bytes flipped, lines cut, dropped or repeated, and record members
replaced by values of any JSON type. `report` (its results and CI part,
and a few full pages with plots), `compare` and the log parser must never
give a traceback or an internal error; the exit status is always one that
docs/output.md lists."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.logs import LOGS, TCG, crashed_log, failed_log
from helpers.tool import documented, run_cli
from clockbench import errors
from clockbench.records import records, results

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SLOW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

LOG_TEXTS = [p.read_text() for p in LOGS] + [failed_log(), crashed_log()]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8)


# The records and members report's results, the CI formats and compare read
READ = {"schema": ("version", "tool", "build"), "machine": ("vendor", "brand", "family", "model", "stepping", "hypervisor"),
        "profile": ("name", "tsc_hz", "tsc_hz_source"), "latency": ("counter", "p50_ns", "p99_ns"),
        "resolution": ("counter", "min_step_ns"), "check": ("name", "result", "detail"),
        "summary": ("pass", "fail", "skip", "status"), "fault": ("vector", "name", "rip"), "histogram": ("counter", "part", "parts", "bins"),
        "residuals": ("part", "parts", "t_ms", "resid_ps")}


@st.composite
def mutated_logs(draw) -> str:
    """A real log (or its failed or crashed variant), changed in one to five ways."""
    lines = draw(st.sampled_from(LOG_TEXTS)).split("\n")
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["member", "member", "member", "flip", "cut", "drop", "repeat", "swap"]))
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "member":
            recs = [k for k, l in enumerate(lines) if l.startswith("@cb ")]
            if draw(st.integers(0, 3)):  # mostly a record and member the tools read, each type alike
                kinds = [t for t in READ if any(f'"type":"{t}"' in lines[k] for k in recs)]
                if kinds:
                    kind_ = draw(st.sampled_from(kinds))
                    recs = [k for k in recs if f'"type":"{kind_}"' in lines[k]]
            if not recs:
                continue
            i = draw(st.sampled_from(recs))
            try:
                rec = json.loads(lines[i][4:])
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            keys = [k for k in rec if k != "type"] or ["x"]
            if draw(st.integers(0, 3)) and isinstance(rec.get("type"), str):
                keys = [k for k in keys if k in READ.get(rec["type"], ())] or keys
            key = draw(st.sampled_from(keys + ["type"] if draw(st.integers(0, 9)) == 0 else keys))
            rec[key] = draw(json_values)
            lines[i] = "@cb " + json.dumps(rec)
        elif kind == "flip":
            line = bytearray(lines[i].encode())
            if line:
                line[draw(st.integers(0, len(line) - 1))] = draw(st.integers(0, 255))
            lines[i] = line.decode("utf-8", "replace")
        elif kind == "cut":
            lines = lines[:i] + [lines[i][: draw(st.integers(0, len(lines[i])))]]
        elif kind == "drop":
            del lines[i]
        elif kind == "repeat":
            lines.insert(i, lines[i])
        else:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        if not lines:
            lines = [""]
    return "\n".join(lines)


def check(r, command: str):
    assert "Traceback" not in r.err, r.err
    assert r.code != errors.INTERNAL, r.err
    assert documented(r.code), (r.code, r.err)
    if r.code >= 64:
        lines = [l for l in r.err.split("\n") if l.strip()]
        assert lines and lines[-1].startswith(f"clockbench {command}: "), r.err


def report_no_html(capsys, data: bytes):
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "in.log"
        log.write_bytes(data)
        r = run_cli(capsys, "report", log, "--out", Path(d) / "out", "--no-html", "--junit", Path(d) / "j.xml", "--tap",
                    Path(d) / "t.tap", "--markdown", Path(d) / "m.md")
        if r.code < 64:
            import xml.etree.ElementTree as ET

            ET.parse(Path(d) / "j.xml")  # whatever was in the log, the XML is well formed
            assert (Path(d) / "t.tap").read_text().startswith("TAP version 13\n")
            json.loads((Path(d) / "out" / "results.json").read_text())
        return r


def compare_with(capsys, data: bytes, first: Path = TCG):
    with tempfile.TemporaryDirectory() as d:
        other = Path(d) / "in.log"
        other.write_bytes(data)
        return run_cli(capsys, "compare", first, other, "--html", Path(d) / "c.html")


@FAST
@given(data=st.binary(max_size=4096))
def test_report_of_arbitrary_bytes(capsys, data):
    r = report_no_html(capsys, data)
    check(r, "report")
    assert r.code in (errors.BAD_INPUT, errors.NEWER_SCHEMA) or data.count(b"@cb ")


@FAST
@given(data=st.binary(max_size=4096))
def test_compare_of_arbitrary_bytes(capsys, data):
    r = compare_with(capsys, data)
    check(r, "compare")
    assert r.code != 0 or b"@cb " in data or data.lstrip()[:1] in (b"{", b"[")


@FAST
@given(text=mutated_logs())
def test_report_of_mutated_logs(capsys, text):
    r = report_no_html(capsys, text.encode())
    check(r, "report")
    if r.code < 64:  # a report was made: its status is the run's, said so unless it passed
        code, why = results.outcome(results.load_any(text, "x"))
        assert r.code == code and (why in r.err if why else True)


@FAST
@given(text=mutated_logs())
def test_compare_of_mutated_logs(capsys, text):
    check(compare_with(capsys, text.encode()), "compare")


@FAST
@given(text=mutated_logs(), value=json_values, key=st.sampled_from(list(results._SHAPE) + ["format", "version", "complete"]))
def test_report_and_compare_of_mutated_results_files(capsys, text, value, key):
    try:
        res = results.load_any(text, "x")
    except errors.ToolError:
        return
    res[key] = value
    data = json.dumps(res).encode()
    check(report_no_html(capsys, data), "report")
    check(compare_with(capsys, data), "compare")


@FAST
@given(text=st.text(max_size=2000) | mutated_logs())
def test_the_log_parser_never_raises(text):
    log = records.parse_log(text)
    assert all(isinstance(r, dict) and isinstance(r["type"], str) for r in log.records)
    joined, notes = records.join_parts(log.records)
    assert len(joined) <= len(log.records)


@SLOW
@given(text=mutated_logs())
def test_full_report_with_page_of_mutated_logs(capsys, text):
    """The whole report, plots and page included (slow: a few examples)."""
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "in.log"
        log.write_text(text)
        r = run_cli(capsys, "report", log, "--out", Path(d) / "out")
        check(r, "report")
        if r.code < 64:
            assert (Path(d) / "out" / "report.html").stat().st_size > 0
