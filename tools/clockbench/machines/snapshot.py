"""Snapshot and restore, measured: `clockbench run --vmm firecracker|
cloud-hypervisor --snapshot-at SECONDS` pauses the microVM that many
seconds after the serial port's first line, writes a full snapshot into the
run's folder, kills the monitor, and after the gap starts a new one that
restores the snapshot and resumes it. The restored monitor continues the
same serial port on its standard output, so the run has one log, and its
status comes from the summary as microvm.run's does.

Firecracker (docs/snapshotting/snapshot-support.md and
src/firecracker/swagger/firecracker.yaml at v1.16): `PATCH /vm {"state":
"Paused"}`, `PUT /snapshot/create {"snapshot_type": "Full",
"snapshot_path", "mem_file_path"}`; a new firecracker with `--api-sock` and
no configuration, `PUT /snapshot/load {"snapshot_path", "mem_backend":
{"backend_type": "File", "backend_path"}, "resume_vm": false}`, then `PATCH
/vm {"state": "Resumed"}`. The resume is a call of its own (not
`resume_vm: true`) so that its round trip, which brackets the instant the
vCPUs run again, holds no loading of the guest's memory.

Cloud Hypervisor (docs/snapshot_restore.md, vmm/src/api/openapi at v53):
`vm.pause`, `vm.snapshot {"destination_url": "file://DIR"}`; a new
cloud-hypervisor with `--api-socket path=...` and `--restore
source_url=file://DIR`, which restores the VM paused, then `vm.resume`.

Known answer: how long the VM stood still as the host saw it. The VM stops
somewhere within the pause call's round trip and runs again somewhere within
the resume call's (each host wall-clock time taken just before the request
and just after its answer), so the stop is the resume call's middle less the
pause call's, within half of each round trip."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from clockbench.machines import cloud_hypervisor, firecracker, microvm, vmrun

SNAPSHOT_GAP_DEFAULT_S = 3.0
SNAPSHOT_BOUND_S = 120.0  # writing or reading the snapshot, starting the new monitor
API_BOUND_S = 30.0  # each API call (a snapshot of 256 MiB takes about 1 s here)
STATE_FILES = ("vmstate", "mem")  # Firecracker's; Cloud Hypervisor writes a folder of its own


@dataclass
class Snapshot:
    """When and how long: at_s seconds after the serial port's first line
    (the run's origin as the host saw it arrive), a stop of at least gap_s
    seconds from the pause's answer to the new monitor's start."""

    at_s: float
    gap_s: float = SNAPSHOT_GAP_DEFAULT_S
    state_dir: Path | None = None  # where the snapshot is written (default: a temporary folder); removed after
    after: str | None = None  # a phase's name: at_s counts from its first progress record, not the first line


@dataclass
class SnapshotResult:
    """What a Snapshot did. *_wall: host wall-clock seconds (Unix time),
    taken just before a request and just after its answer."""

    snapshot: Snapshot
    vmm: str = ""
    first_command: list[str] | None = None  # the first monitor's, with its API socket
    origin_s: float | None = None  # the first serial line, host monotonic seconds after the first monitor started
    pause_sent_wall: float | None = None
    pause_reply_wall: float | None = None
    snapshot_s: float | None = None  # how long the snapshot call took
    snapshot_bytes: int | None = None  # the snapshot's files, all told
    first_exit: int | None = None  # the first monitor's, killed once the snapshot was written
    restore_command: list[str] | None = None
    restore_s: float | None = None  # from the new monitor's start to its restored VM (paused)
    resume_sent_wall: float | None = None
    resume_reply_wall: float | None = None
    first_resumed: bool = False  # the snapshot failed: the first monitor's VM was resumed after the gap, unsnapshotted
    error: str | None = None

    @property
    def done(self) -> bool:
        return None not in (self.pause_sent_wall, self.pause_reply_wall, self.resume_sent_wall, self.resume_reply_wall)

    @property
    def stopped_s(self) -> float | None:
        """The resume call's middle less the pause call's."""
        if not self.done:
            return None
        return (self.resume_sent_wall + self.resume_reply_wall) / 2 - (self.pause_sent_wall + self.pause_reply_wall) / 2

    @property
    def stopped_uncertainty_s(self) -> float | None:
        """A bound: half of each call's round trip."""
        if not self.done:
            return None
        return ((self.pause_reply_wall - self.pause_sent_wall) + (self.resume_reply_wall - self.resume_sent_wall)) / 2

    def describe(self) -> str:
        s = self.snapshot
        what = vmrun.stop_heading("snapshot", s.at_s, s.gap_s, s.after)
        if self.done and self.first_resumed:
            text = (f"{what}: the snapshot failed; the VM stood still {self.stopped_s:.6f} s (+- "
                    f"{self.stopped_uncertainty_s:.6f}) paused in the same monitor, by the API's pause to resume")
        elif self.done:
            text = (f"{what}: the VM stood still {self.stopped_s:.6f} s (+- {self.stopped_uncertainty_s:.6f}) by the API's "
                    f"pause to resume; snapshot {self.snapshot_bytes} bytes")
        else:
            text = f"{what}: not done"
        return text + (f"; {self.error}" if self.error else "")

    def to_json(self) -> dict:
        return vmrun.stop_json(self, "snapshot")


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _call(what: str, fn, *args) -> tuple[float, float]:
    """One API call that must answer 2xx: its host wall-clock times before and after."""
    sent = time.time()
    status, body = fn(*args)
    reply = time.time()
    if not 200 <= status < 300:
        # Cloud Hypervisor answers a list of errors, the last with a backtrace
        text = ": ".join(map(str, body)) if isinstance(body, list) else str(body)
        raise RuntimeError(f"{what}: HTTP {status}: {text.split(chr(10))[0].strip()}")
    return sent, reply


class _Firecracker:
    """Firecracker's calls (firecracker.api)."""

    def __init__(self, state: Path):
        self.state, self.mem = state / "vmstate", state / "mem"

    def pause(self, sock):
        return _call("PATCH /vm Paused", lambda: firecracker.api(sock, "PATCH", "/vm", {"state": "Paused"}))

    def save(self, sock):
        return _call("PUT /snapshot/create", lambda: firecracker.api(
            sock, "PUT", "/snapshot/create", {"snapshot_type": "Full", "snapshot_path": str(self.state),
                                              "mem_file_path": str(self.mem)}, bound_s=API_BOUND_S))

    def restore_command(self, binary: str, sock: Path) -> list[str]:
        return [binary, "--api-sock", str(sock), "--log-path", "/dev/stderr"]

    def restored(self, sock):
        return _call("PUT /snapshot/load", lambda: firecracker.api(
            sock, "PUT", "/snapshot/load", {"snapshot_path": str(self.state),
                                            "mem_backend": {"backend_type": "File", "backend_path": str(self.mem)},
                                            "resume_vm": False}, bound_s=API_BOUND_S))

    def resume(self, sock):
        return _call("PATCH /vm Resumed", lambda: firecracker.api(sock, "PATCH", "/vm", {"state": "Resumed"}))

    def files(self) -> list[Path]:
        return [self.state, self.mem]


class _CloudHypervisor:
    """Cloud Hypervisor's calls (cloud_hypervisor.api)."""

    def __init__(self, state: Path):
        self.dir = state / "snapshot"

    def pause(self, sock):
        return _call("vm.pause", lambda: cloud_hypervisor.api(sock, "vm.pause"))

    def save(self, sock):
        self.dir.mkdir(parents=True, exist_ok=True)
        return _call("vm.snapshot", lambda: cloud_hypervisor.api(sock, "vm.snapshot",
                                                                  {"destination_url": f"file://{self.dir}"},
                                                                  bound_s=API_BOUND_S))

    def restore_command(self, binary: str, sock: Path) -> list[str]:
        return [binary, "--api-socket", f"path={sock}", "--restore", f"source_url=file://{self.dir}"]

    def restored(self, sock):
        # --restore returns the VM paused once the API answers: wait for it
        deadline = time.monotonic() + SNAPSHOT_BOUND_S
        while True:
            sent = time.time()
            try:
                status, body = cloud_hypervisor.api(sock, "vm.info")
            except RuntimeError:
                status, body = 0, None
            if status == 200 and isinstance(body, dict) and body.get("state") == "Paused":
                return sent, time.time()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the restored VM was not paused within {SNAPSHOT_BOUND_S:g} s: {status} {body}")
            time.sleep(0.02)

    def resume(self, sock):
        return _call("vm.resume", lambda: cloud_hypervisor.api(sock, "vm.resume"))

    def files(self) -> list[Path]:
        return [self.dir]


def run_snapshotted(cfg: microvm.VmmConfig, snap: Snapshot, timeout: float, echo=None,
                    stop: threading.Event | None = None, echo_err=None) -> tuple[microvm.VmmResult, SnapshotResult]:
    """Boots once under cfg.vmm, and snapshots and restores the VM as
    `snap` says. `timeout` grows by the gap and the bounds on the snapshot's
    two halves. As microvm.run: echo gets the serial output (both
    monitors'), echo_err their own log lines, `stop` ends it. The snapshot's
    files are removed after, whatever happened."""
    sock_dir = Path(tempfile.mkdtemp(prefix="clockbench-snap-"))  # short paths: a unix socket's is at most 107 bytes
    state = Path(snap.state_dir) if snap.state_dir is not None else sock_dir
    calls = _Firecracker(state) if cfg.vmm == "firecracker" else _CloudHypervisor(state)
    workdir = cfg.workdir or sock_dir
    try:
        return _run(dataclasses.replace(cfg, api_socket=sock_dir / "first.sock", workdir=workdir), snap, calls,
                    sock_dir, timeout, echo, stop, echo_err)
    finally:
        for f in calls.files():
            shutil.rmtree(f, ignore_errors=True) if f.is_dir() else f.unlink(missing_ok=True)
        shutil.rmtree(sock_dir, ignore_errors=True)


def _run(cfg, snap, calls, sock_dir, timeout, echo, stop, echo_err):
    cmd, config = microvm.command(cfg, cfg.workdir)
    bound = timeout + snap.gap_s + 2 * SNAPSHOT_BOUND_S
    result = SnapshotResult(snap, vmm=cfg.vmm, first_command=cmd)
    watch = microvm.Watch()
    origin = vmrun.Origin(snap.after)
    first_line = origin.event  # the origin arrived: the first line, or the phase named
    ending = threading.Event()

    def feed(chunk: bytes) -> None:
        watch.feed(chunk)
        if origin.feed(chunk):
            result.origin_s = time.monotonic() - start

    # both monitors' serial output goes into the one log
    session = vmrun.Session(echo=echo, echo_err=echo_err, watch_out=feed)
    procs = session.procs
    launch = session.launch
    start = session.start

    def wait_until(t: float) -> bool:
        """Sleeps to monotonic t; False when the run ended first."""
        while time.monotonic() < t:
            if ending.is_set() or procs[-1].poll() is not None:
                return False
            time.sleep(min(0.005, max(0.0, t - time.monotonic())))
        return True

    def work() -> None:
        r = result
        try:
            while not first_line.wait(0.05):
                if ending.is_set() or procs[0].poll() is not None:
                    r.error = ("the run ended before the serial port said anything" if snap.after is None
                               else f"the run ended before its {snap.after} phase began")
                    return
            if not wait_until(start + r.origin_s + snap.at_s):
                r.error = "the run ended before the snapshot's time"
                return
            first_sock = cfg.api_socket
            r.pause_sent_wall, r.pause_reply_wall = calls.pause(first_sock)
            t0 = time.monotonic()
            try:
                calls.save(first_sock)
            except RuntimeError as e:
                # the run goes on where it was, unsnapshotted, and says
                # why; the VM stays paused for the gap, and the pause is
                # still a stop of known length
                r.error = f"{e}"
                left = r.pause_reply_wall + snap.gap_s - time.time()
                if left > 0:
                    ending.wait(left)
                r.resume_sent_wall, r.resume_reply_wall = calls.resume(first_sock)
                r.first_resumed = True
                return
            r.snapshot_s = time.monotonic() - t0
            r.snapshot_bytes = sum(_size(f) for f in calls.files() if f.exists())
            first = procs[0]
            first.kill()
            r.first_exit = first.wait()
            left = r.pause_reply_wall + snap.gap_s - time.time()
            if left > 0 and ending.wait(left):
                r.error = "the run ended during the gap"
                return
            sock = sock_dir / "restored.sock"
            r.restore_command = calls.restore_command(str(cmd[0]), sock)
            t1 = time.monotonic()
            launch(r.restore_command)
            calls.restored(sock)
            r.restore_s = time.monotonic() - t1
            r.resume_sent_wall, r.resume_reply_wall = calls.resume(sock)
        except Exception as e:  # noqa: BLE001 - recorded; the run is ended below
            r.error = r.error or f"{type(e).__name__}: {e}"

    launch(cmd)
    worker = threading.Thread(target=work, name="clockbench-snapshot", daemon=True)
    worker.start()

    def over() -> bool:
        exited = procs[-1].poll() is not None
        if exited and (len(procs) == 2 or not worker.is_alive()):
            return True  # the restored monitor ended, or the first before any snapshot
        # the VM still runs in the first monitor when the pause failed, or
        # when a failed snapshot resumed it there: the run goes on
        running_first = (result.first_resumed or result.pause_reply_wall is None) and len(procs) == 1 and not exited
        # the snapshot failed and the VM is not running: what was printed is kept, the status says so
        return not worker.is_alive() and bool(result.error) and not result.done and not running_first

    def end_reason() -> str | None:
        if not (len(procs) == 2 or not worker.is_alive()):
            return None  # the snapshot is under way: the first monitor's quiet is the pause's
        return watch.end_reason(cfg.grace_s, cfg.summary_quiet_s)

    def stop_worker(_why: str) -> None:
        ending.set()
        worker.join(timeout=API_BOUND_S + 5)

    timed_out, interrupted, ended_by = session.wait(bound, stop=stop, over=over, end_reason=end_reason,
                                                    ending=stop_worker)
    output, stderr = session.finish()
    killed = session.killed
    status, source, end = microvm.verdict_of(output)
    final = procs[-1]
    stopped = timed_out or interrupted or ended_by is not None or final in killed
    code = None if stopped else final.returncode
    notes = []
    if result.error:
        notes.append(f"the snapshot went wrong: {result.error}" + ("; the VM was resumed in the same monitor after the gap "
                     "and the run went on unsnapshotted" if result.first_resumed else ""))
    if end < len(output.replace("\r", "")):
        output = output.replace("\r", "")[:end]
        notes.append(f"{cfg.vmm} started the image again after its verdict (a second banner); it was stopped, the first "
                     "run's status stands")
    elif ended_by == "no power-off":
        notes.append(f"{cfg.vmm} did not power off within {cfg.grace_s:g} s of the image's last line; it was stopped, "
                     "and the summary's status stands")
    elif ended_by == "quiet after the summary":
        notes.append(f"the image printed nothing for {cfg.summary_quiet_s:g} s after its summary, and {cfg.vmm} did not "
                     "power off; it was stopped, and the summary's status stands")
    got = microvm.VmmResult(vmm=cfg.vmm, command=cmd, vmm_exit=code, status=status, output=output,
                            stderr=stderr, seconds=session.seconds,
                            timed_out=timed_out, timeout_s=bound, pid=procs[0].pid, interrupted=interrupted,
                            status_source=source, powered_off=code is not None and status is not None, notes=notes,
                            config=config)
    return got, result


def restore_account(snap: dict, recs: list[dict]) -> dict | None:
    """After a real restore (not a pause in the same monitor): the late
    start and each clock judged against it (vmrun.late_start_account); None
    when there was no restore, no API stop or no stop the image sized."""
    if not snap.get("restore_command") or snap.get("first_resumed") or snap.get("stopped_s") is None:
        return None
    return vmrun.late_start_account(snap["stopped_s"], snap["stopped_uncertainty_s"], recs, "restored",
                                    "the new vCPU's start with its memory faulted in from the snapshot")


def resume_account(snap: dict, recs: list[dict]) -> dict | None:
    """After a pause resumed in the same monitor (the snapshot failed, as
    Cloud Hypervisor's does on this machine's KVM): sized as a restore is,
    the TSC's advance across the drift loop's gap less the API's stop. No
    memory comes back from a file here, so the late start is the loop's
    last read to the pause and the paused vCPU's thread entering the guest
    again after the resume call's answer. The clocks that run with the host
    through a pause (the RTC, the PM timer, kvmclock) are judged against
    the TSC's advance. None when there was no such pause, no API stop or no
    stop the image sized."""
    if not snap.get("first_resumed") or snap.get("stopped_s") is None:
        return None
    return vmrun.late_start_account(snap["stopped_s"], snap["stopped_uncertainty_s"], recs, "resumed in the same monitor",
                                    "the paused vCPU entering the guest again after the resume call")
