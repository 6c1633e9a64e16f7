"""A Linux host that stays up and is reached over ssh: `clockbench os-vm
--ssh` (issue 43, section 4). Debian's kernel boots in the image's QEMU
machine with an initramfs whose /init is a shell script (INIT below) that
mounts proc, sys, devtmpfs and tmpfs, loads the NIC's driver from the
kernel package (modules below), brings up QEMU's user network
(10.0.2.15/24 through 10.0.2.2), starts dropbear on port 22 (root, by key
only; host keys made at the first connection, -R) and waits. QEMU forwards
127.0.0.1:PORT on this machine to it (hostfwd), so ssh, scp and Ansible
reach it as they reach any host, and a clockbench-os bundle copied in
measures the guest's kernel on the clocksource given with --append.

In the archive besides /init, each at its own path as runtimes.py places
them (links kept as links, the host's /bin -> usr/bin too):
- Debian's busybox-static with a link per applet (sh, mount, ip, tar,
  gzip, dd, timeout, ...); GNU tar too, for Ansible's unarchive wants it;
- dropbear (dropbear-bin) with the libraries ldd names, OpenSSH's
  sftp-server where dropbear looks for it (/usr/lib/sftp-server) and scp,
  for Ansible's file transfers;
- Debian's python3 with its standard library but the parts no module of
  Ansible's needs (PYTHON_LEFT_OUT), lib-dynload's libraries through ldd;
- the languages' runtimes as os-vm packs them (runtimes.py), without the
  probes: the bundle copied in brings its own;
- /etc/passwd and /etc/group with root alone (home /root, shell /bin/sh).

What differs between guests (the authorized keys, the host name) is not in
the archive: QEMU hands it in as fw_cfg files (-fw_cfg name=opt/clockbench/..),
which /init reads under /sys/firmware/qemu_fw_cfg, so every guest boots the
same archive. The machine powers off when "poweroff" comes on its serial
port (what Guest.stop writes) or when `poweroff` runs in it; every wait here
has a bound, and QEMU is killed when one runs out."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from clockbench import errors
from clockbench.machines import qemu, runtimes

# QEMU's user networking: the guest's address and its gateway (QEMU's
# defaults for -netdev user), and the NIC: e1000, whose driver Debian builds
# as a module with no dependencies (virtio_net needs five more).
GUEST_ADDR = "10.0.2.15/24"
GATEWAY = "10.0.2.2"
NIC = "e1000"
# Kernel modules the guest loads, in order: the NIC's driver, and the fw_cfg
# files' (qemu_fw_cfg, a module in Debian's kernel).
MODULES = ("e1000", "qemu_fw_cfg")
MODULES_DIR = "usr/lib/modules/clockbench"  # in the guest (/lib is a link to usr/lib there, as here)
FW_CFG = "opt/clockbench"  # the fw_cfg names' prefix; QEMU wants "opt/" for names of one's own
# The programs the guest is made of, from Debian's packages on this machine.
HOST_PROGRAMS = {
    "busybox": ("/bin/busybox", "busybox-static"),
    "dropbear": ("/usr/sbin/dropbear", "dropbear-bin"),
    "python3": ("/usr/bin/python3", "python3"),
}
OPTIONAL_PROGRAMS = {  # each missing one is said, and the guest boots without it
    "/usr/lib/openssh/sftp-server": ("usr/lib/sftp-server", "openssh-sftp-server", "Ansible's sftp transfers"),
    "/usr/bin/scp": ("usr/bin/scp", "openssh-client", "scp to the guest"),
    "/usr/bin/tar": ("usr/bin/tar", "tar", "Ansible's unarchive (it wants GNU tar)"),
}
# Python's standard library but what no Ansible module and no probe uses;
# the site's add-on packages stay out as in runtimes.py.
PYTHON_LEFT_OUT = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "dist-packages",
                   "site-packages", "distutils"}
PYTHON_LEFT_OUT_PREFIX = ("config-",)  # config-3.11-x86_64-linux-gnu: libpython's static archive, for building
PYTHON_LEFT_OUT_FILES = ("_tkinter.",)  # lib-dynload's Tk binding: 11 MB of X libraries through ldd, and tkinter is out
# The glibc's locale Ansible asks its modules to run under.
LOCALES = ("/usr/lib/locale/C.utf8",)
SSH_BANNER = b"SSH-"
BOOT_BOUND_S = 120  # QEMU's start to sshd's banner; about 10-20 s under TCG here
STOP_BOUND_S = 20  # "poweroff" on the serial port to QEMU's exit
POLL_S = 0.25
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

PASSWD = "root:x:0:0:root:/root:/bin/sh\n"
GROUP = "root:x:0:\n"
SHELLS = "/bin/sh\n"
OS_RELEASE = ('PRETTY_NAME="clockbench os-vm guest"\nNAME="clockbench os-vm guest"\nID=clockbench-guest\nID_LIKE=debian\n'
              'HOME_URL="https://github.com/clockbench"\n')

INIT = r"""#!/bin/sh
# /init of a clockbench os-vm guest (tools/clockbench/machines/guest.py):
# a Linux host reached over ssh, until "poweroff" comes on the console.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
say() { echo "clockbench-guest: $*" > /dev/console; }
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
for m in $(cat /@MODULES@/order 2>/dev/null); do
    insmod /@MODULES@/$m.ko || say "insmod $m failed"
done
cfg=/sys/firmware/qemu_fw_cfg/by_name/@FW_CFG@
name=$(cat $cfg/hostname/raw 2>/dev/null)
hostname "${name:-os-vm-guest}"
hostname > /etc/hostname
tr -d - < /proc/sys/kernel/random/uuid > /etc/machine-id
mkdir -p /root/.ssh /etc/dropbear
chmod 700 /root/.ssh
cat $cfg/authorized_keys/raw > /root/.ssh/authorized_keys 2>/dev/null || say "no authorized keys given: nobody can log in"
chmod 600 /root/.ssh/authorized_keys
ip link set lo up
ip link set eth0 up && ip addr add @ADDR@ dev eth0 && ip route add default via @GATEWAY@ || say "no network: eth0 did not come up"
# -R: host keys made at the first connection; -s: no password logins; -F -E:
# in the foreground of its own, logging on the console
dropbear -R -s -F -E -p 22 &
say "up: $(hostname), sshd on port 22, kernel $(uname -r), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource), $(cut -d' ' -f1 /proc/uptime) s after the kernel started"
# busybox's poweroff, reboot and halt (sh runs its own applets before PATH's)
# signal init: USR2, TERM, USR1; read's bound lets the trap run
trap 'exec /usr/sbin/poweroff' USR1 USR2 TERM
while :; do
    line=
    read -r -t 1 line
    [ "$line" = poweroff ] && break
done
exec /usr/sbin/poweroff
"""

POWEROFF = r"""#!/bin/sh
# poweroff, reboot and halt in a clockbench os-vm guest: every process asked
# to end, then the machine off (QEMU, started with -no-reboot, exits).
exec > /dev/console 2>&1 < /dev/null
echo "clockbench-guest: $(basename "$0")"
kill -TERM -1 2>/dev/null
sleep 1
sync
exec busybox poweroff -f
"""


def init_script() -> str:
    return (INIT.replace("@MODULES@", MODULES_DIR).replace("@FW_CFG@", FW_CFG).replace("@ADDR@", GUEST_ADDR)
            .replace("@GATEWAY@", GATEWAY))


def _missing(program: str, package: str) -> errors.MissingTool:
    return errors.MissingTool(f"os-vm --ssh: no {program} on this machine, which the guest is made of "
                              f"(apt install {package}, or run `make deps`)")


# --- the kernel's modules ----------------------------------------------------

def kernel_release(vmlinuz: Path) -> str | None:
    """The release of a Debian kernel fetched by os-vm, from its name
    (vmlinuz-6.1.0-56-amd64); None for another name."""
    return vmlinuz.name[len("vmlinuz-"):] if vmlinuz.name.startswith("vmlinuz-") else None


def module_depends(ko: Path) -> list[str]:
    """The modules a .ko needs first: its .modinfo's "depends=" (what
    modinfo -F depends prints), read without modinfo."""
    m = re.search(rb"(?:^|\0)depends=([^\0]*)\0", ko.read_bytes())
    return [d for d in m.group(1).decode().split(",") if d] if m else []


def load_order(names: tuple[str, ...], found: dict[str, Path]) -> list[str]:
    """The modules to load, each after those it depends on."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise errors.BadInput(f"kernel modules depend on each other in a circle: {' -> '.join(path + (name,))}")
        if name not in found:
            raise errors.NoInput(f"the kernel package holds no module {name}.ko")
        for dep in module_depends(found[name]):
            visit(dep.replace("-", "_"), path + (name,))
        order.append(name)

    for n in names:
        visit(n, ())
    return order


def fetch_modules(vmlinuz: Path, linux_dir: Path, names: tuple[str, ...] = MODULES) -> list[Path]:
    """The modules, with the modules they depend on, in load order, for the
    kernel os-vm fetched: kept in build/linux/modules-RELEASE/ (os-vm keeps
    them when it fetches the kernel; for a kernel fetched before, they are
    taken once from its package, apt-get download linux-image-RELEASE)."""
    release = kernel_release(vmlinuz)
    if release is None:
        raise errors.NoInput(f"{vmlinuz}: not a kernel os-vm fetched (vmlinuz-RELEASE), so its modules are unknown")
    kept = linux_dir / f"modules-{release}"
    try:
        order = (kept / "order").read_text().split()
        if set(names) <= set(order) and all((kept / f"{n}.ko").is_file() for n in order):
            return [kept / f"{n}.ko" for n in order]
    except OSError:
        pass
    package = f"linux-image-{release}"
    tmp = linux_dir / f".modules-deb-{release}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        print(f"clockbench os-vm: fetching the kernel's modules, package {package} (about 70 MB; kept: a few files "
              f"in {kept}/)", flush=True)
        try:
            r = subprocess.run(["apt-get", "download", package], cwd=tmp, capture_output=True, text=True, timeout=600)
        except FileNotFoundError:
            raise errors.MissingTool("apt-get not found: os-vm --ssh takes the NIC's module from Debian's kernel package") from None
        debs = list(tmp.glob(f"{package}_*.deb"))
        if r.returncode != 0 or len(debs) != 1:
            last = [l for l in (r.stderr or r.stdout).strip().split("\n") if l.strip() and "_apt" not in l]
            raise errors.NoInput(f"`apt-get download {package}` failed ({last[-1] if last else 'no message'}); if apt "
                                 f"no longer has it, delete {linux_dir}/ for the current kernel")
        return keep_modules(debs[0], release, linux_dir, names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def keep_modules(deb: Path, release: str, linux_dir: Path, names: tuple[str, ...] = MODULES) -> list[Path]:
    """From the kernel's package: the modules and what they depend on, kept
    in linux_dir/modules-RELEASE/ with their load order (the file `order`)."""
    kept = linux_dir / f"modules-{release}"
    tmp = linux_dir / f".modules-{release}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        try:
            dpkg = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        except FileNotFoundError:
            raise errors.MissingTool("dpkg-deb not found: the kernel's modules come from its Debian package") from None
        tar = subprocess.run(["tar", "-x", "--wildcards", "-C", str(tmp), "./lib/modules/*.ko"], stdin=dpkg.stdout,
                             capture_output=True, text=True)
        dpkg.stdout.close()
        dpkg_err = dpkg.stderr.read().decode(errors="replace")
        dpkg.wait()
        mods = tmp / "lib" / "modules"
        found = {p.name[:-3].replace("-", "_"): p for p in mods.rglob("*.ko")} if mods.is_dir() else {}
        if dpkg.returncode != 0 or tar.returncode != 0 or not found:
            raise errors.BadInput(f"{deb.name}: no kernel modules could be read from it ({(dpkg_err + tar.stderr).strip()[-200:]})")
        order = load_order(names, found)
        new = tmp / "kept"
        new.mkdir()
        for n in order:
            shutil.copyfile(found[n], new / f"{n}.ko")
        (new / "order").write_text("\n".join(order) + "\n")
        shutil.rmtree(kept, ignore_errors=True)
        try:
            new.rename(kept)
        except OSError:  # another os-vm kept them first
            if not all((kept / f"{n}.ko").is_file() for n in order):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [kept / f"{n}.ko" for n in order]


# --- the archive -------------------------------------------------------------

def _busybox_links(busybox: Path) -> dict[str, str]:
    """A link per applet at the path busybox names for it, under usr/ as
    Debian's merged /usr has them (bin -> usr/bin)."""
    r = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True, timeout=30)
    links = {}
    for line in r.stdout.split("\n"):
        line = line.strip()
        if "/" not in line:
            continue
        name = line if line.startswith("usr/") else f"usr/{line}"
        links[name] = "/usr/bin/busybox"
    if not links:
        raise errors.BadInput(f"{busybox} --list-full names no applets")
    return links


def _python_stdlib(tree: runtimes.Tree, python: Path) -> None:
    """The standard library of the python3 the guest runs, but PYTHON_LEFT_OUT."""
    r = subprocess.run([str(python), "-S", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                       capture_output=True, text=True, timeout=30)
    stdlib = Path(r.stdout.strip())
    if r.returncode != 0 or not (stdlib / "os.py").is_file():
        raise errors.BadInput(f"{python} names no standard library with os.py in it ({r.stderr.strip()[-200:]})")
    tree.add_host(stdlib)  # the folder at its own path, and any link to it
    real = Path(os.path.realpath(stdlib))
    for dirpath, dirnames, filenames in os.walk(real):
        at = Path(dirpath)
        if at == real:
            dirnames[:] = [d for d in dirnames if d not in PYTHON_LEFT_OUT and not d.startswith(PYTHON_LEFT_OUT_PREFIX)]
        for f in filenames:
            p = at / f
            if (p.suffix == ".pyc" and ".opt-" in p.name) or p.name.startswith(PYTHON_LEFT_OUT_FILES):
                continue
            if p.is_file() and not p.is_symlink():
                tree.add_as(str(p)[1:], p)
            elif p.is_symlink():
                tree.links[str(p)[1:]] = os.readlink(p)


def _elves(tree: runtimes.Tree) -> list[Path]:
    return [p for p in tree.files.values() if runtimes._is_elf(p)]


@dataclass
class Built:
    tree: runtimes.Tree
    languages: list[str]
    left_out: dict[str, str]  # a language or a program -> why
    init: bytes = field(default_factory=lambda: init_script().encode())


def build_tree(languages: list[str], lang_dir: Path, cache: Path, modules: list[Path]) -> Built:
    """Everything the guest holds besides /init (INIT)."""
    for program, package in HOST_PROGRAMS.values():
        if not Path(program).is_file():
            raise _missing(program, package)
    cache = cache.resolve()
    gen = cache / "guest"
    gen.mkdir(parents=True, exist_ok=True)
    got = runtimes.collect(languages, lang_dir, cache) if languages else runtimes.Collected(runtimes.Tree(), [], {})
    tree = runtimes.Tree()
    for name, host in got.tree.files.items():
        if not name.startswith("lang/"):  # the probes come with the bundle
            tree.files[name] = host
    tree.links.update(got.tree.links)
    tree.dirs |= got.tree.dirs
    left_out = dict(got.left_out)

    busybox = Path(HOST_PROGRAMS["busybox"][0])
    tree.add_host(busybox)
    tree.add_host(HOST_PROGRAMS["dropbear"][0])
    python = Path(HOST_PROGRAMS["python3"][0])
    tree.add_host(python)
    _python_stdlib(tree, python)
    for host, (name, package, why) in OPTIONAL_PROGRAMS.items():
        if Path(host).is_file():
            tree.add_as(name, Path(host))
        else:
            left_out[Path(host).name] = f"no {host} (apt install {package}): without it, no {why}"
    for loc in LOCALES:
        if Path(loc).is_dir():
            tree.add_host(loc)
            for p in Path(loc).rglob("*"):
                if p.is_file():
                    tree.add_host(p)
    for lib in runtimes.shared_libraries(_elves(tree)):
        tree.add_host(lib)
    for ko in modules:
        tree.add_as(f"{MODULES_DIR}/{ko.name}", ko)
    generated = {"etc/passwd": PASSWD, "etc/group": GROUP, "etc/shells": SHELLS, "etc/os-release": OS_RELEASE,
                 "usr/sbin/poweroff": POWEROFF,
                 f"{MODULES_DIR}/order": "".join(f"{ko.name[:-3]}\n" for ko in modules)}
    for name, text in generated.items():
        path = gen / name.replace("/", "_")
        if not path.is_file() or path.read_text() != text:  # written aside and renamed: guests built at once
            tmp = path.with_name(f".{path.name}.{os.getpid()}")  # never read half a file
            tmp.write_text(text)
            tmp.chmod(0o755 if text.startswith("#!") else 0o644)
            os.replace(tmp, path)
        tree.add_as(name, path)
    tree.links["usr/sbin/reboot"] = "poweroff"
    tree.links["usr/sbin/halt"] = "poweroff"
    for name, target in _busybox_links(busybox).items():
        if name not in tree.files and name not in tree.links:
            tree.links[name] = target
    tree.dirs |= {"root", "etc/dropbear", "var", "run", "tmp"}
    return Built(tree, got.measured, left_out)


# --- the machine -------------------------------------------------------------

def parse_ssh(text: str) -> int:
    """--ssh 127.0.0.1:PORT (or PORT alone): the port on this machine's
    loopback that QEMU forwards to the guest's sshd. Only 127.0.0.1: a
    guest whose root login is a key away is not offered to the network."""
    host, _, port = text.rpartition(":")
    if host not in ("", "127.0.0.1", "localhost"):
        raise errors.UsageError(f"--ssh {text}: the guest listens on 127.0.0.1 only (give 127.0.0.1:PORT)")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise errors.UsageError(f"--ssh {text}: not a port (give 127.0.0.1:PORT, PORT from 1 to 65535)")
    return int(port)


def read_keys(path: Path) -> str:
    """The public keys in an authorized_keys or .pub file, checked: one key
    a line, never a private key."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise errors.NoInput(f"--authorized-key {path}: cannot be read ({getattr(e, 'strerror', None) or e})") from None
    if "PRIVATE KEY" in text:
        raise errors.BadKey(f"--authorized-key {path} is a private key: give its .pub")
    keys = [l.strip() for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#")]
    if not keys or not all(re.match(r"^(\S+ )?(ssh-|ecdsa-|sk-)\S+ [A-Za-z0-9+/=]+", k) for k in keys):
        raise errors.BadInput(f"--authorized-key {path}: not an OpenSSH public key (ssh-ed25519 AAAA... a line)")
    return "\n".join(keys) + "\n"


def port_free(port: int) -> bool:
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def ssh_banner(port: int, timeout: float = 3.0) -> bytes | None:
    """The first bytes the guest's sshd sends on 127.0.0.1:PORT, or None.
    QEMU's user network accepts a forwarded connection before the guest
    answers it (and closes it when nothing listens there), so only a
    banner says sshd is up."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            data = s.recv(64)
            return data if data.startswith(SSH_BANNER) else None
    except OSError:
        return None


@dataclass
class GuestConfig:
    kernel: Path
    initramfs: Path
    port: int
    authorized_keys: str
    hostname: str
    cmdline: str = "console=ttyS0,115200"  # the kernel's whole command line (os-vm's, with --append's clocksource=hpet)
    log: Path = Path("build/os-vm-guest.log")  # the serial port
    accel: str = "tcg"
    machine: str = "q35"
    cpu: str | None = None
    smp: int = 1
    memory: str = "1G"
    firmware: str = "bios"
    extra: list[str] = field(default_factory=list)


def _death_signal():
    """A function for the child to call before exec (found here, before the
    fork): SIGKILL when the process that started it ends (Linux's
    PR_SET_PDEATHSIG), so a tool killed outright (SIGKILL, a test's bound)
    leaves no guest running. None where libc has no prctl."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Guest:
    """One guest: start() boots it and returns once its sshd answers on
    127.0.0.1:PORT (or raises, QEMU killed); stop() powers it off and
    kills QEMU if it has not gone within its bound. Usable as a context
    manager."""

    def __init__(self, cfg: GuestConfig):
        self.cfg = cfg
        self.proc: subprocess.Popen | None = None
        self.boot_s: float | None = None
        self.accel_why = ""
        self.command: list[str] = []
        self._keys = self.cfg.log.with_name(self.cfg.log.name + ".keys")
        self._name = self.cfg.log.with_name(self.cfg.log.name + ".hostname")
        self._err = self.cfg.log.with_name(self.cfg.log.name + ".qemu-stderr")

    @property
    def port(self) -> int:
        return self.cfg.port

    def qemu_config(self) -> qemu.QemuConfig:
        c = self.cfg
        return qemu.QemuConfig(boot="direct", kernel=c.kernel, firmware=c.firmware, accel=c.accel, machine=c.machine,
                               cpu=c.cpu, smp=c.smp, memory=c.memory, append=c.cmdline,
                               ssh_forward=c.port, nic=NIC,
                               fw_cfg={f"{FW_CFG}/authorized_keys": self._keys, f"{FW_CFG}/hostname": self._name},
                               extra=["-initrd", str(c.initramfs), *c.extra])

    def start(self, bound_s: float = BOOT_BOUND_S, stop=None) -> float:
        """Boots the guest; returns the seconds from QEMU's start to its
        sshd's banner. Raises (QEMU killed) when QEMU ends first, the bound
        runs out, or `stop` (a threading.Event: Ctrl-C) is set:
        KeyboardInterrupt then."""
        c = self.cfg
        if not port_free(c.port):
            raise errors.Unavailable(f"127.0.0.1:{c.port} is in use: give --ssh another port")
        c.log.parent.mkdir(parents=True, exist_ok=True)
        self._keys.write_text(c.authorized_keys)
        self._name.write_text(c.hostname)
        qcfg = self.qemu_config()
        try:
            accel, self.accel_why = qemu.resolve_accel(qcfg.accel)
            self.command = qemu.build_command(qcfg, accel)
        except RuntimeError as e:
            raise errors.QemuFailed(str(e)) from None
        start = time.monotonic()
        try:
            with c.log.open("wb") as out, self._err.open("wb") as err:
                # A session of its own (a Ctrl-C on the terminal reaches the tool, which powers the guest off),
                # and killed with the tool if the tool itself is killed: no QEMU outlives it.
                self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                             start_new_session=True, preexec_fn=_death_signal())
        except FileNotFoundError:
            raise errors.MissingTool(f"{self.command[0]} not found: install the 'qemu-system-x86' package") from None
        try:
            while True:
                if self.proc.poll() is not None:
                    raise errors.QemuFailed(f"QEMU exited {self.proc.returncode} before the guest's sshd answered: "
                                            f"{self.why()}")
                # An attempt waits a second at most: until the guest's link is up (2-3 s after its NIC's
                # driver loads) QEMU holds a forwarded connection open with no answer; a new one soon after
                # gets the banner. Later in the bound, under a loaded host, an attempt may wait longer.
                late = time.monotonic() - start > bound_s / 2
                if ssh_banner(c.port, timeout=3.0 if late else 1.0):
                    break
                if stop is not None and stop.is_set():
                    raise KeyboardInterrupt
                if time.monotonic() - start > bound_s:
                    raise errors.QemuFailed(f"the guest's sshd did not answer on 127.0.0.1:{c.port} within {bound_s:g} s "
                                            f"(QEMU killed): {self.why()}")
                time.sleep(POLL_S)
        except BaseException:
            self.kill()
            raise
        self.boot_s = time.monotonic() - start
        return self.boot_s

    def why(self) -> str:
        """What QEMU and the serial port said last, for an error."""
        parts = []
        try:
            err = self._err.read_text(errors="replace").strip()
            if err:
                parts.append(f"QEMU said: {err.splitlines()[-1]}")
        except OSError:
            pass
        try:
            lines = [l for l in self.cfg.log.read_text(errors="replace").replace("\r", "").split("\n") if l.strip()]
            parts.append("the serial port's last lines: " + " | ".join(lines[-4:]) if lines else "nothing on the serial port")
        except OSError:
            pass
        return "; ".join(parts) or "no output"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float | None) -> int | None:
        """QEMU's exit status once it has ended, None when still running after timeout."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, bound_s: float = STOP_BOUND_S) -> str:
        """Asks the guest to power off (a line on its serial port) and waits
        bound_s for QEMU to end; kills it after that. Says which."""
        if self.proc is None:
            return "never started"
        if self.proc.poll() is not None:
            self._close()
            return f"had ended (QEMU status {self.proc.returncode})"
        try:
            self.proc.stdin.write(b"\npoweroff\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass
        if self.wait(bound_s) is not None:
            self._close()
            return "powered off"
        self.kill()
        return f"killed: it had not powered off {bound_s:g} s after it was asked"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self) -> None:
        if self.proc is not None and self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def __enter__(self) -> "Guest":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
