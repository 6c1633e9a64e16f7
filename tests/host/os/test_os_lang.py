"""The languages' pure half (os/os_lang_parse.c): the probes' lines parsed
as the contract writes them and refused when they are not, the clock named
by bracketing, the path's clock ids and sentence from a trace, and the
ladder within 80 columns with a claim finer than the least step flagged."""

from __future__ import annotations

import ctypes

import pytest

from helpers.hostlib import LangRow, as_json

PY = 5  # lang_defs' index of python
GO = 3
CPP = 0


def parse(lib, kind, line, api):
    return as_json(lib.shim_lang_parse(kind.encode(), line.encode(), api.encode()))


def test_a_tsc_cost_line_is_read_whole(lib):
    r = parse(lib, "cost", "cost steady_clock method=tsc unit=ticks n=20000 min=40 p50=52 mean=55.5 p99=80 p999=200 max=9000 bracket=36",
              "steady_clock")
    assert r["ok"], r
    assert r["tsc"] and r["n"] == 20000 and r["p50"] == 52 and r["p999"] == 200 and r["bracket"] == 36


def test_a_batch_cost_line_has_no_percentiles_it_cannot_give(lib):
    r = parse(lib, "cost", "cost System.nanoTime method=batch unit=ns n=20000 batch=1000 min=18.2 p50=19.5 mean=20.1 max=31.0 "
              "timer=System.nanoTime", "System.nanoTime")
    assert r["ok"], r
    assert not r["tsc"] and r["batch"] == 1000 and r["min"] == 18.2 and r["timer"] == "System.nanoTime"


def test_the_p50_interval_is_the_probes_order_statistics_widened_by_the_timers_step(lib):
    # issue 44: every cost with its uncertainty. Single calls: ticks at 2.5 GHz (0.4 ns a tick),
    # widened by the TSC's step (10 ns here); batches: ns, widened by the batch timer's step over
    # the batch (40 ns / 1000 calls)
    r = parse(lib, "cost", "cost steady_clock method=tsc unit=ticks n=20000 min=40 p50=52 mean=55.5 p99=80 p999=200 max=9000 "
              "bracket=36 p50_lo=50 p50_hi=55", "steady_clock")
    assert r["ok"] and r["ci"], r
    assert r["ci_lo_ns"] == 50 * 0.4 - 10 and r["ci_hi_ns"] == 55 * 0.4 + 10
    r = parse(lib, "cost", "cost System.nanoTime method=batch unit=ns n=20000 batch=1000 min=18.2 p50=19.5 mean=20.1 max=31.0 "
              "timer=System.nanoTime p50_lo=19.1 p50_hi=20.2", "System.nanoTime")
    assert r["ok"] and r["ci"] and r["ci_lo_ns"] == 19.06 and r["ci_hi_ns"] == 20.24, r
    # a probe of the older contract gives none: no interval, not a refusal
    r = parse(lib, "cost", "cost steady_clock method=tsc unit=ticks n=20 min=40 p50=52 mean=55.5 p99=80 p999=200 max=9000 bracket=36",
              "steady_clock")
    assert r["ok"] and not r["ci"]


@pytest.mark.parametrize("line, why", [
    ("cost steady_clock method=tsc unit=ticks n=10 min=1 p50=2 mean=2 p99=3 p999=4 max=5 bracket=1 p50_lo=3 p50_hi=4", "do not bracket"),
    ("cost steady_clock method=tsc unit=ticks n=10 min=1 p50=2 mean=2 p99=3 p999=4 max=5 bracket=1 p50_lo=1", "no p50_hi="),
    ("cost steady_clock method=tsc unit=ticks n=zebra min=1 p50=2 mean=2 p99=3 p999=4 max=5 bracket=1", "n= is not a number"),
    ("cost steady_clock method=tsc unit=ticks n=10 min=1 p50=2 mean=2 p999=4 max=5 bracket=1", "no p99="),
    ("cost steady_clock method=tsc unit=ns n=10 min=1 p50=2 mean=2 p99=3 p999=4 max=5 bracket=1", "neither tsc/ticks"),
    ("cost steady_clock method=tsc unit=ticks n=10 min=5 p50=2 mean=2 p99=3 p999=4 max=5 bracket=1", "out of order"),
    ("cost steady_clock method=tsc unit=ticks n=10 min=1 p50=nan mean=2 p99=3 p999=4 max=5 bracket=1", "p50= is not a number"),
    ("cost system_clock method=tsc unit=ticks n=10 min=1 p50=2 mean=2 p99=3 p999=4 max=5 bracket=1", "expected a line 'cost steady_clock"),
    ("Segmentation fault", "expected a line"),
])
def test_a_garbled_cost_line_is_refused_with_its_reason(lib, line, why):
    r = parse(lib, "cost", line, "steady_clock")
    assert not r["ok"] and why in r["why"], r


def test_a_steps_line_and_its_histogram(lib):
    r = parse(lib, "steps", "steps perf_counter_ns n=20000 least_ns=61 zero=0 backward=0 max_backward_ns=0 hist=64:19000,128:990,1024:9",
              "perf_counter_ns")
    assert r["ok"], r
    assert r["least_known"] and r["least_ns"] == 61 and r["hist"] == [64, 19000, 128, 990, 1024, 9]
    r = parse(lib, "steps", "steps Date.now n=100 least_ns=none zero=99 backward=0 max_backward_ns=0 hist=0:99", "Date.now")
    assert r["ok"] and not r["least_known"] and r["zero"] == 99
    assert not parse(lib, "steps", "steps Date.now n=100 least_ns=none zero=99 backward=0 max_backward_ns=0 hist=0-99", "Date.now")["ok"]


def test_cross_and_threads_lines(lib):
    r = parse(lib, "cross", "cross time.Now a=0 b=1 rounds=2000 violations=3 max_violation_ns=41 lost=0 pinned=self", "time.Now")
    assert r["ok"] and r["violations"] == 3 and r["max_violation_ns"] == 41 and r["pinned"] == "self"
    assert not parse(lib, "cross", "cross time.Now a=0 b=1 rounds=2 violations=3 max_violation_ns=41 lost=0 pinned=self", "time.Now")["ok"]
    assert not parse(lib, "cross", "cross time.Now a=0 b=1 rounds=2 violations=0 max_violation_ns=0 lost=0 pinned=maybe", "time.Now")["ok"]
    r = parse(lib, "threads", "threads Instant::now k=2 n=20000 per_call_ns=25.5 max_per_call_ns=26.0", "Instant::now")
    assert r["ok"] and r["k"] == 2 and r["per_call_ns"] == 25.5
    assert not parse(lib, "threads", "threads Instant::now k=2 n=20000 per_call_ns=30 max_per_call_ns=26.0", "Instant::now")["ok"]


THREADS = ("threads steady_clock k=2 n=20000 per_call_ns=40.5 max_per_call_ns=52.0 chunk=1000 pinned=self cpu=0,1 "
           "least_ns=20.1,20.4 median_ns=20.3,21.9 wall_ns=810000,1040000 run_ns=809000,{run1} nivcsw=0,{sw1}")


def test_a_threads_line_gives_the_slowest_threads_least_chunk_and_says_who_was_disturbed(lib):
    # issue 44: threads that mean what they say. Idle: no switch, CPU time all of wall time
    r = parse(lib, "threads", THREADS.format(run1=1039000, sw1=0), "steady_clock")
    assert r["ok"] and r["chunked"] and r["chunk"] == 1000 and r["pinned"] == "self", r
    assert (r["least_ns"], r["median_ns"]) == (20.4, 21.9), r  # the slowest thread's least, the slowest median
    assert (r["disturbed"], r["judged"], r["switches"], r["disturbed_cpus"]) == (0, 2, 0, []), r
    assert r["share_known"] and r["cpu_share"] == 0.999, r  # 809000 / 810000, to 1/1000
    # preempted (an involuntary switch) on CPU 1
    r = parse(lib, "threads", THREADS.format(run1=1039000, sw1=3), "steady_clock")
    assert r["ok"] and (r["disturbed"], r["disturbed_cpus"], r["switches"]) == (1, [1], 3), r
    # sharing its CPU without a switch seen: CPU time under 90 % of wall time
    r = parse(lib, "threads", THREADS.format(run1=600000, sw1=0), "steady_clock")
    assert r["ok"] and (r["disturbed"], r["disturbed_cpus"]) == (1, [1]) and r["cpu_share"] == 0.577, r
    # a runtime with no thread CPU time and no /proc: shown, not judged
    r = parse(lib, "threads", THREADS.format(run1="-", sw1="-").replace("run_ns=809000", "run_ns=-").replace("nivcsw=0,", "nivcsw=-,"),
              "steady_clock")
    assert r["ok"] and (r["disturbed"], r["judged"], r["share_known"]) == (0, 0, False), r


def test_an_older_threads_line_is_still_read_as_its_loops_mean(lib):
    r = parse(lib, "threads", "threads Instant::now k=2 n=20000 per_call_ns=25.5 max_per_call_ns=26.0", "Instant::now")
    assert r["ok"] and not r["chunked"] and r["per_call_ns"] == 25.5, r


@pytest.mark.parametrize("change, why", [
    (("cpu=0,1", "cpu=0"), "cpu= is not a list of 2"),
    (("least_ns=20.1,20.4", "least_ns=20.1,-"), "least_ns= is not a list of 2 numbers"),
    (("median_ns=20.3,21.9", "median_ns=20.3,19.9"), "least chunk is above its median"),
    (("pinned=self", "pinned=maybe"), "pinned= is not"),
    (("nivcsw=0,0", "nivcsw=0,0,0"), "nivcsw= is not a list of 2"),
    (("wall_ns=810000,1040000", "wall_ns=810000,"), "wall_ns= is not a list of 2"),
    (("chunk=1000", "chunk=0"), "chunk= is 0"),
])
def test_a_garbled_threads_line_is_refused_with_its_reason(lib, change, why):
    line = THREADS.format(run1=1039000, sw1=0).replace(*change)
    r = parse(lib, "threads", line, "steady_clock")
    assert not r["ok"] and why in r["why"], (line, r)


@pytest.mark.parametrize("line, ok, ns", [("1732694400123456789", True, 1732694400123456789), ("42\r", True, 42),
                                          ("-5", False, 0), ("1.5e9", False, 0), ("", False, 0), ("99999999999999999999999", False, 0)])
def test_a_stamp_is_a_whole_number_of_ns(lib, line, ok, ns):
    r = parse(lib, "stamp", line, "")
    assert r["ok"] == ok and (not ok or r["ns"] == ns)


def test_info_gives_the_runtime_and_each_apis_claim(lib):
    text = ("runtime CPython 3.11.7\n"
            "api perf_counter_ns claim_ns=1 origin=clock claim_source=time.get_clock_info('perf_counter').resolution\n"
            "api monotonic_ns claim_ns=1 origin=clock claim_source=x\n"
            "api time_ns claim_ns=1 origin=clock claim_source=x\n"
            "api process_time_ns claim_ns=1 origin=clock claim_source=x\n"
            "api perf_counter claim_ns=none origin=clock claim_source=none stated\n")
    r = as_json(lib.shim_lang_info(PY, text.encode()))
    assert r["ok"], r
    assert r["runtime"] == "CPython 3.11.7" and r["claims_milli_ns"] == [1000, 1000, 1000, 1000, -1]
    assert r["claim_source_0"] == "time.get_clock_info('perf_counter').resolution"
    # an API out of the contract's order, a missing one, no runtime: refused
    assert "expected 'perf_counter_ns'" in as_json(lib.shim_lang_info(PY, text.replace("api perf_counter_ns", "api monotonic").encode()))["why"]
    assert "expected 5" in as_json(lib.shim_lang_info(PY, text.rsplit("api perf_counter ", 1)[0].encode()))["why"]
    assert "no 'runtime'" in as_json(lib.shim_lang_info(PY, text.split("\n", 1)[1].encode()))["why"]
    node = "runtime Node.js v20\napi process.hrtime.bigint claim_ns=none origin=clock claim_source=none stated\n" \
           "api performance.now claim_ns=none origin=private claim_source=none stated\napi Date.now claim_ns=none origin=clock claim_source=none\n"
    r = as_json(lib.shim_lang_info(6, node.encode()))
    assert r["ok"] and r["private"] == [0, 1, 0]


def test_lang_names_are_picked_and_a_bad_one_is_named(lib):
    pick = (ctypes.c_bool * 8)()
    bad = ctypes.create_string_buffer(48)
    assert lib.lang_pick(b"go,python", pick, bad, 48)
    assert [bool(x) for x in pick] == [False, False, False, True, False, True, False, False]
    assert not lib.lang_pick(b"go,cobol", pick, bad, 48) and bad.value == b"cobol"
    assert not lib.lang_pick(b"go,", pick, bad, 48)
    assert lib.lang_keys_text() == b"cpp-libstdc++, cpp-libc++, rust, go, java, python, node, dotnet"


REAL, MONO, PCPU, TCPU, RAW, REAL_C, MONO_C, BOOT = range(8)


def bracket(lib, before, after, value, below=1, above=1):
    b = (ctypes.c_uint64 * 8)(*before)
    a = (ctypes.c_uint64 * 8)(*after)
    m = lib.lang_bracket_round(b, a, value, below, above)
    return {i for i in range(8) if m & (1 << i)}


def test_bracketing_names_the_clock_whose_reads_hold_the_value(lib):
    # realtime ~1.7e18, monotonic ~1e12 (boottime equal: never slept), raw 200 us behind, coarse 3 ms behind
    before = [1_700_000_000_000_000_000, 1_000_000_000_000, 5_000_000, 4_000_000, 999_999_800_000, 1_699_999_999_997_000_000,
              999_997_000_000, 1_000_000_000_000]
    after = [x + 50_000 if i not in (REAL_C, MONO_C) else x for i, x in enumerate(before)]
    assert bracket(lib, before, after, 1_000_000_020_000) == {MONO, BOOT}
    assert bracket(lib, before, after, 1_700_000_000_000_020_000) == {REAL}
    # a millisecond clock truncated to its unit lies under its bracket: allowed by its step
    assert bracket(lib, before, after, 1_699_999_999_999_000_000) == set()
    assert bracket(lib, before, after, 1_699_999_999_999_000_000, below=1_000_001) == {REAL}
    assert bracket(lib, before, after, 4_000_010) == {TCPU}
    # a clock not read (0, 0) never holds
    before[BOOT] = after[BOOT] = 0
    assert bracket(lib, before, after, 1_000_000_020_000) == {MONO}


def test_clocks_equal_here_are_said_alike(lib):
    before = (ctypes.c_uint64 * 8)(1 << 60, 1000, 0, 0, 990, 0, 0, 1000)
    m = lib.lang_bracket_alike(before, MONO, 5)
    assert m == (1 << MONO) | (1 << BOOT)
    assert lib.lang_bracket_alike(before, MONO, 10) & (1 << RAW)


CLOCK_GETTIME, GETTIMEOFDAY, FUTEX = 228, 96, 202


def trace(lib, calls, seen, hidden=None, bracket_mask=0, bracketed=False, private=False):
    def arrays(pairs):
        n = len(pairs)
        return (ctypes.c_long * max(n, 1))(*[p[0] for p in pairs]), (ctypes.c_uint64 * max(n, 1))(*[p[1] for p in pairs]), n
    s_nr, s_a, s_n = arrays(seen)
    h_nr, h_a, h_n = arrays(hidden or [])
    return as_json(lib.shim_lang_trace(s_nr, s_a, s_n, h_nr, h_a, h_n, hidden is not None, calls, bracket_mask, bracketed, private))


def test_a_syscall_every_call_names_its_clock(lib):
    r = trace(lib, 1000, [(CLOCK_GETTIME, 2)] * 1000, bracket_mask=1 << PCPU, bracketed=True)
    assert r["per_1000"] == 1000 and r["pattern"] == [2]
    assert r["sentence"] == "Lang api: a syscall every call (CLOCK_PROCESS_CPUTIME_ID); by bracketing: CLOCK_PROCESS_CPUTIME_ID"
    # a process's own CPU clock by pid (~pid << 3 | 2) is the process CPU-time clock
    r = trace(lib, 10, [(CLOCK_GETTIME, (~1234 << 3 | 2) & 0xffffffff)] * 10)
    assert r["pattern"] == [2]


def test_go_time_now_without_a_vdso_is_two_syscalls_in_order(lib):
    r = trace(lib, 1000, [(CLOCK_GETTIME, 0), (CLOCK_GETTIME, 1)] * 1000)
    assert r["per_1000"] == 2000 and r["pattern"] == [0, 1]
    assert "two syscalls every call (CLOCK_REALTIME then CLOCK_MONOTONIC)" in r["sentence"]


def test_the_vdso_path_takes_its_clock_ids_from_the_trace_with_the_vdso_hidden(lib):
    r = trace(lib, 1000, [], hidden=[(CLOCK_GETTIME, 0), (CLOCK_GETTIME, 1)] * 1000, bracket_mask=1 << REAL, bracketed=True)
    assert r["per_1000"] == 0
    assert r["sentence"] == "Lang api: two vDSO reads, CLOCK_REALTIME then CLOCK_MONOTONIC; by bracketing: CLOCK_REALTIME"
    r = trace(lib, 1000, [], hidden=[(GETTIMEOFDAY, 0)] * 1000)
    assert "a vDSO read, gettimeofday" in r["sentence"]
    r = trace(lib, 1000, [], hidden=[], private=True)
    assert "no clock call even with the vDSO hidden" in r["sentence"] and "private origin" in r["sentence"]
    r = trace(lib, 1000, [], bracket_mask=(1 << MONO) | (1 << BOOT), bracketed=True)
    assert r["sentence"] == "Lang api: no system call (the vDSO); by bracketing: CLOCK_MONOTONIC or CLOCK_BOOTTIME"


def test_other_system_calls_are_counted_and_said(lib):
    r = trace(lib, 1000, [(CLOCK_GETTIME, 1)] * 1000 + [(FUTEX, 0)] * 3)
    assert r["syscalls"] == 1003 and r["other"] == 3 and r["pattern"] == [1]
    assert "3 other system calls per 1000 (the first: futex, number 202)" in r["sentence"]
    r = trace(lib, 1000, [(CLOCK_GETTIME, 1)] * 1000 + [(FUTEX, 0)])
    assert "1 other system call per 1000 (the first: futex, number 202)" in r["sentence"]
    r = trace(lib, 1000, [(CLOCK_GETTIME, 1)] * 1000 + [(15, 0)] * 51 + [(FUTEX, 0)])  # Go's signals on hpet
    assert "52 other system calls per 1000 (the first: rt_sigreturn, number 15)" in r["sentence"]
    r = trace(lib, 1000, [(CLOCK_GETTIME, 1)] * 1000 + [(999, 0)])  # a number with no name here
    assert "1 other system call per 1000 (the first: number 999)" in r["sentence"]


def row(name, p50=None, method=b"t", step=None, claim=None, sys=None, clock=b"", heading=False, below=False):
    r = LangRow()
    r.name = name.encode()
    r.heading = heading
    r.cost_known = p50 is not None
    r.p50_ns = p50 or 0
    r.method = method
    r.below_step = below
    r.step_known = step is not None
    r.least_step_ns = step or 0
    r.claim_known = claim is not None
    r.claim_ns = claim or 0
    r.path_known = sys is not None
    r.syscalls_per_1000 = sys or 0
    r.via_syscall = (sys or 0) >= 500
    r.clock = clock
    return r


def ladder(lib, rows, bare):
    arr = (LangRow * len(rows))(*rows)
    buf = ctypes.create_string_buffer(8192)
    lib.lang_ladder_format(arr, len(rows), bare, buf, 8192)
    return buf.value.decode()


def test_the_ladder_fits_80_columns_and_flags_a_claim_finer_than_seen(lib):
    rows = [row("clockbench-os (C, glibc)", heading=True), row("  rdtsc (the bare read)", 8.0, step=0.4, clock=b"TSC"),
            row("  vDSO clock_gettime", 20.0, step=20, claim=1, sys=0, clock=b"MONO"),
            row("  syscall clock_gettime", 170.0, step=170, claim=1, sys=1000, clock=b"MONO"),
            row("Python", heading=True), row("  perf_counter_ns", 61.6, method=b"b", step=62, claim=1, sys=0, clock=b"MONO"),
            row("  process_time_ns", 2937, method=b"b", step=681, claim=1, sys=1000, clock=b"PCPU"),
            row(".NET", heading=True), row("  Stopwatch.GetTimestamp", 35, method=b"b", step=100, claim=100, sys=0, clock=b"MONO"),
            row("Go", heading=True), row("  time.Now", 45, step=30, sys=2000, clock=b"REAL+MONO|BOOT|RAW|X"),
            row("  not measured", None), row("  currentTimeMillis", 23.4, method=b"b", step=2e6, sys=0, clock=b"REAL"),
            row("  coarse", 23.4, step=4.5e6, claim=4e6, sys=0, clock=b"MONO_C")]
    text = ladder(lib, rows, 8.0)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    by = {line.split()[0]: line for line in lines if line.strip()}
    assert by["perf_counter_ns"].split()[1:] == ["61.6b", "7.7", "62.0", "1.00!", "0", "vdso", "MONO"]
    assert by["Stopwatch.GetTimestamp"].split()[4] == "100"  # a claim no finer than the step: not flagged
    assert by["process_time_ns"].split()[5:8] == ["1000", "sys", "PCPU"]
    assert by["rdtsc"].split()[4:7] == ["8.00", "1.0", "0.40"]
    assert by["not"].split()[2:] == ["-", "-", "-", "none", "-", "-"]
    assert "time.Now" in text and "2000 sys" in by["time.Now"]
    assert by["currentTimeMillis"].split()[3] == "2e6" and by["coarse"].split()[3:5] == ["4.5e6", "4e6"]
    assert lib.lang_claim_finer(ctypes.byref(row("x", 1, step=62, claim=1))) is True
    assert lib.lang_claim_finer(ctypes.byref(row("x", 1, step=100, claim=100))) is False
    assert lib.lang_claim_finer(ctypes.byref(row("x", 1, claim=1))) is False


def test_ticks_become_ns_at_the_measured_rate(lib):
    lib.lang_ticks_ns.restype = ctypes.c_double
    lib.lang_ticks_ns.argtypes = [ctypes.c_double, ctypes.c_double]
    assert lib.lang_ticks_ns(2600.0, 2.6e9) == pytest.approx(1000.0)
    assert lib.lang_ticks_ns(52.0, 2.6e9) == pytest.approx(20.0)
    assert lib.lang_ticks_ns(52.0, 0.0) == 0  # no rate: no figure


# ---- issue 48: a bound on the whole of each command, APIs a runtime lacks, cost in rounds ----

def test_a_bounded_command_says_whether_its_bound_cut_it(lib):
    cost = ("cost steady_clock method=tsc unit=ticks n=812 min=40 p50=52 mean=55.5 p99=80 p999=200 max=9000 bracket=36 "
            "p50_lo=50 p50_hi=54")
    r = parse(lib, "cost", cost + " budget_ms=2000 cut=1", "steady_clock")
    assert r["ok"] and r["bounded"] and r["cut"] and r["budget_ms"] == 2000 and r["n"] == 812, r
    r = parse(lib, "cost", cost + " budget_ms=2000 cut=0", "steady_clock")
    assert r["ok"] and r["bounded"] and not r["cut"], r
    r = parse(lib, "cost", cost, "steady_clock")  # no bound given: neither field, as before
    assert r["ok"] and not r["bounded"] and not r["cut"], r
    for bad in (" cut=1", " budget_ms=2000", " budget_ms=2000 cut=yes", " budget_ms=x cut=1"):
        r = parse(lib, "cost", cost + bad, "steady_clock")
        assert not r["ok"] and ("budget_ms" in r["why"] or "cut" in r["why"]), (bad, r)
    cross = "cross time.Now a=0 b=1 rounds=37 violations=0 max_violation_ns=0 lost=1 pinned=self budget_ms=3000 cut=1"
    r = parse(lib, "cross", cross, "time.Now")
    assert r["ok"] and r["cut"] and r["rounds"] == 37 and r["lost"] == 1, r
    steps = "steps time.Now n=900 least_ns=20 zero=0 backward=0 max_backward_ns=0 hist=32:899 budget_ms=3000 cut=1"
    assert parse(lib, "steps", steps, "time.Now")["cut"]


def test_a_bounded_threads_line_counts_what_each_thread_did(lib):
    line = THREADS.format(run1=1039000, sw1=0) + " done=20000,7000 budget_ms=3000 cut=1"
    r = parse(lib, "threads", line, "steady_clock")
    assert r["ok"] and r["cut"] and r["least_done"] == 7000, r
    r = parse(lib, "threads", THREADS.format(run1=1039000, sw1=0) + " budget_ms=3000 cut=1", "steady_clock")
    assert not r["ok"] and "done=" in r["why"], r
    r = parse(lib, "threads", THREADS.format(run1=1039000, sw1=0) + " done=20000,90000 budget_ms=3000 cut=0", "steady_clock")
    assert not r["ok"] and "more calls than n=" in r["why"], r


def test_an_api_the_runtime_lacks_is_one_line_and_the_rest_is_read(lib):
    text = ("runtime CPython 3.6.9\n"
            "api perf_counter_ns absent=time.perf_counter_ns needs Python 3.7; this is 3.6.9\n"
            "api monotonic_ns absent=time.monotonic_ns needs Python 3.7; this is 3.6.9\n"
            "api time_ns absent=time.time_ns needs Python 3.7; this is 3.6.9\n"
            "api process_time_ns absent=time.process_time_ns needs Python 3.7; this is 3.6.9\n"
            "api perf_counter claim_ns=none origin=clock claim_source=none stated\n")
    r = as_json(lib.shim_lang_info(PY, text.encode()))
    assert r["ok"], r
    absent = r["absent"].split("|")
    assert absent[0] == "time.perf_counter_ns needs Python 3.7; this is 3.6.9" and absent[4] == "", r
    # an absent API still holds its place in the contract's order
    assert "expected 'perf_counter_ns'" in as_json(lib.shim_lang_info(PY, text.replace("api perf_counter_ns", "api monotonic").encode()))["why"]


def rounds(lib, p50, lo=None, hi=None, ref=None, bare=None, step=0.0, fastest=0.0):
    n = len(p50)
    arr = lambda v: (ctypes.c_double * n)(*v)
    return as_json(lib.shim_lang_rounds(arr(p50), arr(lo or p50), arr(hi or p50), arr(ref or [0] * n), arr(bare or [0] * n), n,
                                        step, fastest))


@pytest.mark.parametrize("n, k, coverage", [(1, 1, 0), (2, 1, 0.5), (5, 1, 0.9375), (6, 1, 0.96875), (7, 1, 0.984375),
                                            (8, 1, 0.992188), (9, 2, 0.960938), (12, 3, 0.961426), (15, 4, 0.964844)])
def test_the_rounds_interval_takes_the_order_statistics_that_hold_the_median_with_95_percent(lib, n, k, coverage):
    # 1 - 2 P(Bin(n, 1/2) <= k-1): for 9 rounds the 2nd lowest and 2nd highest, 96.1 %
    r = as_json(lib.shim_lang_rounds_rank(n))
    assert r["k"] == k and abs(r["coverage"] - coverage) < 2e-6, r


NINE = [30, 31, 60, 30.5, 29.8, 30.2, 58, 30.1, 30.4]
NINE_REF = [10000, 10100, 19000, 10050, 9990, 10000, 18500, 10020, 10010]
NINE_BARE = [10, 10, 20, 10, 10, 10, 19, 10, 10]


def test_rounds_give_the_hosts_full_speed_figure_and_an_interval_over_those_rounds(lib):
    # nine rounds of a clock read at 30 ns, two of them while the host ran slower (its reference loop
    # 1.9x the fastest, the call 60 ns): those two are left out, the median is the full-speed figure,
    # and the interval is the order statistics of the seven kept (k=1 for 7: 98.4 %), widened by the
    # timer's step (0.5 ns here); the rounds' own intervals do not widen it
    lo = [v - 5 for v in NINE]
    hi = [v + 5 for v in NINE]
    r = rounds(lib, NINE, lo, hi, NINE_REF, NINE_BARE, step=0.5)
    assert r["ok"] and r["kept"] == 7 and r["slow_rounds"] == 2 and not r["slow_throughout"], r
    assert r["p50_ns"] == 30.2 and r["median_round"] == 5 and r["p50_all_ns"] == 30.4, r
    assert r["lo_ns"] == 29.3 and r["hi_ns"] == 31.5 and r["confidence"] == 0.984, r  # 29.8 - 0.5, 31 + 0.5
    assert r["ratio_known"] and r["ratio_p50"] == 3.02, r  # the kept rounds' own ratios to the bare read
    assert r["speed_known"] and r["speed_spread"] == 0.902, r  # 19000 / 9990 - 1, over every round
    # no reference loop timed: every round kept, the interval over all nine (2nd lowest, 2nd highest)
    r = rounds(lib, NINE, step=0.5)
    assert r["kept"] == 9 and (r["p50_ns"], r["lo_ns"], r["hi_ns"], r["confidence"]) == (30.4, 29.5, 58.5, 0.961), r
    assert not r["speed_known"] and not r["ratio_known"], r


def test_a_host_slow_throughout_gives_every_rounds_figure_and_says_so(lib):
    # the run's fastest loop (8000 ns, timed earlier) is far below every round's: none at full speed,
    # so every round counts, and the figure is marked a slow host's
    r = rounds(lib, NINE, ref=NINE_REF, bare=NINE_BARE, fastest=8000)
    assert r["slow_throughout"] and r["kept"] == 9 and r["slow_rounds"] == 9 and r["p50_ns"] == 30.4, r
    # two rounds at full speed are not enough to stand for the host (LANG_ROUNDS_FULL_MIN is 3)
    ref = [9000, 9100] + [20000] * 7
    r = rounds(lib, NINE, ref=ref, fastest=9000)
    assert r["slow_throughout"] and r["kept"] == 9, r
    ref = [9000, 9100, 9200] + [20000] * 6
    r = rounds(lib, NINE, ref=ref, fastest=9000)
    assert not r["slow_throughout"] and r["kept"] == 3 and r["p50_ns"] == 31 and r["confidence"] == 0.75, r


def test_one_round_is_its_own_interval(lib):
    r = rounds(lib, [42.0], [41.0], [43.5])
    assert r["ok"] and (r["p50_ns"], r["lo_ns"], r["hi_ns"], r["confidence"], r["kept"]) == (42, 41, 43.5, 0, 1), r


def test_no_rounds_is_no_figure(lib):
    arr = (ctypes.c_double * 1)(0)
    assert not as_json(lib.shim_lang_rounds(arr, arr, arr, arr, arr, 0, 0.0, 0.0))["ok"]
