"""`compare`, `report` (and its --os) and `export` take a run's id in the
store wherever they take a log (issue 39, point 5): `clockbench runs`
lists ids, and `clockbench compare 1 2` compares those runs. A file of that
name wins over an id; an id the store does not hold is one line, exit 66,
saying what the store holds; nothing is written."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers.tool import run_cli as cli

from helpers.paths import ROOT  # noqa: E402
TCG = ROOT / "tests" / "fixtures" / "tcg-q35.log"
KVM = ROOT / "tests" / "fixtures" / "kvm-q35.log"
OS_TCG = ROOT / "tests" / "fixtures" / "os-vm-tcg-q35.log"


def store_of(capsys, tmp_path, *logs) -> Path:
    db = tmp_path / "s.db"
    code, out, err = cli(capsys, "import", "--store", db, *logs)
    assert code == 0, err
    return db


def test_compare_takes_store_ids(capsys, tmp_path, monkeypatch):
    db = store_of(capsys, tmp_path, TCG, KVM)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "compare", "--store", db, "1", "2")
    assert code == 0, err
    head = out.splitlines()[0]
    assert "run 1" in head and "run 2" in head
    by_file = cli(capsys, "compare", TCG, KVM)[1]
    assert out.splitlines()[1:] == by_file.splitlines()[1:]  # the same table as from the logs


def test_compare_mixes_ids_and_logs_bare_and_os(capsys, tmp_path, monkeypatch):
    db = store_of(capsys, tmp_path, OS_TCG)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "compare", "--store", db, TCG, "1")
    assert code == 0, err
    assert "run 1 (through the OS)" in out


def test_an_id_the_store_does_not_hold_is_one_line_66(capsys, tmp_path, monkeypatch):
    db = store_of(capsys, tmp_path, TCG, KVM)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "compare", "--store", db, "1", "9")
    assert code == 66 and out == ""
    assert err.strip().splitlines() == [f"clockbench compare: 9: no such file, and no run 9 in {db} (it holds runs 1-2)"]
    code, out, err = cli(capsys, "compare", "--store", tmp_path / "none.db", "1")
    assert code == 66 and len(err.strip().splitlines()) == 1 and "no store" in err


def test_a_file_named_like_an_id_wins(capsys, tmp_path, monkeypatch):
    db = store_of(capsys, tmp_path, KVM)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "1").write_text(TCG.read_text())
    code, out, err = cli(capsys, "compare", "--store", db, "1", TCG)
    assert code == 0
    assert "KVM" not in out.splitlines()[1]


def test_report_takes_a_store_id_and_its_os_runs_too(capsys, tmp_path, monkeypatch):
    kept = tmp_path / "kept" / "tcg-q35.log"  # beside which the report of run 1 goes (test_newuser_report_dir.py)
    kept.parent.mkdir()
    kept.write_text(TCG.read_text())
    db = store_of(capsys, tmp_path, kept, OS_TCG)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "report", "--store", db, "1", "--no-html")
    assert code == 0, err
    assert (tmp_path / "kept" / "tcg-q35" / "results.json").is_file() and not (tmp_path / "run-1").exists()
    code, out, err = cli(capsys, "report", "--store", db, "9", "--no-html")
    assert code == 66 and not (tmp_path / "run-9").exists() and not (tmp_path / "reports").exists()
    code, out, err = cli(capsys, "report", "--store", db, "1", "--os", "2", "--os", "7", "--out", tmp_path / "r")
    assert code == 66 and "7: no such file, and no run 7" in err


def test_export_takes_ids(capsys, tmp_path, monkeypatch):
    db = store_of(capsys, tmp_path, TCG, KVM)
    code, out, err = cli(capsys, "export", "--store", db, "--out", tmp_path / "x", "2")
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "x" / "runs.csv").open()))
    assert [r["id"] for r in rows] == ["2"]
    assert {r["run_id"] for r in csv.DictReader((tmp_path / "x" / "figures.csv").open())} == {"2"}
    code, out, err = cli(capsys, "export", "--store", db, "--out", tmp_path / "y", "2", "5")
    assert code == 66 and not (tmp_path / "y").exists()
    assert "no run 5" in err and "nothing was written" in err
