"""One run's results, from its log: the structure `report` writes as JSON,
`compare` reads, and `decode` approximates from a QR code."""

from __future__ import annotations

from . import records

RESULTS_FORMAT = "clockbench-results"
RESULTS_VERSION = 1


def _histograms(recs: list[dict], notes: list[str]) -> dict[str, list[list[int]]]:
    """Counter -> [[delta, count], ...], from whole histogram records only:
    a histogram with bins missing would show a resolution that is not there."""
    hist: dict[str, list[list[int]]] = {}
    for h in records.of_type(recs, "histogram"):
        pairs, counter = h.get("bins"), h.get("counter")
        if h.get("truncated") or not isinstance(counter, str) or not isinstance(pairs, list) or len(pairs) % 2:
            notes.append(f"{records.describe(h)} is incomplete: left out of the sequential reads plot")
            continue
        hist.setdefault(counter, []).extend([pairs[i], pairs[i + 1]] for i in range(0, len(pairs), 2))
    return hist


def _by_counter(recs: list[dict], kind: str) -> dict[str, dict]:
    return {r["counter"]: r for r in records.of_type(recs, kind) if isinstance(r.get("counter"), str)}


def from_log(text: str, source: str = "") -> dict:
    log = records.parse_log(text)
    recs, notes = records.join_parts(log.records)
    # parts already have their note; a record cut on its own gets one here
    notes += [f"{records.describe(r)} was too long for one line and was cut (\"truncated\": true)"
              for r in recs if r.get("truncated") is True and "parts" not in r]
    by = lambda kind: records.of_type(recs, kind)  # noqa: E731
    first = lambda kind: (by(kind) or [None])[0]  # noqa: E731
    hist = _histograms(recs, notes)
    return {
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "source": source,
        "schema_version": log.schema_version,
        "problems": [str(p) for p in log.problems],
        "notes": notes,
        "complete": first("summary") is not None,
        "build": (first("schema") or {}).get("build"),
        "machine": first("machine"),
        "cpu_features": first("cpu_features"),
        "profile": first("profile"),
        "counters": by("counter"),
        "latency": _by_counter(recs, "latency"),
        "resolution": _by_counter(recs, "resolution"),
        "histograms": hist,
        "monotonicity": _by_counter(recs, "monotonicity"),
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
    out = {name: r["p50_ns"] for name, r in lat.items() if isinstance(r.get("p50_ns"), (int, float))}
    if "rdtsc" in out:
        out["tsc"] = out["rdtsc"]
    return out


def from_qr(data: dict, source: str = "") -> dict:
    """The results a QR payload carries (`clockbench decode`), in the same
    structure, with what the code does not carry left empty."""
    counters, latency, resolution, frequency = [], {}, {}, []
    for c in data.get("counters", []):
        counters.append({"type": "counter", "name": c["name"], "present": c["present"], "reason": None if c["present"] else "absent",
                         "nominal_source": None})
        if c["read_p50_ns"] is not None:
            latency["rdtsc" if c["name"] == "tsc" else c["name"]] = {"counter": c["name"], "p50_ns": c["read_p50_ns"]}
        if c["resolution_ns"] is not None:
            resolution[c["name"]] = {"counter": c["name"], "min_step_ns": c["resolution_ns"]}
        if c["ppm"] is not None and c["name"] != "tsc":
            frequency.append({"counter": c["name"], "reference": data.get("tsc_hz_source"), "ppm_vs_nominal": c["ppm"], "stderr_ppm": None})
    brand = data.get("cpu", "")
    vendor, _, brand = brand.partition(" ")
    s = data.get("summary", {})
    return {
        "format": RESULTS_FORMAT, "version": RESULTS_VERSION, "source": source or "QR code", "schema_version": None,
        "problems": [], "notes": [], "complete": "status" in s, "build": data.get("build"),
        "machine": {"vendor": vendor, "brand": brand, "hypervisor": data.get("hypervisor")},
        "cpu_features": None,
        "profile": {"name": data.get("profile"), "tsc_hz": data.get("tsc_hz"),
                    "tsc_hz_source": f"measured against {data['tsc_hz_source']}" if data.get("tsc_hz_source") not in (None, "nominal") else "nominal"},
        "counters": counters, "latency": latency, "resolution": resolution, "histograms": {},
        "monotonicity": {c["name"]: {"backward": 0 if c["monotonic"] else 1} for c in data.get("counters", []) if c["monotonic"] is not None},
        "frequency": frequency, "stability": [], "residuals": [], "hwlat": None, "cpu_speed": None, "checks": [],
        "summary": {"pass": s.get("pass"), "fail": s.get("fail"), "skip": s.get("skip"), "status": s.get("status")},
        "fault": None,
    }


def load_any(text: str, source: str = "") -> dict:
    """A log, a results JSON file or a decoded QR file, as results."""
    import json

    if text.lstrip().startswith("{"):
        data = json.loads(text)
        if data.get("format") == RESULTS_FORMAT:
            return data
        if data.get("format") == "clockbench-qr":
            return from_qr(data, source)
        raise ValueError(f"{source}: a JSON file, but not clockbench results or a decoded QR code")
    return from_log(text, source)
