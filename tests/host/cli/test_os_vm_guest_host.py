"""`clockbench os-vm --ssh` on the host, booting nothing
(machines/guest.py): the options' checks, the QEMU command line it adds
(loopback hostfwd, the NIC, fw_cfg files), the kernel modules' load order
from their .modinfo, the guest's /init, and the archive of a guest: busybox
with its links, dropbear, Python's standard library without its tests, no
probes, /etc/passwd with root alone. The guests booted for real are
tests/fleet/test_hosts_guests.py's."""

from __future__ import annotations

import shutil
import socket
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from helpers.newc import parse_newc
from helpers.tool import run_cli
from clockbench import errors
from clockbench.cli import osvm
from clockbench.machines import guest, initramfs, qemu


PUB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTestsOnly0000000000000000000000 test@here\n"


@pytest.mark.parametrize("text, port", [("2222", 2222), ("127.0.0.1:2222", 2222), ("localhost:65535", 65535)])
def test_ssh_takes_a_loopback_port(text, port):
    assert guest.parse_ssh(text) == port


# parsed and refused, never bound: the wildcard (socket.INADDR_ANY), a name that is no loopback, a loopback
# address other than 127.0.0.1, and ports that are none
ANY = socket.inet_ntoa(struct.pack("!I", socket.INADDR_ANY))


@pytest.mark.parametrize("text", [f"{ANY}:22", "example.invalid:2222", "127.0.0.2:2222", "127.0.0.1:0", "127.0.0.1:70000",
                                  "127.0.0.1:x", ""])
def test_ssh_refuses_any_other_address_or_port(text):
    with pytest.raises(errors.UsageError):
        guest.parse_ssh(text)


def test_keys_are_public_keys_only(tmp_path):
    pub = tmp_path / "k.pub"
    pub.write_text("# mine\n" + PUB + "\n")
    assert guest.read_keys(pub) == PUB
    # a private key made here, on this machine, never one kept in the tree
    priv = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(priv)], check=True, timeout=30)
    with pytest.raises(errors.BadKey):
        guest.read_keys(priv)
    junk = tmp_path / "junk"
    junk.write_text("hello world\n")
    with pytest.raises(errors.BadInput):
        guest.read_keys(junk)
    with pytest.raises(errors.NoInput):
        guest.read_keys(tmp_path / "absent.pub")


def test_qemu_forwards_loopback_only_to_port_22_on_the_nic(tmp_path):
    keys = tmp_path / "keys"
    cfg = qemu.QemuConfig(boot="direct", kernel=Path("vmlinuz"), append="console=ttyS0", ssh_forward=2222, nic="e1000",
                          fw_cfg={"opt/clockbench/authorized_keys": keys})
    cmd = qemu.build_command(cfg, "tcg")
    assert cmd[cmd.index("-netdev") + 1] == "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:2222-:22"
    assert cmd[cmd.index("-device", cmd.index("-netdev")) + 1] == "e1000,netdev=n0"
    assert cmd[cmd.index("-fw_cfg") + 1] == f"name=opt/clockbench/authorized_keys,file={keys}"
    assert "-netdev" not in qemu.build_command(qemu.QemuConfig(boot="direct", kernel=Path("k")), "tcg")
    with pytest.raises(RuntimeError):
        qemu.build_command(qemu.QemuConfig(boot="iso", ssh_forward=2222), "tcg")
    with pytest.raises(RuntimeError):
        qemu.build_command(qemu.QemuConfig(boot="direct", kernel=Path("k"), fw_cfg={"etc/x": keys}), "tcg")


def test_the_guest_config_builds_its_command_line(tmp_path):
    g = guest.Guest(guest.GuestConfig(kernel=Path("vmlinuz-6.1.0-56-amd64"), initramfs=tmp_path / "i.cpio", port=2345,
                                      authorized_keys=PUB, hostname="h", cmdline=osvm.check_append("clocksource=hpet"),
                                      log=tmp_path / "serial.log"))
    cmd = qemu.build_command(g.qemu_config(), "tcg")
    assert cmd[cmd.index("-append") + 1] == "console=ttyS0,115200 quiet loglevel=3 panic=-1 clocksource=hpet"
    assert cmd[cmd.index("-initrd") + 1] == str(tmp_path / "i.cpio")
    assert "hostfwd=tcp:127.0.0.1:2345-:22" in cmd[cmd.index("-netdev") + 1]
    assert [cmd[i + 1].split(",")[0] for i, w in enumerate(cmd) if w == "-fw_cfg"] == \
        ["name=opt/clockbench/authorized_keys", "name=opt/clockbench/hostname"]


def test_append_goes_to_the_kernel_before_inits_arguments():
    assert osvm.kernel_cmdline("--quick", "clocksource=acpi_pm") == \
        "console=ttyS0,115200 quiet loglevel=3 panic=-1 clocksource=acpi_pm -- --quick"
    for bad in ("-- --quick", 'a="b c"'):
        with pytest.raises(errors.UsageError):
            osvm.check_append(bad)


def _ko(path: Path, depends: str) -> Path:
    path.write_bytes(b"\x7fELF junk\0license=GPL\0depends=" + depends.encode() + b"\0retpoline=Y\0vermagic=6.1\0")
    return path


def test_modules_load_after_what_they_depend_on(tmp_path):
    found = {n: _ko(tmp_path / f"{n}.ko", d) for n, d in {
        "virtio_net": "virtio_ring,virtio,net_failover", "net_failover": "failover", "failover": "",
        "virtio": "virtio_ring", "virtio_ring": "", "e1000": ""}.items()}
    assert guest.module_depends(found["e1000"]) == []
    order = guest.load_order(("virtio_net", "e1000"), found)
    assert order[-1] == "e1000" and set(order) == set(found)
    for n in found:
        for d in guest.module_depends(found[n]):
            assert order.index(d) < order.index(n), (d, n, order)
    with pytest.raises(errors.NoInput):
        guest.load_order(("absent",), found)
    _ko(tmp_path / "a.ko", "b")
    _ko(tmp_path / "b.ko", "a")
    with pytest.raises(errors.BadInput):
        guest.load_order(("a",), {"a": tmp_path / "a.ko", "b": tmp_path / "b.ko"})


def test_init_brings_up_the_network_and_sshd_and_powers_off_when_asked():
    init = guest.init_script()
    assert "@" not in init.replace("$@", ""), "every placeholder filled"
    assert init.startswith("#!/bin/sh\n")
    for line in ("mount -t devtmpfs devtmpfs /dev", f"insmod /{guest.MODULES_DIR}/$m.ko",
                 f"ip addr add {guest.GUEST_ADDR} dev eth0", f"ip route add default via {guest.GATEWAY}",
                 "dropbear -R -s -F -E -p 22 &", "trap 'exec /usr/sbin/poweroff' USR1 USR2 TERM",
                 "read -r -t 1 line", "exec /usr/sbin/poweroff"):
        assert line in init, line
    assert "busybox poweroff -f" in guest.POWEROFF and "kill -TERM -1" in guest.POWEROFF


@pytest.mark.parametrize("args, says", [
    (["--authorized-key", "k.pub"], "--authorized-key is for a guest reached over ssh"),
    (["--ssh", "2222"], "give --authorized-key"),
    (["--ssh", "2222", "--authorized-key", "k.pub", "--args=--quick"], "--args is for clockbench-os as /init"),
    (["--ssh", "2222", "--authorized-key", "k.pub", "--hostname", "bad name"], "--hostname"),
    (["--ssh", "2222", "--authorized-key", "k.pub", "--boot-timeout", "0"], "--boot-timeout"),
    (["--append", "-- x"], "--append"),
])
def test_bad_guest_options_are_64_with_one_line(capsys, args, says):
    r = run_cli(capsys, "os-vm", *args)
    assert r.code == errors.USAGE and says in r.err and len(r.err.strip().split("\n")) == 1, r


HAVE_GUEST_PARTS = all(Path(p).is_file() for p, _ in guest.HOST_PROGRAMS.values())


@pytest.mark.skipif(not HAVE_GUEST_PARTS, reason="busybox-static, dropbear-bin or python3 not installed (`make deps`)")
def test_the_guest_archive(tmp_path):
    mods = [_ko(tmp_path / "e1000.ko", "")]
    built = guest.build_tree([], tmp_path / "lang", tmp_path / "cache", mods)
    data = initramfs.archive(built.init, built.tree)
    by = {e["name"]: e for e in parse_newc(data)}
    assert by["init"]["data"] == guest.init_script().encode() and by["init"]["mode"] & 0o111
    assert by["usr/bin/busybox"]["mode"] & 0o111
    for applet in ("usr/bin/sh", "usr/bin/tar" if "usr/bin/tar" not in built.tree.files else "usr/bin/gzip",
                   "usr/sbin/ip", "usr/bin/timeout", "usr/bin/dd", "usr/sbin/insmod"):
        assert stat.S_ISLNK(by[applet]["mode"]) and by[applet]["data"] == b"/usr/bin/busybox", applet
    assert by["bin"]["data"] == b"usr/bin" and stat.S_ISLNK(by["bin"]["mode"])
    assert by["etc/passwd"]["data"] == b"root:x:0:0:root:/root:/bin/sh\n"
    assert by["usr/sbin/poweroff"]["data"] == guest.POWEROFF.encode()
    assert by["usr/sbin/reboot"]["data"] == b"poweroff"
    assert by[f"{guest.MODULES_DIR}/order"]["data"] == b"e1000\n" and f"{guest.MODULES_DIR}/e1000.ko" in by
    assert any(n.endswith("sbin/dropbear") for n in by)
    assert any(n.startswith("usr/lib/x86_64-linux-gnu/libtomcrypt") for n in by), "dropbear's libraries through ldd"
    stdlib = [n for n in by if n.startswith("usr/lib/python3.") and n.count("/") >= 3]
    assert any(n.endswith("/os.py") for n in stdlib) and any(n.endswith("/zipfile.py") for n in stdlib)
    assert not [n for n in stdlib if any(f"/{d}/" in n + "/" for d in guest.PYTHON_LEFT_OUT) or "/_tkinter." in n]
    assert not [n for n in by if n.startswith("lang/")], "the probes come with the bundle"
    assert not [n for n in by if n in ("etc/shadow", "root/.ssh/authorized_keys")]


@pytest.mark.skipif(shutil.which("dropbear") is None and not Path("/usr/sbin/dropbear").exists(), reason="no dropbear")
def test_dropbear_looks_for_sftp_server_where_the_guest_puts_it():
    assert b"/" + guest.OPTIONAL_PROGRAMS["/usr/lib/openssh/sftp-server"][0].encode() in \
        Path("/usr/sbin/dropbear").read_bytes()
