"""`clockbench capture PORT PORT...`: several machines at once, each port
read by a thread of its own into a log of its own (capture.py does the
reading), one progress line per machine, and each run added to the store
when it ends. A machine that hangs (nothing new for --idle seconds), dies
(its port goes away) or never ends within --timeout does not hold up the
others: it ends as an incomplete run, with the reason, in the store too.

A port is `[NAME=]PORT[,key=value...]`: PORT a serial device, tcp:HOST:PORT
or labgrid:PLACE; NAME the machine's name in the store (default: the port);
keys firmware, boot, mac, place say what the log cannot (the fleet groups
machines by CPU and firmware)."""

from __future__ import annotations

import datetime as dt
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from clockbench.fleet import capture
from clockbench import errors, paths
from clockbench.records import records, results
from clockbench.runs import store
from clockbench.errors import UsageError

KEYS = ("firmware", "boot", "mac", "place")


@dataclass
class Target:
    name: str
    port: str
    meta: dict = field(default_factory=dict)
    log: Path | None = None
    state: str = "waiting"
    read: int = 0
    records: int = 0
    section: str = ""
    started: float | None = None
    ended: float | None = None
    complete: bool = False
    why: str = ""
    code: int | None = None
    run_id: int | None = None


def parse_target(spec: str) -> Target:
    head, *opts = spec.split(",")
    name, sep, port = head.partition("=")
    if not sep:
        name, port = "", head
    if not port:
        raise UsageError(f"{spec!r}: no port (e.g. tcp:127.0.0.1:5000, /dev/ttyUSB0, labgrid:PLACE)")
    meta = {}
    for o in opts:
        k, sep, v = o.partition("=")
        if not sep or k not in KEYS:
            raise UsageError(f"{spec!r}: {o!r} is not one of {', '.join(k + '=...' for k in KEYS)}")
        meta[k] = v
    if port.startswith("labgrid:"):
        meta.setdefault("place", port[len("labgrid:"):])
    return Target(name or port, port, meta)


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "machine"


def _progress_of(t: Target, data_tail: str) -> None:
    sections = [l for l in data_tail.split("\n") if l.startswith("==")]
    if sections:
        t.section = sections[-1].strip("= ")[:40]


def _one(t: Target, args, say) -> None:
    t.started = time.monotonic()
    t.state = "connecting"
    try:
        dev = capture.open_port(t.port, args.baud)
    except errors.ToolError as e:
        t.state, t.why, t.code = "failed", str(e), e.code
        t.ended = time.monotonic()
        if not isinstance(e, errors.Unavailable):  # a place never had: no run of its machine, nothing to store
            _store(t, args, "", say)
        return
    t.state = "reading"

    class Counting:
        """The port, counting what passes for the progress line."""

        def read(self, n):
            chunk = dev.read(n)
            if chunk:
                t.read += len(chunk)
                text = chunk.decode("utf-8", "replace")
                t.records += text.count(records.PREFIX)
                _progress_of(t, text)
            return chunk

        def close(self):
            dev.close()

    try:
        t.complete, t.why = capture.capture(t.port, args.baud, args.timeout, t.log, progress=lambda s: None, idle=args.idle,
                                            stop=args.stop_event, dev=Counting())
    except errors.ToolError as e:
        t.complete, t.why = False, str(e)
    text = t.log.read_bytes().decode("utf-8", "replace") if t.log.is_file() else ""
    if not text:
        t.code = results.NO_VERDICT
        t.why += "; nothing was read"
    else:
        try:
            t.code, state = results.outcome(results.load_any(text, str(t.log)))
        except errors.ToolError as e:
            t.code, state = e.code, str(e)
        if not t.complete:
            t.code = results.NO_VERDICT
    t.state = "done" if t.complete else "incomplete"
    t.ended = time.monotonic()
    _store(t, args, text, say)


def _store(t: Target, args, text: str, say) -> None:
    if not args.store or args.store == "none":
        return
    meta = {"log_path": str(t.log) if t.log and t.log.is_file() else None, "reason": None if t.complete else t.why,
            "seconds": round((t.ended or time.monotonic()) - (t.started or 0), 3), "started": t.meta.get("started"),
            **{k: v for k, v in t.meta.items() if k in KEYS}}
    if not t.complete:
        meta["exit"] = results.NO_VERDICT
    t.run_id = store.record(args.store, text, t.name, getattr(args, "source", "capture"), meta, say=lambda s: say(f"{t.name}: {s}"))


def line(t: Target, now: float) -> str:
    took = (t.ended or now) - t.started if t.started else 0.0
    what = {"reading": f"{t.read / 1024:.0f} KiB, {t.records} records" + (f", at {t.section}" if t.section else ""),
            "done": f"the run ended: {_status(t)}",
            "incomplete": f"INCOMPLETE: {t.why}", "failed": f"FAILED: {t.why}"}.get(t.state, t.state)
    return f"  {t.name:<20} {took:6.0f} s  {what}"


def _status(t: Target) -> str:
    names = {0: "passed", 1: "failed", 2: "nothing ran", 3: "crashed", 4: "no verdict"}
    return f"{names.get(t.code, t.code)} (exit {t.code})"


def main(args) -> int:
    targets = [parse_target(s) for s in args.port]
    names = [t.name for t in targets]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise UsageError(f"two ports with the machine name {sorted(dup)[0]!r}: give each NAME=PORT")
    now = dt.datetime.now(dt.timezone.utc)
    out = Path(args.log_dir) if args.log_dir else paths.BUILD / "captures" / now.strftime("%Y-%m-%dT%H-%M-%SZ")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise errors.CannotWrite(f"cannot create {out}: {e.strerror or e}") from None
    for t in targets:
        t.log = out / f"{_file_name(t.name)}.log"
        t.meta.setdefault("started", now.isoformat(timespec="seconds"))
    args.stop_event = threading.Event()
    tty = sys.stdout.isatty()
    lock = threading.Lock()
    said: list[str] = []

    who = f"clockbench {getattr(args, 'command', None) or 'capture'}"  # `lab` speaks as lab

    def say(s: str) -> None:
        with lock:
            said.append(s)
            if not tty:
                print(f"{who}: {s}", flush=True)

    print(f"{who}: {len(targets)} machine{'' if len(targets) == 1 else 's'} into {out}/ (timeout {args.timeout:.0f} s"
          + (f", idle {args.idle:.0f} s" if args.idle else "") + ")", flush=True)
    threads = [threading.Thread(target=_one, args=(t, args, say), name=f"capture-{t.name}", daemon=True) for t in targets]
    for th in threads:
        th.start()
    drawn = 0
    last_plain: dict[str, str] = {}
    last_plain_t = 0.0
    try:
        while any(th.is_alive() for th in threads):
            time.sleep(0.5)
            now_t = time.monotonic()
            if tty:
                sys.stdout.write(("\x1b[F" * drawn) + "".join("\x1b[2K" + line(t, now_t) + "\n" for t in targets))
                sys.stdout.flush()
                drawn = len(targets)
            elif now_t - last_plain_t >= args.every:
                last_plain_t = now_t
                for t in targets:
                    shown = line(t, now_t)
                    key = f"{t.state}{t.section}"
                    if last_plain.get(t.name) != key or t.state == "reading":
                        last_plain[t.name] = key
                        print(shown, flush=True)
    except KeyboardInterrupt:
        args.stop_event.set()
        for th in threads:
            th.join(timeout=10)
        print(f"{who}: interrupted; what was read is kept in {out}", file=sys.stderr)
        return errors.INTERRUPTED
    for th in threads:
        th.join()
    if tty:
        sys.stdout.write(("\x1b[F" * drawn))
    print(f"{who}: every machine has ended:")
    end = time.monotonic()
    for t in targets:
        print(line(t, end))
    if tty:
        for s in said:
            print(f"{who}: {s}")
    codes = [t.code if t.code is not None else results.NO_VERDICT for t in targets]
    print(f"{who}: logs in {out}/; `clockbench fleet` compares the machines")
    return max(codes) if any(codes) else 0
