"""A deleted run stays deleted (issue 39, point 6). `runs --delete` takes
the run, its checks and figures out of the store, and says that its kept
folder (or log) stays where it was; the store remembers the run by its
log's SHA-256, so `clockbench import build/runs/`, the documented way to
rebuild a store, leaves it out, under any machine name. `import --again`
adds it back on purpose."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers.tool import run_cli as cli
from clockbench.runs import store

from helpers.paths import ROOT  # noqa: E402
TCG = ROOT / "tests" / "fixtures" / "tcg-q35.log"
KVM = ROOT / "tests" / "fixtures" / "kvm-q35.log"


def runs_folder(tmp_path) -> Path:
    """Two kept run folders, as `clockbench run` leaves them."""
    top = tmp_path / "runs"
    for name, log in (("2026-01-01T00-00-00Z-aaaaaa", TCG), ("2026-01-02T00-00-00Z-bbbbbb", KVM)):
        d = top / name
        d.mkdir(parents=True)
        (d / "run.log").write_text(log.read_text())
        (d / "metadata.json").write_text(json.dumps({"qemu": {"machine": "q35", "accel": "tcg", "firmware": "bios", "smp": 1},
                                                    "host": {"name": "h"}}))
    return top


def ids(db) -> list[int]:
    with store.open_store(db, create=False) as st:
        return [r["id"] for r in st.runs()]


def test_a_deleted_run_is_not_imported_again(capsys, tmp_path):
    db, top = tmp_path / "s.db", runs_folder(tmp_path)
    assert cli(capsys, "import", "--store", db, top)[0] == 0
    assert len(ids(db)) == 2
    code, out, err = cli(capsys, "runs", "--store", db, "--delete", "1")
    assert code == 0, err
    assert "deleted run 1; 1 run left" in out
    assert f"stays in {top / '2026-01-01T00-00-00Z-aaaaaa'}" in out and "import --again" in out
    code, out, err = cli(capsys, "import", "--store", db, top)
    assert code == 0, err
    assert "0 added, 1 already there, 1 deleted before and left out, 0 skipped; 1 run in" in out
    assert ids(db) == [2]
    # nor under another name, nor as a bare log
    code, out, err = cli(capsys, "import", "--store", db, "--machine", "other", top / "2026-01-01T00-00-00Z-aaaaaa" / "run.log")
    assert code == 0 and ids(db) == [2] and "run 1, deleted from the store" in out


def test_import_again_adds_it_back_and_forgets_the_deletion(capsys, tmp_path):
    db, top = tmp_path / "s.db", runs_folder(tmp_path)
    cli(capsys, "import", "--store", db, top)
    cli(capsys, "runs", "--store", db, "--delete", "1", "2")
    code, out, err = cli(capsys, "import", "--store", db, "--again", top)
    assert code == 0 and "2 added" in out
    assert len(ids(db)) == 2
    with store.open_store(db, create=False) as st:
        assert st._query("SELECT count(*) FROM deleted_runs")[0][0] == 0


def test_an_older_store_is_migrated_and_deletes_as_well(capsys, tmp_path):
    db = tmp_path / "old.db"
    with store.open_store(db) as st:
        st.add_log(TCG.read_text(), "m", "import")
    c = sqlite3.connect(str(db))
    c.execute("DROP TABLE deleted_runs")
    c.execute("DROP INDEX runs_tool")  # and migration 6's
    for col in store.OS_COLUMNS:
        c.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    c.execute("PRAGMA user_version = 4")
    c.commit()
    c.close()
    assert cli(capsys, "runs", "--store", db, "--delete", "1")[0] == 0
    code, out, err = cli(capsys, "import", "--store", db, TCG)
    assert code == 0 and ids(db) == []
