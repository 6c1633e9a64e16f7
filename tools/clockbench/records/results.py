"""One run's results, from its log: the structure `report` writes as JSON,
`compare` reads, and `decode` approximates from a QR code."""

from __future__ import annotations

import json
from pathlib import Path

from clockbench.records import records
from clockbench.errors import BadInput, NewerSchema, NoInput

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


def from_log(text: str, source: str = "", log: records.Log | None = None) -> dict:
    """The results of a log (log: its records already parsed from text, so
    that a caller who parsed it once does not pay for it again)."""
    log = log if log is not None else records.parse_log(text)
    recs, notes = records.join_parts(log.records)
    # parts already have their note; a record cut on its own gets one here
    notes += [f"{records.describe(r)} was too long for one line and was cut (\"truncated\": true)"
              for r in recs if r.get("truncated") is True and "parts" not in r]
    of_kind: dict[str, list[dict]] = {}  # one pass over the records, not one per kind asked for
    for r in recs:
        of_kind.setdefault(r["type"], []).append(r)
    by = lambda kind: list(of_kind.get(kind, ()))  # noqa: E731
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
        # which program wrote the log: "clockbench" (the image) or
        # "clockbench-os" (the same measurements through Linux)
        "tool": (first("schema") or {}).get("tool"),
        "os_choice": first("os_choice"),  # the image: the clocksource Linux would choose here
        "tsc_step": first("tsc_step"),  # the TSC's own step: a read below it is no figure
        "image_notes": [str(n.get("text")) for n in by("note") if isinstance(n.get("text"), str)],  # notes, whole
        "verdict_rows": by("verdict"),  # the verdict as the image made it: cells, read cost, advice
        "timer_choice": first("timer_choice"),
        "rtc": first("rtc"),  # the CMOS RTC: its date, registers, second edges and the rates against them
        # clockbench-os (docs/output.md, "The OS side"); empty for the image
        "os": first("os"),
        "os_latency": by("os_latency"),
        "os_resolution": by("os_resolution"),
        "os_tsc_rate": by("os_tsc_rate"),
        "os_claims": by("os_claim"),
        "os_clocksources": by("os_clocksource"),
        "os_restore": first("os_restore"),
        "os_libc": first("os_libc"),  # the C libraries behind the libc rows: the host's (path libc), the static copy's
        # the languages' clocks (issue 36): one record per API per clocksource
        "lang_clock": by("lang_clock"),
        "lang_summary": by("lang_summary"),
        # the sequential-reads tables, each record's parts joined (records.join_parts)
        "os_histograms": [h for h in by("os_histogram") if not h.get("truncated")],
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
    fms = str(data.get("family_model_stepping") or "").split(".")
    fms = dict(zip(("family", "model", "stepping"), (int(x) for x in fms))) if len(fms) == 3 and all(x.isdigit() for x in fms) else {}
    s = data.get("summary", {})
    checks = []
    carried = data.get("checks") if isinstance(data.get("checks"), dict) else {}
    for what, result in (("failed", "FAIL"), ("skipped", "SKIP")):
        names = carried.get(what) if isinstance(carried.get(what), list) else []
        checks += [{"type": "check", "name": n, "result": result, "detail": f"{what} (the QR code carries names, not details)"}
                   for n in names if isinstance(n, str)]
        more = carried.get(f"{what}_not_carried")
        if isinstance(more, int) and more > 0:
            checks.append({"type": "check", "name": f"{more} more {what} check{'' if more == 1 else 's'}", "result": result,
                           "detail": "the QR code had no room for their names"})
    return {
        "format": RESULTS_FORMAT, "version": RESULTS_VERSION, "source": source or "QR code", "schema_version": None,
        "problems": [], "notes": [], "complete": "status" in s, "build": data.get("build"),
        "machine": {"vendor": vendor, "brand": brand, **fms, "hypervisor": data.get("hypervisor"),
                    "secure_boot": data.get("secure_boot", "unknown")},
        "cpu_features": None,
        "profile": {"name": data.get("profile"), "tsc_hz": data.get("tsc_hz"),
                    "tsc_hz_source": f"measured against {data['tsc_hz_source']}" if data.get("tsc_hz_source") not in (None, "nominal") else "nominal"},
        "counters": counters, "latency": latency, "resolution": resolution, "histograms": {},
        "monotonicity": {c["name"]: {"backward": 0 if c["monotonic"] else 1} for c in data.get("counters", []) if c["monotonic"] is not None},
        "frequency": frequency, "stability": [], "residuals": [], "hwlat": None, "cpu_speed": None, "checks": checks,
        "summary": {"pass": s.get("pass"), "fail": s.get("fail"), "skip": s.get("skip"), "status": s.get("status")},
        "fault": None,
    }


# What every results file holds at the top level, with its type and what an
# older file that lacks the member gets (report and compare use .get()
# beneath this level; a record cut for length lacks members there too).
_SHAPE = {
    "machine": (dict, None), "cpu_features": (dict, None), "profile": (dict, None), "hwlat": (dict, None),
    "cpu_speed": (dict, None), "summary": (dict, None), "fault": (dict, None),
    "counters": (list, []), "frequency": (list, []), "stability": (list, []), "residuals": (list, []), "checks": (list, []),
    "latency": (dict, {}), "resolution": (dict, {}), "histograms": (dict, {}), "monotonicity": (dict, {}),
    "problems": (list, []), "notes": (list, []),
    "os_choice": (dict, None), "os": (dict, None), "os_restore": (dict, None), "os_libc": (dict, None),
    "os_latency": (list, []), "os_resolution": (list, []), "os_tsc_rate": (list, []), "os_claims": (list, []),
    "os_clocksources": (list, []), "os_histograms": (list, []), "lang_clock": (list, []), "lang_summary": (list, []),
    "tsc_step": (dict, None), "timer_choice": (dict, None), "image_notes": (list, []), "verdict_rows": (list, []),
    "rtc": (dict, None),
}
# The members above that are one record (an object of any members), not
# an object of records
_ONE_RECORD = ("machine", "cpu_features", "profile", "hwlat", "cpu_speed", "summary", "fault", "os_choice", "os", "os_restore", "os_libc",
               "tsc_step", "timer_choice", "rtc")


def _checked(data: dict, source: str) -> dict:
    """A results file read back, with what an older file lacks filled in;
    BadInput naming the first member of the wrong type."""
    out = dict(data)
    for key, (kind, empty) in _SHAPE.items():
        v = out.get(key)
        if v is None:
            out[key] = type(empty)() if empty is not None else None
            continue
        if not isinstance(v, kind):
            raise BadInput(f'{source}: "{key}" should be {"an object" if kind is dict else "an array"}, '
                           f"not {type(v).__name__}: not a results file clockbench wrote")
        if key in ("problems", "notes", "image_notes"):
            bad = [i for i, x in enumerate(v) if not isinstance(x, str)]
        elif key == "histograms":
            bad = [k for k, x in v.items() if not isinstance(x, list)]
        else:
            bad = [i for i, x in enumerate(v) if not isinstance(x, dict)] if kind is list else \
                  [k for k, x in v.items() if key not in _ONE_RECORD and not isinstance(x, dict)]
        if bad:
            raise BadInput(f'{source}: "{key}"[{bad[0]!r}] has the wrong type: not a results file clockbench wrote')
    if out.get("tool") is not None and not isinstance(out["tool"], str):
        raise BadInput(f'{source}: "tool" should be a string, not {type(out["tool"]).__name__}: not a results file clockbench wrote')
    out.setdefault("tool", None)
    out.setdefault("complete", out["summary"] is not None)
    out.setdefault("source", source)
    for key in ("build", "schema_version"):
        out.setdefault(key, None)
    return out


def _from_json(text: str, source: str) -> dict:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise BadInput(f"{source}: starts like JSON but is not valid JSON ({getattr(e, 'msg', e)}"
                       + (f", line {e.lineno}" if isinstance(e, json.JSONDecodeError) else "") + ")") from None
    if not isinstance(data, dict):
        raise BadInput(f"{source}: JSON, but not clockbench results or a decoded QR code (not an object)")
    fmt, version = data.get("format"), data.get("version")
    if fmt == RESULTS_FORMAT:
        if not isinstance(version, int) or isinstance(version, bool):
            raise BadInput(f'{source}: clockbench results without a whole "version"')
        if version > RESULTS_VERSION:
            raise NewerSchema(f"{source}: results format version {version}; this tool reads version {RESULTS_VERSION}: "
                              "update clockbench")
        return _checked(data, source)
    if fmt == "clockbench-qr":
        try:
            return _checked(from_qr(data, source), source)
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            if isinstance(e, BadInput):
                raise
            raise BadInput(f"{source}: a decoded QR code, but not as `clockbench decode` writes one "
                           f"({type(e).__name__}: {e})") from None
    raise BadInput(f'{source}: JSON, but not clockbench results or a decoded QR code ("format" is {fmt!r})')


def _looks_binary(text: str) -> bool:
    sample = text[:4096]
    odd = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\x1b\x0c"))
    return odd > len(sample) // 20


def load_any(text: str, source: str = "", log: records.Log | None = None) -> dict:
    """A log, a results JSON file or a decoded QR file, as results; BadInput
    or NewerSchema (both ValueErrors) for what is none of them: empty text,
    binary data, a log without its schema record, someone else's JSON.
    log: text's records already parsed (records.parse_log), read once."""
    source = source or "input"
    if not text.strip():
        raise BadInput(f"{source}: is empty" + (" (only blank lines)" if text else ""))
    if text.lstrip()[:1] in ("{", "["):
        try:
            return _from_json(text.lstrip(), source)
        except BadInput:
            if records.PREFIX not in text:  # else a log that happens to start with "{"
                raise
    log = log if log is not None else records.parse_log(text)
    if log.newer_schema:
        raise NewerSchema(f"{source}: the log is schema version {log.schema_version}; this tool reads version "
                          f"{records.SCHEMA_VERSION}: refused (update clockbench)")
    schemas = records.of_type(log.records, "schema")
    if not schemas:
        if not log.records and not log.problems:
            what = "binary data" if _looks_binary(text) else "text"
            raise BadInput(f"{source}: {what} with no clockbench records ('@cb ' lines): not a clockbench log")
        raise BadInput(f"{source}: no schema record, so not the start of a clockbench run's log "
                       f"(it begins with '@cb {{\"type\":\"schema\",...}}'); {len(log.records)} records found")
    first = schemas[0]
    if first.get("tool") not in (None, "clockbench", "clockbench-os") or log.schema_version is None:
        raise BadInput(f"{source}: the schema record is not clockbench's (tool {first.get('tool')!r}, "
                       f"version {first.get('version')!r})")
    return from_log(text, source, log)


READ_LIMIT = 256 << 20  # a soak run's log is a few MB


def load_path(path) -> dict:
    """load_any on a file; NoInput for a path that is missing, a folder or
    cannot be read."""
    p = Path(path)
    if p.is_dir():
        raise NoInput(f"{p}: is a folder; give a log (run.log) or a results file (results.json)")
    try:
        with p.open("rb") as f:  # a device such as /dev/zero never ends
            data = f.read(READ_LIMIT + 1)
    except FileNotFoundError:
        raise NoInput(f"{p}: no such file") from None
    except OSError as e:
        raise NoInput(f"{p}: cannot read it: {e.strerror or e}") from None
    if len(data) > READ_LIMIT:
        raise BadInput(f"{p}: larger than {READ_LIMIT >> 20} MiB: not a clockbench log or results file")
    return load_any(data.decode("utf-8", "replace"), source=str(p))


# How runs end (docs/output.md, "How a run ends"), by the summary's status.
STATUS_CODES = {"passed": 0, "failed": 1, "nothing ran": 2, "crashed": 3}
NO_VERDICT = 4


def outcome(res: dict) -> tuple[int, str]:
    """The run's status as `clockbench run` exits with it (0-4), and for
    anything but a pass, one line saying why."""
    s = res.get("summary") if isinstance(res.get("summary"), dict) else None
    fault = res.get("fault") if isinstance(res.get("fault"), dict) else None
    if fault is not None:
        where = f" at rip {fault['rip']}" if isinstance(fault.get("rip"), str) else ""
        return STATUS_CODES["crashed"], (f"the run crashed: CPU exception {fault.get('vector', '?')} ({fault.get('name', '?')}){where}; "
                                         "the report shows what was measured before it")
    if s is None:
        return NO_VERDICT, "the log ends before the run did (no summary record): an incomplete run; the report shows what it holds"
    status = s.get("status")
    code = STATUS_CODES.get(status) if isinstance(status, str) else None
    if code is None:
        return NO_VERDICT, f"the summary's status {status!r} is not one this tool knows"
    if code == 0:
        return 0, ""
    if code == 1:
        failed = [c.get("name") for c in res.get("checks") or [] if isinstance(c, dict) and c.get("result") == "FAIL"]
        named = f": {', '.join(map(str, failed))}" if failed else ""
        return 1, f"the run failed: {s.get('fail', '?')} check{'' if s.get('fail') == 1 else 's'} failed{named}"
    return code, f"the run ended: {status}"
