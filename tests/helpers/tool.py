"""The host tool as the tests run it: in this process (fast: run_cli), or
as a user runs it, a separate Python in any folder (run_process, tool);
the arguments of a `clockbench run` that keeps its runs in a folder of the
test's (run_argv, err_lines, kept_nothing); a store another process holds
locked (store_locked); a whole `clockbench run` read back from the one
folder it kept (kept_run), made once and read by every test that asks for
it again; and what a test does when something `make deps` installs is
missing (not_installed, need_tool: a failure under CI; need_module: a
failure anywhere)."""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "tools"))

from clockbench import errors  # noqa: E402
from clockbench.cli import main as cli_main  # noqa: E402
from clockbench.records import records  # noqa: E402
from clockbench.runs import store  # noqa: E402

PYTHON = "/usr/bin/python3"  # the Python a user's `clockbench` runs under


def tool_env(**extra: str) -> dict[str, str]:
    """This process's environment with the tool's package on the path."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "tools"), **extra}


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def __iter__(self):
        """code, out, err = run_cli(...)"""
        return iter((self.code, self.out, self.err))

    def __getitem__(self, i):
        return (self.code, self.out, self.err)[i]


def run_cli(capsys, *args: str) -> Ran:
    """The command in this process (fast); SystemExit from argparse becomes
    its code."""
    try:
        code = cli_main.main([str(a) for a in args])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    got = capsys.readouterr()
    return Ran(code, got.out, got.err)


def tool(*args, timeout: float = 300, stdin: str | None = None, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python3 -m clockbench ARGS` as a user types it, in a process of its
    own: what it printed, as text, and its exit status."""
    return subprocess.run([PYTHON, "-m", "clockbench", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          input=stdin, cwd=cwd, env=env if env is not None else tool_env())


def run_process(*args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 120) -> Ran:
    """The command as a user runs it: a separate Python, any folder, and
    no CLOCKBENCH_DEBUG (its tracebacks are what the tests rule out)."""
    env = tool_env()
    env.pop("CLOCKBENCH_DEBUG", None)
    r = tool(*args, timeout=timeout, stdin=stdin, cwd=cwd, env=env)
    return Ran(r.returncode, r.stdout, r.stderr)


def run_argv(runs_dir: Path, *first) -> list:
    """`run FIRST...` keeping its runs in runs_dir, storing nothing and
    writing no report page: the options a test's own follow it."""
    return ["run", *first, "--runs-dir", runs_dir, "--store", "none", "--no-report"]


def err_lines(got: Ran) -> list[str]:
    """What the command said on stderr, blank lines left out."""
    return [l for l in got.err.splitlines() if l.strip()]


def kept_nothing(runs_dir: Path) -> bool:
    return not runs_dir.exists() or not any(runs_dir.iterdir())


@dataclass
class KeptRun:
    """One `clockbench run` through the real command line, in a process of
    its own, read back from the one run folder it kept: what a user gets."""
    argv: list[str]
    code: int
    out: str  # what the tool printed: stdout, then stderr
    seconds: float
    folder: Path
    log: str  # run.log
    meta: dict  # metadata.json
    records: list


_kept: dict[str, KeptRun] = {}


def kept_run(name: str, args: list, tmp_root: Path, timeout_s: float) -> KeptRun:
    """`clockbench run ARGS --runs-dir TMP_ROOT/runs-NAME`, run once per
    name in this process and handed to every test that asks for it again.
    timeout_s bounds the process (the tool's own --timeout is in ARGS).
    The run must have kept exactly one folder."""
    if name not in _kept:
        runs_dir = tmp_root / f"runs-{name}"
        argv = [sys.executable, "-m", "clockbench", "run", *map(str, args), "--runs-dir", str(runs_dir)]
        t0 = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, env=tool_env(), timeout=timeout_s)
        seconds = time.monotonic() - t0
        # no folder at all (the tool refused before it made one) is the same failure, with what the tool said
        folders = [p for p in runs_dir.iterdir() if p.is_dir()] if runs_dir.is_dir() else []
        assert len(folders) == 1, (folders, r.stdout[-2000:], r.stderr[-2000:])
        log = (folders[0] / "run.log").read_text()
        meta = json.loads((folders[0] / "metadata.json").read_text())
        _kept[name] = KeptRun(argv, r.returncode, r.stdout + r.stderr, seconds, folders[0], log, meta,
                              records.parse_log(log).records)
        print(f"\n{name}: `clockbench run` took {seconds:.1f} s")
    return _kept[name]


@contextmanager
def store_locked(db: Path):
    """A new store at db, held locked by another connection (BEGIN
    EXCLUSIVE) while the block runs, as another process's write holds it."""
    store.open_store(db).close()
    holder = sqlite3.connect(str(db), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield db
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def documented(code: int) -> bool:
    """An exit status docs/output.md lists."""
    return errors.documented(code)


def not_installed(why: str, skip_why: str | None = None) -> None:
    """Something `make deps` installs is missing: a failure under CI=true
    (saying why), else a skip (saying skip_why, or why)."""
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(skip_why or why)


def need_tool(what: str, present) -> None:
    """A tool `make deps` installs: missing is a failure under CI, a skip
    with the reason elsewhere."""
    if not present:
        not_installed(f"{what} is not installed: run `make deps`")


def need_module(module: str, package: str):
    """A library `make deps` installs: missing is a failure, never a skip."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.fail(f"{module} is not installed (Debian: {package}; `make deps`)")
