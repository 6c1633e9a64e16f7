"""`make bench`'s harness agreement (issue 44): each language's headline clock
call measured on this host by that language's own benchmark harness, set
beside clockbench-os's lang_clock p50 for the same API on the same host and
clocksource (`clockbench-os --current-only --lang X`). The goal: the two
within 1.5x either way.

The ladder times a language for about a millisecond where a harness's
figure spans seconds, and on a shared host what else runs changes within
seconds, so one of each a few seconds apart can differ by what the host did,
not by the clock's cost. The two are interleaved: the ladder, then ROUNDS
times the harness and the ladder again. Each harness run's ratio is against the mean of
the two ladder p50s that bracket it in time, and the language's ratio (and
its goal) is the median of the rounds' ratios; every round is kept. A
round whose harness had a CPU for under WAITED_SHARE of its wall time is
marked `waited` and left out of the median while a clean round has a ratio.

| language | API | harness | its figure |
| --- | --- | --- | --- |
| C++ (libstdc++) | steady_clock | Google Benchmark (Debian's libbenchmark-dev) | the median of 5 repetitions' mean time per iteration (real time) |
| Rust | Instant::now | criterion | its `time`: the slope of time against iterations (the mean where it has no slope) |
| Go | time.Now | testing.B (`go test -bench`) | the median of 5 runs' ns/op, each a mean |
| Java | System.nanoTime | JMH | its score: the mean time per operation (avgt) over 5 iterations of 1 s after 3 of warm-up, one fork |
| Python | perf_counter_ns | pyperf (Runner.timeit, --fast) | its `Mean +- std dev`: the mean of every value of its 10 worker processes |
| Node.js | process.hrtime.bigint | tinybench | its latency average per call, each sample a loop of 1000 calls |
| .NET | Stopwatch.GetTimestamp | BenchmarkDotNet | not measured: it comes from NuGet, which these machines cannot reach |

The harnesses' sources are bench/harness/; `scripts/install-deps.sh bench`
fetches what they need (into build/harness/, and cargo's own cache). A
harness that cannot be built or run is one line with its reason, never the
end of the bench; every build and run has a time bound. The figures go into
build/bench.json under `harness_agreement` (docs/host-tool.md).

    PYTHONPATH=tools python3 -m clockbench.cli.bench_harness [--lang go,python] [--rounds 3] [--out build/bench.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from clockbench import paths
from clockbench.records import records

GOAL_RATIO = 1.5
ROUNDS = 3  # harness runs, each between two ladder runs
BUILD_TIMEOUT_S = 900  # criterion's first build from nothing: 2.5 minutes on 2 shared cores
RUN_TIMEOUT_S = 300
LADDER_TIMEOUT_S = 300
HARNESS_DIR = paths.ROOT / "bench" / "harness"


class Unavailable(Exception):
    """A harness (or the ladder) that cannot be built or run here; str() is
    the one line that says why."""


@dataclass(frozen=True)
class Figure:
    """A harness's own per-call time for the API."""
    ns: float
    statistic: str  # what the figure is, in the harness's terms
    version: str  # the harness's name and version
    extra: dict | None = None  # further figures the harness gave (its median, error, ...)


# ---- the pure part: each harness's output read, the ratio and the goal ----

_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def parse_google_benchmark(text: str) -> Figure:
    """Google Benchmark's --benchmark_format=json with repetitions: the median
    aggregate's real time; a run without aggregates: the median of its
    iterations' runs."""
    data = json.loads(text)
    runs = data.get("benchmarks") or []
    median = [b for b in runs if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"]
    if median:
        b = median[0]
        ns = b["real_time"] * _UNIT_NS[b.get("time_unit", "ns")]
        what = f"the median of {b.get('repetitions', '?')} repetitions' mean real time per iteration"
    else:
        each = [b["real_time"] * _UNIT_NS[b.get("time_unit", "ns")] for b in runs if b.get("run_type", "iteration") == "iteration"]
        if not each:
            raise ValueError("no benchmark in Google Benchmark's output")
        ns = statistics.median(each)
        what = f"the median of {len(each)} runs' mean real time per iteration"
    ctx = data.get("context", {})
    extra = {"library_build_type": ctx.get("library_build_type"), "load_avg": ctx.get("load_avg")}
    mean = [b for b in runs if b.get("aggregate_name") == "mean"]
    if mean:
        extra["mean_of_repetitions_ns"] = round(mean[0]["real_time"] * _UNIT_NS[mean[0].get("time_unit", "ns")], 3)
    return Figure(ns, what, "Google Benchmark", extra)


_GO_LINE = re.compile(r"^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op", re.M)


def parse_go_bench(text: str, name: str) -> Figure:
    """`go test -bench` output: the median of the runs' ns/op for benchmark
    `name` (each line one run, -count of them; each a mean over its b.N)."""
    values = [float(m.group(3)) for m in _GO_LINE.finditer(text) if m.group(1) == name]
    if not values:
        raise ValueError(f"no {name} line in go test's output")
    return Figure(statistics.median(values), f"the median of {len(values)} runs' ns/op (each a mean over b.N calls)",
                  "testing.B", {"runs_ns": values})


def parse_jmh(text: str) -> Figure:
    """JMH's -rf json: the first benchmark's primary score (avgt: the mean time
    per operation), with its error (99.9% by default)."""
    data = json.loads(text)
    if not data:
        raise ValueError("JMH's result holds no benchmark")
    b = data[0]
    metric = b["primaryMetric"]
    unit = metric["scoreUnit"].split("/")[0]
    scale = _UNIT_NS[unit]
    err = metric.get("scoreError")
    extra = {"score_error_ns": round(err * scale, 3) if isinstance(err, (int, float)) and not math.isnan(err) else None,
             "mode": b.get("mode"), "forks": b.get("forks"), "iterations": b.get("measurementIterations"),
             "iteration_time": b.get("measurementTime"), "warmup_iterations": b.get("warmupIterations"),
             "jvm": b.get("jvm"), "vm_version": b.get("vmVersion"),
             "iterations_ns": [round(v * scale, 3) for fork in metric.get("rawData") or [] for v in fork]}
    what = (f"its score ({b.get('mode')}): the mean time per operation over {b.get('measurementIterations')} iterations "
            f"of {b.get('measurementTime')}")
    return Figure(metric["score"] * scale, what, f"JMH {b.get('jmhVersion', '?')}", extra)


def parse_pyperf(text: str) -> Figure:
    """pyperf's -o JSON: the mean of every value of every worker process (what
    pyperf prints as `Mean +- std dev`), its values in seconds per loop."""
    data = json.loads(text)
    bench = data["benchmarks"][0]
    meta = {**data.get("metadata", {}), **bench.get("metadata", {})}
    if meta.get("unit", "second") != "second":
        raise ValueError(f"pyperf's unit is {meta.get('unit')!r}, not second")
    values = [v for run in bench["runs"] for v in run.get("values", [])]
    if not values:
        raise ValueError("pyperf's result holds no values")
    extra = {"values": len(values), "processes": sum(1 for r in bench["runs"] if r.get("values")),
             "median_ns": round(statistics.median(values) * 1e9, 3),
             "stdev_ns": round(statistics.stdev(values) * 1e9, 3) if len(values) > 1 else None,
             "loops": meta.get("loops"), "python": meta.get("python_version"), "python_executable": meta.get("python_executable")}
    return Figure(statistics.mean(values) * 1e9, f"its mean of {len(values)} values from {extra['processes']} processes",
                  f"pyperf {meta.get('perf_version', '?')}", extra)


def parse_criterion(text: str, version: str = "?") -> Figure:
    """criterion's estimates.json: the slope's point estimate (the `time` it
    prints for a benchmark sampled linearly), else the mean's, in ns."""
    data = json.loads(text)
    slope = data.get("slope")
    pick, what = (slope, "its time: the slope of the samples' time against their iterations") if slope else \
        (data["mean"], "its time: the mean per iteration")
    ci = pick.get("confidence_interval", {})
    extra = {"ci_ns": [ci.get("lower_bound"), ci.get("upper_bound")], "mean_ns": data["mean"]["point_estimate"],
             "median_ns": data.get("median", {}).get("point_estimate")}
    return Figure(pick["point_estimate"], what, f"criterion {version}", extra)


def parse_tinybench(text: str) -> Figure:
    """bench/harness/node/clock_bench.mjs's one JSON line: tinybench's latency
    statistics in ms; the figure is its average (the first figure tinybench's
    own table gives), its median beside it."""
    line = [l for l in text.splitlines() if l.startswith("{")]
    if not line:
        raise ValueError("no JSON line from the tinybench script")
    d = json.loads(line[-1])
    scale = _UNIT_NS[d.get("unit", "ms")]
    calls = d.get("calls_per_sample")
    if not isinstance(calls, int) or calls < 1:
        raise ValueError("the tinybench script's line gives no calls_per_sample")
    extra = {"median_ns": round(d["p50"] * scale, 3), "samples": d.get("samples"), "rme_percent": d.get("rme"),
             "calls_per_sample": calls, "timestamp_provider": d.get("timestamp_provider"), "node": d.get("node")}
    return Figure(d["mean"] * scale, f"its latency average over every sample, each a loop of {calls} calls, per call",
                  f"tinybench {d.get('version', '?')}", extra)


def cargo_lock_version(text: str, crate: str) -> str | None:
    """A crate's version in a Cargo.lock."""
    m = re.search(r'\[\[package\]\]\s*name = "' + re.escape(crate) + r'"\s*version = "([^"]+)"', text)
    return m.group(1) if m else None


def ladder_record(log_text: str, language: str, api: str) -> dict | None:
    """clockbench-os's lang_clock record for the language's API (--current-only:
    one clocksource, one record)."""
    found = [r for r in records.parse_log(log_text).records
             if r.get("type") == "lang_clock" and r.get("language") == language and r.get("api") == api]
    return found[0] if found else None


def ratio(harness_ns: float, ladder_ns: float) -> float | None:
    """The harness's figure over the ladder's; None when either is not a
    positive cost (a p50 of 0 is under the timer's step, not a cost)."""
    if not (harness_ns and ladder_ns) or harness_ns <= 0 or ladder_ns <= 0:
        return None
    return harness_ns / ladder_ns


def within(r: float | None, goal: float = GOAL_RATIO) -> bool | None:
    """Within `goal` times either way; None when there is no ratio."""
    if r is None:
        return None
    return 1 / goal <= r <= goal


def _cost(ns) -> bool:
    return isinstance(ns, (int, float)) and not isinstance(ns, bool) and ns > 0


def bracketed_ratios(harness_ns: list, ladder_ns: list) -> list[float | None]:
    """Round i's harness figure over the mean of the ladder's just before and
    just after it (ladder_ns[i] and ladder_ns[i + 1]); None for a round where
    any of the three is missing or not a positive cost."""
    if len(ladder_ns) != len(harness_ns) + 1:
        raise ValueError(f"{len(harness_ns)} harness runs need {len(harness_ns) + 1} ladder runs, not {len(ladder_ns)}")
    return [ratio(h, (a + b) / 2) if _cost(a) and _cost(b) and _cost(h) else None
            for h, a, b in zip(harness_ns, ladder_ns, ladder_ns[1:])]


def median_of(values: list) -> float | None:
    """The median of the figures there are; None when there is none."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def nearest(values: list, target: float | None) -> int | None:
    """The index of the figure nearest target (the first of equals)."""
    known = [(abs(v - target), i) for i, v in enumerate(values) if v is not None]
    return min(known)[1] if known and target is not None else None


# A harness run that had a CPU for less than this share of its wall time
# waited for one: its mean over seconds takes in the waiting, the ladder's
# p50 of short batches does not (seen here: rounds of 1.27x, 2.72x, 1.80x at
# shares of 0.75, 0.38, 0.58, each ratio x share about 1; 44 of 46 rounds
# within 1.15x had shares of 0.9 or more)
WAITED_SHARE = 0.9


def agreement_rounds(harness_ns: list, ladder_p50_ns: list,
                     cpu_shares: list | None = None) -> tuple[list[dict], float | None]:
    """The interleaved runs (ladder, harness, ladder, ..., harness, ladder) as
    rounds, each with its ratio against its two ladder p50s, and the median of
    the rounds' ratios: rounds without one are left out of it; None when no
    round has one. A round whose harness run waited for a CPU (its share of
    the CPU under WAITED_SHARE, from cpu_shares) is marked `waited` and left
    out of the median while another round has a ratio; when every round
    waited, all are taken."""
    ratios = bracketed_ratios(harness_ns, ladder_p50_ns)
    shares = cpu_shares if cpu_shares is not None else [None] * len(ratios)
    waited = [s is not None and s < WAITED_SHARE for s in shares]
    rounds = [{"harness_ns": round(h, 3) if h is not None else None, "ladder_before_p50_ns": a, "ladder_after_p50_ns": b,
               "ratio": round(r, 3) if r is not None else None, "waited": w}
              for h, a, b, r, w in zip(harness_ns, ladder_p50_ns, ladder_p50_ns[1:], ratios, waited)]
    clean = median_of([r for r, w in zip(ratios, waited) if not w])
    return rounds, clean if clean is not None else median_of(ratios)


def contention(wall_s: float, cpu_s: float, pressure_us: tuple[int | None, int | None]) -> dict:
    """What else the host did during a harness run: the harness's CPU time over
    its wall time (about 1 for a harness of one thread that had a CPU all along,
    less for one that waited; JMH's and Go's run-time threads add to it), and the
    share of that time in which some runnable task waited for a CPU (Linux's
    PSI, /proc/pressure/cpu `some`; None without it). A harness's mean over
    seconds takes in the time it waited; the ladder's p50 of short batches does
    not."""
    before, after = pressure_us
    ok = wall_s > 0
    return {"harness_s": round(wall_s, 2), "harness_cpu_share": round(cpu_s / wall_s, 3) if ok else None,
            "cpu_pressure": round((after - before) / 1e6 / wall_s, 3) if ok and before is not None and after is not None else None}


def summarise(rows: dict[str, dict]) -> dict:
    """Every measured language within the goal (None when none was measured),
    which were, which were not, and which were not measured."""
    judged = {k: v["goal_met"] for k, v in rows.items() if v.get("goal_met") is not None}
    return {"goal_met": all(judged.values()) if judged else None,
            "within": sorted(k for k, ok in judged.items() if ok), "beyond": sorted(k for k, ok in judged.items() if not ok),
            "not_measured": sorted(k for k, v in rows.items() if v.get("goal_met") is None)}


def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "-"
    return f"{ns:.1f} ns" if ns < 1000 else f"{ns / 1000:.2f} us"


def line_for(label: str, row: dict) -> str:
    """One line for people per language."""
    head = f"bench: harness {label} {row['api']}"
    if "not_measured" in row:
        return f"{head} ({row['harness']}): not measured: {row['not_measured']}"
    ci = row.get("ladder_p50_ci_ns")
    how = {"tsc": "single calls", "batch": "batches"}.get(row.get("ladder_method"), row.get("ladder_method"))
    ci_text = f" ({ci[0]:.1f}-{ci[1]:.1f}, {how})" if ci else f" ({how})"
    r = row.get("ratio")
    verdict = "no ratio" if r is None else f"{r:.2f}x, {'within' if row['goal_met'] else 'beyond'} {GOAL_RATIO:g}x"
    rounds = row.get("rounds") or []
    with_ratio = [x for x in rounds if x.get("ratio") is not None]
    clean = [x for x in with_ratio if not x.get("waited")]
    judged = len(clean) or len(with_ratio)
    each = ", ".join("-" if x.get("ratio") is None else f"{x['ratio']:.2f}{'~' if x.get('waited') else ''}" for x in rounds)
    of = f"{judged} of {len(rounds)} rounds" if judged != len(rounds) else f"{len(rounds)} rounds"
    waited = len(with_ratio) - len(clean)
    if waited:
        of += (f" ({waited} left out: the harness waited for a CPU, ~)" if clean else
               " (every one waited for a CPU, ~: a busy host's figure)")
    loop = row.get("ladder_loop_ns")
    loop_text = (f"; against its loop (1 thread, least chunk) {fmt_ns(loop)}: {row['ratio_to_ladder_loop']:.2f}x"
                 if loop and row.get("ratio_to_ladder_loop") else "")
    return (f"{head}, the median of {of}: {row['harness_version']} {fmt_ns(row['harness_ns'])} "
            f"({row['harness_statistic_short']}); clockbench-os p50 {fmt_ns(row['ladder_p50_ns'])}{ci_text} on "
            f"{row['clocksource']}: {verdict} (rounds {each}){loop_text}")


# ---- running things, each with a bound ----

def run_bounded(cmd: list, what: str, timeout: float, cwd: Path | None = None,
                env: dict | None = None) -> tuple[int, str, str]:
    """Runs cmd in a session of its own: its status, stdout and stderr; a
    program that cannot start, or the time bound, is an Unavailable saying
    so. At the bound the whole session is killed: cargo's bench, JMH's forked
    JVM, pyperf's workers and clockbench-os's probes are children of what was
    started."""
    try:
        p = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as e:
        raise Unavailable(f"{what}: cannot start {cmd[0]}: {e.strerror}") from None
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # a grandchild that left the session still holds the pipes
            pass
        raise Unavailable(f"{what}: no end within {timeout:g} s (stopped)") from None
    return p.returncode, out, err


def bounded(cmd: list, what: str, timeout: float, cwd: Path | None = None, env: dict | None = None) -> str:
    """run_bounded's stdout, and a failure an Unavailable with the last line
    the program said."""
    code, out, err = run_bounded(cmd, what, timeout, cwd, env)
    if code != 0:
        said = [l.strip() for l in (err or out or "").splitlines() if l.strip()]
        raise Unavailable(f"{what} failed (exit {code}){': ' + said[-1][:200] if said else ''}")
    return out


def need(program: str, package: str) -> str:
    path = shutil.which(program)
    if not path:
        raise Unavailable(f"no {program} here (install '{package}', or make deps DEPS=bench)")
    return path


def first_line(text: str) -> str:
    return next((l.strip() for l in text.splitlines() if l.strip()), "")


@dataclass
class Where:
    build: Path  # build/
    work: Path  # build/harness/

    @property
    def program(self) -> Path:
        return self.build / "os" / "clockbench-os"

    @property
    def lang_dir(self) -> Path:
        return self.build / "lang"

    @property
    def python(self) -> Path:
        return self.work / "python-venv" / "bin" / "python"


def build_cpp(w: Where) -> None:
    gxx = need("g++", "g++")
    if not Path("/usr/include/benchmark/benchmark.h").exists():
        raise Unavailable("Google Benchmark is not installed (apt install libbenchmark-dev, or make deps DEPS=bench)")
    exe = w.work / "cpp" / "clock_bench"
    exe.parent.mkdir(parents=True, exist_ok=True)
    bounded([gxx, "-std=c++17", "-O2", "-o", exe, HARNESS_DIR / "cpp" / "clock_bench.cpp", "-lbenchmark", "-lpthread"],
            "building the Google Benchmark program", BUILD_TIMEOUT_S)


def run_cpp(w: Where) -> Figure:
    out = w.work / "cpp" / "result.json"
    out.unlink(missing_ok=True)
    bounded([w.work / "cpp" / "clock_bench", "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true",
             f"--benchmark_out={out}", "--benchmark_out_format=json"], "Google Benchmark", RUN_TIMEOUT_S)
    fig = parse_google_benchmark(out.read_text())
    v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libbenchmark-dev"], capture_output=True, text=True, timeout=30)
    return Figure(fig.ns, fig.statistic, f"Google Benchmark {v.stdout.strip() or '?'}", fig.extra)


def go_env(w: Where) -> dict:
    # as the probe is built (os/lang/native.mk): the local toolchain, nothing fetched
    return {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "",
            "GOCACHE": os.environ.get("GOCACHE", str(w.lang_dir / "go-cache"))}


def build_go(w: Where) -> None:
    go = need("go", "golang-go")
    exe = w.work / "go" / "clock.test"
    exe.parent.mkdir(parents=True, exist_ok=True)
    bounded([go, "test", "-c", "-o", exe, "."], "building the go test", BUILD_TIMEOUT_S, cwd=HARNESS_DIR / "go", env=go_env(w))


def run_go(w: Where) -> Figure:
    text = bounded([w.work / "go" / "clock.test", "-test.run", "^$", "-test.bench", "^BenchmarkTimeNow$", "-test.count", "5",
                    "-test.benchtime", "1s"], "go test -bench", RUN_TIMEOUT_S)
    (w.work / "go" / "result.txt").write_text(text)
    fig = parse_go_bench(text, "BenchmarkTimeNow")
    words = first_line(bounded([need("go", "golang-go"), "version"], "go version", 60, env=go_env(w))).split()
    return Figure(fig.ns, fig.statistic, f"testing.B ({words[2] if len(words) > 2 else '?'})", fig.extra)


def java_classpath(w: Where) -> str:
    jars = sorted((w.work / "java-lib").glob("*.jar"))
    if not any(j.name.startswith("jmh-core-") for j in jars):
        raise Unavailable(f"JMH's jars are not in {w.work / 'java-lib'} (make deps DEPS=bench fetches them with mvn)")
    return ":".join(map(str, jars))


def build_java(w: Where) -> None:
    javac = need("javac", "openjdk-17-jdk-headless")
    need("java", "openjdk-17-jdk-headless")
    cp = java_classpath(w)
    classes, gen = w.work / "java-classes", w.work / "java-gen"
    for d in (classes, gen):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    # the processor named: JMH's generated classes and its BenchmarkList are what its Main runs
    bounded([javac, "--release", "17", "-processor", "org.openjdk.jmh.generators.BenchmarkProcessor", "-processorpath", cp,
             "-cp", cp, "-d", classes, "-s", gen, HARNESS_DIR / "java" / "src" / "main" / "java" / "clockbench" / "harness" /
             "ClockBench.java"], "compiling the JMH benchmark", BUILD_TIMEOUT_S)


def run_java(w: Where) -> Figure:
    out = w.work / "java-result.json"
    out.unlink(missing_ok=True)
    # one fork, 3 warm-up and 5 measured iterations of 1 s: about 10 s (JMH's defaults, 5 forks of
    # 5 + 5 iterations of 10 s, take 8 minutes)
    bounded([need("java", "openjdk-17-jdk-headless"), "-cp", f"{w.work / 'java-classes'}:{java_classpath(w)}",
             "org.openjdk.jmh.Main", "^clockbench.harness.ClockBench.nanoTime$", "-f", "1", "-wi", "3", "-w", "1s", "-i", "5",
             "-r", "1s", "-rf", "json", "-rff", out], "JMH", RUN_TIMEOUT_S)
    return parse_jmh(out.read_text())


def build_python(w: Where) -> None:
    if not w.python.exists():
        raise Unavailable(f"no pyperf venv at {w.python.parent.parent} (make deps DEPS=bench makes it)")
    bounded([w.python, "-c", "import pyperf"], "importing pyperf", 60)


def run_python(w: Where) -> Figure:
    out = w.work / "pyperf-result.json"
    out.unlink(missing_ok=True)
    # --fast: 10 worker processes of 2 values each (max(20 // 2, 3), max(3 * 2 // 3, 2)), not 20 of 3, the
    # same calibration and warm-up: 7-9 s a run here, not 25, three times a bench, and nearer the ladder runs either side
    bounded([w.python, HARNESS_DIR / "python" / "clock_bench.py", "--fast", "--quiet", "-o", out], "pyperf", RUN_TIMEOUT_S)
    return parse_pyperf(out.read_text())


def cargo_env(w: Where) -> dict:
    env = {**os.environ, "CARGO_TARGET_DIR": str(w.work / "rust-target")}
    env.pop("LD_PRELOAD", None)  # as the probe's build (os/lang/native.mk)
    return env


RUST_MANIFEST = HARNESS_DIR / "rust" / "Cargo.toml"


def build_rust(w: Where) -> None:
    # --offline --locked: the crates scripts/install-deps.sh bench fetched, at the lock file's versions
    bounded([need("cargo", "cargo"), "bench", "--offline", "--locked", "--manifest-path", RUST_MANIFEST, "--no-run"],
            "building the criterion benchmark", BUILD_TIMEOUT_S, env=cargo_env(w))


def run_rust(w: Where) -> Figure:
    est_dir = w.work / "rust-target" / "criterion"
    shutil.rmtree(est_dir, ignore_errors=True)  # no earlier run's estimates read by mistake
    bounded([need("cargo", "cargo"), "bench", "--offline", "--locked", "--manifest-path", RUST_MANIFEST, "--bench", "clock"],
            "criterion", RUN_TIMEOUT_S, env=cargo_env(w))
    est = est_dir / "Instant__now" / "new" / "estimates.json"
    if not est.exists():
        raise Unavailable(f"criterion wrote no {est}")
    fig = parse_criterion(est.read_text(), cargo_lock_version((HARNESS_DIR / "rust" / "Cargo.lock").read_text(), "criterion") or "?")
    rustc = first_line(bounded([os.environ.get("RUSTC", "rustc"), "--version"], "rustc --version", 60)).split()
    return Figure(fig.ns, fig.statistic, f"{fig.version} (rustc {rustc[1] if len(rustc) > 1 else '?'})", fig.extra)


def build_node(w: Where) -> None:
    need("node", "nodejs")
    here = w.work / "node"
    if not (here / "node_modules" / "tinybench" / "package.json").exists():
        raise Unavailable(f"tinybench is not installed in {here} (make deps DEPS=bench: npm ci)")
    # beside its node_modules, where an ES module's import finds it
    shutil.copyfile(HARNESS_DIR / "node" / "clock_bench.mjs", here / "clock_bench.mjs")


def run_node(w: Where) -> Figure:
    here = w.work / "node"
    text = bounded([need("node", "nodejs"), here / "clock_bench.mjs"], "tinybench", RUN_TIMEOUT_S, cwd=here)
    (here / "result.json").write_text(text)
    fig = parse_tinybench(text)
    version = json.loads((here / "node_modules" / "tinybench" / "package.json").read_text()).get("version", "?")
    return Figure(fig.ns, fig.statistic, f"tinybench {version}", fig.extra)


def build_dotnet(w: Where) -> None:
    raise Unavailable("BenchmarkDotNet comes from NuGet, which clockbench's machines cannot reach (no harness stands in for it)")


@dataclass(frozen=True)
class Harness:
    language: str  # clockbench-os's --lang name, the records' `language`
    label: str  # for people
    api: str  # the lang_clock record's `api`
    harness: str
    short: str  # the figure in a few words, for the line
    build: Callable[[Where], None]  # raises Unavailable
    run: Callable[[Where], Figure]
    runtime_flag: str | None = None  # clockbench-os's option naming the runtime the harness ran


HARNESSES = (
    Harness("cpp-libstdc++", "C++ (libstdc++)", "steady_clock", "Google Benchmark", "median of 5 repetitions' means",
            build_cpp, run_cpp),
    Harness("rust", "Rust", "Instant::now", "criterion", "slope", build_rust, run_rust),
    Harness("go", "Go", "time.Now", "testing.B", "median of 5 runs' ns/op", build_go, run_go),
    Harness("java", "Java", "System.nanoTime", "JMH", "avgt mean", build_java, run_java, "--java"),
    Harness("python", "Python", "perf_counter_ns", "pyperf", "mean", build_python, run_python, "--python"),
    Harness("node", "Node.js", "process.hrtime.bigint", "tinybench", "latency mean of 1000-call loops", build_node, run_node, "--node"),
    Harness("dotnet", ".NET", "Stopwatch.GetTimestamp", "BenchmarkDotNet", "", build_dotnet, None),
)


def runtime_path(h: Harness, w: Where) -> str | None:
    """The runtime the harness runs on, for clockbench-os to measure the same one."""
    if h.runtime_flag == "--python":
        return str(w.python)
    if h.runtime_flag:
        return shutil.which(h.runtime_flag.lstrip("-"))
    return None


def ladder(h: Harness, w: Where, run: int = 0) -> dict:
    """clockbench-os --current-only --lang X on this host: the API's lang_clock
    record; its log is build/harness/ladder-X-RUN.log."""
    if not w.program.exists():
        raise Unavailable(f"no {w.program} (make os)")
    cmd = [w.program, "--current-only", "--lang", h.language, "--lang-dir", w.lang_dir, "--timeout", str(LADDER_TIMEOUT_S)]
    exe = runtime_path(h, w)
    if exe:
        cmd += [h.runtime_flag, exe]
    # its exit status is its checks' (1: one failed); the record is what is wanted here
    code, out, err = run_bounded(cmd, "clockbench-os", LADDER_TIMEOUT_S + 60)
    (w.work / f"ladder-{h.language}-{run}.log").write_text(out + err)
    rec = ladder_record(out, h.language, h.api)
    if rec is None:
        said = [l.strip() for l in out.splitlines() if "not measured" in l]
        raise Unavailable(f"clockbench-os gave no lang_clock record for {h.api} (exit {code}){': ' + said[0] if said else ''}")
    return rec


def _unreadable(e: Exception) -> str:
    return f"its output could not be read: {type(e).__name__}: {e}"


_UNREADABLE = (ValueError, KeyError, TypeError, json.JSONDecodeError)


def cpu_pressure_us() -> int | None:
    """/proc/pressure/cpu's `some` total: the microseconds in which some
    runnable task waited for a CPU; None where Linux keeps no PSI."""
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return int(some.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


def children_cpu_s() -> float:
    """The CPU time of every child that has ended (and theirs that they waited for)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_language(h: Harness, w: Where, rounds: int = ROUNDS) -> dict:
    """The ladder, then `rounds` times the harness and the ladder again: one
    row, its ratio the median of the rounds'. The first ladder run or harness
    run failing is the row's reason not to be measured; a later one failing
    is said in its round, which then has no ratio."""
    row = {"language": h.language, "api": h.api, "harness": h.harness}
    t0 = time.monotonic()
    load = os.getloadavg()[0]
    try:
        h.build(w)  # built first, so that the ladder and the harness runs follow each other
        recs = [ladder(h, w, 0)]
    except Unavailable as e:
        row.update(not_measured=str(e), goal_met=None)
        return row
    figs, notes = [], []
    for i in range(rounds):
        note = {"load_average_1min": round(os.getloadavg()[0], 2)}
        t_run, cpu_run, psi_run = time.monotonic(), children_cpu_s(), cpu_pressure_us()
        try:
            figs.append(h.run(w))
            note["harness_extra"] = figs[-1].extra
            note.update(contention(time.monotonic() - t_run, children_cpu_s() - cpu_run, (psi_run, cpu_pressure_us())))
        except (Unavailable, *_UNREADABLE) as e:
            why = str(e) if isinstance(e, Unavailable) else _unreadable(e)
            if i == 0:
                row.update(not_measured=why, goal_met=None)
                return row
            figs.append(None)
            note["harness_failed"] = why
        try:
            recs.append(ladder(h, w, i + 1))
        except Unavailable as e:
            recs.append(None)
            note["ladder_after_failed"] = str(e)
        notes.append(note)
    harness_ns = [f.ns if f else None for f in figs]
    p50s = [r.get("p50_ns") if r else None for r in recs]
    loops = [r.get("threads_1_ns") if r else None for r in recs]
    shares = [n.get("harness_cpu_share") for n in notes]
    every, r = agreement_rounds(harness_ns, p50s, shares)
    for one, note in zip(every, notes):
        one.update(note)
    r_loop = agreement_rounds(harness_ns, loops, shares)[1]  # the same rounds left out
    # the harness's figure over the rounds the ratio is taken from: the clean ones, while one has a figure
    clean_ns = [ns for ns, one in zip(harness_ns, every) if not one["waited"]]
    fig_ns = median_of(clean_ns) if median_of(clean_ns) is not None else median_of(harness_ns)
    fig = figs[nearest(harness_ns, fig_ns)]
    # the p50 of the ladder run at the median (the nearer of an even count's middle two), not the
    # middle two's mean: its interval is then its own, and holds it (42.7 ns shown beside 42.8-44.0)
    k = nearest(p50s, median_of(p50s))
    rec = recs[k if k is not None else 0]
    ladder_ns = p50s[k] if k is not None else None
    ci = rec.get("p50_ci_ns")
    row.update({
        "harness_version": fig.version, "harness_ns": round(fig_ns, 3), "harness_statistic": fig.statistic,
        "harness_statistic_short": h.short, "harness_extra": fig.extra,  # the extra of the run nearest that median
        "ladder_p50_ns": round(ladder_ns, 3) if ladder_ns is not None else None, "ladder_p50_runs_ns": p50s,
        # the interval, method, clocksource and runtime of the ladder run whose p50 is nearest the median
        "ladder_p50_ci_ns": ci, "ladder_p50_ci_run": k, "ladder_method": rec.get("method"),
        # the ladder's own loop figure beside its single-call p50: one thread's least chunk of calls
        "ladder_loop_ns": median_of(loops),
        "ladder_loop_median_ns": median_of([x.get("threads_1_median_ns") if x else None for x in recs]),
        "ratio_to_ladder_loop": round(r_loop, 3) if r_loop is not None else None,
        "clocksource": rec.get("clocksource"), "runtime": rec.get("runtime"), "runtime_exe": rec.get("runtime_exe"),
        "ratio": round(r, 3) if r is not None else None, "goal_met": within(r), "rounds": every,
        "rounds_waited": sum(1 for x in every if x["waited"]),
        "harness_within_ladder_ci": bool(ci) and ci[0] <= fig_ns <= ci[1],
        "load_average_1min": [round(load, 2), round(os.getloadavg()[0], 2)], "seconds": round(time.monotonic() - t0, 1),
    })
    return row


def measure(build: Path, languages: list[str] | None = None, say=print, rounds: int = ROUNDS) -> dict:
    """Every harness (or those of `languages`), one line each as it ends; the
    key bench.json keeps."""
    w = Where(build=build, work=build / "harness")
    w.work.mkdir(parents=True, exist_ok=True)
    rows = {}
    for h in HARNESSES:
        if languages and h.language not in languages:
            continue
        rows[h.language] = one_language(h, w, rounds)
        say(line_for(h.label, rows[h.language]), flush=True)
    out = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(), "goal_ratio": GOAL_RATIO,
           "rounds": rounds, "languages": rows, **summarise(rows)}
    judged = len(out["within"]) + len(out["beyond"])
    say(f"bench: harness agreement: {len(out['within'])} of {judged} languages within {GOAL_RATIO:g}x, each the median of {rounds} rounds"
        f"{' (beyond: ' + ', '.join(out['beyond']) + ')' if out['beyond'] else ''}"
        f"{'; not measured: ' + ', '.join(out['not_measured']) if out['not_measured'] else ''}", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="clockbench.cli.bench_harness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=str(paths.BUILD), help="the build folder: clockbench-os, the probes, build/harness/")
    p.add_argument("--out", default=str(paths.BUILD / "bench.json"),
                   help="the bench's JSON: its harness_agreement key is set, the rest kept")
    p.add_argument("--lang", help="only these, comma-separated: " + ", ".join(h.language for h in HARNESSES))
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help=f"harness runs per language, each between two ladder runs (default {ROUNDS})")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be 1 or more")
    langs = args.lang.split(",") if args.lang else None
    unknown = sorted(set(langs or ()) - {h.language for h in HARNESSES})
    if unknown:
        p.error(f"no harness for {', '.join(unknown)}")
    result = measure(Path(args.build).resolve(), langs, rounds=args.rounds)
    out = Path(args.out)
    try:
        whole = json.loads(out.read_text()) if out.exists() else {}
    except json.JSONDecodeError:
        whole = {}
    whole["harness_agreement"] = result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(whole, indent=2) + "\n")
    print(f"bench: wrote harness_agreement into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
