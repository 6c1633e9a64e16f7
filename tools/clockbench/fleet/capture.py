"""`clockbench capture PORT`: a real machine's serial port (pyserial) into
a raw log, until the run's summary (its `qr` record, the last one) or a
timeout; a port that goes away, or Ctrl-C, ends the capture with what was
read kept. Exits with the captured run's status, as `clockbench run` would;
a capture begun mid-run has no schema record and is refused like any log
without one (docs/output.md, "Exit statuses of the host tool")."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

from clockbench import errors
from clockbench.records import records, results
from clockbench.errors import CannotWrite, MissingTool, NoInput

END_MARKERS = (b'"type":"qr"', b"run ended:")


class TcpPort:
    """A serial console on the network (QEMU's -serial tcp:..., ser2net's raw
    mode, a console server), read in bulk: read(n) returns what has come, at
    most n bytes, after at most half a second. Not pyserial's socket://,
    whose read drops the bytes of a read in progress when the other end
    closes."""

    def __init__(self, host: str, port: int, connect_s: float = 10.0):
        deadline = time.monotonic() + connect_s
        while True:  # a machine just powered on opens its console a moment later
            try:
                self.sock = socket.create_connection((host, port), timeout=connect_s)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.sock.settimeout(0.5)

    def read(self, n: int) -> bytes:
        try:
            data = self.sock.recv(n)
        except socket.timeout:
            return b""
        if not data:
            raise ConnectionResetError("the console's connection was closed")
        return data

    def close(self) -> None:
        self.sock.close()


def tcp_address(port: str) -> tuple[str, int]:
    host, _, number = port[4:].rpartition(":")
    if not host or not number.isdigit():
        raise NoInput(f"{port}: not tcp:HOST:PORT; no log written")
    return host, int(number)


def open_port(port: str, baud: int):
    """An open port with read(n) (at most n bytes, waiting at most half a
    second) and close(): a serial device, tcp:HOST:PORT, or labgrid:PLACE
    (lab.py: the place's console, read through labgrid). NoInput when it
    cannot be opened, MissingTool without pyserial."""
    if port.startswith("labgrid:"):
        from clockbench.fleet import lab

        return lab.open_console(port[len("labgrid:"):])
    if port.startswith("tcp:"):
        try:
            return TcpPort(*tcp_address(port))
        except OSError as e:
            raise NoInput(f"cannot open {port}: {e.strerror or e}; no log written") from None
    try:
        import serial
    except ImportError:
        raise MissingTool("pyserial is not installed (Debian: python3-serial; `make deps`)") from None
    try:
        return serial.Serial(port, baud, timeout=0.5)
    except (serial.SerialException, OSError, ValueError) as e:
        raise NoInput(f"cannot open {port}: {e}; no log written") from None


def capture(port: str, baud: int, timeout: float, log: Path, progress=print, idle: float | None = None,
            stop=None, dev=None) -> tuple[bool, str]:
    """Returns (complete, why it stopped); the log file holds every byte read.
    MissingTool without pyserial, NoInput for a port that cannot be opened
    (no log is written then), CannotWrite for a log that cannot be. `idle`
    ends it when nothing came for that long (a machine that hangs), `stop`
    (a threading.Event) when it is set; `dev` is a port already open."""
    try:
        import serial
        port_errors: tuple = (serial.SerialException, OSError)
    except ImportError:
        port_errors = (OSError,)
    if dev is None:
        dev = open_port(port, baud)
    try:
        out = log.open("wb")
    except OSError as e:
        dev.close()
        raise CannotWrite(f"cannot write {log}: {e.strerror or e}") from None
    data = bytearray()
    start = time.monotonic()
    last_report = 0.0
    seen_end = None
    why = f"no summary within {timeout:.0f} s"
    last_data = start
    with out:
        try:
            while time.monotonic() - start < timeout:
                if stop is not None and stop.is_set():
                    why = "stopped"
                    break
                chunk = dev.read(4096)
                if chunk:
                    last_data = time.monotonic()
                    out.write(chunk)
                    out.flush()
                    data += chunk
                    if seen_end is None and any(m in data[-8192:] for m in END_MARKERS):
                        seen_end = time.monotonic()
                if seen_end is not None and time.monotonic() - seen_end > 1.0 and not chunk:
                    why = "the run ended"
                    break
                if idle is not None and seen_end is None and time.monotonic() - last_data > idle:
                    why = f"nothing new for {idle:.0f} s: the machine hangs"
                    break
                if time.monotonic() - last_report > 2.0:
                    last_report = time.monotonic()
                    text = data.decode("utf-8", "replace")
                    sections = [l for l in text.split("\n") if l.startswith("==")]
                    progress(f"  {len(data) / 1024:.0f} KiB read, {text.count(records.PREFIX)} records"
                             + (f", at {sections[-1].strip('= ')}" if sections else ""))
        except port_errors as e:
            why = f"the port went away ({e})"
        except KeyboardInterrupt:
            why = INTERRUPTED
        finally:
            dev.close()
    complete = any(r["type"] == "summary" for r in records.parse_log(data.decode("utf-8", "replace")).records)
    return complete, why


INTERRUPTED = "interrupted (Ctrl-C)"


def store_capture(args, log: Path, why: str, complete: bool, say=None, **meta) -> None:
    """The store hook: the captured log, as a run of the machine the port
    reaches (--name, else the port)."""
    where = getattr(args, "store", None)
    if not where or where == "none":
        return
    from clockbench.runs import store

    text = log.read_bytes().decode("utf-8", "replace") if log.is_file() else ""
    meta = {"log_path": str(log), "reason": None if complete else why, **meta}
    store.record(where, text, getattr(args, "name", None) or args.port, "capture", meta,
                 say=say or (lambda s: print(f"clockbench capture: {s}")))


def main(args) -> int:
    """Exits with the captured run's status, as `clockbench run` would
    (0 passed, 1 failed, 2 nothing ran, 3 crashed, 4 no verdict), or a
    tool error (errors.py)."""
    log = Path(args.log)
    if log.is_dir():
        raise CannotWrite(f"{log} is a folder; --log names the file to write")
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CannotWrite(f"cannot create {log.parent}: {e.strerror or e}") from None
    print(f"clockbench capture: reading {args.port} at {args.baud} baud into {log} (timeout {args.timeout:.0f} s)")
    complete, why = capture(args.port, args.baud, args.timeout, log, idle=getattr(args, "idle", None))
    size = log.stat().st_size if log.exists() else 0
    if size == 0:
        log.unlink(missing_ok=True)
        print(f"clockbench capture: {why}; nothing was read from {args.port} (machine on? cable? --baud {args.baud}?): "
              "no log kept", file=sys.stderr)
        return errors.INTERRUPTED if why == INTERRUPTED else results.NO_VERDICT
    if why == INTERRUPTED:  # a status that is not a verdict: its one line on standard error
        print(f"clockbench capture: {why}; {size} bytes kept in {log}", file=sys.stderr)
        return errors.INTERRUPTED
    print(f"clockbench capture: {why}; {size} bytes kept in {log}")
    store_capture(args, log, why, complete)
    try:
        res = results.load_path(log)
    except errors.BadInput as e:
        raise errors.BadInput(f"{e}" + ("" if complete else f" (a wrong --baud than {args.baud}, or a capture started mid-run?)")) from None
    code, state = results.outcome(res)
    print(f"clockbench capture: {state or 'the run passed'} (exit status {code}); `clockbench report {log}` for the report",
          file=sys.stderr if code else sys.stdout)
    return code
