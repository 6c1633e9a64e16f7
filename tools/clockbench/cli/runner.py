"""`clockbench run`: boots the image in QEMU (or the PVH kernel under a
microVM monitor), shows its report on this terminal with a progress bar,
keeps the run in a folder of its own with its metadata, writes the report
there, and exits with the image's status (docs/output.md).

One path from the plan to the record, a stage a module: the options,
checked (run_args.py), become one plan and the run's record is begun
(run_plan.py); the machine runs it through its backend, migration and
snapshot included (run_machine.py); the result closes the record, which
the report and the store read (run_keep.py). This module only parses and
hands on."""

from __future__ import annotations

import argparse

from clockbench import paths
from clockbench.cli import run_keep, run_machine, run_plan
from clockbench.cli.run_args import (VMMS, NETBOOT_DEFAULT_MAC, add_machine_arguments, add_stop_arguments,
                                     check_run_arguments)
from clockbench.machines import qemu
from clockbench.report import ci_formats
from clockbench.runs import runs, store
from clockbench.runs.plan import BOOT_AND_FIXED_S, DURATION_MAX_S, DURATION_MIN_S, PROFILES, WINDOW_CAP_FACTOR

def add_parser(sub) -> argparse.ArgumentParser:
    r = sub.add_parser("run", help="boot the image in QEMU (or Cloud Hypervisor, Firecracker) and show its report; keep the "
                       "run in a folder of its own",
                       description="Boots the image in QEMU, or its PVH kernel in Cloud Hypervisor or Firecracker (--vmm), "
                       "and shows its report here, with a progress bar on a terminal. "
                       "Every run is kept in a folder of its own under --runs-dir (the serial log, metadata.json, the "
                       "report); `clockbench runs` lists them. Exits with the image's status (docs/output.md); Ctrl-C "
                       f"stops QEMU, keeps the partial log and exits {qemu.EXIT_INTERRUPTED}.")
    r.add_argument("--vmm", default="qemu", metavar="|".join(VMMS),
                   help="the virtual machine monitor: QEMU, or a microVM monitor (Cloud Hypervisor, Firecracker) that "
                   "boots the PVH kernel under KVM with --smp, --memory and the image's options; neither has QEMU's "
                   "isa-debug-exit, so the status comes from the summary on the serial log (default: %(default)s)")
    r.add_argument("--vmm-binary", metavar="PATH", help="the monitor's program (default: qemu-system-x86_64, "
                   "cloud-hypervisor or firecracker on PATH)")
    r.add_argument("--boot", choices=["iso", "direct", "pvh", "netboot"], default=None,
                   help="iso: GRUB from the ISO, Multiboot 2 (the tool picks the entry, no menu is shown); "
                   "direct: QEMU -kernel, Multiboot 1, the fast path; pvh: the PVH entry (QEMU -kernel, or a microVM "
                   "monitor); netboot: PXE from the TFTP tree `make netboot` writes, served by QEMU's own TFTP server "
                   "(see --tftp, --mac, --loader) (default: iso under QEMU, pvh under a microVM monitor)")
    r.add_argument("--kernel", help=f"the kernel, for --boot direct (default: {paths.default(paths.KERNEL)}) or pvh "
                   f"(default: {paths.default(paths.PVH_KERNEL)})")
    r.add_argument("--iso", help=f"the ISO, for --boot iso (default: {paths.default(paths.ISO)})")
    r.add_argument("--tftp", metavar="DIR", help="with --boot netboot: the TFTP tree (default: "
                   f"{paths.default(paths.BUILD / 'netboot')}, which the run writes with `make netboot` when it is missing or holds "
                   "an older kernel than the build's)")
    r.add_argument("--mac", help="with --boot netboot: the NIC's MAC address, which picks the command line in the tree's "
                   f"machines file (default: QEMU's, {NETBOOT_DEFAULT_MAC})")
    r.add_argument("--loader", choices=["ipxe", "grub"], help="with --boot netboot: what loads the kernel; bios: ipxe "
                   "(Multiboot 1, the default) or grub (Multiboot 2); uefi: grub only")
    add_machine_arguments(r, firmware_help="SeaBIOS, OVMF (UEFI), OVMF's Secure Boot build with Secure Boot on "
                          "(uefi-secboot: the ISO on q35, as a retail PC with Microsoft's keys; see --secure-boot-vars) "
                          "or qboot (direct boot only)", firmwares=("bios", "uefi", "uefi-secboot", "qboot"))
    r.add_argument("--secure-boot-vars", metavar="FILE",
                   help="with --firmware uefi-secboot: OVMF's variable store to start from (copied into the run's folder, "
                   "never written). Default: Microsoft's keys (OVMF_VARS_4M.ms.fd) with the ISO's own certificate "
                   "(/clockbench.cer on it) enrolled in shim's MokList, as MokManager leaves a PC after the first boot")
    r.add_argument("--append", default="", help="more kernel command line words, key=value (docs/output.md); "
                   "for an ISO boot the tool hands them to GRUB")
    r.add_argument("--profile", choices=PROFILES, help="quick (2 s of drift), standard (60 s) or soak (5 min); default quick")
    r.add_argument("--duration", type=int, metavar="SECONDS", help=f"seconds of drift measurement, from {DURATION_MIN_S} to "
                   f"{DURATION_MAX_S}, with quick's sample counts; with --profile, only that profile's own window")
    r.add_argument("--display", action="store_true", help="open a QEMU window as well")
    r.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=f"stop the run after this many seconds, above 0 (default: {BOOT_AND_FIXED_S} s for booting and the fixed "
                   f"phases, plus {WINDOW_CAP_FACTOR}x the timed windows the profile or duration asks for, plus 10 s)")
    r.add_argument("--runs-dir", default=paths.default(runs.RUNS),
                   help="keep the run in a new folder here; its parent gets run.log, a link to the newest log "
                   "(default: %(default)s)")
    r.add_argument("--log", help="also write the serial log here, and the report next to it (in the log's name "
                   "without its extension) instead of in the run's folder")
    r.add_argument("--records", action="store_true", help="show the machine records (@cb lines) on the terminal too; "
                   "the log keeps them either way")
    r.add_argument("--qemu-arg", action="append", metavar="ARG", help="an extra QEMU argument (repeatable)")
    r.add_argument("--no-report", action="store_true", help="do not write results JSON, plots and HTML")
    r.add_argument("--store", default=str(store.DEFAULT),
                   help="add the run to this store of runs ('none': do not) (default: %(default)s)")
    r.add_argument("--name", help="the machine's name in the store (default: host/machine-accel-firmware-smpN)")
    ci_formats.add_arguments(r)
    add_stop_arguments(r, "migrate")
    add_stop_arguments(r, "snapshot")
    r.set_defaults(func=cmd_run, check=check_run_arguments)
    return r


def cmd_run(args: argparse.Namespace) -> int:
    planned, rec = run_plan.make(args)
    result = run_machine.run(args, planned, rec)
    return run_keep.stop_reached(rec.meta, "snapshot" if planned.stop_field == "snapshot" else "migrate",
                                 run_keep.keep(args, rec, result))
