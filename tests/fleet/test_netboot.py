"""Network boot (`make netboot`, tools/clockbench/fleet/netboot.py) from QEMU's own
TFTP server, every way the tree offers, each to a verdict, with the command
line its MAC address picks in the machines file: BIOS PXE through the NIC's
iPXE and the iPXE script, BIOS PXE through GRUB's i386-pc image, UEFI PXE
(OVMF) through GRUB's x86_64-efi image."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from helpers.paths import KERNEL
from clockbench.fleet import netboot
from clockbench.records import records
from helpers.tool import tool_env

MACHINES = """
[default]
cmdline = "profile=quick"
[groups.short]
cmdline = "duration=1 only=drift"
macs = ["52:54:00:00:00:01"]
[machines."52:54:00:00:00:02"]
cmdline = "duration=1 only=drift,read_cost"
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("tftp")
    return out, netboot.write_tree(netboot.parse_config(MACHINES), KERNEL, out)


@pytest.mark.parametrize("way, firmware, mac, cmdline, loader", [
    ("bios-ipxe", "bios", "52:54:00:00:00:01", "duration=1 only=drift", "iPXE"),
    ("bios-grub", "bios", "52:54:00:00:00:02", "duration=1 only=drift,read_cost", "GRUB"),
    ("uefi-grub", "uefi", "52:54:00:00:00:01", "duration=1 only=drift", "GRUB"),
])
def test_netboot_to_a_verdict(boot, tree, way, firmware, mac, cmdline, loader):
    out, made = tree
    b = boot(boot="netboot", tftp=out, bootfile=netboot.BOOTFILES[way], mac=mac, firmware=firmware, accel="tcg", timeout=180)
    assert b.status == 0, b.explain()
    m = records.of_type(b.records, "machine")[0]
    assert m["loader"].startswith(loader), m
    # iPXE hands the image's URL over as the first word; GRUB the words alone
    assert m["cmdline"].split()[-len(cmdline.split()):] == cmdline.split(), m
    assert any(r["type"] == "summary" for r in b.records)


def test_run_boots_the_tree(tree, tmp_path):
    """`clockbench run --boot netboot` as a user runs it: the tree, its iPXE
    way under SeaBIOS, the MAC picking its group's line, to a verdict, the
    run kept with the line the tree gave and where it came from, and stored
    with its way and MAC. One TCG boot (about 8 s)."""
    import json
    import subprocess
    import sys

    from clockbench.runs import store
    out, made = tree
    r = subprocess.run([sys.executable, "-m", "clockbench", "run", "--boot", "netboot", "--tftp", str(out),
                        "--mac", "52:54:00:00:00:01", "--accel", "tcg", "--runs-dir", str(tmp_path / "runs"),
                        "--store", str(tmp_path / "s.db"), "--no-report", "--records"], capture_output=True, text=True, timeout=300,
                       env=tool_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'through iPXE (clockbench.ipxe), MAC 52:54:00:00:00:01; the tree\'s machines file gives it "duration=1 only=drift"' \
        in r.stdout, r.stdout
    m = records.of_type(records.parse_log(r.stdout).records, "machine")[0]
    assert m["loader"].startswith("iPXE") and m["cmdline"].split()[-2:] == ["duration=1", "only=drift"], m
    [run_dir] = (tmp_path / "runs").iterdir()
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["cmdline"] == "duration=1 only=drift" and meta["exit"] == 0, meta
    assert meta["qemu"]["boot"] == "netboot" and "tftp=" in " ".join(meta["qemu"]["command"])
    assert meta["netboot"] == {"tftp": str(out.resolve()), "bootfile": "clockbench.ipxe", "loader": "iPXE",
                               "mac": "52:54:00:00:00:01"}
    with store.open_store(tmp_path / "s.db") as st:
        [row] = st.runs()
    assert (row["boot"], row["firmware"], row["mac"], row["status"]) == ("netboot-bios-ipxe", "bios", "52:54:00:00:00:01",
                                                                         "passed"), dict(row)


def test_secure_boot_netboot_through_shim_signed_grub_and_kernel(tmp_path):
    """The tree's Secure Boot way (netboot_shim.py): OVMF's Secure Boot
    build with Microsoft's keys and the tests' certificate in MokList, PXE
    on virtio-net with OVMF's own network stack (iPXE's EFI ROM misreports
    the size of the file shim fetches), shim from the tree, then our GRUB
    and kernel fetched by TFTP and verified by shim, to a verdict with
    Secure Boot on and the command line the MAC picks. One TCG boot (about
    20 s)."""
    from helpers.paths import BUILD
    from clockbench.machines import qemu
    from clockbench.release import secureboot

    key, efi, pydeps = BUILD / "test-key", BUILD / "clockbench.efi", BUILD / "pydeps"
    for p in (key / secureboot.KEY_NAME, efi, qemu.OVMF_SECBOOT_CODE, qemu.OVMF_VARS_MS):
        if not Path(p).is_file():
            pytest.fail(f"{p} is missing: `make build/test/clockbench.iso` (the tests' key, the EFI program) and `make deps` (ovmf)")
    out = tmp_path / "tftp"
    made = netboot.write_tree(netboot.parse_config(MACHINES), KERNEL, out, efi, key)
    assert made["uefi-shim"] == out / "efi" / "bootx64.efi"
    shim, mm = secureboot.shim_files()
    assert (out / "efi" / "bootx64.efi").read_bytes() == shim.read_bytes()
    assert (out / "efi" / "mmx64.efi").read_bytes() == mm.read_bytes()
    for name in ("grubx64.efi", "clockbench.efi"):  # signed by the key given, both
        r = subprocess.run(["sbverify", "--cert", str(key / secureboot.CERT_NAME), str(out / "efi" / name)], capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr)
    # the tree's other ways are as before
    assert all(p.is_file() for way, p in made.items())
    vars_path = secureboot.make_vars(tmp_path / "vars.fd", key / secureboot.CERT_DER_NAME, mok=True, pydeps=pydeps)
    t0 = time.monotonic()
    r = qemu.run(qemu.QemuConfig(boot="netboot", tftp=out, bootfile=netboot.SHIM_BOOTFILE, mac="52:54:00:00:00:02",
                                 nic="virtio-net-pci,romfile=", firmware="uefi-secboot", uefi_vars=vars_path, accel="tcg"),
                 timeout=240)
    print(f"Secure Boot netboot to a verdict: {time.monotonic() - t0:.1f} s")
    explain = f"{' '.join(r.command)}\n{r.describe()}\n{r.output[-4000:]}"
    assert r.status == 0, explain
    assert "Fetching Netboot Image efi/grubx64.efi" in r.output, explain  # shim fetched GRUB by TFTP
    m = records.of_type(records.parse_log(r.output).records, "machine")[0]
    assert m["loader"].startswith("clockbench EFI") and m["shim"] is True, m
    assert m["secure_boot"] == "on" and m["setup_mode"] is False, m
    assert m["cmdline"] == "duration=1 only=drift,read_cost", m  # the MAC's own line, through GRUB's chainloader
    assert any(x["type"] == "summary" for x in records.parse_log(r.output).records)


def test_the_secure_boot_way_refuses_a_missing_key_and_writes_nothing(tmp_path):
    from helpers.paths import BUILD
    from clockbench import errors

    out = tmp_path / "tftp"
    with pytest.raises(errors.NoInput, match=r"the signing key .*clockbench\.key does not exist"):
        netboot.write_tree(netboot.parse_config(MACHINES), KERNEL, out, BUILD / "clockbench.efi", tmp_path / "nokey")
    assert not (out / "efi").exists()
