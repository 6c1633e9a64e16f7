"""The Makefile as a new user meets it: `make help` names every target the
Makefile declares .PHONY (read from the Makefile itself, so a new target
without a help line fails here), and what each entry point installs, read
from `make -n` (nothing is built or installed): `make run` and `make
run-direct` only the run set (`scripts/install-deps.sh run`), `make test`
everything; a DEPS given on the command line wins."""

from __future__ import annotations

import re
import subprocess

import pytest

from helpers.paths import ROOT


def _make(*args: str) -> str:
    r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def phony_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    found = set()
    for line in text.splitlines():
        m = re.match(r"\.PHONY\s*:(.*)", line)
        if m:
            found.update(m.group(1).split())
    return found


def test_help_names_every_phony_target():
    targets = phony_targets()
    assert {"all", "kernel", "run", "run-direct", "test", "help", "netboot"} <= targets, targets
    helped = set(re.findall(r"(?:^|[\s(])make ([a-z][a-z0-9-]*)", _make("help"), re.M))
    missing = sorted(targets - helped)
    assert not missing, f"`make help` leaves out {missing}"


def _installs(target: str, *extra: str) -> list[str]:
    return [line.split()[1] for line in _make("-n", target, *extra).splitlines()
            if line.startswith("scripts/install-deps.sh")]


@pytest.mark.parametrize("target", ["run", "run-direct"])
def test_run_installs_the_run_set_only(target):
    assert _installs(target) == ["run"]
    assert _installs(target, "RUN_ARGS=--boot pvh") == ["run"]
    assert _installs(target, "DEPS=all") == ["all"]


def test_test_installs_everything():
    assert _installs("test") == ["all"]


def test_run_passes_no_iso_to_a_netboot():
    line = next(l for l in _make("-n", "run", "RUN_ARGS=--boot netboot").splitlines() if " run " in l and "clockbench" in l)
    assert "--iso" not in line and line.rstrip().endswith("run --boot netboot"), line
    line = next(l for l in _make("-n", "run", "RUN_ARGS=--boot pvh").splitlines() if " run " in l and "clockbench" in l)
    assert "--iso build/clockbench.iso --boot pvh" in line, line


def test_no_recipe_message_runs_a_command_by_backquotes():
    """A backquote in a recipe's echo is a command substitution: the shell
    runs what it quotes. `make os-bench`'s last line once said "(`make run`
    keeps one ...)" and so booted the image after every os-bench (80 s of a
    test that meant to read one line)."""
    text = (ROOT / "Makefile").read_text()
    bad = [line.strip() for line in text.splitlines() if re.match(r"\s+@?echo\b", line) and "`" in line]
    assert not bad, bad
