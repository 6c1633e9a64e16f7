"""The languages' clocks in `clockbench os-vm` (issue 36, section 5), for
real: the probes and runtimes go into the initramfs (machines/runtimes.py),
Debian's Linux boots under TCG with clockbench-os as /init, and the run's
lang_clock records are held against known answers on each clocksource q35
offers (tsc, hpet, acpi_pm), for every language:

- on hpet and acpi_pm x86-64 Linux has no vDSO mode, so every API makes a
  system call per call (1000 per 1000), Go's time.Now two (REALTIME, then
  MONOTONIC: 2000);
- there the traced call names the clock each API reads, as its runtime's
  source has it (C++'s steady_clock CLOCK_MONOTONIC, libstdc++'s
  high_resolution_clock CLOCK_REALTIME and libc++'s CLOCK_MONOTONIC, Java's
  nanoTime CLOCK_MONOTONIC and currentTimeMillis CLOCK_REALTIME, Node's
  Date.now and Mono's DateTime.UtcNow gettimeofday, ...);
- on the TSC the vDSO answers: 0 system calls, except the CPU-time clock
  (Python's process_time_ns, CLOCK_PROCESS_CPUTIME_ID: a syscall each);
- Mono's Stopwatch.Frequency is 10,000,000 (a claim of 100 ns) and its least
  step is at least 100 ns;
- Python's perf_counter claims 1 ns and the least step seen is far coarser:
  flagged.

One boot, kept short (100 calls per measurement). Each probe serves all its
commands in one runtime (docs/output.md, `serve`): at most three starts of
a JVM, V8 or Mono per clocksource, where a start per command made this run
take over ten minutes. A missing runtime fails under CI=true (`make deps`
installs them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clockbench.records import records

# Not `timed`: it counts system calls and reads claims and least steps,
# none of which a busy host moves; it runs in the busy lane, beside others,
# all its tests on one worker, so that the VM boots once (two workers booted
# it twice: 137 s and 132 s of setup in one make test), and first, as it
# shares no boot with the timed lane (176 s, at the busy lane's end, once
# kept one worker busy long after the other had finished).
pytestmark = [pytest.mark.xdist_group("os_vm_lang"), pytest.mark.first]

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CLOCKBENCH_BUILD", ROOT / "build"))
PROGRAM = BUILD / "os" / "clockbench-os"
LANG_DIR = BUILD / "lang"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
LANGUAGES = ("cpp-libstdc++", "cpp-libc++", "rust", "go", "java", "python", "node", "dotnet")
TOOL_TIMEOUT_S = 600  # about 3 minutes on an idle 2-CPU host; a loaded one (load 10) took 7
CLOCKSOURCES = ("tsc", "hpet", "acpi_pm")
CI = os.environ.get("CI") == "true"
RUNTIME_READS_CLOCK = ("go", "java", "node")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not PROGRAM.is_file():
        pytest.fail(f"{PROGRAM} is missing: `make os` builds it")
    log = tmp_path_factory.mktemp("os-vm-lang") / "os-vm.log"
    proc = subprocess.run([sys.executable, "-m", "clockbench", "os-vm", "--accel", "tcg", "--program", str(PROGRAM),
                           "--lang-dir", str(LANG_DIR), "--lang", ",".join(LANGUAGES), "--log", str(log),
                           "--timeout", str(TOOL_TIMEOUT_S), "--args", "--quick --lang-calls 100"],
                          capture_output=True, text=True, timeout=TOOL_TIMEOUT_S + 180, env=ENV)
    text = log.read_text() if log.is_file() else ""
    explain = f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-5000:]}\n--- stderr ---\n{proc.stderr[-2000:]}"
    assert proc.returncode < 64 and "@cb {" in text, f"os-vm could not run: {explain}"
    recs = records.parse_log(text).records
    lang = [r for r in recs if r.get("type") == "lang_clock"]
    raw = {r["clocksource"]: r for r in recs if r.get("type") == "os_latency" and r.get("path") == "syscall"
           and r.get("call") == "clock_gettime(CLOCK_MONOTONIC)"}
    return {"stdout": proc.stdout, "explain": explain, "lang": lang, "raw_syscall": raw,
            "by": {(r["clocksource"], r["language"], r["api"]): r for r in lang}}


def test_every_language_went_into_the_vm(run):
    line = next((l for l in run["stdout"].split("\n") if "languages in the VM:" in l), "")
    missing = [lang for lang in LANGUAGES if lang not in line]
    if missing and not CI:
        pytest.skip(f"not on this host: {', '.join(missing)} ({line}); `make deps` installs them")
    assert not missing, run["explain"]
    measured = {(cs, lang) for cs, lang, _ in run["by"]}
    assert measured == {(cs, lang) for cs in CLOCKSOURCES for lang in LANGUAGES}, (sorted(measured), run["explain"])


def test_on_hpet_and_acpi_pm_every_call_is_a_syscall(run):
    seen = 0
    for (cs, lang, api), r in run["by"].items():
        if cs not in ("hpet", "acpi_pm"):
            continue
        want = 2000 if (lang, api) == ("go", "time.Now") else 1000
        got = r["clock_syscalls_per_1000"]
        if lang in RUNTIME_READS_CLOCK:
            # these runtimes read the clock for themselves on the calling
            # thread now and then: Go's scheduler (nanotime at a preemption: 8
            # in 1000 calls seen on hpet under TCG), the JVM (Instant.now 1003
            # to 1005), V8 (performance.now 1042, hrtime.bigint 1007): the
            # API's own are the want, the runtime's a few more
            assert want <= got <= want * 1.05, (cs, lang, api, r)
        else:
            assert got == want, (cs, lang, api, r)
        assert r["traced_clock_ids"] == CLOCK_READ[(lang, api)], (cs, lang, api, r)
        assert r["path"] == "syscall", (cs, lang, api, r)
        seen += 1
    assert seen >= 2 * API_COUNT, run["explain"]


def test_where_every_call_is_a_syscall_none_costs_less_than_one(run):
    """On hpet and acpi_pm a language's read is a system call, so it costs
    what a system call costs, not a vDSO read's (70 ns for C++'s on the TSC
    here). clockbench-os states no interval for a p50, and under TCG two
    programs timed apart disagree by tens of percent (C++'s steady_clock
    891 ns against a fastest raw clock_gettime of 1001 ns in one run): no
    API's p50 lies below half the fastest raw clock_gettime syscall on its
    clocksource."""
    seen = 0
    for (cs, lang, api), r in run["by"].items():
        if cs not in ("hpet", "acpi_pm"):
            continue
        raw = run["raw_syscall"].get(cs)
        assert raw is not None, (cs, sorted(run["raw_syscall"]), run["explain"])
        assert r["p50_ns"] >= raw["min_ns"] / 2, (cs, lang, api, r["p50_ns"], r["method"], raw["p50_ns"], raw["min_ns"])
        seen += 1
    assert seen >= 2 * API_COUNT, run["explain"]


def test_on_the_tsc_the_vdso_answers_but_for_cpu_time(run):
    seen = 0
    for (cs, lang, api), r in run["by"].items():
        if cs != "tsc":
            continue
        if api == "process_time_ns":
            assert r["clock_id"] == "CLOCK_PROCESS_CPUTIME_ID" and r["clock_syscalls_per_1000"] == 1000, r
        else:
            assert r["clock_syscalls_per_1000"] == 0 and r["path"] == "vdso", (lang, api, r)
        seen += 1
    assert seen >= API_COUNT, run["explain"]


# The clock each API reads, as its runtime's source has it: clock_gettime's
# id (0 CLOCK_REALTIME, 1 CLOCK_MONOTONIC, 2 CLOCK_PROCESS_CPUTIME_ID), -2
# gettimeofday. Where every call is a syscall the trace reads it.
CLOCK_READ = {
    ("cpp-libstdc++", "steady_clock"): [1], ("cpp-libstdc++", "system_clock"): [0],
    ("cpp-libstdc++", "high_resolution_clock"): [0],  # libstdc++'s is system_clock
    ("cpp-libc++", "steady_clock"): [1], ("cpp-libc++", "system_clock"): [0],
    ("cpp-libc++", "high_resolution_clock"): [1],  # libc++'s is steady_clock
    ("rust", "Instant::now"): [1], ("rust", "SystemTime::now"): [0],
    ("go", "time.Now"): [0, 1], ("go", "time.Since"): [1],
    ("java", "System.nanoTime"): [1], ("java", "System.currentTimeMillis"): [0], ("java", "Instant.now"): [0],
    ("python", "perf_counter_ns"): [1], ("python", "monotonic_ns"): [1], ("python", "time_ns"): [0],
    ("python", "process_time_ns"): [2], ("python", "perf_counter"): [1],
    ("node", "process.hrtime.bigint"): [1], ("node", "performance.now"): [1], ("node", "Date.now"): [-2],
    ("dotnet", "Stopwatch.GetTimestamp"): [1], ("dotnet", "DateTime.UtcNow"): [-2],
}
API_COUNT = len(CLOCK_READ)


def test_where_every_call_is_a_syscall_the_trace_names_the_clock_the_runtime_reads(run):
    got = {(lang, api): r["traced_clock_ids"] for (cs, lang, api), r in run["by"].items() if cs == "hpet"}
    assert got == CLOCK_READ, run["explain"]
    acpi = {(lang, api): r["traced_clock_ids"] for (cs, lang, api), r in run["by"].items() if cs == "acpi_pm"}
    assert acpi == CLOCK_READ


def test_cpp_steady_clock_is_clock_monotonic(run):
    rows = [r for (cs, lang, api), r in run["by"].items() if (lang, api) == ("cpp-libstdc++", "steady_clock")]
    assert len(rows) == len(CLOCKSOURCES), run["explain"]
    assert all(r["clock_id"] == "CLOCK_MONOTONIC" for r in rows), rows


def test_monos_stopwatch_ticks_are_100_ns(run):
    rows = [r for (cs, lang, api), r in run["by"].items() if (lang, api) == ("dotnet", "Stopwatch.GetTimestamp")]
    assert len(rows) == len(CLOCKSOURCES), run["explain"]
    for r in rows:
        assert "Mono" in r["runtime"] and "10000000" in r["claim_source"], r
        assert r["claimed_resolution_ns"] == 100 and r["least_step_ns"] >= 100, r


def test_pythons_1_ns_claim_is_flagged_against_its_least_step(run):
    rows = [r for (cs, lang, api), r in run["by"].items() if (lang, api) == ("python", "perf_counter")]
    assert len(rows) == len(CLOCKSOURCES), run["explain"]
    for r in rows:
        assert r["claimed_resolution_ns"] == 1 and r["least_step_ns"] > 2, r
        assert r["claim_finer_than_step"] is True, r
