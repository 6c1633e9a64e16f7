"""`clockbench decode` on QR payload text: fields, absent counters, and bad input."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from clockbench import decode

ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = ("CB1;b=abc123;cpu=GenuineIntel Intel(R) Xeon(R) Processor;fms=6.207.2;hv=KVMKVMKVM;prof=quick;"
           "tsc_hz=2299998114;tsc_src=hpet;c=tsc,51435,51435,1,yes;c=hpet,162200,162200,-,yes;"
           "c=acpi_pm,-,-,-,absent;c=pit,108313,108313,-80,STUCK;sum=19,1,2;st=failed;new=kept")


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
    assert r["summary"] == {"pass": 19, "fail": 1, "skip": 2, "status": "failed"}
    assert r["extra"] == {"new": "kept"}


@pytest.mark.parametrize("bad", ["", "CB2;x=1", "CB1;cpu", "CB1;c=tsc,1,2", "CB1;c=tsc,x,1,1,yes"])
def test_bad_payloads_say_what_is_wrong(bad):
    with pytest.raises(decode.PayloadError):
        decode.parse_payload(bad)


def test_command_line(tmp_path):
    out = tmp_path / "r.json"
    run = subprocess.run(["/usr/bin/python3", "-m", "clockbench", "decode", "--text", "-", "--out", str(out)], input=PAYLOAD,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    assert run.returncode == 0, run.stderr
    assert json.loads(out.read_text())["summary"]["status"] == "failed"
    run = subprocess.run(["/usr/bin/python3", "-m", "clockbench", "decode", "--text", "hello"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    assert run.returncode == 1 and "not a clockbench QR payload" in run.stderr
