"""`clockbench lab` with a place it cannot have (issue 39, point 7): a
coordinator that does not answer, a place it does not know, or a place the
helper cannot acquire is a tool error (69) in one line with the `lab`
prefix; no run is stored and no log folder is made. Before, `lab
nosuchplace` printed "clockbench capture: 1 machines", then "the port went
away" for a port never opened, stored a "did not run" row and exited 4.

labgrid itself is stood in for by two small scripts in a folder laid out as
its venv (labgrid-client and the helper's Python): what is tested is the
host tool's side of their answers."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from helpers.tool import run_cli as cli
from clockbench.fleet import lab


def script(path: Path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_labgrid(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    monkeypatch.setattr(lab, "VENV", venv)
    monkeypatch.setattr(lab, "PYTHON", venv / "bin" / "python")
    # the helper, for a place the coordinator lists but will not give
    script(venv / "bin" / "python", 'echo "clockbench lab: cannot acquire place busy: place busy is already acquired" >&2\nexit 2\n')
    return venv


def test_a_place_the_coordinator_does_not_know(capsys, tmp_path, fake_labgrid):
    script(fake_labgrid / "bin" / "labgrid-client", 'test "$1" = places && printf "qemu-1\\nbusy\\n" && exit 0\nexit 1\n')
    db, logs = tmp_path / "runs.db", tmp_path / "logs"
    code, out, err = cli(capsys, "lab", "nosuchplace", "--store", db, "--log-dir", logs)
    assert code == 69 and out == ""
    assert err.splitlines() == ["clockbench lab: no labgrid place 'nosuchplace' at the coordinator 127.0.0.1:20408 "
                                "(it has qemu-1, busy); nothing was run or stored"]
    assert not db.exists() and not logs.exists()


def test_no_coordinator(capsys, tmp_path, fake_labgrid, monkeypatch):
    script(fake_labgrid / "bin" / "labgrid-client", 'echo "Error: unable to connect to the coordinator" >&2\nexit 1\n')
    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    code, out, err = cli(capsys, "lab", "qemu-1", "--coordinator", "127.0.0.1:9", "--store", tmp_path / "runs.db")
    assert code == 69 and out == ""
    assert err.splitlines() == ["clockbench lab: cannot reach labgrid's coordinator 127.0.0.1:9: "
                                "Error: unable to connect to the coordinator"]
    assert not (tmp_path / "runs.db").exists()
    os.environ.pop("LG_COORDINATOR", None)


def test_a_place_it_cannot_acquire_stores_nothing(capsys, tmp_path, fake_labgrid, monkeypatch):
    script(fake_labgrid / "bin" / "labgrid-client", 'test "$1" = places && printf "busy\\n" && exit 0\nexit 1\n')
    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    db = tmp_path / "runs.db"
    code, out, err = cli(capsys, "lab", "busy", "--store", db, "--log-dir", tmp_path / "logs", "--every", "0.2")
    os.environ.pop("LG_COORDINATOR", None)
    assert code == 69, (out, err)
    assert "clockbench lab: 1 machine into" in out and "capture" not in out
    assert "labgrid place busy: cannot acquire place busy" in out and "went away" not in out
    assert not db.exists()


def test_a_helper_that_will_not_end_is_killed_and_its_place_powered_off_and_released(tmp_path, fake_labgrid, monkeypatch, capsys):
    """The flake of a loaded host (test_lab.py: place qemu-2 still acquired):
    a helper that outlives its bound after SIGTERM is killed, and what it did
    not do, powering the place off and releasing it, is done through
    labgrid-client; a step that fails is said."""
    calls = tmp_path / "calls"
    script(fake_labgrid / "bin" / "labgrid-client",
           f'echo "$*" >> {calls}\ntest "$3" = release && echo "Error: the coordinator went away" >&2 && exit 1\nexit 0\n')
    # opens, then ignores SIGTERM (as one stuck in a slow power-off would)
    script(fake_labgrid / "bin" / "python", 'trap "" TERM\necho "clockbench lab: qemu-1: powered on, console open" >&2\n'
                                            'exec sleep 60\n')
    monkeypatch.setattr(lab, "CLOSE_TIMEOUT_S", 0.5)
    console = lab.open_console("qemu-1")
    console.close()
    assert console.proc.returncode is not None
    assert calls.read_text().splitlines() == ["-p qemu-1 power off", "-p qemu-1 release"]
    err = capsys.readouterr().err.splitlines()
    assert err == ["clockbench lab: qemu-1: the helper did not end within 0.5 s of SIGTERM and was killed",
                   "clockbench lab: qemu-1: could not release: Error: the coordinator went away"], err
