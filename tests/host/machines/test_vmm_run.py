"""`clockbench run --vmm cloud-hypervisor|firecracker` on the host, booting
nothing: the options a microVM monitor has no use for, and a monitor that
cannot be found or run, are refused with one line, exit 64, no run folder
and no process started; and microvm.run's reading of a monitor's output,
through a real process (a script standing in for the monitor that prints a
real run's serial log, then exits, hangs, restarts the image or dies), so
the status from the summary, the grace period, the restart and the partial
log are each seen as `clockbench run` would see them."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from helpers.logs import TCG
from helpers.tool import err_lines, run_argv, run_cli
from helpers.paths import ROOT
from clockbench.machines import cloud_hypervisor, firecracker, microvm, qemu, vmrun
from clockbench import errors
from clockbench.cli import run_machine

LOG = TCG.read_text()
FIRST_RUN = LOG[:LOG.index("clockbench: run ended:")]
RUN_ENDED_LINE = "clockbench: run ended: passed (status 0). Halted; it is safe to power off.\n"


def _script(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


@pytest.fixture
def monitor(tmp_path):
    """A stand-in monitor: answers --version, else prints `log` (a file) and then does `then`."""
    def make(log: str, then: str, name: str = "cloud-hypervisor") -> Path:
        (tmp_path / "serial.txt").write_text(log)
        return _script(tmp_path, name, f'[ "$1" = --version ] && {{ echo "{name} v0-test"; exit 0; }}\n'
                                       f'echo "{name}: a log line of its own" >&2\ncat "{tmp_path / "serial.txt"}"\n{then}\n')
    return make


@pytest.fixture
def usable_kvm(tmp_path, monkeypatch):
    dev = tmp_path / "kvm"
    dev.write_bytes(b"")
    monkeypatch.setattr(qemu, "KVM_DEVICE", str(dev))


# --- bad input: one line, exit 64, nothing kept, nothing started -------------

@pytest.fixture
def nothing_starts(monkeypatch):
    started = []

    def start(*a, **k):
        started.append(a[:1])
        raise AssertionError(f"a process was started: {a[:1]}")

    monkeypatch.setattr(vmrun.subprocess, "Popen", start)
    monkeypatch.setattr(microvm, "version", start)
    yield started
    assert not started


def _run(capsys, tmp_path, *argv):
    kernel = tmp_path / "clockbench-pvh.elf"
    kernel.write_bytes(b"elf")
    return run_cli(capsys, *run_argv(tmp_path / "runs", "--kernel", kernel), *argv)


def _refused(r, *words):
    assert r.code == errors.USAGE, (r.code, r.out, r.err)
    lines = err_lines(r)
    assert len(lines) == 1 and lines[0].startswith("clockbench run: "), r.err
    for w in words:
        assert w in lines[0], (w, lines[0])


def _bad_cases(tmp_path: Path) -> list[tuple[list[str], list[str]]]:
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    ch = _script(tmp_path, "cloud-hypervisor", "exit 0\n")
    fc = _script(tmp_path, "firecracker", "exit 0\n")
    return [
        (["--vmm", "xen"], ["--vmm xen", "qemu, cloud-hypervisor or firecracker"]),
        (["--vmm", "firecracker", "--vmm-binary", str(tmp_path / "none")], ["--vmm-binary", "none: no such file"]),
        (["--vmm", "cloud-hypervisor", "--vmm-binary", str(plain)], ["--vmm-binary", "not an executable file"]),
        (["--vmm", "firecracker", "--vmm-binary", str(tmp_path)], ["--vmm-binary", "not an executable file"]),
        (["--vmm", "qemu", "--vmm-binary", str(tmp_path / "none")], ["--vmm-binary", "no such file"]),
        (["--vmm", "cloud-hypervisor", "--vmm-binary", str(ch), "--boot", "iso"], ["--boot iso", "boots only the PVH kernel"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--boot", "direct"], ["--boot direct", "boots only the PVH kernel"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--firmware", "uefi"], ["--firmware uefi", "is QEMU's"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--firmware", "qboot"], ["--firmware qboot", "is QEMU's"]),
        (["--vmm", "cloud-hypervisor", "--vmm-binary", str(ch), "--machine", "microvm"], ["--machine microvm", "is QEMU's"]),
        (["--vmm", "cloud-hypervisor", "--vmm-binary", str(ch), "--accel", "tcg"], ["--accel tcg", "under KVM"]),
        (["--vmm", "cloud-hypervisor", "--vmm-binary", str(ch), "--cpu", "max"], ["--cpu max", "is QEMU's"]),
        (["--vmm", "cloud-hypervisor", "--vmm-binary", str(ch), "--qemu-arg=-S"], ["--qemu-arg -S", "is QEMU's"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--display"], ["--display", "is QEMU's"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--smp", "33"], ["--smp 33", "from 1 to 32 vCPUs"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--memory", "100.5M"], ["--memory 100.5M", "whole MiB"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--smp", "0"], ["--smp 0", "from 1 to"]),
        (["--vmm", "firecracker", "--vmm-binary", str(fc), "--migrate-at", "5"], ["--migrate-at 5", "is QEMU's"]),
    ]


def test_bad_vmm_options_are_one_line_exit_64_and_leave_nothing(capsys, tmp_path, nothing_starts):
    for argv, words in _bad_cases(tmp_path):
        _refused(_run(capsys, tmp_path, *argv), *words)
        assert not (tmp_path / "runs").exists(), (argv, "nothing is kept for a command line that was refused")


def test_a_monitor_not_on_path_is_refused(capsys, tmp_path, nothing_starts, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for vmm in microvm.VMM_NAMES:
        _refused(_run(capsys, tmp_path, "--vmm", vmm), f"--vmm {vmm}", f"{vmm} is not on PATH", "--vmm-binary")
    assert not (tmp_path / "runs").exists()


def test_the_default_monitor_is_the_one_on_path(capsys, tmp_path, monitor, usable_kvm, monkeypatch):
    binary = monitor(LOG, "exit 0", name="firecracker")
    monkeypatch.setenv("PATH", f"{binary.parent}:{os.environ['PATH']}")
    r = _run(capsys, tmp_path, "--vmm", "firecracker")
    assert r.code == 0, r.err
    [meta] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/metadata.json")]
    assert meta["vmm"]["binary"] == str(binary.resolve()) and meta["vmm"]["version"] == "firecracker v0-test"


# --- the command lines -------------------------------------------------------

def test_cloud_hypervisor_command_line(tmp_path):
    cfg = microvm.VmmConfig(vmm="cloud-hypervisor", kernel=Path("k.elf"), smp=2, memory_mib=300, append="only=drift")
    cmd, conf = cloud_hypervisor.command(cfg, "/bin/ch", tmp_path)
    assert conf is None and cmd == ["/bin/ch", "--kernel", "k.elf", "--cmdline", "only=drift", "--cpus", "boot=2",
                                    "--memory", "size=300M", "--serial", "tty", "--console", "off", "-v"]
    cfg.api_socket = tmp_path / "api.sock"
    assert cloud_hypervisor.command(cfg, "/bin/ch", tmp_path)[0][-2:] == ["--api-socket", f"path={tmp_path / 'api.sock'}"]


def test_firecracker_config_file_and_api_socket(tmp_path):
    cfg = microvm.VmmConfig(vmm="firecracker", kernel=tmp_path / "k.elf", smp=3, memory_mib=128, append="screen=none")
    cmd, conf = firecracker.command(cfg, "/bin/fc", tmp_path)
    written = json.loads((tmp_path / firecracker.CONFIG).read_text())
    assert written == conf == {"boot-source": {"kernel_image_path": str(tmp_path / "k.elf"), "boot_args": "screen=none"},
                               "drives": [], "machine-config": {"vcpu_count": 3, "mem_size_mib": 128}}
    assert cmd[:2] == ["/bin/fc", "--config-file"] and cmd[-1] == "--no-api"
    assert cmd[cmd.index("--log-path") + 1] == "/dev/stderr", "its log is kept apart from the serial port"
    cfg.api_socket = tmp_path / "fc.sock"
    cmd, _ = firecracker.command(cfg, "/bin/fc", tmp_path)
    assert "--no-api" not in cmd and cmd[cmd.index("--api-sock") + 1] == str(tmp_path / "fc.sock")


# --- what a monitor's output and end make of the run ---------------------------

def _vm(binary: Path, **kw) -> microvm.VmmConfig:
    return microvm.VmmConfig(vmm="cloud-hypervisor", binary=binary, kernel=Path("k.elf"), **kw)


def test_a_monitor_that_powers_off_gives_the_summarys_status(tmp_path, monitor):
    r = microvm.run(_vm(monitor(LOG, "exit 0")), timeout=30)
    assert (r.status, r.status_source, r.vmm_exit, r.powered_off, r.notes) == (0, "summary", 0, True, [])
    assert r.exit_code == 0 and r.output == LOG and "a log line of its own" in r.stderr
    assert "a log line of its own" not in r.output, "the monitor's own lines stay out of the serial log"
    assert r.describe() == "passed (from the log's summary; cloud-hypervisor exited 0)"


def test_a_failed_summary_is_exit_1(tmp_path, monitor):
    failed = LOG.replace('"fail":0,"skip":6,"status":"passed"', '"fail":1,"skip":6,"status":"failed"')
    failed = failed.replace("run ended: passed (status 0)", "run ended: failed (status 1)")
    r = microvm.run(_vm(monitor(failed, "exit 0")), timeout=30)
    assert (r.status, r.exit_code) == (1, 1)


def test_a_monitor_that_does_not_power_off_is_stopped_after_the_grace(tmp_path, monitor):
    r = microvm.run(_vm(monitor(LOG, "exec sleep 60"), grace_s=0.5), timeout=30)
    assert r.seconds < 10, "stopped soon after the grace period, not at the time bound"
    assert (r.status, r.exit_code, r.vmm_exit, r.powered_off, r.timed_out) == (0, 0, None, False, False)
    [note] = r.notes
    assert "did not power off within 0.5 s of the image's last line" in note and "status stands" in note


def test_the_summary_screen_is_waited_for_but_not_for_ever(tmp_path, monitor):
    """Between the summary and its last line the image draws its summary
    screen (5 s on Firecracker here): the short grace does not cut it, but a
    monitor quiet for summary_quiet_s after a summary is stopped too."""
    no_last_line = LOG[:LOG.index("clockbench: run ended:")]
    r = microvm.run(_vm(monitor(no_last_line, f"sleep 1.5; printf '{RUN_ENDED_LINE}'; exec sleep 60"),
                        grace_s=0.5, summary_quiet_s=20), timeout=30)
    assert r.status == 0 and r.output.endswith(RUN_ENDED_LINE), "the last line, 1.5 s after the summary, is in the log"
    assert 2 < r.seconds < 10 and "within 0.5 s of the image's last line" in r.notes[0]
    r = microvm.run(_vm(monitor(no_last_line, "exec sleep 60"), grace_s=0.5, summary_quiet_s=1), timeout=30)
    assert r.status == 0 and r.seconds < 10 and "printed nothing for 1 s after its summary" in r.notes[0]


def test_a_restart_after_the_summary_is_stopped_and_cut(tmp_path, monitor):
    second = LOG[:LOG.index("Memory:")]  # the banner and the first records of a second run
    r = microvm.run(_vm(monitor(LOG + second, "exec sleep 60"), grace_s=20), timeout=30)
    assert r.seconds < 10, "stopped at the second banner, not after the grace period"
    assert r.status == 0 and r.exit_code == 0 and r.output.count('"type":"schema"') == 1
    assert r.output.rstrip().endswith("it is safe to power off.")
    [note] = r.notes
    assert "started the image again" in note and f"{len(second.lstrip())} characters" in note


def test_a_monitor_that_dies_mid_run_keeps_the_partial_log(tmp_path, monitor):
    half = FIRST_RUN[:len(FIRST_RUN) // 2]
    r = microvm.run(_vm(monitor(half, "exit 3")), timeout=30)
    assert (r.status, r.exit_code, r.vmm_exit, r.output) == (None, qemu.EXIT_NO_VERDICT, 3, half)
    assert r.describe() == "no verdict: cloud-hypervisor exited 3 before the image reported"
    r = microvm.run(_vm(monitor(half, "kill -9 $$")), timeout=30)
    assert r.exit_code == qemu.EXIT_NO_VERDICT and "killed by SIGKILL" in r.describe() and r.output == half


def test_a_crash_without_summary_takes_the_images_last_line(tmp_path, monitor):
    crashed = FIRST_RUN[:len(FIRST_RUN) // 2] + "\nclockbench: run ended: crashed (status 3). Halted; it is safe to power off.\n"
    r = microvm.run(_vm(monitor(crashed, "exit 0")), timeout=30)
    assert (r.status, r.status_source, r.exit_code) == (3, "run ended", 3)


def test_the_time_bound_and_the_stop_event(tmp_path, monitor):
    import threading

    r = microvm.run(_vm(monitor(FIRST_RUN[:500], "exec sleep 60")), timeout=1)
    assert r.timed_out and r.exit_code == qemu.EXIT_TIMEOUT and r.output == FIRST_RUN[:500]
    stop = threading.Event()
    stop.set()
    r = microvm.run(_vm(monitor(FIRST_RUN[:500], "exec sleep 60")), timeout=30, stop=stop)
    assert r.interrupted and r.exit_code == qemu.EXIT_INTERRUPTED


def test_clockbench_run_keeps_the_monitors_log_apart_and_says_what_happened(capsys, tmp_path, monitor, usable_kvm, monkeypatch):
    monkeypatch.setattr(microvm, "POWEROFF_GRACE_S", 0.5)
    binary = monitor(LOG, "exec sleep 60")
    r = _run(capsys, tmp_path, "--vmm", "cloud-hypervisor", "--vmm-binary", binary, "--append", "only=drift")
    assert r.code == 0, r.err
    [run_dir] = list((tmp_path / "runs").glob("*/"))
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["vmm"]["name"] == "cloud-hypervisor" and meta["vmm"]["version"] == "cloud-hypervisor v0-test"
    assert meta["vmm"]["binary"] == str(binary.resolve()) and meta["vmm"]["command"][0] == str(binary)
    assert meta["vmm"]["smp"] == 1 and meta["vmm"]["memory"] == "256M" and "qemu" not in meta
    assert (meta["verdict"], meta["exit"], meta["status_source"], meta["vmm_exit"]) == ("passed", 0, "summary", None)
    assert meta["cmdline"] == "only=drift" and meta["summary"]["status"] == "passed"
    assert (run_dir / "run.log").read_text() == LOG
    assert (run_dir / run_machine.VMM_STDERR).read_text() == "cloud-hypervisor: a log line of its own\n"
    assert "did not power off within 0.5 s" in r.out and "did not power off" in meta["notes"][0]


def test_kept_microvm_runs_are_listed_and_reported_by_their_monitor(capsys, tmp_path, monitor, usable_kvm):
    from clockbench.report import report

    binary = monitor(LOG, "exit 0", name="firecracker")
    assert _run(capsys, tmp_path, "--vmm", "firecracker", "--vmm-binary", binary, "--smp", "2").code == 0
    r = run_cli(capsys, "runs", "--dir", tmp_path / "runs")
    assert r.code == 0 and "firecracker smp2" in r.out, r.out
    [meta] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/metadata.json")]
    assert ("monitor", f"firecracker v0-test, {binary.resolve()}, smp 2, memory 256M") in report.meta_rows(meta)
    assert json.loads((Path(meta["log"]).parent / firecracker.CONFIG).read_text())["machine-config"]["vcpu_count"] == 2


def test_vmm_binary_picks_qemus_program_too(capsys, tmp_path, monkeypatch):
    from clockbench.runs import runs

    binary = _script(tmp_path, "my-qemu", "exit 0\n")
    seen = []

    def fake(cfg, timeout, echo=None, stop=None):
        seen.append(qemu.build_command(cfg, "tcg"))
        return qemu.RunResult(command=seen[-1], accel="tcg", qemu_exit=33, status=0, output="", stderr="", seconds=0.1,
                              timed_out=False, timeout_s=timeout)

    monkeypatch.setattr(qemu, "run", fake)
    monkeypatch.setattr(runs, "qemu_version", lambda binary="": f"{binary} 7.2 (a test's)")
    r = _run(capsys, tmp_path, "--vmm", "qemu", "--vmm-binary", binary, "--boot", "direct", "--accel", "tcg")
    assert r.code == 0, r.err
    assert seen[0][0] == str(binary)
    [meta] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/metadata.json")]
    assert meta["vmm"] == {"name": "qemu", "version": f"{binary} 7.2 (a test's)", "binary": str(binary.resolve())}
    assert meta["qemu"]["command"][0] == str(binary)


# --- make run ----------------------------------------------------------------

def _make_run(run_args: str, vmm_dir: Path) -> str:
    import subprocess

    root = ROOT
    out = subprocess.run(["make", "-n", "-C", str(root), "run", f"RUN_ARGS={run_args}", f"VMM_DIR={vmm_dir}"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    [line] = [l for l in out.splitlines() if " run --iso " in l]
    return line


def test_make_run_passes_one_boot_option_and_builds_the_pvh_kernel(tmp_path):
    line = _make_run("--boot pvh", tmp_path / "none")
    assert line.endswith("clockbench run --iso build/clockbench.iso --boot pvh") and line.count("--boot") == 1, line
    assert "PATH=" not in line, "without VMM_DIR, make run leaves PATH alone"
    root = ROOT
    [rule] = [l for l in (root / "Makefile").read_text().splitlines() if l.startswith("run:")]
    assert "$(PVH_KERNEL)" in rule and "$(ISO)" in rule, rule


def test_make_run_finds_the_monitors_in_vmm_dir(tmp_path):
    _script(tmp_path, "firecracker", "exit 0\n")
    line = _make_run("--vmm firecracker", tmp_path)
    assert line.startswith(f'PATH="$PATH:{tmp_path}" ') and line.endswith("--vmm firecracker") and "--boot" not in line, line


def test_a_monitor_that_fails_before_the_image_is_exit_71_with_its_error(capsys, tmp_path, usable_kvm):
    binary = _script(tmp_path, "firecracker", '[ "$1" = --version ] && { echo "Firecracker v0-test"; exit 0; }\n'
                     'echo "[main] Running Firecracker" >&2\necho "[main] RunWithoutApiError error: bad kernel" >&2\n'
                     'echo "[main] Firecracker exiting with error. exit_code=1" >&2\nexit 1\n')
    r = _run(capsys, tmp_path, "--vmm", "firecracker", "--vmm-binary", binary)
    assert r.code == errors.QEMU_FAILED, (r.code, r.err)
    assert r.err.strip().endswith("firecracker exited 1 before the image started: [main] RunWithoutApiError error: bad kernel")
    [meta] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/metadata.json")]
    assert meta["verdict"] == "firecracker failed" and meta["exit"] == errors.QEMU_FAILED
