"""A fleet of Linux hosts made from real clockbench-os logs, for `make bench`
(hundreds of hosts through import and `fleet`) and the tests (a few dozen,
with known answers): each host is one of the real logs with its identity
changed (hostname, machine id, start time, a small jitter on every cost, so
that no two hosts are the same run), and some are switched to another
clocksource with that clocksource's real costs, taken from a log that
measured it (os-vm-lang-tcg.log measured hpet and acpi_pm: every clock a
system call there), or marked TSC-unstable with the kernel's words.

Only the records the store reads are rewritten; every other line of the log
is kept as it was."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from clockbench.records import records

PREFIX = records.PREFIX
UNSTABLE_WORDS = "clocksource watchdog"  # the kernel's: "tsc: Marking TSC unstable due to clocksource watchdog"


@dataclass(frozen=True)
class Host:
    name: str
    machine_id: str
    base: str  # the real log it was made from (its file name)
    clocksource: str  # the one in use
    tsc_unstable: bool = False


def _recs_by_cs(text: str, cs: str) -> dict[tuple, dict]:
    """A log's lang_clock and os_latency records measured on clocksource cs,
    by (type, language or call, api or path)."""
    out = {}
    for r in records.parse_log(text).records:
        if r.get("clocksource") != cs:
            continue
        if r["type"] == "lang_clock":
            out[("lang_clock", r.get("language"), r.get("api"))] = r
        elif r["type"] == "os_latency":
            out[("os_latency", r.get("call"), r.get("path"))] = r
    return out


COST_KEYS = ("min_ns", "p50_ns", "mean_ns", "p99_ns", "p999_ns", "max_ns")
PATH_KEYS = ("path", "syscalls_per_1000", "clock_syscalls_per_1000", "syscalls_per_1000_vdso_hidden", "below_step")


def _scale_ci(r: dict, factor: float) -> None:
    """The p50's interval (p50_ci_ns) scaled as the costs are, where there is one."""
    ci = r.get("p50_ci_ns")
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci):
        r["p50_ci_ns"] = [round(x * factor, 3) for x in ci]


def host_log(text: str, host: Host, *, started: str, jitter: float = 0.0, switch_from: dict[tuple, dict] | None = None) -> str:
    """The log `text` as host's: its `os` record names the host (hostname,
    machine id, start time, TSC flag) and the clocksource in use; every cost
    scaled by (1 + jitter); with switch_from (another log's records on
    host.clocksource, _recs_by_cs), the records of the clocksource the log
    was taken on carry that clocksource's costs and paths instead (a record
    with no counterpart there: a system call every call, at the median
    factor the others grew by)."""
    lines = text.split("\n")
    recs_at = [i for i, line in enumerate(lines) if line.startswith(PREFIX)]
    parsed = {}
    original_cs = None
    for i in recs_at:
        body = lines[i][len(PREFIX):]
        if '"type":"os"' in body or '"type":"lang_clock"' in body or '"type":"os_latency"' in body:
            r = json.loads(body)
            parsed[i] = r
            if r["type"] == "os":
                original_cs = r.get("clocksource")
    factors = []
    if switch_from is not None:
        for r in parsed.values():
            key = ("lang_clock", r.get("language"), r.get("api")) if r["type"] == "lang_clock" else \
                  ("os_latency", r.get("call"), r.get("path"))
            other = switch_from.get(key)
            if r["type"] != "os" and r.get("clocksource") == original_cs and other and r.get("p50_ns") and other.get("p50_ns"):
                factors.append(other["p50_ns"] / r["p50_ns"])
    grow = sorted(factors)[len(factors) // 2] if factors else 20.0
    for i, r in parsed.items():
        if r["type"] == "os":
            r.update(hostname=host.name, machine_id=host.machine_id, started_utc=started,
                     tsc_unstable=host.tsc_unstable, clocksource=host.clocksource)
            avail = str(r.get("available_clocksources") or "").split()
            if host.clocksource not in avail:
                avail.append(host.clocksource)
            r["available_clocksources"] = " ".join(avail)
        elif r.get("clocksource") == original_cs:
            if switch_from is not None and host.clocksource != original_cs:
                key = ("lang_clock", r.get("language"), r.get("api")) if r["type"] == "lang_clock" else \
                      ("os_latency", r.get("call"), r.get("path"))
                other = switch_from.get(key)
                if other is not None:
                    r.update({k: other[k] for k in COST_KEYS + PATH_KEYS + ("p50_ci_ns",) if k in other})
                else:
                    r.update({k: r[k] * grow for k in COST_KEYS if isinstance(r.get(k), (int, float))})
                    _scale_ci(r, grow)
                    if r["type"] == "lang_clock":
                        r.update(path="syscall", syscalls_per_1000=1000.0, clock_syscalls_per_1000=1000.0,
                                 syscalls_per_1000_vdso_hidden=None)
                r["clocksource"] = host.clocksource
            for k in COST_KEYS:
                if isinstance(r.get(k), (int, float)):
                    r[k] = round(r[k] * (1 + jitter), 3)
            _scale_ci(r, 1 + jitter)
        lines[i] = PREFIX + json.dumps(r, separators=(",", ":"))
    if host.tsc_unstable:  # the kernel's own line, as clockbench-os records it from the kernel log
        at = max(i for i, r in parsed.items() if r["type"] == "os")
        lines.insert(at + 1, PREFIX + json.dumps({"type": "os_claim", "source": "kernel log", "what": "tsc unstable",
                                                  "detail": UNSTABLE_WORDS, "hz": None}, separators=(",", ":")))
    return "\n".join(lines)


def plan(n: int, bases: list[str], *, syscall_every: int = 0, syscall_cs: tuple[str, ...] = ("hpet",),
         unstable_every: int = 0, prefix: str = "host") -> list[Host]:
    """n hosts, round-robin over the base logs; every syscall_every-th host
    (from the 3rd) switched to the clocksources in syscall_cs in turn, every
    unstable_every-th (from the 5th) with its TSC marked unstable, and so on
    the HPET (as the kernel's watchdog leaves it)."""
    hosts = []
    switched = 0
    for i in range(n):
        cs = "tsc"
        if syscall_every and i % syscall_every == 2:
            cs = syscall_cs[switched % len(syscall_cs)]
            switched += 1
        unstable = bool(unstable_every) and i % unstable_every == 4
        if unstable and cs == "tsc":  # the kernel's watchdog moves it off the TSC, to the HPET where there is one
            cs = "hpet"
        hosts.append(Host(f"{prefix}{i:03d}", f"{i:08x}{'c10cbe4c' * 3}", bases[i % len(bases)], cs, tsc_unstable=unstable))
    return hosts


def write(folder: Path, hosts: list[Host], logs: dict[str, str], switch_source: str | None = None,
          start: dt.datetime | None = None) -> list[Path]:
    """Each host's run folder, <host>-<UTC time>/os.log, as `make os-bench`
    keeps them, under folder; returns the folders. logs: each base log's
    text by name; switch_source: the log whose other clocksources' costs a
    switched host takes (its own text is in logs)."""
    start = start or dt.datetime(2026, 11, 28, tzinfo=dt.timezone.utc)
    folder.mkdir(parents=True, exist_ok=True)
    switch = {}
    out = []
    for i, h in enumerate(hosts):
        if h.clocksource != "tsc" and h.clocksource not in switch:
            switch[h.clocksource] = _recs_by_cs(logs[switch_source], h.clocksource)
        when = start + dt.timedelta(seconds=7 * i)
        jitter = ((i * 37) % 11 - 5) * 0.01  # -5 % .. +5 %
        text = host_log(logs[h.base], h, started=when.isoformat().replace("+00:00", "Z"), jitter=jitter,
                        switch_from=switch.get(h.clocksource))
        d = folder / f"{h.name}-{when.strftime('%Y-%m-%dT%H-%M-%SZ')}"
        d.mkdir(exist_ok=True)
        (d / "os.log").write_text(text)
        out.append(d)
    return out
