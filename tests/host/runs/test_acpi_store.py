"""A machine's ACPI preview in the store of runs (`clockbench acpi --store`,
`import` of an `acpi --json` file, `runs --acpi`, and the preview beside a
machine's runs), on real machines' tables (tests/host/data/acpi) and QEMU's
own (the fuzzer's seed dumped by the image, tests/fuzz/seeds), with real
SQLite stores: kept whole, per machine, once; an older store migrated; a
store that cannot be used refused in one line with nothing kept."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import socket
import sqlite3
import struct

import pytest

from helpers.logs import TCG
from helpers.paths import ROOT
from helpers.tool import run_cli
from clockbench.report import acpi
from clockbench import errors
from clockbench.runs import store

DATA = ROOT / "tests" / "host" / "data" / "acpi"
TABLET = DATA / "hp-pavilion-x2-tablet.txt"  # hardware-reduced: HPET at 0xfed00000, PM_TMR_BLK 0x408 set aside
PELADN = DATA / "peladn-ha4-desktop.txt"  # no HPET, a 32-bit PM timer at 0x808, 16 CPUs
Q35_SEED = ROOT / "tests" / "fuzz" / "seeds" / "qemu-q35-bios.bin"  # QEMU q35 + SeaBIOS, as the image dumped them


def kept(db) -> list[dict]:
    with store.open_store(db, create=False) as st:
        return st.acpi_previews()


def one_line(r, code: int, *words: str, command: str = "acpi") -> None:
    assert r.code == code, r
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"clockbench {command}: "), r.err
    for w in words:
        assert w in lines[0], lines[0]


def seed_dump(raw: bytes, rsdp_at: int) -> str:
    """The fuzzer's seed (flags, base, RSDP, memory from base: fuzz_acpi.c)
    as acpidump text: the RSDP, its RSDT, every table that lists, and the
    FADT's DSDT/FACS where the dump holds them, each at its own address.
    The RSDP's own address is not in the seed: rsdp_at stands for it."""
    base = struct.unpack_from("<Q", raw, 1)[0]
    rsdp, mem = raw[9:45], raw[45:]
    rsdp = rsdp[:36] if rsdp[15] >= 2 else rsdp[:20]

    def table(addr: int) -> bytes:
        off = addr - base
        return mem[off:off + struct.unpack_from("<I", mem, off + 4)[0]]

    root = struct.unpack_from("<I", rsdp, 16)[0]
    out = {rsdp_at: rsdp, root: table(root)}
    for i in range(36, len(out[root]), 4):
        a = struct.unpack_from("<I", out[root], i)[0]
        out[a] = table(a)
        if out[a][:4] == b"FACP":
            for o in (36, 40):
                b = struct.unpack_from("<I", out[a], o)[0]
                if b and base <= b < base + len(mem):
                    out[b] = table(b)
    lines = []
    for a, d in out.items():
        lines.append(f"{'RSDP' if d[:8] == b'RSD PTR ' else d[:4].decode()} @ 0x{a:016x}")
        lines += [f"    {o:04X}: " + " ".join(f"{x:02X}" for x in d[o:o + 16]) for o in range(0, len(d), 16)]
        lines.append("")
    return "\n".join(lines)


def test_the_preview_is_kept_whole_as_its_machines(capsys, tmp_path):
    db = tmp_path / "s.db"
    plain = run_cli(capsys, "acpi", TABLET, "--json")
    assert plain.code == 0, plain
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    r = run_cli(capsys, "acpi", TABLET, "--json", "--store", db)
    assert r.code == 0, r
    printed = json.loads(r.out)  # still one JSON object: the stored line goes to stderr
    assert r.err.strip() == f"clockbench acpi: stored as ACPI preview 1 of machine 'hp-pavilion-x2-tablet' in {db}"
    (p,) = kept(db)
    # whole: the very object printed, and the same as without --store but for its time
    assert p["preview"] == printed
    assert {k: v for k, v in printed.items() if k != "taken"} == {k: v for k, v in json.loads(plain.out).items() if k != "taken"}
    taken = dt.datetime.fromisoformat(p["taken"])
    assert p["taken"] == printed["taken"] and before <= taken <= dt.datetime.now(dt.timezone.utc)
    assert (p["machine"], p["source"], p["source_kind"], p["origin"], p["host"], p["problems"]) == \
        ("hp-pavilion-x2-tablet", str(TABLET), "acpidump", "acpi", socket.gethostname(), 0)
    assert p["summary"] == ("HPET MMIO 0xfed00000 (3 comparators, 64-bit, min tick 128); PM timer I/O 0x408 24-bit, "
                            "ignored by the OS (hardware-reduced ACPI); 4 of 4 CPUs enabled")
    # the same tables of the same machine again: the preview already kept
    r = run_cli(capsys, "acpi", TABLET, "--store", db)
    assert r.code == 0 and r.out.rstrip().endswith("(these tables were already kept)") and r.err == "", r
    assert r.out.startswith("ACPI tables of ")
    # under another name, or another machine's tables: new previews
    assert run_cli(capsys, "acpi", TABLET, "--store", db, "--machine", "lab-7").code == 0
    assert run_cli(capsys, "acpi", PELADN, "--store", db).code == 0
    got = [(p["id"], p["machine"]) for p in kept(db)]
    assert sorted(got) == [(1, "hp-pavilion-x2-tablet"), (2, "lab-7"), (3, "peladn-ha4-desktop")]
    assert kept(db)[-1]["summary"] == "HPET none (no valid HPET table in the XSDT); PM timer I/O 0x808 32-bit; 16 of 16 CPUs enabled"


def test_the_machines_default_name(tmp_path):
    src = acpi.read_source(str(PELADN))
    assert acpi.machine_name(src, None) == "peladn-ha4-desktop"
    assert acpi.machine_name(src, "rack1") == "rack1"
    # a folder of binary tables (acpidump -b): the folder's name
    box = tmp_path / "box-7"
    box.mkdir()
    for t in src.tables:
        (box / f"{t.sig}.dat").write_bytes(t.data)
    assert acpi.machine_name(acpi.read_source(str(box)), None) == "box-7"
    # a pipe names nothing: --machine is needed
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(errors.UsageError, match="give --machine"):
        acpi.machine_name(acpi.Source(str(tmp_path / "fifo"), "acpidump"), None)
    # /sys/firmware/acpi/tables: the tables are this host's own
    assert acpi.machine_name(acpi.Source(str(acpi.SYSFS), "sysfs"), None) == socket.gethostname()


def test_a_preview_with_a_rejected_table_is_kept_with_its_problems(capsys, tmp_path):
    folder = tmp_path / "cut"
    folder.mkdir()
    for t in acpi.read_source(str(PELADN)).tables:
        (folder / f"{t.sig}.dat").write_bytes(t.data[:200] if t.sig == "APIC" else t.data)
    r = run_cli(capsys, "acpi", folder, "--store", tmp_path / "s.db")
    assert r.code == errors.BAD_INPUT and "cut short" in r.err, r
    (p,) = kept(tmp_path / "s.db")
    assert p["machine"] == "cut" and p["problems"] == 2  # cut short, and the parser rejected it
    assert p["summary"].endswith("no valid MADT; 2 table problems") and p["preview"]["problems"]


def test_import_takes_an_acpi_json_file(capsys, tmp_path):
    db = tmp_path / "s.db"
    out = tmp_path / "desk.json"
    r = run_cli(capsys, "acpi", PELADN, "--json")
    out.write_text(r.out)
    r = run_cli(capsys, "import", out, TCG, "--store", db)
    assert r.code == 0, r
    assert f"{out}: ACPI preview 1 of machine 'desk'" in r.out and "1 added" in r.out and "1 ACPI preview" in r.out
    (p,) = kept(db)
    assert p["origin"] == "import" and p["host"] is None and p["preview"] == json.loads(out.read_text())
    assert p["taken"] == json.loads(out.read_text())["taken"]
    # again, under its name: already there; under another: that machine's
    r = run_cli(capsys, "import", out, "--store", db)
    assert r.code == 0 and "(already in the store)" in r.out, r
    assert run_cli(capsys, "import", out, "--store", db, "--machine", "other").code == 0
    assert [p["machine"] for p in kept(db)] == ["desk", "other"]
    # JSON that looks like a preview but is not one: named, skipped, 65; nothing kept
    fake = tmp_path / "fake.json"
    fake.write_text(json.dumps({"acpi_record": 1, "source_kind": "sysfs"}))
    r = run_cli(capsys, "import", fake, "--store", db)
    assert r.code == errors.BAD_INPUT and "fake.json: not a `clockbench acpi --json` object" in r.err, r
    assert len(kept(db)) == 2


def test_runs_acpi_lists_and_shows(capsys, tmp_path):
    db = tmp_path / "s.db"
    for path, name in ((TABLET, "tab"), (PELADN, "desk"), (PELADN, "desk2")):
        assert run_cli(capsys, "acpi", path, "--store", db, "--machine", name).code == 0
    r = run_cli(capsys, "runs", "--acpi", "--store", db)
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert lines[0].split()[:4] == ["id", "taken", "(UTC)", "machine"] and len(lines) == 5
    assert "tab " in lines[1] and "PM timer I/O 0x408 24-bit" in lines[1] and lines[-1] == f"(3 ACPI previews in {db})"
    # one machine's: listed, and its newest shown as `clockbench acpi` shows it
    r = run_cli(capsys, "runs", "--acpi", "--machine", "tab", "--store", db)
    assert r.code == 0, r
    (p,) = kept(db)[:1]
    assert f"ACPI preview 1 of tab, taken {p['taken']}:\n{acpi.render(p['preview'])}\n" in r.out
    assert "HPET: MMIO 0xfed00000, 3 comparators" in r.out
    r = run_cli(capsys, "runs", "--acpi", "--json", "--last", "2", "--store", db)
    got = json.loads(r.out)
    assert [g["machine"] for g in got] == ["desk", "desk2"] and got[0]["preview"]["hpet_table"]["found"] is False
    # a name the store does not hold: one line, 64, the nearest names
    one_line(run_cli(capsys, "runs", "--acpi", "--machine", "desk3", "--store", db), errors.USAGE,
             "no machine 'desk3'", "did you mean 'desk' or 'desk2'", "3 ACPI previews of 3 machines", command="runs")
    # a machine with runs but no preview: 64, saying how to keep one
    assert run_cli(capsys, "import", TCG, "--machine", "vm", "--store", db).code == 0
    one_line(run_cli(capsys, "runs", "--acpi", "--machine", "vm", "--store", db), errors.USAGE,
             "no ACPI preview of machine 'vm'", "it has 1 run", "--store --machine vm", command="runs")
    one_line(run_cli(capsys, "runs", "--acpi", "--store", tmp_path / "none.db"), errors.NO_INPUT, "no store here", command="runs")


def test_export_has_the_previews_lines(capsys, tmp_path):
    db = tmp_path / "s.db"
    assert run_cli(capsys, "acpi", TABLET, "--store", db).code == 0
    r = run_cli(capsys, "export", "--store", db, "--out", tmp_path / "out")
    assert r.code == 0 and "acpi_previews.csv" in r.out, r
    with (tmp_path / "out" / "acpi_previews.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    (p,) = kept(db)
    assert {k: row[k] for k in ("machine", "taken", "source", "summary")} == {k: p[k] for k in ("machine", "taken", "source", "summary")}


def test_beside_a_machines_runs_the_preview_against_the_run(capsys, tmp_path):
    db = tmp_path / "s.db"
    # QEMU q35's own tables (as the image dumped them) beside a run of the image on QEMU q35: they agree
    (tmp_path / "q35.txt").write_text(seed_dump(Q35_SEED.read_bytes(), 0xF5A70))
    assert run_cli(capsys, "acpi", tmp_path / "q35.txt", "--store", db, "--machine", "q35").code == 0
    assert run_cli(capsys, "import", TCG, "--machine", "q35", "--store", db).code == 0
    r = run_cli(capsys, "runs", "--machine", "q35", "--store", db)
    assert r.code == 0, r
    tail = r.out.split("checks are passed/failed/skipped)\n")[1].splitlines()
    assert tail[0].startswith("ACPI preview 1 (taken ") and tail[0].endswith(
        "HPET MMIO 0xfed00000 (3 comparators, 64-bit, min tick 0); PM timer I/O 0x608 24-bit; 1 of 1 CPUs enabled")
    assert tail[1:] == ["  against run 1:",
                        "    HPET: the preview said MMIO 0xfed00000, the run found MMIO 0xfed00000: the same",
                        "    ACPI PM timer: the preview said I/O 0x608, 24-bit, the run found I/O 0x608, 24-bit: the same",
                        "    enabled CPUs: the preview said 1, the run found 1: the same"]
    # another machine's tables under the same name: every line differs
    assert run_cli(capsys, "acpi", PELADN, "--store", db, "--machine", "q35").code == 0
    r = run_cli(capsys, "runs", "--machine", "q35", "--store", db)
    assert "    HPET: the preview said none, the run found MMIO 0xfed00000: DIFFERENT" in r.out
    assert "    ACPI PM timer: the preview said I/O 0x808, 32-bit, the run found I/O 0x608, 24-bit: DIFFERENT" in r.out
    assert "    enabled CPUs: the preview said 16, the run found 1: DIFFERENT" in r.out
    # a machine previewed and never run: its preview, no comparison
    assert run_cli(capsys, "acpi", TABLET, "--store", db).code == 0
    r = run_cli(capsys, "runs", "--machine", "hp-pavilion-x2-tablet", "--store", db)
    assert r.code == 0 and "no run of 'hp-pavilion-x2-tablet'" in r.err and r.out.startswith("ACPI preview 3 ") \
        and "against" not in r.out, r


def test_an_older_store_is_migrated_and_keeps_its_runs(capsys, tmp_path):
    db = tmp_path / "v3.db"
    c = sqlite3.connect(str(db), isolation_level=None)
    for m in store.MIGRATIONS[:3]:
        for stmt in m.split(";"):
            if stmt.strip():
                c.execute(stmt)
    c.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    c.execute("PRAGMA user_version = 3")
    c.close()
    st = store.Store.__new__(store.Store)  # a run written by the version-3 tool
    st.path, st.db = db, sqlite3.connect(str(db), isolation_level=None)
    st._insert(store.run_row(None, TCG.read_text(), "old", "import", {}), [], [])
    st.db.close()
    r = run_cli(capsys, "acpi", PELADN, "--store", db, "--machine", "old")
    assert r.code == 0, r
    with store.open_store(db, create=False) as st:
        assert st.version == store.SCHEMA_VERSION == 6
        assert [r["machine"] for r in st.runs()] == ["old"] and st.log(1) == TCG.read_text()
        assert [p["machine"] for p in st.acpi_previews()] == ["old"]
    r = run_cli(capsys, "runs", "--machine", "old", "--store", db)
    assert r.code == 0 and "ACPI preview 1 " in r.out and "against run 1:" in r.out, r


def test_a_store_that_cannot_be_used_keeps_nothing(capsys, tmp_path):
    # damaged: not a SQLite file; the file is left as it was and nothing is printed
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"garbage, not a store\n" * 10)
    r = run_cli(capsys, "acpi", TABLET, "--store", bad)
    one_line(r, errors.STORE_CORRUPT, "not a SQLite file")
    assert r.out == "" and bad.read_bytes() == b"garbage, not a store\n" * 10
    # damaged inside: SQLite's header, pages overwritten
    broken = tmp_path / "broken.db"
    assert run_cli(capsys, "acpi", PELADN, "--store", broken).code == 0
    c = sqlite3.connect(str(broken))
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    data = bytearray(broken.read_bytes())
    data[4096:len(data)] = b"\xa5" * (len(data) - 4096)
    broken.write_bytes(bytes(data))
    r = run_cli(capsys, "acpi", TABLET, "--store", broken)
    one_line(r, errors.STORE_CORRUPT, "damaged")
    assert r.out == ""
    # cannot be written: a place no file can be made, a path through a file
    one_line(run_cli(capsys, "acpi", TABLET, "--store", "/proc/clockbench.db"), errors.CANNOT_WRITE, "cannot open the store")
    one_line(run_cli(capsys, "acpi", TABLET, "--store", bad / "s.db"), errors.CANNOT_WRITE, "cannot open the store")
    # a folder given as the store: 66, as for every store command
    one_line(run_cli(capsys, "acpi", TABLET, "--store", tmp_path), errors.NO_INPUT, "is a folder")
    # --store's optional DB swallowing the tables' path: 64, the file untouched
    one_line(run_cli(capsys, "acpi", "--store", TABLET), errors.USAGE, "--store took", f"`clockbench acpi {TABLET} --store`")
    # newer than this tool: refused, nothing kept
    newer = tmp_path / "newer.db"
    c = sqlite3.connect(str(newer))
    c.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    c.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    c.close()
    one_line(run_cli(capsys, "acpi", TABLET, "--store", newer), errors.NEWER_SCHEMA, "refused")
    # --machine without --store, and an empty name: 64 before anything is read
    one_line(run_cli(capsys, "acpi", TABLET, "--machine", "x"), errors.USAGE, "give --store too")
    one_line(run_cli(capsys, "acpi", TABLET, "--store", tmp_path / "s.db", "--machine", " "), errors.USAGE, "empty name")
    assert not (tmp_path / "s.db").exists()
    # tables that are not tables: 65, and no store made
    (tmp_path / "notes.txt").write_text("not a dump\n")
    one_line(run_cli(capsys, "acpi", tmp_path / "notes.txt", "--store", tmp_path / "s.db"), errors.BAD_INPUT, "not an acpidump")
    assert not (tmp_path / "s.db").exists()
