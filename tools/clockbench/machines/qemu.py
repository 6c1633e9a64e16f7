"""Every QEMU command line clockbench uses is built here, and only here.

The image reports its verdict through QEMU's isa-debug-exit device: it writes
0x10 + status to port 0xf4 and QEMU exits with ((0x10 + status) << 1) | 1.
Status: 0 passed, 1 failed, 2 nothing could run, 3 crashed (docs/output.md).

A run can also be disturbed from outside the image (QemuConfig.faults): the
QEMU process stopped with SIGSTOP, or the VM paused from QEMU's monitor, at a
moment chosen by a pattern in the serial output. What each one did, and when,
is in RunResult.injections.
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from clockbench import errors
from clockbench.machines import vmrun

QEMU_BINARY = "qemu-system-x86_64"
DEBUG_EXIT_BASE = 0x10
STATUS_NAMES = {0: "passed", 1: "failed", 2: "nothing ran", 3: "crashed"}
# The runner's own exit codes beyond the image's 0-3.
EXIT_NO_VERDICT = vmrun.EXIT_NO_VERDICT  # QEMU ended without the image reporting (reset, shutdown, QEMU error)
EXIT_TIMEOUT = vmrun.EXIT_TIMEOUT  # the run took longer than its bound and was stopped
EXIT_INTERRUPTED = errors.INTERRUPTED  # stopped by Ctrl-C (run()'s stop event)
# A GRUB-booted image (boot "iso" or "disk") given a command line gets it in
# this SMBIOS OEM string; iso/grub.cfg boots it at once, with no menu.
SMBIOS_PREFIX = "clockbench:"

OVMF_CANDIDATES = ("/usr/share/ovmf/OVMF.fd", "/usr/share/OVMF/OVMF.fd", "/usr/share/qemu/OVMF.fd")
QBOOT = "/usr/share/qemu/qboot.rom"
# OVMF's Secure Boot build (Debian's ovmf): the code as read-only pflash unit
# 0, a variable store (a copy: the firmware writes it) as unit 1; it needs SMM.
OVMF_SECBOOT_CODE = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
OVMF_VARS_MS = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"  # Microsoft's keys: a retail PC

# Plain `-cpu host` aborts on some nested KVM hosts (it cannot set
# IA32_ARCH_CAPABILITIES, MSR 0x10a); dropping that one feature works on
# them and on ordinary hosts. migratable=no lets +invtsc through, so the
# guest sees the invariant-TSC bit when the host has it.
KVM_CPU = "host,migratable=no,+invtsc,-arch-capabilities"
TCG_CPU = "max"


KVM_DEVICE = "/dev/kvm"
# The PVM hypervisor's module (../shared/PLATFORM.md): a KVM that runs a guest
# which is not PVM-aware, like the image or Debian's Linux, by emulating every
# instruction, about a million a second, far slower than TCG.
PVM_MODULE = "/sys/module/kvm_pvm"


def kvm_usable(device: str | None = None) -> tuple[bool, str]:
    """Whether the KVM device (KVM_DEVICE) can be opened read-write, and if not, why."""
    path = device or KVM_DEVICE
    if not os.path.exists(path):
        return False, f"{path} does not exist (no KVM in this kernel or machine)"
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as e:
        return False, f"{path} cannot be opened: {e.strerror}"
    os.close(fd)
    return True, f"{path} is usable"


def kvm_emulates_everything(pvm_module: str | None = None) -> bool:
    """Whether this machine's KVM is PVM (its module, PVM_MODULE, is loaded):
    it emulates every instruction of a guest that is not PVM-aware."""
    return os.path.exists(pvm_module or PVM_MODULE)


def find_ovmf() -> str | None:
    for p in OVMF_CANDIDATES:
        if os.path.exists(p):
            return p
    return None


FAULT_KINDS = ("sigstop", "pause", "hog")
# Bounds on everything a fault waits for: the monitor's socket, each monitor
# reply, /proc showing that a signal took effect, the injector's last words.
MONITOR_BOUND_S = 10.0
CONFIRM_BOUND_S = 2.0
INJECTOR_JOIN_S = MONITOR_BOUND_S * 3
# A trigger may match across lines if its match starts at most this many
# characters before the line the newest output arrived in.
TRIGGER_LOOKBACK = 2048
TRIGGER_TAIL_MAX = 65536  # the most output kept for matching (a line without end)


@dataclass
class Fault:
    """A disturbance applied to the running QEMU from outside the image.

    kind "sigstop": SIGSTOP to the QEMU process, SIGCONT duration_s later. All
      of QEMU stops while the host's clocks run on, so every guest clock (TSC,
      HPET, PM timer, PIT) has moved ahead alike when it resumes.
    kind "pause": `stop`, then `cont`, on QEMU's monitor. Under TCG every guest
      clock stops with the VM; under KVM the guest's TSC runs on while QEMU's
      HPET and PM timer stand still.
    kind "hog": a busy process on the host core of QEMU's vCPU threads (all
      pinned to it; every QEMU thread when they have no names) for duration_s: the host's scheduler shares the core, so
      the vCPU waits on the run queue, time KVM counts as steal. "stop" in
      its Injection is the hog's start, "resume" its end.
    The fault starts delay_s after `trigger`, a regular expression, first
    matches the serial output. Faults are applied one at a time, in order.
    """

    kind: str
    trigger: str
    delay_s: float = 0.0
    duration_s: float = 1.0

    def check(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}: {' or '.join(FAULT_KINDS)}")
        if not (self.delay_s >= 0 and self.duration_s >= 0):
            raise ValueError(f"a fault's delay and duration must be 0 or more seconds: {self}")
        try:
            re.compile(self.trigger)
        except re.error as e:
            raise ValueError(f"fault trigger {self.trigger!r} is not a regular expression: {e}") from None


@dataclass
class Injection:
    """What one Fault did. The *_s times are host monotonic seconds after its
    trigger was seen (trigger_s: seconds after QEMU started). "sent" is when
    the signal or command went out, "confirmed" when /proc showed every QEMU
    thread stopped (running again), or the monitor answered; the change took
    effect in between."""

    fault: Fault
    trigger_s: float | None = None  # None: the trigger never appeared
    stop_sent_s: float | None = None
    stop_confirmed_s: float | None = None
    resume_sent_s: float | None = None
    resume_confirmed_s: float | None = None
    cpu_while_stopped_s: float | None = None  # QEMU's CPU time (all threads, /proc) from stop confirmed to resume sent
    cut_short: str | None = None  # why it ended before duration_s (the run's time bound, QEMU gone)
    error: str | None = None  # why it was not injected, or what went wrong

    @property
    def injected(self) -> bool:
        return self.stop_confirmed_s is not None

    @property
    def stopped_s(self) -> float | None:
        """How long QEMU was stopped: between the midpoints of the stop's and
        the resumption's sent..confirmed intervals."""
        if None in (self.stop_sent_s, self.stop_confirmed_s, self.resume_sent_s, self.resume_confirmed_s):
            return None
        return (self.resume_sent_s + self.resume_confirmed_s - self.stop_sent_s - self.stop_confirmed_s) / 2

    @property
    def stopped_uncertainty_s(self) -> float | None:
        """Half the widths of the two intervals: stopped_s is right within this."""
        if self.stopped_s is None:
            return None
        return (self.stop_confirmed_s - self.stop_sent_s + self.resume_confirmed_s - self.resume_sent_s) / 2

    def describe(self) -> str:
        f = self.fault
        what = f"{f.kind} of {f.duration_s:g} s, {f.delay_s:g} s after /{f.trigger}/"
        if self.trigger_s is None:
            return f"{what}: not injected: {self.error or 'the trigger never appeared'}"
        if not self.injected:
            return f"{what}: trigger at {self.trigger_s:.3f} s; not injected: {self.error}"
        stopped = f"{self.stopped_s:.4f} s (+- {self.stopped_uncertainty_s:.4f})" if self.stopped_s is not None else "unknown"
        text = f"{what}: trigger at {self.trigger_s:.3f} s, stopped at +{self.stop_sent_s:.3f} s for {stopped}"
        if self.cut_short:
            text += f"; cut short: {self.cut_short}"
        if self.error:
            text += f"; {self.error}"
        return text


@dataclass
class QemuConfig:
    boot: str = "direct"  # "direct" (-kernel, Multiboot 1), "pvh" (-kernel, the PVH entry: give the PVH kernel),
    # "iso" (GRUB from a CD) or "disk" (GRUB from a written stick)
    kernel: Path = Path("build/clockbench.elf")
    iso: Path = Path("build/clockbench.iso")
    disk: Path = Path("build/stick.img")  # a raw disk image, for boot="disk"
    firmware: str = "bios"  # "bios" (SeaBIOS), "uefi" (OVMF), "uefi-secboot" (OVMF's Secure Boot build, uefi_vars) or "qboot" (direct boot only)
    uefi_vars: Path | None = None  # firmware "uefi-secboot": the variable store QEMU may write (a copy, never the packaged file)
    accel: str = "auto"  # "auto", "kvm" or "tcg"
    machine: str = "q35"
    cpu: str | None = None  # default: KVM_CPU under KVM, TCG_CPU under TCG
    smp: int = 1
    memory: str = "256M"
    append: str = ""  # kernel command line; for a GRUB boot it goes in an SMBIOS OEM string, and GRUB shows no menu
    serial: bool = True
    display: bool = False
    monitor_socket: Path | None = None
    debug_exit: bool = True  # without it the image halts and leaves its screen, as on hardware
    extra: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)  # "pause" faults get a monitor socket of their own if none is given
    # boot="netboot": PXE from QEMU's own TFTP server (user-mode networking,
    # restricted: the guest reaches nothing beyond it) on an e1000
    tftp: Path | None = None  # the TFTP tree (`make netboot`)
    bootfile: str = ""  # its bootfile, relative to the tree (netboot.BOOTFILES)
    mac: str | None = None  # the NIC's MAC address, which picks the command line in the tree
    nic: str = "e1000"  # the NIC's -device model and options; "virtio-net-pci,romfile=": OVMF's own PXE, no iPXE ROM
    serial_tcp: int | None = None  # the serial port as a TCP server on 127.0.0.1:PORT, QEMU waiting for a client
    binary: str = QEMU_BINARY  # the program (`clockbench run --vmm qemu --vmm-binary PATH`)
    # os-vm --ssh (machines/guest.py): user networking on a `nic` that forwards 127.0.0.1:PORT here to the
    # guest's port 22, and files handed to the guest through fw_cfg (name under opt/ -> host file)
    ssh_forward: int | None = None
    fw_cfg: dict[str, Path] = field(default_factory=dict)


def resolve_accel(accel: str, device: str | None = None, pvm_module: str | None = None) -> tuple[str, str]:
    """The accelerator to use, "kvm" or "tcg", and why, in words that follow
    "under". The one place "auto" is decided, for `run`, `os-vm` and the
    tests: KVM when it is usable and runs the guest's instructions itself;
    TCG when there is no usable KVM, or when KVM is PVM (kvm_pvm), which
    emulates every instruction and is tens of times slower than TCG here
    (../shared/PLATFORM.md: a quick run of the ISO 5 s under TCG, 220 s under
    it). "kvm" and "tcg" are taken as asked. device and pvm_module stand in
    for /dev/kvm and /sys/module/kvm_pvm in tests."""
    if accel == "tcg":
        return "tcg", "TCG (software emulation) as asked"
    ok, why = kvm_usable(device)
    if accel == "kvm":
        if not ok:
            raise RuntimeError(f"KVM was asked for but {why}")
        return "kvm", "KVM as asked"
    if accel != "auto":
        raise RuntimeError(f"unknown accelerator {accel!r}: auto, kvm or tcg")
    if not ok:
        return "tcg", f"TCG (software emulation), because {why}"
    if kvm_emulates_everything(pvm_module):
        return "tcg", ("TCG (software emulation), not KVM: this machine's KVM is PVM (kvm_pvm), which emulates every "
                       "instruction, tens of times slower than TCG (--accel kvm to use it anyway)")
    return "kvm", f"KVM, because {why}"


def build_command(cfg: QemuConfig, accel: str) -> list[str]:
    machine = cfg.machine + (",smm=on" if cfg.firmware == "uefi-secboot" else "")
    cmd = [cfg.binary, "-machine", machine, "-accel", accel]
    cmd += ["-cpu", cfg.cpu or (KVM_CPU if accel == "kvm" else TCG_CPU)]
    cmd += ["-smp", str(cfg.smp), "-m", cfg.memory]
    cmd += ["-no-reboot"]
    if cfg.debug_exit:
        cmd += ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if cfg.serial_tcp is not None:
        cmd += ["-serial", f"tcp:127.0.0.1:{cfg.serial_tcp},server=on,wait=on"]
    else:
        cmd += ["-serial", "stdio" if cfg.serial else "none"]
    cmd += ["-monitor", f"unix:{cfg.monitor_socket},server,nowait" if cfg.monitor_socket else "none"]
    if not cfg.display:
        cmd += ["-display", "none"]
    if cfg.firmware == "uefi":
        ovmf = find_ovmf()
        if not ovmf:
            raise RuntimeError("UEFI firmware not found: install the 'ovmf' package")
        cmd += ["-bios", ovmf]
    elif cfg.firmware == "uefi-secboot":
        if not os.path.exists(OVMF_SECBOOT_CODE):
            raise RuntimeError(f"Secure Boot firmware {OVMF_SECBOOT_CODE} not found: install the 'ovmf' package")
        if cfg.uefi_vars is None or not Path(cfg.uefi_vars).is_file():
            raise RuntimeError(f"firmware uefi-secboot needs a variable store (uefi_vars), a copy of {OVMF_VARS_MS} or one made from it")
        if not cfg.machine.startswith("q35"):
            raise RuntimeError("Secure Boot firmware needs the q35 machine (SMM)")
        cmd += ["-global", "driver=cfi.pflash01,property=secure,value=on",
                "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_SECBOOT_CODE}",
                "-drive", f"if=pflash,format=raw,unit=1,file={cfg.uefi_vars}"]
    elif cfg.firmware == "qboot":
        if cfg.boot not in ("direct", "pvh"):
            raise RuntimeError("qboot boots only a kernel given with -kernel (boot=direct or pvh)")
        cmd += ["-bios", QBOOT]
    elif cfg.firmware != "bios":
        raise RuntimeError(f"unknown firmware {cfg.firmware!r}: bios, uefi, uefi-secboot or qboot")
    if cfg.boot in ("direct", "pvh"):
        cmd += ["-kernel", str(cfg.kernel)]
        append = cfg.append
        # Under KVM with no ACPI tables (acpi=off) the image cannot tell QEMU from
        # another VMM and writes no port it cannot name: `debug_exit` vouches for
        # the device added above, so the run still ends with its status (kernel/finish.c).
        if cfg.debug_exit and accel == "kvm":
            append = f"{append} debug_exit".strip()
        if append:
            cmd += ["-append", append]
        if cfg.ssh_forward is not None:
            # Loopback only: the guest's root login is one key away, never offered to the network; and
            # restricted: the guest reaches nothing beyond QEMU (the forward still reaches it).
            cmd += ["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{int(cfg.ssh_forward)}-:22",
                    "-device", f"{cfg.nic},netdev=n0"]
    elif cfg.boot in ("iso", "disk"):
        cmd += ["-cdrom", str(cfg.iso)] if cfg.boot == "iso" else ["-drive", f"file={cfg.disk},format=raw"]
        if cfg.append:
            cmd += ["-smbios", smbios_cmdline(cfg.append)]
    elif cfg.boot == "netboot":
        if cfg.tftp is None or not cfg.bootfile:
            raise RuntimeError("a netboot needs the TFTP tree and its bootfile (`make netboot`)")
        if any(c in str(cfg.tftp) + cfg.bootfile for c in ", "):
            raise RuntimeError(f"a TFTP tree or bootfile with a comma or space cannot be handed to QEMU: {cfg.tftp}, {cfg.bootfile}")
        nic = f"{cfg.nic},netdev=n0" + (f",mac={cfg.mac}" if cfg.mac else "")
        cmd += ["-netdev", f"user,id=n0,restrict=on,tftp={cfg.tftp},bootfile={cfg.bootfile}", "-device", nic, "-boot", "n"]
        if cfg.append:
            raise RuntimeError("a netbooted machine's command line comes from the TFTP tree's machines file, not append")
    else:
        raise RuntimeError(f"unknown boot {cfg.boot!r}: direct, pvh, iso, disk or netboot")
    if cfg.ssh_forward is not None and cfg.boot != "direct":
        raise RuntimeError("an ssh forward is for a Linux guest booted directly (boot=direct)")
    for name, path in cfg.fw_cfg.items():
        if not name.startswith("opt/") or any(c in name + str(path) for c in ","):
            raise RuntimeError(f"a fw_cfg file is named opt/..., with no comma in its name or path: {name}={path}")
        cmd += ["-fw_cfg", f"name={name},file={path}"]
    return cmd + list(cfg.extra)


def smbios_cmdline(append: str) -> str:
    """The -smbios value that hands GRUB (iso/grub.cfg) a kernel command
    line: one OEM string (type 11), "clockbench:" and the line. QEMU reads
    a doubled comma as one."""
    if any(c in append for c in "\n\r\"'$;{}\\"):
        raise RuntimeError(f"a kernel command line for a GRUB boot cannot hold quotes, '$', ';', braces or newlines: {append!r}")
    return "type=11,value=" + (SMBIOS_PREFIX + append).replace(",", ",,")


@dataclass
class RunResult(vmrun.Ending):
    command: list[str]
    accel: str
    qemu_exit: int | None  # None when the run timed out
    status: int | None  # the image's status 0-3, None when it gave none
    output: str  # everything the serial port carried
    stderr: str
    seconds: float
    timed_out: bool
    injections: list[Injection] = field(default_factory=list)  # one per QemuConfig.faults entry, in order
    timeout_s: float | None = None  # the bound applied: the timeout asked for plus the faults' durations
    pid: int | None = None  # QEMU's process id (gone by the time run() returns)
    interrupted: bool = False  # stopped from outside (Ctrl-C, run()'s stop event) before the image ended
    emulation_failed: str | None = None  # KVM could not emulate an instruction: QEMU paused the guest for good

    @property
    def machine_exit(self) -> int | None:
        return self.qemu_exit

    def describe(self) -> str:
        if self.emulation_failed:
            return (f"no verdict: KVM could not emulate an instruction and QEMU paused the guest for good "
                    f"({self.emulation_failed}); --accel tcg runs it" + self._fault_note())
        if self.interrupted:
            return f"interrupted after {self.seconds:.0f} s, before the image ended; QEMU stopped" + self._fault_note()
        if self.timed_out:
            return f"stopped after {self.seconds:.0f} s without a verdict" + self._fault_note()
        if self.status is not None:
            return f"{STATUS_NAMES[self.status]} (QEMU exit {self.qemu_exit})" + self._fault_note()
        return f"no verdict: QEMU exited {self.qemu_exit} without the image reporting" + self._fault_note()

    def _fault_note(self) -> str:
        return "".join(f"\n  fault: {i.describe()}" for i in self.injections)


class _EmulationWatch:
    """QEMU's stderr, watched for "KVM internal error": an instruction KVM
    could not emulate (x87 in OVMF under a PVM KVM, say) leaves the guest
    paused with QEMU alive, and no status can ever come."""

    def __init__(self):
        self.failed = threading.Event()
        self.line: str | None = None
        self.text = ""

    def feed(self, chunk: bytes) -> None:
        if self.failed.is_set():
            return
        self.text = (self.text + chunk.decode("utf-8", "replace"))[-4096:]
        m = re.search(r"KVM internal error[^\n]*", self.text)
        if m:
            self.line = m.group(0).strip()
            self.failed.set()


def status_from_exit(code: int) -> int | None:
    if code & 1 and (code >> 1) - DEBUG_EXIT_BASE in STATUS_NAMES:
        return (code >> 1) - DEBUG_EXIT_BASE
    return None


class _Triggers:
    """Watches the serial output for each fault's trigger and notes the host
    time of the first match."""

    def __init__(self, faults: list[Fault]):
        self.patterns = [re.compile(f.trigger) for f in faults]
        self.seen: list[float | None] = [None] * len(faults)
        self.tail = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.cond = threading.Condition()

    def feed(self, chunk: bytes) -> None:
        now = time.monotonic()
        if all(t is not None for t in self.seen):
            return
        new = self.decoder.decode(chunk)
        if not new:
            return
        before = len(self.tail)
        self.tail += new
        pos = max(0, self.tail.rfind("\n", 0, before) + 1 - TRIGGER_LOOKBACK)
        with self.cond:
            for i, p in enumerate(self.patterns):
                if self.seen[i] is None and p.search(self.tail, pos):
                    self.seen[i] = now
            self.cond.notify_all()
        keep_from = max(0, self.tail.rfind("\n") + 1 - TRIGGER_LOOKBACK, len(self.tail) - TRIGGER_TAIL_MAX)
        self.tail = self.tail[keep_from:]

    def wait(self, i: int, ending: threading.Event) -> float | None:
        """The time trigger i was seen, or None if the run ended first."""
        with self.cond:
            while self.seen[i] is None and not ending.is_set():
                self.cond.wait(0.1)
            return self.seen[i]


class _Monitor:
    """QEMU's human monitor on a unix socket, every wait bounded."""

    PROMPT = b"(qemu) "

    def __init__(self, path: Path):
        deadline = time.monotonic() + MONITOR_BOUND_S
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(str(path))
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"QEMU's monitor at {path} did not answer within {MONITOR_BOUND_S:g} s: {e}") from None
                time.sleep(0.05)
        self._read_prompt()  # the banner

    def _read_prompt(self) -> str:
        deadline = time.monotonic() + MONITOR_BOUND_S
        got = b""
        while self.PROMPT not in got:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"QEMU's monitor gave no prompt within {MONITOR_BOUND_S:g} s (read {got[-200:]!r})")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            if not data:
                raise RuntimeError(f"QEMU's monitor closed the connection (read {got[-200:]!r})")
            got += data
        return got.decode("utf-8", "replace")

    def command(self, line: str) -> str:
        self.sock.sendall(line.encode() + b"\n")
        return self._read_prompt()

    def status(self) -> str:
        m = re.search(r"VM status: (\w+)", self.command("info status"))
        return m.group(1) if m else "unknown"

    def close(self) -> None:
        self.sock.close()


def _threads_stopped(pid: int) -> bool | None:
    """Whether every thread of pid is stopped (state T), None if /proc cannot tell."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        states = []
        for t in tasks:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
    except (OSError, IndexError):
        return None
    return all(s in "Tt" for s in states)


def _cpu_s(pid: int) -> float | None:
    """The CPU time pid's threads have used, user and system, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _await_threads(pid: int, stopped: bool) -> bool:
    """Whether /proc shows every thread of pid stopped (or none stopped) within CONFIRM_BOUND_S."""
    deadline = time.monotonic() + CONFIRM_BOUND_S
    while time.monotonic() < deadline:
        if _threads_stopped(pid) == stopped:  # None (a thread came or went mid-read): look again
            return True
        time.sleep(0.0005)
    return False


# --- the "hog" fault: a busy process sharing the vCPU threads' host core ---
HOG_CODE = "while True: pass"
VCPU_THREAD = re.compile(r"CPU \d+/(KVM|TCG)")


def _vcpu_threads(pid: int) -> list[int]:
    """QEMU's vCPU threads by the names QEMU gives them with `-name
    debug-threads=on`; without names, every thread of QEMU."""
    named, every = [], []
    try:
        for t in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            every.append(int(t))
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                if VCPU_THREAD.fullmatch(f.read().strip()):
                    named.append(int(t))
    except OSError:
        return []
    return named or every


def _last_core(pid: int, tid: int) -> int:
    """The host core tid last ran on (/proc stat field 39), if it may run
    there; else the lowest core it may use."""
    allowed = os.sched_getaffinity(tid)
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            core = int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        core = -1
    return core if core in allowed else min(allowed)


class _Injector:
    """Applies the faults from a thread of its own while run() pumps output."""

    def __init__(self, proc: subprocess.Popen, faults: list[Fault], triggers: _Triggers, monitor_path: Path | None, start: float):
        self.proc, self.faults, self.triggers, self.monitor_path, self.start = proc, faults, triggers, monitor_path, start
        self.injections = [Injection(f) for f in faults]
        self.ending = threading.Event()  # set by run(): QEMU exited or the time bound ran out
        self.stuck = threading.Event()  # set here: QEMU could not be resumed, run() must end it
        self.ending_reason = "QEMU ended"
        self.monitor: _Monitor | None = None
        self.thread = threading.Thread(target=self._main, name="clockbench-faults", daemon=True)

    def _main(self) -> None:
        try:
            for i, (fault, inj) in enumerate(zip(self.faults, self.injections)):
                t0 = self.triggers.wait(i, self.ending)
                if t0 is None:
                    inj.error = f"{self.ending_reason} before the trigger appeared"
                    continue
                inj.trigger_s = t0 - self.start
                if self.ending.wait(max(0.0, t0 + fault.delay_s - time.monotonic())):
                    inj.error = f"{self.ending_reason} before the delay was up"
                    continue
                try:
                    {"sigstop": self._sigstop, "hog": self._hog}.get(fault.kind, self._pause)(fault, inj, t0)
                except Exception as e:  # noqa: BLE001 - recorded, and QEMU resumed below
                    inj.error = f"{type(e).__name__}: {e}"
                if self.stuck.is_set():
                    break
        finally:
            if self.monitor:
                self.monitor.close()

    def _hold(self, fault: Fault, inj: Injection, t0: float) -> None:
        """Waits out the fault's duration from when the stop was sent, or until the run ends."""
        cpu = _cpu_s(self.proc.pid)
        if self.ending.wait(max(0.0, t0 + inj.stop_sent_s + fault.duration_s - time.monotonic())):
            inj.cut_short = self.ending_reason
        after = _cpu_s(self.proc.pid)
        if cpu is not None and after is not None:
            inj.cpu_while_stopped_s = after - cpu

    def _sigstop(self, fault: Fault, inj: Injection, t0: float) -> None:
        if self.proc.poll() is not None:
            inj.error = "QEMU had exited"
            return
        inj.stop_sent_s = time.monotonic() - t0
        self.proc.send_signal(signal.SIGSTOP)
        try:
            if _await_threads(self.proc.pid, stopped=True):
                inj.stop_confirmed_s = time.monotonic() - t0
            else:
                inj.error = f"/proc did not show every QEMU thread stopped within {CONFIRM_BOUND_S:g} s"
            self._hold(fault, inj, t0)
        finally:
            inj.resume_sent_s = time.monotonic() - t0
            self.proc.send_signal(signal.SIGCONT)
            if _await_threads(self.proc.pid, stopped=False):
                inj.resume_confirmed_s = time.monotonic() - t0
            elif self.proc.poll() is None:
                inj.error = f"/proc did not show QEMU running again within {CONFIRM_BOUND_S:g} s"

    def _pause(self, fault: Fault, inj: Injection, t0: float) -> None:
        if self.monitor is None:
            self.monitor = _Monitor(self.monitor_path)
        inj.stop_sent_s = time.monotonic() - t0
        try:
            self.monitor.command("stop")
            inj.stop_confirmed_s = time.monotonic() - t0
            state = self.monitor.status()
            if state != "paused":
                inj.error = f"after `stop` the monitor says the VM is {state!r}"
            self._hold(fault, inj, t0)
        finally:
            self._cont(inj, t0)

    def _hog(self, fault: Fault, inj: Injection, t0: float) -> None:
        tids = _vcpu_threads(self.proc.pid)
        if not tids:
            inj.error = "QEMU's threads are not in /proc"
            return
        core = _last_core(self.proc.pid, tids[0])
        saved = {}
        hog = None
        inj.stop_sent_s = time.monotonic() - t0
        try:
            for tid in tids:
                saved[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, {core})
            hog = subprocess.Popen([sys.executable, "-c", HOG_CODE], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
            os.sched_setaffinity(hog.pid, {core})
            inj.stop_confirmed_s = time.monotonic() - t0
            self._hold(fault, inj, t0)
        finally:
            inj.resume_sent_s = time.monotonic() - t0
            if hog is not None:
                hog.kill()
                hog.wait()
            for tid, cpus in saved.items():
                try:
                    os.sched_setaffinity(tid, cpus)
                except OSError:  # QEMU ended meanwhile
                    pass
            inj.resume_confirmed_s = time.monotonic() - t0

    def _cont(self, inj: Injection, t0: float) -> None:
        inj.resume_sent_s = time.monotonic() - t0
        problem = None
        for attempt in range(2):  # a second time on a fresh connection
            try:
                if attempt:
                    self.monitor.close()
                    self.monitor = _Monitor(self.monitor_path)
                self.monitor.command("cont")
                if attempt == 0:
                    inj.resume_confirmed_s = time.monotonic() - t0
                state = self.monitor.status()
                if state == "running":
                    return
                problem = f"after `cont` the monitor says the VM is {state!r}"
            except (OSError, RuntimeError) as e:
                problem = f"`cont` failed: {e}"
            if self.proc.poll() is not None:
                return
        inj.error = f"{problem}; QEMU was ended so that it is not left paused"
        self.stuck.set()


def run(cfg: QemuConfig, timeout: float, echo=None, stop: threading.Event | None = None) -> RunResult:
    """Boots once; echo(text) gets serial output as it arrives. The faults in
    cfg.faults are applied while it runs, and `timeout` grows by their
    durations. QEMU is never left stopped or paused: a fault under way when
    the run ends, times out or raises is undone before QEMU is ended.
    Setting `stop` ends QEMU and returns what it printed so far, with
    `interrupted` set. QEMU runs in a session of its own, so a Ctrl-C on the
    terminal reaches only the caller (a KeyboardInterrupt ends QEMU too)."""
    for f in cfg.faults:
        f.check()
    accel, _ = resolve_accel(cfg.accel)
    mon_dir = None
    if any(f.kind == "pause" for f in cfg.faults) and cfg.monitor_socket is None:
        mon_dir = tempfile.mkdtemp(prefix="clockbench-mon-")
        cfg = dataclasses.replace(cfg, monitor_socket=Path(mon_dir) / "monitor.sock")
    try:
        return _run(cfg, accel, timeout, echo, stop)
    finally:
        if mon_dir:
            shutil.rmtree(mon_dir, ignore_errors=True)


def _run(cfg: QemuConfig, accel: str, timeout: float, echo, stop: threading.Event | None) -> RunResult:
    cmd = build_command(cfg, accel)
    bound = timeout + sum(f.duration_s for f in cfg.faults)
    triggers = _Triggers(cfg.faults)
    emulation = _EmulationWatch()
    held: dict = {}

    def started(proc: subprocess.Popen, start: float) -> None:
        held["injector"] = injector = _Injector(proc, cfg.faults, triggers, cfg.monitor_socket, start)
        if cfg.faults:
            injector.thread.start()

    def end_reason() -> str | None:
        if held["injector"].stuck.is_set():
            return "QEMU could not be resumed"
        if emulation.failed.is_set():  # no status will come: QEMU waits paused for ever
            return "KVM could not emulate an instruction"
        return None

    def ending(why: str) -> None:
        injector = held.get("injector")
        if injector is None:
            return
        if why != "it exited":
            injector.ending_reason = why
        injector.ending.set()
        if injector.thread.is_alive():
            injector.thread.join(timeout=INJECTOR_JOIN_S)  # resumes a fault under way
        if injector.proc.poll() is None and any(f.kind == "sigstop" for f in cfg.faults):
            injector.proc.send_signal(signal.SIGCONT)  # whatever the injector managed

    got = vmrun.run(cmd, bound, echo=echo, stop=stop, watch_out=triggers.feed if cfg.faults else None,
                    watch_err=emulation.feed, started=started, end_reason=end_reason, ending=ending)
    code = got.returncode
    return RunResult(
        command=cmd,
        accel=accel,
        qemu_exit=code,
        status=None if code is None else status_from_exit(code),
        output=got.output,
        stderr=got.stderr,
        seconds=got.seconds,
        timed_out=got.timed_out,
        injections=held["injector"].injections if "injector" in held else [],
        timeout_s=bound,
        pid=got.pid,
        interrupted=got.interrupted,
        emulation_failed=emulation.line,
    )


def main_echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


# --- Migration: the VM moved to a new QEMU mid-run (`clockbench run --migrate-at`) ---
# The VM is stopped on the source with QMP `stop`, its state written with
# `migrate` to a file (exec:cat > FILE), the source ended, and a destination
# QEMU started with the same command line plus `-incoming "exec:cat FILE"`
# and `-S`; once it has read the state and the gap has passed since the
# stop, QMP `cont` resumes it. Both QEMUs' serial output goes to one log;
# the status is the destination's. The known answer, how long the VM stood
# still as the host saw it, is QMP's STOP event (source) to its RESUME event
# (destination): QEMU stamps events with the host's wall clock
# (g_get_real_time, microseconds). The STOP event is sent after the vCPUs
# have stopped and before `stop` is answered; RESUME before `cont` is
# answered; so each event and the change it reports lie within its command's
# round trip, and the interval is right within the sum of the two round
# trips (and 2 us for the stamps' resolution).

MIGRATE_BOUND_S = 120.0  # the state written (source) or read (destination), and each QMP exchange
MIGRATE_GAP_DEFAULT_S = 3.0
PYDEPS = Path(__file__).resolve().parents[3] / "build" / "pydeps"


@dataclass
class Migration:
    """Where and how long: at_s seconds after the serial port's first line
    (the run's origin, as the host saw it arrive), a stop of at least gap_s
    seconds (longer when writing and reading the state take longer)."""

    at_s: float
    gap_s: float = MIGRATE_GAP_DEFAULT_S
    state_dir: Path | None = None  # where the state file goes (default: a temporary folder, removed after)
    after: str | None = None  # an experiment's name: at_s counts from its first progress record, not the first line

    def origin_pattern(self) -> re.Pattern:
        """The serial output whose arrival is the migration's origin."""
        return vmrun.origin_pattern(self.after)


@dataclass
class MigrationResult:
    """What a Migration did. *_wall: host wall-clock seconds (Unix time);
    *_s: host monotonic seconds after the source QEMU started."""

    migration: Migration
    origin_s: float | None = None  # the first serial line
    stop_sent_wall: float | None = None
    stop_event_wall: float | None = None
    stop_reply_wall: float | None = None
    state_bytes: int | None = None
    state_written_s: float | None = None  # how long `migrate` took
    source_exit: int | None = None
    destination_command: list[str] | None = None
    state_read_s: float | None = None  # the destination's QMP saying the incoming migration completed, from its start
    resume_sent_wall: float | None = None
    resume_event_wall: float | None = None
    resume_reply_wall: float | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.resume_event_wall is not None and self.stop_event_wall is not None

    @property
    def stopped_s(self) -> float | None:
        """STOP (source) to RESUME (destination), by QEMU's own timestamps."""
        return self.resume_event_wall - self.stop_event_wall if self.done else None

    @property
    def stopped_uncertainty_s(self) -> float | None:
        """A bound: the `stop` and `cont` round trips, and the stamps' 1 us each."""
        if not self.done or None in (self.stop_reply_wall, self.resume_reply_wall):
            return None
        return (self.stop_reply_wall - self.stop_sent_wall) + (self.resume_reply_wall - self.resume_sent_wall) + 2e-6

    def describe(self) -> str:
        m = self.migration
        what = vmrun.stop_heading("migration", m.at_s, m.gap_s, m.after)
        if self.done:
            text = (f"{what}: the VM stood still {self.stopped_s:.6f} s (+- {self.stopped_uncertainty_s:.6f}) "
                    f"by QMP STOP to RESUME; state {self.state_bytes} bytes")
        else:
            text = f"{what}: not done"
        return text + (f"; {self.error}" if self.error else "")

    def to_json(self) -> dict:
        return vmrun.stop_json(self, "migration")


def qmp_module():
    """qemu.qmp (PyPI), from build/pydeps where `make deps` puts it."""
    if PYDEPS.is_dir() and str(PYDEPS) not in sys.path:
        sys.path.append(str(PYDEPS))
    try:
        from qemu import qmp
    except ImportError:
        raise errors.MissingTool("PyPI's qemu.qmp is not installed: `make deps` puts it in build/pydeps") from None
    return qmp


async def _disconnect(client) -> None:
    """Closes a QMP connection; a QEMU that quit first leaves nothing to close."""
    try:
        await client.disconnect()
    except (EOFError, OSError, Exception):  # noqa: BLE001 - qemu.qmp re-raises the reader's end of stream
        pass


def _event_wall(ev) -> float:
    ts = ev["timestamp"]
    return ts["seconds"] + ts["microseconds"] / 1e6


class _Migrator:
    """Runs the migration from a thread of its own (an asyncio loop for
    qemu.qmp) while run_migrated() pumps both QEMUs' output."""

    def __init__(self, cfg: QemuConfig, accel: str, migration: Migration, qmp_dir: Path, start_proc, start: float):
        self.cfg, self.accel, self.m, self.start = cfg, accel, migration, start
        self.start_proc = start_proc  # start_proc(extra_args) -> Popen, pumped into the one log
        self.src_sock, self.dst_sock = qmp_dir / "source.qmp", qmp_dir / "destination.qmp"
        self.state = Path(migration.state_dir or qmp_dir) / "vmstate"
        self.result = MigrationResult(migration)
        self.first_line = threading.Event()  # the origin arrived (the first line, or the phase named)
        self.origin = vmrun.Origin(migration.after)
        self.ending = threading.Event()  # set by run_migrated: the run is over
        self.swapped = threading.Event()  # the destination is the process to wait for
        self.finished = threading.Event()
        self.proc = None  # the process run_migrated waits for
        self.source = None
        self.thread = threading.Thread(target=self._main, name="clockbench-migrate", daemon=True)

    def feed(self, chunk: bytes) -> None:
        if self.origin.feed(chunk):
            self.result.origin_s = time.monotonic() - self.start
            self.first_line.set()

    def _main(self) -> None:
        import asyncio

        try:
            asyncio.run(self._migrate())
        except Exception as e:  # noqa: BLE001 - recorded; run_migrated ends what is left
            self.result.error = self.result.error or f"{type(e).__name__}: {e}"
        finally:
            self.finished.set()

    async def _wait(self, event: threading.Event, until: float | None = None) -> bool:
        """Waits (without blocking the loop) for event, or the run's end, or until (monotonic)."""
        import asyncio

        while not event.is_set():
            if self.ending.is_set() or (until is not None and time.monotonic() >= until):
                return False
            await asyncio.sleep(0.005)
        return True

    async def _connect(self, path: Path, proc):
        import asyncio

        qmp = qmp_module()
        deadline = time.monotonic() + MONITOR_BOUND_S
        while True:
            client = qmp.QMPClient(path.name)
            try:
                await asyncio.wait_for(client.connect(str(path)), MONITOR_BOUND_S)
                return client
            except (qmp.ConnectError, OSError, asyncio.TimeoutError) as e:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"QMP at {path} did not answer within {MONITOR_BOUND_S:g} s: {e}") from None
                await asyncio.sleep(0.05)

    async def _migrate(self) -> None:
        import asyncio

        r, m = self.result, self.m
        self.source = self.proc
        try:
            src = await self._connect(self.src_sock, self.source)
        except RuntimeError:
            if self.source.poll() is None and not self.ending.is_set():
                raise
            # a short run on a loaded host can end before its monitor answers
            r.error = "the run ended before the migration's time (before its monitor answered)"
            return
        try:
            if not await self._wait(self.first_line):
                r.error = ("the run ended before the serial port said anything" if m.after is None
                           else f"the run ended before its {m.after} phase began")
                return
            origin = self.start + r.origin_s
            while time.monotonic() < origin + m.at_s:
                if self.ending.is_set():
                    r.error = "the run ended before the migration's time"
                    return
                await asyncio.sleep(min(0.005, max(0.0, origin + m.at_s - time.monotonic())))
            with src.listener(("STOP",)) as stops:
                r.stop_sent_wall = time.time()
                await asyncio.wait_for(src.execute("stop"), MONITOR_BOUND_S)
                r.stop_reply_wall = time.time()
                r.stop_event_wall = _event_wall(await asyncio.wait_for(stops.get(), MONITOR_BOUND_S))
            t0 = time.monotonic()
            await asyncio.wait_for(src.execute("migrate", {"uri": f"exec:cat > {self.state}"}), MONITOR_BOUND_S)
            while True:
                info = await asyncio.wait_for(src.execute("query-migrate"), MONITOR_BOUND_S)
                status = info.get("status")
                if status == "completed":
                    break
                if status in ("failed", "cancelled") or time.monotonic() - t0 > MIGRATE_BOUND_S:
                    r.error = f"the source's migration {status}: {info.get('error-desc', 'no reason given')}"
                    await src.execute("cont")  # the run goes on where it was
                    r.stop_event_wall = None
                    return
                await asyncio.sleep(0.01)
            r.state_written_s = time.monotonic() - t0
            r.state_bytes = self.state.stat().st_size
            try:
                await asyncio.wait_for(src.execute("quit"), MONITOR_BOUND_S)
            except Exception:  # noqa: BLE001 - QEMU may close the socket as it quits
                pass
        finally:
            await _disconnect(src)
        try:
            r.source_exit = self.source.wait(timeout=MONITOR_BOUND_S)
        except subprocess.TimeoutExpired:
            self.source.kill()
            r.source_exit = self.source.wait()
        extra = ["-incoming", f"exec:cat {self.state}", "-S"]
        t1 = time.monotonic()
        dest = self.start_proc(extra, self.dst_sock)
        r.destination_command = dest.args
        self.proc = dest
        self.swapped.set()
        dst = await self._connect(self.dst_sock, dest)
        try:
            while True:
                info = await asyncio.wait_for(dst.execute("query-migrate"), MONITOR_BOUND_S)
                if info.get("status") == "completed":
                    break
                if info.get("status") in ("failed", "cancelled") or time.monotonic() - t1 > MIGRATE_BOUND_S:
                    r.error = f"the destination's incoming migration {info.get('status')}: {info.get('error-desc', '')}"
                    return
                await asyncio.sleep(0.01)
            r.state_read_s = time.monotonic() - t1
            left = r.stop_event_wall + m.gap_s - time.time()
            if left > 0 and self.ending.wait(left):
                r.error = "the run ended during the gap"
                return
            with dst.listener(("RESUME",)) as resumes:
                r.resume_sent_wall = time.time()
                await asyncio.wait_for(dst.execute("cont"), MONITOR_BOUND_S)
                r.resume_reply_wall = time.time()
                r.resume_event_wall = _event_wall(await asyncio.wait_for(resumes.get(), MONITOR_BOUND_S))
        finally:
            await _disconnect(dst)


def run_migrated(cfg: QemuConfig, migration: Migration, timeout: float, echo=None,
                 stop: threading.Event | None = None) -> tuple[RunResult, MigrationResult]:
    """Boots once, and migrates the VM to a new QEMU as `migration` says
    (see the block's comment). `timeout` grows by the gap and the bound on
    moving the state. As run(): echo gets the serial output (both QEMUs'),
    `stop` ends it; faults are not applied. RunResult.command is the
    source's; the exit status is the destination's (the source's when the
    migration never got that far)."""
    accel, _ = resolve_accel(cfg.accel)
    qmp_dir = Path(tempfile.mkdtemp(prefix="clockbench-qmp-"))
    try:
        return _run_migrated(cfg, accel, migration, qmp_dir, timeout, echo, stop)
    finally:
        shutil.rmtree(qmp_dir, ignore_errors=True)


# Under KVM QEMU will not migrate a CPU with +invtsc ("State blocked by
# non-migratable CPU device (invtsc flag)"; it would need tsc-frequency=,
# which a KVM without TSC scaling cannot honour): KVM_CPU without it.
KVM_MIGRATABLE_CPU = "host,-arch-capabilities"


def _run_migrated(cfg, accel, migration, qmp_dir, timeout, echo, stop):
    if accel == "kvm" and cfg.cpu is None:
        cfg = dataclasses.replace(cfg, cpu=KVM_MIGRATABLE_CPU)
    cmd = build_command(dataclasses.replace(cfg, faults=[]), accel)
    bound = timeout + migration.gap_s + 2 * MIGRATE_BOUND_S
    emulation = _EmulationWatch()
    migrator: _Migrator | None = None
    # both QEMUs' serial output goes into the one log, watched by the migrator
    session = vmrun.Session(echo=echo, watch_out=lambda chunk: migrator.feed(chunk), watch_err=emulation.feed)

    def start_proc(extra: list[str], sock: Path):
        return session.launch(cmd + ["-qmp", f"unix:{sock},server=on,wait=off"] + extra)

    start = session.start
    migrator = _Migrator(cfg, accel, migration, qmp_dir, start_proc, start)
    migrator.proc = start_proc([], migrator.src_sock)
    source_pid = migrator.proc.pid
    migrator.thread.start()

    def over() -> bool:
        proc = migrator.proc
        if proc.poll() is None:
            return emulation.failed.is_set()
        # the destination ended, or the source before it handed over, or the
        # migration failed with no QEMU left running; else the source quit
        # after writing its state and the destination is on its way
        return (migrator.swapped.is_set() or migrator.result.state_bytes is None or
                (migrator.finished.is_set() and bool(migrator.result.error) and not migrator.result.done))

    def ending(_why: str) -> None:
        migrator.ending.set()
        migrator.thread.join(timeout=INJECTOR_JOIN_S)
        r = migrator.result
        origin_s = r.origin_s if r.origin_s is not None else time.monotonic() - start
        if not r.done and r.stop_event_wall is None and time.monotonic() - start < origin_s + migration.at_s:
            # the run ended before the migration's time came: whatever the
            # migrator recorded meanwhile (nothing yet, on a loaded host, or
            # its monitor's EOF as QEMU exited) is a consequence of that
            r.error = "the run ended before the migration's time"

    timed_out, interrupted, _ = session.wait(bound, stop=stop, over=over, ending=ending)
    output, stderr = session.finish()
    final = migrator.proc
    code = None if timed_out or interrupted else final.returncode
    result = RunResult(
        command=cmd, accel=accel, qemu_exit=code, status=None if code is None else status_from_exit(code),
        output=output, stderr=stderr, seconds=session.seconds, timed_out=timed_out,
        timeout_s=bound, pid=source_pid, interrupted=interrupted, emulation_failed=emulation.line)
    return result, migrator.result
