"""docs/output.md's "Exit statuses of the host tool", case by case: each
documented status that can be reached cheaply on the host is reached here
by the command a user would type, in a process of its own, and must give
that status, with one line on standard error that says why (no traceback).
The row each case stands for must name the case, so the table and the code
cannot drift apart. The run statuses `report` gives a log (0, 1, 3, 4) are
checked the same way; 71 starts QEMU, which refuses a bad option at once.
A fixture stands in for the kernel and the ISO where nothing reads them
(the tool checks only that they exist before it fails), so no build is
needed.
Not here: 70 (test_cli_main's internal-error test),
75 (test_store's lock tests), 77 (the Secure Boot tool's tests), 79 and 130
(a prompt and a Ctrl-C need a terminal)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli_logs import ROOT, TCG, crashed_log, failed_log, run_process
from clockbench import errors


def table() -> dict[int, str]:
    doc = (ROOT / "docs" / "output.md").read_text()
    section = doc[doc.index("## Exit statuses of the host tool"):]
    section = section[:section.index("\n## ", 1)]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \|(.*)$", section, re.M)}


def _log(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def _cut_before_summary(tmp: Path) -> Path:
    lines = TCG.read_text().split("\n")
    end = next(i for i, l in enumerate(lines) if '"type":"summary"' in l)
    return _log(tmp, "cut.log", "\n".join(lines[:end]) + "\n")


def _newer_schema(tmp: Path) -> Path:
    text = TCG.read_text()
    assert '"type":"schema","version":1,' in text
    return _log(tmp, "newer.log", text.replace('"type":"schema","version":1,', '"type":"schema","version":2,', 1))


def _not_a_store(tmp: Path) -> Path:
    return _log(tmp, "x.db", "not a database\n")


def _under_a_file(tmp: Path) -> Path:
    (tmp / "file").write_text("")
    return tmp / "file" / "out"


# status, what the docs' row (or, for a run status, the section) must say, the command
CASES = {
    "report a passed log": (0, None, lambda t: ["report", TCG, "--out", t / "o", "--no-html"]),
    "report a failed log": (1, None, lambda t: ["report", _log(t, "f.log", failed_log()), "--out", t / "o", "--no-html"]),
    "report a crashed log": (3, None, lambda t: ["report", _log(t, "c.log", crashed_log()), "--out", t / "o", "--no-html"]),
    "report a log cut before its summary": (4, None, lambda t: ["report", _cut_before_summary(t), "--out", t / "o",
                                                                  "--no-html"]),
    "an unknown command": (64, "an unknown option or command", lambda t: ["frobnicate"]),
    "run --smp 0": (64, "`--smp 0`", lambda t: ["run", "--smp", "0", "--runs-dir", t / "r", "--store", "none"]),
    "run --duration -5": (64, "`--duration -5`", lambda t: ["run", "--duration", "-5", "--runs-dir", t / "r",
                                                            "--store", "none"]),
    "run --boot netboot --append": (64, "`run --boot netboot` with an option the TFTP tree decides",
                                    lambda t: ["run", "--boot", "netboot", "--append", "duration=1", "--runs-dir",
                                               t / "r", "--store", "none"]),
    "report /dev/null": (65, "`/dev/null`", lambda t: ["report", "/dev/null", "--out", t / "o", "--no-html"]),
    "report a missing log": (66, "no such file", lambda t: ["report", t / "nosuch.log", "--out", t / "o", "--no-html"]),
    "flash /dev/nosuch": (66, "`flash /dev/nosuch`", lambda t: ["flash", "/dev/nosuch", "--iso", TCG]),
    "run --boot netboot, no tree": (66, "`run --boot netboot --tftp DIR` where DIR holds no tree",
                                    lambda t: ["run", "--boot", "netboot", "--tftp", t / "none", "--runs-dir", t / "r",
                                               "--store", "none"]),
    "run with no QEMU on PATH": (69, "`qemu-system-x86_64` (`run`)", lambda t: ["run", "--boot", "direct", "--kernel", TCG,
                                                                          "--accel", "tcg", "--runs-dir", t / "r",
                                                                          "--store", "none", "--no-report"]),
    # QEMU itself refuses the option at once: no guest runs
    "run with a bad QEMU option": (71, "a bad QEMU option", lambda t: ["run", "--boot", "direct", "--kernel", TCG,
                                                                       "--accel", "tcg", "--qemu-arg=-nonsense",
                                                                       "--runs-dir", t / "r", "--store", "none",
                                                                       "--no-report"]),
    "report a newer schema": (67, "`schema` version is newer", lambda t: ["report", _newer_schema(t), "--out", t / "o",
                                                                          "--no-html"]),
    "report into a file's folder": (73, "the output folder", lambda t: ["report", TCG, "--out", _under_a_file(t),
                                                                         "--no-html"]),
    "runs on a store that is not SQLite": (76, "not a SQLite file", lambda t: ["runs", "--store", _not_a_store(t)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_documented_status(case, tmp_path, monkeypatch):
    code, phrase, argv = CASES[case]
    if code == errors.MISSING_TOOL:
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rows = table()
    if code >= 64:
        assert code in rows, f"status {code} is not in docs/output.md's table"
        assert phrase in rows[code], f"docs/output.md's row for {code} does not name {phrase!r}: {rows[code]}"
    else:
        assert code in errors.RUN_STATUSES
    r = run_process(*argv(tmp_path))
    assert r.code == code, (case, r.code, r.err[-2000:])
    if code == 0:
        return
    lines = [l for l in r.err.splitlines() if l.strip() and not l.startswith("usage:") and not l.startswith("  ")]
    assert lines and "Traceback" not in r.err, r.err
    if code >= 64:
        assert len([l for l in r.err.splitlines() if l.startswith("clockbench")]) == 1, r.err


def test_every_tool_status_is_a_row():
    assert set(errors.TOOL_STATUSES) == set(table())
