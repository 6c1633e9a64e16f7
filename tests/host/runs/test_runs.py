"""`clockbench run`'s terminal and its kept runs, without booting: the
terminal filter and progress bar fed a made-up serial stream, the time bound
the profile asks for, the GRUB hand-over through SMBIOS, and the run folders
that `clockbench runs` lists."""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path

import pytest

from clockbench.report import progress
from clockbench.machines import qemu
from clockbench.runs import plan
from clockbench.cli import runner
from clockbench.runs import runs
from helpers.paths import ROOT
from helpers.tool import tool


BANNER = "clockbench 1234abc: time counters, measured with no OS in the way"
STREAM = [
    "\x1b[2J\x1b[01;01H\x1b[=3hBdsDxe: loading Boot0001 \"UEFI QEMU DVD-ROM\"\r\n",
    "\x1b[0m\x1b[30m\x1b[47mWelcome to GRUB!\r\n",
    "\r\n" + BANNER + "\r\n",
    '@cb {"type":"schema","version":1,"tool":"clockbench","build":"1234abc"}\r\n',
    "== Measuring (profile standard: 60000 ms of drift, 5000 ms of stolen-time scan) ==\r\n",
    "  read_cost        the cost of one read of each counter and TSC variant\r\n",
    '@cb {"type":"progress","phase":"read_cost","percent":0,"seconds_left":null}\r\n',
    "  drift            every counter's rate against the TSC, across discontinuities\r\n",
    '@cb {"type":"progress","phase":"drift","percent":0,"seconds_left":60}\r\n',
    '@cb {"type":"progress","phase":"drift","percent":50,"seconds_left":30}\r\n',
    '@cb {"type":"progress","phase":"done","percent":100,"seconds_left":0}\r\n',
    '@cb {"type":"latency","counter":"hpet","n":2000,"p50_ns":9173.7}\r\n',
    "  hpet       9173.7 ns   9173.7 ns          reference       yes\r\n",
    "SUMMARY: 20 passed, 0 failed, 1 skipped\r\n",
]


class FakeOut(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def feed(term: progress.Terminal, chunks, split: int = 7) -> None:
    """Feeds the stream in pieces that cut lines (and escape codes) anywhere."""
    text = "".join(chunks)
    for i in range(0, len(text), split):
        term.feed(text[i:i + split])
    term.close()


def test_records_are_hidden_and_report_lines_kept_as_printed():
    out = FakeOut(tty=False)
    feed(progress.Terminal(out=out), STREAM[2:])
    shown = out.getvalue()
    assert "@cb" not in shown and '"type"' not in shown
    assert BANNER + "\n" in shown
    assert "  hpet       9173.7 ns   9173.7 ns          reference       yes\n" in shown
    assert shown.rstrip().endswith("SUMMARY: 20 passed, 0 failed, 1 skipped")
    assert "\r" not in shown


def test_records_option_shows_them():
    out = FakeOut(tty=False)
    feed(progress.Terminal(out=out, show_records=True), STREAM[2:])
    assert '@cb {"type":"latency","counter":"hpet","n":2000,"p50_ns":9173.7}\n' in out.getvalue()


def test_firmware_and_grub_are_held_back_until_the_image_starts():
    out = FakeOut(tty=False)
    term = progress.Terminal(out=out, hold_until_image=True)
    feed(term, STREAM)
    shown = out.getvalue()
    assert "BdsDxe" not in shown and "GRUB" not in shown and "\x1b" not in shown
    assert shown.startswith(BANNER + "\n")
    assert term.held_text() == ""  # the image started: nothing to explain


def test_what_came_before_an_image_that_never_started_is_kept_for_the_message():
    out = FakeOut(tty=False)
    term = progress.Terminal(out=out, hold_until_image=True)
    feed(term, ["\x1b[2J\x1b[01;01HBdsDxe: failed to load Boot0001\r\n", "error: file `/boot/clockbench.elf' not found.\r\n"])
    assert out.getvalue() == ""
    held = term.held_text()
    assert "BdsDxe: failed to load Boot0001" in held and "not found" in held and "\x1b" not in held


def test_a_non_terminal_gets_no_bar_and_only_occasional_plain_lines():
    out = FakeOut(tty=False)
    feed(progress.Terminal(out=out), STREAM[2:])
    plain = [l for l in out.getvalue().split("\n") if l.startswith("clockbench:")]
    # the 60 s drift window is announced once; the quick phases and a
    # record 0 s later are not
    assert plain == ["clockbench: drift: 0 %, about 60 s left"]
    quick = [l.replace("60", "2").replace("30", "1") for l in STREAM[2:]]
    out = FakeOut(tty=False)
    feed(progress.Terminal(out=out), quick)
    assert "clockbench:" not in out.getvalue()


def test_a_terminal_gets_a_bar_under_the_report():
    from rich.console import Console

    out = FakeOut(tty=True)
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    term = progress.Terminal(out=out, tty=True, console=console)
    bars = []
    term.feed("".join(STREAM[2:9]))  # up to the first drift record: the bar is up
    bars.append(term._progress is not None)
    term.feed("".join(STREAM[9:11]))  # 50 %, then done: the bar is gone
    bars.append(term._progress is not None)
    term.feed("".join(STREAM[11:]))
    term.close()
    shown = out.getvalue()
    assert bars == [True, False]
    assert "drift" in shown and "about" in shown and "left" in shown
    assert "@cb" not in shown
    assert BANNER in shown and "SUMMARY: 20 passed, 0 failed, 1 skipped" in shown


def test_the_estimate_moves_on_between_records_but_never_claims_the_end():
    e = progress.Estimate("drift", 50, 30, now=100.0)
    assert e.at(100.0) == (50.0, 30.0)
    pct, left = e.at(115.0)
    assert pct == pytest.approx(75.0) and left == pytest.approx(15.0)
    assert e.at(1000.0)[0] == 99.0 and e.at(1000.0)[1] == 0.0
    assert progress.Estimate("read_cost", 0, None, now=0.0).at(50.0) == (0.0, None)


@pytest.mark.parametrize("line", [
    '@cb {"type":"progress","phase":"drift","percent":101,"seconds_left":1}',
    '@cb {"type":"progress","phase":"drift","percent":"5","seconds_left":1}',
    '@cb {"type":"progress","phase":"drift","percent":5,"seconds_left":-1}',
    '@cb {"type":"progress","percent":5,"seconds_left":1}',
    '@cb {"type":"progress","phase":"drift","percent":5,"seconds_',
    '@cb {"type":"latency","phase":"drift","percent":5,"seconds_left":1}',
])
def test_a_bad_progress_record_is_ignored(line):
    assert progress.parse_progress(line) is None
    out = FakeOut(tty=False)
    feed(progress.Terminal(out=out), [BANNER + "\n", line + "\n", "after\n"])
    assert out.getvalue() == BANNER + "\nafter\n"


def test_the_time_bound_follows_the_measuring_asked_for():
    base = plan.BOOT_AND_FIXED_S + 10
    assert plan.default_timeout("") == base + 3 * (2 + 0.5)
    assert plan.default_timeout("profile=quick") == plan.default_timeout("")
    assert plan.default_timeout("profile=standard") == base + 3 * (60 + 5)
    assert plan.default_timeout("profile=soak") == base + 3 * (300 + 30)
    # duration= wins over profile=, as in kernel/profile.c; the scan is a tenth, at most 30 s
    assert plan.default_timeout("profile=soak duration=30") == base + 3 * (30 + 3)
    assert plan.default_timeout("duration=3600") == base + 3 * (3600 + 30)
    # a duration the kernel ignores leaves the profile's
    assert plan.default_timeout("profile=standard duration=0") == plan.default_timeout("profile=standard")
    assert plan.default_timeout("duration=99999") == plan.default_timeout("")


def _run_args(*argv):
    p = argparse.ArgumentParser()
    runner.add_parser(p.add_subparsers())
    return p.parse_args(["run", *argv])


def test_the_command_line_from_the_options():
    assert plan.kernel_cmdline(_run_args("--boot", "iso")) == "profile=quick"
    assert plan.kernel_cmdline(_run_args("--boot", "direct")) == ""
    assert plan.kernel_cmdline(_run_args("--profile", "soak", "--append", "skip=cpus")) == "skip=cpus profile=soak"
    assert plan.kernel_cmdline(_run_args("--duration", "30", "--append", "skip=cpus")) == "skip=cpus duration=30"
    # a profile with its own window: the profile alone, with its sample counts (test_run_args.py: any other disagrees)
    assert plan.kernel_cmdline(_run_args("--profile", "soak", "--duration", "300")) == "profile=soak"
    assert _run_args().timeout is None and _run_args("--timeout", "42").timeout == 42


def test_an_iso_boot_hands_its_command_line_to_grub_in_an_smbios_oem_string():
    cfg = qemu.QemuConfig(boot="iso", iso=Path("x.iso"), append="profile=standard skip=cpus,stolen")
    cmd = qemu.build_command(cfg, "tcg")
    assert cmd[cmd.index("-smbios") + 1] == "type=11,value=clockbench:profile=standard skip=cpus,,stolen"
    assert "-smbios" not in qemu.build_command(qemu.QemuConfig(boot="iso"), "tcg")  # the menu, as on hardware
    direct = qemu.build_command(qemu.QemuConfig(boot="direct", append="profile=soak"), "tcg")
    assert "-smbios" not in direct and direct[direct.index("-append") + 1] == "profile=soak"
    # under KVM the image is told that QEMU's isa-debug-exit is there (it cannot identify QEMU without ACPI)
    kvm = qemu.build_command(qemu.QemuConfig(boot="pvh", append="profile=soak"), "kvm")
    assert kvm[kvm.index("-append") + 1] == "profile=soak debug_exit"
    bare = qemu.build_command(qemu.QemuConfig(boot="direct", debug_exit=False), "kvm")
    assert "-append" not in bare and "isa-debug-exit,iobase=0xf4,iosize=0x04" not in " ".join(bare)
    for bad in ('a"b', "x;reboot", "$root", "{x}"):
        with pytest.raises(RuntimeError):
            qemu.build_command(qemu.QemuConfig(boot="iso", append=bad), "tcg")


def test_grub_reads_the_oem_string_before_it_opens_the_serial_port():
    cfg = (ROOT / "iso" / "grub.cfg").read_text()
    smbios = cfg.index("smbios --type 11 --get-string 4 --set cb_oem")
    assert smbios < cfg.index("\nserial ") and smbios < cfg.index("\nterminal_output ")
    assert "regexp --set=1:cb_args '^clockbench:(.*)$' \"$cb_oem\"" in cfg
    # cb_boot: multiboot2 on a BIOS, chainloader of the signed kernel.efi on UEFI
    assert "cb_boot $cb_args" in cfg and "multiboot2 /boot/clockbench.elf $*" in cfg
    assert "chainloader ($cb_esp)/EFI/BOOT/clockbench.efi $*" in cfg
    assert qemu.SMBIOS_PREFIX == "clockbench:"


def _fake_run(root: Path, when: str, **meta) -> Path:
    d = root / f"{when}-abcdef"
    d.mkdir(parents=True)
    started = f"{when[:10]}T{when[11:19].replace('-', ':')}+00:00"  # 2026-11-21T16-30-00Z -> ISO 8601
    m = {"format": runs.FORMAT, "version": 1, "started": started, "qemu": {"machine": "q35", "accel": "tcg", "firmware": "bios"},
         "profile": "quick", "verdict": "passed", "exit": 0, "seconds": 31.4}
    m.update(meta)
    runs.write_metadata(d, m)
    return d


def test_run_folders_are_new_and_distinct(tmp_path):
    a, b = runs.new_run_dir(tmp_path), runs.new_run_dir(tmp_path)
    assert a != b and a.is_dir() and b.is_dir()
    assert runs._NAME.match(a.name) and a.parent == tmp_path


def test_runs_lists_each_kept_run(tmp_path):
    root = tmp_path / "runs"
    _fake_run(root, "2026-11-21T16-30-00Z")
    _fake_run(root, "2026-11-21T17-00-05Z", verdict="failed", exit=1, profile="soak", seconds=390.2,
              qemu={"machine": "pc", "accel": "kvm", "firmware": "uefi"})
    (root / "2026-11-21T18-00-00Z-123456").mkdir()  # killed before its metadata
    (root / "not-a-run").mkdir()
    kept = runs.list_runs(root)
    assert [k.path.name[:20] for k in kept] == ["2026-11-21T16-30-00Z", "2026-11-21T17-00-05Z", "2026-11-21T18-00-00Z"]
    assert kept[2].problem and "metadata.json" in kept[2].problem
    lines = runs.table(kept)
    assert lines[0].startswith("date (UTC)")
    assert "2026-11-21 16:30:00" in lines[1] and "q35 tcg bios" in lines[1] and "passed (0)" in lines[1] and "31 s" in lines[1]
    assert "pc kvm uefi" in lines[2] and "soak" in lines[2] and "failed (1)" in lines[2] and "390 s" in lines[2]
    assert "metadata.json" in lines[3]


def _cli(*argv, cwd=None):
    return tool(*argv, cwd=cwd, timeout=60)


def test_runs_command(tmp_path):
    root = tmp_path / "runs"
    d = _fake_run(root, "2026-11-21T16-30-00Z")
    r = _cli("runs", "--dir", str(root))
    assert r.returncode == 0, r.stderr
    assert "passed (0)" in r.stdout and str(d) in r.stdout
    r = _cli("runs", "--dir", str(root), "--json")
    got = json.loads(r.stdout)
    assert got[0]["path"] == str(d) and got[0]["verdict"] == "passed"
    r = _cli("runs", "--dir", str(tmp_path / "none"))
    assert r.returncode == 66 and "no runs kept" in r.stderr and "Traceback" not in r.stderr


def test_the_latest_link_replaces_an_old_log(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    (build / "run.log").write_text("an old run's log, from before runs were kept\n")
    d1 = runs.new_run_dir(build / "runs")
    (d1 / "run.log").write_text("one\n")
    d2 = runs.new_run_dir(build / "runs")
    (d2 / "run.log").write_text("two\n")
    assert runs.link_latest(build, d1) == build / "run.log"
    assert runs.link_latest(build, d2) == build / "run.log"
    assert (build / "run.log").read_text() == "two\n" and (build / "run.log").is_symlink()
    assert not os.path.isabs(os.readlink(build / "run.log"))  # the folder can move


def test_what_the_log_says_goes_into_the_metadata():
    log = "\n".join([
        BANNER,
        '@cb {"type":"schema","version":1,"tool":"clockbench","build":"1234abc"}',
        '@cb {"type":"machine","vendor":"AuthenticAMD","brand":"AMD EPYC","hypervisor":"KVMKVMKVM"}',
        '@cb {"type":"profile","name":"standard","drift_ms":60000}',
        '@cb {"type":"summary","pass":20,"fail":0,"skip":1,"status":"passed"}',
        '@cb {"type":"summary", cut',
    ])
    got = runs.from_log(log)
    assert got == {"build": "1234abc", "cpu": "AMD EPYC", "hypervisor": "KVMKVMKVM", "profile": "standard",
                   "summary": {"pass": 20, "fail": 0, "skip": 1, "status": "passed"}}
    assert runs.from_log("") == {}
