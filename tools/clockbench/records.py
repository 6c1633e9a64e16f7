"""Reads the machine records out of a clockbench serial log (docs/output.md)."""

from __future__ import annotations

import json
import re

PREFIX = "@cb "
SCHEMA_VERSION = 1
# GRUB and the firmware draw menus with terminal escape sequences.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def clean(text: str) -> str:
    return _ESCAPES.sub("", text).replace("\r", "")


def parse(text: str) -> list[dict]:
    """Every record in the log, in order. Lines that are not records are skipped."""
    out = []
    for line in clean(text).split("\n"):
        i = line.find(PREFIX)
        if i < 0:
            continue
        body = line[i + len(PREFIX):].strip()
        try:
            rec = json.loads(body)
        except json.JSONDecodeError as e:
            raise ValueError(f"bad record {body[:80]!r}: {e}") from None
        if not isinstance(rec, dict) or "type" not in rec:
            raise ValueError(f"record without a type: {body[:80]!r}")
        out.append(rec)
    return out


def of_type(records: list[dict], kind: str) -> list[dict]:
    return [r for r in records if r["type"] == kind]


def one(records: list[dict], kind: str, **match) -> dict:
    found = [r for r in of_type(records, kind) if all(r.get(k) == v for k, v in match.items())]
    if len(found) != 1:
        raise LookupError(f"expected one {kind} record matching {match}, found {len(found)}")
    return found[0]
