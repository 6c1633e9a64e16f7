"""Logs for the host tool's tests (tests/host/cli, report, runs, fleet, ...):
the real fixture logs from QEMU runs, and variants made from them (a failed
run, a crashed one, one cut short), so no test boots anything."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.paths import FIXTURES

LOGS = sorted(FIXTURES.glob("*.log"))
TCG = FIXTURES / "tcg-q35.log"
KVM = FIXTURES / "kvm-q35.log"
EPYC = FIXTURES / "tcg-pc-epyc.log"


def record_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.split("\n")) if line.startswith("@cb ")]


def failed_log(base: Path = TCG, names=("hpet", "ACPI tables")) -> str:
    """The fixture with the checks named failing, as the image would print
    them: the record, the people's line, the summary and its status."""
    out, failed = [], 0
    for line in base.read_text().split("\n"):
        if line.startswith("@cb ") and '"type":"check"' in line:
            rec = json.loads(line[4:])
            if rec["name"] in names and rec["result"] == "PASS":
                rec["result"], failed = "FAIL", failed + 1
                rec["detail"] = f"made to fail by the test <&> \"{rec['name']}\""
                line = "@cb " + json.dumps(rec, separators=(",", ":"))
        elif line.startswith("@cb ") and '"type":"summary"' in line:
            rec = json.loads(line[4:])
            rec.update(fail=failed, status="failed")
            rec["pass"] -= failed
            line = "@cb " + json.dumps(rec, separators=(",", ":"))
        out.append(line)
    return "\n".join(out)


def crashed_log(base: Path = TCG) -> str:
    """The fixture cut before its last experiments, ended the way the
    image ends a run on an unexpected CPU exception (kernel/exceptions.c)."""
    lines = base.read_text().split("\n")
    end = next(i for i, l in enumerate(lines) if '"type":"summary"' in l) - 40
    return "\n".join(lines[:end] + [
        "", "FAULT: CPU exception 6: invalid opcode",
        "  error code 0x0  rip 0000000000101234  cr2 0000000000000000  rflags 0000000000000002",
        '@cb {"type":"fault","vector":6,"name":"invalid opcode","error_code":0,"rip":"0x101234","cr2":"0x0"}',
        "clockbench: run ended: crashed (status 3). Halted; it is safe to power off.", ""])


def cut_inside_an_array(base: Path = TCG) -> str:
    """The log as if the machine stopped in the middle of a histogram record's
    bins: everything after that point is gone."""
    text = base.read_text()
    at = text.index('"bins":[') + len('"bins":[') + 20
    return text[:at]
