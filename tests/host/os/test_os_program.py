"""clockbench-os run on the machine the tests run on (build/os/clockbench-os,
`make os`): every call measured with figures that hold together, known
relations (the coarse clocks step by their clock_getres; on the TSC
clocksource CLOCK_MONOTONIC_RAW is the TSC at the kernel's stated rate),
plain words without root, the machine's clocksource never changed by
default, as root too (sysfs polled through a real run), --all-clocksources
measuring each and always putting the original back (a folder standing in
for sysfs, so that the test machine's own clock is left alone: the real
switching is tested inside the VM, tests/boot/test_os_vm.py, and here only
when asked, CLOCKBENCH_SWITCH_TESTS=1), and bad arguments refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers.paths import ROOT

pytestmark = pytest.mark.timed  # clock_gettime and the TSC measured on this machine, rates against known answers

PROGRAM = ROOT / "build" / "os" / "clockbench-os"
SYSFS = Path("/sys/devices/system/clocksource/clocksource0")


def records(text: str) -> list[dict]:
    return [json.loads(line[4:]) for line in text.splitlines() if line.startswith("@cb ")]


def of(recs, kind):
    return [r for r in recs if r["type"] == kind]


def run(*args, user=None, timeout=120):
    # a test that needs the program fails (does not skip) without it: `make test` builds it
    assert PROGRAM.is_file(), f"{PROGRAM} is missing: `make os` builds it"
    cmd = [str(PROGRAM), "--no-lang", *args]  # the languages: tests/host/test_os_lang_program.py
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def quick():
    p = run("--quick")
    return p, records(p.stdout)


def test_every_call_is_measured_with_consistent_figures(quick):
    p, recs = quick
    assert p.returncode == 0, p.stdout[-3000:]
    assert of(recs, "schema")[0]["tool"] == "clockbench-os"
    assert of(recs, "machine")[0]["loader"] == "linux"
    os_rec = of(recs, "os")[0]
    assert os_rec["pinned_cpu"] is not None and os_rec["switching"] is False
    lat = {(r["call"], r["path"]): r for r in of(recs, "os_latency")}
    calls = {"clock_gettime(CLOCK_REALTIME)", "clock_gettime(CLOCK_MONOTONIC)", "clock_gettime(CLOCK_MONOTONIC_RAW)",
             "clock_gettime(CLOCK_REALTIME_COARSE)", "clock_gettime(CLOCK_MONOTONIC_COARSE)", "clock_gettime(CLOCK_BOOTTIME)",
             "clock_gettime(CLOCK_TAI)", "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)", "clock_gettime(CLOCK_THREAD_CPUTIME_ID)",
             "gettimeofday", "time", "clock", "rdtsc", "rdtscp"}
    assert {c for c, _ in lat} == calls
    # libc-static: the glibc linked into clockbench-os; libc: the host's own, by its helper (test_hostlibc.py)
    paths = {"libc", "libc-static", "vdso", "syscall"} if os_rec["vdso"] else {"libc", "libc-static", "syscall"}  # no vDSO: that path SKIPs
    assert {path for c, path in lat if c == "clock_gettime(CLOCK_MONOTONIC)"} == paths
    for r in lat.values():
        assert r["n"] >= 100
        assert 0 <= r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["p999_ns"] <= r["max_ns"], r
    # a syscall costs more than the same call answered in user space, when the clocksource has a vDSO mode
    if os_rec["vdso"] and os_rec["clocksource"] in ("tsc", "kvm-clock"):
        assert lat["clock_gettime(CLOCK_MONOTONIC)", "vdso"]["p50_ns"] < lat["clock_gettime(CLOCK_MONOTONIC)", "syscall"]["p50_ns"]
    res = {(r["call"], r["path"]): r for r in of(recs, "os_resolution")}
    # the host's libc is measured for its cost; back-to-back reads are the static copy's
    assert set(res) == {k for k in lat if k[1] != "libc"}
    assert {c for c, path in lat if path == "libc"} == {c for c, path in lat if path == "libc-static"}
    for r in res.values():
        assert r["backward"] == 0 or r["call"] in ("clock_gettime(CLOCK_REALTIME)", "clock_gettime(CLOCK_TAI)", "gettimeofday",
                                                   "time", "rdtsc", "rdtscp", "clock_gettime(CLOCK_REALTIME_COARSE)")
    # units: gettimeofday counts microseconds, time() seconds
    assert res["gettimeofday", "libc-static"]["min_step_ns"] % 1000 == 0
    assert res["time", "libc-static"]["min_step_ns"] == 1e9
    assert res["time", "libc-static"]["window_ms"] >= 2000


def test_coarse_clocks_step_by_their_clock_getres(quick):
    _, recs = quick
    for call in ("clock_gettime(CLOCK_REALTIME_COARSE)", "clock_gettime(CLOCK_MONOTONIC_COARSE)"):
        r = next(r for r in of(recs, "os_resolution") if r["call"] == call)
        assert r["getres_ns"] >= 1_000_000  # a tick: HZ is at most 1000
        check = next(c for c in of(recs, "check") if c["name"] == f"coarse resolution: {call}")
        if r["min_step_ns"] >= 1.98 * r["getres_ns"]:
            # every step seen spanned a missed tick (seen on a loaded host: one step of 372 ms): nothing to judge, said
            assert check["result"] == "SKIP" and "spans a missed tick" in check["detail"], (check, r)
            continue
        assert abs(r["min_step_ns"] - r["getres_ns"]) <= 0.01 * r["getres_ns"], r
        assert check["result"] == "PASS", check
        assert r["zero_deltas"] > r["deltas"] / 2  # it ticks far slower than it is read
    checks = {c["name"]: c["result"] for c in of(recs, "check")}
    assert checks["coarse resolution: clock_gettime(CLOCK_MONOTONIC_COARSE)"] == "PASS"


def test_tsc_rate_matches_the_kernels_stated_rate_on_the_tsc_clocksource(quick):
    _, recs = quick
    rate = of(recs, "os_tsc_rate")[0]
    assert rate["uncertainty_ppm"] > 0 and rate["kept"] > rate["samples"] / 2
    claims = [c for c in of(recs, "os_claim") if c["what"] in ("tsc detected", "tsc refined") and c["hz"]]
    if rate["clocksource"] != "tsc" or not claims:
        pytest.skip(f"clocksource {rate['clocksource']}, {len(claims)} claims: the known answer needs the TSC clocksource and its log line")
    # CLOCK_MONOTONIC_RAW is the TSC scaled by the kernel's tsc_khz: the
    # last stated rate (kHz-rounded) must come back within that rounding and 3 u
    claim = claims[-1]["hz"]
    ppm = (rate["hz"] / claim - 1) * 1e6
    assert abs(ppm) <= 3 * rate["uncertainty_ppm"] + 1000 / claim * 1e6 + 0.1, (rate, claim)


def test_without_root_it_measures_the_current_clocksource_and_says_so():
    # as root, drop to nobody; a test run that is not root is already there
    p = run("--quick", "--reads", "200", "--rate-ms", "50", user=65534 if os.geteuid() == 0 else None)
    recs = records(p.stdout)
    os_rec = of(recs, "os")[0]
    assert os_rec["root"] is False and os_rec["switching"] is False
    assert os_rec["switching_reason"] == "the default (--all-clocksources not given)"
    heading = [line for line in p.stdout.splitlines() if "the current clocksource only, nothing on this host changed" in line]
    assert len(heading) == 1 and "--all-clocksources, as root," in heading[0], p.stdout[:2000]
    skip = [c for c in of(recs, "check") if c["name"] == "other clocksources"]
    assert skip and skip[0]["result"] == "SKIP"
    assert {r["clocksource"] for r in of(recs, "os_latency")} == {os_rec["clocksource"]}


def test_without_root_all_clocksources_says_why_it_measures_the_current_one():
    p = run("--quick", "--reads", "200", "--rate-ms", "50", "--all-clocksources", user=65534 if os.geteuid() == 0 else None)
    recs = records(p.stdout)
    os_rec = of(recs, "os")[0]
    assert os_rec["switching"] is False and os_rec["switching_reason"].startswith("not root"), os_rec
    assert "--all-clocksources: the current clocksource only: not root (switching the machine's clocksource needs root)" in p.stdout
    skip = [c for c in of(recs, "check") if c["name"] == "other clocksources"]
    assert skip and skip[0]["result"] == "SKIP" and "not root" in skip[0]["detail"], skip


class ClocksourceWatch:
    """Reads current_clocksource every 2 ms from a thread for as long as it
    is open: every name it held, in order."""

    def __init__(self, folder: Path = SYSFS):
        self.path, self.seen, self.reads = folder / "current_clocksource", [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _read(self):
        now = self.path.read_text().strip()
        self.reads += 1
        if now and (not self.seen or self.seen[-1] != now):  # "": a fake's write under way
            self.seen.append(now)

    def _poll(self):
        while not self._stop.is_set():
            self._read()
            time.sleep(0.002)

    def __enter__(self):
        self._thread.start()
        while not self.reads:  # the state before the program starts is read first
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)
        self._read()  # the state it was left in, read once more after the program ended


def test_as_root_the_default_never_changes_the_machines_clocksource():
    if os.geteuid() != 0:
        pytest.skip("not root: the program could not switch the clocksource anyway (the root case is the one to prove)")
    available = SYSFS.joinpath("available_clocksource").read_text().split()
    with ClocksourceWatch() as watch:
        p = run("--quick", "--reads", "2000", "--rate-ms", "300")
    recs = records(p.stdout)
    os_rec = of(recs, "os")[0]
    assert p.returncode == 0, p.stdout[-3000:]
    # the whole run watched: one name all through, thousands of reads
    assert watch.seen == [os_rec["clocksource"]] and watch.reads > 200, (watch.seen, watch.reads)
    assert os_rec["root"] is True and os_rec["switching"] is False, os_rec
    assert not of(recs, "os_clocksource") and not of(recs, "os_restore")
    heading = next(line for line in p.stdout.splitlines() if "nothing on this host changed" in line)
    assert "--all-clocksources measures each available one" in heading and "as root" not in heading, heading
    if len(available) > 1:  # the others were there to switch to, and were left alone
        assert {r["clocksource"] for r in of(recs, "os_latency")} == {os_rec["clocksource"]}


@pytest.mark.skipif(os.environ.get("CLOCKBENCH_SWITCH_TESTS") != "1",
                    reason="switches this machine's clocksource under every test beside it: CLOCKBENCH_SWITCH_TESTS=1 "
                    "(the real switching is tested in the VM, tests/boot/test_os_vm.py)")
def test_as_root_all_clocksources_measures_each_and_puts_the_original_back():
    if os.geteuid() != 0:
        pytest.skip("not root: switching the clocksource needs root")
    original = SYSFS.joinpath("current_clocksource").read_text().strip()
    available = SYSFS.joinpath("available_clocksource").read_text().split()
    if len(available) < 2:
        pytest.skip(f"one clocksource here ({original}): nothing to switch to")
    with ClocksourceWatch() as watch:
        p = run("--all-clocksources", "--quick", "--reads", "2000", "--rate-ms", "300")
    recs = records(p.stdout)
    assert p.returncode == 0, p.stdout[-3000:]
    assert of(recs, "os")[0]["switching"] is True
    tried = {c["name"]: c for c in of(recs, "os_clocksource")}
    assert set(tried) == set(available) - {original}, tried
    selected = {n for n, c in tried.items() if c["selected"]}  # the kernel may refuse one it marked unstable
    assert {r["clocksource"] for r in of(recs, "os_latency")} == selected | {original}
    assert selected <= set(watch.seen) and watch.seen[0] == original and watch.seen[-1] == original, watch.seen
    assert of(recs, "os_restore")[0] == {"type": "os_restore", "original": original, "now": original, "restored": True}
    assert SYSFS.joinpath("current_clocksource").read_text().strip() == original


def fake_sysfs(tmp_path: Path) -> Path:
    d = tmp_path / "clocksource0"
    d.mkdir()
    (d / "current_clocksource").write_text("tsc\n")
    (d / "available_clocksource").write_text("tsc slowone other \n")
    return d


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "timeout"])
def test_the_original_clocksource_is_put_back_when_stopped(tmp_path, how):
    assert PROGRAM.is_file(), f"{PROGRAM} is missing: `make os` builds it"
    d = fake_sysfs(tmp_path)
    # 2 s of rate window on each clocksource: the run switches after about
    # 4.5 s (the first one's window, and 2.1 s of time()) and takes about 10 s
    args = [str(PROGRAM), "--no-lang", "--all-clocksources", "--sysfs", str(d), "--reads", "200", "--rate-ms", "2000"]
    if how == "timeout":
        args += ["--timeout", "6"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # "" is a write under way (open truncates, then writes)
        while (d / "current_clocksource").read_text().strip() in ("tsc", "") and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        switched = (d / "current_clocksource").read_text().strip() == "slowone"
        if how != "timeout":
            assert switched
            p.send_signal(getattr(signal, how))
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert (d / "current_clocksource").read_text() == "tsc"
    if switched:
        assert "the original clocksource is back" in out
    assert ("timed out" in out) == (how == "timeout")
    # it dies by the signal, so that a parent (a shell, make) sees how it ended
    assert p.returncode == -(signal.SIGALRM if how == "timeout" else getattr(signal, how))


def test_a_full_switching_run_restores_and_records_each_clocksource(tmp_path):
    d = fake_sysfs(tmp_path)
    with ClocksourceWatch(d) as watch:
        p = run("--all-clocksources", "--sysfs", str(d), "--quick", "--reads", "200", "--rate-ms", "50")
    assert watch.seen[0] == "tsc" and {"slowone", "other"} <= set(watch.seen) and watch.seen[-1] == "tsc", watch.seen
    recs = records(p.stdout)
    assert [c["name"] for c in of(recs, "os_clocksource")] == ["slowone", "other"]
    assert all(c["selected"] for c in of(recs, "os_clocksource"))
    restore = of(recs, "os_restore")[0]
    assert restore == {"type": "os_restore", "original": "tsc", "now": "tsc", "restored": True}
    assert (d / "current_clocksource").read_text() == "tsc"
    assert {r["clocksource"] for r in of(recs, "os_tsc_rate")} == {"tsc", "slowone", "other"}


def test_the_default_leaves_a_switchable_clocksource_alone(tmp_path):
    """A folder it could switch (the stand-in sysfs is writable without
    root): by default it is never written, and the heading says why."""
    d = fake_sysfs(tmp_path)
    before = (d / "current_clocksource").stat().st_mtime_ns
    with ClocksourceWatch(d) as watch:
        p = run("--sysfs", str(d), "--quick", "--reads", "200", "--rate-ms", "50")
    recs = records(p.stdout)
    assert watch.seen == ["tsc"] and (d / "current_clocksource").stat().st_mtime_ns == before
    assert not of(recs, "os_clocksource") and not of(recs, "os_restore")
    assert {r["clocksource"] for r in of(recs, "os_latency")} == {"tsc"}
    assert of(recs, "os")[0]["switching"] is False


def test_current_only_is_still_taken_and_both_together_are_refused(tmp_path):
    d = fake_sysfs(tmp_path)
    p = run("--current-only", "--sysfs", str(d), "--quick", "--reads", "200", "--rate-ms", "50")
    assert p.returncode == 0 and not of(records(p.stdout), "os_clocksource"), p.stdout[-2000:]
    for args in (["--current-only", "--all-clocksources"], ["--all-clocksources", "--current-only"]):
        p = run(*args, "--sysfs", str(d))
        assert p.returncode == 64 and p.stdout == "", p
        assert p.stderr.strip() == "clockbench-os: --current-only and --all-clocksources contradict each other: give one of them"
    assert (d / "current_clocksource").read_text() == "tsc\n"
    helped = subprocess.run([str(PROGRAM), "--help"], capture_output=True, text=True, timeout=30).stdout
    assert "--all-clocksources" in helped and "--current-only  the current clocksource only: the default" in helped


@pytest.mark.parametrize("args, message", [
    (["--reads", "abc"], "--reads needs a whole number from 100 to 1000000, not 'abc'"),
    (["--reads", "5"], "--reads needs a whole number from 100 to 1000000, not '5'"),
    (["--rate-ms"], "--rate-ms needs a whole number"),
    (["--frobnicate"], "unknown argument '--frobnicate'"),
])
def test_bad_arguments_are_refused(args, message):
    p = run(*args)
    assert p.returncode == 64
    assert message in p.stderr
    assert p.stdout == ""


def test_the_tsc_step_is_measured_and_cheap_calls_are_not_printed_as_figures(quick):
    """A coarse TSC said out loud: the program measures the TSC's step by the
    image's staircase, and a call whose p50 lies within STEP_FEW steps is
    printed as below the step (the row and its record), never as a figure."""
    p, recs = quick
    (step,) = of(recs, "tsc_step")
    assert step["step_ticks"] >= 1 and step["few"] == 3
    for r in of(recs, "os_latency"):
        below = step["step_ticks"] > 1 and r["p50_ticks"] < step["few"] * step["step_ticks"]
        assert r["below_step"] == below, r
        row = next(l for l in p.stdout.splitlines() if l.startswith(f"  {r['call']} ") and f" {r['path']} " in l)
        assert ("below the TSC's step" in row) == below, row
