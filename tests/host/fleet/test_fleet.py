"""`clockbench fleet` (tools/clockbench/fleet/fleet.py) on stores with known
answers: machines made from a real fixture log with small, made-up
differences, and a few given a fault of chosen size; exactly those are
flagged, for the reason chosen, in the terminal, the JSON and the HTML page
(loaded in headless Chromium)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.browser import CHROMIUM, rendered
from helpers.logs import EPYC, KVM, TCG
from helpers.tool import need_tool, run_cli
from clockbench.fleet import fleet
from clockbench.records import records
from clockbench.runs import store



def edit(text: str, change) -> str:
    """The log with change(record) applied to every record; change returns
    the record (or a list of records) to write in its place."""
    out = []
    for line in text.split("\n"):
        if line.startswith("@cb "):
            rec = json.loads(line[4:])
            got = change(rec)
            for r in got if isinstance(got, list) else [got]:
                out.append("@cb " + json.dumps(r, separators=(",", ":")))
        else:
            out.append(line)
    return "\n".join(out)


def machine(i: int, *, tsc_ppm: float = 0.0, stolen_ms: float | None = None, stall_ms: float | None = None,
            offset_ns: float | None = None, fail: bool = False, timer_p50_us: float | None = None,
            claim_ppm: float = 0.0, crystal_ppm: float | None = None, tsc_u_ppm: float | None = None,
            base: Path = TCG) -> str:
    """One machine's log: the fixture with a tiny jitter of its own (so the
    MAD is not 0) and, where asked, a fault of known size."""
    jitter = ((i * 37) % 7 - 3) * 0.02  # ppm, -0.06..0.06
    stolen_jitter = 1.0 + 0.1 * (i % 5)

    def change(r):
        t = r["type"]
        if t == "profile":
            r["tsc_hz"] *= 1 + (tsc_ppm + jitter) * 1e-6
        elif t == "frequency" and r["counter"] == "tsc":
            r["hz"] *= 1 + (tsc_ppm + jitter) * 1e-6
            if tsc_u_ppm is not None:
                r["uncertainty_ppm"] = tsc_u_ppm
        elif t == "freq_claim" and r.get("what") == "tsc":
            r["hz"] = round(r["hz"] / (1 + claim_ppm * 1e-6))  # the TSC then runs claim_ppm fast of its claim
        elif t == "frequency" and r["counter"] == "acpi_pm" and crystal_ppm is not None:
            r["ppm_vs_nominal"] = crystal_ppm
        elif t == "hwlat":
            r["max_gap_ns"] = (stolen_ms * 1e6) if stolen_ms is not None else r["max_gap_ns"] * stolen_jitter
        elif t == "monotonicity" and r["counter"] == "hpet" and stall_ms is not None:
            r["longest_stall_ns"] = stall_ms * 1e6
            r["stalls"] = 1
        elif t == "timer_choice":
            r["p50_ns"] = (timer_p50_us * 1e3) if timer_p50_us is not None else r["p50_ns"] + 1000 * (i % 4)
        elif t == "check" and fail and r["result"] == "PASS":
            fail_once.append(1)
            if len(fail_once) == 1:
                r["result"] = "FAIL"
                r["detail"] = "made to fail by the test"
        elif t == "summary" and fail:
            r["pass"] -= 1
            r["fail"] += 1
            r["status"] = "failed"
        elif t == "cpu" and r.get("index") == 0:
            lo = -40.0 - i if offset_ns is None else offset_ns - 30
            hi = 60.0 + i if offset_ns is None else offset_ns + 30
            return [r, {**r, "index": 1, "apic_id": 1},
                    {"type": "tsc_sync", "cpu": 1, "offset_lo_ns": lo, "offset_hi_ns": hi, "warps": 0}]
        return r

    fail_once: list[int] = []
    return edit(base.read_text(), change)


FAULTS = {
    "m-tsc-fast": dict(tsc_ppm=80.0),
    "m-stolen": dict(stolen_ms=2000.0),
    "m-stall": dict(stall_ms=300.0),
    "m-offset": dict(offset_ns=25_000.0),
    "m-failed": dict(fail=True),
    "m-late": dict(timer_p50_us=9000.0),
}


@pytest.fixture
def fleet_store(tmp_path) -> Path:
    db = tmp_path / "fleet.db"
    with store.open_store(db) as st:
        for i in range(8):
            st.add_log(machine(i), f"m-ok-{i}", "capture", meta={"firmware": "bios", "started": f"2026-11-24T10:0{i}:00+00:00"})
        for j, (name, fault) in enumerate(FAULTS.items()):
            st.add_log(machine(20 + j, **fault), name, "capture", meta={"firmware": "bios", "started": f"2026-11-24T11:0{j}:00+00:00"})
        # another CPU model, alone in its group: its TSC rate is compared with nobody's
        st.add_log(machine(40, tsc_ppm=300.0, base=EPYC), "m-epyc", "capture", meta={"firmware": "uefi"})
    return db


def test_the_chosen_outliers_and_only_those_are_flagged(fleet_store):
    with store.open_store(fleet_store) as st:
        groups = fleet.analyse(st.runs(latest=True))
    flagged = {r.machine: {f.metric for f in r.flags} for g in groups for r in g.rows if r.flags}
    assert flagged == {"m-tsc-fast": {"tsc_mhz"}, "m-stolen": {"stolen_ms"}, "m-stall": {"stall_ms"},
                       "m-offset": {"offset_us"}, "m-failed": {"checks"}, "m-late": {"timer_p50_us"}}, flagged
    big = next(g for g in groups if len(g.rows) == 14)
    assert big.key[3] == "bios" and big.stats["tsc_mhz"]["against"] == "group"
    tsc_flag = next(f for r in big.rows if r.machine == "m-tsc-fast" for f in r.flags)
    assert tsc_flag.value == pytest.approx(80.0, abs=0.2)  # ppm from the group's median
    epyc = next(g for g in groups if g.key[3] == "uefi")
    assert epyc.stats["tsc_mhz"]["median"] is None and epyc.stats["stolen_ms"]["against"] == "fleet"


def test_a_fault_below_the_floor_is_not_flagged(tmp_path):
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        for i in range(6):
            st.add_log(machine(i), f"m{i}", "capture", meta={"firmware": "bios"})
        st.add_log(machine(9, tsc_ppm=5.0, stolen_ms=800.0, stall_ms=20.0), "small", "capture", meta={"firmware": "bios"})
    with store.open_store(db) as st:
        groups = fleet.analyse(st.runs())
    assert not [r.machine for g in groups for r in g.rows if r.flags]


def test_latest_run_per_machine_and_all(tmp_path, capsys):
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        for i in range(4):
            st.add_log(machine(i), f"m{i}", "capture", meta={"started": "2026-11-24T10:00:00+00:00"})
        st.add_log(machine(9, stolen_ms=3000.0), "m0", "capture", meta={"started": "2026-11-24T09:00:00+00:00"})  # older
    r = run_cli(capsys, "fleet", "--store", db)
    assert r.code == 0 and "4 machines" in r.out and "Outliers: none" in r.out, r
    r = run_cli(capsys, "fleet", "--store", db, "--all", "--check")
    assert r.code == 1 and "5 runs" in r.out and "time stolen from the CPU: 3000 ms" in r.out, r


def test_terminal_and_json_state_the_threshold_and_the_reasons(fleet_store, capsys):
    r = run_cli(capsys, "fleet", "--store", fleet_store)
    assert r.code == 0, r
    assert "|x - median| > max(3.5 x 1.4826 x MAD, floor)" in r.out
    assert "Outliers: 6" in r.out
    assert re.search(r"m-stolen \(run \d+\):\n    time stolen from the CPU: 2000 ms, \+\d+ from the group median", r.out), r.out
    assert "failed check: " in r.out and "the run did not pass: failed" in r.out
    r = run_cli(capsys, "fleet", "--store", fleet_store, "--json", "-")
    data = json.loads(r.out)
    assert data["format"] == "clockbench-fleet" and data["threshold"]["k"] == 3.5
    assert set(data["outliers"]) == set(FAULTS)
    m = {x["machine"]: x for g in data["groups"] for x in g["machines"]}
    assert m["m-stall"]["flags"][0]["metric"] == "stall_ms" and m["m-stall"]["values"]["stall_ms"] == 300
    assert not m["m-ok-3"]["outlier"]


def test_an_empty_or_missing_store(tmp_path, capsys):
    r = run_cli(capsys, "fleet", "--store", tmp_path / "none.db")
    assert r.code == 66, r
    store.open_store(tmp_path / "empty.db").close()
    r = run_cli(capsys, "fleet", "--store", tmp_path / "empty.db")
    assert r.code == 66 and "holds no runs" in r.err, r


OUTLIERS = """  document.body.dataset.outliers = document.querySelectorAll("tr.outlier").length;"""


def test_html_page_loads_in_chromium_with_its_plots(fleet_store, tmp_path, capsys):
    need_tool("chromium", CHROMIUM)
    page = tmp_path / "fleet.html"
    r = run_cli(capsys, "fleet", "--store", fleet_store, "--html", page)
    assert r.code == 0, r
    html = page.read_text()
    assert "max(3.5 x 1.4826 x MAD, floor)" in html and "m-stolen" in html
    assert 'id="plot-tsc"' in html and 'id="plot-offset_us"' in html
    data = rendered(html, tmp_path, OUTLIERS).get
    assert data("loaded") == "yes" and data("errors") == ""
    images = data("images").split(",")
    assert len(images) >= 3 and set(images) == {"ok"}
    assert data("outliers") == "6"


def test_a_figure_within_its_own_stated_uncertainty_is_not_flagged(tmp_path):
    """Two TSCs 80 ppm fast of their group: one whose run states 40 ppm of
    uncertainty (a short window on a disturbed host: 80 ppm is 2 of them,
    which it cannot tell from nothing) and one stating 5 ppm. Only the second
    is an outlier, and the threshold says why."""
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        for i in range(6):
            st.add_log(machine(i), f"m{i}", "capture", meta={"firmware": "bios"})
        st.add_log(machine(7, tsc_ppm=80.0, tsc_u_ppm=40.0), "unsure", "capture", meta={"firmware": "bios"})
        st.add_log(machine(8, tsc_ppm=80.0, tsc_u_ppm=5.0), "sure", "capture", meta={"firmware": "bios"})
    with store.open_store(db) as st:
        groups = fleet.analyse(st.runs())
    flags = {r.machine: {f.metric for f in r.flags} for g in groups for r in g.rows if r.flags}
    assert flags == {"sure": {"tsc_mhz"}}, flags
    assert f"beyond {fleet.U_K} u" in fleet.threshold_text()


def test_a_tsc_off_its_claim_and_a_crystal_off(tmp_path):
    """Known answers on KVM runs, whose hypervisor claims the TSC's rate:
    one claim 150 ppm off (past the 100 ppm absolute limit and its group),
    one PM timer crystal 80 ppm off its nominal rate."""
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        for i in range(6):
            st.add_log(machine(i, base=KVM), f"kvm{i}", "capture", meta={"firmware": "bios"})
        st.add_log(machine(7, base=KVM, claim_ppm=150.0), "kvm-claim", "capture", meta={"firmware": "bios"})
        st.add_log(machine(8, base=KVM, crystal_ppm=80.0), "kvm-crystal", "capture", meta={"firmware": "bios"})
    with store.open_store(db) as st:
        groups = fleet.analyse(st.runs())
    flags = {r.machine: r.flags for g in groups for r in g.rows if r.flags}
    assert {m: {f.metric for f in fl} for m, fl in flags.items()} == {"kvm-claim": {"tsc_claim_ppm"},
                                                                    "kvm-crystal": {"crystal_ppm"}}
    recs = records.parse_log(KVM.read_text()).records  # the fixture's own TSC against its claim, beside the 150 added
    claim = records.one(recs, "freq_claim", source="cpuid.40000010h", what="tsc")["hz"]
    own = (records.one(recs, "profile")["tsc_hz"] / claim - 1) * 1e6
    assert flags["kvm-claim"][0].value == pytest.approx(150 + own, abs=0.2), own
    assert flags["kvm-crystal"][0].value == 80.0


def test_runs_that_did_not_run_are_no_rows_and_os_logs_are_linux_hosts(tmp_path, capsys):
    """A typo'd place or a port that never opened left a run that never
    reached the image: no row, --check ignores it, the output says so. A
    clockbench-os log measures Linux, not the bare machine: it is a row of
    the Linux hosts' section, never of the bare machines' groups."""
    db = tmp_path / "s.db"
    with store.open_store(db) as st:
        st.add_log(machine(0), "m0", "capture", meta={"firmware": "bios", "started": "2026-11-24T09:00:00+00:00"})
        # the same machine's newer run that never reached the image must not hide its real one
        st.add_log("", "m0", "lab", meta={"reason": "cannot acquire place m0", "started": "2026-11-24T10:00:00+00:00"},
                   incomplete_ok=True)
        st.add_log("", "nosuchplace", "lab", meta={"reason": "cannot acquire place nosuchplace"}, incomplete_ok=True)
        st.add_log((TCG.parent / "os-vm-tcg-q35.log").read_text(), "m0-linux", "import")
    r = run_cli(capsys, "fleet", "--store", db, "--check")
    assert r.code == 0, r
    assert r.out.startswith("clockbench fleet: 1 machine in 1 group; 1 Linux host (clockbench-os)\n"), r.out
    assert "Outliers: none" in r.out and "Said of the Linux hosts: nothing sets one apart" in r.out, r.out
    assert "Left out: 2 runs that never reached the image (did not run)\n" in r.out, r.out
    assert "nosuchplace" not in r.out
    assert re.search(r"^  m0 +2026-11-24 09:00:00 +passed", r.out, re.M), r.out
    bare, linux = r.out.split("== Linux hosts (clockbench-os): 1 host")
    assert "m0-linux" not in bare and re.search(r"^  m0-linux +\S+ \S+ +6\.1\.0-56-amd64 +tsc \(hpet acpi_pm\) ", linux, re.M), linux
    data = json.loads(run_cli(capsys, "fleet", "--store", db, "--json", "-").out)
    assert [m["machine"] for g in data["groups"] for m in g["machines"]] == ["m0"] and len(data["left_out"]) == 1
    assert [h["machine"] for h in data["os_hosts"]["rows"]] == ["m0-linux"]


def test_fleet_wide_statistics_are_printed_once(fleet_store, capsys):
    r = run_cli(capsys, "fleet", "--store", fleet_store)
    # the EPYC group (1 machine) falls back to the whole fleet for all but the TSC rate: said once, at the top
    assert r.out.count("Whole fleet") == 1 and r.out.count("stolen_ms median") == 2, r.out  # the fleet's and the big group's
    assert "groups" in r.out.splitlines()[0] and "(fleet, n=" not in r.out


def test_the_timer_p50_is_kept_without_a_p99(tmp_path):
    def no_p99(rec):
        if rec["type"] == "timer_choice":
            rec["p99_ns"] = None
        return rec
    with store.open_store(tmp_path / "s.db") as st:
        st.add_log(edit(TCG.read_text(), no_p99), "short", "import")
        [run] = st.runs()
    choice = [r for r in __import__("clockbench.records.records", fromlist=["parse_log"]).parse_log(TCG.read_text()).records if r["type"] == "timer_choice"][0]
    assert run.figures["timer_p50_ns"].value == choice["p50_ns"] and "timer_p99_ns" not in run.figures
