"""The hint each run ends with names a command that works as printed: the
tool is `clockbench` only when that is the program on PATH; the venv's
program (not on PATH) by its path; under `python3 -m clockbench` the venv's
program, or the module with its PYTHONPATH when there is no venv. The
printed module form is run through a shell, from the checkout, as a user
would paste it."""

from __future__ import annotations

import os
import subprocess

from helpers.paths import ROOT
from clockbench import paths


def test_clockbench_only_when_it_is_the_program_on_path(tmp_path):
    tool = tmp_path / "venv" / "bin" / "clockbench"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    assert paths.tool_command(argv0=str(tool), on_path=str(tool)) == "clockbench"
    assert paths.tool_command(argv0=str(tool), on_path="") == str(tool.resolve())
    assert paths.tool_command(argv0=str(tool), on_path=str(tmp_path / "other" / "clockbench")) == str(tool.resolve())


def test_the_module_form_names_the_venv_or_works_as_printed(tmp_path, monkeypatch):
    venv_tool = tmp_path / "clockbench"
    venv_tool.write_text("#!/bin/sh\n")
    monkeypatch.setattr(paths, "VENV_TOOL", venv_tool)
    assert paths.tool_command(argv0=str(ROOT / "tools" / "clockbench" / "__main__.py"), on_path="") == str(venv_tool)
    monkeypatch.setattr(paths, "VENV_TOOL", tmp_path / "no-venv" / "clockbench")
    monkeypatch.chdir(ROOT)
    cmd = paths.tool_command(argv0=str(ROOT / "tools" / "clockbench" / "__main__.py"), on_path="")
    assert cmd == "PYTHONPATH=tools python3 -m clockbench", cmd
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(["sh", "-c", f"{cmd} runs --help"], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and r.stdout.startswith("usage: clockbench runs"), r.stderr
