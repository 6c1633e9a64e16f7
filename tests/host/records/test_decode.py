"""`clockbench decode` on QR payload text: fields, the failed and skipped
checks by name, payloads cut to fit a text screen, and bad input (one line,
a tool exit status, never a traceback: also for arbitrary text)."""

import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from clockbench.records import decode
from clockbench import errors
from helpers.tool import tool

PAYLOAD = ("CB1;b=abc123;cpu=GenuineIntel Intel(R) Xeon(R) Processor;fms=6.207.2;hv=KVMKVMKVM;prof=quick;"
           "tsc_hz=2299998114;tsc_src=hpet;c=tsc,51435,51435,1,yes;c=hpet,162200,162200,-,yes;"
           "c=acpi_pm,-,-,-,absent;c=pit,108313,108313,-80,STUCK;smp=4,4,yes,120,0;sum=19,1,2;st=failed;"
           "fail=counter keeps moving;skip=invariant TSC,+1;new=kept")


def cli(*args, stdin=None):
    return tool("decode", *args, stdin=stdin, timeout=60)


def test_fields():
    r = decode.parse_payload(PAYLOAD)
    assert r["cpu"] == "GenuineIntel Intel(R) Xeon(R) Processor" and r["hypervisor"] == "KVMKVMKVM"
    assert r["tsc_hz"] == 2299998114 and r["tsc_hz_source"] == "hpet" and r["profile"] == "quick"
    tsc, hpet, pm, pit = r["counters"]
    assert tsc["read_p50_ns"] == 5143.5 and tsc["ppm"] == 0.01 and tsc["monotonic"] is True
    assert hpet["ppm"] is None
    assert pm == {"name": "acpi_pm", "present": False, "read_p50_ns": None, "resolution_ns": None, "ppm": None,
                  "monotonic": None, "stuck": False}
    assert pit["ppm"] == -0.8 and pit["stuck"] and pit["monotonic"] is None
    assert r["smp"] == {"running": 4, "enabled": 4, "synchronised": True, "worst_ns": 120, "warps": 0}
    assert r["summary"] == {"pass": 19, "fail": 1, "skip": 2, "status": "failed"}
    assert r["checks"] == {"failed": ["counter keeps moving"], "failed_not_carried": 0,
                           "skipped": ["invariant TSC"], "skipped_not_carried": 1}
    assert r["extra"] == {"new": "kept"}
    assert r["not_carried"] == [] and r["counters_not_carried"] == 0


def test_a_payload_cut_for_a_text_screen_says_what_it_left_out():
    r = decode.parse_payload("CB1;tsc_hz=2599999000;c=tsc,201,201,15,yes;c=+3;sum=20,3,4;st=failed;"
                             "fail=HPET comparator one-shot,+2;skip=+4")
    assert r["checks"] == {"failed": ["HPET comparator one-shot"], "failed_not_carried": 2, "skipped": [], "skipped_not_carried": 4}
    assert r["not_carried"] == ["b", "cpu", "fms", "hv", "prof", "tsc_src"]
    assert [c["name"] for c in r["counters"]] == ["tsc"] and r["counters_not_carried"] == 3


def test_no_failures_need_no_list():
    r = decode.parse_payload("CB1;sum=5,0,0;st=passed")
    assert r["checks"] == {"failed": [], "failed_not_carried": 0, "skipped": [], "skipped_not_carried": 0}
    assert "fail" not in r["not_carried"] and "c" in r["not_carried"]


def test_lists_left_out_count_every_check_as_not_carried():
    r = decode.parse_payload("CB1;sum=5,2,3;st=failed")
    assert r["checks"] == {"failed": [], "failed_not_carried": 2, "skipped": [], "skipped_not_carried": 3}
    assert "fail" in r["not_carried"] and "skip" in r["not_carried"]


@pytest.mark.parametrize("bad, says", [
    ("", "not a clockbench QR payload"),
    ("hello", "not a clockbench QR payload"),
    ("CB1", "no sum= field"),
    ("CB1;st=passed", "no sum= field"),
    ("CB1;sum=1,0,0", "no st= field"),
    ("CB1;cpu;sum=1,0,0;st=passed", "has no '='"),
    ("CB1;sum=x,y;st=failed", "sum= should be passed,failed,skipped"),
    ("CB1;sum=1,2;st=failed", "sum= should be passed,failed,skipped"),
    ("CB1;sum=1,x,2;st=failed", "is not a count"),
    ("CB1;c=tsc,1,2;sum=1,0,0;st=passed", "should have 5 parts"),
    ("CB1;c=tsc,x,1,1,yes;sum=1,0,0;st=passed", "is not a whole number"),
    ("CB1;sum=1,0,0;sum=1,0,0;st=passed", "appears twice"),
    ("CB1;sum=1,2,0;st=failed;fail=a", "accounts for 1 check but sum= says 2 failed"),
    ("CB1;sum=1,1,0;st=failed;fail=a,,b", "empty check name"),
    ("CB1;sum=1,1,0;st=failed;fail=+x", "is not a count"),
    ("CB1;smp=1,2;sum=1,0,0;st=passed", "smp= should have 5 parts"),
    ("CB1;c=+x;sum=1,0,0;st=passed", "is not a count"),
    ("CB1;c=+1;c=+2;sum=1,0,0;st=passed", "two c=+N fields"),
])
def test_bad_payloads_say_what_is_wrong(bad, says):
    with pytest.raises(errors.BadInput, match=None) as e:
        decode.parse_payload(bad)
    assert says in str(e.value) and e.value.code == errors.BAD_INPUT


def test_a_newer_payload_is_refused_as_newer():
    with pytest.raises(errors.NewerSchema) as e:
        decode.parse_payload("CB2;sum=1,0,0;st=passed")
    assert "update clockbench" in str(e.value) and e.value.code == errors.NEWER_SCHEMA


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="CB1;=,+-0123456789abcfkpstumy ").map(lambda s: "CB1;" + s)))
def test_arbitrary_text_is_parsed_or_refused_never_a_traceback(text):
    try:
        r = decode.parse_payload(text)
    except errors.ToolError as e:
        assert e.code in (errors.BAD_INPUT, errors.NEWER_SCHEMA) and "\n" not in str(e)
        return
    assert r["format"] == "clockbench-qr" and set(r["summary"]) == {"pass", "fail", "skip", "status"}
    json.dumps(r)


def test_command_line(tmp_path):
    out = tmp_path / "r.json"
    run = cli("--text", "-", "--out", str(out), stdin=PAYLOAD)
    assert run.returncode == 0, run.stderr
    assert json.loads(out.read_text())["checks"]["failed"] == ["counter keeps moving"]


@pytest.mark.parametrize("args, code, says", [
    (["--text", "hello"], errors.BAD_INPUT, "not a clockbench QR payload"),
    (["--text", "CB1"], errors.BAD_INPUT, "no sum= field"),
    (["--text", "CB1;sum=x,y"], errors.BAD_INPUT, "sum= should be"),
    (["--text", "CB1;sum=1,2"], errors.BAD_INPUT, "sum= should be"),
    (["--text", "CB9;sum=1,0,0;st=passed"], errors.NEWER_SCHEMA, "update clockbench"),
    (["/nonexistent/screen.png"], errors.NO_INPUT, "no such file"),
])
def test_command_line_bad_input(args, code, says):
    run = cli(*args)
    assert run.returncode == code, (run.returncode, run.stderr)
    assert says in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and not run.stdout


def test_command_line_random_file(tmp_path):
    junk = tmp_path / "photo.jpg"
    junk.write_bytes(os.urandom(4096))
    run = cli(str(junk))
    if run.returncode == errors.MISSING_TOOL and os.environ.get("CI") != "true":
        pytest.skip("zbarimg not installed (Debian package zbar-tools)")
    assert run.returncode == errors.BAD_INPUT, (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1 and not run.stdout


def test_secure_boot_field():
    """sb= carries the machine record's secure_boot; `-` or absent is unknown."""
    base = "CB1;sum=1,0,0;st=passed"
    assert decode.parse_payload(base.replace("CB1", "CB1;sb=on"))["secure_boot"] == "on"
    assert decode.parse_payload(base.replace("CB1", "CB1;sb=off"))["secure_boot"] == "off"
    assert decode.parse_payload(base.replace("CB1", "CB1;sb=-"))["secure_boot"] == "unknown"
    assert "secure_boot" not in decode.parse_payload(base)
