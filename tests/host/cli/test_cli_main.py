"""The command line itself: `clockbench --version`, help text for every
option, the exit statuses in `--help` and docs/output.md, usage errors
apart from the image's statuses, and default paths that do not depend on
the folder the tool is run from."""

from __future__ import annotations

import argparse
import re

import pytest

from helpers.logs import KVM
from helpers.paths import ROOT
from helpers.tool import cli_main, run_cli, run_process
from clockbench import errors, paths


class _Parsed(Exception):
    def __init__(self, parser):
        self.parser = parser


@pytest.fixture
def parser(monkeypatch):
    """The parser main() builds, caught as it is about to parse."""
    def catch(self, *a, **k):
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    with pytest.raises(_Parsed) as got:
        cli_main.main([])
    return got.value.parser


def subcommands(parser) -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_option_of_every_command_has_help(parser):
    cmds = subcommands(parser)
    assert {"run", "capture", "report", "compare", "decode", "flash"} <= set(cmds)
    missing = []
    for name, p in [("clockbench", parser), *cmds.items()]:
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not a.help or a.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(a.option_strings) or a.dest}")
    assert not missing, f"options without help text: {missing}"
    for name, p in cmds.items():
        assert p.prog == f"clockbench {name}"


def test_top_level_help_names_the_tool_and_every_exit_status(capsys):
    r = run_cli(capsys, "--help")
    assert r.code == 0
    assert r.out.startswith("usage: clockbench ") and "python3 -m" not in r.out
    for code in list(errors.RUN_STATUSES) + list(errors.TOOL_STATUSES):
        assert re.search(rf"^\s+{code}\s+\S", r.out, re.M), f"exit status {code} is not in --help"


def test_exit_statuses_are_documented_in_output_md():
    doc = (ROOT / "docs" / "output.md").read_text()
    section = doc[doc.index("## Exit statuses of the host tool"):]
    for code in errors.TOOL_STATUSES:
        assert re.search(rf"^\| {code} \|", section, re.M), f"exit status {code} is missing from docs/output.md"
    assert set(errors.TOOL_STATUSES).isdisjoint(errors.RUN_STATUSES)
    assert min(errors.TOOL_STATUSES) >= 64


def test_version_names_the_tool_and_the_image_build(capsys):
    r = run_cli(capsys, "--version")
    assert r.code == 0
    assert r.out.startswith(f"clockbench {paths.tool_version()}; ")
    build = paths.image_build()
    if build:
        assert f"image build {build}" in r.out
    else:
        assert "image" in r.out


def test_version_without_an_image(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "VERSION_FILE", tmp_path / "version.txt")
    monkeypatch.setattr(paths, "ISO", tmp_path / "clockbench.iso")
    monkeypatch.setattr(paths, "KERNEL", tmp_path / "clockbench.elf")
    assert "no image built" in paths.version_text()
    (tmp_path / "version.txt").write_text("v1.2-3-gabc\n")
    (tmp_path / "clockbench.iso").write_bytes(b"x")
    text = paths.version_text()
    assert "image build v1.2-3-gabc" in text and "clockbench.iso" in text


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["report"], ["report", "a.log", "--bogus"], ["compare"],
                                  ["run", "--smp", "many"], ["capture"]])
def test_usage_errors_exit_64_not_2(capsys, argv):
    r = run_cli(capsys, *argv)
    assert r.code == errors.USAGE
    assert "usage: clockbench" in r.err and "error:" in r.err


@pytest.mark.parametrize("argv, says", [(["run", "--accel", "kvmm"], "argument --accel: invalid choice: 'kvmm'"),
                                        (["run", "--smpp", "2"], "unrecognized arguments: --smpp 2"),
                                        (["runs", "--last", "abc"], "argument --last: 'abc' is not a whole number"),
                                        (["runs", "--last", "0"], "argument --last: 0: give 1 or more"),
                                        (["runs", "--last", "-2"], "argument --last: -2: give 1 or more")])
def test_a_mistyped_option_is_said_first_on_one_line_not_under_a_usage_block(capsys, argv, says):
    """docs/host-tool.md: a tool error comes with one line saying what and why; run's
    usage synopsis is 17 lines, so it is pointed to, not printed."""
    r = run_cli(capsys, *argv)
    lines = r.err.strip().splitlines()
    assert r.code == errors.USAGE and lines[0].startswith(f"clockbench {argv[0]}: error: ") and says in lines[0], r.err
    assert len(lines) == 2 and lines[1].startswith("usage: clockbench"), r.err


def test_an_unknown_option_before_the_command_is_the_tools_not_the_commands(capsys):
    r = run_cli(capsys, "--bogus", "runs")
    assert r.code == errors.USAGE and r.err.startswith("clockbench: error: unrecognized arguments: --bogus"), r.err


def test_default_paths_are_in_the_repository_whatever_the_folder(parser, tmp_path):
    cmds = subcommands(parser)
    defaults = {a.dest: a.default for a in cmds["run"]._actions}
    assert defaults["kernel"] is None  # chosen by --boot: the Multiboot kernel, or the PVH one
    kernel_help = next(a.help for a in cmds["run"]._actions if a.dest == "kernel")
    assert str(ROOT / "build" / "clockbench.elf") in kernel_help and str(ROOT / "build" / "clockbench-pvh.elf") in kernel_help
    assert defaults["iso"] is None  # given only with --boot iso (netboot refuses it): the default is in its help
    iso_help = next(a.help for a in cmds["run"]._actions if a.dest == "iso")
    assert str(ROOT / "build" / "clockbench.iso") in iso_help
    flash = {a.dest: a.default for a in cmds["flash"]._actions}
    assert flash["iso"] == str(ROOT / "build" / "clockbench.iso")


def test_run_from_another_folder_finds_the_repository(tmp_path):
    r = run_process("run", "--help", cwd=tmp_path)
    assert r.code == 0
    # argparse wraps a long default, at a hyphen in a folder's name too: compare without the white space
    flat = "".join(r.out.split())
    for path in (ROOT / "build" / "clockbench.iso", ROOT / "build" / "clockbench.elf"):
        assert "".join(str(path).split()) in flat, (path, r.out)
    r = run_process("report", str(KVM), "--out", "out", "--no-html", cwd=tmp_path)
    assert r.code == 0, r.err
    assert (tmp_path / "out" / "results.json").exists()


def test_an_internal_error_is_one_line_with_its_status(capsys, monkeypatch):
    from clockbench.report import compare

    def broken(path):
        raise KeyError("boom")

    monkeypatch.setattr(compare, "load", broken)
    monkeypatch.delenv("CLOCKBENCH_DEBUG", raising=False)
    r = run_cli(capsys, "compare", KVM)
    assert r.code == errors.INTERNAL
    assert "internal error: KeyError" in r.err and "Traceback" not in r.err


def test_one_version_for_the_tool_the_makefile_and_the_script():
    """`clockbench --version`, the version the Makefile bakes into the image
    and scripts/version.sh are one (issue 31)."""
    import subprocess

    script = subprocess.run([str(paths.ROOT / "scripts" / "version.sh")], capture_output=True, text=True).stdout.strip()
    made = subprocess.run(["make", "-C", str(paths.ROOT), "--no-print-directory", "-p", "-q", "help"], capture_output=True,
                          text=True).stdout
    assert re.search(rf"^VERSION := {re.escape(script)}$", made, re.M), script
    assert paths.tool_version() == script


def test_the_version_is_the_tag_else_the_commit(tmp_path):
    import subprocess

    repo = tmp_path / "r"
    (repo / "scripts").mkdir(parents=True)
    shutil_copy = (paths.ROOT / "scripts" / "version.sh").read_bytes()
    (repo / "scripts" / "version.sh").write_bytes(shutil_copy)
    (repo / "scripts" / "version.sh").chmod(0o755)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    version = lambda: subprocess.run([str(repo / "scripts" / "version.sh")], capture_output=True, text=True).stdout.strip()  # noqa: E731
    commit = subprocess.run([*git, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert version() == commit
    subprocess.run([*git, "tag", "v1.2.0"], check=True)
    assert version() == "1.2.0"
    (repo / "scripts" / "version.sh").write_bytes(shutil_copy + b"\n")
    assert version() == "1.2.0-dirty"
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    assert re.fullmatch(r"1\.2\.0-1-g[0-9a-f]{7}", version())
