"""The one entry every run's machine goes through: a QEMU (qemu.QemuConfig)
or a microVM monitor (microvm.VmmConfig), with the stop its plan asks for
(a QEMU migration, a microVM snapshot and restore) or none, run to its end
through vmrun.Session's one poll loop. What comes back is the machine's
result (qemu.RunResult or microvm.VmmResult: output, status, how it ended)
and what the stop did (None when no stop was asked for)."""

from __future__ import annotations

import threading
from typing import Callable

from clockbench.machines import microvm, qemu, snapshot


def run(machine: qemu.QemuConfig | microvm.VmmConfig, timeout: float, *,
        stop_plan: qemu.Migration | snapshot.Snapshot | None = None, echo: Callable[[str], None] | None = None,
        echo_err: Callable[[str], None] | None = None, stop: threading.Event | None = None):
    """Runs the machine for `timeout` seconds at most (a stop's gap and its
    bounds are added by the backend); echo gets the serial output,
    echo_err a microVM monitor's own log lines (QEMU's stay in the result's
    stderr), `stop` ends the run early. Returns (result, stop's result)."""
    if isinstance(machine, qemu.QemuConfig):
        if stop_plan is None:
            return qemu.run(machine, timeout=timeout, echo=echo, stop=stop), None
        if not isinstance(stop_plan, qemu.Migration):
            raise ValueError(f"a QEMU run's stop is a migration, not {type(stop_plan).__name__}")
        return qemu.run_migrated(machine, stop_plan, timeout=timeout, echo=echo, stop=stop)
    if stop_plan is None:
        return microvm.run(machine, timeout, echo=echo, stop=stop, echo_err=echo_err), None
    if not isinstance(stop_plan, snapshot.Snapshot):
        raise ValueError(f"a microVM run's stop is a snapshot, not {type(stop_plan).__name__}")
    return snapshot.run_snapshotted(machine, stop_plan, timeout, echo=echo, stop=stop, echo_err=echo_err)
