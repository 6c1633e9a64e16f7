"""Every clockbench-os run kept and stored (issue 43, section 2): `make
os-bench` twice keeps two run folders and adds two runs, neither over the
other; `clockbench import` takes a run folder a bundle's `--out DIR` made (a
folder holding os.log), and a folder of them, under the host the log names
(else the folder's <host>-<time>); the store keeps the host (hostname,
machine id, kernel, clocksource and those available, the TSC marked
unstable) and clockbench-os's own vDSO, libc and syscall costs; a garbage
log is one line and the others are stored; `runs`, `report ID`, `compare ID
ID` and `export ID` take an OS run by its id. Real logs from
tests/fixtures, real stores in tmp_path, the real command line."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

from helpers.paths import FIXTURES, ROOT
from helpers.tool import run_cli, run_process
from clockbench.fleet import madefleet
from clockbench.runs import osruns, store

LANG_HOST = FIXTURES / "os-lang-host.log"
FC_HOST = FIXTURES / "os-firecracker-host.log"
VM = FIXTURES / "os-vm-lang-tcg.log"


def named(base: Path, name: str, **kw) -> str:
    """The real log as host `name`'s, as a newer clockbench-os writes its os record."""
    host = madefleet.Host(name, kw.pop("machine_id", "0123456789abcdef0123456789abcdef"), base.name,
                          kw.pop("clocksource", "tsc"), tsc_unstable=kw.pop("tsc_unstable", False))
    return madefleet.host_log(base.read_text(), host, started=kw.pop("started", "2026-11-28T01:02:03Z"), **kw)


def rows(db: Path) -> list[dict]:
    with store.open_store(db, create=False) as st:
        return [{**r.row, "figures": r.figures} for r in st.runs()]


def test_two_os_bench_runs_are_two_runs_and_neither_overwrites(tmp_path):
    build, db = tmp_path / "build", tmp_path / "runs.db"
    outs = []
    for _ in range(2):
        r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "os-bench", f"BUILD={build}", f"OS_STORE={db}",
                            "OS_ARGS=--quick --no-lang", "LANG_PROBES="], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "CLOCKBENCH_STORE": ""})
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        outs.append(r.stdout)
    folders = sorted((build / "os-runs").iterdir())
    assert len(folders) == 2 and all((d / "os.log").is_file() for d in folders), folders
    logs = [(d / "os.log").read_text() for d in folders]
    assert logs[0] != logs[1] and all('"type":"summary"' in t for t in logs)
    # the newest is linked where the log used to be
    assert (build / "os-bench" / "os.log").resolve() == (folders[1] / "os.log").resolve()
    kept = rows(db)
    assert len(kept) == 2, kept
    host = os.uname().nodename
    assert {r["machine"] for r in kept} == {host} and {r["tool"] for r in kept} == {store.OS_TOOL}
    with store.open_store(db, create=False) as st:
        assert sorted(st.log(r["id"]) for r in kept) == sorted(logs)
    for out, d in zip(outs, folders):
        assert f"the run is kept in {d}/os.log" in out and "1 added" in out, out[-1500:]
    assert kept[0]["clocksource"] and kept[0]["kernel"] == os.uname().release


def test_a_bundle_run_folder_and_a_folder_of_them(tmp_path, capsys):
    one = tmp_path / "out"  # `clockbench-os --out out` on a host with no host tool
    one.mkdir()
    (one / "os.log").write_text(named(LANG_HOST, "db-7", machine_id="7" * 32, tsc_unstable=True, clocksource="hpet",
                                      switch_from=madefleet._recs_by_cs(VM.read_text(), "hpet")))
    many = tmp_path / "fetched"  # one folder per host, as a playbook fetches them
    for name, base in (("web-1", FC_HOST), ("web-2", LANG_HOST)):
        (many / name).mkdir(parents=True)
        (many / name / "os.log").write_text(named(base, name))
    (many / "notes.txt").write_text("not a run\n")
    r = run_cli(capsys, "import", "--store", tmp_path / "s.db", one, many)
    assert r.code == 0 and "3 added, 0 already there" in r.out, r
    got = {x["machine"]: x for x in rows(tmp_path / "s.db")}
    assert set(got) == {"db-7", "web-1", "web-2"}
    db7 = got["db-7"]
    assert (db7["hostname"], db7["machine_id"], db7["kernel"], db7["clocksource"], db7["clocksources"]) == \
        ("db-7", "7" * 32, "6.18.44-fc-v595", "hpet", "tsc kvm-clock hpet")
    assert db7["tsc_unstable"] == 1 and db7["tsc_unstable_why"] == madefleet.UNSTABLE_WORDS
    assert db7["started"] == "2026-11-28T01:02:03+00:00" and db7["host"] == "db-7"
    assert got["web-1"]["tsc_unstable"] == 0 and got["web-1"]["clocksource"] == "tsc"
    # clockbench-os's own CLOCK_MONOTONIC beside the languages', on the clocksource in use
    vm_hpet = {(r["call"], r["path"]): r["p50_ns"] for r in map(json.loads, (l[4:] for l in VM.read_text().splitlines()
                                                                              if '"type":"os_latency"' in l and '"hpet"' in l))}
    figs = db7["figures"]
    for path in ("vdso", "libc", "syscall"):
        assert figs[f"os_p50_ns:hpet/{path}"].value == vm_hpet[("clock_gettime(CLOCK_MONOTONIC)", path)]
    assert figs["lang_syscalls_per_1000:hpet/go/time.Now"].value >= 1000
    assert "os_p50_ns:tsc/vdso" in got["web-1"]["figures"] and "lang_p50_ns:tsc/go/time.Now" in got["web-2"]["figures"]
    # again: nothing added twice
    r = run_cli(capsys, "import", "--store", tmp_path / "s.db", one, many)
    assert r.code == 0 and "0 added, 3 already there" in r.out, r


def test_an_older_log_is_named_by_its_folder_or_file(tmp_path, capsys):
    d = tmp_path / "os-runs" / "rack3-node9-2026-11-27T10-00-00Z-Ab12Cd"  # os-bench's folder, made unique by mktemp
    d.mkdir(parents=True)
    (d / "os.log").write_text(LANG_HOST.read_text())  # no hostname in its os record
    r = run_cli(capsys, "import", "--store", tmp_path / "s.db", tmp_path / "os-runs", FC_HOST)
    assert r.code == 0, r
    got = {x["machine"]: x for x in rows(tmp_path / "s.db")}
    assert set(got) == {"rack3-node9", "os-firecracker-host"}
    assert got["rack3-node9"]["hostname"] is None and got["rack3-node9"]["kernel"] == "6.18.44-fc-v595"
    assert got["rack3-node9"]["tsc_unstable"] == 0  # its kernel log was read, and said nothing of it
    assert osruns.folder_host(Path("plain")) == "plain"


def test_a_garbage_log_is_one_line_and_the_others_are_stored(tmp_path):
    fetched = tmp_path / "fetched"
    for name, text in (("good-1", named(LANG_HOST, "good-1")), ("bad", "\x00\x17garbage \xff" * 50),
                       ("good-2", named(FC_HOST, "good-2"))):
        (fetched / name).mkdir(parents=True)
        (fetched / name / "os.log").write_text(text, errors="surrogateescape")
    db = tmp_path / "s.db"
    r = run_process("import", "--store", db, fetched)
    assert r.code == 65, r
    said = [l for l in r.err.splitlines() if l.strip()]
    assert len(said) == 1 and said[0].startswith(f"clockbench import: skipped: {fetched / 'bad' / 'os.log'}: ") \
        and "not a clockbench log" in said[0], r.err
    assert "Traceback" not in r.err
    assert sorted(x["machine"] for x in rows(db)) == ["good-1", "good-2"]


def test_runs_report_compare_and_export_take_an_os_run_by_id(tmp_path, capsys):
    db = tmp_path / "s.db"
    for name, base in (("lin-a", LANG_HOST), ("lin-b", VM)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "os.log").write_text(named(base, name))
    assert run_cli(capsys, "import", "--store", db, tmp_path / "lin-a", tmp_path / "lin-b").code == 0
    ids = {x["machine"]: x["id"] for x in rows(db)}
    r = run_cli(capsys, "runs", "--store", db, "--machine", "lin-b", "--json")
    assert r.code == 0, r
    [run] = json.loads(r.out)
    assert run["kernel"] == "6.1.0-56-amd64" and run["clocksources"] == "tsc hpet acpi_pm"
    assert run["figures"]["os_p50_ns:acpi_pm/syscall"]["unit"] == "ns"
    out = tmp_path / "rep"
    r = run_cli(capsys, "report", ids["lin-a"], "--store", db, "--out", out, "--no-html")
    assert r.code == 0, r
    res = json.loads((out / "results.json").read_text())
    assert res["os"]["hostname"] == "lin-a" and len(res["lang_clock"]) == 23
    r = run_cli(capsys, "compare", ids["lin-a"], ids["lin-b"], "--store", db)
    assert r.code == 0, r
    assert f"run {ids['lin-a']}" in r.out and "\nGo time.Now on tsc " in r.out and "6.1.0-56-amd64" in r.out, r.out[:3000]
    r = run_cli(capsys, "export", ids["lin-b"], "--store", db, "--out", tmp_path / "ex")
    assert r.code == 0, r
    with (tmp_path / "ex" / "runs.csv").open() as f:
        [exported] = list(csv.DictReader(f))
    assert (exported["machine"], exported["hostname"], exported["clocksource"]) == ("lin-b", "lin-b", "tsc")
    with (tmp_path / "ex" / "figures.csv").open() as f:
        names = {x["name"] for x in csv.DictReader(f)}
    assert {"os_p50_ns:hpet/vdso", "os_p50_ns:acpi_pm/syscall", "lang_p50_ns:hpet/go/time.Now"} <= names


def test_add_os_run_names_a_run_as_asked(tmp_path):
    """What `clockbench hosts` calls: each fetched log under its inventory name."""
    d = tmp_path / "web-9"
    d.mkdir()
    (d / "os.log").write_text(named(LANG_HOST, "ip-10-0-0-9"))
    with store.open_store(tmp_path / "s.db") as st:
        rid, new = st.add_os_run(d, machine="web-9", source="hosts")
        again = st.add_os_run(d / "os.log", machine="web-9", source="hosts")
        [run] = st.runs()
    assert new and again == (rid, False)
    assert (run["machine"], run["hostname"], run["source"]) == ("web-9", "ip-10-0-0-9", "hosts")


def test_a_log_that_names_its_host_is_stored_under_that_name(tmp_path, capsys):
    """A real log of today's clockbench-os (the bundle under Debian 11's user
    space, not root): its os record names the host, and says it could not
    read the kernel log (tsc_unstable null)."""
    log = FIXTURES / "os-lang-bullseye-chroot.log"
    r = run_cli(capsys, "import", "--store", tmp_path / "s.db", log)
    assert r.code == 0, r
    [got] = rows(tmp_path / "s.db")
    assert (got["machine"], got["hostname"], got["machine_id"], got["tsc_unstable"]) == ("vm", "vm", None, None)
    assert got["started"] == "2026-11-27T23:56:59+00:00" and got["clocksources"] == "tsc kvm-clock"
    assert "lang_p50_ns:tsc/go/time.Now" in got["figures"] and "os_p50_ns:tsc/vdso" in got["figures"]
    # the watchdog's demotion is the TSC marked unstable too, in the kernel's words
    recs = [{"type": "os", "tsc_unstable": True},
            {"type": "os_claim", "what": "clocksource unstable", "detail": "tsc"}]
    assert osruns.identity(recs)["tsc_unstable"] == 1
    assert osruns.identity(recs)["tsc_unstable_why"] == "the clocksource watchdog marked it unstable"
    assert osruns.folder_host(Path("clockbench-os-web-1-20261127T235659Z-2")) == "web-1"


def test_os_vm_never_writes_through_the_link_to_a_kept_run(tmp_path, capsys):
    """`make os-vm` links build/os-vm.log to its newest kept run; a later
    `clockbench os-vm` with the default --log replaces the link and leaves
    the kept run as it was (here QEMU refuses a made-up kernel at once)."""
    from helpers.paths import BUILD

    program = BUILD / "os" / "clockbench-os"
    assert program.is_file(), f"{program} is missing: `make os` builds it"
    kept = tmp_path / "os-vm-runs" / "h-os-vm-2026-11-28T00-00-00Z" / "os.log"
    kept.parent.mkdir(parents=True)
    kept.write_text("the kept run\n")
    link = tmp_path / "os-vm.log"
    link.symlink_to(kept.relative_to(tmp_path))
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 1000)  # given, so nothing is fetched
    r = run_cli(capsys, "os-vm", "--kernel", kernel, "--program", program, "--no-lang", "--accel", "tcg",
                "--log", link, "--timeout", "20")
    assert r.code != 0 and "QEMU exited" in r.err, r
    assert kept.read_text() == "the kept run\n" and not link.is_symlink()
