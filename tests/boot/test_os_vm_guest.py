"""An os-vm guest as a Linux host reached over ssh (`clockbench os-vm --ssh`,
issue 43, section 4), for real: Debian's kernel booted under TCG with
clocksource=hpet, its dropbear reached through QEMU's hostfwd on 127.0.0.1
by OpenSSH's client and by Ansible, a clockbench-os bundle (the static
program and lang/ beside it) copied in and run with --current-only, and its
log read back:

- the `os` record names the clocksource the kernel was booted with, hpet;
- Go's time.Now is a system call there (x86-64 Linux has no vDSO mode on
  the HPET): two per call (CLOCK_REALTIME, then CLOCK_MONOTONIC), 2000 per
  1000, and a few more of Go's scheduler's own (up to 5 %, as
  test_os_vm_lang.py allows);
- Python's time.monotonic_ns one per call.

Then the guest powers off when asked and nothing is left running; a guest
whose sshd cannot answer within its bound is a clear error, its QEMU gone.
The helper (tests/helpers/guests.py) is the one a fleet's test boots its
guests with."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time

import pytest

from helpers.guests import bundle, ssh_keypair, start_guest
from helpers.paths import BUILD
from helpers.ports import free_port
from helpers.tool import need_tool, tool_env

from clockbench.records import records

# Not `timed`: it counts system calls and reads names, which a busy host does
# not move; one worker boots the guest once for every test here.
# in the quiet lane, one at a time: its TCG guests beside the timed KVM tests
# made those see their vCPU away for seconds (test_stalls' baseline)
pytestmark = pytest.mark.timed

PROGRAM = BUILD / "os" / "clockbench-os"
RUN_BOUND_S = 240  # clockbench-os --current-only, Go and Python, 2000 calls: about 30 s under TCG here
LANG_CALLS = 2000


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    if not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        need_tool("OpenSSH's client (openssh-client)", False)
    return ssh_keypair(tmp_path_factory.mktemp("guest-keys"))


@pytest.fixture(scope="module")
def guest(keys, tmp_path_factory):
    for path, what in ((PROGRAM, "`make os`"), (BUILD / "lang" / "probe-go", "`make lang`"),
                       (BUILD / "lang" / "probe.py", "`make lang`")):
        if not path.exists():
            pytest.fail(f"{path} is missing: {what} builds it")
    need_tool("dropbear (dropbear-bin)", shutil.which("dropbear") or shutil.which("/usr/sbin/dropbear"))
    need_tool("busybox (busybox-static)", shutil.which("busybox"))
    g = start_guest("hpet", free_port(), keys[1], folder=tmp_path_factory.mktemp("guest"))
    yield g
    said = g.stop()
    assert g.proc.returncode in (0, 130) and "powered off" in said, (said, g.explain())
    left = subprocess.run(["pgrep", "-f", f"hostfwd=tcp:127.0.0.1:{g.port}-"], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"a QEMU is left running: {left.stdout}"


@pytest.fixture(scope="module")
def run(guest, keys, tmp_path_factory):
    """The bundle copied in (tar over ssh: busybox's tar there) and run."""
    folder = bundle(tmp_path_factory.mktemp("bundle"), ("go", "python"))
    pack = subprocess.run(["tar", "-C", str(folder.parent), "-cf", "-", folder.name], capture_output=True, check=True,
                          timeout=60).stdout
    r = guest.ssh(keys[0], "mkdir -p /tmp/cb && tar -C /tmp/cb -xf -", stdin=pack)
    assert r.returncode == 0, (r.stderr.decode(errors="replace"), guest.explain())
    start = time.monotonic()
    r = guest.ssh(keys[0], f"cd /tmp/cb/{folder.name} && timeout {RUN_BOUND_S} ./clockbench-os --current-only "
                  f"--lang go,python --lang-calls {LANG_CALLS}", timeout=RUN_BOUND_S + 60)
    took = time.monotonic() - start
    text = r.stdout.decode(errors="replace")
    explain = f"exit {r.returncode} after {took:.0f} s\n{text[-3000:]}\n{r.stderr.decode(errors='replace')[-1000:]}"
    assert r.returncode == 0, explain
    return {"records": records.parse_log(text).records, "explain": explain}


def test_ssh_reaches_the_guest_on_its_clocksource(guest, keys):
    r = guest.ssh(keys[0], "cat /sys/devices/system/clocksource/clocksource0/current_clocksource; hostname; "
                  "cat /proc/cmdline; id -u")
    out = r.stdout.decode().split("\n")
    assert r.returncode == 0, (r.stderr, guest.explain())
    assert out[0] == "hpet" and out[1] == guest.hostname and "clocksource=hpet" in out[2] and out[3] == "0", out


def test_the_os_record_says_hpet(run):
    os_rec = next((r for r in run["records"] if r.get("type") == "os"), None)
    assert os_rec is not None, run["explain"]
    assert os_rec["clocksource"] == "hpet", os_rec
    assert "hpet" in os_rec["available_clocksources"].split(), os_rec


def test_go_time_now_is_two_system_calls_there(run):
    lang = {(r["language"], r["api"]): r for r in run["records"] if r.get("type") == "lang_clock"}
    now = lang.get(("go", "time.Now"))
    assert now is not None, (sorted(lang), run["explain"])
    assert now["clocksource"] == "hpet" and now["path"] == "syscall", now
    assert 2000 <= now["clock_syscalls_per_1000"] <= 2000 * 1.05, now
    mono = lang.get(("python", "monotonic_ns"))
    assert mono is not None and mono["path"] == "syscall" and mono["clock_syscalls_per_1000"] == 1000, mono


def test_ansible_reaches_it_copies_and_fetches(guest, keys, tmp_path):
    """Ansible's ping (its python3 there), copy (sftp) and fetch, as a
    fleet's playbook uses them."""
    need_tool("ansible-core", shutil.which("ansible"))
    hostvars = " ".join(f"{k}='{v}'" for k, v in guest.inventory_vars(keys[0]).items())
    inventory = tmp_path / "inventory"
    inventory.write_text(f"[guests]\n{guest.hostname} {hostvars}\n")
    env = {**tool_env(), "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "at"),
           "ANSIBLE_REMOTE_TEMP": "/tmp/.ansible"}

    def ansible(*args: str) -> str:
        r = subprocess.run(["ansible", "-i", str(inventory), "all", "-o", *args], capture_output=True, text=True,
                           timeout=180, env=env)
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
        return r.stdout

    assert '"ping": "pong"' in ansible("-m", "ping")
    (tmp_path / "hello.txt").write_text("clockbench\n")
    ansible("-m", "copy", "-a", f"src={tmp_path / 'hello.txt'} dest=/tmp/hello.txt")
    ansible("-m", "fetch", "-a", f"src=/tmp/hello.txt dest={tmp_path / 'back'}/ flat=yes")
    assert (tmp_path / "back" / "hello.txt").read_text() == "clockbench\n"


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


def test_poweroff_in_the_guest_ends_it(guest, keys):
    """Last, as it ends the module's guest: `poweroff` run over ssh (busybox's,
    which signals init) powers the machine off, and the tool ends with 0."""
    guest.ssh(keys[0], "poweroff", timeout=60)
    try:
        guest.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the guest did not power off within 60 s of `poweroff`:\n{guest.explain()}")
    assert guest.proc.returncode == 0, guest.explain()
    assert "the guest powered off (QEMU status 0)" in guest.output.read_text(), guest.explain()
