"""The ladder of a clockbench-os run (issue 36, docs/os-side.md "The
ladder"): per clocksource, from the bare counter up to each language's
clock, what one read costs and what it is.

Rows, in order: the bare counter's read beneath the clocksource (from the
image's run on the same machine when one is given, else the OS run's own
rdtsc from user space, said so); clockbench-os's own reads of
CLOCK_MONOTONIC through the vDSO called directly, libc and the raw syscall,
and libc's CLOCK_REALTIME; then every `lang_clock` record of that
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
OS_ROUTES = {"vdso": "vDSO entry", "libc": "libc", "syscall": "raw syscall"}
# The languages' names as the ladder shows them (os/os_lang_parse.c's titles).
LANGUAGE_TITLES = {"cpp-libstdc++": "C++ (libstdc++)", "cpp-libc++": "C++ (libc++)", "rust": "Rust", "go": "Go",
                   "java": "Java", "python": "Python", "node": "Node.js", "dotnet": ".NET"}
HEAD = ["layer", "read", "cost p50", "method", "x bare", "least step", "claimed", "path", "clock"]
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
        step = os_side.bare_step(bare, cs)
        if key is not None and (p50 is not None or os_side.bare_cost(bare, key) != "-"):
            return p50, False, {"layer": "bare", "read": f"{key} (the image, no OS)", "cost": os_side.bare_cost(bare, key),
                         "p50_ns": p50, "method": "tsc", "ratio": "1.0x" if p50 else "-", "step": step_text(step),
                         "claimed": "-", "flag": False, "path": "-", "clock": key}
    lat = _first_of(res, "rdtsc")
    p50 = lat.get("p50_ns") if _num(lat.get("p50_ns")) else None
    below = bool(lat.get("below_step"))
    return p50, below, {
        "layer": "bare", "read": "rdtsc (user space; no bare run given)", "cost": cost_text(p50, below), "p50_ns": p50,
        "method": "tsc", "ratio": "1.0x" if p50 and not below else "-", "step": "-", "claimed": "-", "flag": False,
        "path": "-", "clock": "TSC"}


def rows(res: dict, cs: str, bare: dict | None = None) -> list[dict]:
    """The ladder of one clocksource, as dicts of text cells (and p50_ns,
    a number or None, for the plot)."""
    base, bound, first = bare_base(res, cs, bare)
    out = [first]
    for layer, call, path, clock in OS_ROWS:
        lat = _latency(res, cs, call, path)
        if not lat:
            continue
        reso = _resolution(res, cs, call, path)
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
        out.append({"layer": LANGUAGE_TITLES.get(lang, lang), "read": str(r.get("api") or "?"), "runtime": str(r.get("runtime") or ""),
                    "cost": cost_text(p50), "p50_ns": p50 if _num(p50) else None, "method": str(r.get("method") or "-"),
                    "ratio": ratio(p50, base, bound), "step": step_text(step),
                    "claimed": figures.ns(claimed) if _num(claimed) else "none stated", "flag": flag,
                    "path": path_text(r.get("path"), r.get("syscalls_per_1000")), "clock": clock_text(r.get("clock_id")),
                    "failures": str(r.get("failures") or "")})
    return out


def tables(res: dict, bare: dict | None = None) -> list[dict]:
    """Every clocksource's ladder: [{"clocksource", "rows"}]; none when the
    run measured no language."""
    if not has_languages(res):
        return []
    return [{"clocksource": cs, "rows": rows(res, cs, bare), "order": order_rows(res, cs)} for cs in clocksources(res)]


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
        seen.setdefault(LANGUAGE_TITLES.get(lang, lang), str(r.get("runtime") or "?"))
    return list(seen.items())


def as_rows(table: dict) -> list[list[str]]:
    """One ladder as text rows, the first naming the columns."""
    out = [list(HEAD)]
    for r in table["rows"]:
        out.append([r["layer"], r["read"], r["cost"], r["method"], r["ratio"], r["step"],
                    r["claimed"] + (" !" if r["flag"] else ""), r["path"], r["clock"]])
    return out


# ------------------------------------------------------------ two OS runs side by side

def side_by_side(runs: list[dict]) -> list[list[str]]:
    """The languages of OS runs side by side (two hosts, or a host and a
    VM): one row per (language, API, clocksource) any run measured, each
    run's cell its p50, path and clock, the ratio to the first run's p50.
    Clocksources keep their own names: a host's tsc and a VM's kvm-clock
    are different rows."""
    keys: list[tuple] = []
    for res in runs:
        for r in lang_records(res):
            k = (r.get("language"), r.get("api"), r.get("clocksource"))
            if all(isinstance(x, str) for x in k) and k not in keys:
                keys.append(k)
    out = []
    for lang, api, cs in keys:
        cells, first = [], None
        for i, res in enumerate(runs):
            r = next((x for x in lang_records(res) if (x.get("language"), x.get("api"), x.get("clocksource")) == (lang, api, cs)), None)
            if r is None:
                cells.append("-")
                continue
            p50 = r.get("p50_ns")
            if i == 0:
                first = p50
            # "b" as in the terminal's ladder: a batch's cost per call is not one call's, beside C++'s
            cell = cost_text(p50) + (" b" if r.get("method") == "batch" and _num(p50) else "") \
                + (f" ({ratio(p50, first)})" if i > 0 and _num(first) else "")
            cell += f", {path_text(r.get('path'), r.get('syscalls_per_1000'))}, {r.get('clock_id') or '-'}"
            cells.append(cell)
        out.append([f"{LANGUAGE_TITLES.get(lang, lang)} {api} on {cs}, p50", *cells])
    return out
