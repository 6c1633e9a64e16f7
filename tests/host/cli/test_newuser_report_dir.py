"""Where `clockbench report` writes (issue 44, section 5): a report of a
stored run goes beside the run, never into the current folder; a link to
a kept run (build/os-vm.log, build/run.log) is followed to the run's own
folder, as `clockbench run` writes its report; and a plain LOG.log beside a
folder LOG/ of something else (os-vm's runtime cache, build/os-vm/) never
writes into that folder."""

from __future__ import annotations

import os

from helpers.paths import FIXTURES
from helpers.tool import run_cli

TCG = FIXTURES / "tcg-q35.log"
OS_VM = FIXTURES / "os-vm-lang-intervals.log"


def test_report_of_a_stored_run_goes_beside_the_run_not_into_the_current_folder(capsys, tmp_path, monkeypatch):
    run_dir = tmp_path / "build" / "os-vm-runs" / "host-os-vm-2026-11-28T00-00-00Z"  # make os-vm's kept run
    run_dir.mkdir(parents=True)
    (run_dir / "os.log").write_text(OS_VM.read_text())
    loose = tmp_path / "elsewhere" / "tcg-q35.log"
    loose.parent.mkdir()
    loose.write_text(TCG.read_text())
    db = tmp_path / "build" / "clockbench.db"
    # imported by a relative path, as `make os-vm` does from the checkout
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "import", "--store", db, os.path.relpath(run_dir, tmp_path), loose).code == 0
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    r = run_cli(capsys, "report", "--store", db, "1")
    assert r.code == 0, r
    assert (run_dir / "report.html").is_file() and (run_dir / "results.json").is_file()
    r = run_cli(capsys, "report", "--store", db, "2", "--no-html")
    assert r.code == 0, r
    assert (loose.parent / "tcg-q35" / "results.json").is_file()
    # a run whose log is no longer where it was kept: beside the store, from the store's copy
    (loose.parent / "tcg-q35.log").unlink()
    r = run_cli(capsys, "report", "--store", db, "2", "--no-html")
    assert r.code == 0, r
    assert (db.parent / "reports" / "run-2" / "run.log").read_text() == TCG.read_text()
    assert (db.parent / "reports" / "run-2" / "results.json").is_file()
    assert list(cwd.iterdir()) == []


def test_report_of_os_vms_log_never_writes_into_its_runtime_cache(capsys, tmp_path):
    build = tmp_path / "build"
    cache = build / "os-vm"  # os-vm's runtime cache: the jlink runtime, the runtimes' file lists
    (cache / "jre").mkdir(parents=True)
    (cache / "python.json").write_text("{}")
    # `clockbench os-vm`'s own default log: a plain file
    (build / "os-vm.log").write_text(OS_VM.read_text())
    r = run_cli(capsys, "report", build / "os-vm.log", "--no-html")
    assert r.code == 0, r
    assert sorted(p.name for p in cache.iterdir()) == ["jre", "python.json"]
    assert (build / "os-vm-report" / "results.json").is_file()
    # `make os-vm`'s: a link to the newest kept run, whose folder the report goes into
    run_dir = build / "os-vm-runs" / "host-os-vm-2026-11-28T00-00-00Z"
    run_dir.mkdir(parents=True)
    (run_dir / "os.log").write_text(OS_VM.read_text())
    (build / "os-vm.log").unlink()
    (build / "os-vm.log").symlink_to("os-vm-runs/host-os-vm-2026-11-28T00-00-00Z/os.log")
    r = run_cli(capsys, "report", build / "os-vm.log", "--no-html")
    assert r.code == 0, r
    assert (run_dir / "results.json").is_file() and sorted(p.name for p in cache.iterdir()) == ["jre", "python.json"]
    # an ordinary log still has its report in LOG/, and again there: a report's own folder is not something else
    log = tmp_path / "logs" / "a.log"
    log.parent.mkdir()
    log.write_text(TCG.read_text())
    for _ in range(2):
        r = run_cli(capsys, "report", log, "--no-html")
        assert r.code == 0, r
        assert sorted(p.name for p in log.parent.iterdir()) == ["a", "a.log"]
