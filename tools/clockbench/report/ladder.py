"""The ladder of a clockbench-os run (issue 36, docs/os-side.md "The
ladder"): per clocksource, from the bare counter up to each language's
clock, what one read costs and what it is.

Rows, in order: the bare counter's read beneath the clocksource (from the
image's run on the same machine when one is given, else the OS run's own
rdtsc from user space, said so); clockbench-os's own reads of
CLOCK_MONOTONIC through the vDSO called directly, libc and the raw syscall,
and libc's CLOCK_REALTIME (libc: the host's own C library, by clockbench-os's
helper; where it was not measured, the glibc linked into clockbench-os,
path "libc-static", named so); then every `lang_clock` record of that
clocksource (docs/output.md). Each row: cost p50 (with the method that made
it: "tsc", one call between serialised TSC reads, or "batch", a batch's
cost per call), its ratio to the bare read, the least step seen, the
resolution claimed (flagged "!" where it is finer than half the least step
seen: it cannot be so), the path (vdso or syscall, and the system calls per
1000 calls) and the clock id. A missing figure is "-", never an error.

Used by the OS run's page (report.py), `compare` of OS runs (os_side.py)
and the ladder plot (plots.py)."""

from __future__ import annotations

import math

from clockbench.records import figures
from clockbench.report import os_side  # the one mapping of a clocksource to the bare counter beneath it

MONOTONIC = "clock_gettime(CLOCK_MONOTONIC)"
REALTIME = "clock_gettime(CLOCK_REALTIME)"
# clockbench-os's own rows: (layer, the os_latency call and path, clock id)
OS_ROWS = (
    ("vDSO", MONOTONIC, "vdso", "CLOCK_MONOTONIC"),
    ("libc", MONOTONIC, "libc", "CLOCK_MONOTONIC"),
    ("libc", REALTIME, "libc", "CLOCK_REALTIME"),
    ("syscall", MONOTONIC, "syscall", "CLOCK_MONOTONIC"),
)
# The route each of clockbench-os's own rows calls (not a counted path: the
# vDSO's entry itself falls back to the syscall on a clocksource with no
# vDSO mode, as hpet and acpi_pm on x86-64).
OS_ROUTES = {"vdso": "vDSO entry", "libc": "host libc", "libc-static": "static glibc", "syscall": "raw syscall"}
# The languages' names as the ladder shows them (os/os_lang_parse.c's titles).
LANGUAGE_TITLES = {"cpp-libstdc++": "C++ (libstdc++)", "cpp-libc++": "C++ (libc++)", "rust": "Rust", "go": "Go",
                   "java": "Java", "python": "Python", "node": "Node.js", "dotnet": ".NET"}
HEAD = ["layer", "read", "cost p50 (95% interval)", "method", "x bare", "least step", "claimed", "path", "clock"]
# A claim finer than this share of the least step seen cannot be the clock's
# resolution (as the runner judges it: claim_finer_than_step).
CLAIM_SHARE = 0.5


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _l(v) -> list[dict]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def lang_records(res: dict) -> list[dict]:
    return _l(res.get("lang_clock"))


def has_languages(res: dict) -> bool:
    return bool(lang_records(res))


def clocksources(res: dict) -> list[str]:
    """The clocksources with a ladder: those the OS run measured calls on or
    languages on, in the order first seen."""
    seen: list[str] = []
    for r in _l(res.get("os_latency")) + lang_records(res):
        cs = r.get("clocksource")
        if isinstance(cs, str) and cs not in seen:
            seen.append(cs)
    return seen


def _latency(res: dict, cs: str, call: str, path: str) -> dict:
    return next((r for r in _l(res.get("os_latency")) if (r.get("clocksource"), r.get("call"), r.get("path")) == (cs, call, path)), {})


def _resolution(res: dict, cs: str, call: str, path: str) -> dict:
    return next((r for r in _l(res.get("os_resolution")) if (r.get("clocksource"), r.get("call"), r.get("path")) == (cs, call, path)), {})


def _first_of(res: dict, call: str) -> dict:
    """A call measured once (rdtsc): its record on whichever clocksource."""
    return next((r for r in _l(res.get("os_latency")) if r.get("call") == call), {})


# A CPU-time clock counts the scheduler's time (sched_clock), not the
# clocksource: its row is the same clock under every clocksource, and says so.
CPU_TIME_MARK = " (CPU time: not the clocksource)"


def is_cpu_time(clock_id) -> bool:
    return isinstance(clock_id, str) and "CPUTIME" in clock_id


def ratio(v, base, base_is_bound: bool = False) -> str:
    """v over the bare read; ">=" where the bare read is under the TSC's
    step (its p50 then bounds it from above, so the ratio is at least this)."""
    if not (_num(v) and _num(base) and base > 0):
        return "-"
    return (">=" if base_is_bound else "") + f"{v / base:.1f}x"


def clock_text(v) -> str:
    """A clock id without its CLOCK_ prefix (the column says clock)."""
    return str(v).replace("CLOCK_", "") if v else "-"


def cost_text(v, below_step: bool = False) -> str:
    if not _num(v):
        return "-"
    return ("< " if below_step else "") + figures.ns(v)


def interval_text(p50, lo, hi) -> str:
    """A p50's 95% interval in the p50's own unit, as the issue's example
    and clockbench-os's terminal give it: "35.9-36.6" beside "36.2 ns",
    "1.45-1.49" beside "1.47 \u00b5s"; "" when there is none."""
    if not (_num(p50) and _num(lo) and _num(hi)):
        return ""
    unit = figures.ns(p50).split(" ")[1]
    scale = {"s": 1e9, "ms": 1e6, "\u00b5s": 1e3, "ns": 1.0}[unit]
    return f"{figures.sig(lo / scale)}-{figures.sig(hi / scale)}"


def cost_with_interval(r: dict) -> str:
    """A row's cost with its interval: "36.2 ns (35.9-36.6)"."""
    return r["cost"] + (f" ({r['interval']})" if r.get("interval") else "")


def runtime_text(r: dict) -> str:
    """The runtime a lang_clock record was measured with, and the program
    that ran (runtime_exe) where the record names one."""
    rt, exe = str(r.get("runtime") or ""), r.get("runtime_exe")
    return rt + (f" ({exe})" if isinstance(exe, str) and exe and rt else "")


def step_text(v) -> str:
    return figures.ns(v) if _num(v) and v > 0 else "-"


def claim_flag(claimed, step) -> bool:
    return _num(claimed) and _num(step) and step > 0 and claimed < CLAIM_SHARE * step


def path_text(path, per_1000) -> str:
    if not isinstance(path, str):
        return "-"
    n = f" ({per_1000:g}/1000)" if _num(per_1000) else ""
    return {"vdso": "vDSO", "syscall": "syscall", "none": "no clock call"}.get(path, path) + n


def bare_base(res: dict, cs: str, bare: dict | None) -> tuple[float | None, bool, dict]:
    """The bare read beneath cs and its row: from the bare run when given
    (os_side's mapping of clocksource to counter), else the OS run's own
    user-space rdtsc (the TSC beneath every clocksource's vDSO reads, and
    the ratio's base the terminal ladder uses)."""
    if bare is not None:
        key = os_side.bare_counter(cs, bare)
        p50 = os_side.bare_p50(bare, key)
        # the least step of the very read in the row (rdtscp's beneath tsc), as the table above it gives
        step = os_side.bare_step(bare, key) if key else None
        if key is not None and (p50 is not None or os_side.bare_cost(bare, key) != "-"):
            return p50, False, {"layer": "bare", "read": f"{key} (the image, no OS)", "cost": os_side.bare_cost(bare, key),
                         "p50_ns": p50, "method": "tsc", "ratio": "1.0x" if p50 else "-", "step": step_text(step),
                         "claimed": "-", "flag": False, "path": "-", "clock": key}
    lat = _first_of(res, "rdtsc")
    p50 = lat.get("p50_ns") if _num(lat.get("p50_ns")) else None
    below = bool(lat.get("below_step"))
    # measured once, on the clocksource in use at the start: said so beneath every other clocksource
    once = f", measured on {lat['clocksource']}" if isinstance(lat.get("clocksource"), str) and lat["clocksource"] != cs else ""
    return p50, below, {
        "layer": "bare", "read": f"rdtsc (user space{once}; no bare run given)", "cost": cost_text(p50, below), "p50_ns": p50,
        "method": "tsc", "ratio": "1.0x" if p50 and not below else "-", "step": "-", "claimed": "-", "flag": False,
        "path": "-", "clock": "TSC"}


def rows(res: dict, cs: str, bare: dict | None = None) -> list[dict]:
    """The ladder of one clocksource, as dicts of text cells (and p50_ns,
    a number or None, for the plot)."""
    base, bound, first = bare_base(res, cs, bare)
    out = [first]
    for layer, call, path, clock in OS_ROWS:
        lat = _latency(res, cs, call, path)
        if path == "libc" and not lat:  # the host's own C library not measured: the static copy's row, named so
            lat, path, layer = _latency(res, cs, call, "libc-static"), "libc-static", "libc (static)"
        if not lat:
            continue
        # the host's libc has no back-to-back reads of its own: the clock's least step and claim are the
        # static copy's reads of the same clock (a C library passes the kernel's value on)
        reso = _resolution(res, cs, call, path) or (_resolution(res, cs, call, "libc-static") if path == "libc" else {})
        p50, step, claimed = lat.get("p50_ns"), reso.get("min_step_ns"), reso.get("getres_ns")
        out.append({"layer": layer, "read": call, "cost": cost_text(p50, bool(lat.get("below_step"))),
                    "p50_ns": p50 if _num(p50) else None, "method": "tsc", "ratio": ratio(p50, base, bound),
                    "step": step_text(step), "claimed": figures.ns(claimed) if _num(claimed) else "-",
                    "flag": claim_flag(claimed, step), "path": OS_ROUTES[path], "clock": clock_text(clock)})
    for r in lang_records(res):
        if r.get("clocksource") != cs:
            continue
        lang = str(r.get("language") or "?")
        p50, step, claimed = r.get("p50_ns"), r.get("least_step_ns"), r.get("claimed_resolution_ns")
        flag = bool(r.get("claim_finer_than_step")) if isinstance(r.get("claim_finer_than_step"), bool) else claim_flag(claimed, step)
        lo, hi = figures.lang_interval(r)
        out.append({"layer": LANGUAGE_TITLES.get(lang, lang), "read": str(r.get("api") or "?"), "runtime": runtime_text(r),
                    "cost": cost_text(p50), "interval": interval_text(p50, lo, hi), "ci_ns": [lo, hi] if lo is not None else None,
                    "p50_ns": p50 if _num(p50) else None, "method": str(r.get("method") or "-"),
                    "ratio": ratio(p50, base, bound), "step": step_text(step),
                    "claimed": figures.ns(claimed) if _num(claimed) else "none stated", "flag": flag,
                    "path": path_text(r.get("path"), r.get("syscalls_per_1000")),
                    "clock": clock_text(r.get("clock_id")) + (CPU_TIME_MARK if is_cpu_time(r.get("clock_id")) else ""),
                    "failures": str(r.get("failures") or "")})
    return out


def tables(res: dict, bare: dict | None = None) -> list[dict]:
    """Every clocksource's ladder: [{"clocksource", "rows"}]; none when the
    run measured no language."""
    if not has_languages(res):
        return []
    return [{"clocksource": cs, "rows": rows(res, cs, bare), "order": order_rows(res, cs),
             "thread_heads": thread_heads(res, cs)} for cs in clocksources(res)]


def thread_heads(res: dict, cs: str) -> list[str]:
    """The order table's thread columns: 1 and 2 threads, and N where N,
    the CPUs, is more than 2 (as clockbench-os's terminal table): never
    "1 thread | 2 threads | 1 threads" on a 1-CPU machine."""
    ns = {r.get("threads_n") for r in lang_records(res) if r.get("clocksource") == cs and _num(r.get("threads_n"))}
    n = int(max(ns)) if ns else None
    return ["1 thread", "2 threads"] + ([f"{n} threads"] if n is not None and n > 2 else [])


def _count(v) -> str:
    return str(int(v)) if _num(v) else "-"


def _thread_cells(r: dict) -> list[str]:
    """The cost per call at 1, 2 and N threads (each pinned to a CPU of its own: the slowest
    thread's least chunk), "~" where the scheduler disturbed a thread of that count, ">" where
    there were more threads than CPUs (docs/output.md, `threads_disturbed_cpus`, `threads_over_cpus`)."""
    disturbed, over = r.get("threads_disturbed_cpus") or {}, r.get("threads_over_cpus") or []
    cells = []
    for key, k in (("threads_1_ns", 1), ("threads_2_ns", 2), ("threads_n_ns", r.get("threads_n"))):
        v = r.get(key)
        mark = ">" if k in over else "~" if str(k) in disturbed else ""
        cells.append(figures.ns(v) + mark if _num(v) else "-")
    return cells


def order_rows(res: dict, cs: str) -> list[dict]:
    """Each API's order (back-to-back and across CPUs) and its cost per
    thread count on one clocksource, as text cells; `judged` when its clock
    must not go back (clockbench-os's `order_judged`), `bad` when it did."""
    out = []
    for r in lang_records(res):
        if r.get("clocksource") != cs:
            continue
        lang = str(r.get("language") or "?")
        judged = r.get("order_judged") is True
        back, cross_back = r.get("backward"), r.get("cross_cpu_backward")
        worst = r.get("cross_cpu_max_backward_ns")
        out.append({"layer": LANGUAGE_TITLES.get(lang, lang), "read": str(r.get("api") or "?"),
                    "backward": _count(back), "rounds": _count(r.get("cross_cpu_rounds")),
                    "cross_backward": _count(cross_back), "lost": _count(r.get("cross_cpu_lost")),
                    "worst": figures.ns(worst) if _num(worst) and _num(cross_back) and cross_back else "-",
                    "threads": _thread_cells(r),
                    "threads_n": _count(r.get("threads_n")), "judged": judged,
                    "bad": judged and ((_num(back) and back > 0) or (_num(cross_back) and cross_back > 0))})
    return out


def runtimes(res: dict) -> list[tuple[str, str]]:
    """(language, runtime) each language was measured with, in order."""
    seen: dict[str, str] = {}
    for r in lang_records(res):
        lang = str(r.get("language") or "?")
        seen.setdefault(LANGUAGE_TITLES.get(lang, lang), runtime_text(r) or "?")
    return list(seen.items())


def as_rows(table: dict) -> list[list[str]]:
    """One ladder as text rows, the first naming the columns."""
    out = [list(HEAD)]
    for r in table["rows"]:
        out.append([r["layer"], r["read"], cost_with_interval(r), r["method"], r["ratio"], r["step"],
                    r["claimed"] + (" !" if r["flag"] else ""), r["path"], r["clock"]])
    return out


# ------------------------------------------------------------ two OS runs side by side

def _record(res: dict, lang, api, cs) -> dict | None:
    return next((x for x in lang_records(res) if (x.get("language"), x.get("api"), x.get("clocksource")) == (lang, api, cs)), None)


def _keys(runs: list[dict]) -> list[tuple]:
    """(language, API, clocksource) any run measured, in the order first seen."""
    keys: list[tuple] = []
    for res in runs:
        for r in lang_records(res):
            k = (r.get("language"), r.get("api"), r.get("clocksource"))
            if all(isinstance(x, str) for x in k) and k not in keys:
                keys.append(k)
    return keys


def side_by_side(runs: list[dict]) -> list[list[str]]:
    """The languages of OS runs side by side (two hosts, or a host and a
    VM): one row per (language, API, clocksource) any run measured, each
    run's cell its p50 with its 95% interval, path and clock, the ratio to
    the first run's p50. Clocksources keep their own names: a host's tsc
    and a VM's kvm-clock are different rows."""
    out = []
    for lang, api, cs in _keys(runs):
        cells, first = [], None
        for i, res in enumerate(runs):
            r = _record(res, lang, api, cs)
            if r is None:
                cells.append("-")
                continue
            p50 = r.get("p50_ns")
            if i == 0:
                first = p50
            lo, hi = figures.lang_interval(r)
            ci = interval_text(p50, lo, hi)
            # "b" as in the terminal's ladder: a batch's cost per call is not one call's, beside C++'s
            cell = cost_text(p50) + (f" ({ci})" if ci else "") + (" b" if r.get("method") == "batch" and _num(p50) else "") \
                + (f" ({ratio(p50, first)})" if i > 0 and _num(first) else "")
            cell += f", {path_text(r.get('path'), r.get('syscalls_per_1000'))}, {clock_text(r.get('clock_id'))}"
            cells.append(cell)
        out.append([f"{LANGUAGE_TITLES.get(lang, lang)} {api} on {cs}", *cells])
    return out


# The languages whose probe is a static program of its own: its runtime_exe is the probe.
NATIVE = frozenset({"cpp-libstdc++", "cpp-libc++", "rust", "go"})
SLOWER, FASTER, OVERLAP, UNJUDGED = "slower", "faster", "within", "unjudged"


def judge(a: dict, b: dict) -> str:
    """Whether b's cost differs from a's beyond their 95% intervals:
    SLOWER (b's interval wholly above a's), FASTER (wholly below), OVERLAP
    (they overlap: no difference shown), UNJUDGED (a side has no interval)."""
    alo, ahi = figures.lang_interval(a)
    blo, bhi = figures.lang_interval(b)
    if None in (alo, ahi, blo, bhi):
        return UNJUDGED
    if blo > ahi:
        return SLOWER
    if bhi < alo:
        return FASTER
    return OVERLAP


def differences(runs: list[dict], names: list[str]) -> list[str]:
    """One line per (language, API, clocksource) the first run and another
    both measured: each cost with its interval, and whether they differ
    beyond them ("Go time.Now on tsc: 36.2 ns (35.9-36.6) vs 41.0 ns
    (40.1-42.3): slower in B")."""
    out = []
    for k, (res, name) in enumerate(zip(runs[1:], names[1:])):
        for lang, api, cs in _keys([runs[0], res]):
            a, b = _record(runs[0], lang, api, cs), _record(res, lang, api, cs)
            if a is None or b is None or not (_num(a.get("p50_ns")) and _num(b.get("p50_ns"))):
                continue
            said = {SLOWER: f"slower in {name}, beyond both intervals", FASTER: f"faster in {name}, beyond both intervals",
                    OVERLAP: "the intervals overlap: no difference shown",
                    UNJUDGED: "no interval on one side (an older probe): not judged"}[judge(a, b)]
            pa = cost_text(a["p50_ns"]) + (f" ({interval_text(a['p50_ns'], *figures.lang_interval(a))})" if figures.lang_interval(a)[0] is not None else "")
            pb = cost_text(b["p50_ns"]) + (f" ({interval_text(b['p50_ns'], *figures.lang_interval(b))})" if figures.lang_interval(b)[0] is not None else "")
            out.append(f"{LANGUAGE_TITLES.get(lang, lang)} {api} on {cs}: {pa} vs {pb}: {said}")
    return out


def runtime_differences(runs: list[dict], names: list[str]) -> list[str]:
    """A line per language whose runtime, or the program that ran
    (runtime_exe), differs between the first run and another: their rows
    compare two runtimes, not only two machines."""
    out = []
    first = {LANGUAGE_TITLES.get(str(r.get("language")), str(r.get("language"))): r for r in reversed(lang_records(runs[0]))}
    for res, name in zip(runs[1:], names[1:]):
        other = {LANGUAGE_TITLES.get(str(r.get("language")), str(r.get("language"))): r for r in reversed(lang_records(res))}
        for lang, a in first.items():
            b = other.get(lang)
            if b is None:
                continue
            # a native probe's runtime_exe is the probe itself, wherever it lies: only its runtime (the compiler and
            # library it was built with) tells; an interpreter's or VM's is the runtime that ran
            exe_says = a.get("language") not in NATIVE
            if a.get("runtime") != b.get("runtime") or (exe_says and a.get("runtime_exe") != b.get("runtime_exe")):
                out.append(f"{lang}: different runtimes, {runtime_text(a) or '?'} in {names[0]} vs {runtime_text(b) or '?'} "
                           f"in {name}: its rows compare the runtimes as well as the machines")
    return out


# ------------------------------------------------------------ one line per API across clocksources

def _summary_of(rec: dict) -> tuple[str, str, dict, dict]:
    return (str(rec.get("language") or "?"), str(rec.get("api") or "?"),
            {k: v for k, v in rec["by_clocksource"].items() if isinstance(v, dict)} if isinstance(rec.get("by_clocksource"), dict) else {},
            rec["offered_not_measured"] if isinstance(rec.get("offered_not_measured"), dict) else {})


def _syscalls_said(per_1000) -> str:
    if not _num(per_1000):
        return "a system call"
    n = round(per_1000 / 1000.0, 1)
    if n == 1:
        return "1 system call a call"
    return f"{n:g} system calls a call"


def summaries(res: dict) -> list[dict]:
    """One answer per language and API across the clocksources measured
    (issue 44, docs/output.md `lang_summary`): [{"language", "api", "line",
    "by_clocksource": [{"clocksource", "cost", "interval", "path"}],
    "offered": [(clocksource, what it would mean)]}]. From the run's
    lang_summary records; an older log without them, from its lang_clock
    records."""
    recs = [r for r in _l(res.get("lang_summary")) if isinstance(r.get("by_clocksource"), dict)]
    if not recs:
        grouped: dict[tuple, dict] = {}
        for r in lang_records(res):
            k = (r.get("language"), r.get("api"))
            if all(isinstance(x, str) for x in k) and isinstance(r.get("clocksource"), str):
                grouped.setdefault(k, {"language": k[0], "api": k[1], "by_clocksource": {}})["by_clocksource"][r["clocksource"]] = r
        recs = list(grouped.values())
    syscall_ns = {cs: _latency(res, cs, MONOTONIC, "syscall").get("p50_ns") for cs in clocksources(res)}
    raw = next((v for v in syscall_ns.values() if _num(v)), None)
    out = []
    for rec in recs:
        lang, api, by, offered = _summary_of(rec)
        parts, cells = [], []
        for cs, e in by.items():
            p50 = e.get("p50_ns")
            lo, hi = figures.lang_interval(e)
            ci = interval_text(p50, lo, hi)
            how = ("vDSO" if e.get("path") == "vdso" else _syscalls_said(e.get("syscalls_per_1000")) if e.get("path") == "syscall"
                   else path_text(e.get("path"), e.get("syscalls_per_1000")))
            parts.append(f"{cost_text(p50)}" + (f" ({ci})" if ci else "") + f" on {cs}, {how}")
            cells.append({"clocksource": cs, "cost": cost_text(p50), "interval": ci, "path": how})
        would = []
        for cs, mode in offered.items():
            if mode == "vdso":
                would.append((cs, "read in the vDSO too: no system call"))
            elif mode == "syscall":
                would.append((cs, "a system call a call" + (f": the raw syscall alone costs {figures.ns(raw)} here, before the "
                                                            "counter's own read" if _num(raw) else "")))
            else:
                would.append((cs, "how Linux reads it is not known here"))
        line = f"{LANGUAGE_TITLES.get(lang, lang)} {api}: " + "; ".join(parts)
        if would:
            line += "; not measured: " + "; ".join(f"{cs} ({w})" for cs, w in would)
        out.append({"language": LANGUAGE_TITLES.get(lang, lang), "api": api, "line": line, "by_clocksource": cells, "offered": would})
    return out


def summaries_of(runs: list[dict], names: list[str]) -> list[dict]:
    """Each OS run's lines across the clocksources, for the bare-and-OS
    table (compare BARE OS, report BARE --os OS): [{"name", "lines"}]."""
    return [{"name": n, "lines": [x["line"] for x in summaries(r)]} for r, n in zip(runs, names) if has_languages(r)]
