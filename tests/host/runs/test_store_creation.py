"""A new store made while others open it (tools/clockbench/runs/store.py):
no opener ever meets a half-made store, and none is refused or made to
fail by another's creation. The windows are held open on purpose (a
creator paused between its schema and its application id; a writer
holding the lock while a store is switched to WAL), not left to load."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers.logs import KVM, TCG
from helpers.paths import ROOT
from clockbench.runs import store

# A creator that stops just before it writes the application id (its tables
# made, their transaction still open), says so in a file, and goes on when
# told: then adds one run.
PAUSED_CREATOR = r"""
import os, sqlite3, sys, time
sys.path.insert(0, sys.argv[1])
from clockbench.runs import store
db, paused, go, log = sys.argv[2:6]
connect = sqlite3.connect
def pause(sql):
    if sql.lstrip().upper().startswith("PRAGMA APPLICATION_ID ="):
        open(paused, "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
def traced(*a, **k):
    c = connect(*a, **k)
    c.set_trace_callback(pause)
    return c
sqlite3.connect = traced
with store.open_store(db) as st:
    sqlite3.connect = connect
    st.add_log(open(log).read(), "creator", "capture")
"""


def _wait_for(path: Path, proc: subprocess.Popen, bound_s: float = 60) -> None:
    deadline = time.monotonic() + bound_s
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the creator ended before it paused: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail(f"the creator did not pause within {bound_s:g} s")
        time.sleep(0.01)


def test_an_opener_never_meets_a_store_half_made(tmp_path, monkeypatch):
    db, paused, go = tmp_path / "s.db", tmp_path / "paused", tmp_path / "go"
    creator = subprocess.Popen([sys.executable, "-c", PAUSED_CREATOR, str(ROOT / "tools"), str(db), str(paused), str(go),
                                str(TCG)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(paused, creator)
        # the creator is between its tables and its application id: at the
        # store's own name there is nothing yet, or a whole store
        if db.exists():
            look = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                got = (look.execute("PRAGMA application_id").fetchone()[0], look.execute("PRAGMA user_version").fetchone()[0])
            finally:
                look.close()
            assert got == (store.APPLICATION_ID, store.SCHEMA_VERSION), f"{db} half-made: application id, version {got}"
        # and another opener neither waits for the creator nor is refused
        monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 2.0)
        with store.open_store(db) as st:
            st.add_log(KVM.read_text(), "opener", "capture")
    finally:
        go.touch()
        out, err = creator.communicate(timeout=120)
    assert creator.returncode == 0, err
    with store.open_store(db) as st:
        assert sorted(st.machines()) == ["creator", "opener"] and st.version == store.SCHEMA_VERSION
    # what the creator made aside and did not need is gone
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def _empty_file(path: Path) -> None:
    path.write_bytes(b"")


def _first_schema_store(path: Path) -> None:
    """A store as the first schema's tool left it, in SQLite's rollback mode."""
    c = sqlite3.connect(str(path), isolation_level=None)
    for stmt in store.MIGRATIONS[0].split(";"):
        if stmt.strip():
            c.execute(stmt)
    c.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    c.execute("PRAGMA user_version = 1")
    c.close()


@pytest.mark.parametrize("make", [_empty_file, _first_schema_store], ids=["empty-file", "first-schema"])
def test_switching_to_wal_waits_for_a_writer_as_any_write_does(tmp_path, make, monkeypatch):
    """SQLite refuses a switch to WAL at once, without its busy wait, while
    another connection holds the write lock (as a second opener's switch or
    migration does): the store waits for it, within BUSY_TIMEOUT_S."""
    db = tmp_path / "s.db"
    make(db)
    holder = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False)  # released by the timer's thread
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.5, holder.execute, ("ROLLBACK",))
    release.start()
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 20.0)
    try:
        t0 = time.monotonic()
        with store.open_store(db) as st:
            waited_s = time.monotonic() - t0
            st.add_log(TCG.read_text(), "m", "capture")
            assert st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert st.version == store.SCHEMA_VERSION and st.count() == 1
    finally:
        release.join()
        holder.close()
    assert 0.4 < waited_s < 20, waited_s


def test_where_no_hard_link_can_be_made_the_store_is_made_in_place(tmp_path, monkeypatch):
    """Some file systems (FAT on a stick) have no hard links: the store is
    then made at its own name, as before, and nothing is left beside it."""
    def no_link(src, dst):
        raise PermissionError(1, "Operation not permitted", str(dst))

    monkeypatch.setattr(store.os, "link", no_link)
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        st.add_log(TCG.read_text(), "m", "capture")
        assert st.version == store.SCHEMA_VERSION and st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with store.open_store(db) as st:
        assert st.count() == 1
