"""The host tool (tools/clockbench): report, compare and capture, against
logs captured from real QEMU runs of the image (tests/fixtures, regenerated
by `make fixtures`), truncated and corrupted copies, and a future schema."""

from __future__ import annotations

import json
import os
import pty
import threading
import time

import pytest

from helpers import ports
from helpers.paths import FIXTURES, ROOT
from helpers.tool import tool as cli
from clockbench.fleet import capture
from clockbench.report import compare, plots, report
from clockbench.records import results

# the image's logs; the clockbench-os logs (os-*.log) are tested in tests/host/report/test_os_side.py
LOGS = sorted(p for p in FIXTURES.glob("*.log") if not p.name.startswith("os-"))


def test_fixtures_exist():
    assert len(LOGS) >= 2, "run `make fixtures`"


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_report_writes_results_plots_and_html(log, tmp_path):
    r = cli("report", str(log), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["format"] == "clockbench-results" and res["complete"] and not res["problems"]
    assert res["summary"]["fail"] == 0 and res["machine"]["vendor"]
    assert set(res["latency"]) >= {"rdtsc", "hpet", "acpi_pm", "pit"}
    pngs = sorted(tmp_path.glob("*.png"))
    # a quick run's two sub-windows are a table, not a frequency plot
    assert [p.stem for p in pngs] == sorted(set(report.PLOTS) - {"frequency"})
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000, p
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4
    assert res["machine"]["brand"] in page and "Verdict" in page


def test_truncated_log_keeps_what_parsed(tmp_path):
    text = LOGS[0].read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(text[: len(text) // 2])
    r = cli("report", str(cut), "--out", str(tmp_path / "out"))
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert not res["complete"] and res["machine"] and res["counters"]
    assert r.returncode == 4 and "an incomplete run" in r.stderr  # the run's "no verdict" (docs/output.md)
    if res["problems"]:
        assert "line " in r.stderr


def test_corrupted_record_is_named(tmp_path):
    lines = LOGS[0].read_text().split("\n")
    i = next(k for k, l in enumerate(lines) if '"type":"latency"' in l)
    lines[i] = lines[i][:40]
    bad = tmp_path / "bad.log"
    bad.write_text("\n".join(lines))
    r = cli("report", str(bad), "--out", str(tmp_path / "out"))
    assert r.returncode == 0  # the run is complete; the one bad record is reported
    assert f"line {i + 1}:" in r.stderr and "not a complete JSON object" in r.stderr
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["complete"] and len(res["problems"]) == 1


def test_future_schema_says_so(tmp_path):
    text = LOGS[0].read_text().replace('"type":"schema","version":1', '"type":"schema","version":7', 1)
    newer = tmp_path / "newer.log"
    newer.write_text(text)
    r = cli("report", str(newer), "--out", str(tmp_path / "out"))
    assert r.returncode == 67 and "schema version 7; this tool reads version 1" in r.stderr


def test_compare_two_real_runs(tmp_path):
    r = cli("compare", *map(str, LOGS[:2]), "--html", str(tmp_path / "c.html"))
    assert r.returncode == 0, r.stderr
    assert "hpet read p50" in r.stdout and " 1.0x" in r.stdout and "ppm)" in r.stdout
    runs = [results.from_log(p.read_text()) for p in LOGS[:2]]
    rows = compare.table(runs, ["a", "b"])
    hz = [next(x for x in rows if x[0] == "TSC frequency")]
    assert "+0.00 ppm" in hz[0][1]
    assert (tmp_path / "c.html").read_text().count("<tr>") == len(rows)


def test_compare_accepts_results_json(tmp_path):
    cli("report", str(LOGS[0]), "--out", str(tmp_path / "a"))
    r = cli("compare", str(tmp_path / "a" / "results.json"), str(LOGS[1]))
    assert r.returncode == 0 and "TSC frequency" in r.stdout


def test_capture_from_a_serial_line_until_the_run_ends(tmp_path):
    master, slave = pty.openpty()
    text = LOGS[0].read_bytes()

    def feed():
        ports.wait_configured(os.ttyname(slave))  # capture opens and configures the port first
        for i in range(0, len(text), 2048):
            os.write(master, text[i:i + 2048])
            time.sleep(0.005)

    threading.Thread(target=feed, daemon=True).start()
    log = tmp_path / "cap.log"
    complete, why = capture.capture(os.ttyname(slave), 115200, 60, log, progress=lambda s: None)
    assert complete and why == "the run ended"
    assert results.from_log(log.read_text())["summary"] == results.from_log(text.decode())["summary"]
    os.close(master)
    os.close(slave)


def test_capture_keeps_what_it_read_when_the_port_goes_away(tmp_path):
    master, slave = pty.openpty()
    name = os.ttyname(slave)
    text = LOGS[0].read_bytes()[:20000]

    def feed_then_vanish():
        ports.wait_configured(name)  # capture opens and configures the port first
        for i in range(0, len(text), 2048):
            os.write(master, text[i:i + 2048])
            time.sleep(0.005)
        time.sleep(1.0)
        os.close(master)

    threading.Thread(target=feed_then_vanish, daemon=True).start()
    log = tmp_path / "cap.log"
    complete, why = capture.capture(name, 115200, 20, log, progress=lambda s: None)
    os.close(slave)
    assert not complete
    assert why.startswith("the port went away") or why.startswith("no summary")
    assert log.read_bytes() == text


def test_run_under_uefi_leaves_log_results_plots_and_html(tmp_path):
    log = tmp_path / "run.log"
    r = cli("run", "--boot", "iso", "--iso", str(ROOT / "build" / "test" / "clockbench.iso"), "--firmware", "uefi", "--accel", "tcg",
            "--log", str(log), "--timeout", "240")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = tmp_path / "run"
    res = json.loads((out / "results.json").read_text())
    assert res["complete"] and res["machine"]["multiboot"] == 2
    # four plots at least; a fifth (which one depends on what the run's windows held: seen on a loaded host)
    # is drawn when its data suffice, and every file is one of the report's figures
    drawn = {p.stem for p in out.glob("*.png")}
    assert len(drawn) >= 4 and drawn <= set(plots.PLOTS), drawn
    assert (out / "report.html").stat().st_size > 50_000


def test_a_decoded_qr_code_goes_to_report_and_compare(tmp_path):
    from clockbench.records import records

    qr = records.one(records.parse(LOGS[0].read_text()), "qr")
    decoded = tmp_path / "qr.json"
    r = cli("decode", "--text", qr["payload"], "--out", str(decoded))
    assert r.returncode == 0, r.stderr
    r = cli("report", str(decoded), "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert res["summary"]["status"] == "passed" and res["latency"]["hpet"]["p50_ns"] > 0
    assert (tmp_path / "rep" / "read_cost.png").exists()
    r = cli("compare", str(LOGS[0]), str(decoded))
    assert r.returncode == 0, r.stderr
    row = next(l for l in r.stdout.split("\n") if l.startswith("hpet read p50"))
    assert row.count(" ns 1.0x") == 2  # the code carries the same p50, to 0.1 ns
