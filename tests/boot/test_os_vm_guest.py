"""An os-vm guest whose sshd cannot answer within its bound
(`clockbench os-vm --ssh`, issue 43, section 4): one error line, its QEMU
gone; a port in use refused before anything boots.

What a guest that does come up must be (reached by OpenSSH's client and by
Ansible on the clocksource it was booted with, the bundle copied in, run
and its log fetched, `poweroff` ending it and nothing left running) is held
by tests/fleet/test_hosts_guests.py on its two guests, hpet and acpi_pm,
which had a third guest of their own here (40 s of the quiet lane); Go's
time.Now at two system calls a call and every other API at one on hpet by
tests/boot/test_os_vm_lang.py. The helper (tests/helpers/guests.py) boots
them all."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import pytest

from helpers.guests import ssh_keypair
from helpers.paths import BUILD
from helpers.ports import free_port
from helpers.tool import need_tool, tool_env

# Not `timed`: its QEMU lives 2 s and measures nothing


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    if not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        need_tool("OpenSSH's client (openssh-client)", False)
    return ssh_keypair(tmp_path_factory.mktemp("guest-keys"))


def test_a_guest_that_does_not_come_up_is_a_clear_error(keys, tmp_path):
    """A boot bound too short for Linux: one error line, exit 71, its QEMU
    gone; a port in use is refused before anything boots (exit 69)."""
    port = free_port()
    log = tmp_path / "serial.log"
    r = subprocess.run([sys.executable, "-m", "clockbench", "os-vm", "--accel", "tcg", "--ssh", f"127.0.0.1:{port}",
                        "--authorized-key", str(keys[1]), "--lang", "go,python", "--lang-dir", str(BUILD / "lang"),
                        "--log", str(log), "--boot-timeout", "2"], capture_output=True, text=True, timeout=300,
                       env=tool_env())
    assert r.returncode == 71, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert f"did not answer on 127.0.0.1:{port} within 2 s (QEMU killed)" in r.stdout + r.stderr, r.stdout + r.stderr
    ps = subprocess.run(["pgrep", "-f", f"hostfwd=tcp:127.0.0.1:{port}-"], capture_output=True, text=True)
    assert ps.stdout.strip() == "", ps.stdout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "clockbench", "os-vm", "--ssh", f"127.0.0.1:{busy}", "--authorized-key",
                            str(keys[1])], capture_output=True, text=True, timeout=60, env=tool_env())
    assert r.returncode == 69 and f"127.0.0.1:{busy} is in use" in r.stdout + r.stderr, (r.returncode, r.stdout, r.stderr)
