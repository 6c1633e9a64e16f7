"""The languages' ladder as a new user meets it (issue 36): `make os-vm` on
a fresh checkout builds the host tool it runs, and the terminal ladder
explains every column it prints."""

from __future__ import annotations

import subprocess

from helpers.paths import ROOT


def test_os_vm_builds_the_host_tool_it_runs(tmp_path):
    # `make -n` on an empty build folder: the venv that holds
    # build/venv/bin/clockbench must be made before os-vm runs it (a
    # prerequisite named before its variable is defined expands to nothing,
    # and a fresh checkout then stops at "No such file or directory")
    dry = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), "os-vm", f"BUILD={tmp_path}", "LANG_PROBES="],
                         capture_output=True, text=True, timeout=120)
    lines = dry.stdout.splitlines()
    run = next(i for i, l in enumerate(lines) if f"{tmp_path}/venv/bin/clockbench os-vm" in l)
    assert any("-m venv" in l for l in lines[:run]), dry.stdout[-3000:]
