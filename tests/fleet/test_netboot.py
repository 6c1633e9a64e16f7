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
