"""`clockbench decode`: the QR code from the summary screen (a photo or a
screenshot, read with zbarimg, or its text pasted) back into a results file.
The payload format is in docs/output.md ("QR payload"). Bad input of any
kind ends in one line and a tool exit status (errors.py), never a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from clockbench import errors
from clockbench.records import qrimage

MAGIC = "CB1"
PAYLOAD_VERSION = 1
# Every field an image writes; on a small screen the payload leaves some out
# (docs/output.md), and the decoded results say which.
KNOWN = ("b", "cpu", "fms", "hv", "prof", "tsc_hz", "tsc_src", "c", "smp", "sum", "st", "fail", "skip")
SINGLE = set(KNOWN) - {"c"}


class PayloadError(errors.BadInput):
    pass


def _num(text: str, scale: int, what: str):
    if text == "-":
        return None
    if not re.fullmatch(r"-?[0-9]{1,20}", text):
        raise PayloadError(f"{what}: {text!r} is not a whole number")
    return int(text) / scale if scale != 1 else int(text)


def _count(text: str, what: str) -> int:
    if not re.fullmatch(r"[0-9]{1,9}", text):
        raise PayloadError(f"{what}: {text!r} is not a count")
    return int(text)


def _names(value: str, key: str) -> tuple[list[str], int]:
    """fail= / skip=: check names separated by ',', the last may be +N for
    N more that did not fit."""
    parts = value.split(",")
    more = 0
    if parts and parts[-1].startswith("+"):
        more = _count(parts.pop()[1:], f"{key}=")
    if any(not p.strip() for p in parts):
        raise PayloadError(f"{key}= has an empty check name: {value[:60]!r}")
    return parts, more


def _smp(value: str) -> dict:
    parts = value.split(",")
    if len(parts) != 5:
        raise PayloadError(f"smp= should have 5 parts (running,enabled,sync,worst_ns,warps): {value[:60]!r}")
    running, enabled, sync, worst, warps = parts
    if sync not in ("yes", "NO", "-"):
        raise PayloadError(f"smp=: sync is {sync!r}, not yes, NO or -")
    return {"running": _count(running, "smp= running"), "enabled": _count(enabled, "smp= enabled"),
            "synchronised": {"yes": True, "NO": False}.get(sync), "worst_ns": _num(worst, 1, "smp= worst_ns"),
            "warps": None if warps == "-" else _count(warps, "smp= warps")}


def parse_payload(text: str) -> dict:
    text = text.strip()
    fields = text.split(";")
    magic = fields[0]
    if magic != MAGIC:
        m = re.fullmatch(r"CB([0-9]{1,6})", magic)
        if m and int(m.group(1)) > PAYLOAD_VERSION:
            raise errors.NewerSchema(f"QR payload version {m.group(1)} ({magic}); this tool reads version {PAYLOAD_VERSION} "
                                     f"({MAGIC}): update clockbench")
        raise PayloadError(f"not a clockbench QR payload (it should start with {MAGIC!r}): {text[:40]!r}")
    out = {"format": "clockbench-qr", "payload_version": PAYLOAD_VERSION, "counters": []}
    seen: set[str] = set()
    for f in fields[1:]:
        key, sep, value = f.partition("=")
        if not sep:
            raise PayloadError(f"field {f[:40]!r} has no '='")
        if key in SINGLE and key in seen:
            raise PayloadError(f"field {key}= appears twice")
        seen.add(key)
        if key == "b":
            out["build"] = value
        elif key == "cpu":
            out["cpu"] = value
        elif key == "fms":
            out["family_model_stepping"] = value
        elif key == "hv":
            out["hypervisor"] = None if value == "-" else value
        elif key == "sb":  # on, off, or - (unknown: not booted through the EFI entry)
            out["secure_boot"] = value if value in ("on", "off") else "unknown"
        elif key == "prof":
            out["profile"] = value
        elif key == "tsc_hz":
            out["tsc_hz"] = _num(value, 1, "tsc_hz")
        elif key == "tsc_src":
            out["tsc_hz_source"] = value
        elif key == "c" and value.startswith("+"):  # counters left out to fit: how many
            if "counters_not_carried" in out:
                raise PayloadError("two c=+N fields")
            out["counters_not_carried"] = _count(value[1:], "c=+N")
        elif key == "c":
            parts = value.split(",")
            if len(parts) != 5:
                raise PayloadError(f"counter field {value[:60]!r} should have 5 parts")
            name, read, res, ppm, mono = parts
            if not name:
                raise PayloadError(f"counter field {value[:60]!r} has no name")
            out["counters"].append({
                "name": name,
                "present": mono != "absent",
                "read_p50_ns": _num(read, 10, name),
                "resolution_ns": _num(res, 10, name),
                # for the TSC, the +- of its measured frequency; for the others, their offset from nominal
                "ppm": _num(ppm, 100, name),
                "monotonic": {"yes": True, "NO": False}.get(mono),
                "stuck": mono == "STUCK",
            })
        elif key == "smp":
            out["smp"] = _smp(value)
        elif key == "sum":
            parts = value.split(",")
            if len(parts) != 3:
                raise PayloadError(f"sum= should be passed,failed,skipped: {value[:40]!r}")
            p, fl, s = (_count(x, "sum=") for x in parts)
            out.setdefault("summary", {}).update({"pass": p, "fail": fl, "skip": s})
        elif key == "st":
            if not value:
                raise PayloadError("st= is empty")
            out.setdefault("summary", {})["status"] = value
        elif key in ("fail", "skip"):
            names, more = _names(value, key)
            what = "failed" if key == "fail" else "skipped"
            out.setdefault("checks", {})[what] = names
            out["checks"][f"{what}_not_carried"] = more
        # unknown keys from a newer image are kept as they are
        else:
            out.setdefault("extra", {})[key] = value
    for key in ("sum", "st"):
        if key not in seen:
            raise PayloadError(f"the payload has no {key}= field: every clockbench image writes one, so this is not "
                               f"a whole payload: {text[:40]!r}")
    s = out["summary"]
    checks = out.setdefault("checks", {})
    for key, what, count in (("fail", "failed", "fail"), ("skip", "skipped", "skip")):
        if key in seen:
            carried = len(checks[what]) + checks[f"{what}_not_carried"]
            if carried != s[count]:
                raise PayloadError(f"{key}= accounts for {carried} check{'' if carried == 1 else 's'} but sum= says {s[count]} {what}")
        else:  # none, or none named: the payload was cut to fit
            checks[what], checks[f"{what}_not_carried"] = [], s[count]
    # smp= is written only when the cpus experiment ran: its absence says nothing
    needless = {"smp"} | ({"fail"} if s["fail"] == 0 else set()) | ({"skip"} if s["skip"] == 0 else set())
    out["not_carried"] = [k for k in KNOWN if k not in seen and k not in needless]
    out.setdefault("counters_not_carried", 0)
    return out


def read_text(args) -> str:
    """The payload text from --text (or standard input), or from the image
    through zbarimg."""
    if args.text is not None:
        return sys.stdin.read() if args.text == "-" else args.text
    path = Path(args.image)
    if not path.exists():
        raise errors.NoInput(f"{path}: no such file")
    if not path.is_file():
        raise errors.NoInput(f"{path}: not a file")
    try:
        with path.open("rb"):
            pass
    except OSError as e:
        raise errors.NoInput(f"{path}: cannot be read ({e.strerror})") from None
    if not qrimage.zbar_available():
        raise errors.MissingTool("zbarimg not found: install the 'zbar-tools' package (or run 'make deps'), or pass --text")
    try:
        found = qrimage.decode_image(path)
    except RuntimeError as e:
        raise errors.BadInput(f"{path}: not an image zbarimg can read ({e})") from None
    except subprocess.TimeoutExpired:
        raise errors.BadInput(f"{path}: zbarimg found nothing within 60 s") from None
    codes = [c.decode("utf-8", "replace") for c in found if c.startswith(MAGIC.encode())]
    if not codes:
        others = [c for c in found if c]
        raise errors.BadInput(f"{path}: no clockbench QR code found"
                              + (f" (a QR code that says {others[0][:30]!r}...)" if others else ""))
    return codes[0]


def main(args) -> int:
    result = parse_payload(read_text(args))
    out = json.dumps(result, indent=2) + "\n"
    if args.out:
        try:
            Path(args.out).write_text(out)
        except OSError as e:
            raise errors.CannotWrite(f"{args.out}: cannot be written ({e.strerror})") from None
        print(f"clockbench decode: wrote {args.out}")
    else:
        sys.stdout.write(out)
    return 0
