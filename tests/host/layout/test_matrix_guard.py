"""`make test-matrix` never overwrites docs/robustness.md from a run that
left rows out (tests/boot/matrix.py, robustness_table), and says so where a
person sees it: pytest's warnings summary, shown even when every test
passed (stderr in a fixture's teardown is hidden)."""

from __future__ import annotations

import subprocess
import sys

from helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "tests" / "boot"))
import matrix  # noqa: E402

ROWS = [s.name for s in matrix.SCENARIOS]


def outcomes(names):
    return [(n, "as expected", 1.25) for n in names]


def test_a_partial_run_writes_nothing_and_names_the_rows_left_out():
    ran = ROWS[:2]
    text, message = matrix.robustness_table(ROWS, outcomes(ran), "2026-11-26 15:00 UTC", "7.2.22")
    assert text is None
    left = ROWS[2:]
    assert message.startswith(f"docs/robustness.md not written: {len(left)} of {len(ROWS)} rows did not run")
    assert f"({'; '.join(left)})" in message  # every row left out, by name
    # nothing ran at all (a crash before the first row): nothing written either
    assert matrix.robustness_table(ROWS, [], "t", "v")[0] is None


def test_a_full_run_writes_every_row_in_the_matrix_order():
    text, message = matrix.robustness_table(ROWS, outcomes(reversed(ROWS)), "2026-11-26 15:00 UTC", "7.2.22")
    assert text is not None and message == f"docs/robustness.md written: all {len(ROWS)} rows"
    assert "Run 2026-11-26 15:00 UTC, QEMU 7.2.22." in text
    table = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith(("| scenario", "| ---"))]
    assert table == [f"| {n} | as expected | 1.2 |" for n in ROWS]
    # a skipped row is a row that ran: its outcome says why
    skipped = outcomes(ROWS[1:]) + [(ROWS[0], "skipped: no /dev/kvm", 0.0)]
    assert f"| {ROWS[0]} | skipped: no /dev/kvm | 0.0 |" in matrix.robustness_table(ROWS, skipped, "t", "v")[0]


def test_the_not_written_message_is_visible_when_every_test_passes(tmp_path):
    """The way test_matrix.py's fixture says it, in a run whose one test
    passes: pytest -q prints it."""
    (tmp_path / "test_visible.py").write_text(f"""
import sys
import pytest
sys.path.insert(0, {str(ROOT / "tests" / "boot")!r})
import matrix

@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    matrix.say_not_written("docs/robustness.md not written: 1 of 2 rows did not run (row-b)")

def test_one():
    pass
""")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_visible.py")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "docs/robustness.md not written: 1 of 2 rows did not run (row-b)" in r.stdout, r.stdout
    assert "RobustnessNotWritten" in r.stdout
