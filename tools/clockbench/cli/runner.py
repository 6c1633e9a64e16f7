"""`clockbench run`: boots the image in QEMU (or the PVH kernel under a
microVM monitor, microvm.py), shows its report on this
terminal with a progress bar (progress.py), keeps the run in a folder of its
own with its metadata (runs.py), writes the report there, and exits with the
image's status (docs/output.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from clockbench.report import ci_formats, progress
from clockbench import errors, paths
from clockbench.machines import host_tsc, microvm, qemu, snapshot, vmrun
from clockbench.records import records
from clockbench.runs import runs, store
from clockbench.runs.plan import (BOOT_AND_FIXED_S, WINDOW_CAP_FACTOR, DURATION_MAX_S, DURATION_MIN_S, PROFILE_SECONDS, PROFILES, check_kernel_words,
                                   default_timeout, kernel_cmdline)
from clockbench.release import secureboot

# The most CPUs each QEMU machine type takes without extra devices (QEMU 7.2:
# more than 255 APIC IDs need an IOMMU with interrupt remapping); the image
# itself starts up to 256 of them (PERCPU_MAX in kernel/percpu.h) and says so.
SMP_MAX = {"q35": 255, "pc": 255, "microvm": 255}
# Guest memory, QEMU -m's syntax (a number, MiB unless a suffix says
# otherwise): at least what every boot path needs (under TCG here OVMF failed
# to boot the ISO with 48 MiB and booted it with 56; SeaBIOS and GRUB needed
# 8, the direct boot 4), at most what QEMU's default 40-bit physical address
# space holds. Whether the host can back it is QEMU's to say.
MEMORY_MIN_MIB, MEMORY_MAX_MIB = 64, 1024 * 1024
MEMORY_SUFFIX_MIB = {"": 1, "b": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
PRE_IMAGE_LINES = 20  # shown when the image never started
VMMS = ("qemu",) + microvm.VMM_NAMES
# Firecracker's limit on vCPUs (MAX_SUPPORTED_VCPUS, src/vmm/src/vmm_config/machine_config.rs).
VMM_SMP_MAX = {"firecracker": 32}
VMM_STDERR = "vmm-stderr.log"  # a microVM monitor's own log lines, in the run's folder


# --- the options' values, checked before anything starts ---------------------
# One place for every range: a value outside it is a usage error (exit 64),
# one line naming the option and what it allows, and no QEMU is started.

def memory_mib(value: str) -> float | None:
    """QEMU -m's size (a number, MiB unless a suffix B, K, M, G or T says
    otherwise) in MiB, or None when it is not one."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([bkmgtBKMGT]?)", value)
    return float(m.group(1)) * MEMORY_SUFFIX_MIB[m.group(2).lower()] if m else None


def _usage(option: str, value, allowed: str) -> errors.UsageError:
    return errors.UsageError(f"{option} {value}: {allowed}")


def check_machine_arguments(args: argparse.Namespace) -> None:
    """The QEMU machine's numeric options (add_machine_arguments), for `run`
    and `os-vm` alike."""
    top = SMP_MAX[args.machine]
    if not 1 <= args.smp <= top:
        raise _usage("--smp", args.smp, f"the number of CPUs must be from 1 to {top} (machine {args.machine})")
    mib = memory_mib(args.memory)
    if mib is None or not MEMORY_MIN_MIB <= mib <= MEMORY_MAX_MIB:
        raise _usage("--memory", args.memory, f"guest memory must be from {MEMORY_MIN_MIB}M to {MEMORY_MAX_MIB // 1024**2}T "
                     "(a number of MiB, or with a suffix K, M, G or T, as QEMU -m takes it)")


def check_timeout(args: argparse.Namespace) -> None:
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise _usage("--timeout", f"{args.timeout:g}", "the time bound must be a number of seconds above 0")


def check_vmm_arguments(args: argparse.Namespace) -> None:
    """--vmm and what goes with it; decides --boot's default (the ISO under
    QEMU, the PVH kernel under a microVM monitor). A monitor that cannot be
    found or run, or an option it has no use for, is a usage error."""
    vmm = getattr(args, "vmm", "qemu")
    if vmm not in VMMS:
        raise _usage("--vmm", vmm, f"the monitor must be {', '.join(VMMS[:-1])} or {VMMS[-1]}")
    if getattr(args, "boot", None) is None:
        args.boot = "iso" if vmm == "qemu" else "pvh"
    binary = getattr(args, "vmm_binary", None)
    if vmm == "qemu":
        if getattr(args, "snapshot_at", None) is not None:
            raise _usage("--snapshot-at", f"{args.snapshot_at:g}", "is for --vmm firecracker or cloud-hypervisor; QEMU's "
                         "VM moves with --migrate-at")
        if binary is not None and not (Path(binary).is_file() and os.access(binary, os.X_OK)):
            raise _usage("--vmm-binary", binary, "no such file" if not Path(binary).exists() else "not an executable file")
        return
    if args.boot != "pvh":
        raise _usage("--boot", args.boot, f"{vmm} boots only the PVH kernel: --boot pvh (the default with --vmm {vmm})")
    qemu_only = [(name, value) for name, value, default in (
        ("--firmware", args.firmware, "bios"), ("--machine", args.machine, "q35"), ("--cpu", args.cpu, None),
        ("--qemu-arg", " ".join(args.qemu_arg or []) or None, None), ("--display", args.display or None, None),
        ("--secure-boot-vars", getattr(args, "secure_boot_vars", None), None),
        ("--migrate-at", getattr(args, "migrate_at", None), None)) if value != default]
    if args.accel == "tcg":
        qemu_only.insert(0, ("--accel", "tcg"))
    if qemu_only:
        name, value = qemu_only[0]
        raise _usage(name, value if value is not True else "", f"is QEMU's; {vmm} boots the PVH kernel under KVM with "
                     "--smp, --memory and the image's options only")
    top = VMM_SMP_MAX.get(vmm)
    if top is not None and args.smp > top:
        raise _usage("--smp", args.smp, f"{vmm} takes from 1 to {top} vCPUs")
    mib = memory_mib(args.memory)
    if mib is not None and mib != int(mib):
        raise _usage("--memory", args.memory, f"{vmm} takes guest memory in whole MiB")
    found, why = microvm.find_binary(vmm, binary)
    if found is None:
        raise _usage("--vmm" if binary is None else "--vmm-binary", vmm if binary is None else binary, why)


NETBOOT_DEFAULT_MAC = "52:54:00:12:34:56"  # QEMU's NIC when no mac= is given
NETBOOT_LOADERS = {"bios": ("ipxe", "grub"), "uefi": ("grub",)}


def check_netboot_arguments(args: argparse.Namespace) -> None:
    """--boot netboot boots the TFTP tree (`make netboot`): the tree holds the
    kernel and each machine's command line (its machines file, by MAC), so
    the options that would give either are refused, as are the netboot
    options without it."""
    netboot = getattr(args, "boot", None) == "netboot"
    if not netboot:
        for option, value in (("--tftp", getattr(args, "tftp", None)), ("--mac", getattr(args, "mac", None)),
                              ("--loader", getattr(args, "loader", None))):
            if value is not None:
                raise _usage(option, value, "only with --boot netboot")
        return
    for option, value, why in (
            ("--append", args.append or None, "the command line"), ("--profile", args.profile, "the profile"),
            ("--duration", args.duration, "the duration"), ("--kernel", args.kernel, "the kernel"),
            ("--iso", getattr(args, "iso", None), "the image")):
        if value is not None:
            raise _usage(option, value, f"with --boot netboot {why} comes from the TFTP tree (its machines file picks the "
                         "command line by --mac): `make netboot NETBOOT_CONFIG=FILE` writes another")
    if getattr(args, "migrate_at", None) is not None:
        raise _usage("--migrate-at", args.migrate_at, "a netbooted run is not migrated: boot the kernel (--boot direct or pvh)")
    loaders = NETBOOT_LOADERS.get(args.firmware)
    if loaders is None:
        raise _usage("--firmware", args.firmware, "the netboot tree boots under bios (iPXE or GRUB) or uefi (GRUB)")
    if args.loader is not None and args.loader not in loaders:
        raise _usage("--loader", args.loader, f"the tree's {args.firmware} way is {' or '.join(loaders)}")
    if args.mac is not None and not re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", args.mac):
        raise _usage("--mac", args.mac, "a MAC address is six hex pairs with colons, as 52:54:00:12:34:56")


def check_run_arguments(args: argparse.Namespace) -> None:
    """Every value of `run`'s options, and how they go together: the
    profile and the duration, whether from --profile and --duration or from
    profile= and duration= words in --append, must be ones the image takes
    (it would otherwise ignore them with a note and run quick) and must not
    disagree (the image would keep the duration and drop the profile)."""
    check_vmm_arguments(args)
    check_machine_arguments(args)
    check_timeout(args)
    check_migration_arguments(args)
    check_snapshot_arguments(args)
    if args.firmware == "qboot" and args.boot not in ("direct", "pvh"):
        raise _usage("--firmware", args.firmware, "qboot boots only a kernel QEMU loads itself: with --boot direct or pvh")
    if args.boot == "pvh" and args.firmware == "uefi":
        raise _usage("--firmware", args.firmware, "QEMU's -kernel takes a PVH kernel under SeaBIOS or qboot, not OVMF")
    if args.boot == "direct" and args.firmware == "uefi":
        # OVMF loads only an EFI program through -kernel, and this one is Multiboot: it would sit at OVMF's shell
        raise _usage("--firmware", args.firmware, "QEMU's -kernel takes the Multiboot kernel under SeaBIOS or qboot, not OVMF; "
                     "for UEFI boot the ISO: --boot iso")
    if args.firmware == "uefi-secboot" and (args.boot != "iso" or args.machine != "q35"):
        raise _usage("--firmware", args.firmware, "Secure Boot starts the ISO's signed shim, GRUB and kernel: with --boot iso "
                     "on the q35 machine (OVMF's Secure Boot build needs its SMM)")
    given_vars = getattr(args, "secure_boot_vars", None)
    if given_vars and args.firmware != "uefi-secboot":
        raise _usage("--secure-boot-vars", given_vars, "a variable store is for --firmware uefi-secboot")
    if given_vars and not Path(given_vars).is_file():
        raise errors.NoInput(f"{given_vars}: no such file (--secure-boot-vars)")
    if given_vars and Path(qemu.OVMF_VARS_MS).is_file() and Path(given_vars).stat().st_size != Path(qemu.OVMF_VARS_MS).stat().st_size:
        raise errors.BadInput(f"{given_vars}: {Path(given_vars).stat().st_size} bytes, not a store for OVMF's 4M Secure Boot "
                              f"build ({qemu.OVMF_VARS_MS} has {Path(qemu.OVMF_VARS_MS).stat().st_size})")
    if args.machine == "microvm" and args.boot not in ("direct", "pvh"):
        raise _usage("--machine", args.machine, "microvm boots only a kernel QEMU loads itself: with --boot direct or pvh")
    check_netboot_arguments(args)
    durations, profiles = check_kernel_words(args.append, "--append")
    if args.duration is not None:
        if not DURATION_MIN_S <= args.duration <= DURATION_MAX_S:
            raise _usage("--duration", args.duration, f"seconds of drift measurement must be from {DURATION_MIN_S} "
                         f"to {DURATION_MAX_S} (the image's limit)")
        durations.append((f"--duration {args.duration}", args.duration))
    if args.profile:
        profiles.append((f"--profile {args.profile}", args.profile))
    for given, what in ((profiles, f"one profile ({', '.join(PROFILES)})"),
                        (durations, f"one duration, from {DURATION_MIN_S} to {DURATION_MAX_S} s")):
        other = next((g for g in given if g[1] != given[0][1]), None)
        if other:
            raise errors.UsageError(f"{given[0][0]} and {other[0]} disagree: give {what}")
    if profiles and durations:
        (dur, seconds), (prof, name) = durations[0], profiles[0]
        own = PROFILE_SECONDS[name][0]
        if seconds != own:
            raise errors.UsageError(f"{dur} and {prof} disagree: the {name} profile measures drift for {own} s, so the "
                                    f"duration must be {own} or left out (a duration alone runs quick's sample counts "
                                    "with that window)")


def add_machine_arguments(p: argparse.ArgumentParser, firmware_help: str, firmwares=("bios", "uefi", "qboot")) -> None:
    """The QEMU machine's options, the same for `run` and `os-vm`, so that
    both halves of a comparison can be booted on the same virtual hardware."""
    p.add_argument("--firmware", choices=list(firmwares), default="bios", help=f"{firmware_help} (default: %(default)s)")
    p.add_argument("--accel", choices=["auto", "kvm", "tcg"], default="auto",
                   help="KVM, TCG (emulation), or auto: KVM when /dev/kvm is usable and runs the guest itself, TCG "
                   "otherwise, and on a PVM KVM (kvm_pvm), which emulates every instruction (default: %(default)s)")
    p.add_argument("--machine", choices=["q35", "pc", "microvm"], default="q35",
                   help="QEMU machine type; microvm (no PCI, no legacy timers unless asked) boots only a kernel given to "
                   "QEMU: --boot direct or pvh (default: %(default)s)")
    p.add_argument("--cpu", default=None, help="QEMU -cpu model (default: host under KVM, max under TCG)")
    p.add_argument("--smp", type=int, default=1, help=f"CPUs, from 1 to {SMP_MAX['q35']}; the image starts all of them "
                   "(default: %(default)s)")
    p.add_argument("--memory", default="256M", help=f"guest memory as QEMU -m takes it (MiB, or a suffix K, M, G, T), "
                   f"from {MEMORY_MIN_MIB}M to {MEMORY_MAX_MIB // 1024**2}T (default: %(default)s)")


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
    add_migration_arguments(r)
    add_snapshot_arguments(r)
    r.set_defaults(func=cmd_run, check=check_run_arguments)
    return r


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _say(text: str) -> None:
    print(f"clockbench: {text}", flush=True)


def secure_boot_vars(given: str | None, iso: Path, run_dir: Path) -> tuple[Path, str]:
    """OVMF's variable store for a Secure Boot run, in the run's folder (the
    firmware writes it), and what it holds, in words."""
    out = run_dir / "OVMF_VARS.fd"
    if given:
        if not Path(given).is_file():
            raise errors.NoInput(f"{given}: no such file (--secure-boot-vars)")
        shutil.copyfile(given, out)
        return out, f"the variable store {given} (a copy in the run's folder)"
    der = run_dir / secureboot.CERT_DER_NAME
    subject = secureboot.iso_certificate(iso, der)
    secureboot.make_vars(out, der, mok=True, pydeps=paths.BUILD / "pydeps")
    return out, (f"Microsoft's keys, as a retail PC, and the ISO's certificate ({subject}) in shim's MokList, "
                 "as MokManager leaves it after the first boot")


def _microvm_config(args: argparse.Namespace, cmdline: str) -> microvm.VmmConfig:
    kernel = Path(args.kernel or paths.default(paths.PVH_KERNEL))
    if not kernel.is_file():
        raise errors.NoInput(f"{kernel}: no such file (`make kernel` builds it)")
    ok, why = qemu.kvm_usable()
    if not ok:
        raise errors.QemuFailed(f"{args.vmm} needs KVM, but {why}")
    binary, _ = microvm.find_binary(args.vmm, args.vmm_binary)
    return microvm.VmmConfig(vmm=args.vmm, binary=binary, kernel=kernel, smp=args.smp,
                             memory_mib=int(memory_mib(args.memory)), append=cmdline, grace_s=microvm.POWEROFF_GRACE_S)


def cmd_run(args: argparse.Namespace) -> int:
    if getattr(args, "vmm", "qemu") != "qemu":
        return _run_microvm(args)
    cmdline = kernel_cmdline(args)
    kernel = args.kernel or paths.default(paths.PVH_KERNEL if args.boot == "pvh" else paths.KERNEL)
    cfg = qemu.QemuConfig(boot=args.boot, kernel=Path(kernel), iso=Path(args.iso or paths.default(paths.ISO)),
                          firmware=args.firmware, accel=args.accel, machine=args.machine, cpu=args.cpu, smp=args.smp,
                          memory=args.memory, append=cmdline, display=args.display, extra=args.qemu_arg or [],
                          binary=getattr(args, "vmm_binary", None) or qemu.QEMU_BINARY)
    netbooted = None
    if cfg.boot == "netboot":
        netbooted = _netboot_tree(args, cfg)
        cmdline, image = netbooted["cmdline"], cfg.tftp / cfg.bootfile
    else:
        image = cfg.iso if cfg.boot == "iso" else cfg.kernel
    if not image.is_file():
        raise errors.NoInput(f"{image}: no such file (`make {'iso' if cfg.boot == 'iso' else 'kernel'}` builds it)")
    secure = cfg.firmware == "uefi-secboot"
    if secure:
        for f in (qemu.OVMF_SECBOOT_CODE, qemu.OVMF_VARS_MS):
            if not Path(f).is_file():
                raise errors.MissingTool(f"Secure Boot firmware {f} not found: install the 'ovmf' package (`make deps`)")
        cfg.uefi_vars = Path(qemu.OVMF_VARS_MS)  # for the command's checks; the run's own copy replaces it below
    try:
        accel, why = qemu.resolve_accel(cfg.accel)
        cfg.accel = accel
        command = qemu.build_command(cfg, accel)
    except RuntimeError as e:
        raise errors.QemuFailed(str(e)) from None
    timeout = args.timeout if args.timeout is not None else default_timeout(cmdline)
    if shutil.which(command[0]) is None:
        # before the run's folder is made: a run that cannot start leaves nothing behind
        raise errors.MissingTool(f"{command[0]} not found: install the 'qemu-system-x86' package (or run `make deps`)")

    run_dir = runs.new_run_dir(Path(args.runs_dir))
    keys = ""
    if secure:
        try:
            cfg.uefi_vars, keys = secure_boot_vars(args.secure_boot_vars, cfg.iso, run_dir)
        except errors.ToolError:
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing was run: no folder is kept
            raise
        command = qemu.build_command(cfg, accel)
    version = runs.qemu_version(command[0])
    meta = _metadata(args, run_dir, cmdline, image, timeout, {"name": "qemu", "version": version, "binary": _which(command[0])})
    meta["qemu"] = {"version": version, "command": command, "accel": accel, "accel_why": why, "machine": cfg.machine,
                    "firmware": cfg.firmware, "boot": cfg.boot, "cpu": command[command.index("-cpu") + 1],
                    "smp": cfg.smp, "memory": cfg.memory}
    if netbooted:
        meta["netboot"] = {k: v for k, v in netbooted.items() if k != "cmdline"}
    runs.write_metadata(run_dir, meta)
    how = {"iso": "the ISO", "direct": "the kernel directly (Multiboot)", "pvh": "the kernel at its PVH entry"}
    _say(f"booting {'over the network' if netbooted else how.get(cfg.boot, cfg.boot)} ({image}), firmware {cfg.firmware}, "
         f"machine {cfg.machine} under {why}")
    if secure:
        _say(f"Secure Boot on; the firmware holds {keys}")
    if netbooted:
        _say(f"PXE from {runs.shown(cfg.tftp)}/ through {netbooted['loader']} ({cfg.bootfile}), MAC {netbooted['mac']}; "
             f"the tree's machines file gives it \"{cmdline}\"")
    elif cmdline:
        _say(f"kernel command line \"{cmdline}\"" + (" (handed to GRUB, which shows no menu)" if cfg.boot == "iso" else ""))
    _say(f"keeping the run in {runs.shown(run_dir)}/; time bound {timeout:.0f} s; Ctrl-C stops it")
    if cfg.boot == "iso" and accel == "kvm":
        _say("note: GRUB can take tens of seconds under nested KVM; `make run-direct` is the fast path")

    def start(echo, stop):
        try:
            if getattr(args, "migrate_at", None) is not None:
                return run_migrated(args, cfg, timeout, echo, stop, meta, run_dir)
            return qemu.run(cfg, timeout=timeout, echo=echo, stop=stop)
        except (RuntimeError, OSError) as e:
            missing = isinstance(e, FileNotFoundError) and e.filename == command[0]
            failure = (errors.MissingTool(f"{command[0]} not found: install the 'qemu-system-x86' package (or run `make deps`)")
                       if missing else errors.QemuFailed(f"{e} (run folder {runs.shown(run_dir)})"))
            meta.update(ended=_now(), verdict="QEMU failed", exit=failure.code, error=str(e))
            runs.write_metadata(run_dir, meta)
            raise failure from None

    return _stop_reached(meta, "migrate", _finish_run(args, run_dir, meta, start, hold=cfg.boot not in ("direct", "pvh")))


def _netboot_tree(args: argparse.Namespace, cfg: qemu.QemuConfig) -> dict:
    """--boot netboot: the tree, its bootfile for the firmware and loader,
    the MAC and the command line the tree gives that MAC. The default tree
    is written by `make netboot` when it is missing or holds an older
    kernel than the build's; a tree given with --tftp must exist (exit 66)."""
    from clockbench.fleet import netboot_tree as netboot
    loader = args.loader or NETBOOT_LOADERS[cfg.firmware][0]
    cfg.tftp = Path(args.tftp or paths.default(netboot.OUT))
    cfg.bootfile = netboot.BOOTFILES[f"{cfg.firmware}-{loader}"]
    cfg.mac = (args.mac or NETBOOT_DEFAULT_MAC).lower()
    script = cfg.tftp / netboot.BOOTFILES["bios-ipxe"]
    copy, built = cfg.tftp / netboot.KERNEL_NAME, Path(paths.default(paths.KERNEL))
    stale = copy.is_file() and built.is_file() and built.stat().st_mtime > copy.stat().st_mtime
    if not args.tftp and (stale or not all((cfg.tftp / f).is_file() for f in netboot.BOOTFILES.values())):
        _say(f"{'the netboot tree holds an older kernel' if stale else 'no netboot tree'} in {runs.shown(cfg.tftp)}/: "
             "`make netboot` writes it")
        r = subprocess.run(["make", "-C", str(paths.ROOT), "netboot"], stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise errors.NoInput(f"{cfg.tftp}: no netboot tree, and `make netboot` failed (status {r.returncode}): "
                                 "run `make netboot` and read its error")
    for f in (cfg.tftp / cfg.bootfile, script, cfg.tftp / netboot.KERNEL_NAME):
        if not f.is_file():
            raise errors.NoInput(f"{f}: no such file (`clockbench netboot --out {cfg.tftp}` writes the tree)")
    return {"tftp": str(cfg.tftp.resolve()), "bootfile": cfg.bootfile, "loader": "iPXE" if loader == "ipxe" else "GRUB",
            "mac": cfg.mac, "cmdline": netboot.tree_cmdline(script.read_text(), cfg.mac)}


def _which(program: str) -> str | None:
    found = shutil.which(program)
    return str(Path(found).resolve()) if found else None


def _metadata(args, run_dir: Path, cmdline: str, image: Path, timeout: float, vmm: dict) -> dict:
    return {
        "format": runs.FORMAT, "version": runs.FORMAT_VERSION, "started": _now(), "ended": None,
        "host": runs.host_info(), "vmm": vmm,
        "image": {"path": str(Path(image).resolve()), "build": paths.image_build() if Path(image).resolve().is_relative_to(
            paths.BUILD.resolve()) else None},
        "cmdline": cmdline, "profile": None, "timeout_s": timeout, "tool": paths.tool_version(),
        "verdict": None, "exit": None, "seconds": None, "log": str(run_dir / runs.LOG), "report": None,
    }


def _run_microvm(args: argparse.Namespace) -> int:
    """`clockbench run --vmm cloud-hypervisor|firecracker`: the PVH kernel
    under a microVM monitor (microvm.py), kept and reported as a QEMU run is."""
    cmdline = kernel_cmdline(args)
    cfg = _microvm_config(args, cmdline)
    timeout = args.timeout if args.timeout is not None else default_timeout(cmdline)
    run_dir = runs.new_run_dir(Path(args.runs_dir))
    cfg.workdir = run_dir  # Firecracker's configuration file is kept with the run
    try:
        command, config = microvm.command(cfg, run_dir)
    except (RuntimeError, OSError) as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise errors.QemuFailed(f"{args.vmm}: {e}") from None
    binary = str(Path(command[0]).resolve())
    meta = _metadata(args, run_dir, cmdline, cfg.kernel, timeout, {
        "name": args.vmm, "version": microvm.version(command[0]), "binary": binary, "command": command, "boot": "pvh",
        "smp": cfg.smp, "memory": f"{cfg.memory_mib}M", "config": config, "stderr_log": VMM_STDERR})
    runs.write_metadata(run_dir, meta)
    _say(f"booting the PVH kernel ({cfg.kernel}) under {meta['vmm']['version'] or args.vmm} ({binary}), "
         f"{cfg.smp} vCPU{'s' if cfg.smp > 1 else ''}, {cfg.memory_mib} MiB, KVM")
    if cmdline:
        _say(f"kernel command line \"{cmdline}\"")
    _say(f"keeping the run in {runs.shown(run_dir)}/ ({args.vmm}'s own log in {VMM_STDERR}); time bound {timeout:.0f} s; "
         "Ctrl-C stops it")
    err_stream = (run_dir / VMM_STDERR).open("w", errors="replace")

    def echo_err(text: str) -> None:
        err_stream.write(text)
        err_stream.flush()

    def start(echo, stop):
        try:
            if getattr(args, "snapshot_at", None) is not None:
                return run_snapshotted(args, cfg, timeout, echo, stop, echo_err, meta, run_dir)
            return microvm.run(cfg, timeout, echo=echo, stop=stop, echo_err=echo_err)
        except (RuntimeError, OSError) as e:
            failure = errors.QemuFailed(f"{args.vmm}: {e} (run folder {runs.shown(run_dir)})")
            meta.update(ended=_now(), verdict=f"{args.vmm} failed", exit=failure.code, error=str(e))
            runs.write_metadata(run_dir, meta)
            raise failure from None
        finally:
            err_stream.close()

    return _stop_reached(meta, "snapshot", _finish_run(args, run_dir, meta, start, hold=False))


def _stop_reached(meta: dict, opt: str, code: int) -> int:
    """A --migrate-at or --snapshot-at past the run's end: the run ended
    before its time came, so nothing was stopped. No run's end is known
    before it runs, so the value is refused here, once the run is over:
    one line, exit 64, so that a script never takes a run that was not
    stopped for one that was. The run itself is whole and kept."""
    field = "migration" if opt == "migrate" else "snapshot"
    stop = meta.get(field) or {}
    if stop and stop.get("stopped_s") is None and str(stop.get("error") or "").startswith("the run ended before"):
        print(f"clockbench: --{opt}-at {stop['at_s']:g}: past the run's end ({stop['error']}); nothing was "
              f"stopped. The run is kept in {runs.shown(Path(meta['log']).parent)}/; give a time within it", file=sys.stderr,
              flush=True)
        return errors.USAGE
    return code


def _finish_run(args, run_dir: Path, meta: dict, start, hold: bool) -> int:
    """Runs the machine (start(echo, stop) returns a qemu.RunResult or a
    microvm.VmmResult), shows and keeps its output, reports and stores it."""
    log = run_dir / runs.LOG
    name = meta["vmm"]["name"]
    what = "QEMU" if name == "qemu" else name
    term = progress.Terminal(show_records=args.records, hold_until_image=hold)
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
        result = start(echo, stop)
    finally:
        stream.close()
        term.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
    meta["host_tsc"] = host.result()

    log.write_text(result.output)
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        Path(args.log).write_text(result.output)
    held = term.held_text()
    if held:
        lines = held.split("\n")[-PRE_IMAGE_LINES:]
        _say("the image never started; the last lines before it (firmware, GRUB):")
        print("\n".join("  " + l for l in lines), flush=True)
    if result.stderr.strip() and name == "qemu":
        sys.stderr.write(result.stderr)
    elif result.stderr.strip():
        n = len(result.stderr.splitlines())
        _say(f"{name}'s own log: {n} line{'s' if n != 1 else ''} in {runs.shown(run_dir / VMM_STDERR)}")

    if result.never_started:
        said = result.stderr.strip().splitlines() or ["no message"]
        # QEMU's last line says why; a microVM monitor's first line with "error" (its last is "exiting")
        why = said[-1] if name == "qemu" else next((l for l in said if "error" in l.lower()), said[-1])
        failure = errors.QemuFailed(f"{what} exited {result.machine_exit} before the image started: {why.strip()}")
        meta.update(ended=_now(), verdict=f"{what} failed", exit=failure.code, error=str(failure))
        runs.write_metadata(run_dir, meta)
        raise failure
    meta.update(runs.from_log(result.output))
    recs = records.parse_log(result.output).records
    meta["host_tsc"]["guest"] = host_tsc.known_answers(recs, meta["host_tsc"])
    if meta.get("snapshot"):
        meta["snapshot"]["restore"] = snapshot.restore_account(meta["snapshot"], recs)
    if meta.get("migration") and meta["migration"].get("stopped_s") is not None:
        meta["migration"]["resume"] = vmrun.late_start_account(
            meta["migration"]["stopped_s"], meta["migration"]["stopped_uncertainty_s"], recs, "resumed on the destination",
            "the destination's vCPU starting")
    verdict = ("interrupted" if result.interrupted else "timed out" if result.timed_out else
               qemu.STATUS_NAMES[result.status] if result.status is not None else "no verdict")
    meta.update(ended=_now(), seconds=round(result.seconds, 3), exit=result.exit_code, verdict=verdict,
                stderr=result.stderr[-4000:] or None)
    if name == "qemu":
        meta["qemu_exit"] = result.qemu_exit
    else:
        meta.update(vmm_exit=result.vmm_exit, status_source=result.status_source, powered_off=result.powered_off,
                    notes=result.notes)
    link_dir = Path(args.runs_dir).parent
    latest = None if args.log and Path(args.log).absolute() == (link_dir / runs.LOG).absolute() else \
        runs.link_latest(link_dir, run_dir)

    print()
    if result.interrupted:
        runs.write_metadata(run_dir, meta)
        _store(args, meta, log, result.output)
        _say(f"interrupted after {result.seconds:.1f} s: {what} stopped. The partial log ({len(result.output)} "
             f"characters) is in {runs.shown(log)}")
        return result.exit_code
    first, *notes = result.describe().split("\n")
    _say("\n".join([f"{first} after {result.seconds:.1f} s"] + notes))
    if meta.get("migration"):
        _say(meta["migration"]["described"])
        if meta["migration"].get("resume"):
            _say(meta["migration"]["resume"]["described"])
    if meta.get("snapshot"):
        _say(meta["snapshot"]["described"])
        if meta["snapshot"].get("restore"):
            _say(meta["snapshot"]["restore"]["described"])
    _say(host_tsc.describe_against(meta["host_tsc"]))

    report_dir = Path(args.log).with_suffix("") if args.log else run_dir
    if not args.no_report and result.output:
        from clockbench.report import report

        try:
            made = report.main(argparse.Namespace(log=str(args.log or log), out=str(report_dir), no_html=False, junit=None,
                                                  tap=None, markdown=None))
            if (report_dir / "report.html").is_file():
                meta["report"] = str(report_dir / "report.html")
            if isinstance(made, int) and made >= 64:
                _say(f"the report could not be written (exit status {made})")
        except Exception as e:  # noqa: BLE001 - the run's status stands whatever the report does
            _say(f"no report: {e}")
    if ci_formats.requested(args):
        from clockbench.records import results

        try:
            ci_formats.write_requested(args, results.load_path(str(log)), say=lambda s: print(s, flush=True))
        except errors.ToolError as e:
            _say(f"no CI formats: {e}")
    runs.write_metadata(run_dir, meta)
    kept = [runs.LOG, runs.METADATA] + (["report.html", "results.json"] if meta["report"] and report_dir == run_dir else [])
    kept += [f for f in (VMM_STDERR, microvm.module(name).CONFIG if name == "firecracker" else None)
             if f and name != "qemu" and (run_dir / f).is_file()]
    _say(f"run kept in {runs.shown(run_dir)}/: {', '.join(kept)}")
    if meta["report"] and report_dir != run_dir:
        _say(f"report in {runs.shown(report_dir)}/report.html")
    if latest:
        stored = getattr(args, "store", "none") != "none"
        where = "" if not stored or Path(args.store).resolve() == Path(store.DEFAULT).resolve() else f" --store {runs.shown(Path(args.store))}"
        _say(f"{runs.shown(latest)} is a link to its log" +
             (f"; `{paths.tool_command()} runs{where}` lists the stored runs" if stored else ""))
    _store(args, meta, log, result.output)
    return result.exit_code


# --- --migrate-at: the VM moved to a new QEMU mid-run (qemu.run_migrated) ---

# The image's phases, in run order (experiments/experiments.c): what
# --migrate-after names.
PHASES = ("calibrate", "cpu_speed", "hpet_comparator", "read_cost", "sequential", "timers", "cpus", "drift", "rtc", "stolen")


def add_migration_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--migrate-at", type=float, metavar="SECONDS",
                   help="migrate the VM to a new QEMU this many seconds after the serial port's first line: stopped (QMP "
                   "stop), its state written to a file, resumed by a second QEMU started with -incoming; the log goes on "
                   "from it, the status is its. From 0 to below the run's time bound")
    r.add_argument("--migrate-after", metavar="PHASE",
                   help="with --migrate-at: count its seconds from the start of this phase of the run (its first "
                   f"progress record: {', '.join(PHASES)}) instead of the serial port's first line")
    r.add_argument("--migrate-gap", type=float, metavar="SECONDS", default=qemu.MIGRATE_GAP_DEFAULT_S,
                   help="with --migrate-at: the least time the VM stands still between the two QEMUs (longer when "
                   "moving the state takes longer; what it was is measured) (default: %(default)s)")


def _check_stop_arguments(args: argparse.Namespace, opt: str, what: str, gap_default: float) -> bool:
    """--OPT-at, --OPT-after and --OPT-gap (opt "migrate" or "snapshot"),
    checked alike: one line and exit 64 for a value out of range, a phase
    the image has not, or an -after or -gap without its -at. True when a
    stop was asked for."""
    at = getattr(args, f"{opt}_at", None)
    gap = getattr(args, f"{opt}_gap", gap_default)
    after = getattr(args, f"{opt}_after", None)
    if at is None:
        if gap != gap_default:
            raise _usage(f"--{opt}-gap", f"{gap:g}", f"a gap is for a {what}: give --{opt}-at too")
        if after:
            raise _usage(f"--{opt}-after", after, f"a phase is for a {what}: give --{opt}-at too")
        return False
    if after is not None and after not in PHASES:
        raise _usage(f"--{opt}-after", after, f"the phase must be one of {', '.join(PHASES)}")
    bound = args.timeout if args.timeout is not None else default_timeout(kernel_cmdline(args))
    if not (math.isfinite(at) and 0 <= at < bound):
        raise _usage(f"--{opt}-at", f"{at:g}", f"the {what}'s time must be from 0 to below the run's time bound "
                     f"({bound:g} s: --timeout, or what the profile and duration ask for), in seconds after the serial "
                     "port's first line")
    if not (math.isfinite(gap) and 0 <= gap <= 3600):
        raise _usage(f"--{opt}-gap", f"{gap:g}", "the gap must be from 0 to 3600 seconds")
    return True


def check_migration_arguments(args: argparse.Namespace) -> None:
    if _check_stop_arguments(args, "migrate", "migration", qemu.MIGRATE_GAP_DEFAULT_S):
        qemu.qmp_module()  # QMP's library, before anything starts: a run that cannot migrate is no run (exit 69)


def run_migrated(args, cfg: qemu.QemuConfig, timeout: float, echo, stop, meta: dict, run_dir: Path) -> qemu.RunResult:
    after = getattr(args, "migrate_after", None)
    migration = qemu.Migration(at_s=args.migrate_at, gap_s=args.migrate_gap, state_dir=run_dir, after=after)
    origin = f"its {after} phase began" if after else "the serial port's first line"
    _say(f"migrating the VM to a new QEMU {migration.at_s:g} s after {origin}, stopped at least {migration.gap_s:g} s")
    try:
        result, moved = qemu.run_migrated(cfg, migration, timeout=timeout, echo=echo, stop=stop)
    finally:
        (run_dir / "vmstate").unlink(missing_ok=True)  # the VM's memory: not kept
    meta["migration"] = {**moved.to_json(), "described": moved.describe()}
    return result


# --- --snapshot-at: a microVM snapshotted and restored mid-run (snapshot.py) ---

def add_snapshot_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--snapshot-at", type=float, metavar="SECONDS",
                   help="with --vmm firecracker or cloud-hypervisor: this many seconds after the serial port's first line, "
                   "pause the VM, snapshot it into the run's folder, kill the monitor, and restore the snapshot in a new "
                   "one that resumes it; the log goes on from it, the status is its. From 0 to below the run's time bound")
    r.add_argument("--snapshot-after", metavar="PHASE",
                   help="with --snapshot-at: count its seconds from the start of this phase of the run (its first "
                   f"progress record: {', '.join(PHASES)}) instead of the serial port's first line")
    r.add_argument("--snapshot-gap", type=float, metavar="SECONDS", default=snapshot.SNAPSHOT_GAP_DEFAULT_S,
                   help="with --snapshot-at: the least time from the pause's answer to the new monitor's start (the VM "
                   "stands still longer: writing and loading the snapshot; what it was is measured) (default: %(default)s)")


def check_snapshot_arguments(args: argparse.Namespace) -> None:
    _check_stop_arguments(args, "snapshot", "snapshot", snapshot.SNAPSHOT_GAP_DEFAULT_S)


def run_snapshotted(args, cfg: microvm.VmmConfig, timeout: float, echo, stop, echo_err, meta: dict,
                    run_dir: Path) -> microvm.VmmResult:
    after = getattr(args, "snapshot_after", None)
    snap = snapshot.Snapshot(at_s=args.snapshot_at, gap_s=args.snapshot_gap, state_dir=run_dir, after=after)
    origin = f"its {after} phase began" if after else "the serial port's first line"
    _say(f"snapshotting the VM {snap.at_s:g} s after {origin} and restoring it in a new {args.vmm}, "
         f"stopped at least {snap.gap_s:g} s")
    result, done = snapshot.run_snapshotted(cfg, snap, timeout, echo=echo, stop=stop, echo_err=echo_err)
    meta["snapshot"] = {**done.to_json(), "described": done.describe()}
    return result


def _store(args, meta: dict, log: Path, output: str) -> None:
    """The store hook (store.py): the run's log and what the metadata knows."""
    where = getattr(args, "store", None)
    if not where or where == "none":
        return
    from clockbench.cli import storecli

    store.record(where, output, args.name or storecli.qemu_machine(meta), "run", storecli.meta_of_run(meta, log),
                 say=lambda s: _say(s))
