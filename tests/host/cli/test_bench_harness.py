"""`make bench`'s harness agreement (tools/clockbench/cli/bench_harness.py,
issue 44), its pure part: each harness's output read from a real capture
(harness_samples/ beside this file, taken on this project's host by the driver itself; tests/fixtures holds only logs),
the ratio to clockbench-os's p50 and the 1.5x goal, the rounds that interleave
the ladder and the harness and their median, the line a person reads,
and that the harnesses are installed by `make bench` alone. None of it needs
a harness installed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from helpers.paths import ROOT

from clockbench.cli import bench_harness as bh

SAMPLES = Path(__file__).resolve().parent / "harness_samples"


def fixture(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_google_benchmark_gives_the_median_repetition():
    fig = bh.parse_google_benchmark(fixture("google-benchmark.json"))
    assert fig.ns == pytest.approx(31.20808, abs=1e-4)  # the steady_clock_now_median aggregate's real_time
    assert "median of 5 repetitions" in fig.statistic
    assert fig.extra["mean_of_repetitions_ns"] == pytest.approx(31.179, abs=1e-3)


def test_google_benchmark_without_aggregates_and_in_microseconds():
    runs = [{"name": "f", "run_type": "iteration", "real_time": t, "time_unit": "us"} for t in (0.03, 0.01, 0.02)]
    fig = bh.parse_google_benchmark(json.dumps({"benchmarks": runs}))
    assert fig.ns == pytest.approx(20.0) and "3 runs" in fig.statistic
    with pytest.raises(ValueError):
        bh.parse_google_benchmark(json.dumps({"benchmarks": []}))


def test_go_bench_gives_the_median_of_its_runs():
    fig = bh.parse_go_bench(fixture("go-test-bench.txt"), "BenchmarkTimeNow")
    assert fig.extra["runs_ns"] == [63.24, 59.61, 60.34, 59.77, 58.99]
    assert fig.ns == 59.77
    # another benchmark's lines, and GOMAXPROCS's suffix absent, read alike
    text = "BenchmarkOther-8 100 5.0 ns/op\nBenchmarkTimeNow 1000 41.5 ns/op\nBenchmarkTimeNow 1000 42.5 ns/op\n"
    assert bh.parse_go_bench(text, "BenchmarkTimeNow").ns == 42.0
    with pytest.raises(ValueError):
        bh.parse_go_bench("PASS\n", "BenchmarkTimeNow")


def test_jmh_gives_its_score_in_ns():
    fig = bh.parse_jmh(fixture("jmh.json"))
    assert fig.ns == pytest.approx(29.30548, abs=1e-4)
    assert fig.version == "JMH 1.37" and fig.extra["mode"] == "avgt" and fig.extra["score_error_ns"] == pytest.approx(1.879)
    assert fig.extra["iterations_ns"] == [29.383, 29.094, 29.22, 28.756, 30.075]  # each measured iteration's mean
    data = json.loads(fixture("jmh.json"))
    data[0]["primaryMetric"].update(score=0.0293, scoreUnit="us/op", scoreError="NaN")
    fig = bh.parse_jmh(json.dumps(data))
    assert fig.ns == pytest.approx(29.3) and fig.extra["score_error_ns"] is None


def test_pyperf_gives_the_mean_of_every_value():
    fig = bh.parse_pyperf(fixture("pyperf.json"))
    # 20 worker processes of 3 values each; the calibration run has warm-ups only
    assert fig.extra["values"] == 60 and fig.extra["processes"] == 20
    assert fig.ns == pytest.approx(76.7245, abs=1e-3)
    assert fig.version == "pyperf 2.10.0"
    data = json.loads(fixture("pyperf.json"))
    data["metadata"]["unit"] = "byte"
    with pytest.raises(ValueError):
        bh.parse_pyperf(json.dumps(data))


def test_criterion_gives_its_slope_else_its_mean():
    fig = bh.parse_criterion(fixture("criterion-estimates.json"), "0.8.2")
    assert fig.ns == pytest.approx(31.89815, abs=1e-4) and "slope" in fig.statistic
    data = json.loads(fixture("criterion-estimates.json"))
    data["slope"] = None  # a benchmark sampled flat has no slope
    fig = bh.parse_criterion(json.dumps(data))
    assert fig.ns == pytest.approx(31.52287, abs=1e-4) and "mean" in fig.statistic


def test_tinybench_gives_its_latency_average_in_ns():
    fig = bh.parse_tinybench("some warning first\n" + fixture("tinybench.json"))
    # figures per call: each sample a loop of 1000 calls, divided by 1000
    assert fig.ns == pytest.approx(44.2526, abs=1e-3)
    assert fig.extra["median_ns"] == pytest.approx(41.68) and fig.extra["calls_per_sample"] == 1000
    assert fig.extra["samples"] == 45196 and "loop of 1000 calls" in fig.statistic
    with pytest.raises(ValueError):
        bh.parse_tinybench("no json here\n")
    data = json.loads(fixture("tinybench.json"))
    del data["calls_per_sample"]  # a line from the script of before, each call timed alone
    with pytest.raises(ValueError, match="calls_per_sample"):
        bh.parse_tinybench(json.dumps(data))


def test_cargo_lock_version():
    text = (ROOT / "bench" / "harness" / "rust" / "Cargo.lock").read_text()
    assert bh.cargo_lock_version(text, "criterion") == "0.8.2"
    assert bh.cargo_lock_version(text, "no-such-crate") is None


def test_the_ladder_record_is_the_apis_own():
    log = (ROOT / "tests" / "fixtures" / "os-lang-intervals.log").read_text()
    rec = bh.ladder_record(log, "cpp-libstdc++", "steady_clock")
    assert rec["p50_ns"] == pytest.approx(30.261) and rec["p50_ci_ns"] == [20.446, 40.075]
    assert bh.ladder_record(log, "cpp-libc++", "steady_clock")["language"] == "cpp-libc++"
    assert bh.ladder_record(log, "python", "perf_counter_ns")["method"] == "batch"
    assert bh.ladder_record(log, "go", "no.Such") is None


@pytest.mark.parametrize("harness, ladder, ratio, met", [
    (30.0, 20.0, 1.5, True),  # the bounds are within
    (20.0, 30.0, 2 / 3, True),
    (31.2, 20.4, 31.2 / 20.4, False),
    (13.0, 20.0, 0.65, False),
    (20.0, 0.0, None, None),  # a p50 of 0 is under the timer's step: no ratio
    (20.0, None, None, None),
])
def test_ratio_and_goal(harness, ladder, ratio, met):
    r = bh.ratio(harness, ladder)
    assert (r is None and ratio is None) or r == pytest.approx(ratio)
    assert bh.within(r) is met


def test_summary_judges_only_what_was_measured():
    rows = {"go": {"goal_met": True}, "cpp-libstdc++": {"goal_met": False}, "dotnet": {"goal_met": None, "not_measured": "why"}}
    s = bh.summarise(rows)
    assert s == {"goal_met": False, "within": ["go"], "beyond": ["cpp-libstdc++"], "not_measured": ["dotnet"]}
    assert bh.summarise({"go": {"goal_met": True}})["goal_met"] is True
    assert bh.summarise({"dotnet": {"goal_met": None}})["goal_met"] is None


def test_each_round_is_against_the_ladder_runs_either_side():
    # ladder 40, harness 50, ladder 60, harness 45, ladder 50, harness 66, ladder 60
    rounds, r = bh.agreement_rounds([50.0, 45.0, 66.0], [40.0, 60.0, 50.0, 60.0])
    assert [x["ratio"] for x in rounds] == [1.0, pytest.approx(45 / 55, abs=1e-3), 1.2]
    assert rounds[1] == {"harness_ns": 45.0, "ladder_before_p50_ns": 60.0, "ladder_after_p50_ns": 50.0, "ratio": 0.818,
                         "waited": False}
    assert r == pytest.approx(1.0)  # the median of the three
    # an even count: the mean of the middle two
    assert bh.agreement_rounds([50.0, 60.0], [50.0, 50.0, 50.0])[1] == pytest.approx(1.1)
    with pytest.raises(ValueError):
        bh.agreement_rounds([50.0, 60.0], [50.0, 50.0])


@pytest.mark.parametrize("harness, ladder, ratios, median", [
    # a zero p50 (under the timer's step) or a missing one leaves both rounds beside it without a ratio
    ([30.0, 30.0, 45.0], [30.0, 30.0, 0.0, 30.0], [1.0, None, None], 1.0),
    ([30.0, 30.0, 45.0], [None, 30.0, 30.0, 30.0], [None, 1.0, 1.5], 1.25),
    ([None, 30.0, 60.0], [30.0, 30.0, 30.0, 30.0], [None, 1.0, 2.0], 1.5),  # a harness run that failed
    ([30.0, 30.0, 30.0], [None, 0.0, None, 0.0], [None, None, None], None),  # no ratio at all
])
def test_a_round_without_a_p50_has_no_ratio_and_is_left_out(harness, ladder, ratios, median):
    rounds, r = bh.agreement_rounds(harness, ladder)
    assert [x["ratio"] for x in rounds] == ratios
    assert (r is None and median is None) or r == pytest.approx(median)
    assert bh.median_of([None, None]) is None and bh.nearest([None, 3.0, 5.0, 4.0], 4.2) == 3


def test_a_round_whose_harness_waited_for_a_cpu_is_marked_and_left_out():
    # run 3 of the seven here: Python's rounds 1.27x, 2.72x, 1.80x at CPU shares 0.75, 0.38, 0.58 (every one waited),
    # and a run with one round that waited beside two that did not
    ladder = [40.0, 40.0, 40.0, 40.0]
    rounds, r = bh.agreement_rounds([50.8, 108.8, 72.0], ladder, [0.75, 0.38, 0.58])
    assert [x["waited"] for x in rounds] == [True, True, True] and r == pytest.approx(1.8)  # all taken: none is clean
    rounds, r = bh.agreement_rounds([41.6, 108.8, 42.4], ladder, [0.97, 0.38, 1.02])
    assert [x["waited"] for x in rounds] == [False, True, False]
    assert r == pytest.approx((1.04 + 1.06) / 2)  # the median of the two that had a CPU
    # a share not known (no figure) is no sign of waiting; JMH's and Go's own threads take it past 1
    assert bh.agreement_rounds([40.0, 44.0], [40.0, 40.0, 40.0], [None, 1.6])[1] == pytest.approx(1.05)
    # a waited round with a ratio is still used when the clean ones have none
    rounds, r = bh.agreement_rounds([None, 80.0], [40.0, 40.0, 40.0], [None, 0.5])
    assert r == pytest.approx(2.0) and rounds[1]["waited"]
    line = bh.line_for("Python", {**LINE_ROW, "rounds": [
        {"ratio": 1.04, "waited": False}, {"ratio": 2.72, "waited": True}, {"ratio": 1.06, "waited": False}]})
    assert "the median of 2 of 3 rounds (1 left out: the harness waited for a CPU, ~)" in line
    assert "(rounds 1.04, 2.72~, 1.06)" in line
    line = bh.line_for("Python", {**LINE_ROW, "rounds": [{"ratio": 1.27, "waited": True}, {"ratio": 2.72, "waited": True}]})
    assert "the median of 2 rounds (every one waited for a CPU, ~: a busy host's figure)" in line


LINE_ROW = {"api": "perf_counter_ns", "harness_version": "pyperf 2.9.0", "harness_ns": 42.0, "harness_statistic_short": "mean",
            "ladder_p50_ns": 40.0, "ladder_p50_ci_ns": [39.0, 41.0], "ladder_method": "batch", "clocksource": "tsc",
            "ratio": 1.05, "goal_met": True}


def test_the_rows_harness_figure_is_of_the_rounds_its_ratio_is(tmp_path, monkeypatch):
    """A round that waited is out of the harness's figure as it is out of the ratio."""
    monkeypatch.setattr(bh, "ladder", lambda h, w, run=0: ladder_rec(40.0, 40.0, [39, 41]))
    figures, shares = iter([41.6, 108.8, 42.4]), iter([1.0, 0.38, 1.0])
    clock = {"wall": 0.0, "cpu": 0.0}

    def fake_run(w):  # one second of wall time, this share of it on the CPU
        clock["wall"] += 1.0
        clock["cpu"] += next(shares)
        return bh.Figure(next(figures), "its mean", "pyperf 2.10.0", None)
    monkeypatch.setattr(bh.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(bh, "children_cpu_s", lambda: clock["cpu"])
    h = bh.Harness("python", "Python", "perf_counter_ns", "pyperf", "mean", lambda w: None, fake_run)
    row = bh.one_language(h, bh.Where(build=tmp_path, work=tmp_path / "harness"))
    assert [x["waited"] for x in row["rounds"]] == [False, True, False], row["rounds"]
    assert row["harness_ns"] == pytest.approx(42.0) and row["ratio"] == pytest.approx(1.05)


def test_contention_is_cpu_time_and_pressure_over_the_wall_time():
    c = bh.contention(8.0, 6.0, (1_000_000, 5_000_000))  # 4 s of PSI's `some` in 8 s
    assert c == {"harness_s": 8.0, "harness_cpu_share": 0.75, "cpu_pressure": 0.5}
    assert bh.contention(8.0, 8.0, (None, None))["cpu_pressure"] is None  # a Linux without PSI
    assert bh.contention(0.0, 0.0, (1, 1))["harness_cpu_share"] is None


def ladder_rec(p50, loop, ci):
    return {"p50_ns": p50, "p50_ci_ns": ci, "method": "batch", "threads_1_ns": loop, "threads_1_median_ns": loop + 1,
            "clocksource": "tsc", "runtime": "CPython 3.11.7", "runtime_exe": "/usr/bin/python3"}


def test_the_ladder_and_the_harness_interleave(tmp_path, monkeypatch):
    said = []
    ladders = iter([ladder_rec(40.0, 41.0, [39, 41]), ladder_rec(60.0, 61.0, [59, 61]), None,
                    ladder_rec(50.0, 51.0, [49, 51])])

    def fake_ladder(h, w, run=0):
        said.append(f"ladder {run}")
        rec = next(ladders)
        if rec is None:
            raise bh.Unavailable("clockbench-os: no end within 360 s (stopped)")
        return rec
    figures = iter([50.0, 66.0, 45.0])

    def fake_run(w):
        said.append("harness")
        ns = next(figures)
        return bh.Figure(ns, "its mean", "pyperf 2.10.0", {"ns": ns})
    monkeypatch.setattr(bh, "ladder", fake_ladder)
    # a harness that had a CPU all along: its children's CPU time advances with the wall clock
    monkeypatch.setattr(bh, "children_cpu_s", time.monotonic)
    h = bh.Harness("python", "Python", "perf_counter_ns", "pyperf", "mean", lambda w: None, fake_run)
    row = bh.one_language(h, bh.Where(build=tmp_path, work=tmp_path / "harness"))
    assert said == ["ladder 0", "harness", "ladder 1", "harness", "ladder 2", "harness", "ladder 3"]
    assert [x["ratio"] for x in row["rounds"]] == [1.0, None, None]  # the third ladder run stopped
    assert "no end within 360 s" in row["rounds"][1]["ladder_after_failed"]
    assert row["ratio"] == 1.0 and row["goal_met"] is True
    assert row["harness_ns"] == 50.0 and row["harness_extra"] == {"ns": 50.0}  # the median run's own extra
    assert row["ladder_p50_runs_ns"] == [40.0, 60.0, None, 50.0] and row["ladder_p50_ns"] == 50.0
    assert row["ladder_p50_ci_ns"] == [49, 51] and row["ladder_p50_ci_run"] == 3  # the run nearest the median
    assert row["ladder_loop_ns"] == 51.0 and row["ratio_to_ladder_loop"] == pytest.approx(50 / 51, abs=1e-3)
    assert bh.line_for("Python", row).startswith("bench: harness Python perf_counter_ns, the median of 1 of 3 rounds: ")


def test_a_harness_that_fails_first_is_not_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(bh, "ladder", lambda h, w, run=0: ladder_rec(40.0, 41.0, [39, 41]))

    def broken(w):
        raise ValueError("no JSON line from the tinybench script")
    h = bh.Harness("node", "Node.js", "process.hrtime.bigint", "tinybench", "mean", lambda w: None, broken)
    row = bh.one_language(h, bh.Where(build=tmp_path, work=tmp_path / "harness"))
    assert row["goal_met"] is None and row["not_measured"].startswith("its output could not be read: ValueError")


def test_one_line_per_language():
    rounds = [{"harness_ns": 59.5, "ladder_before_p50_ns": 60.5, "ladder_after_p50_ns": 60.5, "ratio": 0.983},
              {"harness_ns": 59.77, "ladder_before_p50_ns": 60.5, "ladder_after_p50_ns": 60.5, "ratio": 0.988},
              {"harness_ns": 61.0, "ladder_before_p50_ns": 60.5, "ladder_after_p50_ns": 60.5, "ratio": 1.008}]
    row = {"api": "time.Now", "harness_version": "testing.B (go1.26.8)", "harness_ns": 59.77,
           "harness_statistic_short": "median of 5 runs' ns/op", "ladder_p50_ns": 60.521, "ladder_p50_ci_ns": [50.707, 70.335],
           "ladder_method": "tsc", "clocksource": "tsc", "ratio": 0.988, "goal_met": True, "ladder_loop_ns": 61.62,
           "ratio_to_ladder_loop": 0.97, "rounds": rounds}
    line = bh.line_for("Go", row)
    assert line.startswith("bench: harness Go time.Now, the median of 3 rounds: testing.B (go1.26.8) 59.8 ns "
                           "(median of 5 runs' ns/op); ")
    assert "clockbench-os p50 60.5 ns (50.7-70.3, single calls) on tsc: 0.99x, within 1.5x (rounds 0.98, 0.99, 1.01)" in line
    assert line.endswith("; against its loop (1 thread, least chunk) 61.6 ns: 0.97x") and "\n" not in line
    skipped = bh.line_for(".NET", {"api": "Stopwatch.GetTimestamp", "harness": "BenchmarkDotNet",
                                   "not_measured": "BenchmarkDotNet comes from NuGet"})
    assert skipped == "bench: harness .NET Stopwatch.GetTimestamp (BenchmarkDotNet): not measured: BenchmarkDotNet comes from NuGet"


def test_dotnet_is_said_not_measured_with_its_reason(tmp_path):
    w = bh.Where(build=tmp_path, work=tmp_path / "harness")
    h = next(h for h in bh.HARNESSES if h.language == "dotnet")
    row = bh.one_language(h, w)  # refused before clockbench-os would run (there is none here)
    assert row["goal_met"] is None and "NuGet" in row["not_measured"]


def test_a_missing_program_or_a_time_bound_is_a_reason_not_a_crash(tmp_path):
    with pytest.raises(bh.Unavailable, match="cannot start"):
        bh.bounded([tmp_path / "no-such-program"], "the thing", 10)
    with pytest.raises(bh.Unavailable, match=r"failed \(exit 3\): said this"):
        bh.bounded(["sh", "-c", "echo said this >&2; exit 3"], "the thing", 10)
    with pytest.raises(bh.Unavailable, match="no end within 0.5 s"):
        bh.bounded(["sh", "-c", "sleep 30 & wait"], "the thing", 0.5)  # its child is stopped with it


def fake_apt(tmp_path):
    """A PATH where dpkg-query says every package but Google Benchmark's is
    installed, and apt-get (and sudo, and the Python installers) only note
    their calls in calls.txt and fail: nothing is installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    for name, body in (("dpkg-query", '[ "$3" = libbenchmark-dev ] || printf "install ok installed"\n'),
                       ("apt-get", f'echo "apt-get $*" >> {calls}\n[ "$1" = update ] || exit 1\n'),
                       ("sudo", 'exec "$@"\n'),
                       ("python3", f'echo "python3 $*" >> {calls}\nexit 1\n')):
        p = bin_dir / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, calls


def test_the_harnesses_are_make_benchs_alone(tmp_path):
    def installs(target):
        dry = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(ROOT), target], capture_output=True, text=True,
                             timeout=120).stdout
        return [l.split()[1] for l in dry.splitlines() if l.startswith("scripts/install-deps.sh")]
    assert installs("bench") == ["bench"]
    assert installs("test") == ["all"]
    env, calls = fake_apt(tmp_path)
    # a copy in a tree with no build/: the Python sets' steps, which `all` reaches, touch only that tree
    script = tmp_path / "tree" / "scripts" / "install-deps.sh"
    script.parent.mkdir(parents=True)
    script.write_text((ROOT / "scripts" / "install-deps.sh").read_text())
    subprocess.run(["bash", str(script), "all"], capture_output=True, text=True, env=env, timeout=60)
    assert "libbenchmark-dev" not in (calls.read_text() if calls.exists() else "")
    calls.unlink(missing_ok=True)
    r = subprocess.run(["bash", str(script), "bench"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0  # the fake apt-get refused
    installed = [l for l in calls.read_text().splitlines() if l.startswith("apt-get install")]
    assert installed and "libbenchmark-dev" in installed[0].split(), calls.read_text()
