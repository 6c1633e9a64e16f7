"""`clockbench fleet`'s Linux hosts (issue 43, section 3): a fleet of 30
hosts made from the real clockbench-os logs (madefleet.py), some switched to
the HPET or the PM timer with the costs a real run measured there (every
clock a system call), two with the TSC marked unstable, one whose every
clock costs eight times the others' though it reads by the vDSO. Imported
through the real command line; the rows, the sentences and their figures
are checked against what the logs on disk hold, in the terminal, the JSON
and the HTML page (loaded in headless Chromium)."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest

from helpers.browser import CHROMIUM, rendered
from helpers.paths import FIXTURES
from helpers.tool import need_tool, run_cli
from clockbench.fleet import madefleet, osfleet
from clockbench.records import figures, records

# what the page's own tables hold, as the browser built them
OS_PROBE = """  document.body.dataset.outliers = document.querySelectorAll("#os-table tr.outlier").length;
  document.body.dataset.said = document.querySelectorAll("#os-said li").length;"""

BASES = ["os-lang-host.log", "os-firecracker-host.log"]  # a host with every language, and one without
SLOW = "host008"  # every clock 8 times the others', by the vDSO: a VM that traps the TSC, say


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("os-fleet")
    logs = {n: (FIXTURES / n).read_text() for n in BASES + ["os-vm-lang-tcg.log"]}
    hosts = madefleet.plan(30, BASES, syscall_every=10, syscall_cs=("hpet", "acpi_pm"), unstable_every=15)
    folders = madefleet.write(root / "fetched", hosts, logs, "os-vm-lang-tcg.log")
    slow = next(d for d in folders if d.name.startswith(SLOW))
    h = next(h for h in hosts if h.name == SLOW)
    (slow / "os.log").write_text(madefleet.host_log(logs[h.base], h, started="2026-11-28T00:00:56Z", jitter=7.0))
    return root / "s.db", {d.name.split("-")[0]: d / "os.log" for d in folders}


@pytest.fixture(scope="module")
def db(made) -> Path:
    store_path, _ = made
    r = subprocess.run(["/usr/bin/python3", "-m", "clockbench", "import", "--store", str(store_path),
                        str(store_path.parent / "fetched")], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(FIXTURES.parents[1] / "tools")})
    assert r.returncode == 0 and "30 added" in r.stdout, r.stdout[-1000:] + r.stderr[-1000:]
    return store_path


def headline(log: Path, lang: str, api: str) -> tuple[str, float | None, float | None]:
    """From the log on disk: the clocksource in use, and lang's api there (p50, system calls per 1000)."""
    recs = records.parse_log(log.read_text()).records
    cs = records.one(recs, "os")["clocksource"]
    r = [x for x in recs if x["type"] == "lang_clock" and x["clocksource"] == cs and x["language"] == lang and x["api"] == api]
    return cs, (r[-1]["p50_ns"] if r else None), (r[-1]["syscalls_per_1000"] if r else None)


SYSCALL_HOSTS = {"host002": "hpet", "host004": "hpet", "host012": "acpi_pm", "host019": "hpet", "host022": "hpet"}


def test_a_row_per_host_with_its_clocksource_and_languages(db, made, capsys):
    _, logs = made
    r = run_cli(capsys, "fleet", "--store", db, "--json", "-")
    assert r.code == 0, r
    data = json.loads(r.out)
    rows = {x["machine"]: x for x in data["os_hosts"]["rows"]}
    assert set(rows) == set(logs) and len(rows) == 30 and data["groups"] == []
    for name, log in logs.items():
        row = rows[name]
        cs, go, go_sys = headline(log, "go", "time.Now")
        assert row["clocksource"] == cs == SYSCALL_HOSTS.get(name, "tsc"), (name, row["clocksource"])
        assert row["through_syscall"] is (name in SYSCALL_HOSTS), name
        if go is None:  # the host without languages: clockbench-os's own clocks only
            assert row["languages"] == {} and row["os_clock"]["vdso_ns"] > 0, row
            continue
        assert set(row["languages"]) == {"go", "java", "python", "cpp-libstdc++", "cpp-libc++", "rust", "node", "dotnet"}
        assert {l: v["api"] for l, v in row["languages"].items()} == {
            "go": "time.Now", "java": "System.nanoTime", "python": "perf_counter", "cpp-libstdc++": "steady_clock",
            "cpp-libc++": "steady_clock", "rust": "Instant::now", "node": "process.hrtime.bigint",
            "dotnet": "Stopwatch.GetTimestamp"}
        assert row["languages"]["go"]["p50_ns"] == go and row["languages"]["go"]["syscalls_per_call"] == go_sys / 1000
        if name in SYSCALL_HOSTS:
            assert all(v["syscalls_per_call"] >= 1 and v["path"] == "syscall" for v in row["languages"].values()), row
        else:
            assert all(v["syscalls_per_call"] < 0.01 and v["path"] == "vdso" for v in row["languages"].values()), row
    assert rows["host004"]["tsc_unstable"] is True and rows["host004"]["tsc_unstable_why"] == madefleet.UNSTABLE_WORDS
    assert rows["host003"]["tsc_unstable"] is False and rows["host003"]["kernel"] == "6.18.44-fc-v657"
    assert rows["host002"]["clocksources"] == ["tsc", "kvm-clock", "hpet"] and rows["host002"]["machine_id"].startswith("00000002")


def test_the_hosts_that_read_time_through_a_system_call_said_in_words(db, made, capsys):
    _, logs = made
    r = run_cli(capsys, "fleet", "--store", db, "--json", "-")
    data = json.loads(r.out)["os_hosts"]
    through = next(f for f in data["findings"] if f["kind"] == "syscall")
    assert set(through["hosts"]) == set(SYSCALL_HOSTS)
    assert through["clocksources"] == {"hpet": ["host002", "host004", "host019", "host022"], "acpi_pm": ["host012"]}
    # the figures the sentence gives, from the logs on disk
    there = [headline(logs[h], "go", "time.Now")[1] for h in SYSCALL_HOSTS]
    others = [headline(logs[h], "go", "time.Now")[1] for h in logs if h not in SYSCALL_HOSTS]
    there, others = statistics.median([x for x in there if x]), statistics.median([x for x in others if x])
    assert through["language"] == "go" and through["costs"]["go"]["p50_ns_there"] == there
    assert through["costs"]["go"]["p50_ns_others"] == others
    assert 1400 < there < 2000 and 45 < others < 55
    sentence = (f"5 of 30 hosts read time through a system call (clocksource hpet: host002, host004, host019, host022; "
                f"acpi_pm: host012): Go time.Now {figures.ns(there, 2)} there, {figures.ns(others, 2)} on the others")
    assert through["text"] == sentence and data["said"][0] == sentence
    assert re.fullmatch(r"Go time\.Now 1\.[4-9] µs there, [45]\d ns on the others", sentence.split("): ")[1])
    r = run_cli(capsys, "fleet", "--store", db)
    assert r.code == 0 and f"\n  {sentence}\n" in r.out, r.out[-3000:]


def test_tsc_unstable_and_a_cost_far_above_the_others_are_said_and_flagged(db, made, capsys):
    r = run_cli(capsys, "fleet", "--store", db, "--json", "-")
    data = json.loads(r.out)["os_hosts"]
    unstable = next(f for f in data["findings"] if f["kind"] == "tsc unstable")
    assert unstable["hosts"] == ["host004", "host019"]
    assert unstable["text"] == ('2 of 30 hosts had the TSC marked unstable by the kernel (host004, now on hpet: '
                                '"clocksource watchdog"; host019, now on hpet: "clocksource watchdog")')
    costs = [f for f in data["findings"] if f["kind"] == "cost"]
    assert costs and all(f["hosts"] == [SLOW] for f in costs), costs
    go = next(f for f in costs if f["language"] == "go")
    assert go["text"].startswith(f"Go time.Now costs far more on 1 host than on the others that read by the vDSO: {SLOW} ")
    # the hosts with languages (the even ones, 15) less the four of them that read through a system call
    assert go["n"] == 11 and 45 < go["median_ns"] < 55
    assert {l["language"] for l in costs} >= {"go", "java", "python", "rust", "clockbench-os"}
    assert set(data["outliers"]) == set(SYSCALL_HOSTS) | {SLOW}
    flags = {x["machine"]: {f["kind"] for f in x["flags"]} for x in data["rows"]}
    assert flags["host004"] == {"syscall", "tsc unstable", "tsc not used"} and flags["host002"] == {"syscall", "tsc not used"}
    assert flags[SLOW] == {"cost"} and flags["host006"] == set()
    r = run_cli(capsys, "fleet", "--store", db, "--check")
    assert r.code == 1 and "OUTLIER: cost" in r.out, r.out[-2000:]


def test_latest_run_per_host_and_all(tmp_path, capsys):
    db = tmp_path / "s.db"
    for i, base in enumerate(("os-firecracker-host.log", "os-lang-host.log")):  # the same host twice, a day apart
        d = tmp_path / f"r{i}"
        d.mkdir()
        h = madefleet.Host("same", "5" * 32, base, "tsc")
        (d / "os.log").write_text(madefleet.host_log((FIXTURES / base).read_text(), h, started=f"2026-11-2{7 + i}T08:00:00Z"))
        assert run_cli(capsys, "import", "--store", db, d).code == 0
    latest = json.loads(run_cli(capsys, "fleet", "--store", db, "--json", "-").out)["os_hosts"]
    assert [(x["machine"], x["kernel"]) for x in latest["rows"]] == [("same", "6.18.44-fc-v595")]
    every = json.loads(run_cli(capsys, "fleet", "--store", db, "--all", "--json", "-").out)["os_hosts"]
    assert [x["kernel"] for x in every["rows"]] == ["6.18.44-fc-v657", "6.18.44-fc-v595"] and every["selection"] == "runs"
    r = run_cli(capsys, "fleet", "--store", db, "--all")
    assert "== Linux hosts (clockbench-os): 2 runs\n" in r.out and "nothing sets one apart" in r.out, r.out


def test_html_page_says_it_and_loads_in_chromium(db, tmp_path, capsys):
    need_tool("chromium", CHROMIUM)
    page = tmp_path / "fleet.html"
    r = run_cli(capsys, "fleet", "--store", db, "--html", page)
    assert r.code == 0, r
    html = page.read_text()
    said = json.loads(run_cli(capsys, "fleet", "--store", db, "--json", "-").out)["os_hosts"]["said"]
    assert all(s.replace('"', "&#34;") in html for s in said), said
    assert 'id="os-table"' in html and 'id="plot-os-costs"' in html
    data = rendered(html, tmp_path, OS_PROBE).get
    assert data("loaded") == "yes" and data("errors") == "" and set(data("images").split(",")) == {"ok"}
    assert data("outliers") == str(len(SYSCALL_HOSTS) + 1) and data("said") == str(len(said))


def keys(v) -> set[str]:
    if isinstance(v, dict):
        return set(v) | {k for x in v.values() for k in keys(x)}
    if isinstance(v, list):
        return {k for x in v for k in keys(x)}
    return set()


def test_the_json_is_as_docs_fleet_md_writes_it(db, capsys):
    """docs/fleet.md's os_hosts example names every member a row, a language
    and a finding have, and none they lack (other tools read this shape)."""
    doc = (FIXTURES.parents[1] / "docs" / "fleet.md").read_text()
    block = next(b for b in re.findall(r"```json\n(.*?)```", doc, re.S) if b.startswith('"os_hosts": {'))
    # members, not the names of hosts, languages or clocksources that key some maps
    names = set(osfleet.HEADLINE) | {"hpet", "acpi_pm", "os_hosts"}
    written = {k for k in re.findall(r'"([a-z_0-9]+)":', block) if not re.fullmatch(r"host\d+", k)} - names
    data = json.loads(run_cli(capsys, "fleet", "--store", db, "--json", "-").out)["os_hosts"]
    row = data["rows"][0]
    real = set(data) | set(row) | set(row["os_clock"]) | {k for v in row["languages"].values() for k in v} | \
        {k for r in data["rows"] for f in r["flags"] for k in f} | {k for f in data["findings"] for k in f} | \
        {k for f in data["findings"] for c in f.get("costs", {}).values() for k in c}
    assert written == real, (written - real, real - written)


def test_a_run_cut_short_is_said_and_flagged(tmp_path, capsys):
    """A host whose run was killed mid-way: its log ends before the summary.
    It is still a row, with what it measured, and said not to have passed."""
    for i, name in enumerate(("ok-1", "ok-2", "cut")):
        d = tmp_path / "fetched" / name
        d.mkdir(parents=True)
        text = madefleet.host_log((FIXTURES / "os-lang-host.log").read_text(), madefleet.Host(name, f"{i:032x}", "", "tsc"),
                                  started=f"2026-11-28T00:0{i}:00Z")
        if name == "cut":
            text = text[:text.index('"type":"lang_clock","language":"java"')].rsplit("\n", 1)[0]
        (d / "os.log").write_text(text)
    db = tmp_path / "s.db"
    assert run_cli(capsys, "import", "--store", db, tmp_path / "fetched").code == 0
    data = json.loads(run_cli(capsys, "fleet", "--store", db, "--json", "-").out)["os_hosts"]
    rows = {r["machine"]: r for r in data["rows"]}
    assert rows["cut"]["status"] == "incomplete" and set(rows["cut"]["languages"]) == {"cpp-libstdc++", "cpp-libc++", "rust", "go"}
    [run] = [f for f in data["findings"] if f["kind"] == "run"]
    assert run["hosts"] == ["cut"] and run["text"].startswith("1 of 3 hosts: the run did not pass (cut (incomplete: "), run
    assert data["outliers"] == ["cut"] and [f["kind"] for f in rows["cut"]["flags"]] == ["run"]
