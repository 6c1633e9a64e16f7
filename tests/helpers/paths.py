"""Where the sources, the build products and the fixtures are, for every
test folder: one module with a name of its own, since each folder's
conftest.py is imported as `conftest` and a test cannot tell which one it
would get."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build"))
KERNEL = BUILD / "clockbench.elf"
PVH_KERNEL = BUILD / "clockbench-pvh.elf"  # no Multiboot 1 header: QEMU's -kernel takes its PVH entry
EFI = BUILD / "clockbench.efi"
TEST_ISO = BUILD / "test" / "clockbench.iso"  # menu timeout 0
# The real runs' logs (`make fixtures`) and the real machines' tables the host tests read
FIXTURES = ROOT / "tests" / "fixtures"
HOST_DATA = ROOT / "tests" / "host" / "data"
# Cloud Hypervisor and Firecracker for the tests that boot them (tests/boot/test_vmm.py):
# CLOCKBENCH_VMM_DIR, else ../shared/vmm beside the checkout (or beside its parent, for a worktree).
VMM_DIR = Path(os.environ.get("CLOCKBENCH_VMM_DIR") or next(
    (p for p in (ROOT.parent / "shared" / "vmm", ROOT.parent.parent / "shared" / "vmm") if p.is_dir()),
    ROOT.parent / "shared" / "vmm"))
