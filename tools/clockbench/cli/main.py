"""clockbench: boots the clockbench image in QEMU (or reads a real machine's
serial port), and turns a run's log into a report, CI formats and comparisons."""

from __future__ import annotations

import argparse
import sys

from clockbench.report import ci_formats
from clockbench import errors, paths
from clockbench.cli import runner, storecli


# Commands the Makefile runs as build steps (docs/host-tool.md, "The
# Makefile's own steps"): in --help, but never offered for a typo.
INTERNAL = ("esp", "usbimg")


class _Parser(argparse.ArgumentParser):
    """A bad command line exits with errors.USAGE, not argparse's 2 (the
    image's "nothing ran")."""

    def short_usage(self) -> str:
        """The command with [OPTION...] for its options and its positional
        arguments named: "clockbench compare [OPTION...] RUN [RUN ...]"."""
        words = [self.prog, "[OPTION...]"]
        for a in self._actions:
            if a.option_strings or isinstance(a, argparse._SubParsersAction):
                continue
            name = a.metavar or a.dest.upper()
            words.append({"+": f"{name} [{name} ...]", "*": f"[{name} ...]", "?": f"[{name}]"}.get(a.nargs, name))
        return " ".join(words)

    def _command_choice(self, message: str) -> str:
        """A mistyped command: the nearest one, and the commands a user runs
        (the Makefile's own steps, INTERNAL, are not offered)."""
        import difflib
        import re as _re

        m = _re.match(r"argument COMMAND: invalid choice: '([^']*)'", message)
        sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        if not m or sub is None:
            return message
        names = [n for n in sub.choices if n not in INTERNAL]
        near = difflib.get_close_matches(m.group(1), names, n=1, cutoff=0.5)
        return (f"{m.group(1)!r} is not a command" + (f"; did you mean {near[0]!r}?" if near else "")
                + f" (commands: {', '.join(names)})")

    def error(self, message: str):
        # what is wrong comes first, on one line; a usage block of many lines
        # (run's options) would bury it, so that is only pointed to
        message = self._command_choice(message)
        usage = self.format_usage().strip()
        if "\n" in usage:  # however wide the terminal: one line, whatever the command, still a usage line
            usage = f"usage: {self.short_usage()} (--help lists every option and what it takes)"
        self.exit(errors.USAGE, f"{self.prog}: error: {message}\n{usage}\n")


def _dispatch(args: argparse.Namespace) -> int:
    """Runs the command, once its `check` (set beside `func` by commands whose
    option values have ranges, or go together) has passed: a ToolError becomes
    its one-line message and its exit status (a value out of range:
    errors.USAGE), Ctrl-C errors.INTERRUPTED, anything else errors.INTERNAL
    (CLOCKBENCH_DEBUG=1 shows the traceback)."""
    import os

    try:
        check = getattr(args, "check", None)
        if check is not None:
            check(args)
        return args.func(args)
    except errors.ToolError as e:
        print(f"clockbench {args.command}: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"clockbench {args.command}: interrupted", file=sys.stderr)
        return errors.INTERRUPTED
    except BrokenPipeError:  # `clockbench compare ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # noqa: BLE001 - a bug: one line, not a traceback
        if os.environ.get("CLOCKBENCH_DEBUG") == "1":
            raise
        print(f"clockbench {args.command}: internal error: {type(e).__name__}: {e} (CLOCKBENCH_DEBUG=1 shows where)",
              file=sys.stderr)
        return errors.INTERNAL


def _capture(args) -> int:
    """One plain port: capture.py as before; several, or NAME=PORT: multicapture.py."""
    if len(args.port) == 1 and "=" not in args.port[0] and "," not in args.port[0]:
        args.port = args.port[0]
        return __import__("clockbench.fleet.capture", fromlist=["main"]).main(args)
    return __import__("clockbench.fleet.multicapture", fromlist=["main"]).main(args)


def _lab(args) -> int:
    """`clockbench lab PLACE...`: the places' consoles captured at once (multicapture.py, labgrid:PLACE)."""
    import os

    if args.coordinator:
        os.environ["LG_COORDINATOR"] = args.coordinator
    # a coordinator that does not answer, or a place it does not know: one line, exit 69, nothing run or stored
    __import__("clockbench.fleet.lab", fromlist=["check_places"]).check_places([s.split(",")[0] for s in args.places])
    ports = []
    for spec in args.places:  # PLACE[,firmware=...,boot=...]: what one place's machine is, for the store
        place, *opts = spec.split(",")
        given = {o.partition("=")[0] for o in opts}
        opts += [f"{k}={v}" for k, v in (("firmware", args.firmware), ("boot", args.boot)) if v and k not in given]
        ports.append(f"{place}=labgrid:{place}" + "".join("," + o for o in opts))
    args.port = ports
    args.baud = 115200
    return __import__("clockbench.fleet.multicapture", fromlist=["main"]).main(args)


def main(argv: list[str] | None = None) -> int:
    p = _Parser(prog="clockbench", description=__doc__, epilog=errors.epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=paths.version_text(),
                   help="show the tool's version and the build of the image in build/, then exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runner.add_parser(sub)
    __import__("clockbench.cli.osvm", fromlist=["add_parser"]).add_parser(sub)
    storecli.add_parsers(sub)
    __import__("clockbench.fleet.netboot", fromlist=["add_parser"]).add_parser(sub)
    __import__("clockbench.report.acpi", fromlist=["add_parser"]).add_parser(sub)
    __import__("clockbench.fleet.fleet", fromlist=["add_parser"]).add_parser(sub, storecli.add_store_argument)
    __import__("clockbench.fleet.hosts", fromlist=["add_parser"]).add_parser(sub, storecli.add_store_argument)
    f = sub.add_parser("flash", help="write the ISO or the USB disk image raw to a USB stick, with safety checks")
    f.add_argument("device", help="the whole disk, e.g. /dev/sdX")
    f.add_argument("--iso", "--image", dest="iso", default=paths.default(paths.ISO),
                   help="the image to write: the ISO or the disk image, build/clockbench.img (default: %(default)s)")
    f.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    f.add_argument("--force", action="store_true", help="also write a non-removable disk or one over 256 GB")
    f.add_argument("--no-secure-boot-check", dest="check_secure_boot", action="store_false",
                   help="skip checking the image's Secure Boot partition (shim, signatures, certificate) before writing")
    f.set_defaults(func=lambda a: __import__("clockbench.release.flash", fromlist=["main"]).main(a))
    __import__("clockbench.release.secureboot", fromlist=["add_parsers"]).add_parsers(sub)
    __import__("clockbench.release.usbimage", fromlist=["add_parser"]).add_parser(sub)
    d = sub.add_parser("decode", help="turn the summary screen's QR code back into a results file")
    src = d.add_mutually_exclusive_group(required=True)
    src.add_argument("image", nargs="?", help="a photo or screenshot of the summary screen (read with zbarimg)")
    src.add_argument("--text", help="the QR code's text, pasted ('-' reads standard input)")
    d.add_argument("--out", help="write the results here (default: standard output)")
    d.set_defaults(func=lambda a: __import__("clockbench.records.decode", fromlist=["main"]).main(a))
    ca = sub.add_parser("capture", help="read real machines' serial ports into logs until their runs end (several at once)",
                        description=__import__("clockbench.fleet.multicapture", fromlist=["__doc__"]).__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ca.add_argument("port", nargs="+", help="e.g. /dev/ttyUSB0, tcp:127.0.0.1:5000, labgrid:PLACE; several: "
                    "[NAME=]PORT[,firmware=...,boot=...,mac=...], each to its own run")
    ca.add_argument("--idle", type=float, metavar="SECONDS", help="end a machine's capture as incomplete when nothing new "
                    "came for this long (it hangs); default: only --timeout")
    ca.add_argument("--log-dir", help="with several ports: the folder for their logs, NAME.log each "
                    "(default: build/captures/<UTC time>/)")
    ca.add_argument("--every", type=float, default=5.0, help="with several ports and no terminal: seconds between "
                    "progress lines (default: %(default)s)")
    ca.add_argument("--baud", type=int, default=115200, help="the serial port's rate; the image's default is %(default)s")
    ca.add_argument("--timeout", type=float, default=900, help="seconds to wait for the run to end (default: %(default)s)")
    ca.add_argument("--log", default="capture.log", help="where to write what was read (default: %(default)s, in the current folder)")
    ca.add_argument("--store", default=storecli.store_default(),
                    help="add the run to this store of runs ('none': do not) (default: %(default)s)")
    ca.add_argument("--name", help="the machine's name in the store (default: the port)")
    ca.set_defaults(func=_capture)
    lb = sub.add_parser("lab", help="run clockbench on labgrid places: power on, boot, read the console, store the run",
                        description="Each place is acquired from labgrid's coordinator, powered on (it boots the image: "
                        "netboot or a stick, as the lab is set up), its console read until the run ends, powered off and "
                        "released; the runs go to the store. docs/fleet.md has the environment and the strategy.")
    lb.add_argument("places", nargs="+", metavar="PLACE", help="a labgrid place (each gets a run of its own); "
                    "PLACE,firmware=uefi,boot=netboot-uefi says what its machine is, for the store")
    lb.add_argument("--coordinator", help="labgrid's coordinator HOST:PORT (default: LG_COORDINATOR, else 127.0.0.1:20408)")
    lb.add_argument("--timeout", type=float, default=900, help="seconds for each run (default: %(default)s)")
    lb.add_argument("--idle", type=float, metavar="SECONDS", help="a machine silent this long hangs: an incomplete run")
    lb.add_argument("--log-dir", help="the folder for the logs, PLACE.log each (default: build/captures/<UTC time>/)")
    lb.add_argument("--every", type=float, default=5.0, help="seconds between progress lines without a terminal")
    lb.add_argument("--firmware", help="the machines' firmware, for the store (bios, uefi), where a place does not say")
    lb.add_argument("--boot", help="how they boot, for the store (e.g. netboot-bios), where a place does not say")
    lb.add_argument("--store", default=storecli.store_default(), help="the store of runs (default: %(default)s)")
    lb.set_defaults(func=_lab, source="lab")
    rp = sub.add_parser("report", help="turn a run's log into results JSON, PNG plots, an HTML page and CI formats",
                        description="Exits with the run's status (0 passed, 1 failed, 2 nothing ran, 3 crashed, 4 incomplete "
                                    "log), or a tool error (64 and up): see `clockbench --help`.")
    rp.add_argument("log", help="a run's log (build/run.log, a capture), a results.json, a decoded QR code, or a run's id in "
                    "the store (`clockbench runs`; its log is written to run-ID/run.log, or into --out)")
    rp.add_argument("--out", help="output folder (default: the log's name without its extension)")
    rp.add_argument("--no-html", action="store_true", help="write results.json and the CI formats only: no plots, no HTML page")
    rp.add_argument("--os", action="append", metavar="OS_LOG", help="a clockbench-os run (log, results.json or store id) to set beside this "
                    "bare run in the page's section \"Bare and through the OS\" (may be given more than once)")
    ci_formats.add_arguments(rp)
    storecli.add_store_argument(rp)
    rp.set_defaults(func=lambda a: __import__("clockbench.cli.commands", fromlist=["cmd_report"]).cmd_report(a))
    cp = sub.add_parser("compare", help="runs side by side (logs, results JSON files or decoded QR codes)",
                        description=__import__("clockbench.report.compare", fromlist=["__doc__"]).__doc__)
    cp.add_argument("runs", nargs="+", metavar="RUN", help="a log, a results.json, a decoded QR code, or a run's id in the store "
                    "(`clockbench runs`; a file of that name wins); the first is the base of the ratios (with clockbench-os runs: the bare run is)")
    cp.add_argument("--html", metavar="FILE", help="also write the table as an HTML page")
    storecli.add_store_argument(cp)
    cp.set_defaults(func=lambda a: __import__("clockbench.report.compare", fromlist=["main"]).main(a))
    args, extra = p.parse_known_args(argv)
    if extra:  # said by the command's own parser, which names the command, unless they came before it
        given = sys.argv[1:] if argv is None else argv
        before = args.command in given and any(e in given[:given.index(args.command)] for e in extra)
        (p if before else sub.choices[args.command]).error(f"unrecognized arguments: {' '.join(extra)}")
    return _dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
