"""What a new user met passing the languages through make (issue 44,
section 5): README says how (`OS_ARGS`, `OS_VM_ARGS`) and make passes them
on; `make help`'s os-vm example is one os-vm accepts; README says, where
`make os-bench` is shown, that it measures the current clocksource and
changes nothing (issue 48), and that the lab mode, OS_ARGS=--all-clocksources,
switches the machine's clocksource for about 20 s as root;
docs/host-tool.md gives os-vm's real default time bounds; `make os-vm`
installs its own set (`scripts/install-deps.sh osvm`), not `make deps`'s
whole one (labgrid, the CI linters, the SPDX library)."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess

from helpers.paths import ROOT
from helpers.tool import run_cli
from clockbench.cli import osvm

README = (ROOT / "README.md").read_text()


def make(*args: str) -> str:
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], capture_output=True, text=True,
                          timeout=120).stdout


def test_readme_says_how_to_pass_languages_through_make_and_make_passes_them():
    assert "make os-bench OS_ARGS='--lang go,python'" in README and "make os-vm OS_VM_ARGS='--lang go,python'" in README
    dry = make("-n", "os-bench", "OS_ARGS=--lang go,python")
    assert re.search(r"clockbench-os --lang go,python", dry) and "--all-clocksources" not in dry, dry
    dry = make("-n", "os-bench", "OS_ARGS=--all-clocksources --lang go,python")
    assert re.search(r"clockbench-os --all-clocksources --lang go,python", dry), dry
    dry = make("-n", "os-vm", "OS_VM_ARGS=--lang go,python")
    assert re.search(r"clockbench os-vm .* --lang go,python", dry), dry


def test_make_helps_os_vm_example_is_accepted(capsys, tmp_path):
    line = next(l for l in make("help").splitlines() if l.startswith("make os-vm"))
    example = re.search(r"OS_VM_ARGS='([^']*)'", line).group(1)
    args = shlex.split(example.replace("--args=...", "--args=--quick"))
    # options are checked first (64); past them, the missing program is 66
    r = run_cli(capsys, "os-vm", *args, "--program", tmp_path / "no-program", "--kernel", tmp_path / "no-kernel")
    assert r.code != 64, (example, r.err)
    r = run_cli(capsys, "os-vm", "--no-lang", "--lang", "go,python", "--program", tmp_path / "no-program")
    assert r.code == 64 and "--no-lang and --lang" in r.err


def test_readme_says_where_os_bench_is_shown_that_only_the_lab_mode_switches_the_clocksource():
    first = README.index("`make os-bench` runs it")
    paragraph = README[first:README.index("\n\n", first)]
    assert "changes nothing on the machine, as root too" in paragraph, paragraph
    assert "about 20 s" in paragraph and "OS_ARGS=--all-clocksources" in paragraph, paragraph
    side = (ROOT / "docs" / "os-side.md").read_text()
    block = side[side.index("make os-bench  "):]
    assert "current clocksource" in block[:200] and "OS_ARGS=--all-clocksources" in block[:400] and "about 20 s" in block[:400]
    helped = next(l for l in make("help").splitlines() if l.startswith("make os-bench"))
    assert "OS_ARGS=--all-clocksources" in helped and "changes nothing" in helped, helped


def test_host_tool_doc_gives_os_vms_real_time_bounds():
    doc = (ROOT / "docs" / "host-tool.md").read_text()
    row = next(l for l in doc.splitlines() if l.startswith("| `os-vm` |"))
    assert f"default {osvm.DEFAULT_LANG_TIMEOUT_S} s with the languages, {osvm.DEFAULT_TIMEOUT_S} s with `--no-lang`" in row, row


def fake_system(tmp_path):
    """A PATH where dpkg-query says every package is installed and python3
    notes each call (the Python sets' installers) in calls.txt."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("dpkg-query", "printf 'install ok installed'\n"),
                       ("python3", f"echo \"$@\" >> {tmp_path / 'calls.txt'}\nexit 1\n")):
        p = bin_dir / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_os_vm_installs_its_own_set_and_no_python_sets(tmp_path):
    dry = make("-n", "os-vm")
    installs = [l.split()[1] for l in dry.splitlines() if l.startswith("scripts/install-deps.sh")]
    assert installs == ["osvm"], installs
    text = (ROOT / "scripts" / "install-deps.sh").read_text()
    body = re.search(r"^osvm_packages=\((.*?)^\)", text, re.S | re.M).group(1)
    osvm_set = {w for line in body.splitlines() for w in line.split("#")[0].split()}
    assert {"qemu-system-x86", "strace", "libc6-dev", "python3-venv"} <= osvm_set
    assert not osvm_set & {"ansible-core", "chromium", "shellcheck", "grub-pc-bin", "xorriso", "python3-pytest"}
    # with every Debian package present, osvm starts no Python installer (labgrid, the linters, SPDX, pip's set)
    env = fake_system(tmp_path)
    # a copy of the script in a tree with no build/: every Python set would be missing there
    script = tmp_path / "tree" / "scripts" / "install-deps.sh"
    script.parent.mkdir(parents=True)
    script.write_text((ROOT / "scripts" / "install-deps.sh").read_text())
    r = subprocess.run(["bash", str(script), "osvm"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "calls.txt").exists(), (tmp_path / "calls.txt").read_text()
    # where `all` would: the check above can fail
    r = subprocess.run(["bash", str(script), "all"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and (tmp_path / "calls.txt").exists()
