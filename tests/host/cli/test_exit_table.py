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
The statuses that need another process to act are made to happen for real
below, each in a process of its own as a user meets it: 70 (a bug injected
into the real command line's process), 75 (another process holds the store),
77 (a key others can read), 79 (`flash` declined at its prompt, on a loop
device: as root or through `sudo -n`; skipped, saying so, where the platform
has no loop device) and 130 (SIGINT to a `capture` reading a console that
goes on; `run`'s own Ctrl-C is tests/boot/test_run_terminal.py's)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.logs import TCG, crashed_log, failed_log
from helpers.paths import ROOT
from helpers.tool import PYTHON, run_process, store_locked, tool_env
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
    if code >= 64 and code != errors.QEMU_FAILED:
        # refused before anything ran: no run folder is left behind (71: QEMU ran, and its folder says so)
        assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir()), (case, list((tmp_path / "r").iterdir()))
    if code == 0:
        return
    lines = [l for l in r.err.splitlines() if l.strip() and not l.startswith("usage:") and not l.startswith("  ")]
    assert lines and "Traceback" not in r.err, r.err
    if code >= 64:
        assert len([l for l in r.err.splitlines() if l.startswith("clockbench")]) == 1, r.err


def test_every_tool_status_is_a_row():
    assert set(errors.TOOL_STATUSES) == set(table())


# ---------------------------------------- statuses another process makes happen

def _tool(*args, env=None, **kw) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=tool_env(**(env or {})), **kw)


def _internal_error(tmp: Path):
    """A bug in the tool, injected into the real command line's process:
    `compare` whose loader raises (no bug is known to reach it)."""
    boom = ("import runpy, sys; from clockbench.report import compare\n"
            "def load(path): raise KeyError('boom')\n"
            "compare.load = load; sys.argv = ['clockbench', 'compare', sys.argv[1], sys.argv[1]]\n"
            "runpy.run_module('clockbench', run_name='__main__')")
    p = _tool("-c", boom, str(TCG), env={"CLOCKBENCH_DEBUG": ""})
    return p.communicate(timeout=60), p


def _store_locked(tmp: Path):
    db = tmp / "s.db"
    with store_locked(db):
        p = _tool("-m", "clockbench", "import", str(TCG), "--store", str(db), env={"CLOCKBENCH_STORE_TIMEOUT": "1"})
        return p.communicate(timeout=60), p


def _readable_key(tmp: Path):
    keys = tmp / "keys"
    made = run_process("keys", "--new", "--dir", keys, "--quiet")
    assert made.code == 0, made.err
    (keys / "clockbench.key").chmod(0o644)
    p = _tool("-m", "clockbench", "sign", str(TCG), "--key-dir", str(keys), "-o", str(tmp / "signed"))
    out = p.communicate(timeout=60)
    assert not (tmp / "signed").exists()
    return out, p


def _declined(tmp: Path):
    """`flash` needs a real block device to reach its prompt: a loop device
    over a file of zeros (losetup as root, else through `sudo -n`); the
    file is read back after the device is detached: nothing was written."""
    img = tmp / "stick.img"
    img.write_bytes(b"\0" * (16 << 20))
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    los = subprocess.run([*sudo, "losetup", "-f", "--show", str(img)], capture_output=True, text=True)
    if los.returncode != 0:  # a container without loop devices, or no root: the platform's, not a missing tool
        pytest.skip(f"no loop device for `flash` to prompt about ({' '.join(sudo + ['losetup'])}: {los.stderr.strip()})")
    dev = los.stdout.strip()
    try:
        p = _tool("-m", "clockbench", "flash", dev, "--iso", str(TCG), "--no-secure-boot-check", "--force", stdin=subprocess.PIPE)
        out = p.communicate("no\n", timeout=60)
    finally:
        subprocess.run([*sudo, "losetup", "-d", dev], check=True)
    assert img.read_bytes() == b"\0" * (16 << 20), "a declined flash wrote"
    return out, p


def _interrupted(tmp: Path):
    """SIGINT to `capture` while the console still talks (a TCP console
    that sent the start of a run and stays open)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    done = threading.Event()

    def serve():
        c, _ = srv.accept()
        c.sendall(("\n".join(TCG.read_text().split("\n")[:60]) + "\n").encode())
        done.wait(60)
        c.close()

    threading.Thread(target=serve, daemon=True).start()
    log = tmp / "cap.log"
    p = _tool("-m", "clockbench", "capture", f"tcp:127.0.0.1:{srv.getsockname()[1]}", "--log", str(log), "--store", "none")
    try:
        deadline = time.monotonic() + 60
        while (not log.exists() or "ACPI tables" not in log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert log.exists() and "ACPI tables" in log.read_text(), "capture read nothing"
        p.send_signal(signal.SIGINT)
        out = p.communicate(timeout=60)
    finally:
        done.set()
        srv.close()
    assert "ACPI tables" in log.read_text()  # what was read is kept
    return out, p


# status, what the docs' row must say, how to make it happen, what the tool's one line must say
PROCESS_CASES = {
    "an internal error": (70, "a bug in the tool", _internal_error, r"^clockbench compare: internal error: KeyError"),
    "a store another process holds": (75, "another process held the store", _store_locked,
                                      r"^clockbench import: .*locked by another process"),
    "a key others can read": (77, "a key others can read", _readable_key, r"^clockbench sign: .*can be read by others"),
    "flash declined at its prompt": (79, "`flash` answered anything but `yes`", _declined,
                                     r"^clockbench flash: not written \(declined\)$"),
    "capture interrupted": (130, "what was read is kept, and where is said", _interrupted,
                            r"^clockbench capture: interrupted \(Ctrl-C\); \d+ bytes kept in .*cap\.log$"),
}


@pytest.mark.timed
@pytest.mark.parametrize("case", list(PROCESS_CASES))
def test_documented_status_made_to_happen(case, tmp_path):
    code, phrase, make, said = PROCESS_CASES[case]
    rows = table()
    assert code in rows and phrase in rows[code], f"docs/output.md's row for {code} does not name {phrase!r}"
    (out, err), p = make(tmp_path)
    assert p.returncode == code, (case, p.returncode, out[-2000:], err[-2000:])
    assert "Traceback" not in out + err, err
    # one line from the tool says what happened, on standard error
    lines = out.splitlines() + err.splitlines()
    said_lines = [l for l in lines if re.search(said, l)]
    assert len(said_lines) == 1, (lines, said)
    assert [l for l in err.splitlines() if l.strip()] == said_lines, err
