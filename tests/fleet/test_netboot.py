"""Network boot (`make netboot`, tools/clockbench/netboot.py) from QEMU's own
TFTP server, every way the tree offers, each to a verdict, with the command
line its MAC address picks in the machines file: BIOS PXE through the NIC's
iPXE and the iPXE script, BIOS PXE through GRUB's i386-pc image, UEFI PXE
(OVMF) through GRUB's x86_64-efi image."""

from __future__ import annotations

import pytest

from buildpaths import KERNEL
from clockbench import netboot, records

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
    import os
    import subprocess
    import sys

    from buildpaths import ROOT
    from clockbench import store
    out, made = tree
    r = subprocess.run([sys.executable, "-m", "clockbench", "run", "--boot", "netboot", "--tftp", str(out),
                        "--mac", "52:54:00:00:00:01", "--accel", "tcg", "--runs-dir", str(tmp_path / "runs"),
                        "--store", str(tmp_path / "s.db"), "--no-report", "--records"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
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
