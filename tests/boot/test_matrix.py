"""Runs the robustness matrix (tests/boot/matrix.py). Fast rows only,
unless CLOCKBENCH_MATRIX=all (`make test-matrix`), which also writes the
outcome table to docs/robustness.md."""

from __future__ import annotations

import os
import re
import time

import pytest

from clockbench.machines import qemu

import matrix
from helpers.paths import ROOT
from helpers import acpi_builder
from matrix import SCENARIOS


FULL = os.environ.get("CLOCKBENCH_MATRIX") == "all"
ROWS = [s for s in SCENARIOS if FULL or s.fast]
OUTCOMES: list[tuple[str, str, float]] = []


@pytest.fixture(scope="module", autouse=True)
def robustness_table():
    yield
    if not FULL:
        return
    text, message = matrix.robustness_table([s.name for s in ROWS], OUTCOMES, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                            qemu_version())
    if text is None:
        matrix.say_not_written(message)
        return
    (ROOT / "docs" / "robustness.md").write_text(text)


def qemu_version() -> str:
    import subprocess

    out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version ([0-9.]+)", out)
    return m.group(1) if m else "unknown"


@pytest.mark.parametrize("row", ROWS, ids=[s.name for s in ROWS])
def test_scenario(boot, row, tmp_path):
    if row.needs_kvm:
        ok, why = qemu.kvm_usable()
        if not ok:
            OUTCOMES.append((row.name, f"skipped: {why}", 0.0))
            pytest.skip(f"KVM unusable: {why}")
    config = dict(row.config)
    extra = list(config.pop("extra", []))
    for i, (builder, kwargs) in enumerate(row.inject):
        table = tmp_path / f"table{i}.dat"
        table.write_bytes(bytes(getattr(acpi_builder, builder)(**kwargs)))
        extra += ["-acpitable", f"file={table}"]
    b = boot(timeout=row.timeout, extra=extra, **config)
    lines = b.output.split("\n")
    problems = []
    if b.status != row.status:
        problems.append(f"status {b.result.describe()}, expected {qemu.STATUS_NAMES[row.status]}")
    for pattern in row.must:
        if not any(re.search(pattern, l) for l in lines):
            problems.append(f"missing /{pattern}/")
    for pattern in row.must_not:
        hit = [l for l in lines if re.search(pattern, l)]
        if hit:
            problems.append(f"unexpected /{pattern}/: {hit[0]!r}")
    if row.config.get("serial", True) is False and b.output:
        problems.append("output with no serial port")
    outcome = "as expected: " + (qemu.STATUS_NAMES[b.status] if b.status is not None else b.result.describe())
    OUTCOMES.append((row.name, outcome if not problems else "UNEXPECTED: " + "; ".join(problems), b.result.seconds))
    assert not problems, "\n".join(problems) + "\n" + b.explain()
