"""`clockbench decode`: the QR code from the summary screen (a photo or a
screenshot, read with zbarimg, or its text pasted) back into a results file.
The payload format is in docs/output.md ("QR payload")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import qrimage

MAGIC = "CB1"


class PayloadError(ValueError):
    pass


def _num(text: str, scale: int, what: str):
    if text == "-":
        return None
    try:
        return int(text) / scale
    except ValueError:
        raise PayloadError(f"{what}: {text!r} is not a number") from None


def parse_payload(text: str) -> dict:
    fields = text.strip().split(";")
    if not fields or fields[0] != MAGIC:
        raise PayloadError(f"not a clockbench QR payload (it should start with {MAGIC!r}): {text[:40]!r}")
    out = {"format": "clockbench-qr", "payload_version": 1, "counters": []}
    for f in fields[1:]:
        key, sep, value = f.partition("=")
        if not sep:
            raise PayloadError(f"field {f!r} has no '='")
        if key == "b":
            out["build"] = value
        elif key == "cpu":
            out["cpu"] = value
        elif key == "fms":
            out["family_model_stepping"] = value
        elif key == "hv":
            out["hypervisor"] = None if value == "-" else value
        elif key == "prof":
            out["profile"] = value
        elif key == "tsc_hz":
            out["tsc_hz"] = _num(value, 1, "tsc_hz")
        elif key == "tsc_src":
            out["tsc_hz_source"] = value
        elif key == "c":
            parts = value.split(",")
            if len(parts) != 5:
                raise PayloadError(f"counter field {value!r} should have 5 parts")
            name, read, res, ppm, mono = parts
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
        elif key == "sum":
            p, fl, s = (int(x) for x in value.split(","))
            out["summary"] = {"pass": p, "fail": fl, "skip": s}
        elif key == "st":
            out.setdefault("summary", {})["status"] = value
        # unknown keys from a newer image are kept as they are
        else:
            out.setdefault("extra", {})[key] = value
    return out


def main(args) -> int:
    if args.text is not None:
        text = sys.stdin.read() if args.text == "-" else args.text
    else:
        if not qrimage.zbar_available():
            print("clockbench decode: zbarimg not found: install the 'zbar-tools' package, or pass --text", file=sys.stderr)
            return 2
        found = qrimage.decode_image(Path(args.image))
        codes = [c.decode("utf-8", "replace") for c in found if c.startswith(MAGIC.encode())]
        if not codes:
            print(f"clockbench decode: no clockbench QR code found in {args.image}", file=sys.stderr)
            return 1
        text = codes[0]
    try:
        result = parse_payload(text)
    except PayloadError as e:
        print(f"clockbench decode: {e}", file=sys.stderr)
        return 1
    out = json.dumps(result, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(out)
        print(f"clockbench decode: wrote {args.out}")
    else:
        sys.stdout.write(out)
    return 0
