"""`clockbench run --boot netboot`, booting nothing: the options that would
give the kernel or its command line (the tree holds both: its machines file
picks the line by MAC), a firmware or loader the tree has no way for, a bad
MAC, and the netboot options without --boot netboot are each one line,
exit 64, no QEMU and no run folder; a tree given with --tftp that is not
there is one line naming it and how to write it, exit 66; and the line a
tree gives a MAC is read back from the tree as written."""

from __future__ import annotations

import pytest

from helpers.tool import err_lines, run_argv, run_cli
from clockbench import errors
from clockbench.fleet import netboot


def _run(capsys, tmp_path, *extra):
    runs_dir = tmp_path / "runs"
    got = run_cli(capsys, *run_argv(runs_dir, "--accel", "tcg"), *extra)
    return got, runs_dir


def _one_line(got) -> str:
    lines = err_lines(got)
    assert len(lines) == 1, got.err
    return lines[0]


@pytest.mark.parametrize("extra, names", [
    (["--append", "duration=1"], "--append duration=1"),
    (["--profile", "standard"], "--profile standard"),
    (["--duration", "5"], "--duration 5"),
    (["--kernel", "x.elf"], "--kernel x.elf"),
    (["--iso", "x.iso"], "--iso x.iso"),
    (["--firmware", "qboot"], "--firmware qboot"),
    (["--firmware", "uefi-secboot"], "--firmware uefi-secboot"),
    (["--firmware", "uefi", "--loader", "ipxe"], "--loader ipxe"),
    (["--machine", "microvm"], "--machine microvm"),
    (["--mac", "52:54:00:00:00"], "--mac 52:54:00:00:00"),
    (["--mac", "52-54-00-00-00-01"], "--mac 52-54-00-00-00-01"),
    (["--migrate-at", "1"], "--migrate-at 1"),
])
def test_what_the_tree_decides_is_refused(capsys, tmp_path, extra, names):
    got, runs_dir = _run(capsys, tmp_path, "--boot", "netboot", "--tftp", tmp_path / "no-tree", *extra)
    assert got.code == errors.USAGE == 64, got
    assert names in _one_line(got)
    assert got.out == ""
    assert not runs_dir.exists()


@pytest.mark.parametrize("extra", [["--tftp", "build/netboot"], ["--mac", "52:54:00:00:00:01"], ["--loader", "grub"]])
@pytest.mark.parametrize("boot", ["direct", "pvh", "iso"])
def test_netboot_options_need_netboot(capsys, tmp_path, boot, extra):
    got, runs_dir = _run(capsys, tmp_path, "--boot", boot, *extra)
    assert got.code == errors.USAGE, got
    line = _one_line(got)
    assert extra[0] in line and "--boot netboot" in line
    assert not runs_dir.exists()


def test_a_missing_tree_is_66_and_names_how_to_write_it(capsys, tmp_path):
    got, runs_dir = _run(capsys, tmp_path, "--boot", "netboot", "--tftp", tmp_path / "no-tree")
    assert got.code == errors.NO_INPUT == 66, got
    line = _one_line(got)
    assert f"{tmp_path / 'no-tree' / 'clockbench.ipxe'}: no such file" in line
    assert f"clockbench netboot --out {tmp_path / 'no-tree'}" in line
    assert not runs_dir.exists()


def test_the_line_a_tree_gives_a_mac():
    cfg = netboot.parse_config('[default]\ncmdline = "profile=quick"\n[groups.g]\ncmdline = "duration=3 only=drift"\n'
                               'macs = ["52:54:00:00:00:01"]\n[machines."52:54:00:00:00:02"]\ncmdline = "profile=standard"\n')
    script = netboot.ipxe_script(cfg)
    assert netboot.tree_cmdline(script, "52:54:00:00:00:01") == "duration=3 only=drift"
    assert netboot.tree_cmdline(script, "52:54:00:00:00:02") == "profile=standard"
    assert netboot.tree_cmdline(script, "52:54:00:12:34:56") == "profile=quick"


def test_the_default_tree_is_written_by_make_netboot_and_its_failure_is_66(capsys, tmp_path, monkeypatch):
    """With no --tftp the run writes the default tree itself, by `make
    netboot`, when it is missing; if that fails the run is one line naming
    the target, exit 66, no folder (the make here is a stand-in: no tree is
    written)."""
    from clockbench.fleet import netboot_tree
    from clockbench import paths
    from clockbench.cli import run_plan

    tree = tmp_path / "netboot"
    monkeypatch.setattr(netboot_tree, "OUT", tree)
    ran = []

    class Failed:
        returncode = 2

    def fake_make(argv, **kw):
        ran.append(argv)
        return Failed()

    monkeypatch.setattr(run_plan.subprocess, "run", fake_make)
    got, runs_dir = _run(capsys, tmp_path, "--boot", "netboot")
    assert ran == [["make", "-C", str(paths.ROOT), "netboot"]]
    assert got.code == errors.NO_INPUT, got
    line = _one_line(got)
    assert "`make netboot` failed (status 2)" in line and str(tree) in line
    assert "no netboot tree" in got.out
    assert not runs_dir.exists()
