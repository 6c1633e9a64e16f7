"""`clockbench run --vmm firecracker|cloud-hypervisor --snapshot-at/
--snapshot-gap`, booting nothing: a time before the serial port's first
line (negative) or at or past the run's time bound, a gap out of range, a
gap with no snapshot, or --snapshot-at with QEMU (whose VM moves with
--migrate-at), is one line, exit 64, no monitor started and no run folder;
and the known answer's arithmetic (snapshot.SnapshotResult: the resume
call's middle less the pause call's, within half of each round trip)."""

from __future__ import annotations

import pytest

from helpers.paths import VMM_DIR
from helpers.tool import err_lines, kept_nothing, run_argv, run_cli
from clockbench import errors
from clockbench.machines import snapshot


def _run(capsys, tmp_path, vmm, *extra):
    runs_dir = tmp_path / "runs"
    binary = ["--vmm-binary", str(VMM_DIR / vmm)] if vmm != "qemu" else ["--boot", "direct", "--accel", "tcg"]
    got = run_cli(capsys, *run_argv(runs_dir, "--vmm", vmm, *binary), *extra)
    return got, runs_dir


@pytest.mark.parametrize("vmm", ["firecracker", "cloud-hypervisor"])
@pytest.mark.parametrize("extra, names", [
    (["--snapshot-at", "-1"], "--snapshot-at -1"),
    (["--timeout", "30", "--snapshot-at", "30"], "--snapshot-at 30"),
    (["--timeout", "30", "--snapshot-at", "45.5"], "--snapshot-at 45.5"),
    (["--snapshot-at", "nan"], "--snapshot-at nan"),
    (["--snapshot-at", "inf"], "--snapshot-at inf"),
    # the quick profile's bound: 617.5 s (as --migrate-at's)
    (["--snapshot-at", "617.5"], "--snapshot-at 617.5"),
    (["--snapshot-at", "1", "--snapshot-gap", "-2"], "--snapshot-gap -2"),
    (["--snapshot-at", "1", "--snapshot-gap", "3601"], "--snapshot-gap 3601"),
    (["--snapshot-gap", "5"], "--snapshot-gap 5"),
])
def test_bad_snapshot_is_one_line_exit_64_and_no_folder(capsys, tmp_path, vmm, extra, names):
    got, runs_dir = _run(capsys, tmp_path, vmm, *extra)
    assert got.code == errors.USAGE == 64, got
    lines = err_lines(got)
    assert len(lines) == 1 and names in lines[0], got.err
    assert got.out == ""
    assert kept_nothing(runs_dir)


def test_snapshot_at_is_refused_with_qemu(capsys, tmp_path):
    got, runs_dir = _run(capsys, tmp_path, "qemu", "--snapshot-at", "5")
    assert got.code == errors.USAGE, got
    lines = err_lines(got)
    assert len(lines) == 1 and "--snapshot-at 5" in lines[0] and "--migrate-at" in lines[0], got.err
    assert kept_nothing(runs_dir)


def test_migrate_at_is_refused_with_a_microvm(capsys, tmp_path):
    got, runs_dir = _run(capsys, tmp_path, "firecracker", "--migrate-at", "5")
    assert got.code == errors.USAGE, got
    assert "--migrate-at" in got.err
    assert kept_nothing(runs_dir)


def test_pause_to_resume_and_its_bound():
    r = snapshot.SnapshotResult(snapshot.Snapshot(at_s=2.0, gap_s=3.0), vmm="firecracker", pause_sent_wall=100.0,
                                pause_reply_wall=100.010, resume_sent_wall=103.5, resume_reply_wall=103.504)
    assert r.done
    # the VM stopped within [100.000, 100.010] and ran again within [103.500, 103.504]
    assert r.stopped_s == pytest.approx(103.502 - 100.005, abs=1e-9)
    assert r.stopped_uncertainty_s == pytest.approx(0.005 + 0.002, abs=1e-12)
    lo, hi = r.stopped_s - r.stopped_uncertainty_s, r.stopped_s + r.stopped_uncertainty_s
    assert lo == pytest.approx(103.5 - 100.010) and hi == pytest.approx(103.504 - 100.0)
    j = r.to_json()
    assert j["stopped_s"] == r.stopped_s and j["at_s"] == 2.0 and j["gap_s"] == 3.0 and j["vmm"] == "firecracker"
    assert "stood still 3.497000 s" in r.describe()
    undone = snapshot.SnapshotResult(snapshot.Snapshot(at_s=1.0), pause_sent_wall=5.0, pause_reply_wall=5.1,
                                     error="the run ended during the gap")
    assert not undone.done and undone.stopped_s is None and undone.stopped_uncertainty_s is None
    assert "not done; the run ended during the gap" in undone.describe()
    paused = snapshot.SnapshotResult(snapshot.Snapshot(at_s=1.0), pause_sent_wall=5.0, pause_reply_wall=5.1,
                                     resume_sent_wall=8.1, resume_reply_wall=8.2, first_resumed=True, error="HTTP 500")
    assert paused.done and "the snapshot failed" in paused.describe() and "same monitor" in paused.describe()


def test_a_snapshot_past_the_runs_end_is_refused_once_the_run_ended(capsys, tmp_path):
    """run_keep.stop_reached, as the migration's boot test sees it end to end
    (tests/boot/test_migrate.py): a stop the run never reached is exit 64
    and one line; a stop done, or one that failed for another reason,
    leaves the run's own status."""
    from clockbench.cli import run_keep

    meta = {"log": str(tmp_path / "run.log"),
            "snapshot": {"at_s": 90.0, "stopped_s": None, "error": "the run ended before the snapshot's time"}}
    assert run_keep.stop_reached(meta, "snapshot", 0) == errors.USAGE
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("clockbench: --snapshot-at 90: past the run's end"), err
    done = {"log": meta["log"], "snapshot": {"at_s": 2.0, "stopped_s": 3.1, "error": None}}
    assert run_keep.stop_reached(done, "snapshot", 1) == 1
    failed = {"log": meta["log"], "snapshot": {"at_s": 2.0, "stopped_s": None, "error": "the monitor died"}}
    assert run_keep.stop_reached(failed, "snapshot", 4) == 4
    assert run_keep.stop_reached({"log": meta["log"]}, "snapshot", 0) == 0
    assert capsys.readouterr().err == ""
