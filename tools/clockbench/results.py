"""One run's results, from its log: the structure `report` writes as JSON,
`compare` reads, and `decode` approximates from a QR code."""

from __future__ import annotations

from . import records

RESULTS_FORMAT = "clockbench-results"
RESULTS_VERSION = 1


def from_log(text: str, source: str = "") -> dict:
    log = records.parse_log(text)
    recs = log.records
    by = lambda kind: records.of_type(recs, kind)  # noqa: E731
    first = lambda kind: (by(kind) or [None])[0]  # noqa: E731
    hist: dict[str, list[list[int]]] = {}
    for h in by("histogram"):
        pairs = h["bins"]
        hist.setdefault(h["counter"], []).extend([pairs[i], pairs[i + 1]] for i in range(0, len(pairs) - 1, 2))
    return {
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "source": source,
        "schema_version": log.schema_version,
        "problems": [str(p) for p in log.problems],
        "complete": first("summary") is not None,
        "build": (first("schema") or {}).get("build"),
        "machine": first("machine"),
        "cpu_features": first("cpu_features"),
        "profile": first("profile"),
        "counters": by("counter"),
        "latency": {r["counter"]: r for r in by("latency")},
        "resolution": {r["counter"]: r for r in by("resolution")},
        "histograms": hist,
        "monotonicity": {r["counter"]: r for r in by("monotonicity")},
        "frequency": by("frequency"),
        "stability": by("stability"),
        "residuals": by("residuals"),
        "hwlat": first("hwlat"),
        "cpu_speed": first("cpu_speed"),
        "checks": by("check"),
        "summary": first("summary"),
        "fault": first("fault"),
    }


def read_cost_p50(results: dict) -> dict[str, float]:
    """Counter -> p50 read cost in ns (the TSC as its plain RDTSC read)."""
    lat = results.get("latency") or {}
    out = {name: r["p50_ns"] for name, r in lat.items()}
    if "rdtsc" in out:
        out["tsc"] = out["rdtsc"]
    return out
