"""The native language probes (os/lang/: C++ with libstdc++ and with libc++,
Rust, Go; `make lang`) run on this machine against what is known of them:
the APIs each names and the resolution each library states (the C++ period
from the headers), the clock each reads found by bracketing its `stamp` with
clock_gettime (steady_clock is CLOCK_MONOTONIC, libstdc++'s
high_resolution_clock is system_clock, CLOCK_REALTIME; libc++'s is
steady_clock), the path markers each written by one write(2) and, on a
clocksource with a vDSO, no system call between them, the clock ids each
call hands the vDSO (a gdb breakpoint there: Go's time.Now reads
CLOCK_REALTIME and then CLOCK_MONOTONIC), static programs, and bad input
refused with exit 64 and one line. A missing toolchain fails the
tests under CI (`make deps` installs it) and skips them elsewhere, saying
which package to install."""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import time

import pytest

from helpers.hostlib import as_json
from helpers.paths import BUILD, ROOT

LANG_DIR = BUILD / "lang"
CI = os.environ.get("CI") == "true"
MONO, REAL = time.CLOCK_MONOTONIC, time.CLOCK_REALTIME
CLOCK_NAMES = {MONO: "CLOCK_MONOTONIC", REAL: "CLOCK_REALTIME"}

# What is known of each probe: its APIs in the contract's order, each with
# the resolution its runtime states (ns, None: none stated) and the clock its
# value is on (None: a private origin).
#  - libstdc++ 12 (bits/chrono.h): every clock counts nanoseconds, and
#    `using high_resolution_clock = system_clock`.
#  - libc++ 14 (__chrono/system_clock.h): system_clock's duration is
#    microseconds; __chrono/high_resolution_clock.h: `typedef steady_clock
#    high_resolution_clock` where a monotonic clock exists (Linux).
#  - Rust's std (sys/pal/unix/time.rs): Instant is clock_gettime(CLOCK_MONOTONIC),
#    SystemTime CLOCK_REALTIME; neither states a resolution.
#  - Go (runtime/time_linux_amd64.s): time.Now's wall reading is CLOCK_REALTIME;
#    time.Since's monotonic reading is counted from the runtime's private start.
PROBES = {
    "cpp-libstdc++": ("probe-cpp-libstdcxx", [("steady_clock", 1, MONO), ("system_clock", 1, REAL),
                                              ("high_resolution_clock", 1, REAL)]),
    "cpp-libc++": ("probe-cpp-libcxx", [("steady_clock", 1, MONO), ("system_clock", 1000, REAL),
                                        ("high_resolution_clock", 1, MONO)]),
    "rust": ("probe-rust", [("Instant::now", None, MONO), ("SystemTime::now", None, REAL)]),
    "go": ("probe-go", [("time.Now", None, REAL), ("time.Since", None, None)]),
}
CASES = [(lang, api, claim, clock) for lang, (_, apis) in PROBES.items() for api, claim, clock in apis]


def case_id(case):
    return f"{case[0]}:{case[1]}"


def _build(lang: str):
    """Builds one probe with `make` (a no-op when it is up to date), one make
    at a time across the test processes. Returns its path."""
    binary = PROBES[lang][0]
    LANG_DIR.mkdir(parents=True, exist_ok=True)
    with open(LANG_DIR / ".test-make.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"BUILD={BUILD}", str(LANG_DIR / binary)],
                           capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        text = r.stdout + r.stderr
        missing = [l for l in text.splitlines() if "not found: install" in l]
        if missing and not CI:
            pytest.skip(f"{lang} not measured: {missing[0].removeprefix('error: ')}")
        pytest.fail(f"make {binary} failed{' under CI=true: `make deps` installs it' if missing else ''}:\n{text[-2000:]}")
    return LANG_DIR / binary


@pytest.fixture(scope="module")
def probe():
    built = {}

    def get(lang: str):
        if lang not in built:
            built[lang] = _build(lang)
        return built[lang]
    return get


def run(path, *args, timeout=60):
    return subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def fields(line: str) -> dict[str, str]:
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def one_line(path, *args, timeout=60) -> dict[str, str]:
    r = run(path, *args, timeout=timeout)
    assert r.returncode == 0 and r.stderr == "", (args, r.returncode, r.stderr)
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{args[0]} {args[1]} "), r.stdout
    return fields(lines[0])


# ---- the programs and what they say of themselves ----

@pytest.mark.parametrize("lang", PROBES)
def test_the_probe_is_a_static_program(probe, lang):
    # os-vm's initramfs holds the program alone: no PT_INTERP, no loader
    data = probe(lang).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2  # ELF64
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    assert 3 not in types, f"{lang}: has a PT_INTERP (dynamically linked)"


def _toolchain_version(lang: str) -> str:
    if lang == "cpp-libstdc++":
        return subprocess.run(["g++", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    if lang == "cpp-libc++":
        v = subprocess.run(["clang++", "-dumpversion"], capture_output=True, text=True).stdout.strip()
        return v.split(".")[0]
    if lang == "rust":
        return subprocess.run([os.environ.get("RUSTC", "rustc"), "--version"], capture_output=True, text=True).stdout.strip()
    return subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("lang", PROBES)
def test_info_names_every_api_with_its_stated_resolution(probe, lang):
    r = run(probe(lang), "info")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    runtime = lines[0].removeprefix("runtime ")
    expected = {"cpp-libstdc++": f"libstdc++ (GCC {_toolchain_version(lang)},",
                "cpp-libc++": f"libc++ {_toolchain_version(lang)} (",
                "rust": _toolchain_version(lang), "go": _toolchain_version(lang)}[lang]
    assert lines[0].startswith("runtime ") and runtime.startswith(expected), (runtime, expected)
    apis = PROBES[lang][1]
    assert len(lines) == 1 + len(apis), r.stdout
    for line, (api, claim, clock) in zip(lines[1:], apis):
        m = re.fullmatch(r"api (\S+) claim_ns=(\S+) origin=(clock|private) claim_source=(.+)", line)
        assert m, line
        assert m[1] == api
        assert m[2] == ("none" if claim is None else str(claim)), line
        assert m[3] == ("private" if clock is None else "clock"), line
        if lang.startswith("cpp"):
            assert m[4].startswith(f"std::chrono::{api}::period = 1/{10**9 // claim} s"), line
        else:
            assert m[4] == "none stated", line


# ---- the clock each reads, by bracketing ----

def _ask(proc, timeout=10.0) -> str:
    """Writes one line to the probe, reads its one-line answer (bounded)."""
    os.write(proc.stdin.fileno(), b"x\n")
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and select.select([proc.stdout], [], [], left)[0], f"no answer in {timeout} s"
        chunk = os.read(proc.stdout.fileno(), 256)
        assert chunk, "the probe closed its output"
        buf += chunk
    return buf.decode()


def stamps(path, api, rounds=20):
    """[(value, {clock: (before, after)})]: each value with the two clocks read just before the
    question and just after the answer."""
    proc = subprocess.Popen([str(path), "stamp", api], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        out = []
        for _ in range(rounds):
            before = {c: time.clock_gettime_ns(c) for c in (MONO, REAL)}
            line = _ask(proc)
            after = {c: time.clock_gettime_ns(c) for c in (REAL, MONO)}
            assert re.fullmatch(r"-?\d+\n", line), line
            out.append((int(line), {c: (before[c], after[c]) for c in (MONO, REAL)}))
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        return out
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_stamp_is_bracketed_by_its_own_clock_only(probe, case):
    lang, api, claim, clock = case
    period = claim or 1  # a value counted in coarser units is truncated by up to one of them
    got = stamps(probe(lang), api)
    if clock is None:
        # a private origin: the differences still keep to CLOCK_MONOTONIC's
        for (v0, b0), (v1, b1) in zip(got, got[1:]):
            lo, hi = b1[MONO][0] - b0[MONO][1], b1[MONO][1] - b0[MONO][0]
            assert lo - period < v1 - v0 <= hi, (v1 - v0, lo, hi)
        return
    for value, brackets in got:
        held = [c for c, (before, after) in brackets.items() if before - period < value <= after]
        assert held == [clock], (f"{lang} {api}: {value} is held by {[CLOCK_NAMES[c] for c in held]}, "
                                 f"expected {CLOCK_NAMES[clock]}: {brackets}")


# ---- cost, steps, threads, cross ----

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_cost_is_positive_with_ordered_percentiles(probe, case):
    lang, api = case[:2]
    f = fields_line = one_line(probe(lang), "cost", api, 2000)
    assert (f["method"], f["unit"], f["n"]) == ("tsc", "ticks", "2000"), fields_line
    v = {k: int(f[k]) for k in ("min", "p50", "p99", "p999", "max", "bracket")}
    # a call optimised away, or the bracket not subtracted, would show here
    assert v["p50"] > 0 and v["bracket"] > 0, f
    assert v["min"] <= v["p50"] <= v["p99"] <= v["p999"] <= v["max"], f
    assert v["min"] <= float(f["mean"]) <= v["max"], f


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_steps_count_every_step_once(probe, case):
    lang, api, claim = case[:3]
    n = 5000
    f = one_line(probe(lang), "steps", api, n)
    bins = {int(k): int(c) for k, c in (b.split(":") for b in f["hist"].split(","))} if f["hist"] else {}
    assert sum(bins.values()) + int(f["backward"]) == n - 1, f
    assert bins.get(0, 0) == int(f["zero"]), f
    assert all(k == 0 or k & (k - 1) == 0 for k in bins), f  # powers of two
    if f["least_ns"] != "none":
        least = int(f["least_ns"])
        upper = min(k for k in bins if k)
        assert upper // 2 < least <= upper, f  # the least step sits in the lowest non-zero bin
        # a clock counted in coarser units steps by whole units (libc++'s system_clock: 1 us)
        assert least % (claim or 1) == 0, f
    assert (int(f["max_backward_ns"]) > 0) == (int(f["backward"]) > 0), f


def cpu_list(cpus) -> str:
    return ",".join(map(str, cpus))


def per_thread(f: dict[str, str]) -> list[dict[str, str]]:
    """The threads line's lists, one dict a thread."""
    keys = ("cpu", "least_ns", "median_ns", "wall_ns", "run_ns", "nivcsw")
    return [dict(zip(keys, row)) for row in zip(*(f[k].split(",") for k in keys))]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_threads_each_time_their_calls(probe, case):
    lang, api = case[:2]
    cpus = sorted(os.sched_getaffinity(0))
    for k in (1, 2):
        f = one_line(probe(lang), "threads", api, k, 2000, cpu_list(cpus))
        assert (f["k"], f["n"], f["chunk"], f["pinned"]) == (str(k), "2000", "100", "self"), f
        assert 0 < float(f["per_call_ns"]) <= float(f["max_per_call_ns"]), f
        threads = per_thread(f)
        # thread i on the i-th CPU of the list (round again when there are fewer CPUs than threads)
        assert [t["cpu"] for t in threads] == [str(cpus[i % len(cpus)]) for i in range(k)], f
        for t in threads:
            assert 0 < float(t["least_ns"]) <= float(t["median_ns"]) <= int(t["wall_ns"]) / 100, t  # a chunk is 100 calls
            assert int(t["nivcsw"]) >= 0 and int(t["run_ns"]) > 0, t  # getrusage and the thread's CPU clock
    # without the list: not pinned, said so
    f = one_line(probe(lang), "threads", api, 2, 2000)
    assert f["pinned"] == "no" and f["cpu"] == "-,-", f


@pytest.mark.timed
@pytest.mark.parametrize("lang, api, n", [("cpp-libstdc++", "steady_clock", 1_000_000), ("go", "time.Now", 500_000)])
def test_a_vdso_read_on_n_idle_cpus_costs_what_it_costs_on_one_or_is_marked_disturbed(probe, lib, lang, api, n):
    """Issue 44's known answer: a vDSO read reads shared data and writes
    nothing, so N threads on N idle CPUs each pay what one thread pays. Each
    thread's least chunk is what an idle CPU shows; a run the scheduler
    disturbed (another task on a CPU: this machine is shared) is marked, and
    tried again, up to three times, before it is taken as the answer."""
    cpus = sorted(os.sched_getaffinity(0))
    for attempt in range(3):
        one = one_line(probe(lang), "threads", api, 1, n, cpus[0])
        many = one_line(probe(lang), "threads", api, len(cpus), n, cpu_list(cpus))
        line = f"threads {api} " + " ".join(f"{k}={v}" for k, v in many.items())
        r = as_json(lib.shim_lang_parse(b"threads", line.encode(), api.encode()))
        assert r["ok"] and r["judged"] == len(cpus), r  # every thread's switches and CPU time were read
        rule = [int(t["nivcsw"]) > 0 or int(t["run_ns"]) < 0.9 * int(t["wall_ns"]) for t in per_thread(many)]
        assert r["disturbed"] == sum(rule), (r, many)  # the mark is the contract's rule
        if not r["disturbed"]:
            break
    else:
        return  # marked disturbed three times: said, not taken for a scaling figure
    least_1, median_1 = float(one["least_ns"]), float(one["median_ns"])
    # the slowest of N threads' least chunk, within the issue's bound (1.5x) of one thread's spread
    assert least_1 / 1.5 <= r["least_ns"] <= 1.5 * median_1, (one, many)


@pytest.mark.timed
def test_beside_a_cpu_hog_the_thread_on_its_cpu_is_marked_disturbed(probe, lib):
    """A process busy-looping on one CPU, started here and killed at the end:
    C++ steady_clock's thread pinned beside it shares its CPU, and says so
    (issue 44: "beside a CPU hog, the 2-thread cost is within 1.5x of the
    1-thread cost, or marked disturbed")."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no second CPU to hog beside the first")
    hogged = cpus[-1]
    hog = subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{hogged}}})\nwhile True:\n    pass\n"])
    try:
        time.sleep(0.3)  # the hog running on its CPU
        one = one_line(probe("cpp-libstdc++"), "threads", "steady_clock", 1, 5_000_000, cpus[0], timeout=120)
        two = one_line(probe("cpp-libstdc++"), "threads", "steady_clock", 2, 5_000_000, cpu_list([cpus[0], hogged]), timeout=120)
    finally:
        hog.kill()
        hog.wait()
    line = "threads steady_clock " + " ".join(f"{k}={v}" for k, v in two.items())
    r = as_json(lib.shim_lang_parse(b"threads", line.encode(), b"steady_clock"))
    assert r["ok"], r
    assert hogged in r["disturbed_cpus"], (two, r)  # it shared its CPU with the hog: switches, or CPU time short of wall
    hogged_thread = per_thread(two)[1]
    assert int(hogged_thread["run_ns"]) < 0.9 * int(hogged_thread["wall_ns"]) or int(hogged_thread["nivcsw"]) > 0, two
    assert r["least_ns"] <= 1.5 * float(one["least_ns"]) or r["disturbed"], (one, two)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_cross_runs_pinned_on_two_cpus(probe, case):
    lang, api = case[:2]
    cpus = sorted(os.sched_getaffinity(0))
    a, b = cpus[0], cpus[-1]
    f = one_line(probe(lang), "cross", api, a, b, 50, timeout=120)
    assert (f["a"], f["b"], f["rounds"], f["pinned"]) == (str(a), str(b), "50", "self"), f
    assert int(f["violations"]) + int(f["lost"]) <= 50, f
    assert (int(f["max_violation_ns"]) > 0) == (int(f["violations"]) > 0), f
    # the pin is real: a CPU outside this process's set is refused
    outside = next(c for c in range(1023, -1, -1) if c not in cpus)
    r = run(probe(lang), "cross", api, cpus[0], outside, 5)
    assert r.returncode == 64 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (r.returncode, r.stdout, r.stderr)


# ---- the path markers ----

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_path_writes_the_markers_and_nothing_else_on_stderr(probe, case):
    lang, api = case[:2]
    r = run(probe(lang), "path", api, 1000)
    assert r.returncode == 0 and r.stderr == "cb-path-begin\ncb-path-end\n", (r.returncode, r.stderr)


def _current_clocksource() -> str:
    return open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()


def _has_vdso() -> bool:
    return any(l.rstrip().endswith("[vdso]") for l in open("/proc/self/maps"))


@pytest.fixture(scope="module")
def strace():
    tool = shutil.which("strace")
    if tool is None:
        if CI:
            pytest.fail("strace is missing under CI=true: `make deps` installs it (Debian package strace)")
        pytest.skip("strace is missing: `make deps` installs it (Debian package strace)")
    return tool


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_path_markers_are_one_write_each_around_the_calls(probe, strace, case, tmp_path):
    """strace -f: each marker is one write(2) of the whole line, both by the
    same thread; on the TSC clocksource with a vDSO that thread makes no
    system call at all between them (every read is the vDSO's)."""
    lang, api = case[:2]
    log = tmp_path / "strace.txt"
    r = subprocess.run([strace, "-f", "-qq", "-o", str(log), str(probe(lang)), "path", api, "1000"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    # "TID write(2, "cb-path-begin\n", 14) = 14", or split into "... <unfinished ...>"
    # and "TID <... write resumed>) = 14" when another thread's call came between
    begin = [i for i, l in enumerate(lines) if 'write(2, "cb-path-begin\\n", 14' in l]
    end = [i for i, l in enumerate(lines) if 'write(2, "cb-path-end\\n", 12' in l]
    assert len(begin) == 1 and len(end) == 1 and begin[0] < end[0], "\n".join(lines[-40:])
    tid = lines[begin[0]].split()[0]
    assert lines[end[0]].split()[0] == tid, "the markers were written by two threads"
    mine = [l for l in lines[begin[0]:] if l.split()[0] == tid]
    assert re.search(r"\)\s+= 14$", mine[0]) or re.search(r"<\.\.\. write resumed>\)\s+= 14$", mine[1]), mine[:2]
    between = [l for l in lines[begin[0] + 1:end[0]] if l.split()[0] == tid and "<... write resumed>" not in l]
    if _current_clocksource() == "tsc" and _has_vdso():
        assert between == [], between[:10]
    else:
        pytest.skip(f"clocksource {_current_clocksource()}: the number of system calls is the runner's to judge "
                    f"({len(between)} seen)")


# ---- the clocks each call reads, seen in the vDSO ----

# The clock ids (linux/time.h) each call passes to the vDSO's clock_gettime,
# in order: one read each, except Go's time.Now, which reads the wall clock
# and then the monotonic one (runtime/time_linux_amd64.s, time.now).
VDSO_IDS = {MONO: [1], REAL: [0]}
VDSO_CALLS = {(lang, api): VDSO_IDS[clock] if clock is not None else [1] for lang, api, _, clock in CASES}
VDSO_CALLS["go", "time.Now"] = [0, 1]

# gdb stops the whole process at every breakpoint, so Go's sysmon finds the
# goroutine running for long and preempts it; the scheduler then reads
# CLOCK_MONOTONIC on the same thread (runtime.nanotime1). Those reads are the
# runtime's, not the API's: told apart by the caller's symbol.
GDB_SCRIPT = """set language c
set pagination off
set confirm off
set print thread-events off
catch syscall write
commands
silent
printf "cb T%d write %d\\n", $_thread, $rdi
continue
end
catch syscall clock_gettime gettimeofday time clock_getres
commands
silent
printf "cb T%d syscall %d\\n", $_thread, $rdi
continue
end
starti
break *__vdso_clock_gettime
commands
silent
printf "cb T%d vdso %d ", $_thread, $rdi
x/a *(void **)$sp
continue
end
continue
"""


@pytest.fixture(scope="module")
def gdb():
    tool = shutil.which("gdb")
    if tool is None:
        if CI:
            pytest.fail("gdb is missing under CI=true: `make deps` installs it (Debian package gdb)")
        pytest.skip("gdb is missing: `make deps` installs it (Debian package gdb)")
    return tool


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_call_reads_its_clock_through_the_vdso(probe, gdb, case, tmp_path):
    """A breakpoint on the vDSO's clock_gettime, in the thread that writes the
    path markers, between them: 3 calls make exactly the expected reads (Go's
    time.Now two each, CLOCK_REALTIME then CLOCK_MONOTONIC, which strace
    cannot see); and on the TSC clocksource no clock system call."""
    if not _has_vdso():
        pytest.skip("no vDSO in this kernel: the runner's ptrace counts the system calls instead")
    lang, api = case[:2]
    script = tmp_path / "vdso.gdb"
    script.write_text(GDB_SCRIPT)
    r = subprocess.run([gdb, "-q", "-batch", "-nx", "-x", str(script), "--args", str(probe(lang)), "path", api, "3"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    events = []  # (thread, what, argument, caller)
    for line in r.stdout.splitlines():
        m = re.match(r"cb (T\d+) (write|syscall|vdso) (-?\d+) ?(?:\S+ <([^+>]+))?", line)
        if m:
            events.append((m[1], m[2], int(m[3]), m[4]))
    writes = [i for i, (_, what, arg, _) in enumerate(events) if what == "write" and arg == 2]
    # a write is caught twice, entering and leaving: begin, begin, end, end
    assert len(writes) == 4, r.stdout[-3000:] + r.stderr[-2000:]
    tid = events[writes[0]][0]
    assert {events[i][0] for i in writes} == {tid}, "the markers were written by two threads"
    between = [e[1:] for e in events[writes[1] + 1:writes[2]] if e[0] == tid]
    reads = [(arg, caller) for what, arg, caller in between if what == "vdso"]
    assert all(caller for _, caller in reads), between
    if lang == "go":
        scheduler = [(a, c) for a, c in reads if c == "runtime.nanotime1"]
        assert all(a == 1 for a, _ in scheduler), reads
        if api == "time.Now":
            assert [a for a, c in reads if c != "runtime.nanotime1"] == VDSO_CALLS[lang, api] * 3, reads
            assert {c for a, c in reads if c != "runtime.nanotime1"} == {"time.now"}, reads
        else:
            assert len(scheduler) == len(reads) >= 3, reads
    else:
        assert [a for a, _ in reads] == VDSO_CALLS[lang, api] * 3, reads
    if _current_clocksource() == "tsc":
        assert [a for w, a, _ in between if w == "syscall"] == [], between


# ---- bad input ----

BAD = [
    ("bogus",),
    ("cost",),
    ("cost", "{api}"),
    ("cost", "no-such-api", "10"),
    ("cost", "{api}", "0"),
    ("cost", "{api}", "-1"),
    ("cost", "{api}", "+5"),
    ("cost", "{api}", "1e3"),
    ("cost", "{api}", "99999999999999999999999"),
    ("cost", "{api}", "10", "extra"),
    ("steps", "{api}", "1"),
    ("path", "{api}", ""),
    ("stamp", "{api}", "extra"),
    ("cross", "{api}", "0", "1"),
    ("cross", "{api}", "0", "x", "10"),
    ("cross", "{api}", "0", "1", "0"),
    ("threads", "{api}", "0", "10"),
    ("threads", "{api}", "2"),
    ("threads", "{api}", "2", "10", "0-x"),
    ("threads", "{api}", "2", "10", "3-1"),
    ("threads", "{api}", "2", "10", ""),
    ("threads", "{api}", "2", "10", "0", "extra"),
    ("info", "extra"),
    # budget_ms (issue 48): 1..3600000, the last word of cost, steps, cross and threads
    ("cost", "{api}", "10", "0"),
    ("cost", "{api}", "10", "3600001"),
    ("steps", "{api}", "10", "x"),
    ("cross", "{api}", "0", "1", "10", "-1"),
    ("threads", "{api}", "1", "10", "0", "1e3"),
    ("cost", "{api}", "10", "5", "6"),
]


@pytest.mark.parametrize("lang", PROBES)
@pytest.mark.parametrize("args", BAD, ids=" ".join)
def test_bad_input_exits_64_with_one_line(probe, lang, args):
    api = PROBES[lang][1][0][0]
    r = run(probe(lang), *(a.format(api=api) for a in args), timeout=30)
    assert r.returncode == 64, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "", r.stdout
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{PROBES[lang][0]}: "), r.stderr


def test_no_arguments_exits_64_with_one_line(probe):
    for lang in PROBES:
        r = run(probe(lang))
        assert r.returncode == 64 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (lang, r.stderr)
