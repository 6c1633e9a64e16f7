"""One path from plan to record (docs/architecture.md, the host tool): the
run command's orchestrator (cli/runner.py) hands a run to each of its stages
once, and is no helper library itself. Measured as the issue that asked for
it measured it: the main thread's calls from the orchestrator's module into
another of the tool's modules, over a whole `clockbench run` whose machine
is replaced by a real log; a call into a module the run had already handed
control to counts as a return (18 before the stages were split)."""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path

from helpers.paths import ROOT
from clockbench.cli import main as cli
from clockbench.machines import qemu
from clockbench.runs import runs

TCG = ROOT / "tests" / "fixtures" / "tcg-q35.log"
RUNNER = ROOT / "tools" / "clockbench" / "cli" / "runner.py"
MOST_RETURNS = 5


def _module(frame) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if name.startswith("clockbench") else None


def _calls_from_the_runner(monkeypatch, tmp_path) -> collections.Counter:
    text = TCG.read_text()

    def fake(cfg, timeout, echo=None, stop=None):
        if echo:
            echo(text)
        return qemu.RunResult(command=["qemu-system-x86_64"], accel="tcg", qemu_exit=33, status=0, output=text,
                              stderr="", seconds=0.1, timed_out=False, timeout_s=timeout)

    monkeypatch.setattr(qemu, "run", fake)
    monkeypatch.setattr(runs, "qemu_version", lambda binary="": "QEMU emulator version 7.2.0 (a test's)")
    kernel = tmp_path / "clockbench.elf"
    kernel.write_bytes(b"elf")
    handed: list[str] = []
    running = []  # from cmd_run on: the parser's making is not the run's path

    def profile(frame, event, arg):
        if event != "call" or _module(frame) is None:
            return
        if frame.f_code.co_name == "cmd_run" and _module(frame) == "clockbench.cli.runner":
            running.append(True)
        if not running:
            return
        caller = frame.f_back
        while caller is not None and _module(caller) is None:
            caller = caller.f_back
        if caller is not None and _module(caller) == "clockbench.cli.runner" and _module(frame) != "clockbench.cli.runner":
            handed.append(_module(frame))

    sys.setprofile(profile)
    try:
        code = cli.main(["run", "--boot", "direct", "--accel", "tcg", "--kernel", str(kernel), "--runs-dir",
                         str(tmp_path / "runs"), "--no-report", "--store", "none"])
    finally:
        sys.setprofile(None)
    assert code == 0
    return collections.Counter(handed)


def test_a_run_comes_back_to_a_module_it_left_at_most_five_times(monkeypatch, tmp_path, capsys):
    handed = _calls_from_the_runner(monkeypatch, tmp_path)
    assert {"clockbench.cli.run_plan", "clockbench.cli.run_machine", "clockbench.cli.run_keep"} <= set(handed), handed
    returns = sum(n - 1 for n in handed.values())
    assert returns <= MOST_RETURNS, f"{returns} returns: {dict(handed)}"


def test_the_orchestrator_is_no_helper_library():
    """cli/runner.py defines the command's parser and its one orchestrating
    function, nothing a stage would call back."""
    defined = [n.name for n in ast.parse(RUNNER.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert defined == ["add_parser", "cmd_run"], defined
    others = [p for p in RUNNER.parent.glob("*.py") if p != RUNNER]
    users = [p.name for p in others if "clockbench.cli import" in p.read_text() and " runner" in p.read_text()
             and p.name != "main.py"]
    assert not users, f"modules that call back into the orchestrator: {users}"
