"""Runs the image under a microVM monitor, Cloud Hypervisor or Firecracker,
the way qemu.py runs it under QEMU: the PVH kernel, its command line, the
serial port captured through vmrun (the one way every monitor is started,
stopped and captured), the run's status.

Each monitor has a module of its own that knows its command line
(cloud_hypervisor.py, firecracker.py); this one does what they share.

Neither monitor has QEMU's isa-debug-exit, so the status comes from the
serial log: the first `summary` record's status (docs/output.md, "How a run
ends"), or, for a run that crashed and printed none, the image's last line
`clockbench: run ended: <status> (status <n>)`. The image powers the machine
off after its last line; a monitor still running POWEROFF_GRACE_S after
that line (or whose serial port stays quiet for SUMMARY_QUIET_S after a
summary with no last line) is stopped, with a note, and the summary's
status stands. A monitor that starts
the image again after its summary (a second banner) is stopped at once, the
log is cut where the second run began, and the first status stands, with a
note. A monitor that dies before the summary leaves its partial log and
status 4, no verdict, saying how it ended."""

from __future__ import annotations

import codecs
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from clockbench.records import records
from clockbench.machines import vmrun
from clockbench.machines.qemu import STATUS_NAMES

# After its last line ("run ended") the image powers off at once: a monitor
# whose serial port is quiet this long after it did not power off.
POWEROFF_GRACE_S = 5.0
# Between the summary and that last line the image draws its summary screen
# and QR code: 5.2 s on Firecracker under this machine's KVM, which emulates
# every instruction. A monitor quiet this long after a summary with no last
# line is stopped all the same.
SUMMARY_QUIET_S = 60.0
STATUS_CODES = {name: n for n, name in STATUS_NAMES.items()}
# The image's last line (kernel/finish.c).
RUN_ENDED = re.compile(r"clockbench: run ended: ([a-z ]+) \(status (\d)\)")
BANNER = re.compile(r"clockbench [^\s:]+: ")  # the banner's first line (experiments/main.c), "clockbench 9264863: time counters..."
VERSION_BOUND_S = 10.0
VMM_NAMES = ("cloud-hypervisor", "firecracker")


def module(vmm: str):
    """The module that knows this monitor's command line: BINARY (its
    program's name), command(cfg, binary, workdir), api_request(...)."""
    from clockbench.machines import cloud_hypervisor, firecracker

    return {"cloud-hypervisor": cloud_hypervisor, "firecracker": firecracker}[vmm]


@dataclass
class VmmConfig:
    """One microVM: what both monitors take. The monitor-specific command
    line is made by its module (module(vmm).command)."""

    vmm: str  # "cloud-hypervisor" or "firecracker" (VMM_NAMES)
    binary: Path | None = None  # the monitor's program; default: module(vmm).BINARY on PATH
    kernel: Path = Path("build/clockbench-pvh.elf")  # the PVH kernel (its XEN_ELFNOTE_PHYS32_ENTRY note)
    smp: int = 1
    memory_mib: int = 256
    append: str = ""  # the kernel command line
    api_socket: Path | None = None  # open the monitor's API on this unix socket (snapshots, pause); None: no API
    workdir: Path | None = None  # where a config file the monitor reads is written (default: a temporary folder)
    grace_s: float = POWEROFF_GRACE_S  # after the image's last line
    summary_quiet_s: float = SUMMARY_QUIET_S  # after a summary with no last line yet


@dataclass
class VmmResult(vmrun.Ending):
    """One microVM run; the fields `clockbench run` and the tests read of a
    qemu.RunResult have the same names and meanings here."""

    vmm: str
    command: list[str]
    vmm_exit: int | None  # the monitor's exit status; None when it was stopped here
    status: int | None  # the image's, from the serial log; None: no verdict
    output: str
    stderr: str  # the monitor's own log lines
    seconds: float
    timed_out: bool
    timeout_s: float
    pid: int | None = None
    interrupted: bool = False
    status_source: str | None = None  # "summary" (its record) or "run ended" (the image's last line)
    powered_off: bool = False  # the monitor exited by itself after the image's verdict
    notes: list[str] = field(default_factory=list)
    config: dict | None = None  # the configuration file the monitor read (Firecracker), as written
    injections: list = field(default_factory=list)  # none: faults are QEMU's (qemu.Fault)
    emulation_failed: str | None = None

    @property
    def accel(self) -> str:
        return "kvm"

    @property
    def machine_exit(self) -> int | None:
        return self.vmm_exit

    def _how_it_ended(self) -> str:
        if self.vmm_exit is None:
            return f"{self.vmm} was stopped"
        if self.vmm_exit < 0:
            try:
                name = signal.Signals(-self.vmm_exit).name
            except ValueError:
                name = f"signal {-self.vmm_exit}"
            return f"{self.vmm} was killed by {name}"
        return f"{self.vmm} exited {self.vmm_exit}"

    def describe(self) -> str:
        notes = "".join(f"\n  note: {n}" for n in self.notes)
        if self.interrupted:
            return f"interrupted after {self.seconds:.0f} s, before the image ended; {self.vmm} stopped" + notes
        if self.timed_out:
            return f"stopped after {self.seconds:.0f} s without a verdict" + notes
        if self.status is not None:
            return f"{STATUS_NAMES[self.status]} (from the log's {self.status_source}; {self._how_it_ended()})" + notes
        return f"no verdict: {self._how_it_ended()} before the image reported" + notes


class _Watch:
    """The serial output, read line by line as it comes: when the image gave
    its verdict (a summary record, or its last line), and whether a second
    run began after it (the schema record, every run's first)."""

    def __init__(self):
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.partial = ""
        self.verdict_at: float | None = None  # time.monotonic() of the first verdict (summary or last line)
        self.ended_at: float | None = None  # of the image's last line
        self.last_output_at = time.monotonic()
        self.restarted = threading.Event()

    def quiet_s(self) -> float:
        """How long the serial port has been quiet."""
        return time.monotonic() - self.last_output_at

    def end_reason(self, grace_s: float, summary_quiet_s: float) -> str | None:
        """Why the monitor should be ended now, though it has not exited: the
        image began again after its verdict, or it printed its last line and
        the monitor did not power off within grace_s, or it went quiet for
        summary_quiet_s after its summary; None while none holds."""
        if self.restarted.is_set():
            return "restarted"
        if self.ended_at is not None and self.quiet_s() > grace_s:
            return "no power-off"
        if self.verdict_at is not None and self.quiet_s() > summary_quiet_s:
            return "quiet after the summary"
        return None

    def feed(self, chunk: bytes) -> None:
        now = self.last_output_at = time.monotonic()
        text = self.partial + self.decoder.decode(chunk)
        *lines, self.partial = text.split("\n")
        for line in lines:
            if self.verdict_at is not None and '"type":"schema"' in line:
                self.restarted.set()
            if self.verdict_at is None and '"type":"summary"' in line:
                self.verdict_at = now
            if self.ended_at is None and RUN_ENDED.search(line):
                self.ended_at = now
                self.verdict_at = self.verdict_at or now


Watch = _Watch  # snapshot.py reads two monitors' output, one after the other, through one


def verdict_of(output: str) -> tuple[int | None, str | None, int]:
    """The run's status from its serial log, where the status came from
    ("summary" or "run ended"), and where the first run's output ends in
    the log with "\r" removed: a second run, after a restart, begins at its
    banner (the line `clockbench <build>: ...` before its schema record);
    len of that log when there is none."""
    clean = output.replace("\r", "")
    status = source = None
    end = len(clean)
    pos = 0
    verdict = False
    banner = None  # where the last banner line since the verdict starts
    for line in clean.split("\n"):
        if verdict and BANNER.match(line):
            banner = pos
        if verdict and '"type":"schema"' in line:
            end = banner if banner is not None else pos
            break
        if status is None and records.PREFIX in line and '"type":"summary"' in line:
            s = next((r.get("status") for r in records.parse_log(line).records if r["type"] == "summary"), None)
            if isinstance(s, str) and s in STATUS_CODES:
                status, source = STATUS_CODES[s], "summary"
            verdict = True
        m = RUN_ENDED.search(line)
        if m:
            if status is None and m.group(1) in STATUS_CODES:
                status, source = STATUS_CODES[m.group(1)], "run ended"
            verdict = True
        pos += len(line) + 1
    return status, source, end


def version(binary: str) -> str | None:
    """The first line of `BINARY --version`, or None when it does not answer."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=VERSION_BOUND_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def find_binary(vmm: str, given: str | Path | None) -> tuple[Path | None, str]:
    """The monitor's program: `given`, else its name on PATH. Returns it and,
    when it cannot be used, why (one phrase), else ""."""
    name = module(vmm).BINARY
    if given is None:
        found = shutil.which(name)
        if not found:
            return None, f"{name} is not on PATH (give its path with --vmm-binary)"
        return Path(found), ""
    p = Path(given)
    if not p.exists():
        return None, f"{p}: no such file"
    if not p.is_file() or not os.access(p, os.X_OK):
        return None, f"{p}: not an executable file"
    return p, ""


def command(cfg: VmmConfig, workdir: Path) -> tuple[list[str], dict | None]:
    """The monitor's command line (and the configuration file it reads, if
    any, written into workdir)."""
    binary, why = find_binary(cfg.vmm, cfg.binary)
    if binary is None:
        raise RuntimeError(why)
    return module(cfg.vmm).command(cfg, str(binary), workdir)


def run(cfg: VmmConfig, timeout: float, echo=None, stop: threading.Event | None = None, echo_err=None,
        started=None, watch_out=None) -> VmmResult:
    """Boots once; echo(text) gets the serial output as it arrives,
    echo_err(text) the monitor's own log lines. Setting `stop` ends the
    monitor and returns what it printed so far, with `interrupted` set.
    For work on the running machine (pause, snapshot through cfg.api_socket):
    started(proc, start) is called once the monitor runs (vmrun.run), and
    watch_out(bytes) sees the serial output as it comes."""
    tmp = None
    workdir = cfg.workdir
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="clockbench-vmm-")
        workdir = Path(tmp)
    try:
        cmd, config = command(cfg, workdir)
        watch = _Watch()

        def end_reason() -> str | None:
            return watch.end_reason(cfg.grace_s, cfg.summary_quiet_s)

        def watch_both(chunk: bytes) -> None:
            watch.feed(chunk)
            if watch_out:
                watch_out(chunk)

        got = vmrun.run(cmd, timeout, echo=echo, echo_err=echo_err, stop=stop, watch_out=watch_both,
                        started=started, end_reason=end_reason)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    status, source, end = verdict_of(got.output)
    output = got.output
    notes = []
    if end < len(output.replace("\r", "")):
        output = output.replace("\r", "")
        notes.append(f"{cfg.vmm} started the image again after its verdict (a second banner); it was stopped, the first "
                     f"run's status stands, and the {len(output) - end} characters of the second run are left out of the log")
        output = output[:end]
    elif got.ended_by == "no power-off":
        notes.append(f"{cfg.vmm} did not power off within {cfg.grace_s:g} s of the image's last line; it was stopped, "
                     "and the summary's status stands")
    elif got.ended_by == "quiet after the summary":
        notes.append(f"the image printed nothing for {cfg.summary_quiet_s:g} s after its summary, and {cfg.vmm} did not "
                     "power off; it was stopped, and the summary's status stands")
    return VmmResult(vmm=cfg.vmm, command=cmd, vmm_exit=got.returncode, status=status, output=output, stderr=got.stderr,
                     seconds=got.seconds, timed_out=got.timed_out, timeout_s=timeout, pid=got.pid,
                     interrupted=got.interrupted, status_source=source,
                     powered_off=got.returncode is not None and status is not None, notes=notes, config=config)

