"""Shared fixtures: where the build products are, and one way to boot them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build"))
sys.path.insert(0, str(ROOT / "tools"))

from clockbench import qemu, records  # noqa: E402

KERNEL = BUILD / "clockbench.elf"
TEST_ISO = BUILD / "test" / "clockbench.iso"  # menu timeout 0


class Boot:
    """One QEMU run of the image, with its serial log parsed."""

    def __init__(self, result: qemu.RunResult):
        self.result = result
        self.output = records.clean(result.output)
        # a run that ended normally must print only whole records; one that
        # was cut off (a timeout, a kill) may end inside one: keep what parsed
        self.records = records.parse(result.output) if result.status is not None else records.parse_log(result.output).records

    @property
    def status(self):
        return self.result.status

    def lines(self, prefix: str) -> list[str]:
        return [l for l in self.output.split("\n") if l.startswith(prefix)]

    def explain(self) -> str:
        return f"{' '.join(self.result.command)}\n{self.result.describe()}\n--- serial ---\n{self.output[-6000:]}\n--- stderr ---\n{self.result.stderr[-2000:]}"


@pytest.fixture(scope="session")
def boot():
    def _boot(timeout: float = 120, **kw) -> Boot:
        kw.setdefault("kernel", KERNEL)
        kw.setdefault("iso", TEST_ISO)
        return Boot(qemu.run(qemu.QemuConfig(**kw), timeout=timeout))

    return _boot


@pytest.fixture(scope="session")
def kvm():
    ok, why = qemu.kvm_usable()
    if not ok:
        pytest.skip(f"KVM unusable: {why}")
    return True


def pytest_configure(config):
    # timing-sensitive boots (many CPUs on a small host): run them one at a time
    config.addinivalue_line("markers", "serial: a timing-sensitive boot test; run it alone, not beside other boots")
