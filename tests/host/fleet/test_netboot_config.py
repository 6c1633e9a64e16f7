"""The machines file of `make netboot` and the scripts made from it
(tools/clockbench/fleet/netboot.py), and the netboot QEMU command line (qemu.py)."""

from __future__ import annotations

import pytest

from clockbench import errors
from clockbench.fleet import netboot
from clockbench.machines import qemu
from helpers.paths import ROOT

GOOD = """
[default]
cmdline = "profile=standard"
[groups.rack-a]
cmdline = "profile=quick only=drift"
macs = ["52:54:00:00:00:01", "52:54:00:00:00:02"]
[machines."52:54:00:00:00:02"]
cmdline = "duration=5"
[machines."52:54:00:AA:00:03"]
group = "rack-a"
"""


def test_machine_wins_over_group_over_default():
    cfg = netboot.parse_config(GOOD)
    assert cfg.cmdline("52:54:00:00:00:01") == "profile=quick only=drift"
    assert cfg.cmdline("52:54:00:00:00:02") == "duration=5"
    assert cfg.cmdline("52:54:00:aa:00:03") == "profile=quick only=drift"
    assert cfg.cmdline("52:54:00:99:99:99") == "profile=standard"
    ipxe = netboot.ipxe_script(cfg)
    assert ipxe.startswith("#!ipxe\n") and "iseq ${net0/mac} 52:54:00:00:00:02 && set cb_cmdline duration=5 ||" in ipxe
    assert "kernel clockbench.elf ${cb_cmdline}" in ipxe
    grub = netboot.grub_cfg(cfg)
    assert 'if [ "$net_default_mac" = "52:54:00:aa:00:03" ]; then set cb_cmdline="profile=quick only=drift"; fi' in grub
    assert "multiboot2 /clockbench.elf $cb_cmdline" in grub


def test_the_shipped_machines_file_parses():
    assert netboot.load_config(ROOT / "netboot" / "machines.toml").default == "profile=quick"


@pytest.mark.parametrize("text, says", [
    ("[default]\ncmdline = \"profile=quick; reboot\"", "syntax"),
    ("[default]\ncmdline = \"profile=quick poweroff=1\"", "poweroff takes no value"),
    ("[machines.\"52:54:00\"]\ncmdline = \"x=1\"", "not a MAC"),
    ("[groups.a]\nmacs = [\"52:54:00:00:00:01\"]\n[groups.b]\nmacs = [\"52:54:00:00:00:01\"]", "already in group a"),
    ("[machines.\"52:54:00:00:00:01\"]\ngroup = \"nope\"", "no group"),
    ("[hosts]\n", "unknown table"),
    ("[default\n", "not valid TOML"),
    # the words `run --append` refuses are refused here too, with the same reason
    ("[default]\ncmdline = \"profile=quik\"", r"\[default\]: cmdline profile=quik: profile= must be quick, standard"),
    ("[groups.a]\ncmdline = \"duration=abc\"", r"\[groups.a\]: cmdline duration=abc: duration= must be a whole number"),
])
def test_bad_machines_files_are_bad_input(text, says):
    with pytest.raises(errors.BadInput, match=says):
        netboot.parse_config(text)


def test_netboot_command_line_is_built_in_qemu_py(tmp_path):
    cfg = qemu.QemuConfig(boot="netboot", tftp=tmp_path, bootfile="clockbench.ipxe", mac="52:54:00:00:00:07", serial_tcp=4555)
    cmd = qemu.build_command(cfg, "tcg")
    assert cmd[cmd.index("-netdev") + 1] == f"user,id=n0,restrict=on,tftp={tmp_path},bootfile=clockbench.ipxe"
    assert cmd[cmd.index("-device", cmd.index("-netdev")) + 1] == "e1000,netdev=n0,mac=52:54:00:00:00:07"
    assert cmd[cmd.index("-boot") + 1] == "n"
    assert cmd[cmd.index("-serial") + 1] == "tcp:127.0.0.1:4555,server=on,wait=on"
    with pytest.raises(RuntimeError, match="TFTP tree"):
        qemu.build_command(qemu.QemuConfig(boot="netboot"), "tcg")
    with pytest.raises(RuntimeError, match="machines file"):
        qemu.build_command(qemu.QemuConfig(boot="netboot", tftp=tmp_path, bootfile="x", append="profile=quick"), "tcg")


def test_poweroff_is_a_word_netboot_passes():
    cfg = netboot.parse_config("[default]\ncmdline = \"profile=quick poweroff\"")
    assert cfg.default == "profile=quick poweroff"
