"""`make os-bench` as a new user meets it (issue 39, point 8): it installs
only what builds clockbench-os (`scripts/install-deps.sh os`: a C compiler
and static glibc; not the test set, whose chromium Ubuntu has only as a
snap, nor labgrid or the linters), and shows its report without the @cb
records, as `clockbench run` does; the log keeps every record, and
RECORDS=1 shows them on the terminal too."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from helpers.paths import ROOT  # noqa: E402


def os_set() -> list[str]:
    text = (ROOT / "scripts" / "install-deps.sh").read_text()
    body = re.search(r"^os_packages=\((.*?)^\)", text, re.S | re.M).group(1)
    return [w for line in body.splitlines() for w in line.split("#")[0].split()]


def test_os_bench_installs_its_own_set():
    dry = subprocess.run(["make", "-n", "-C", str(ROOT), "os-bench"], capture_output=True, text=True, timeout=60).stdout
    assert "scripts/install-deps.sh os" in dry and "scripts/install-deps.sh all" not in dry
    assert os_set() == ["make", "gcc", "binutils", "libc6-dev"]
    usage = subprocess.run(["bash", str(ROOT / "scripts" / "install-deps.sh"), "nonsense"], capture_output=True, text=True)
    assert usage.returncode == 64 and "os: make os-bench" in usage.stderr


def test_os_bench_hides_the_records_unless_asked(tmp_path):
    def bench(*extra):
        # (LANG_PROBES= : the language probes are make lang's to build, and not what is tested here)
        r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "os-bench", f"BUILD={tmp_path}",
                            "OS_ARGS=--quick --no-lang", "LANG_PROBES=", *extra], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return r.stdout
    out = bench()
    log = (tmp_path / "os-bench" / "os.log").read_text()
    assert "== Through the OS" in out and not [l for l in out.splitlines() if l.startswith("@cb ")]
    assert sum(l.startswith("@cb ") for l in log.splitlines()) > 20
    # make os-bench's default measures the current clocksource only, as root too (issue 48)
    assert '"switching":false' in log and '"type":"os_clocksource"' not in log and "nothing on this host changed" in out
    assert "RECORDS=1 shows them" in out
    out = bench("RECORDS=1")
    assert sum(l.startswith("@cb ") for l in out.splitlines()) > 20
