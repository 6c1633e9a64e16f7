"""Real ssh hosts for `clockbench hosts` and ansible/clockbench-os.yml: each
an OpenSSH sshd of its own (`sshd -D -f CONFIG`) with its own host key,
listening on a loopback address 127.0.0.x only, taking one key generated
here; an Ansible inventory of them; and the bundle the playbook copies.

    fleet = SshFleet(tmp_path)
    fleet.start("a", "127.0.0.2")
    fleet.start("nojava", "127.0.0.5", hide=[jdk_folder])    # a mount namespace where the JDK is an empty tmpfs
    fleet.unreachable("gone", "127.0.0.6")                    # an address and port where nothing listens
    fleet.add("vm-hpet", "127.0.0.1", 10022)                  # any ssh host: an os-vm guest through QEMU's hostfwd
    inventory = fleet.inventory(["a", "gone"], slow={"clockbench_timeout_s": 2})
    fleet.close()

A host added with add() must take fleet.user_key's public half
(fleet.user_key.with_suffix(".pub")) for fleet.user; its inventory line
says ansible_host, ansible_port and the key, like the others'.

The sshd servers run as this user (root here: the tests run as root), with
StrictModes off (the keys live in pytest's folders) and no PAM."""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
START_S = 15


def need_tools() -> None:
    """sshd and ansible-playbook come with `make deps`: missing is a failure, never a skip."""
    import pytest

    for what, path, package in (("sshd", SSHD, "openssh-server"), ("ssh-keygen", SSH_KEYGEN, "openssh-client"),
                                ("ansible-playbook", shutil.which("ansible-playbook"), "ansible-core")):
        if not path or not os.access(path, os.X_OK):
            pytest.fail(f"{what} is not installed (Debian: {package}; `make deps` installs it)")


def free_port(address: str) -> int:
    """A TCP port on address that nothing listens on now."""
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> Path:
    subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True, timeout=30)
    return path


@dataclass
class Host:
    name: str
    address: str
    port: int
    proc: subprocess.Popen | None = None  # None: added (a guest), or where nothing listens
    vars: dict = field(default_factory=dict)


class SshFleet:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.user = getpass.getuser()
        self.user_key = _keygen(root / "user_key")
        self.hosts: dict[str, Host] = {}
        self.bundle: Path | None = None  # the bundle the tests copy: bundle() below

    def start(self, name: str, address: str, hide: list[Path] = (), **vars) -> Host:
        """An sshd on address (127.0.0.x) and a free port of it, started and
        answering; hide: folders that this host lacks (each an empty tmpfs in
        a mount namespace of the sshd's own, so its sessions see them empty)."""
        d = self.root / name
        d.mkdir()
        _keygen(d / "host_key")
        shutil.copy(self.user_key.with_suffix(".pub"), d / "authorized_keys")
        port = free_port(address)
        (d / "sshd_config").write_text("\n".join([
            f"ListenAddress {address}:{port}", f"HostKey {d / 'host_key'}", f"AuthorizedKeysFile {d / 'authorized_keys'}",
            "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", "PidFile none", "Subsystem sftp internal-sftp", "PrintMotd no",
            "MaxStartups 50", "LogLevel ERROR", ""]))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        argv = [SSHD, "-D", "-e", "-f", str(d / "sshd_config")]
        if hide:
            script = "".join(f'mount -t tmpfs -o size=1m clockbench-hidden {shlex.quote(str(p))} && ' for p in hide)
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script + 'exec "$@"', "sh", *argv]
        log = (d / "sshd.log").open("w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        host = self.hosts[name] = Host(name, address, port, proc, vars)
        deadline = time.monotonic() + START_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"sshd for {name} on {address}:{port} ended ({proc.returncode}): {self.log(name)}")
            try:
                with socket.create_connection((address, port), timeout=1) as s:
                    s.settimeout(2)
                    if s.recv(4).startswith(b"SSH-"):
                        return host
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"sshd for {name} on {address}:{port} did not answer in {START_S} s: {self.log(name)}")
            time.sleep(0.1)

    def add(self, name: str, address: str, port: int, **vars) -> Host:
        """Any ssh host that takes self.user_key for self.user: an os-vm
        guest through QEMU's hostfwd on 127.0.0.1, say."""
        host = self.hosts[name] = Host(name, address, port, None, vars)
        return host

    def unreachable(self, name: str, address: str) -> Host:
        """An inventory entry where nothing listens."""
        return self.add(name, address, free_port(address))

    def log(self, name: str) -> str:
        p = self.root / name / "sshd.log"
        return p.read_text(errors="replace") if p.is_file() else ""

    def inventory(self, names: list[str] | None = None, path: Path | None = None, **host_vars: dict) -> Path:
        """An INI inventory of these hosts (all, or names), in one group
        with the connection settings; host_vars: NAME={var: value} for a
        host's own settings (clockbench_timeout_s, clockbench_os_wrapper ...)."""
        path = path or self.root / f"inventory-{len(list(self.root.glob('inventory-*')))}.ini"
        lines = ["[clockbench_test_hosts]"]
        for name in names or list(self.hosts):
            h = self.hosts[name]
            given = {"ansible_host": h.address, "ansible_port": h.port, **h.vars, **host_vars.get(name, {})}
            lines.append(name + "".join(f" {k}={shlex.quote(str(v))}" for k, v in given.items()))
        lines += ["", "[clockbench_test_hosts:vars]", f"ansible_user={self.user}",
                  f"ansible_ssh_private_key_file={self.user_key}",
                  "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10'",
                  "ansible_python_interpreter=/usr/bin/python3", ""]
        path.write_text("\n".join(lines))
        return path

    def close(self) -> None:
        for h in self.hosts.values():
            if h.proc is not None and h.proc.poll() is None:
                try:
                    os.killpg(h.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    h.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(h.proc.pid, signal.SIGKILL)
                    h.proc.wait(timeout=10)


def ansible_env(root: Path) -> dict[str, str]:
    """ansible-playbook's settings for a test: its ssh masters in a folder of
    the test's, kept 5 s (Ansible's 60 s would outlive the test's sshd);
    pipelining, which sends each step's module down the connection it has
    (no temporary file per step: about a second less a step here)."""
    cp = root / "cp"
    cp.mkdir(parents=True, exist_ok=True)
    return {"ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp), "ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto -o ControlPersist=5s",
            "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "True", "ANSIBLE_PIPELINING": "True"}


# The bundle: `make bundle`'s, which `make test` makes before the tests start
# (no test runs make itself: two at once would rewrite build/bundle/ under each other).
def bundle(root: Path, repo: Path, build: Path) -> Path:
    """This version's bundle, copied into root."""
    version = (build / "version.txt").read_text().strip()
    made = build / "bundle" / f"clockbench-os-{version}-x86_64-linux.tar.gz"
    assert made.is_file(), f"{made} is missing: `make bundle` makes it (`make test` does, before the tests)"
    copy = root / made.name
    shutil.copyfile(made, copy)
    return copy


# What the tests of `clockbench hosts` share (test_hosts.py; a test of os-vm
# guests beside the loopback hosts adds them with SshFleet.add and calls these)
OS_ARGS = "--quick --lang go,python --lang-calls 500"  # a run of 4-6 s here, on the current clocksource (the default)
RUN_S = 300  # the bound on any one `clockbench hosts`


def run_hosts(fleet: SshFleet, folder: Path, inventory: Path, *extra: str, os_args: str = OS_ARGS,
              timeout: float = RUN_S) -> subprocess.CompletedProcess:
    """`clockbench hosts` as a user types it, with the fleet's bundle, the
    store folder/runs.db and the logs in folder/out."""
    from helpers.tool import PYTHON, tool_env

    return subprocess.run([PYTHON, "-m", "clockbench", "hosts", "-i", str(inventory), "--bundle", str(fleet.bundle),
                           f"--os-args={os_args}", "--store", str(folder / "runs.db"), "--out", str(folder / "out"),
                           "--forks", "4", *extra], capture_output=True, text=True, timeout=timeout,
                          env=tool_env(**ansible_env(folder)))


def recap_line(out: str, host: str) -> str:
    """The host's recap line, with the lines under it (a runtime missing:
    they start with blanks where the hosts' names stand)."""
    lines = out.splitlines()
    i = next((i for i, line in enumerate(lines) if line.startswith(f"  {host} (")), None)
    assert i is not None, f"no recap line for {host}:\n{out}"
    said = [lines[i]]
    for line in lines[i + 1:]:
        if not line.startswith("   "):
            break
        said.append(line)
    return "\n".join(said)


def stored(db: Path) -> dict:
    """The store's runs by machine."""
    from clockbench.runs import store

    with store.open_store(db, create=False) as st:
        return {r["machine"]: r for r in st.runs()}


def fleet_json(db: Path) -> dict:
    """`fleet --json -`'s whole table, with the Linux hosts' section."""
    import json

    from helpers.tool import PYTHON, tool_env

    r = subprocess.run([PYTHON, "-m", "clockbench", "fleet", "--json", "-", "--store", str(db)], capture_output=True,
                       text=True, timeout=120, env=tool_env())
    assert r.returncode == 0 and r.stdout.strip(), f"status {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    table = json.loads(r.stdout)
    assert table.get("os_hosts"), table.keys()
    return table


def fleet_rows(db: Path, table: dict | None = None) -> dict:
    """`fleet --json -`'s Linux hosts (its os_hosts rows), by machine."""
    table = table or fleet_json(db)
    return {row["machine"]: row for row in table["os_hosts"]["rows"]}
