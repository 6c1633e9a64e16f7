"""One way to start, stop and capture a virtual machine monitor's process,
for QEMU (qemu.py) and the microVM monitors (microvm.py) alike, a
migration's two QEMUs and a snapshot's two monitors included (Session): the serial
port on its standard output, echoed as it arrives; its own messages on
standard error, kept apart; a time bound; a stop event (Ctrl-C); and a
hook that may end it early for a reason of the caller's (QEMU's "KVM
internal error", a microVM that printed its summary and did not power off).
The monitor runs in a session of its own, so a Ctrl-C on the terminal
reaches only the caller. api_request talks to a monitor's HTTP API on its
unix socket (Cloud Hypervisor's and Firecracker's)."""

from __future__ import annotations

import dataclasses
import http.client
import json
import re
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from clockbench import errors
from clockbench.records import records

# The runner's exit codes beyond the image's 0-3 (docs/output.md, "How a run ends").
EXIT_NO_VERDICT = 4  # the machine ended without the image reporting (reset, shutdown, a monitor's error)
EXIT_TIMEOUT = 5  # the run took longer than its bound and was stopped
POLL_S = 0.1  # how often the time bound, the stop event and the caller's hook are looked at
# How long the readers may take to drain the pipes once the process has
# ended: EOF comes as soon as they have read what it wrote, unless a child
# of it holds them open. A reader starved of the CPU (a loaded host, a
# low-priority test lane) once needed more than 5 s, and the log lost its end.
READER_JOIN_S = 60.0


@dataclass
class Captured:
    output: str  # standard output (the serial port), "\r\n" made "\n"
    stderr: str
    seconds: float
    returncode: int | None  # None when the process was stopped here (time bound, stop event, the caller's hook)
    timed_out: bool = False
    interrupted: bool = False
    ended_by: str | None = None  # the caller's reason, when its hook ended the process
    pid: int | None = None


class Ending:
    """How a run ended, for qemu.RunResult and microvm.VmmResult alike (a
    dataclass with output, status, timed_out, interrupted, emulation_failed
    and a machine_exit: the monitor's exit status, None when stopped here)."""

    @property
    def never_started(self) -> bool:
        """The monitor ended with an error of its own before the serial port
        said anything: bad options, no memory for the guest, no firmware."""
        return (not self.output.strip() and not self.timed_out and not self.interrupted and self.status is None
                and not self.emulation_failed and self.machine_exit not in (None, 0))

    @property
    def exit_code(self) -> int:
        """The runner's exit code: the image's status, or EXIT_NO_VERDICT/EXIT_TIMEOUT/errors.INTERRUPTED."""
        if self.interrupted:
            return errors.INTERRUPTED
        if self.timed_out:
            return EXIT_TIMEOUT
        return self.status if self.status is not None else EXIT_NO_VERDICT


def pump(stream, sink: list[bytes], live: Callable[[str], None] | None, watch: Callable[[bytes], None] | None) -> None:
    """Reads a process's stream to its end: each chunk kept in sink, given
    to watch (bytes) and live (text) as it arrives."""
    for chunk in iter(lambda: stream.read1(4096), b""):
        sink.append(chunk)
        if watch:
            watch(chunk)
        if live:
            live(chunk.decode("utf-8", "replace"))


F_SETPIPE_SZ = 1031  # fcntl.h (Linux)
PIPE_BYTES = 1 << 20  # a whole run's serial output (up to about 200 KB), and the unprivileged limit's default


def widen_pipe(stream) -> None:
    """The machine's output pipe made large enough to hold a whole run's
    output: a monitor whose write to a full pipe waits (QEMU's UART retries,
    then drops the byte) loses what it still holds when the guest ends the
    machine at once (isa-debug-exit). A reader starved of the CPU (a loaded
    host, a low-priority test lane) once let the pipe fill and a log lose
    its end. Where the kernel refuses the size, the default stays."""
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, ValueError):
        pass


class Session:
    """One run of a machine, through one process or several in turn: a
    migration's destination QEMU, or a snapshot's restored monitor, takes
    over from the first. Every process it launches is pumped into the one
    log (standard output) and the one stream of the monitor's own messages
    (standard error), and wait() is the one poll loop every run goes
    through: one time bound, one stop event, the caller's reasons to end
    early, and every process still running killed at the end."""

    def __init__(self, *, echo: Callable[[str], None] | None = None, echo_err: Callable[[str], None] | None = None,
                 watch_out: Callable[[bytes], None] | None = None, watch_err: Callable[[bytes], None] | None = None):
        self.echo, self.echo_err, self.watch_out, self.watch_err = echo, echo_err, watch_out, watch_err
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self.procs: list[subprocess.Popen] = []
        self.killed: list[subprocess.Popen] = []
        self._readers: list[threading.Thread] = []
        self.start = time.monotonic()

    def launch(self, cmd: list[str], cwd: str | None = None) -> subprocess.Popen:
        """Starts a monitor's process in a session of its own (a Ctrl-C on the
        terminal reaches only the caller), its output pumped into the run's."""
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, cwd=cwd)
        widen_pipe(proc.stdout)
        for t in (threading.Thread(target=pump, args=(proc.stdout, self.out, self.echo, self.watch_out), daemon=True),
                  threading.Thread(target=pump, args=(proc.stderr, self.err, self.echo_err, self.watch_err), daemon=True)):
            t.start()
            self._readers.append(t)
        self.procs.append(proc)
        return proc

    @property
    def current(self) -> subprocess.Popen:
        """The process the machine runs in now: the last one launched."""
        return self.procs[-1]

    def wait(self, bound: float, *, stop: threading.Event | None = None, over: Callable[[], bool] | None = None,
             end_reason: Callable[[], str | None] | None = None, ending: Callable[[str], None] | None = None,
             begin: Callable[[], None] | None = None) -> tuple[bool, bool, str | None]:
        """Waits, for `bound` seconds from the session's start at most, until
        the run is over: over() says so (by default: the current process
        exited; a caller whose machine hands over to another process says
        when the last has ended), end_reason() gives a reason to end it
        early (kept as ended_by), `stop` is set, or the bound runs out.
        ending(why) is called before the processes are killed (why is "it
        exited" when the run was over by itself), so the caller can undo what
        it did to them (resume a stopped QEMU) or stop its own helper.
        begin() is called first, inside the same guard: what it starts is
        ended with the rest if it raises. Returns (timed_out, interrupted,
        ended_by)."""
        over = over or (lambda: self.current.poll() is not None)
        timed_out = interrupted = False
        ended_by = None
        why = "it exited"
        try:
            if begin:
                begin()
            deadline = self.start + bound
            while True:
                proc = self.current
                try:
                    proc.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
                except subprocess.TimeoutExpired:
                    pass
                if over():
                    break
                if proc.poll() is not None:
                    time.sleep(0.01)  # the process ended, and another is on its way: no busy loop meanwhile
                ended_by = end_reason() if end_reason else None
                if ended_by:
                    why = ended_by
                    break
                if stop is not None and stop.is_set():
                    interrupted, why = True, "the run was interrupted"
                    break
                if time.monotonic() >= deadline:
                    timed_out, why = True, f"the run's time bound ({bound:g} s) ran out"
                    break
        finally:
            try:
                if ending:
                    ending(why)
            finally:
                for p in self.procs:
                    if p.poll() is None:
                        self.killed.append(p)
                        p.kill()
                        p.wait()
        return timed_out, interrupted, ended_by

    def finish(self) -> tuple[str, str]:
        """The run's output and the monitors' messages, once the readers
        have drained the pipes: the output with "\r\n" made "\n"."""
        for t in self._readers:
            t.join(timeout=READER_JOIN_S)
        return (b"".join(self.out).decode("utf-8", "replace").replace("\r\n", "\n"),
                b"".join(self.err).decode("utf-8", "replace"))

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.start


def run(cmd: list[str], bound: float, *, echo: Callable[[str], None] | None = None,
        echo_err: Callable[[str], None] | None = None, stop: threading.Event | None = None,
        watch_out: Callable[[bytes], None] | None = None, watch_err: Callable[[bytes], None] | None = None,
        started: Callable[[subprocess.Popen, float], None] | None = None,
        end_reason: Callable[[], str | None] | None = None,
        ending: Callable[[str], None] | None = None, cwd: str | None = None) -> Captured:
    """Starts cmd and waits for it to exit, for `bound` seconds at most (a
    Session of one process). echo/echo_err get standard output/error as
    text as they arrive, watch_out/watch_err the raw bytes. started(proc,
    start) is called once the process runs (start: time.monotonic() just
    before it started). end_reason() is asked every POLL_S: a string ends
    the process, and is kept as ended_by. ending(why) is called before the
    process is killed (or after it exited: why is then "it exited"), from
    here, so the caller can undo what it did to it (resume a stopped QEMU)."""
    session = Session(echo=echo, echo_err=echo_err, watch_out=watch_out, watch_err=watch_err)
    proc = session.launch(cmd, cwd=cwd)
    timed_out, interrupted, ended_by = session.wait(bound, stop=stop, end_reason=end_reason, ending=ending,
                                                    begin=(lambda: started(proc, session.start)) if started else None)
    output, stderr = session.finish()
    stopped = timed_out or interrupted or ended_by is not None
    return Captured(output=output, stderr=stderr, seconds=session.seconds, returncode=None if stopped else proc.returncode,
                    timed_out=timed_out, interrupted=interrupted, ended_by=ended_by, pid=proc.pid)


API_BOUND_S = 10.0


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def api_request(sock: Path, method: str, path: str, body: dict | None = None,
                bound_s: float = API_BOUND_S) -> tuple[int, dict | str | None]:
    """One request to a monitor's HTTP API on its unix socket (both speak
    HTTP/1.1 there), waiting for the socket to appear for up to bound_s.
    Returns the HTTP status and the answer (JSON decoded when it is JSON)."""
    deadline = time.monotonic() + bound_s
    while not Path(sock).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the API socket {sock} did not appear within {bound_s:g} s")
        time.sleep(0.02)
    conn = _UnixHTTPConnection(Path(sock), timeout=max(0.1, deadline - time.monotonic()))
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"} if data is not None else {"Accept": "application/json"}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as e:
        raise RuntimeError(f"{method} {path} on {sock}: {e}") from None
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw) if raw.strip() else None
    except json.JSONDecodeError:
        return resp.status, raw


# --- A moment in the run's serial output, for --migrate-at / --snapshot-at ---

def origin_pattern(after: str | None) -> re.Pattern:
    """What in the serial output starts the clock of --migrate-at and
    --snapshot-at: the first line, or (after: a phase's name, as
    --migrate-after and --snapshot-after give it) that phase's first
    progress record."""
    if after is None:
        return re.compile(rb"\n")
    return re.compile(rf'"type":"progress","phase":"{re.escape(after)}"'.encode())


def stop_heading(kind: str, at_s: float, gap_s: float, after: str | None) -> str:
    """How a stop from outside (a migration, a snapshot) was asked for, as
    its describe() begins: "migration 4 s after the drift phase began, gap 3 s"."""
    origin = f"the {after} phase began" if after else "the first serial line"
    return f"{kind} {at_s:g} s after {origin}, gap {gap_s:g} s"


def stop_json(result, field: str) -> dict:
    """A stop's result for metadata.json: its own fields, the request's
    at_s, gap_s and after (from result.<field>), and the stop's length and
    its uncertainty."""
    spec = getattr(result, field)
    d = {k: v for k, v in dataclasses.asdict(result).items() if k != field}
    d["at_s"], d["gap_s"], d["after"] = spec.at_s, spec.gap_s, spec.after
    d["stopped_s"], d["stopped_uncertainty_s"] = result.stopped_s, result.stopped_uncertainty_s
    return d


class Origin:
    """Fed the serial output as it comes; set once the origin arrives. The
    last few KiB are kept so that a record split across chunks is found."""

    def __init__(self, after: str | None):
        self.pattern = origin_pattern(after)
        self.seen = b""
        self.event = threading.Event()

    def feed(self, chunk: bytes) -> bool:
        """True the moment the origin arrives (once)."""
        if self.event.is_set():
            return False
        self.seen = (self.seen + chunk)[-4096:]
        if self.pattern.search(self.seen):
            self.event.set()
            return True
        return False



# --- a stop sized as it happened, where the TSC ran on through it (issue 37) ---
#
# The image sizes a stop by the TSC's advance across its drift loop's gap
# where the TSC runs on through it (KVM: Firecracker's snapshot and restore,
# QEMU+KVM's migration). That gap holds more than the stop: the loop's last
# read to the pause, and after the resume call the vCPU's late start: its
# thread entering the guest (after a restore, the guest's memory faulted in
# from the snapshot file page by page), the loop reaching its next read. The
# host's stop (the API's or QMP's) holds none of it. So the TSC's advance
# less the host's stop is the time the machine ran in the gap; kvmclock and
# the local APIC timer, set back to their saved values, advance by that and
# by nothing of the stop. And since the vCPU runs the guest only once it is
# back, the stop as the guest lived it can be longer than the host's by up
# to that late start: the long side of the stop's uncertainty.

def late_start_account(stopped_s: float, stopped_u: float, recs: list[dict], verb: str, late: str) -> dict | None:
    """The late start (the TSC's advance less the host's stop) and each
    clock judged against it, from the run's `stop_clock` records; None when
    the image sized no stop, or the TSC did not run on through it (under
    TCG it stands still with the machine: there is no gap to hold a late
    start). verb ("restored", "resumed") and late (what the late start
    holds after the resume) word the line."""
    clocks = {c["clock"]: c for c in records.of_type(recs, "stop_clock")}
    tsc = clocks.get("tsc")
    if not records.of_type(recs, "stop") or not tsc or tsc.get("advanced_ns") is None or tsc.get("verdict") != "ran_on":
        return None
    tsc_s, tsc_u = tsc["advanced_ns"] / 1e9, tsc["uncertainty_ns"] / 1e9
    late_s, late_u = tsc_s - stopped_s, tsc_u + stopped_u
    judged = {}
    for name, c in clocks.items():
        if name == "tsc" or c.get("advanced_ns") is None:
            continue
        adv, u = c["advanced_ns"] / 1e9, c["uncertainty_ns"] / 1e9
        if abs(adv - late_s) <= u + late_u:
            verdict = "restored"  # stood still through the stop, ran with the machine around it
        elif abs(adv - tsc_s) <= u + tsc_u:
            verdict = "ran_on"  # through the stop, with the TSC
        else:
            verdict = "neither"
        judged[name] = {"verdict": verdict, "advanced_s": adv, "uncertainty_s": u, "image_verdict": c["verdict"]}
    restored = [n for n, j in judged.items() if j["verdict"] == "restored"]
    ran_on = [n for n, j in judged.items() if j["verdict"] == "ran_on"]
    odd = [n for n, j in judged.items() if j["verdict"] == "neither"]
    text = (f"{verb}; ran {late_s * 1e3:.0f} ms (+-{late_u * 1e3:.0f}) before the first read: the TSC advanced that much "
            f"beyond the host's {stopped_s:.3f} s stop (the loop's last read to the pause, and {late}, which may lengthen "
            "the stop as the guest saw it by as much)")
    if restored:
        text += f"; {', '.join(restored)} stood still through the stop and ran with the machine"
    if ran_on:
        text += f"; {', '.join(ran_on)} ran on through it"
    if odd:
        text += f"; {', '.join(odd)} neither: advanced by something else"
    return {"late_start_s": late_s, "late_start_uncertainty_s": late_u,
            # the stop as the guest lived it: the host's, and up to the whole late start more
            "guest_stop_low_s": stopped_s - stopped_u, "guest_stop_high_s": stopped_s + stopped_u + max(0.0, late_s) + late_u,
            "clocks": judged, "described": text}
