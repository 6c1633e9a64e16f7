"""A labgrid strategy for clockbench (docs/fleet.md, "labgrid"): power the
machine off, power it on (it boots the image: netboot or a stick, as the lab
set it up), read its serial console in bulk until the run ends, power it off.

    off      the power switched off
    running  the power on and the console connected (QEMU's `-serial
             tcp:...,server=on,wait=on` starts the guest only then)
    Then read_run() hands every byte to a callback until the run ends.

Bindings: a PowerProtocol (a NetworkPowerDriver on the lab's PDU) and a
ConsoleProtocol (a SerialDriver on a NetworkSerialPort, raw, or a
RawSerialPort through ser2net). Runs inside labgrid's Python (build/labgrid-venv)."""

from __future__ import annotations

import enum
import time

import attr
from labgrid.driver.exception import ExecutionError  # noqa: F401 (re-exported for callers)
from labgrid.factory import target_factory
from labgrid.step import step
from labgrid.strategy import Strategy, StrategyError
from labgrid.util import Timeout

END_MARKERS = (b'"type":"qr"', b"run ended:")


class Status(enum.Enum):
    unknown = 0
    off = 1
    running = 2


@target_factory.reg_driver
@attr.s(eq=False)
class ClockbenchStrategy(Strategy):
    bindings = {"power": "PowerProtocol", "console": "ConsoleProtocol"}

    status = attr.ib(default=Status.unknown)
    connect_s = attr.ib(default=30.0)  # the console's port opens once the machine has power

    @step(args=["status"])
    def transition(self, status, *, step):
        if not isinstance(status, Status):
            status = Status[status]
        if status == Status.unknown:
            raise StrategyError(f"can not transition to {status}")
        if status == self.status:
            step.skip("nothing to do")
            return
        if status == Status.off:
            self.target.deactivate(self.console)
            self.target.activate(self.power)
            self.power.off()
        elif status == Status.running:
            self.transition(Status.off)
            self.power.on()
            timeout = Timeout(self.connect_s)
            while True:
                try:
                    self.target.activate(self.console)
                    break
                except Exception as e:  # noqa: BLE001 - the port is not listening yet
                    if timeout.expired:
                        raise StrategyError(f"the console did not open within {self.connect_s:g} s: {e}") from None
                    time.sleep(0.2)
        self.status = status

    def read_run(self, sink, timeout: float, idle: float | None = None) -> str:
        """Reads the console until the run has ended (its last record, then
        a quiet second), the machine went away, nothing came for `idle`
        seconds, or `timeout`; every chunk goes to sink(bytes) at once.
        Returns why it stopped. Reads what is waiting in one go (never a
        byte at a time: that slows the guest)."""
        start = last = time.monotonic()
        tail = b""
        ended = None
        while time.monotonic() - start < timeout:
            try:
                chunk = self.console.read(size=1, timeout=0.5)
            except Exception as e:  # noqa: BLE001 - TIMEOUT (nothing came), or the peer closed
                if "Timeout" not in type(e).__name__ and "Timeout of" not in str(e):
                    return "the run ended; the machine went away" if ended else f"the console went away ({e})"
                chunk = b""
            now = time.monotonic()
            if chunk:
                sink(chunk)
                last = now
                tail = (tail + chunk)[-8192:]
                if ended is None and any(m in tail for m in END_MARKERS):
                    ended = now
            elif ended is not None and now - ended > 1.0:
                return "the run ended"
            if idle is not None and ended is None and now - last > idle:
                return f"nothing new for {idle:.0f} s: the machine hangs"
        return f"no summary within {timeout:.0f} s"
