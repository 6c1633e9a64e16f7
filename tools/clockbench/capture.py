"""`clockbench capture PORT`: a real machine's serial port (pyserial) into
a raw log, until the run's summary (its `qr` record, the last one) or a
timeout. A run already in progress is taken from wherever it is; a port
that goes away ends the capture with what was read kept."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from . import records

END_MARKERS = (b'"type":"qr"', b"run ended:")


def capture(port: str, baud: int, timeout: float, log: Path, progress=print) -> tuple[bool, str]:
    """Returns (complete, why it stopped); the log file holds every byte read."""
    import serial

    try:
        dev = serial.Serial(port, baud, timeout=0.5)
    except (serial.SerialException, OSError) as e:
        return False, f"cannot open {port}: {e}"
    data = bytearray()
    start = time.monotonic()
    last_report = 0.0
    seen_end = None
    why = f"no summary within {timeout:.0f} s"
    with log.open("wb") as out:
        try:
            while time.monotonic() - start < timeout:
                chunk = dev.read(4096)
                if chunk:
                    out.write(chunk)
                    out.flush()
                    data += chunk
                    if seen_end is None and any(m in data[-8192:] for m in END_MARKERS):
                        seen_end = time.monotonic()
                if seen_end is not None and time.monotonic() - seen_end > 1.0 and not chunk:
                    why = "the run ended"
                    break
                if time.monotonic() - last_report > 2.0:
                    last_report = time.monotonic()
                    text = data.decode("utf-8", "replace")
                    sections = [l for l in text.split("\n") if l.startswith("==")]
                    progress(f"  {len(data) / 1024:.0f} KiB read, {text.count(records.PREFIX)} records"
                             + (f", at {sections[-1].strip('= ')}" if sections else ""))
        except (serial.SerialException, OSError) as e:
            why = f"the port went away ({e})"
        finally:
            dev.close()
    complete = any(r["type"] == "summary" for r in records.parse_log(data.decode("utf-8", "replace")).records)
    return complete, why


def main(args) -> int:
    log = Path(args.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"clockbench capture: reading {args.port} at {args.baud} baud into {log} (timeout {args.timeout:.0f} s)")
    complete, why = capture(args.port, args.baud, args.timeout, log)
    print(f"clockbench capture: {why}; {'a complete run' if complete else 'no complete run (kept what was read)'} in {log}")
    return 0 if complete else 1
