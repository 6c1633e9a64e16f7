"""Logs and a command-line runner for the host tool's tests (test_cli_*,
test_bad_input*, test_compare*, test_ci_formats*): the real fixture logs
from QEMU runs, and variants made from them (a failed run, a crashed one,
one cut short), so no test boots anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers.paths import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "tools"))

from clockbench.cli import main as cli_main  # noqa: E402
from clockbench import errors  # noqa: E402

LOGS = sorted(FIXTURES.glob("*.log"))
TCG = FIXTURES / "tcg-q35.log"
KVM = FIXTURES / "kvm-q35.log"
EPYC = FIXTURES / "tcg-pc-epyc.log"


@dataclass
class Ran:
    code: int
    out: str
    err: str


def run_cli(capsys, *args: str) -> Ran:
    """The command in this process (fast); SystemExit from argparse becomes
    its code."""
    try:
        code = cli_main.main([str(a) for a in args])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    got = capsys.readouterr()
    return Ran(code, got.out, got.err)


def run_process(*args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 120) -> Ran:
    """The command as a user runs it: a separate Python, any folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    env.pop("CLOCKBENCH_DEBUG", None)
    r = subprocess.run(["/usr/bin/python3", "-m", "clockbench", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, cwd=cwd, env=env, input=stdin)
    return Ran(r.returncode, r.stdout, r.stderr)


def documented(code: int) -> bool:
    return errors.documented(code)


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


def need(module: str, package: str):
    """A library `make deps` installs: missing is a failure, never a skip."""
    import importlib

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.fail(f"{module} is not installed (Debian: {package}; `make deps`)")
