"""The smaller points of issue 39's walk (point 10), each held here:
an imported clockbench-os log dated by its own clock, not the file's time;
fleet rows not 250 columns wide; compare --html to a place it cannot write
prints no table first; a read below the TSC's step is not "Left out";
a mistyped command is not pointed at the Makefile's own steps; a bad run id
gives a real usage line; the release notes grouped, user-visible first."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.tool import run_cli as cli
from clockbench.fleet import fleet
from clockbench.release import release
from clockbench.runs import store

from helpers.paths import ROOT  # noqa: E402
TCG = ROOT / "tests" / "fixtures" / "tcg-q35.log"
KVM = ROOT / "tests" / "fixtures" / "kvm-q35.log"


def log_of(*recs) -> str:
    return "\n".join("@cb " + json.dumps(r) for r in recs) + "\n"


def test_an_imported_os_log_is_dated_by_its_own_clock(capsys, tmp_path):
    text = (ROOT / "tests" / "fixtures" / "os-vm-tcg-q35.log").read_text()
    text = text.replace('"type":"os",', '"type":"os","started_utc":"2026-03-04T05:06:07Z",', 1)
    log = tmp_path / "os.log"
    log.write_text(text)
    db = tmp_path / "s.db"
    assert cli(capsys, "import", "--store", db, log)[0] == 0
    with store.open_store(db, create=False) as st:
        assert st.runs()[0]["started"] == "2026-03-04T05:06:07+00:00"


def test_clockbench_os_records_when_it_started():
    program = ROOT / "build" / "os" / "clockbench-os"
    out = subprocess.run([str(program), "--quick", "--current-only", "--no-lang"], capture_output=True, text=True, timeout=120).stdout
    os_rec = next(json.loads(l[4:]) for l in out.splitlines() if l.startswith('@cb {"type":"os"'))
    assert len(os_rec["started_utc"]) == 20 and os_rec["started_utc"].endswith("Z")


def test_a_fleet_row_keeps_the_read_cost_short():
    cell, star = fleet.short_cost("below the TSC's step (10.0 ns): 9.54 ns a read by the batch")
    assert (cell, star) == ("9.54* ns", True)
    assert fleet.short_cost("below the TSC's step (10.0 ns): not resolved") == ("<10.0* ns", True)
    assert fleet.short_cost("29.6 ns") == ("29.6 ns", False)


def test_compare_html_it_cannot_write_prints_no_table(capsys):
    code, out, err = cli(capsys, "compare", TCG, KVM, "--html", "/proc/nope.html")
    assert code == 73 and out == ""
    assert err.strip().splitlines() == ["clockbench compare: cannot write /proc/nope.html: No such file or directory"]


def test_a_read_below_the_step_is_not_left_out(capsys, tmp_path):
    recs = [{"type": "schema", "version": 1, "tool": "clockbench", "build": "b"},
            {"type": "tsc_step", "step_ticks": 26, "step_ns": 10.015, "staircase": 128, "few": 3},
            {"type": "latency", "counter": "rdtsc", "n": 100, "min_ns": 0, "p50_ns": 10.015, "p99_ns": 20.03, "p999_ns": 30.0,
             "max_ns": 40.0, "below_step": True, "batch_k": 64, "batch_ns_per_read": 9.54},
            {"type": "latency", "counter": "hpet", "n": 100, "min_ns": 150, "p50_ns": 160, "p99_ns": 170, "p999_ns": 180,
             "max_ns": 190},
            {"type": "summary", "pass": 1, "fail": 0, "skip": 0, "status": "passed"}]
    log = tmp_path / "r.log"
    log.write_text(log_of(*recs))
    code, out, err = cli(capsys, "report", log, "--out", tmp_path / "r")
    assert code == 0, err
    assert "below the TSC's step is drawn" not in err
    page = (tmp_path / "r" / "report.html").read_text()
    assert "below the TSC's step is drawn" not in page


def test_a_mistyped_command_is_not_pointed_at_the_makefiles_steps(capsys):
    code, out, err = cli(capsys, "rnu")
    assert code == 64
    first = err.splitlines()[0]
    assert first.startswith("clockbench: error: 'rnu' is not a command; did you mean 'run'?")
    assert "esp" not in first and "usbimg" not in first
    assert "`clockbench esp`" in (ROOT / "docs" / "host-tool.md").read_text()


def test_a_bad_run_id_gives_a_real_usage_line(capsys):
    code, out, err = cli(capsys, "runs", "--delete", "abc")
    lines = err.strip().splitlines()
    assert code == 64 and len(lines) == 2
    assert lines[0] == ("clockbench runs: error: argument --delete: 'abc' is not a run id (a whole number from 1, "
                        "as `clockbench runs` lists them)")
    assert lines[1].startswith("usage: clockbench runs [OPTION...]")


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_the_release_notes_put_what_users_meet_first(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    for path, subject in (("tests/host/test_a.py", "a test"), ("docs/a.md", "a doc"), ("kernel/a.c", "the image"),
                          ("tools/clockbench/a.py", "the tool"), ("tests/b.py", "another test")):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(subject)
        git(repo, "add", path)
        git(repo, "commit", "-qm", subject)
    text = release.grouped_changes("HEAD", repo)
    heads = [l for l in text.splitlines() if l.startswith("### ")]
    assert heads == ["### The image", "### The host tool", "### Documentation", "### Tests and CI only"]
    tests = text.split("### Tests and CI only")[1]
    assert "- another test (" in tests and "- a test (" in tests and "the tool" not in tests
