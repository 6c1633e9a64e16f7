"""`clockbench compare BARE OS` tells one truth on the TSC row (issue 39,
point 1): the bare read beneath the tsc clocksource (rdtscp) is set beside
its own least step, not rdtsc's; a bare read below the TSC's step is said
to be so, never "the bare run did not measure" it; and an OS call whose p50
is below the step reads as clockbench-os's own table prints it ("below the
TSC's step (10.0 ns)"), never as a cost ("20.0 ns") with a ratio. The
records are the ones a coarse-TSC host gave (AMD, 26 ticks a step)."""

from __future__ import annotations

import json

from clockbench.records import results
from clockbench.report import os_side

STEP = {"type": "tsc_step", "step_ticks": 26, "step_ns": 10.015, "staircase": 128, "few": 3}
MACHINE = {"type": "machine", "vendor": "AuthenticAMD", "brand": "AMD EPYC", "family": 25, "model": 17, "stepping": 1,
           "hypervisor": "KVMKVMKVM"}
SUMMARY = {"type": "summary", "pass": 1, "fail": 0, "skip": 0, "status": "passed"}


def log_of(*recs) -> str:
    return "\n".join("@cb " + json.dumps(r) for r in recs)


def bare_run() -> dict:
    below = {"below_step": True, "batch_k": 64}
    return results.from_log(log_of(
        {"type": "schema", "version": 1, "tool": "clockbench", "build": "b"}, MACHINE,
        {"type": "profile", "name": "quick", "tsc_hz": 2.596e9, "tsc_hz_source": "measured against hpet"}, STEP,
        {"type": "latency", "counter": "rdtsc", "n": 100, "p50_ns": 10.015, "batch_ns_per_read": 10.02, **below},
        {"type": "latency", "counter": "rdtscp", "n": 100, "p50_ns": 10.015, "batch_ns_per_read": 9.70, **below},
        {"type": "latency", "counter": "hpet", "n": 100, "p50_ns": 180.3},
        {"type": "resolution", "counter": "rdtsc", "min_step_ns": 10.015, "min_step_ticks": 26},
        {"type": "resolution", "counter": "rdtscp", "min_step_ns": 0.385, "min_step_ticks": 1},
        {"type": "resolution", "counter": "hpet", "min_step_ns": 170.0, "min_step_ticks": 17}, SUMMARY), "bare.log")


def os_lat(call, path, p50, below=False):
    return {"type": "os_latency", "clocksource": "tsc", "call": call, "path": path, "n": 100, "min_ns": p50, "p50_ns": p50,
            "p99_ns": p50, "max_ns": p50, **({"below_step": True} if below else {})}


def os_run() -> dict:
    return results.from_log(log_of(
        {"type": "schema", "version": 1, "tool": "clockbench-os", "build": "o"}, MACHINE,
        {"type": "os", "os": "Linux", "kernel": "6.1", "clocksource": "tsc", "available_clocksources": "tsc"}, STEP,
        os_lat("clock_gettime(CLOCK_MONOTONIC)", "libc", 30.0), os_lat("clock_gettime(CLOCK_MONOTONIC)", "vdso", 20.03, below=True),
        os_lat("rdtsc", "instruction", 20.03, below=True), os_lat("rdtscp", "instruction", 40.06), SUMMARY), "os.log")


def row_of(rows, label):
    return dict(zip(rows[0], next(r for r in rows if r[0] == label)))


def test_the_tsc_row_sets_rdtscp_beside_its_own_step_and_says_why_there_is_no_ratio():
    tsc = row_of(os_side.clocksource_rows(bare_run(), os_run()), "tsc")
    assert tsc["bare counter"] == "rdtscp"
    assert tsc["bare read p50"] == "below the TSC's step (10.0 ns): 9.70 ns a read by the batch"
    assert tsc["bare least step"] == "0.385 ns"  # rdtscp's; rdtsc's is 10.02 ns
    assert "did not measure" not in tsc["note"]
    assert "the bare rdtscp read is below the TSC's step" in tsc["note"]
    assert tsc["libc p50"] == "30.0 ns"  # no ratio to a read that has no figure
    assert tsc["vDSO p50"] == "below the TSC's step (10.0 ns)"


def test_the_other_table_agrees_with_the_first_on_each_reads_step():
    other = os_side.other_rows(bare_run(), os_run())
    assert row_of(other, "rdtscp")["bare least step"] == "0.385 ns"
    assert row_of(other, "rdtsc")["bare least step"] == "10.02 ns"


def test_an_os_p50_below_the_step_is_said_as_clockbench_os_says_it():
    other = os_side.other_rows(bare_run(), os_run())
    assert row_of(other, "rdtsc")["OS p50"] == "below the TSC's step (10.0 ns)"
    assert row_of(other, "rdtscp")["OS p50"] == "40.1 ns"
    # an OS run's own page and OS runs side by side say the same
    calls = {(c["call"], c["path"]): c for c in os_side.call_rows(os_run(), "tsc")}
    assert calls[("rdtsc", "instruction")]["p50"] == "below the TSC's step (10.0 ns)"
    side = os_side.os_vs_os([os_run(), os_run()], ["a", "b"])
    assert row_of(side, "rdtsc (instruction) on tsc, p50")["b (through the OS)"] == "below the TSC's step (10.0 ns)"


def test_a_bare_run_without_the_read_still_says_it_did_not_measure_it():
    bare = bare_run()
    del bare["latency"]["rdtscp"], bare["latency"]["rdtsc"]
    tsc = row_of(os_side.clocksource_rows(bare, os_run()), "tsc")
    assert "the bare run did not measure tsc" in tsc["note"]
