"""`clockbench run`'s machine, running: the run's progress on this terminal
(report/progress.py), its log written as it arrives so that a killed tool
leaves it, Ctrl-C as the stop event, and the plan's machine run by its
backend (machines/launch.py), its migration or snapshot included."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from clockbench import errors
from clockbench.machines import host_tsc, launch
from clockbench.report import progress
from clockbench.runs import runs
from clockbench.runs.plan import RunPlan
from clockbench.runs.record import RunRecord

PRE_IMAGE_LINES = 20  # shown when the image never started
VMM_STDERR = "vmm-stderr.log"  # a microVM monitor's own log lines, in the run's folder


def say(text: str) -> None:
    print(f"clockbench: {text}", flush=True)


def _say_stop(run_plan: RunPlan, vmm: str) -> None:
    s = run_plan.stop
    origin = f"its {s.after} phase began" if s.after else "the serial port's first line"
    if run_plan.stop_field == "migration":
        say(f"migrating the VM to a new QEMU {s.at_s:g} s after {origin}, stopped at least {s.gap_s:g} s")
    else:
        say(f"snapshotting the VM {s.at_s:g} s after {origin} and restoring it in a new {vmm}, "
             f"stopped at least {s.gap_s:g} s")


def _launch(run_plan: RunPlan, rec: RunRecord, echo, stop):
    """The machine, run by its backend; a machine that cannot run is said
    in the record and raised as the tool's error."""
    name = rec.meta["vmm"]["name"]
    err_stream = (rec.run_dir / VMM_STDERR).open("w", errors="replace") if name != "qemu" else None

    def echo_err(text: str) -> None:
        err_stream.write(text)
        err_stream.flush()

    if run_plan.stop is not None:
        _say_stop(run_plan, name)
    try:
        result, done = launch.run(run_plan.machine, run_plan.timeout, stop_plan=run_plan.stop, echo=echo, stop=stop,
                                  echo_err=echo_err if err_stream else None)
    except (RuntimeError, OSError) as e:
        if name == "qemu":
            binary = rec.meta["qemu"]["command"][0]
            missing = isinstance(e, FileNotFoundError) and e.filename == binary
            failure = (errors.MissingTool(f"{binary} not found: install the 'qemu-system-x86' package (or run `make deps`)")
                       if missing else errors.QemuFailed(f"{e} (run folder {runs.shown(rec.run_dir)})"))
            rec.failed("QEMU failed", failure, error=str(e))
        else:
            failure = errors.QemuFailed(f"{name}: {e} (run folder {runs.shown(rec.run_dir)})")
            rec.failed(f"{name} failed", failure, error=str(e))
        raise failure from None
    finally:
        if err_stream:
            err_stream.close()
        if run_plan.stop_field == "migration":
            (rec.run_dir / "vmstate").unlink(missing_ok=True)  # the VM's memory: not kept
    if done is not None:
        rec.stopped(run_plan.stop_field, done)
    return result


def run(args, run_plan: RunPlan, rec: RunRecord):
    """Runs the plan's machine with the run's progress on the terminal and
    its log written as it arrives; returns the machine's result. A machine
    that never started the image is said in the record and raised."""
    log = rec.log
    name = rec.meta["vmm"]["name"]
    what = "QEMU" if name == "qemu" else name
    term = progress.Terminal(show_records=args.records, hold_until_image=run_plan.hold)
    stop = threading.Event()
    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGINT, lambda *_: stop.set())
    # the log is written as it arrives, so even a killed tool leaves it;
    # it is rewritten whole (line ends normalised) once the machine has ended
    stream = log.open("w", errors="replace")

    def echo(text: str) -> None:
        stream.write(text)
        stream.flush()
        term.feed(text)

    # the host's own TSC rate, measured from just before the machine starts
    # to just after it ends: the known answer for the guest's (host_tsc.py)
    host = host_tsc.Beside()
    host.start()
    try:
        result = _launch(run_plan, rec, echo, stop)
    finally:
        stream.close()
        term.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
    rec.meta["host_tsc"] = host.result()

    log.write_text(result.output)
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        Path(args.log).write_text(result.output)
    held = term.held_text()
    if held:
        lines = held.split("\n")[-PRE_IMAGE_LINES:]
        say("the image never started; the last lines before it (firmware, GRUB):")
        print("\n".join("  " + l for l in lines), flush=True)
    if result.stderr.strip() and name == "qemu":
        sys.stderr.write(result.stderr)
    elif result.stderr.strip():
        n = len(result.stderr.splitlines())
        say(f"{name}'s own log: {n} line{'s' if n != 1 else ''} in {runs.shown(rec.run_dir / VMM_STDERR)}")

    if result.never_started:
        said = result.stderr.strip().splitlines() or ["no message"]
        # QEMU's last line says why; a microVM monitor's first line with "error" (its last is "exiting")
        why = said[-1] if name == "qemu" else next((l for l in said if "error" in l.lower()), said[-1])
        failure = errors.QemuFailed(f"{what} exited {result.machine_exit} before the image started: {why.strip()}")
        rec.failed(f"{what} failed", failure)
        raise failure
    return result

