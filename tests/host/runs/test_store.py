"""The store of runs (tools/clockbench/runs/store.py, figures.py, storecli.py):
the real fixture logs imported and their figures checked against their own
records; kept run folders; many processes writing at once; a locked, a
damaged, a foreign and a newer store; a log that is not ours; a migration
from the first schema; CSV and Parquet exports."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.logs import EPYC, KVM, TCG
from helpers.paths import ROOT
from helpers.tool import need_tool, run_cli, store_locked, tool_env
from clockbench import errors
from clockbench.records import figures, records, results
from clockbench.runs import store

IMAGE_LOGS = [TCG, KVM, EPYC]


def test_fixture_logs_become_rows_with_their_own_figures(tmp_path):
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        for log in IMAGE_LOGS:
            st.add_log(log.read_text(), log.stem, "import", meta={"log_path": str(log)})
        got = {r["machine"]: r for r in st.runs()}
    assert set(got) == {p.stem for p in IMAGE_LOGS}
    for log in IMAGE_LOGS:
        text = log.read_text()
        recs = records.parse_log(text).records
        run = got[log.stem]
        prof = records.of_type(recs, "profile")[0]
        assert run.figures["tsc_hz"].value == prof["tsc_hz"]
        assert run["profile"] == prof["name"] and run["status"] == "passed" and run["exit"] == 0
        machine = records.of_type(recs, "machine")[0]
        assert run["cpu_vendor"] == machine["vendor"] and run["cpu_model"] == machine["model"]
        assert len(run.checks) == len(records.of_type(recs, "check"))
        summary = records.of_type(recs, "summary")[0]
        assert run.figures["checks_fail"].value == summary["fail"] and run.figures["checks_pass"].value == summary["pass"]
        hw = records.of_type(recs, "hwlat")[0]
        assert run.figures["stolen_max_ns"].value == hw["max_gap_ns"]
        choice = records.of_type(recs, "timer_choice")[0]
        assert run.figures["timer_p50_ns"].value == choice["p50_ns"]
        if choice.get("p99_ns") is None:  # too few events for a p99: none is kept, the p50 is
            assert "timer_p99_ns" not in run.figures
        else:
            assert run.figures["timer_p99_ns"].value == choice["p99_ns"]
        for f in records.of_type(recs, "frequency"):
            assert run.figures[f"rate_hz:{f['counter']}/{f['reference']}"].value == f["hz"]
        for name, lat in results.from_log(text)["latency"].items():
            if lat.get("below_step"):  # below the TSC's step: no figure to compare
                assert f"read_p50_ns:{name}" not in run.figures
            else:
                assert run.figures[f"read_p50_ns:{name}"].value == lat["p50_ns"]
    # the KVM run's TSC claim (cpuid.40000010h) and how far the measured rate is from it
    kvm = got[KVM.stem].figures
    claim = records.one(records.parse_log(KVM.read_text()).records, "freq_claim", source="cpuid.40000010h", what="tsc")["hz"]
    assert kvm["tsc_claim_hz"].value == claim
    assert kvm["tsc_vs_claim_ppm"].value == pytest.approx((kvm["tsc_hz"].value / claim - 1) * 1e6)
    assert "tsc_claim_hz" not in got[TCG.stem].figures  # TCG claims nothing


def test_cross_cpu_offset_is_the_widest_bound():
    recs = [{"type": "tsc_sync", "cpu": 1, "offset_lo_ns": -20.0, "offset_hi_ns": 35.5, "warps": 0},
            {"type": "tsc_sync", "cpu": 2, "offset_lo_ns": -80.25, "offset_hi_ns": 10.0, "warps": 2},
            {"type": "cpu", "index": 0, "started": True}, {"type": "cpu", "index": 1, "started": True},
            {"type": "cpu", "index": 2, "started": True}, {"type": "cpu", "index": None, "started": False}]
    f = {x.name: x for x in figures.derive(results.from_log(TCG.read_text()), recs)}
    assert f["cpu_offset_worst_ns"].value == 80.25 and f["cpu_warps"].value == 2 and f["cpus"].value == 3


def test_import_twice_adds_nothing_the_second_time(capsys, tmp_path):
    db = tmp_path / "s.db"
    r = run_cli(capsys, "import", TCG, KVM, "--store", db)
    assert r.code == 0 and "2 added, 0 already there" in r.out, r
    r = run_cli(capsys, "import", TCG, KVM, "--store", db)
    assert r.code == 0 and "0 added, 2 already there" in r.out, r
    r = run_cli(capsys, "runs", "--store", db)
    assert r.code == 0 and r.out.count("passed (0)") == 2 and "tcg-q35" in r.out and "kvm-q35" in r.out, r
    js = json.loads(run_cli(capsys, "runs", "--store", db, "--json").out)
    assert [x["machine"] for x in js] == ["tcg-q35", "kvm-q35"] or {x["machine"] for x in js} == {"tcg-q35", "kvm-q35"}
    assert all("tsc_hz" in x["figures"] and x["checks"] for x in js)


def kept_run(root: Path, log: Path, name: str, **qemu) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "run.log").write_text(log.read_text())
    q = {"machine": "q35", "accel": "tcg", "firmware": "bios", "boot": "direct", "smp": 1, **qemu}
    (d / "metadata.json").write_text(json.dumps({"format": "clockbench-run", "version": 1, "started": "2026-11-20T10:00:00+00:00",
                                                 "host": {"name": "lab1"}, "qemu": q, "exit": 0, "seconds": 4.2,
                                                 "image": {"build": "abc123"}}))
    return d


def test_import_of_a_runs_folder_takes_the_metadata(capsys, tmp_path):
    root = tmp_path / "runs"
    kept_run(root, TCG, "2026-11-20T10-00-00Z-aaaaaa")
    kept_run(root, EPYC, "2026-11-20T10-01-00Z-bbbbbb", machine="pc", firmware="uefi", smp=2)
    (root / "2026-11-20T10-02-00Z-cccccc").mkdir()  # an empty folder is no run: not listed
    r = run_cli(capsys, "import", root, "--store", tmp_path / "s.db")
    assert r.code == 0 and "2 added" in r.out, r
    with store.open_store(tmp_path / "s.db") as st:
        rows = {r["machine"]: r for r in st.runs()}
    assert set(rows) == {"lab1/q35-tcg-bios-smp1", "lab1/pc-tcg-uefi-smp2"}
    assert rows["lab1/pc-tcg-uefi-smp2"]["firmware"] == "uefi" and rows["lab1/pc-tcg-uefi-smp2"]["boot"] == "direct"
    assert rows["lab1/q35-tcg-bios-smp1"]["started"] == "2026-11-20T10:00:00+00:00"
    assert rows["lab1/q35-tcg-bios-smp1"]["seconds"] == 4.2


def test_a_log_that_is_not_ours_is_named_and_the_rest_imported(capsys, tmp_path):
    other = tmp_path / "syslog.txt"
    other.write_text("Nov 24 kernel: hello\n" * 20)
    r = run_cli(capsys, "import", other, TCG, "--store", tmp_path / "s.db")
    assert r.code == errors.BAD_INPUT, r
    assert "1 added" in r.out and "syslog.txt" in r.err and "not a clockbench log" in r.err, r
    assert len(r.err.strip().splitlines()) == 1


WRITER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from clockbench.runs import store
text = open(sys.argv[2]).read()
for i in range(int(sys.argv[5])):
    with store.open_store(sys.argv[3]) as st:
        st.add_log(text + f"writer {sys.argv[4]} run {i}\n", f"m{sys.argv[4]}", "capture")
"""


def test_many_processes_writing_at_once_lose_nothing(tmp_path):
    db = tmp_path / "s.db"
    writers, each = 12, 4
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(ROOT / "tools"), str(TCG), str(db), str(w), str(each)],
                              stderr=subprocess.PIPE, text=True) for w in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    with store.open_store(db) as st:
        assert st.count() == writers * each
        runs = st.runs()
        assert sorted({r["machine"] for r in runs}) == sorted(f"m{w}" for w in range(writers))
        # every run whole: its checks and figures all there
        assert all(len(r.checks) == 33 and "tsc_hz" in r.figures for r in runs)
        assert len(st.runs(latest=True)) == writers
        assert st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_locked_store_is_its_own_exit_status_and_loses_nothing(tmp_path):
    db = tmp_path / "s.db"
    with store_locked(db):
        r = subprocess.run([sys.executable, "-m", "clockbench", "import", str(TCG), "--store", str(db)], capture_output=True,
                           text=True, env=tool_env(CLOCKBENCH_STORE_TIMEOUT="1"), timeout=60)
    assert r.returncode == errors.STORE_BUSY, r
    assert len(r.stderr.strip().splitlines()) == 1 and "locked by another process" in r.stderr, r.stderr
    assert TCG.is_file()
    # the hook `run` and `capture` call: the log stays, and the line says how to import it later
    said = []
    holder = sqlite3.connect(str(db), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    old = store.BUSY_TIMEOUT_S
    store.BUSY_TIMEOUT_S = 0.5
    try:
        assert store.record(db, TCG.read_text(), "m", "capture", {"log_path": str(TCG)}, say=said.append) is None
    finally:
        store.BUSY_TIMEOUT_S = old
        holder.execute("ROLLBACK")
        holder.close()
    assert f"clockbench import {TCG}" in said[0] and "locked" in said[0], said
    with store.open_store(db) as st:
        assert st.count() == 0


def test_damaged_foreign_and_newer_stores_are_refused_unchanged(capsys, tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00\x01not a database at all\n" * 100)
    before = garbage.read_bytes()
    r = run_cli(capsys, "runs", "--store", garbage)
    assert r.code == errors.STORE_CORRUPT and "not a SQLite file" in r.err, r
    r = run_cli(capsys, "import", TCG, "--store", garbage)
    assert r.code == errors.STORE_CORRUPT and garbage.read_bytes() == before, r

    foreign = tmp_path / "foreign.db"
    c = sqlite3.connect(str(foreign))
    c.execute("CREATE TABLE photos (id INTEGER)")
    c.commit()
    c.close()
    r = run_cli(capsys, "import", TCG, "--store", foreign)
    assert r.code == errors.BAD_INPUT and "not a clockbench store" in r.err, r

    newer = tmp_path / "newer.db"
    store.open_store(newer).close()
    c = sqlite3.connect(str(newer))
    c.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    c.commit()
    c.close()
    r = run_cli(capsys, "runs", "--store", newer)
    assert r.code == errors.NEWER_SCHEMA and "update clockbench" in r.err, r

    # a store whose pages were overwritten: SQLite finds it malformed
    broken = tmp_path / "broken.db"
    with store.open_store(broken) as st:
        for log in IMAGE_LOGS:
            st.add_log(log.read_text(), log.stem, "import")
    c = sqlite3.connect(str(broken))
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    data = bytearray(broken.read_bytes())
    page = 4096
    data[page * 2:page * 6] = b"\xa5" * (page * 4)
    broken.write_bytes(bytes(data))
    r = run_cli(capsys, "runs", "--store", broken)
    assert r.code == errors.STORE_CORRUPT and "damaged" in r.err and len(r.err.strip().splitlines()) == 1, r

    r = run_cli(capsys, "runs", "--store", tmp_path / "none.db")
    assert r.code == errors.NO_INPUT, r


def test_a_first_schema_store_is_migrated_and_keeps_its_runs(tmp_path):
    db = tmp_path / "old.db"
    c = sqlite3.connect(str(db), isolation_level=None)
    for stmt in store.MIGRATIONS[0].split(";"):
        if stmt.strip():
            c.execute(stmt)
    c.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    c.execute("PRAGMA user_version = 1")
    c.close()
    # a run written by the first schema's tool: no place, no MAC
    st = store.Store.__new__(store.Store)
    st.path, st.db = db, sqlite3.connect(str(db), isolation_level=None)
    os_log = (TCG.parent / "os-vm-tcg-q35.log").read_text()
    for text, name, res in ((TCG.read_text(), "old", results.from_log(TCG.read_text())), (os_log, "old-os", None),
                            ("", "unreached", None)):
        row = store.run_row(res, text, name, "import", {})
        row.pop("place"), row.pop("mac"), row.pop("tool")
        for k in store.OS_COLUMNS:  # migration 6's
            row.pop(k, None)
        if name == "unreached":
            row["status"] = "incomplete"  # as the first schema's tool stored a run that never reached the image
        st._insert(row, [], [])
    st.db.close()
    with store.open_store(db) as st:
        assert st.version == store.SCHEMA_VERSION == 6
        assert st.acpi_previews() == []  # migration 4's table, empty (tests/host/runs/test_acpi_store.py fills one)
        got = {r["machine"]: r for r in st.runs()}
        assert got["old"]["place"] is None
        # migration 3 reads each old run's tool from its log; an empty one did not run
        assert got["old"]["tool"] == "clockbench" and got["old-os"]["tool"] == store.OS_TOOL
        assert got["unreached"]["tool"] is None and got["unreached"]["status"] == store.DID_NOT_RUN
        # migration 6 reads each old clockbench-os run's host from its log's os record
        assert (got["old-os"]["kernel"], got["old-os"]["clocksource"], got["old-os"]["clocksources"]) == \
            ("6.1.0-56-amd64", "tsc", "tsc hpet acpi_pm")
        assert got["old"]["kernel"] is None and got["old"]["clocksource"] is None
        st.add_log(KVM.read_text(), "new", "lab", meta={"place": "rack1-slot3", "mac": "52:54:00:12:34:56"})
        assert {r["machine"]: r["place"] for r in st.runs() if r["machine"] in ("old", "new")} == {"old": None, "new": "rack1-slot3"}


def test_csv_export(capsys, tmp_path):
    db = tmp_path / "s.db"
    run_cli(capsys, "import", *IMAGE_LOGS, "--store", db)
    r = run_cli(capsys, "export", "--store", db, "--out", tmp_path / "out")
    assert r.code == 0, r
    with (tmp_path / "out" / "runs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 and {r["machine"] for r in rows} == {p.stem for p in IMAGE_LOGS}
    with (tmp_path / "out" / "figures.csv").open() as f:
        figs = list(csv.DictReader(f))
    tsc = [float(f["value"]) for f in figs if f["name"] == "tsc_hz"]
    assert len(tsc) == 3
    assert (tmp_path / "out" / "checks.csv").read_text().count("\n") > 90


def test_parquet_export(capsys, tmp_path):
    try:
        store._pyarrow()
        present = True
    except ImportError:
        present = False
    need_tool("pyarrow (build/pydeps)", present)
    import pyarrow.parquet as pq

    db = tmp_path / "s.db"
    run_cli(capsys, "import", *IMAGE_LOGS, "--store", db)
    r = run_cli(capsys, "export", "--format", "parquet", "--store", db, "--out", tmp_path / "pq")
    assert r.code == 0, r
    t = pq.read_table(tmp_path / "pq" / "runs.parquet")
    assert t.num_rows == 3 and "machine" in t.column_names
    assert pq.read_table(tmp_path / "pq" / "figures.parquet").num_rows > 60


def test_gaps_stalls_and_events_known_answers():
    """A gap (the CPU away: both clocks ran) is stolen time, not a clock
    standing still; a PIT gap too long to unwrap is neither; a reference
    that stood still counts by how far the clocks disagree across it."""
    recs = [{"type": "drift_window", "asked_s": 2.0, "ran_s": 2.5, "away_s": 0.5},
            {"type": "discontinuity", "reference": "hpet", "kind": "gap", "at_s": 0.5, "tsc_ns": 120e6, "counter_ns": 120e6},
            {"type": "discontinuity", "reference": "hpet", "kind": "gap", "at_s": 0.9, "tsc_ns": 30e6, "counter_ns": 30e6},
            {"type": "discontinuity", "reference": "pit", "kind": "too long to unwrap", "at_s": 0.5, "tsc_ns": 120e6,
             "counter_ns": None},
            {"type": "discontinuity", "reference": "hpet", "kind": "reference stood still", "at_s": 1.2, "tsc_ns": 300e6,
             "counter_ns": 1e3},
            {"type": "discontinuity", "reference": "acpi_pm", "kind": "residual step", "at_s": 1.6, "tsc_ns": 0,
             "counter_ns": -2e6}]
    f = {x.name: x for x in figures.derive(results.from_log(TCG.read_text()), recs)}
    assert f["gap_max_ns"].value == 120e6
    assert f["discontinuities"].value == 2
    assert f["cut_max_ns"].value == pytest.approx(300e6 - 1e3) and "stood still" in f["cut_max_ns"].detail
    assert f["away_s"].value == 0.5
    none = {x.name: x for x in figures.derive(results.from_log(TCG.read_text()), recs[:4])}
    assert none["cut_max_ns"].value == 0 and none["discontinuities"].value == 0
    # a residual step within half its reads' bracket may be their timing, not a clock: no event here
    within = recs[:4] + [{"type": "discontinuity", "reference": "hpet", "kind": "residual step", "at_s": 2.6, "tsc_ns": 0,
                          "counter_ns": -40.0, "bracket_half_ns": 135.2}]
    f = {x.name: x for x in figures.derive(results.from_log(TCG.read_text()), within)}
    assert f["discontinuities"].value == 0 and f["cut_max_ns"].value == 0
    beyond = within[:4] + [{**within[4], "counter_ns": -400.0}]
    f = {x.name: x for x in figures.derive(results.from_log(TCG.read_text()), beyond)}
    assert f["discontinuities"].value == 1 and f["cut_max_ns"].value == 400.0


def test_runs_delete_and_a_machine_name_with_a_typo(capsys, tmp_path):
    db = tmp_path / "s.db"
    run_cli(capsys, "import", *IMAGE_LOGS, "--store", db)
    # a typo names the store's machines and the nearest one, and is a usage error
    r = run_cli(capsys, "runs", "--store", db, "--machine", "tcg-q53")
    assert r.code == errors.USAGE and "did you mean 'tcg-q35'" in r.err and "holds 3 runs of 3 machines" in r.err, r
    assert run_cli(capsys, "runs", "--store", db, "--machine", "tcg-q35").code == 0
    # deleting: all or none
    r = run_cli(capsys, "runs", "--store", db, "--delete", "2", "99")
    assert r.code == errors.USAGE and "no run 99" in r.err and "runs 1-3" in r.err and "nothing was deleted" in r.err, r
    r = run_cli(capsys, "runs", "--store", db, "--delete", "2")
    assert r.code == 0 and "deleted run 2; 2 runs left" in r.out, r
    with store.open_store(db) as st:
        assert sorted(x["id"] for x in st.runs()) == [1, 3]
        # its checks and figures went with it
        assert st.db.execute("SELECT count(*) FROM figures WHERE run_id = 2").fetchone()[0] == 0
        assert st.db.execute("SELECT count(*) FROM checks WHERE run_id = 2").fetchone()[0] == 0


def test_a_bare_log_is_dated_by_its_rtc_record(capsys, tmp_path):
    log = tmp_path / "bare.log"
    log.write_bytes(TCG.read_bytes())
    os.utime(log, (0, 0))  # the file's own time is 1970: not the run's
    [rtc] = [r for r in records.parse_log(TCG.read_text()).records if r.get("type") == "rtc"]
    run_cli(capsys, "import", log, "--store", tmp_path / "s.db")
    with store.open_store(tmp_path / "s.db") as st:
        [run] = st.runs()
    assert run["started"] == f"{rtc['date']}T{rtc['time']}+00:00"


def test_a_run_that_never_reached_the_image_did_not_run(tmp_path):
    with store.open_store(tmp_path / "s.db") as st:
        rid, _ = st.add_log("", "nosuchplace", "lab", meta={"reason": "cannot acquire place nosuchplace"}, incomplete_ok=True)
        [run] = st.runs()
    assert run["status"] == store.DID_NOT_RUN and run["tool"] is None and "nosuchplace" in run["reason"]
