"""`clockbench run --migrate-at/--migrate-gap`, booting nothing: a time
before the serial port's first line (negative) or at or past the run's time
bound (--timeout, or what the profile and duration ask for), a gap out of
range, or a gap with no migration, is one line, exit 64, no QEMU started and
no run folder; and the known answer's arithmetic (qemu.MigrationResult: QMP
STOP to RESUME, within the two commands' round trips)."""

from __future__ import annotations

import pytest

from helpers.tool import err_lines, kept_nothing, run_argv, run_cli
from clockbench import errors
from clockbench.machines import qemu
from clockbench.runs import plan
from clockbench.cli import run_args


def _run(capsys, tmp_path, *extra):
    runs_dir = tmp_path / "runs"
    got = run_cli(capsys, *run_argv(runs_dir, "--boot", "direct", "--accel", "tcg"), *extra)
    return got, runs_dir


@pytest.mark.parametrize("extra, names", [
    (["--migrate-at", "-1"], "--migrate-at -1"),
    (["--migrate-at", "-0.001"], "--migrate-at -0.001"),
    (["--timeout", "30", "--migrate-at", "30"], "--migrate-at 30"),
    (["--timeout", "30", "--migrate-at", "45.5"], "--migrate-at 45.5"),
    (["--migrate-at", "nan"], "--migrate-at nan"),
    (["--migrate-at", "inf"], "--migrate-at inf"),
    # the quick profile's bound: 600 s + 3 x (2 + 0.5) s + 10 s = 617.5 s
    (["--migrate-at", "617.5"], "--migrate-at 617.5"),
    (["--duration", "10", "--migrate-at", "700"], "--migrate-at 700"),
    (["--migrate-at", "1", "--migrate-gap", "-2"], "--migrate-gap -2"),
    (["--migrate-at", "1", "--migrate-gap", "3601"], "--migrate-gap 3601"),
    (["--migrate-gap", "5"], "--migrate-gap 5"),
    (["--migrate-after", "drift"], "--migrate-after drift"),
    (["--migrate-at", "1", "--migrate-after", "drfit"], "--migrate-after"),
])
def test_bad_migration_is_one_line_exit_64_and_no_folder(capsys, tmp_path, extra, names):
    got, runs_dir = _run(capsys, tmp_path, *extra)
    assert got.code == errors.USAGE == 64, got
    lines = err_lines(got)
    assert len(lines) == 1 and names in lines[0], got.err
    assert got.out == ""
    assert kept_nothing(runs_dir)


def test_the_bound_follows_the_duration(capsys, tmp_path):
    """Past quick's bound but within a 60 s duration's: no usage error from
    the migration's check (the run is then refused for its missing kernel,
    a different error, before any folder is made)."""
    bound = plan.default_timeout("duration=60")
    assert bound > 617.5
    got, runs_dir = _run(capsys, tmp_path, "--duration", "60", "--migrate-at", "617.5", "--kernel", tmp_path / "none.elf")
    assert got.code == errors.NoInput.code, got
    assert "--migrate-at" not in got.err
    assert kept_nothing(runs_dir)


def test_stop_interval_and_its_bound():
    r = qemu.MigrationResult(qemu.Migration(at_s=2.0, gap_s=3.0), stop_sent_wall=100.0, stop_event_wall=100.0004,
                             stop_reply_wall=100.001, resume_sent_wall=103.2, resume_event_wall=103.2015,
                             resume_reply_wall=103.203)
    assert r.done
    assert r.stopped_s == pytest.approx(3.2011, abs=1e-9)
    assert r.stopped_uncertainty_s == pytest.approx(0.001 + 0.003 + 2e-6, abs=1e-12)
    j = r.to_json()
    assert j["stopped_s"] == r.stopped_s and j["at_s"] == 2.0 and j["gap_s"] == 3.0
    assert "stood still 3.201100 s" in r.describe()
    undone = qemu.MigrationResult(qemu.Migration(at_s=1.0), stop_event_wall=5.0, error="QEMU ended")
    assert not undone.done and undone.stopped_s is None and undone.stopped_uncertainty_s is None
    assert "not done; QEMU ended" in undone.describe()


def test_the_origin_is_the_first_line_or_the_phase_named():
    assert qemu.Migration(at_s=1).origin_pattern().search(b"banner\n")
    after = qemu.Migration(at_s=1, after="drift").origin_pattern()
    assert not after.search(b'@cb {"type":"progress","phase":"timers"}\n')
    assert after.search(b'@cb {"type":"progress","phase":"drift","done":0}')
    assert set(run_args.PHASES) == {"calibrate", "cpu_speed", "hpet_comparator", "read_cost", "sequential", "timers", "cpus",
                                  "drift", "rtc", "stolen"}
