"""labgrid for clockbench (docs/fleet.md, "labgrid"): a place's serial
console as a port `capture` reads (`labgrid:PLACE`), through the strategy in
tools/labgrid/ run in labgrid's own Python (build/labgrid-venv, `make deps`):
it acquires the place from the coordinator (LG_COORDINATOR), powers the
machine on, streams its console here and powers it off at the end.

Also a PDU for QEMU machines (QemuPdu): an HTTP power switch on 127.0.0.1
that labgrid's NetworkPowerDriver drives with its `simplerest` model, where
switching outlet N on starts machine N's QEMU (its command line built in
qemu.py) and off ends it: the tests' lab, and a way to try a lab without
hardware."""

from __future__ import annotations

import http.server
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from clockbench import errors, paths
from clockbench.machines import qemu

VENV = paths.BUILD / "labgrid-venv"
PYTHON = VENV / "bin" / "python"
HELPER = paths.ROOT / "tools" / "labgrid" / "clockbench_lab.py"
OPEN_TIMEOUT_S = 240.0  # the helper's acquire (60 s) and the machine's power-on
PLACES_TIMEOUT_S = 60.0
# the helper's power-off and release after SIGTERM; a loaded host's busy lane took over 30 s
CLOSE_TIMEOUT_S = 90.0


def available() -> tuple[bool, str]:
    if not (VENV / "bin" / "labgrid-client").is_file():
        return False, f"labgrid is not installed in {VENV} (`make deps`)"
    return True, "labgrid 26.0.1 in " + str(VENV)


class PlaceConsole:
    """A place's console, read from the helper's standard output: read(n)
    returns what has come (at most n bytes, after at most half a second);
    the helper's end is ConnectionResetError with its last word."""

    def __init__(self, place: str, timeout: float = 3600):
        ok, why = available()
        if not ok:
            raise errors.MissingTool(why)
        self.place = place
        self.proc = subprocess.Popen([str(PYTHON), str(HELPER), "--place", place, "--timeout", str(timeout)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "PYTHONPATH": ""}, start_new_session=True)
        self.err: list[str] = []
        self.err_reader = threading.Thread(target=self._errors, daemon=True)
        self.err_reader.start()
        self._wait_open()

    def _wait_open(self) -> None:
        """Until the helper has acquired the place and powered it on (its
        "console open" line), bounded: a place it cannot acquire or power is
        a tool error (Unavailable), never a run that went away."""
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(line.endswith("console open") for line in self.err):
                return
            if self.proc.poll() is not None:
                self.err_reader.join(timeout=30)
                if any(line.endswith("console open") for line in self.err):
                    return  # opened, and already ended: read() says how
                last = self.err[-1] if self.err else f"exit status {self.proc.returncode}"
                raise errors.Unavailable(f"labgrid place {self.place}: {last.removeprefix('clockbench lab: ')}")
            time.sleep(0.1)
        self.close()
        raise errors.Unavailable(f"labgrid place {self.place}: not acquired and powered on within {OPEN_TIMEOUT_S:.0f} s")

    def _errors(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            self.err.append(line.decode("utf-8", "replace").rstrip())

    def read(self, n: int) -> bytes:
        ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
        if not ready:
            return b""
        data = os.read(self.proc.stdout.fileno(), n)
        if data:
            return data
        self.proc.wait(timeout=30)
        # its last word is on stderr: wait for the reader to reach the end (a fixed short sleep lost it on a loaded host)
        self.err_reader.join(timeout=30)
        last = self.err[-1] if self.err else f"exit status {self.proc.returncode}"
        raise ConnectionResetError(f"labgrid place {self.place}: {last.removeprefix('clockbench lab: ')}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the helper powers the machine off and releases the place
            try:
                self.proc.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # a helper killed mid-way leaves its place acquired and perhaps powered: undo both here, bounded
                self.proc.kill()
                self.proc.wait()
                self._say(f"the helper did not end within {CLOSE_TIMEOUT_S:g} s of SIGTERM and was killed")
                self._power_off_and_release()

    def _power_off_and_release(self) -> None:
        """What the killed helper did not do: the place powered off and released
        through labgrid-client, each step bounded; a step that fails is said."""
        for step in (["power", "off"], ["release"]):
            try:
                r = subprocess.run([str(VENV / "bin" / "labgrid-client"), "-p", self.place, *step], capture_output=True,
                                   text=True, timeout=PLACES_TIMEOUT_S, env={**os.environ, "PYTHONPATH": ""})
                ok, last = r.returncode == 0, ((r.stderr or r.stdout).strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            except subprocess.TimeoutExpired:
                ok, last = False, f"no answer within {PLACES_TIMEOUT_S:.0f} s"
            if not ok:
                self._say(f"could not {' '.join(step)}: {last}"[:400])

    def _say(self, text: str) -> None:
        line = f"clockbench lab: {self.place}: {text}"
        self.err.append(line)
        print(line, file=sys.stderr, flush=True)


def check_places(places: list[str]) -> None:
    """Before anything runs or is stored: the coordinator answers, and knows
    every place (`labgrid-client places`). Unavailable when not, in one line."""
    ok, why = available()
    if not ok:
        raise errors.MissingTool(why)
    coordinator = os.environ.get("LG_COORDINATOR") or "127.0.0.1:20408"
    try:
        r = subprocess.run([str(VENV / "bin" / "labgrid-client"), "places"], capture_output=True, text=True,
                           timeout=PLACES_TIMEOUT_S, env={**os.environ, "LG_COORDINATOR": coordinator, "PYTHONPATH": ""})
    except subprocess.TimeoutExpired:
        raise errors.Unavailable(f"labgrid's coordinator {coordinator} did not answer within {PLACES_TIMEOUT_S:.0f} s") from None
    if r.returncode != 0:
        last = ((r.stderr or r.stdout).strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        raise errors.Unavailable(f"cannot reach labgrid's coordinator {coordinator}: {last}"[:300])
    known = [line.strip() for line in r.stdout.splitlines() if line.strip()]
    missing = [p for p in places if p not in known]
    if missing:
        raise errors.Unavailable(f"no labgrid place {', '.join(map(repr, missing))} at the coordinator {coordinator} "
                                 f"({'it has ' + ', '.join(known) if known else 'it has none'}); nothing was run or stored")


def open_console(place: str) -> PlaceConsole:
    if not place:
        raise errors.UsageError("labgrid:PLACE needs the place's name")
    return PlaceConsole(place)


class QemuPdu:
    """An HTTP power switch for QEMU machines, as labgrid's `simplerest`
    model drives one: GET /outlet/N/1 starts machine N, /outlet/N/0 ends it,
    /outlet/N says "1" or "0". Listens on 127.0.0.1 only."""

    def __init__(self, machines: dict[int, qemu.QemuConfig], port: int = 0):
        self.machines = machines
        self.procs: dict[int, subprocess.Popen] = {}
        self.lock = threading.Lock()
        pdu = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server name
                parts = self.path.strip("/").split("/")
                try:
                    if len(parts) not in (2, 3) or parts[0] != "outlet":
                        raise ValueError(self.path)
                    index = int(parts[1])
                    if len(parts) == 3:
                        pdu.switch(index, parts[2] == "1")
                        body = b"ok"
                    else:
                        body = b"1" if pdu.is_on(index) else b"0"
                    self.send_response(200)
                except (ValueError, KeyError) as e:
                    body = f"no such outlet: {e}".encode()
                    self.send_response(404)
                except RuntimeError as e:
                    body = str(e).encode()
                    self.send_response(500)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self) -> str:
        """The NetworkPowerPort host for labgrid's simplerest model."""
        return f"http://127.0.0.1:{self.port}/outlet/{{index}}/{{value}}"

    def start(self) -> "QemuPdu":
        self.thread.start()
        return self

    def is_on(self, index: int) -> bool:
        p = self.procs.get(index)
        return p is not None and p.poll() is None

    def switch(self, index: int, on: bool) -> None:
        cfg = self.machines[index]
        with self.lock:
            p = self.procs.get(index)
            if on and (p is None or p.poll() is not None):
                accel, _ = qemu.resolve_accel(cfg.accel)
                self.procs[index] = subprocess.Popen(qemu.build_command(cfg, accel), stdin=subprocess.DEVNULL,
                                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
            elif not on and p is not None and p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()

    def stop(self) -> None:
        for i in list(self.procs):
            self.switch(i, False)
        self.server.shutdown()
        self.server.server_close()
