"""os-vm guests for the tests: Linux hosts reached over ssh on 127.0.0.1
(`clockbench os-vm --ssh`, machines/guest.py), booted through the real
command, for any test that needs a host whose kernel and clocksource
differ from this machine's (a fleet's Ansible inventory:
tests/fleet/test_hosts_guests.py).

    private, public = ssh_keypair(tmp_path)
    g = start_guest("hpet", free_port(), public)     # returns once sshd answers
    g.ssh(private, "uname -r")                       # OpenSSH's client
    g.inventory_vars(private)                        # ansible_host=127.0.0.1, ansible_port=...
    g.stop()                                         # powered off; nothing left running

start_guests([("hpet", p1), ("acpi_pm", p2)], public) boots several at once;
`with running_guests([...], public) as guests:` stops them all at the end.
Every wait has a bound; a guest that does not come up is an AssertionError
with the tool's output and the serial log's tail, its tool and QEMU gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from helpers.paths import BUILD, ROOT
from helpers.ports import free_port  # noqa: F401  (the caller's port)

LANG_DIR = BUILD / "lang"
# The languages whose runtimes go into a test's guest: Go (static) and Python
# (Debian's, which Ansible needs anyway) keep the archive small (51 MB) and the
# runs short; all eight make 230 MB and boot as fast (15 s to sshd under TCG here).
LANGUAGES = ("go", "python")
# The tool's own bound for QEMU's start to sshd's answer, and the helper's for
# the whole start (the tool also builds the archive: 20 s the first time, while
# it traces the runtimes, about 5 s after).
BOOT_BOUND_S = 150
START_BOUND_S = 300
STOP_BOUND_S = 45  # SIGTERM to the tool: it powers the guest off (20 s at most), then QEMU is killed
UP_BOUND_S = 3600  # the guest's own time bound, should a test never stop it
SSH_OPTIONS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
               "-o", "ConnectTimeout=20", "-o", "BatchMode=yes"]


def ssh_keypair(folder: Path) -> tuple[Path, Path]:
    """A fresh ed25519 key pair in folder: (private, public)."""
    key = folder / "guest_key"
    if not key.is_file():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "clockbench-test", "-f", str(key)],
                       check=True, timeout=30)
    return key, key.with_name(key.name + ".pub")


@dataclass
class Guest:
    clocksource: str
    port: int
    hostname: str
    log: Path  # the serial port
    output: Path  # the tool's own output
    proc: subprocess.Popen
    boot_s: float | None = None  # the tool's start to sshd's answer
    host: str = "127.0.0.1"
    stopped: str | None = field(default=None)

    def ssh_argv(self, private_key: Path) -> list[str]:
        return ["ssh", *SSH_OPTIONS, "-i", str(private_key), "-p", str(self.port), f"root@{self.host}"]

    def ssh(self, private_key: Path, command: str, timeout: float = 120, stdin: bytes | None = None,
            ) -> subprocess.CompletedProcess:
        """Runs a shell command in the guest with OpenSSH's client."""
        return subprocess.run([*self.ssh_argv(private_key), command], input=stdin, capture_output=True,
                              timeout=timeout)

    def inventory_vars(self, private_key: Path) -> dict[str, str]:
        """An Ansible inventory host's variables for this guest."""
        return {"ansible_host": self.host, "ansible_port": str(self.port), "ansible_user": "root",
                "ansible_ssh_private_key_file": str(private_key), "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}

    def explain(self) -> str:
        def tail(p: Path, n: int) -> str:
            try:
                return "\n".join(p.read_text(errors="replace").replace("\r", "").strip().split("\n")[-n:])
            except OSError:
                return "(none)"
        return f"--- the tool ({self.output}) ---\n{tail(self.output, 20)}\n--- serial ({self.log}) ---\n{tail(self.log, 20)}"

    def stop(self, bound_s: float = STOP_BOUND_S) -> str:
        """Ends the guest: SIGTERM to the tool, which powers it off; after
        bound_s the tool's whole session is killed (QEMU dies with it).
        Returns what the tool said of the end."""
        if self.stopped is not None:
            return self.stopped
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=bound_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        said = [l for l in self.output.read_text(errors="replace").split("\n") if l.strip()]
        self.stopped = said[-1] if said else f"the tool ended {self.proc.returncode}"
        return self.stopped


def _launch(clocksource: str, port: int, public_key: Path, folder: Path, languages: tuple[str, ...],
            memory: str) -> Guest:
    name = f"os-vm-{clocksource.replace('_', '-')}-{port}"
    log, output = folder / f"{name}.serial.log", folder / f"{name}.tool.log"
    argv = [sys.executable, "-m", "clockbench", "os-vm", "--accel", "tcg", "--ssh", f"127.0.0.1:{port}",
            "--authorized-key", str(public_key), "--append", f"clocksource={clocksource}", "--hostname", name,
            "--lang", ",".join(languages), "--lang-dir", str(LANG_DIR), "--memory", memory, "--log", str(log),
            "--boot-timeout", str(BOOT_BOUND_S), "--timeout", str(UP_BOUND_S)]
    with output.open("wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    return Guest(clocksource, port, name, log, output, proc)


def _await_up(guests: list[Guest], bound_s: float) -> None:
    start = time.monotonic()
    waiting = list(guests)
    try:
        while waiting:
            for g in list(waiting):
                text = g.output.read_text(errors="replace")
                if "up after " in text:
                    g.boot_s = float(text.split("up after ", 1)[1].split(" s", 1)[0])
                    waiting.remove(g)
                elif g.proc.poll() is not None:
                    raise AssertionError(f"guest {g.hostname} ended ({g.proc.returncode}) before its sshd answered:\n"
                                         f"{g.explain()}")
            if waiting and time.monotonic() - start > bound_s:
                raise AssertionError(f"guest {waiting[0].hostname} not up within {bound_s:g} s:\n{waiting[0].explain()}")
            time.sleep(0.5)
    except BaseException:
        for g in guests:
            g.stop(bound_s=10)
        raise


def start_guests(specs: list[tuple[str, int]], public_key: Path, folder: Path | None = None,
                 languages: tuple[str, ...] = LANGUAGES, memory: str = "1G", bound_s: float = START_BOUND_S) -> list[Guest]:
    """Boots a guest per (clocksource, port) at once; returns when all answer
    on ssh. The first builds the archive; the others are started once it is
    written, so they do not build it at the same time."""
    folder = Path(folder or BUILD / "test" / "guests")
    folder.mkdir(parents=True, exist_ok=True)
    guests: list[Guest] = []
    try:
        for i, (clocksource, port) in enumerate(specs):
            g = _launch(clocksource, port, public_key, folder, languages, memory)
            guests.append(g)
            if i == 0 and len(specs) > 1:
                _await_booting(g, bound_s)
    except BaseException:
        for g in guests:
            g.stop(bound_s=10)
        raise
    _await_up(guests, bound_s)
    return guests


def _await_booting(g: Guest, bound_s: float) -> None:
    """Until the tool has written the archive and started QEMU (or is up, or ended)."""
    start = time.monotonic()
    while time.monotonic() - start < bound_s and g.proc.poll() is None:
        if "sshd within" in g.output.read_text(errors="replace"):
            return
        time.sleep(0.5)


def start_guest(clocksource: str, port: int, public_key: Path, folder: Path | None = None,
                languages: tuple[str, ...] = LANGUAGES, memory: str = "1G", bound_s: float = START_BOUND_S) -> Guest:
    """One guest booted with clocksource=CLOCKSOURCE, its sshd forwarded
    from 127.0.0.1:PORT; returns once it answers."""
    return start_guests([(clocksource, port)], public_key, folder, languages, memory, bound_s)[0]


def bundle(folder: Path, languages: tuple[str, ...] = LANGUAGES) -> Path:
    """A clockbench-os bundle folder made from this build: the static
    program with lang/ beside it holding the probes of these languages."""
    from clockbench.machines import runtimes  # tests' conftest puts tools/ on the path
    out = folder / "clockbench-os-bundle"
    (out / "lang").mkdir(parents=True, exist_ok=True)
    program = BUILD / "os" / "clockbench-os"
    (out / "clockbench-os").write_bytes(program.read_bytes())
    (out / "clockbench-os").chmod(0o755)
    for lang in languages:
        for name in runtimes.PROBES[lang]:
            src = LANG_DIR / name
            subprocess.run(["cp", "-a", str(src), str(out / "lang" / name)], check=True, timeout=60)
    return out


@contextmanager
def running_guests(specs: list[tuple[str, int]], public_key: Path, folder: Path | None = None,
                   languages: tuple[str, ...] = LANGUAGES, memory: str = "1G"):
    """start_guests() for a with-block: every guest stopped at its end, however it ends."""
    guests = start_guests(specs, public_key, folder, languages, memory)
    try:
        yield guests
    finally:
        for g in guests:
            g.stop()
