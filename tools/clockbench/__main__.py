"""clockbench command line: `python3 -m clockbench run ...` boots the image in QEMU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import qemu


def cmd_run(args: argparse.Namespace) -> int:
    cfg = qemu.QemuConfig(
        boot=args.boot,
        kernel=Path(args.kernel),
        iso=Path(args.iso),
        firmware=args.firmware,
        accel=args.accel,
        machine=args.machine,
        cpu=args.cpu,
        smp=args.smp,
        memory=args.memory,
        append=" ".join(x for x in (args.append, f"profile={args.profile}" if args.profile else "",
                                     f"duration={args.duration}" if args.duration else "") if x),
        display=args.display,
        extra=args.qemu_arg or [],
    )
    try:
        accel, why = qemu.resolve_accel(cfg.accel)
    except RuntimeError as e:
        print(f"clockbench: {e}", file=sys.stderr)
        return 2
    cfg.accel = accel
    what = f"{cfg.boot} boot ({cfg.iso if cfg.boot == 'iso' else cfg.kernel}), firmware {cfg.firmware}, machine {cfg.machine}"
    print(f"clockbench: booting {what} under {why}", flush=True)
    if cfg.boot == "iso" and accel == "kvm":
        print("clockbench: note: GRUB can take tens of seconds under nested KVM; `make run-direct` is the fast path", flush=True)
    try:
        result = qemu.run(cfg, timeout=args.timeout, echo=qemu.main_echo)
    except (RuntimeError, FileNotFoundError) as e:
        print(f"clockbench: {e}", file=sys.stderr)
        return 2
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        Path(args.log).write_text(result.output)
    if result.stderr.strip():
        sys.stderr.write(result.stderr)
    print(f"\nclockbench: {result.describe()} after {result.seconds:.1f} s" + (f"; log in {args.log}" if args.log else ""))
    if args.log and not args.no_report and result.output:
        from . import report

        report.main(argparse.Namespace(log=args.log, out=None))
    return result.exit_code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="clockbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="boot the image in QEMU and show its report")
    r.add_argument("--boot", choices=["iso", "direct"], default="iso")
    r.add_argument("--kernel", default="build/clockbench.elf")
    r.add_argument("--iso", default="build/clockbench.iso")
    r.add_argument("--firmware", choices=["bios", "uefi", "qboot"], default="bios")
    r.add_argument("--accel", choices=["auto", "kvm", "tcg"], default="auto")
    r.add_argument("--machine", choices=["q35", "pc"], default="q35")
    r.add_argument("--cpu", default=None, help="QEMU -cpu model (default: host under KVM, max under TCG)")
    r.add_argument("--smp", type=int, default=1)
    r.add_argument("--memory", default="256M")
    r.add_argument("--append", default="", help="kernel command line (direct boot only)")
    r.add_argument("--profile", choices=["quick", "standard", "soak"], help="direct boot only; an ISO boot takes its GRUB menu's default, quick")
    r.add_argument("--duration", type=int, help="seconds of drift measurement (direct boot only)")
    r.add_argument("--display", action="store_true", help="open a QEMU window as well")
    r.add_argument("--timeout", type=float, default=600, help="stop the run after this many seconds")
    r.add_argument("--log", default="build/run.log", help="where to save the serial log")
    r.add_argument("--qemu-arg", action="append", help="an extra QEMU argument (repeatable)")
    r.add_argument("--no-report", action="store_true", help="do not write results JSON, plots and HTML next to the log")
    r.set_defaults(func=cmd_run)
    f = sub.add_parser("flash", help="write the ISO raw to a USB stick, with safety checks")
    f.add_argument("device", help="the whole disk, e.g. /dev/sdX")
    f.add_argument("--iso", default="build/clockbench.iso")
    f.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    f.add_argument("--force", action="store_true", help="also write a non-removable disk or one over 256 GB")
    f.set_defaults(func=lambda a: __import__("clockbench.flash", fromlist=["main"]).main(a))
    d = sub.add_parser("decode", help="turn the summary screen's QR code back into a results file")
    src = d.add_mutually_exclusive_group(required=True)
    src.add_argument("image", nargs="?", help="a photo or screenshot of the summary screen (read with zbarimg)")
    src.add_argument("--text", help="the QR code's text, pasted ('-' reads standard input)")
    d.add_argument("--out", help="write the results here (default: standard output)")
    d.set_defaults(func=lambda a: __import__("clockbench.decode", fromlist=["main"]).main(a))
    ca = sub.add_parser("capture", help="read a real machine's serial port into a log until the run ends")
    ca.add_argument("port", help="e.g. /dev/ttyUSB0")
    ca.add_argument("--baud", type=int, default=115200)
    ca.add_argument("--timeout", type=float, default=900, help="seconds to wait for the run to end")
    ca.add_argument("--log", default="capture.log")
    ca.set_defaults(func=lambda a: __import__("clockbench.capture", fromlist=["main"]).main(a))
    rp = sub.add_parser("report", help="turn a run's log into results JSON, PNG plots and an HTML page")
    rp.add_argument("log")
    rp.add_argument("--out", help="output folder (default: the log's name without its extension)")
    rp.set_defaults(func=lambda a: __import__("clockbench.report", fromlist=["main"]).main(a))
    cp = sub.add_parser("compare", help="runs side by side (logs or results JSON files)")
    cp.add_argument("runs", nargs="+")
    cp.add_argument("--html", help="also write the table as an HTML page")
    cp.set_defaults(func=lambda a: __import__("clockbench.compare", fromlist=["main"]).main(a))
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
