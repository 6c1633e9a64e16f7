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


def parse_log(text: str) -> Log:
    """Every record that parses, in order, and a Problem for every one that
    does not (a cut or garbled line, a record without a type, a newer schema).
    Never raises on bad input: what parsed is kept."""
    log = Log()
    for number, line in enumerate(clean(text).split("\n"), 1):
        if PREFIX not in line:
            continue
        for body in line.split(PREFIX)[1:]:  # two records run together stay two
            body = body.strip()
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
