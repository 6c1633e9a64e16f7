"""Reads the machine records out of a clockbench log (docs/output.md): the
serial output of a run, mixed with people's lines, GRUB's terminal escape
codes, and whatever else shared the port."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

PREFIX = "@cb "
SCHEMA_VERSION = 1
# GRUB and the firmware draw menus with terminal escape sequences.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def clean(text: str) -> str:
    return _ESCAPES.sub("", text).replace("\r", "")


@dataclass
class Problem:
    line: int  # 1-based, in the cleaned log
    reason: str
    text: str  # the start of the offending record

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}: {self.text!r}"


@dataclass
class Log:
    records: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    schema_version: int | None = None

    @property
    def newer_schema(self) -> bool:
        return self.schema_version is not None and self.schema_version > SCHEMA_VERSION


_TYPE_AT = len('{"type":"')


def parse_log(text: str, skip: frozenset[str] = frozenset()) -> Log:
    """Every record that parses, in order, and a Problem for every one that
    does not (a cut or garbled line, a record without a type, a newer schema).
    Never raises on bad input: what parsed is kept. skip: types of record
    not to decode at all (a reader that needs none of them, such as the
    store's figures and the histograms), recognised by their first member as
    every writer puts it ('{"type":"...'); their problems go unseen."""
    log = Log()
    for number, line in enumerate(clean(text).split("\n"), 1):
        if PREFIX not in line:
            continue
        for body in line.split(PREFIX)[1:]:  # two records run together stay two
            body = body.strip()
            if skip and body.startswith('{"type":"') and body[_TYPE_AT:body.find('"', _TYPE_AT)] in skip:
                continue
            try:
                rec = json.loads(body)
            except (json.JSONDecodeError, RecursionError) as e:
                log.problems.append(Problem(number, f"not a complete JSON object ({e.msg if hasattr(e, 'msg') else e})", body[:60]))
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
                log.problems.append(Problem(number, 'a record must be a JSON object with a string "type"', body[:60]))
                continue
            if rec["type"] == "schema":
                v = rec.get("version")
                log.schema_version = v if isinstance(v, int) else None
                if log.newer_schema:
                    log.problems.append(
                        Problem(number, f"the log is schema version {v}; this tool reads version {SCHEMA_VERSION}", body[:60]))
            log.records.append(rec)
    return log


def parse(text: str) -> list[dict]:
    """Strict: the records, or ValueError naming the first problem."""
    log = parse_log(text)
    if log.problems:
        raise ValueError(str(log.problems[0]))
    return log.records


def of_type(records: list[dict], kind: str) -> list[dict]:
    return [r for r in records if r["type"] == kind]


def one(records: list[dict], kind: str, **match) -> dict:
    found = [r for r in of_type(records, kind) if all(r.get(k) == v for k, v in match.items())]
    if len(found) != 1:
        raise LookupError(f"expected one {kind} record matching {match}, found {len(found)}")
    return found[0]


def _identity(rec: dict) -> str:
    """What the parts of one record share: its type and every member that
    is not an array, bar the part number (docs/output.md)."""
    same = {k: v for k, v in rec.items() if k not in ("part", "truncated") and not isinstance(v, list)}
    return json.dumps(same, sort_keys=True)


def _is_part(rec: dict) -> bool:
    part, parts = rec.get("part"), rec.get("parts")
    return isinstance(part, int) and isinstance(parts, int) and not isinstance(part, bool) and parts >= 1


def _numbering_problem(numbers: list[int], n: int) -> str | None:
    """Why part numbers are not each of 0..N-1 once (the kernel's), or of
    1..N once (accepted all the same); None when they are."""
    if not 1 <= n <= 4096 or len(numbers) > 4096:
        return f"{n!r} parts claimed, {len(numbers)} seen: not a plausible split (at most 4096)"
    base = 1 if numbers and min(numbers) >= 1 and max(numbers) <= n else 0
    expected = set(range(base, base + n))
    missing = sorted(expected - set(numbers))
    repeated = sorted({k for k in numbers if numbers.count(k) > 1})
    stray = sorted(set(numbers) - expected)
    listed = lambda ks: ", ".join(map(str, ks))  # noqa: E731
    said = [f"part {listed(ks)} {what}" for ks, what in
            ((missing, f"of {n} missing"), (repeated, "repeated"), (stray, f"out of range (of {n})")) if ks]
    return "; ".join(said) or None


def _join(parts: list[dict]) -> tuple[dict, str | None]:
    """One record from its parts, arrays concatenated in part order; marked
    truncated, with the reason, unless every part is there once and whole."""
    parts = sorted(parts, key=lambda p: p["part"])
    arrays = [k for k, v in parts[0].items() if isinstance(v, list)]
    joined = {k: v for k, v in parts[0].items() if k not in ("part", "truncated")}
    for k in arrays:
        joined[k] = [x for p in parts if isinstance(p.get(k), list) for x in p[k]]
    reason = _numbering_problem([p["part"] for p in parts], parts[0]["parts"])
    if not reason and any(p.get("truncated") for p in parts):
        reason = "a part was cut for length"
    if not reason and any(sorted(k for k, v in p.items() if isinstance(v, list)) != sorted(arrays) for p in parts):
        reason = "its parts do not carry the same arrays"
    if reason:
        joined["truncated"] = True
    return joined, reason


def describe(rec: dict) -> str:
    """A record named for people: its type and the members that say which
    one it is (counter, reference, name)."""
    which = ", ".join(f"{k} {rec[k]}" for k in ("counter", "reference", "name") if isinstance(rec.get(k), str))
    return f"the {rec.get('type') or 'untyped'} record" + (f" ({which})" if which else "")


def join_parts(recs: list[dict]) -> tuple[list[dict], list[str]]:
    """Records that come in parts ("part": k, "parts": N; the same members
    in every part, arrays split) as one record each, where their first part
    was, arrays concatenated in part order. A record with a part missing,
    repeated or cut comes back marked "truncated": true, with a note why."""
    groups: dict[str, list[dict]] = {}
    out: list[dict | str] = []
    for rec in recs:
        if not _is_part(rec):
            out.append(rec)
            continue
        key = _identity(rec)
        if key not in groups:
            groups[key] = []
            out.append(key)
        groups[key].append(rec)
    joined, notes = [], []
    for item in out:
        if isinstance(item, dict):
            joined.append(item)
            continue
        rec, reason = _join(groups[item])
        joined.append(rec)
        if reason:
            notes.append(f"{describe(rec)}, in parts: {reason}")
    return joined, notes
