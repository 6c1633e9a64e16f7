"""`clockbench run` adds its run to the store (runner.py's hook, store.py):
the run's QEMU configuration names the machine and fills what the log cannot
say; a store another process holds locked costs nothing but a line saying
how to import the kept log later."""

from __future__ import annotations

import socket
import subprocess
import sys

from helpers.paths import KERNEL
from helpers.tool import store_locked, tool_env
from clockbench.runs import store


def run(tmp_path, *extra, env=None):
    return subprocess.run([sys.executable, "-m", "clockbench", "run", "--boot", "direct", "--kernel", str(KERNEL),
                           "--accel", "tcg", "--append", "duration=1 only=drift", "--runs-dir", str(tmp_path / "runs"),
                           "--no-report", *extra], capture_output=True, text=True, timeout=300,
                          env=tool_env(**(env or {})))


def test_run_stores_itself(tmp_path):
    db = tmp_path / "s.db"
    r = run(tmp_path, "--store", str(db), "--smp", "2", "--machine", "pc")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"stored as run 1 in {db}" in r.stdout
    with store.open_store(db) as st:
        [row] = st.runs()
    assert row["machine"] == f"{socket.gethostname()}/pc-tcg-bios-smp2"
    assert (row["source"], row["firmware"], row["boot"], row["status"], row["exit"]) == ("run", "bios", "direct", "passed", 0)
    assert row["log_path"].startswith(str(tmp_path / "runs")) and row["seconds"] > 0
    assert "rate_hz:tsc/hpet" in row.figures and row.checks


def test_a_locked_store_costs_the_run_nothing(tmp_path):
    db = tmp_path / "s.db"
    with store_locked(db):
        r = run(tmp_path, "--store", str(db), "--name", "bench-1", env={"CLOCKBENCH_STORE_TIMEOUT": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not stored:" in r.stdout and "locked" in r.stdout and "clockbench import" in r.stdout
    log = r.stdout.split("clockbench import ")[1].split(" ")[0].rstrip(")`")
    r = subprocess.run([sys.executable, "-m", "clockbench", "import", log, "--machine", "bench-1", "--store", str(db)],
                       capture_output=True, text=True, env=tool_env())
    assert r.returncode == 0 and "1 added" in r.stdout, r.stdout + r.stderr


def test_store_none_writes_nothing(tmp_path):
    r = run(tmp_path, "--store", "none")
    assert r.returncode == 0 and "stored" not in r.stdout
