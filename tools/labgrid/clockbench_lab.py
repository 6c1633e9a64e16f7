"""One labgrid place through ClockbenchStrategy, run by `clockbench lab` and
`clockbench capture labgrid:PLACE` in labgrid's own Python
(build/labgrid-venv): acquires the place from the coordinator (LG_COORDINATOR),
powers the machine on, writes its console to standard output as it comes,
powers it off and releases the place. Messages go to standard error; the
last line says why it stopped. Exit status 0 when the run ended, 1 when it
did not, 2 when the place could not be used."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENT = Path(sys.executable).with_name("labgrid-client")

ENV = """targets:
  main:
    resources:
      RemotePlace:
        name: {place}
    drivers:
      NetworkPowerDriver: {{}}
      SerialDriver:
        txdelay: 0.0
      ClockbenchStrategy: {{}}
imports:
  - {strategy}
"""


def say(text: str) -> None:
    print(f"clockbench lab: {text}", file=sys.stderr, flush=True)


def client(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLIENT), *args], capture_output=True, text=True, timeout=60)


def last_line(r: subprocess.CompletedProcess) -> str:
    said = (r.stderr or r.stdout).strip().splitlines()
    return said[-1] if said else f"exit status {r.returncode}"


def _stopped(*_):
    """SIGTERM (the capture has what it wants, or gave up): power off and release as for Ctrl-C."""
    raise KeyboardInterrupt


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--place", required=True)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--idle", type=float)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, _stopped)

    try:
        r = client("-p", args.place, "acquire")
    except KeyboardInterrupt:  # a SIGTERM during the acquire: it may have been granted as the signal came
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        client("-p", args.place, "release")
        say("stopped")
        return 1
    if r.returncode != 0:
        say(f"cannot acquire place {args.place}: {last_line(r)}"[:400])
        return 2
    code = 1
    try:
        from labgrid import Environment  # the environment's imports: register the strategy

        with tempfile.TemporaryDirectory(prefix="clockbench-lab-") as d:
            env_file = Path(d) / "env.yaml"
            env_file.write_text(ENV.format(place=args.place, strategy=HERE / "clockbench_strategy.py"))
            env = Environment(str(env_file))
            target = env.get_target("main")
            strategy = target.get_driver("ClockbenchStrategy")
            out = sys.stdout.buffer
            try:
                strategy.transition("running")
                say(f"{args.place}: powered on, console open")

                def sink(b: bytes) -> None:
                    out.write(b)
                    out.flush()

                why = strategy.read_run(sink, args.timeout, args.idle)
                code = 0 if why.startswith("the run ended") else 1
                say(why)
            except KeyboardInterrupt:
                say("stopped")
            finally:
                # From here on a SIGTERM (the capture has what it wants, often just as
                # the run ends by itself) would cut the power-off or the release
                # short and leave the place acquired: it is ignored.
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                try:
                    strategy.transition("off")
                except Exception as e:  # noqa: BLE001
                    say(f"could not power {args.place} off: {e}")
                target.cleanup()
    except Exception as e:  # noqa: BLE001 - one line for the caller
        say(f"{args.place}: {type(e).__name__}: {e}")
        code = 2
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as above, when the run failed before it began
        try:
            r = client("-p", args.place, "release")
            if r.returncode != 0:
                say(f"could not release place {args.place}: {last_line(r)}"[:400])
        except subprocess.TimeoutExpired:
            say(f"could not release place {args.place}: no answer within 60 s")
    return code


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("LG_COORDINATOR", "127.0.0.1:20408")
    sys.exit(main())
