"""`clockbench fleet`'s Linux hosts: one row per host from its clockbench-os
runs (its latest, or every run with --all), and what sets some apart, said
in words.

A row: the kernel, the clocksource in use and those available, the TSC as
the kernel judged it (marked unstable, with its words; not in use though
the kernel offers it), each language's clock cost on the clocksource in use
(one API per language, HEADLINE: the one its programs most often read time
with) and its system calls per call, and clockbench-os's own
clock_gettime(CLOCK_MONOTONIC) by the vDSO and by the raw syscall.

What is said, each a sentence and its fields (the JSON's "findings"):
- the hosts that read time through a system call (their languages' clocks
  take a syscall per call, most of them; a host without languages: its vDSO
  entry costs what the raw syscall costs, for it falls back to it), by
  clocksource, against the others, with one language's cost on both sides
  ("2 of 23 hosts read time through a system call (clocksource hpet: a, b):
  Go time.Now 1.4 µs there, 36 ns on the others");
- the hosts whose TSC the kernel marked unstable, with its words;
- the hosts that do not use the TSC though their kernel offers it, when
  most of the fleet does;
- among the hosts that read by the vDSO, a language's cost far above the
  others', by the median and MAD as the bare fleet judges its figures
  (fleet.py): above the limit when x - m > max(K x 1.4826 x MAD, m), at
  least twice the median, so that a host a little slower is not called out;
  and then by the p50s' 95% intervals (issue 48): two hosts whose intervals
  overlap are never called different, so a host above the limit is called
  out only while its interval overlaps that of no host left uncalled (those
  it would otherwise be set apart from), and otherwise said to be above the
  limit but not apart. A record without an interval (an older log) counts
  as its p50 alone, and the sentence says which were compared so;
- the hosts whose run did not pass (a failed check, a run cut short)."""

from __future__ import annotations

import base64
import io
import re
import statistics
from dataclasses import dataclass, field

from clockbench.records import figures
from clockbench.report.ladder import LANGUAGE_TITLES
from clockbench.runs import store

K = 3.5
MAD_SCALE = 1.4826
MIN_HOSTS = 3  # a cost is compared once this many hosts read by the vDSO
SYSCALL_SHARE = 0.5  # a call that makes this many system calls or more goes through one (1000 per 1000 does)
VDSO_AS_SYSCALL = 0.8  # a vDSO entry that costs this share of the raw syscall or more is the syscall
# Per language, the API its programs most often read time with, first found wins (the lang_clock records' names).
HEADLINE = {
    "go": ("time.Now",),
    "java": ("System.nanoTime",),
    "python": ("perf_counter", "perf_counter_ns", "monotonic_ns", "monotonic"),
    "cpp-libstdc++": ("steady_clock",),
    "cpp-libc++": ("steady_clock",),
    "rust": ("Instant::now",),
    "node": ("process.hrtime.bigint", "performance.now"),
    "dotnet": ("Stopwatch.GetTimestamp",),
}
OS_LANG = "clockbench-os"  # its own vDSO entry, beside the languages
OS_API = "vDSO clock_gettime(CLOCK_MONOTONIC)"
LIST_HOSTS = 8  # hosts named in a sentence, per clocksource, before "and N more"


def title(lang: str) -> str:
    return LANGUAGE_TITLES.get(lang, "clockbench-os (C)" if lang == OS_LANG else lang)


def cost(ns: float | None) -> str:
    """A cost in a sentence: two figures, in the unit it asks for ("1.4 µs", "36 ns")."""
    return figures.ns(ns, 2) if ns is not None else "?"


_PATH = re.compile(r", (\w+) path,")
_METHOD = re.compile(r", (\w+) method,")


@dataclass
class OsRow:
    run: store.Run
    languages: dict[str, dict]  # lang -> {api, p50_ns, syscalls_per_call, path, method}
    os_clock: dict[str, float | None]  # vdso_ns, libc_ns, syscall_ns
    through_syscall: bool | None
    flags: list[dict] = field(default_factory=list)  # {"kind", "text"}

    @property
    def machine(self) -> str:
        return self.run["machine"]

    @property
    def clocksource(self) -> str | None:
        return self.run.get("clocksource")

    @property
    def available(self) -> list[str]:
        return (self.run.get("clocksources") or "").split()

    def tsc_unstable(self) -> bool | None:
        v = self.run.get("tsc_unstable")
        return None if v is None else bool(v)

    def tsc_not_used(self) -> bool:
        return self.clocksource not in (None, "tsc") and "tsc" in self.available

    def cost(self, lang: str) -> float | None:
        if lang == OS_LANG:
            return self.os_clock.get("vdso_ns")
        return (self.languages.get(lang) or {}).get("p50_ns")

    def interval(self, lang: str) -> tuple[float, float] | None:
        """The p50's 95% interval [lo, hi] in ns, or None where the record
        gives none (an older log): then the p50 alone is compared."""
        ci = self.os_clock.get("vdso_ci_ns") if lang == OS_LANG else (self.languages.get(lang) or {}).get("p50_ci_ns")
        return (ci[0], ci[1]) if ci else None

    def span(self, lang: str) -> tuple[float, float]:
        """What is compared: the interval, else the p50 as a point."""
        c = self.cost(lang)
        return self.interval(lang) or (c, c)


def _languages(run: store.Run, cs: str | None) -> dict[str, dict]:
    """Each language's headline API on clocksource cs, from the store's
    figures (lang_p50_ns:CS/LANG/API and lang_syscalls_per_1000:...)."""
    if cs is None:
        return {}
    head = f"lang_p50_ns:{cs}/"
    apis: dict[str, dict[str, figures.Figure]] = {}
    for name, f in run.figures.items():
        if name.startswith(head):
            lang, _, api = name[len(head):].partition("/")
            apis.setdefault(lang, {})[api] = f
    out = {}
    for lang, by_api in apis.items():
        api = next((a for a in HEADLINE.get(lang, ()) if a in by_api), None) or next(iter(by_api))
        f = by_api[api]
        sys_f = run.figures.get(f"lang_syscalls_per_1000:{cs}/{lang}/{api}")
        per_call = sys_f.value / 1000 if sys_f is not None else None
        path = _PATH.search(f.detail or "")
        method = _METHOD.search(f.detail or "")
        path = path.group(1) if path and path.group(1) != "?" else (
            None if per_call is None else "syscall" if per_call >= SYSCALL_SHARE else "vdso")
        out[lang] = {"api": api, "p50_ns": f.value, "p50_ci_ns": _ci(run, "lang", f"{cs}/{lang}/{api}"),
                     "busy": figures.BUSY_WORDS in (f.detail or ""),
                     "syscalls_per_call": per_call, "path": path,
                     "method": method.group(1) if method and method.group(1) != "?" else None}
    order = list(HEADLINE)
    return dict(sorted(out.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0])))


def _ci(run: store.Run, kind: str, key: str) -> list[float] | None:
    """The store's {kind}_p50_ci_lo_ns/hi figures for key: [lo, hi], or None."""
    lo, hi = run.figures.get(f"{kind}_p50_ci_lo_ns:{key}"), run.figures.get(f"{kind}_p50_ci_hi_ns:{key}")
    return [lo.value, hi.value] if lo is not None and hi is not None and lo.value <= hi.value else None


def _through_syscall(langs: dict[str, dict], os_clock: dict) -> bool | None:
    counted = [v["syscalls_per_call"] for v in langs.values() if v["syscalls_per_call"] is not None]
    if counted:
        return sum(1 for c in counted if c >= SYSCALL_SHARE) * 2 > len(counted)
    vdso, sysc = os_clock.get("vdso_ns"), os_clock.get("syscall_ns")
    if vdso is not None and sysc:
        return vdso >= VDSO_AS_SYSCALL * sysc
    return None


def row_of(run: store.Run) -> OsRow:
    cs = run.get("clocksource")
    langs = _languages(run, cs)
    os_clock = {f"{p}_ns": (run.figures[f"os_p50_ns:{cs}/{p}"].value if f"os_p50_ns:{cs}/{p}" in run.figures else None)
                for p in ("vdso", "libc", "syscall")}
    os_clock["vdso_ci_ns"] = _ci(run, "os", f"{cs}/vdso")
    return OsRow(run, langs, os_clock, _through_syscall(langs, os_clock))


@dataclass
class OsFleet:
    rows: list[OsRow]
    findings: list[dict]

    @property
    def said(self) -> list[str]:
        return [f["text"] for f in self.findings]

    @property
    def outliers(self) -> list[str]:
        return [r.machine for r in self.rows if r.flags]


def _named(rows: list[OsRow]) -> str:
    """Hosts by clocksource: "clocksource hpet: a, b; acpi_pm: c" (the first
    LIST_HOSTS of each, then how many more)."""
    by: dict[str, list[str]] = {}
    for r in rows:
        by.setdefault(r.clocksource or "unknown", []).append(r.machine)
    parts = []
    for i, (cs, names) in enumerate(sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))):
        shown = ", ".join(names[:LIST_HOSTS]) + (f" and {len(names) - LIST_HOSTS} more" if len(names) > LIST_HOSTS else "")
        parts.append(f"{'clocksource ' if i == 0 else ''}{cs}: {shown}")
    return "; ".join(parts)


def _median(vals: list[float]) -> float | None:
    return statistics.median(vals) if vals else None


def _hosts(n: int) -> str:
    return f"{n} host{'' if n == 1 else 's'}"


def _syscall_finding(rows: list[OsRow]) -> dict | None:
    there = [r for r in rows if r.through_syscall]
    others = [r for r in rows if r.through_syscall is False]
    if not there:
        return None
    costs = {}
    for lang in [*HEADLINE, *sorted({l for r in rows for l in r.languages} - set(HEADLINE)), OS_LANG]:
        a = [r.cost(lang) for r in there if r.cost(lang) is not None]
        b = [r.cost(lang) for r in others if r.cost(lang) is not None]
        if a:
            api = OS_API if lang == OS_LANG else next(r.languages[lang]["api"] for r in there if lang in r.languages)
            costs[lang] = {"api": api, "p50_ns_there": _median(a), "hosts_there": len(a),
                           "p50_ns_others": _median(b), "hosts_others": len(b)}
    # the language the sentence names: the first measured on both sides, else on the syscall side
    lang = next((l for l, c in costs.items() if c["hosts_others"]), next(iter(costs), None))
    verb = "reads" if len(there) == 1 else "read"
    text = f"{len(there)} of {_hosts(len(rows))} {verb} time through a system call ({_named(there)})"
    if lang is not None:
        c = costs[lang]
        text += f": {title(lang)} {c['api']} {cost(c['p50_ns_there'])} there"
        text += (f", {cost(c['p50_ns_others'])} on the others" if c["hosts_others"]
                 else " (no host here reads it by the vDSO)")
    by_cs: dict[str, list[str]] = {}
    for r in there:
        by_cs.setdefault(r.clocksource or "unknown", []).append(r.machine)
    for r in there:
        r.flags.append({"kind": "syscall", "text": f"reads time through a system call (clocksource {r.clocksource})"})
    return {"kind": "syscall", "text": text, "hosts": [r.machine for r in there], "clocksources": by_cs,
            "language": lang, "costs": costs}


def _unstable_finding(rows: list[OsRow]) -> dict | None:
    bad = [r for r in rows if r.tsc_unstable()]
    if not bad:
        return None
    why = {r.machine: r.run.get("tsc_unstable_why") for r in bad}
    shown = "; ".join(f"{r.machine}, now on {r.clocksource or '?'}" + (f": \"{why[r.machine]}\"" if why[r.machine] else "")
                      for r in bad[:LIST_HOSTS]) + (f"; and {len(bad) - LIST_HOSTS} more" if len(bad) > LIST_HOSTS else "")
    unknown = sum(1 for r in rows if r.tsc_unstable() is None)
    text = (f"{len(bad)} of {_hosts(len(rows))} had the TSC marked unstable by the kernel ({shown})"
            + (f"; {_hosts(unknown)} could not read the kernel log" if unknown else ""))
    for r in bad:
        r.flags.append({"kind": "tsc unstable", "text": "the kernel marked the TSC unstable"
                        + (f": \"{why[r.machine]}\"" if why[r.machine] else "")})
    return {"kind": "tsc unstable", "text": text, "hosts": [r.machine for r in bad], "why": why, "unknown": unknown}


def _not_used_finding(rows: list[OsRow], said: set[str]) -> dict | None:
    """Hosts on another clocksource though their kernel offers the TSC, where
    most of the fleet reads it; the sentence names those not already said
    (a host that reads through a system call was, with its clocksource)."""
    off = [r for r in rows if r.tsc_not_used()]
    on = [r for r in rows if r.clocksource == "tsc"]
    if not off or len(off) >= len(on):  # an outlier only where most of the fleet reads the TSC
        return None
    for r in off:
        r.flags.append({"kind": "tsc not used", "text": f"clocksource {r.clocksource}, not the TSC (available: {' '.join(r.available)})"})
    new = [r for r in off if r.machine not in said]
    if not new:
        return None
    verb = "does" if len(new) == 1 else "do"
    text = (f"{len(new)} of {_hosts(len(rows))} {verb} not use the TSC though their kernel offers it "
            f"({_named(new)}), which {len(on)} use")
    return {"kind": "tsc not used", "text": text, "hosts": [r.machine for r in new],
            "clocksources": {cs: [r.machine for r in new if r.clocksource == cs] for cs in sorted({r.clocksource for r in new})}}


def _overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _shown(r: OsRow, lang: str) -> str:
    """A host's cost with its interval: "h 240 ns (220-260 ns)", or "h 240 ns (p50 alone)"."""
    ci = r.interval(lang)
    busy = ", the host busy" if lang != OS_LANG and (r.languages.get(lang) or {}).get("busy") else ""
    return f"{r.machine} {cost(r.cost(lang))} " + (f"({figures.interval(*ci)}{busy})" if ci else f"(p50 alone{busy})")


def _basis(have: list[OsRow], lang: str) -> tuple[str, list[str]]:
    """How the hosts were compared: ("intervals", []), ("p50", [all]) or
    ("mixed", [the hosts without an interval])."""
    bare = [r.machine for r in have if r.interval(lang) is None]
    return ("intervals" if not bare else "p50" if len(bare) == len(have) else "mixed"), bare


def _basis_text(basis: str, bare: list[str]) -> str:
    if basis == "intervals":
        return "compared by the p50s' 95% intervals"
    if basis == "p50":
        return "compared by p50 alone: the records carry no interval (older logs)"
    shown = ", ".join(bare[:LIST_HOSTS]) + (f" and {len(bare) - LIST_HOSTS} more" if len(bare) > LIST_HOSTS else "")
    return f"compared by the p50s' 95% intervals, by p50 alone for {_hosts(len(bare))} whose records carry none ({shown})"


def _apart(have: list[OsRow], high: list[OsRow], lang: str) -> tuple[list[OsRow], list[tuple[OsRow, OsRow]]]:
    """Of the hosts above the limit, those called different: each one's
    interval overlaps none of the hosts not called (two hosts whose
    intervals overlap are never called different). A host spared joins
    those not called, which may spare another: repeated until none moves.
    (called, [(spared, a host its interval overlaps)])."""
    called, spared = {id(r): r for r in high}, []  # by identity: rows are compared as dataclasses otherwise
    moved = True
    while moved:
        moved = False
        rest = [r for r in have if id(r) not in called]
        for h in list(called.values()):
            near = next((o for o in rest if _overlaps(h.span(lang), o.span(lang))), None)
            if near is not None:
                del called[id(h)]
                spared.append((h, near))
                rest.append(h)
                moved = True
    return list(called.values()), spared


def _cost_findings(rows: list[OsRow]) -> list[dict]:
    """Among the hosts that read by the vDSO: a headline cost far above the
    others', and apart from theirs by its interval."""
    vdso = [r for r in rows if r.through_syscall is False]
    out = []
    for lang in [*HEADLINE, *sorted({l for r in vdso for l in r.languages} - set(HEADLINE)), OS_LANG]:
        have = [r for r in vdso if r.cost(lang) is not None]
        if len(have) < MIN_HOSTS:
            continue
        vals = [r.cost(lang) for r in have]
        m = statistics.median(vals)
        mad = statistics.median(abs(v - m) for v in vals)
        limit = max(K * MAD_SCALE * mad, m)
        high = [r for r in have if r.cost(lang) - m > limit]
        if not high:
            continue
        called, spared = _apart(have, high, lang)
        basis, bare = _basis(have, lang)
        api = OS_API if lang == OS_LANG else have[0].languages[lang]["api"]
        common = {"language": lang, "api": api, "median_ns": m, "mad_ns": mad, "limit_ns": limit, "n": len(have),
                  "basis": basis, "p50_alone": bare}
        if called:
            shown = ", ".join(_shown(r, lang) for r in called[:LIST_HOSTS]) + \
                (f" and {len(called) - LIST_HOSTS} more" if len(called) > LIST_HOSTS else "")
            text = (f"{title(lang)} {api} costs far more on {_hosts(len(called))} than on the others that read by the vDSO: "
                    f"{shown}, against a median of {cost(m)} over {_hosts(len(have))} (limit +{cost(limit)}; "
                    f"{_basis_text(basis, bare)})")
            for r in called:
                ci = r.interval(lang)
                r.flags.append({"kind": "cost", "language": lang,
                                "text": f"{title(lang)} {api} {cost(r.cost(lang))}"
                                + (f" ({figures.interval(*ci)})" if ci else " (p50 alone)")
                                + f", median {cost(m)} (limit +{cost(limit)})"
                                + ("; the host was busy during its run (the figure marked disturbed): measure it again when "
                                   "quieter before acting on it" if (r.languages.get(lang) or {}).get("busy") else "")})
            out.append({"kind": "cost", "text": text, "hosts": [r.machine for r in called], **common})
        if spared:
            shown = "; ".join(f"{_shown(h, lang)} overlaps {_shown(o, lang)}" for h, o in spared[:LIST_HOSTS]) + \
                (f"; and {len(spared) - LIST_HOSTS} more" if len(spared) > LIST_HOSTS else "")
            verb = "is" if len(spared) == 1 else "are"
            text = (f"{title(lang)} {api}: {_hosts(len(spared))} above the limit {verb} not called different, for "
                    f"{'its interval overlaps' if len(spared) == 1 else 'each one overlaps'} another host's ({shown}; "
                    f"median {cost(m)} over {_hosts(len(have))}, limit +{cost(limit)}; {_basis_text(basis, bare)})")
            out.append({"kind": "cost not apart", "text": text, "hosts": [h.machine for h, _ in spared],
                        "overlaps": {h.machine: o.machine for h, o in spared}, **common})
    return out


def _run_finding(rows: list[OsRow]) -> dict | None:
    """Hosts whose run did not pass (a check failed, a run killed mid-way or
    cut short): its figures are what it measured before, said so."""
    bad = [r for r in rows if r.run["status"] != "passed"]
    if not bad:
        return None
    why = {}
    for r in bad:
        failed = [c["name"] for c in r.run.checks if c["result"] == "FAIL"]
        why[r.machine] = f"{r.run['status']}: " + (f"failed {', '.join(failed)}" if failed else (r.run["reason"] or "no reason given"))
        r.flags.append({"kind": "run", "text": f"the run did not pass ({why[r.machine]})"})
    shown = "; ".join(f"{m} ({w})" for m, w in list(why.items())[:LIST_HOSTS]) + \
        (f"; and {len(bad) - LIST_HOSTS} more" if len(bad) > LIST_HOSTS else "")
    return {"kind": "run", "text": f"{len(bad)} of {_hosts(len(rows))}: the run did not pass ({shown})",
            "hosts": [r.machine for r in bad], "why": why}


def threshold_text(fl: "OsFleet | None" = None) -> str:
    text = (f"through a system call: most of a host's languages' clocks make {SYSCALL_SHARE:g} or more system calls a "
            f"call (without languages: clockbench-os's vDSO entry costs {VDSO_AS_SYSCALL:g} of the raw syscall or more); "
            f"a cost among the hosts that read by the vDSO: x - median > max({K:g} x {MAD_SCALE} x MAD, median), "
            f"compared from {MIN_HOSTS} hosts, and its p50's 95% interval apart from every host not called (two hosts "
            f"whose intervals overlap are never called different)")
    if fl is None:
        return text
    bare = p50_alone(fl)
    if bare:
        text += "; by p50 alone, their records carrying no interval (older logs): " + \
            "; ".join(f"{title(l)} on {_hosts(n)}" for l, n in bare.items())
    return text


def p50_alone(fl: "OsFleet") -> dict[str, int]:
    """Per language (and clockbench-os's own), how many of the hosts that
    read by the vDSO carry a cost but no interval: compared by p50 alone."""
    vdso = [r for r in fl.rows if r.through_syscall is False]
    out = {}
    for lang in [*languages_present(fl), OS_LANG]:
        n = sum(1 for r in vdso if r.cost(lang) is not None and r.interval(lang) is None)
        if n:
            out[lang] = n
    return out


def analyse(runs: list[store.Run]) -> OsFleet:
    rows = [row_of(r) for r in runs]
    through = _syscall_finding(rows)
    findings = [f for f in (through, _unstable_finding(rows)) if f]
    not_used = _not_used_finding(rows, set(through["hosts"]) if through else set())
    findings += [not_used] if not_used else []
    findings += _cost_findings(rows)
    run = _run_finding(rows)
    findings += [run] if run else []
    return OsFleet(rows, findings)


# -- output -------------------------------------------------------------------


def languages_present(fl: OsFleet) -> list[str]:
    seen = {l for r in fl.rows for l in r.languages}
    return [l for l in HEADLINE if l in seen] + sorted(seen - set(HEADLINE))


def lang_cell(v: dict | None) -> str:
    if not v:
        return "-"
    sys_ = v.get("syscalls_per_call")
    tag = "" if sys_ is None else (f" {sys_:.3g} sys" if sys_ >= SYSCALL_SHARE else "")
    return f"{cost(v['p50_ns'])}{' b' if v.get('method') == 'batch' else ''}{tag}"


def tsc_cell(r: OsRow) -> str:
    u = r.tsc_unstable()
    if u:
        return "unstable"
    if r.tsc_not_used():
        return "not used"
    return "?" if u is None else "ok"


def columns(fl: OsFleet) -> list[str]:
    return ["machine", "date (UTC)", "kernel", "clocksource (available)", "TSC", "os vDSO", "os syscall",
            *[title(l) for l in languages_present(fl)], "flags"]


def cells(r: OsRow, langs: list[str]) -> list[str]:
    avail = " ".join(c for c in r.available if c != r.clocksource)
    return [r.machine, (r.run["started"] or "?")[:19].replace("T", " "), r.run.get("kernel") or "?",
            f"{r.clocksource or '?'}" + (f" ({avail})" if avail else ""), tsc_cell(r),
            cost(r.os_clock.get("vdso_ns")) if r.os_clock.get("vdso_ns") is not None else "-",
            cost(r.os_clock.get("syscall_ns")) if r.os_clock.get("syscall_ns") is not None else "-",
            *[lang_cell(r.languages.get(l)) for l in langs],
            ("OUTLIER: " + ", ".join(sorted({f["kind"] for f in r.flags}))) if r.flags else "ok"]


def apis_line(fl: OsFleet) -> str:
    used = {}
    for r in fl.rows:
        for l, v in r.languages.items():
            used.setdefault(l, [])
            if v["api"] not in used[l]:
                used[l].append(v["api"])
    return "APIs: " + "; ".join(f"{title(l)} {' or '.join(used[l])}" for l in languages_present(fl)) + \
        "; os: clockbench-os's clock_gettime(CLOCK_MONOTONIC), p50 (b: a batch's cost per call; N sys: system calls per call)"


def as_text(fl: OsFleet, all_runs: bool) -> list[str]:
    unit = "run" if all_runs else "host"
    n = len(fl.rows)
    lines = [f"== Linux hosts (clockbench-os): {n} {unit}{'' if n == 1 else 's'}"
             + ("" if all_runs else ", each one's latest OS run")]
    langs = languages_present(fl)
    rows = [columns(fl)] + [cells(r, langs) for r in fl.rows]
    widths = [max(len(x[i]) for x in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in rows]
    lines.append("  " + apis_line(fl))
    lines.append("  " + threshold_text(fl))
    lines.append("")
    if fl.findings:
        lines.append(f"Said of the Linux hosts: {len(fl.findings)}")
        lines += [f"  {f['text']}" for f in fl.findings]
    else:
        lines.append("Said of the Linux hosts: nothing sets one apart")
    return lines


def row_json(r: OsRow) -> dict:
    u = r.tsc_unstable()
    return {"machine": r.machine, "run_id": r.run["id"], "started": r.run["started"], "status": r.run["status"],
            "hostname": r.run.get("hostname"), "machine_id": r.run.get("machine_id"), "kernel": r.run.get("kernel"),
            "clocksource": r.clocksource, "clocksources": r.available, "tsc_unstable": u,
            "tsc_unstable_why": r.run.get("tsc_unstable_why"), "tsc_not_used": r.tsc_not_used(),
            "through_syscall": r.through_syscall, "os_clock": r.os_clock, "languages": r.languages,
            "outlier": bool(r.flags), "flags": r.flags}


def as_json(fl: OsFleet, all_runs: bool) -> dict:
    return {"selection": "runs" if all_runs else "latest run per machine", "threshold": threshold_text(fl),
            "p50_alone": p50_alone(fl),
            "headline_apis": {l: list(a) for l, a in HEADLINE.items()},
            "rows": [row_json(r) for r in fl.rows], "said": fl.said, "findings": fl.findings, "outliers": fl.outliers}


def plot(fl: OsFleet) -> dict | None:
    """Each host's headline cost per language (log scale), a system call's
    hosts in red."""
    langs = languages_present(fl) + [OS_LANG]
    pts = [(i, r.cost(l), bool(r.through_syscall)) for i, l in enumerate(langs) for r in fl.rows if r.cost(l)]
    if not pts:
        return None
    from clockbench.report.plots import _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(langs) + 2), 3.6))
    for through, colour in ((False, "#2c7fb8"), (True, "#c0392b")):
        xs = [x + ((hash((x, k)) % 21) - 10) * 0.015 for k, (x, y, t) in enumerate(pts) if t == through]
        ys = [y for x, y, t in pts if t == through]
        ax.scatter(xs, ys, s=8, c=colour, alpha=0.6, label="through a system call" if through else "by the vDSO")
    ax.set_yscale("log")
    ax.set_xticks(range(len(langs)), [title(l) for l in langs], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("p50 ns per call")
    ax.set_title("Each Linux host's clock cost per language (its headline API)")
    ax.legend(fontsize=7)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return {"id": "os-costs", "title": "Each Linux host's clock cost per language",
            "src": "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode(),
            "note": "red: a host that reads time through a system call"}
