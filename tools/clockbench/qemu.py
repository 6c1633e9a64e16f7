"""Every QEMU command line clockbench uses is built here, and only here.

The image reports its verdict through QEMU's isa-debug-exit device: it writes
0x10 + status to port 0xf4 and QEMU exits with ((0x10 + status) << 1) | 1.
Status: 0 passed, 1 failed, 2 nothing could run, 3 crashed (docs/output.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

DEBUG_EXIT_BASE = 0x10
STATUS_NAMES = {0: "passed", 1: "failed", 2: "nothing ran", 3: "crashed"}
# The runner's own exit codes beyond the image's 0-3.
EXIT_NO_VERDICT = 4  # QEMU ended without the image reporting (reset, shutdown, QEMU error)
EXIT_TIMEOUT = 5  # the run took longer than its bound and was stopped

OVMF_CANDIDATES = ("/usr/share/ovmf/OVMF.fd", "/usr/share/OVMF/OVMF.fd", "/usr/share/qemu/OVMF.fd")
QBOOT = "/usr/share/qemu/qboot.rom"

# Plain `-cpu host` aborts on some nested KVM hosts (it cannot set
# IA32_ARCH_CAPABILITIES, MSR 0x10a); dropping that one feature works on
# them and on ordinary hosts. migratable=no lets +invtsc through, so the
# guest sees the invariant-TSC bit when the host has it.
KVM_CPU = "host,migratable=no,+invtsc,-arch-capabilities"
TCG_CPU = "max"


def kvm_usable() -> tuple[bool, str]:
    """Whether /dev/kvm can be opened read-write, and if not, why."""
    path = "/dev/kvm"
    if not os.path.exists(path):
        return False, "/dev/kvm does not exist (no KVM in this kernel or machine)"
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as e:
        return False, f"/dev/kvm cannot be opened: {e.strerror}"
    os.close(fd)
    return True, "/dev/kvm is usable"


def find_ovmf() -> str | None:
    for p in OVMF_CANDIDATES:
        if os.path.exists(p):
            return p
    return None


@dataclass
class QemuConfig:
    boot: str = "direct"  # "direct" (-kernel, Multiboot 1), "iso" (GRUB from a CD) or "disk" (GRUB from a written stick)
    kernel: Path = Path("build/clockbench.elf")
    iso: Path = Path("build/clockbench.iso")
    disk: Path = Path("build/stick.img")  # a raw disk image, for boot="disk"
    firmware: str = "bios"  # "bios" (SeaBIOS), "uefi" (OVMF) or "qboot" (direct boot only)
    accel: str = "auto"  # "auto", "kvm" or "tcg"
    machine: str = "q35"
    cpu: str | None = None  # default: KVM_CPU under KVM, TCG_CPU under TCG
    smp: int = 1
    memory: str = "256M"
    append: str = ""  # kernel command line, direct boot only
    serial: bool = True
    display: bool = False
    monitor_socket: Path | None = None
    debug_exit: bool = True  # without it the image halts and leaves its screen, as on hardware
    extra: list[str] = field(default_factory=list)


def resolve_accel(accel: str) -> tuple[str, str]:
    """Returns ("kvm"|"tcg", why)."""
    ok, why = kvm_usable()
    if accel == "tcg":
        return "tcg", "TCG (software emulation) as asked"
    if accel == "kvm":
        if not ok:
            raise RuntimeError(f"KVM was asked for but {why}")
        return "kvm", "KVM as asked"
    if ok:
        return "kvm", "KVM, because /dev/kvm is usable"
    return "tcg", f"TCG (software emulation), because {why}"


def build_command(cfg: QemuConfig, accel: str) -> list[str]:
    cmd = ["qemu-system-x86_64", "-machine", cfg.machine, "-accel", accel]
    cmd += ["-cpu", cfg.cpu or (KVM_CPU if accel == "kvm" else TCG_CPU)]
    cmd += ["-smp", str(cfg.smp), "-m", cfg.memory]
    cmd += ["-no-reboot"]
    if cfg.debug_exit:
        cmd += ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    cmd += ["-serial", "stdio" if cfg.serial else "none"]
    cmd += ["-monitor", f"unix:{cfg.monitor_socket},server,nowait" if cfg.monitor_socket else "none"]
    if not cfg.display:
        cmd += ["-display", "none"]
    if cfg.firmware == "uefi":
        ovmf = find_ovmf()
        if not ovmf:
            raise RuntimeError("UEFI firmware not found: install the 'ovmf' package")
        cmd += ["-bios", ovmf]
    elif cfg.firmware == "qboot":
        if cfg.boot != "direct":
            raise RuntimeError("qboot boots only a kernel given with -kernel (boot=direct)")
        cmd += ["-bios", QBOOT]
    elif cfg.firmware != "bios":
        raise RuntimeError(f"unknown firmware {cfg.firmware!r}: bios, uefi or qboot")
    if cfg.boot == "direct":
        cmd += ["-kernel", str(cfg.kernel)]
        if cfg.append:
            cmd += ["-append", cfg.append]
    elif cfg.boot == "iso":
        if cfg.append:
            raise RuntimeError("a kernel command line can be given only with boot=direct; the ISO's comes from its GRUB menu")
        cmd += ["-cdrom", str(cfg.iso)]
    elif cfg.boot == "disk":
        if cfg.append:
            raise RuntimeError("a kernel command line can be given only with boot=direct")
        cmd += ["-drive", f"file={cfg.disk},format=raw"]
    else:
        raise RuntimeError(f"unknown boot {cfg.boot!r}: direct, iso or disk")
    return cmd + list(cfg.extra)


@dataclass
class RunResult:
    command: list[str]
    accel: str
    qemu_exit: int | None  # None when the run timed out
    status: int | None  # the image's status 0-3, None when it gave none
    output: str  # everything the serial port carried
    stderr: str
    seconds: float
    timed_out: bool

    @property
    def exit_code(self) -> int:
        """The runner's exit code: the image's status, or EXIT_NO_VERDICT/EXIT_TIMEOUT."""
        if self.timed_out:
            return EXIT_TIMEOUT
        return self.status if self.status is not None else EXIT_NO_VERDICT

    def describe(self) -> str:
        if self.timed_out:
            return f"stopped after {self.seconds:.0f} s without a verdict"
        if self.status is not None:
            return f"{STATUS_NAMES[self.status]} (QEMU exit {self.qemu_exit})"
        return f"no verdict: QEMU exited {self.qemu_exit} without the image reporting"


def status_from_exit(code: int) -> int | None:
    if code & 1 and (code >> 1) - DEBUG_EXIT_BASE in STATUS_NAMES:
        return (code >> 1) - DEBUG_EXIT_BASE
    return None


def run(cfg: QemuConfig, timeout: float, echo=None) -> RunResult:
    """Boots once; echo(text) gets serial output as it arrives."""
    accel, _ = resolve_accel(cfg.accel)
    cmd = build_command(cfg, accel)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks: list[bytes] = []
    errs: list[bytes] = []

    def pump(stream, sink, live):
        for chunk in iter(lambda: stream.read1(4096), b""):
            sink.append(chunk)
            if live:
                live(chunk.decode("utf-8", "replace"))

    readers = [
        threading.Thread(target=pump, args=(proc.stdout, chunks, echo), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, errs, None), daemon=True),
    ]
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        proc.wait()
    for t in readers:
        t.join(timeout=5)
    seconds = time.monotonic() - start
    code = None if timed_out else proc.returncode
    return RunResult(
        command=cmd,
        accel=accel,
        qemu_exit=code,
        status=None if code is None else status_from_exit(code),
        output=b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n"),
        stderr=b"".join(errs).decode("utf-8", "replace"),
        seconds=seconds,
        timed_out=timed_out,
    )


def main_echo(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
