"""A short run of the ACPI parser's libFuzzer harness (ASan + UBSan) over the
seed corpus: `make fuzz` runs it for longer. `make deps` installs clang and
its runtime (libclang-rt-14-dev), so a missing harness is a failure, not a
skip."""

import os
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT

HARNESS = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build")) / "fuzz" / "fuzz_acpi"
SEEDS = ROOT / "tests" / "fuzz" / "seeds"


def test_fuzz_smoke(tmp_path):
    if not HARNESS.exists():
        pytest.fail(f"{HARNESS} was not built: it needs clang with libFuzzer (Debian: clang libclang-rt-14-dev; `make deps`)")
    seeds = sorted(SEEDS.glob("*.bin"))
    assert len(seeds) >= 4, "the seed corpus is missing: run `make fuzz-seeds`"
    run = subprocess.run(
        [str(HARNESS), "-max_total_time=10", "-max_len=65536", f"-artifact_prefix={tmp_path}/", str(tmp_path), str(SEEDS)],
        capture_output=True, text=True, timeout=120,
    )
    crashes = list(tmp_path.glob("crash-*")) + list(tmp_path.glob("leak-*")) + list(tmp_path.glob("timeout-*"))
    assert run.returncode == 0 and not crashes, run.stderr[-3000:]
    assert "Done" in run.stderr
