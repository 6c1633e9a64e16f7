"""`clockbench fleet` compares Linux hosts by the p50's 95% interval (issue
48, section 2): two hosts whose intervals overlap are never called
different. A fleet made from a real clockbench-os log with intervals
(tests/fixtures/os-lang-intervals.log), stored through the real command
line: seven ordinary hosts, and beside them
- wide: every language's p50 2.5 times the others' (far above the p50 rule's
  limit, which would flag it) but its interval reaching down to theirs: not
  called different, and said so, naming the host it overlaps;
- slow: every cost 4 times, its interval with it: apart, called out;
- old: every cost 4 times, with no interval (a log from before them):
  compared by p50 alone, and said so.
Checked in the terminal, the JSON and the HTML page."""

from __future__ import annotations

import json
import re

import pytest

from helpers.paths import FIXTURES
from helpers.tool import run_cli
from clockbench.fleet import madefleet, osfleet
from clockbench.records import records

BASE = "os-lang-intervals.log"
ORDINARY = [f"n{i:02d}" for i in range(7)]


def _rewrite(text: str, change) -> str:
    """The log with change(record) applied to each lang_clock record."""
    out = []
    for line in text.split("\n"):
        if line.startswith(records.PREFIX) and '"type":"lang_clock"' in line:
            r = json.loads(line[len(records.PREFIX):])
            change(r)
            line = records.PREFIX + json.dumps(r, separators=(",", ":"))
        out.append(line)
    return "\n".join(out)


def _wide(r: dict) -> None:
    """2.5 times the p50, the interval from the ordinary low end to just above it."""
    if isinstance(r.get("p50_ns"), (int, float)) and r.get("p50_ci_ns"):
        r["p50_ns"] = round(r["p50_ns"] * 2.5, 3)
        r["p50_ci_ns"] = [r["p50_ci_ns"][0], round(r["p50_ns"] * 1.05, 3)]


def _slow(r: dict) -> None:
    if isinstance(r.get("p50_ns"), (int, float)) and r.get("p50_ci_ns"):
        r["p50_ns"] = round(r["p50_ns"] * 4, 3)
        r["p50_ci_ns"] = [round(x * 4, 3) for x in r["p50_ci_ns"]]
        r["disturbed"] = True  # issue 48: its run was busy (cut by a bound, or slow in every round)


def _old(r: dict) -> None:
    r.pop("p50_ci_ns", None)
    if isinstance(r.get("p50_ns"), (int, float)):
        r["p50_ns"] = round(r["p50_ns"] * 4, 3)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("os-intervals")
    base = (FIXTURES / BASE).read_text()
    odd = {"wide": _wide, "slow": _slow, "old": _old}
    for i, name in enumerate(ORDINARY + list(odd)):
        h = madefleet.Host(name, f"{i:08x}{'1e7e4a15' * 3}", BASE, "tsc")
        jitter = ((i * 3) % 7 - 3) * 0.01 if name in ORDINARY else 0.0  # -3 % .. +3 %
        text = madefleet.host_log(base, h, started=f"2026-12-07T00:{i:02d}:00Z", jitter=jitter)
        if name in odd:
            text = _rewrite(text, odd[name])
        d = root / "fetched" / f"{name}-2026-12-07T00-{i:02d}-00Z"
        d.mkdir(parents=True)
        (d / "os.log").write_text(text)
    path = root / "s.db"
    return path, root


@pytest.fixture(scope="module")
def stored(db):
    path, root = db
    import subprocess
    import os

    r = subprocess.run(["/usr/bin/python3", "-m", "clockbench", "import", "--store", str(path), str(root / "fetched")],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(FIXTURES.parents[1] / "tools")})
    assert r.returncode == 0 and "10 added" in r.stdout, r.stdout[-1000:] + r.stderr[-1000:]
    return path


def _json(capsys, store) -> dict:
    r = run_cli(capsys, "fleet", "--store", store, "--json", "-")
    assert r.code == 0, r
    return json.loads(r.out)["os_hosts"]


def test_the_rows_carry_each_interval_and_old_has_none(stored, capsys):
    data = _json(capsys, stored)
    rows = {r["machine"]: r for r in data["rows"]}
    assert set(rows) == set(ORDINARY) | {"wide", "slow", "old"}
    recs = [r for r in records.parse_log((FIXTURES / BASE).read_text()).records
            if r["type"] == "lang_clock" and r["language"] == "go" and r["api"] == "time.Now"]
    lo, hi = recs[0]["p50_ci_ns"]
    assert rows["slow"]["languages"]["go"]["p50_ci_ns"] == pytest.approx([4 * lo, 4 * hi])
    assert rows["wide"]["languages"]["go"]["p50_ci_ns"][0] == pytest.approx(lo)
    assert all(v["p50_ci_ns"] is None for v in rows["old"]["languages"].values())
    assert all(v["p50_ci_ns"] is not None for n in ORDINARY for v in rows[n]["languages"].values())


def test_an_overlapping_host_the_p50_rule_would_flag_is_never_called_different(stored, capsys):
    data = _json(capsys, stored)
    rows = {r["machine"]: r for r in data["rows"]}
    go_called = next(f for f in data["findings"] if f["kind"] == "cost" and f["language"] == "go")
    go_spared = next(f for f in data["findings"] if f["kind"] == "cost not apart" and f["language"] == "go")
    # by p50 alone wide is far above the limit: the old rule flagged it
    assert rows["wide"]["languages"]["go"]["p50_ns"] - go_called["median_ns"] > go_called["limit_ns"]
    assert go_spared["hosts"] == ["wide"] and go_spared["overlaps"]["wide"] in ORDINARY
    assert sorted(go_called["hosts"]) == ["old", "slow"]
    assert go_called["basis"] == "mixed" and go_called["p50_alone"] == ["old"]
    assert "compared by the p50s' 95% intervals, by p50 alone for 1 host whose records carry none (old)" in go_called["text"]
    assert re.search(r"wide \d+ ns \([\d.]+-[\d.]+ ns\) overlaps n\d\d \d+ ns \([\d.]+-[\d.]+ ns\)", go_spared["text"]), go_spared
    # the rows: wide is no outlier in any language, slow and old are
    assert not rows["wide"]["flags"] and "wide" not in data["outliers"]
    assert {f["kind"] for f in rows["slow"]["flags"]} == {"cost"} and {"slow", "old"} <= set(data["outliers"])
    # slow's figures were marked disturbed by its run: called out, and said to be a busy host's
    assert all("the host was busy during its run" in f["text"] for f in rows["slow"]["flags"]), rows["slow"]["flags"]
    assert not any("busy" in f["text"] for f in rows["old"]["flags"])
    assert re.search(r"slow \d+ ns \([\d.]+-[\d.]+ ns, the host busy\)", go_called["text"]), go_called["text"]
    assert any("(p50 alone)" in f["text"] for f in rows["old"]["flags"])


def test_no_two_overlapping_hosts_are_called_different_in_any_language(stored, capsys):
    """The rule, over every comparison the fleet made: each host called out
    has an interval (or its p50) apart from every host it is set against."""
    data = _json(capsys, stored)
    rows = {r["machine"]: r for r in data["rows"]}
    checked = 0
    for f in data["findings"]:
        if f["kind"] not in ("cost", "cost not apart"):
            continue
        lang = f["language"]
        called = set(f["hosts"]) if f["kind"] == "cost" else set()
        called |= {h for g in data["findings"] if g["kind"] == "cost" and g["language"] == lang for h in g["hosts"]}

        def span(r):
            if lang == osfleet.OS_LANG:
                c, ci = r["os_clock"]["vdso_ns"], r["os_clock"]["vdso_ci_ns"]
            else:
                c, ci = r["languages"][lang]["p50_ns"], r["languages"][lang]["p50_ci_ns"]
            return ci or [c, c]

        have = [m for m, r in rows.items() if r["through_syscall"] is False and (lang == osfleet.OS_LANG or lang in r["languages"])]
        for h in called:
            for o in set(have) - called:
                a, b = span(rows[h]), span(rows[o])
                assert a[0] > b[1] or b[0] > a[1], (lang, h, a, o, b)
                checked += 1
    assert checked >= 5 * 2 * 8  # Go, Java, Python, C++ x2, Rust, Node.js, .NET: slow and old against the eight others


def test_the_terminal_and_the_page_say_it(stored, capsys, tmp_path):
    data = _json(capsys, stored)
    r = run_cli(capsys, "fleet", "--store", stored)
    assert r.code == 0, r
    for f in data["findings"]:
        assert f"\n  {f['text']}\n" in r.out, f["text"]
    lines = {line.split()[0]: line for line in r.out.splitlines() if line.startswith("  ") and line.split()[0] in
             set(ORDINARY) | {"wide", "slow", "old"}}
    assert lines["wide"].rstrip().endswith(" ok") and lines["slow"].rstrip().endswith("OUTLIER: cost"), lines
    # the threshold line names what was compared by p50 alone: old's languages, and clockbench-os's own (no interval)
    assert "by p50 alone, their records carrying no interval (older logs): Go on 1 host;" in r.out
    assert "clockbench-os (C) on 10 hosts" in r.out and data["p50_alone"]["clockbench-os"] == 10
    assert data["p50_alone"]["go"] == 1
    page = tmp_path / "fleet.html"
    assert run_cli(capsys, "fleet", "--store", stored, "--html", page).code == 0
    html = page.read_text()
    rows = re.findall(r"<tr( class=\"outlier\"[^>]*)?><td>([^<]+)</td>", html)
    outliers = {name for cls, name in rows if cls}
    assert {"slow", "old"} <= outliers and "wide" not in outliers, rows
    assert all(f["text"].replace('"', "&#34;").replace("'", "&#39;") in html for f in data["findings"])
    assert "two hosts whose intervals overlap are never called different" in html


def _row(name: str, p50: float, ci: list[float] | None) -> osfleet.OsRow:
    return osfleet.OsRow({"machine": name}, {"go": {"api": "time.Now", "p50_ns": p50, "p50_ci_ns": ci}},
                         {"vdso_ns": None}, False)


def test_a_host_spared_can_spare_another_and_apart_ones_stay_called():
    """The rule to its fixed point: b overlaps only a, a overlaps the
    ordinary hosts; once a is not called different, neither is b (b and a
    overlap). c lies apart from all of them and stays called."""
    ordinary = [_row(f"n{i}", 50 + i, [45 + i, 56 + i]) for i in range(5)]
    a = _row("a", 150, [55, 160])
    b = _row("b", 200, [158, 230])
    c = _row("c", 400, [380, 420])
    rows = ordinary + [a, b, c]
    findings = osfleet._cost_findings(rows)
    called = next(f for f in findings if f["kind"] == "cost")
    spared = next(f for f in findings if f["kind"] == "cost not apart")
    assert called["hosts"] == ["c"] and called["basis"] == "intervals" and called["p50_alone"] == []
    assert sorted(spared["hosts"]) == ["a", "b"] and spared["overlaps"]["b"] == "a" and spared["overlaps"]["a"].startswith("n")
    assert [f["kind"] for f in c.flags] == ["cost"] and not a.flags and not b.flags
    # without intervals (the p50 rule alone) all three were past the limit
    bare = [_row(r.machine, r.cost("go"), None) for r in rows]
    assert sorted(next(f for f in osfleet._cost_findings(bare) if f["kind"] == "cost")["hosts"]) == ["a", "b", "c"]
