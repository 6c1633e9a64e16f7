"""Quiet builds: one short line a step (`  CC      lib/format.c`), and
`make V=1` for the full commands (issue 15: `make run` used to print some 35
compiler command lines)."""

import re
import subprocess

from helpers.paths import ROOT


def make(tmp_path, *args):
    r = subprocess.run(["make", "--no-print-directory", f"BUILD={tmp_path}", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()


def test_a_build_says_one_line_a_step(tmp_path):
    out = make(tmp_path, f"{tmp_path}/lib/format.o", f"{tmp_path}/boot/entry.o")
    assert out == ["  CC      lib/format.c", "  AS      boot/entry.asm"]


def test_v1_prints_the_commands(tmp_path):
    out = make(tmp_path, "V=1", f"{tmp_path}/lib/format.o")
    assert len(out) == 1 and re.match(r"^\S*(gcc|clang|cc)\b.* -c -o \S+/lib/format\.o lib/format\.c$", out[0]), out
    assert "-ffreestanding" in out[0] and not out[0].startswith("  CC")
