"""Every input the host tool takes, bad: a one-line message naming the
input and the problem, the documented exit status (docs/output.md), never a
traceback and never exit 0 with an empty result. `report`, `compare` and
`capture` (through a pseudo-terminal), no QEMU."""

from __future__ import annotations

import json
import os
import pty
import random
import threading
import time

import pytest

from helpers import ports
from helpers.logs import KVM, TCG, crashed_log, cut_inside_an_array, failed_log
from helpers.tool import need_module, run_cli, run_process, tool_env
from clockbench import errors
from clockbench.records import results


def one_line(err: str) -> str:
    lines = [l for l in err.strip().split("\n") if l.strip()]
    assert "Traceback" not in err, err
    return lines[-1]


def bad_inputs(tmp_path):
    """(name, path, expected status, words the message must hold)."""
    rnd = tmp_path / "random.bin"
    rnd.write_bytes(random.Random(7).randbytes(4096))
    empty = tmp_path / "empty.log"
    empty.write_text("")
    blank = tmp_path / "blank.log"
    blank.write_text("\n\n   \n")
    text = TCG.read_text()
    noschema = tmp_path / "noschema.log"
    noschema.write_text("\n".join(l for l in text.split("\n") if '"type":"schema"' not in l))
    newer = tmp_path / "newer.log"
    newer.write_text(text.replace('"type":"schema","version":1', '"type":"schema","version":7', 1))
    people = tmp_path / "people.log"
    people.write_text("\n".join(l for l in text.split("\n") if not l.startswith("@cb ")))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"name": "not ours", "values": [1, 2, 3]}))
    array = tmp_path / "array.json"
    array.write_text("[1, 2, 3]")
    badjson = tmp_path / "bad.json"
    badjson.write_text('{"format": "clockbench-results", "version": 1, "latency": ')
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "clockbench-results", "version": 1, "latency": [1, 2]}))
    future = tmp_path / "future.json"
    future.write_text(json.dumps({"format": "clockbench-results", "version": 99}))
    qr = tmp_path / "qr.json"
    qr.write_text(json.dumps({"format": "clockbench-qr", "counters": [{"name": "tsc"}]}))
    return [
        ("empty file", empty, errors.BAD_INPUT, "is empty"),
        ("blank lines", blank, errors.BAD_INPUT, "is empty"),
        ("/dev/null", "/dev/null", errors.BAD_INPUT, "is empty"),
        ("random bytes", rnd, errors.BAD_INPUT, "binary data with no clockbench records"),
        ("people's lines only", people, errors.BAD_INPUT, "no clockbench records"),
        ("no schema record", noschema, errors.BAD_INPUT, "no schema record"),
        ("newer schema", newer, errors.NEWER_SCHEMA, "schema version 7; this tool reads version 1"),
        ("someone else's JSON", other, errors.BAD_INPUT, "not clockbench results"),
        ("a JSON array", array, errors.BAD_INPUT, "not clockbench results"),
        ("JSON cut short", badjson, errors.BAD_INPUT, "not valid JSON"),
        ("results of the wrong shape", wrong, errors.BAD_INPUT, '"latency" should be an object'),
        ("newer results", future, errors.NEWER_SCHEMA, "results format version 99"),
        ("a QR file that is not decode's", qr, errors.BAD_INPUT, "decoded QR code, but not as"),
        ("missing file", tmp_path / "missing.log", errors.NO_INPUT, "no such file"),
        ("a folder", tmp_path, errors.NO_INPUT, "is a folder"),
    ]


NAMES = ["empty file", "blank lines", "/dev/null", "random bytes", "people's lines only", "no schema record", "newer schema",
         "someone else's JSON", "a JSON array", "JSON cut short", "results of the wrong shape", "newer results",
         "a QR file that is not decode's", "missing file", "a folder"]


@pytest.mark.parametrize("which", NAMES)
@pytest.mark.parametrize("command", ["report", "compare"])
def test_bad_input_gets_its_status_and_one_line(tmp_path, capsys, command, which):
    name, path, code, words = next(c for c in bad_inputs(tmp_path) if c[0] == which)
    args = ["report", path, "--out", tmp_path / "out"] if command == "report" else ["compare", TCG, path]
    r = run_cli(capsys, *args)
    assert r.code == code, (r.code, r.err)
    line = one_line(r.err)
    assert line.startswith(f"clockbench {command}: {path}") and words in line, line
    assert not (tmp_path / "out").exists(), "nothing is written for input that was refused"
    if command == "compare":
        assert r.out == ""


def test_every_bad_input_is_tested(tmp_path):
    assert [c[0] for c in bad_inputs(tmp_path)] == NAMES


def test_as_a_user_sees_it_no_traceback(tmp_path):
    """A separate process, from another folder: the message and the status."""
    (tmp_path / "empty.log").write_text("")
    r = run_process("report", "empty.log", cwd=tmp_path)
    assert r.code == errors.BAD_INPUT and r.err.strip() == "clockbench report: empty.log: is empty"
    r = run_process("compare", "empty.log", cwd=tmp_path)
    assert r.code == errors.BAD_INPUT and "Traceback" not in r.err and r.out == ""
    r = run_process("report", "/dev/null", cwd=tmp_path)
    assert r.code == errors.BAD_INPUT and r.err.strip() == "clockbench report: /dev/null: is empty"


def test_a_crashed_run_is_reported_and_exits_3(tmp_path, capsys):
    log = tmp_path / "crashed.log"
    log.write_text(crashed_log())
    r = run_cli(capsys, "report", log, "--out", tmp_path / "out", "--no-html")
    assert r.code == 3
    assert "the run crashed: CPU exception 6 (invalid opcode) at rip 0x101234" in one_line(r.err)
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["fault"]["vector"] == 6 and res["latency"], "what was measured before the crash is kept"


def test_a_crashed_run_still_gets_its_html_page(tmp_path, capsys):
    need_module("matplotlib", "python3-matplotlib")
    log = tmp_path / "crashed.log"
    log.write_text(crashed_log())
    r = run_cli(capsys, "report", log, "--out", tmp_path / "out")
    assert r.code == 3, r.err
    assert (tmp_path / "out" / "report.html").stat().st_size > 1000
    assert "the run crashed" in one_line(r.err)


def test_a_record_cut_inside_an_array_reports_an_incomplete_run(tmp_path, capsys):
    need_module("matplotlib", "python3-matplotlib")
    log = tmp_path / "cut.log"
    log.write_text(cut_inside_an_array())
    r = run_cli(capsys, "report", log, "--out", tmp_path / "out")
    assert r.code == 4, r.err
    assert "not a complete JSON object" in r.err
    assert "the log ends before the run did (no summary record): an incomplete run" in one_line(r.err)
    assert (tmp_path / "out" / "report.html").exists() and (tmp_path / "out" / "results.json").exists()


def test_a_log_with_only_its_schema_is_no_result(tmp_path, capsys):
    log = tmp_path / "start.log"
    log.write_text(TCG.read_text().split("\n")[0] + "\n" + next(l for l in TCG.read_text().split("\n") if '"type":"schema"' in l) + "\n")
    r = run_cli(capsys, "report", log, "--out", tmp_path / "out", "--no-html")
    assert r.code == 4 and "an incomplete run" in r.err
    r = run_cli(capsys, "compare", TCG, log)
    assert r.code == errors.BAD_INPUT and "holds nothing to compare" in one_line(r.err)


def test_a_failed_run_exits_1_naming_the_checks(tmp_path, capsys):
    log = tmp_path / "failed.log"
    log.write_text(failed_log())
    r = run_cli(capsys, "report", log, "--out", tmp_path / "out", "--no-html")
    assert r.code == 1
    assert "the run failed: 2 checks failed: ACPI tables, hpet" in one_line(r.err)


def test_a_passed_run_exits_0(tmp_path, capsys):
    r = run_cli(capsys, "report", KVM, "--out", tmp_path / "out", "--no-html")
    assert r.code == 0 and r.err == ""
    assert json.loads((tmp_path / "out" / "results.json").read_text())["complete"] is True


def test_output_that_cannot_be_written(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    r = run_cli(capsys, "report", KVM, "--out", tmp_path / "file" / "out", "--no-html")
    assert r.code == errors.CANNOT_WRITE and "cannot write" in one_line(r.err)
    r = run_cli(capsys, "report", KVM, "--no-html", "--out", tmp_path / "o", "--junit", tmp_path / "file" / "j.xml")
    assert r.code == errors.CANNOT_WRITE and "cannot write the junit file" in one_line(r.err)


def test_loaders_raise_only_tool_errors():
    for text in ("", "{", "{}", "[]", "@cb {}", "@cb {\"type\":\"schema\"}", '@cb {"type":"schema","version":"1"}',
                 '@cb {"type":"schema","version":1,"tool":"other"}', "\x00\x01\x02" * 100):
        with pytest.raises(errors.ToolError) as e:
            results.load_any(text, "t")
        assert e.value.code in (errors.BAD_INPUT, errors.NEWER_SCHEMA)
        assert str(e.value).startswith("t: ")


# --- capture, through a pseudo-terminal standing in for the serial port ---

def feed(master: int, name: str, data: bytes, then_close: bool = False) -> threading.Thread:
    def go():
        ports.wait_configured(name)  # capture opens and configures the port first
        for i in range(0, len(data), 4096):
            os.write(master, data[i:i + 4096])
            time.sleep(0.002)
        if then_close:
            time.sleep(1.0)
            os.close(master)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


@pytest.fixture
def port():
    need_module("serial", "python3-serial")
    master, slave = pty.openpty()
    yield master, os.ttyname(slave)
    for fd in (master, slave):
        try:
            os.close(fd)
        except OSError:
            pass


def test_capture_of_a_failed_run_exits_1(tmp_path, capsys, port):
    master, name = port
    feed(master, name, failed_log().encode())
    r = run_cli(capsys, "capture", name, "--log", tmp_path / "cap.log", "--timeout", "30")
    assert r.code == 1, r.err
    assert "the run failed" in r.err and (tmp_path / "cap.log").stat().st_size > 10_000


def test_capture_of_a_passed_run_exits_0(tmp_path, capsys, port):
    master, name = port
    feed(master, name, KVM.read_bytes())
    r = run_cli(capsys, "capture", name, "--log", tmp_path / "cap.log", "--timeout", "30")
    assert r.code == 0, r.err
    assert (tmp_path / "cap.log").read_bytes() == KVM.read_bytes()


def test_capture_of_a_crashed_run_exits_3(tmp_path, capsys, port):
    master, name = port
    feed(master, name, crashed_log().encode(), then_close=True)
    r = run_cli(capsys, "capture", name, "--log", tmp_path / "cap.log", "--timeout", "20")
    assert r.code == 3, r.err
    assert "the run crashed" in r.err


def test_capture_that_reads_nothing_claims_no_log(tmp_path, capsys, port):
    master, name = port
    r = run_cli(capsys, "capture", name, "--log", tmp_path / "cap.log", "--timeout", "2")
    assert r.code == 4
    assert "nothing was read" in r.err and "no log kept" in r.err
    assert not (tmp_path / "cap.log").exists()
    assert "bytes kept" not in r.out + r.err


def test_capture_of_a_port_that_does_not_exist(tmp_path, capsys):
    need_module("serial", "python3-serial")
    r = run_cli(capsys, "capture", tmp_path / "ttyNONE", "--log", tmp_path / "cap.log", "--timeout", "2")
    assert r.code == errors.NO_INPUT
    line = one_line(r.err)
    assert line.startswith("clockbench capture: cannot open") and "no log written" in line
    assert not (tmp_path / "cap.log").exists()
    assert f"into {tmp_path / 'cap.log'}" not in r.err


def test_capture_at_the_wrong_rate_is_bad_input(tmp_path, capsys, port):
    master, name = port
    feed(master, name, bytes(random.Random(3).randrange(256) for _ in range(3000)), then_close=True)
    r = run_cli(capsys, "capture", name, "--log", tmp_path / "cap.log", "--timeout", "5")
    assert r.code == errors.BAD_INPUT
    assert "wrong --baud" in one_line(r.err)
    assert (tmp_path / "cap.log").stat().st_size == 3000  # what was read is kept


ODD_VALUES = [None, 7, -1.5, True, [1, "x"], {"a": 1}, "", "x" * 300]


@pytest.mark.parametrize("value", ODD_VALUES, ids=lambda v: type(v).__name__ + str(len(str(v))))
@pytest.mark.parametrize("where", ["fault.name", "fault.vector", "fault.rip", "summary.status", "summary.pass", "machine.brand",
                                   "machine.hypervisor", "profile.tsc_hz", "check.name", "check.detail", "check.result",
                                   "latency.p50_ns", "latency.counter", "schema.build"])
def test_odd_members_where_the_tool_reads_them(tmp_path, capsys, where, value):
    """Every member report's results, the CI formats and compare read, of
    every JSON type: a report or a refusal, never an internal error."""
    kind, key = where.split(".")
    base = crashed_log() if kind == "fault" else TCG.read_text()
    lines = base.split("\n")
    i = next(k for k, l in enumerate(lines) if l.startswith(f'@cb {{"type":"{kind}"'))
    rec = json.loads(lines[i][4:])
    rec[key] = value
    lines[i] = "@cb " + json.dumps(rec)
    log = tmp_path / "odd.log"
    log.write_text("\n".join(lines))
    r = run_cli(capsys, "report", log, "--out", tmp_path / "out", "--no-html", "--junit", tmp_path / "j.xml",
                "--tap", tmp_path / "t.tap", "--markdown", tmp_path / "m.md")
    assert "Traceback" not in r.err and r.code != errors.INTERNAL and errors.documented(r.code), r.err
    r = run_cli(capsys, "compare", log, TCG, "--html", tmp_path / "c.html")
    assert "Traceback" not in r.err and r.code != errors.INTERNAL and errors.documented(r.code), r.err


def test_capture_stopped_by_ctrl_c_keeps_the_log_and_says_where(tmp_path, port):
    import signal
    import subprocess

    master, name = port
    log = tmp_path / "cap.log"
    proc = subprocess.Popen(["/usr/bin/python3", "-m", "clockbench", "capture", name, "--log", str(log), "--timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=tool_env())
    part = TCG.read_bytes()[:5000]
    ports.wait_configured(name)  # python starts and opens the port
    os.write(master, part)
    deadline = time.monotonic() + 20
    while (not log.exists() or log.stat().st_size < len(part)) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == errors.INTERRUPTED, out + err
    assert "Traceback" not in err
    assert f"interrupted (Ctrl-C); {len(part)} bytes kept in {log}" in err
    assert log.read_bytes() == part


def test_report_without_its_template_library_says_what_to_install(tmp_path, capsys, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_jinja2(name, *a, **k):
        if name.split(".")[0] == "jinja2":
            raise ImportError(f"No module named {name!r}", name=name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_jinja2)
    for mod in [m for m in list(__import__("sys").modules) if m.split(".")[0] == "jinja2"]:
        monkeypatch.delitem(__import__("sys").modules, mod)
    r = run_cli(capsys, "report", KVM, "--out", tmp_path / "out")
    assert r.code == errors.MISSING_TOOL, r.err
    assert "jinja2" in one_line(r.err) and "make deps" in one_line(r.err)
    r = run_cli(capsys, "report", KVM, "--out", tmp_path / "out2", "--no-html")
    assert r.code == 0
