"""Property-based tests of the log parser (tools/clockbench/records/records.py) on a
real log from a QEMU run: random truncation, byte flips and interleaved
noise must never make it raise, and must keep every record that survived."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import boots
from clockbench.records import records

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def real_log(boot):
    b = boot(**boots.TCG_Q35)
    assert b.status == 0, b.explain()
    return b.result.output


def test_the_real_log_parses_cleanly(real_log):
    log = records.parse_log(real_log)
    assert not log.problems and log.schema_version == records.SCHEMA_VERSION
    # the summary and its QR code, then how the run ends (docs/output.md, "How a run ends"): on QEMU, isa-debug-exit
    assert log.records[0]["type"] == "schema"
    assert [r["type"] for r in log.records[-4:]] == ["summary", "qr", "ending", "power_off"]
    assert log.records[-2]["machine"] == "qemu" and log.records[-1]["way"] == "isa_debug_exit"


@SETTINGS
@given(cut=st.floats(min_value=0, max_value=1))
def test_truncation_keeps_every_complete_record(real_log, cut):
    whole = records.parse_log(real_log).records
    part = real_log[: int(len(real_log) * cut)]
    log = records.parse_log(part)
    assert log.records == whole[: len(log.records)]
    assert len(log.problems) <= 1  # at most the one record the cut went through
    for p in log.problems:
        assert p.line >= 1 and "JSON" in p.reason


@SETTINGS
@given(data=st.data())
def test_byte_flips_never_raise(real_log, data):
    raw = bytearray(real_log.encode())
    for _ in range(data.draw(st.integers(1, 20))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    log = records.parse_log(raw.decode("utf-8", "replace"))
    assert all(isinstance(r, dict) and isinstance(r["type"], str) for r in log.records)
    whole = len(records.parse_log(real_log).records)
    assert len(log.records) + len(log.problems) >= whole - 40  # a flipped newline can merge two lines at most


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_interleaved_noise_changes_nothing(real_log, seed):
    rng = random.Random(seed)
    noise = ["\x1b[2J\x1b[H", "GRUB loading.", "\x1b[0m\x1b[30m\x1b[47m", "random text without records", ""]
    lines = []
    for line in real_log.split("\n"):
        if rng.random() < 0.3:
            lines.append(rng.choice(noise))
        lines.append(("\r" if rng.random() < 0.5 else "") + line)
    log = records.parse_log("\n".join(lines))
    assert not log.problems
    assert log.records == records.parse_log(real_log).records


def test_two_records_on_one_line_and_a_future_schema():
    text = '@cb {"type":"schema","version":9}@cb {"type":"x","a":1}\nnoise @cb {"type":"y"}\n@cb {"oops":1}\n@cb [1,2]\n'
    log = records.parse_log(text)
    assert [r["type"] for r in log.records] == ["schema", "x", "y"]
    assert log.newer_schema
    reasons = [str(p) for p in log.problems]
    assert reasons[0].startswith("line 1: the log is schema version 9")
    assert any(r.startswith("line 3:") and '"type"' in r for r in reasons)
    assert any(r.startswith("line 4:") for r in reasons)
    with pytest.raises(ValueError, match="line 1"):
        records.parse(text)
    assert json.loads(json.dumps(log.records))  # plain data
