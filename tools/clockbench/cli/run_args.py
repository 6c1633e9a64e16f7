"""`clockbench run`'s options (and os-vm's, which shares the machine's):
every value checked before anything starts. One place for every range: a
value outside it is a usage error (exit 64), one line naming the option and
what it allows, and no machine is started."""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path

from clockbench import errors
from clockbench.machines import microvm, qemu, snapshot
from clockbench.runs.plan import (DURATION_MAX_S, DURATION_MIN_S, PROFILE_SECONDS, PROFILES, check_kernel_words,
                                  default_timeout, kernel_cmdline)

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
VMMS = ("qemu",) + microvm.VMM_NAMES
# Firecracker's limit on vCPUs (MAX_SUPPORTED_VCPUS, src/vmm/src/vmm_config/machine_config.rs).
VMM_SMP_MAX = {"firecracker": 32}
NETBOOT_DEFAULT_MAC = "52:54:00:12:34:56"  # QEMU's NIC when no mac= is given
NETBOOT_LOADERS = {"bios": ("ipxe", "grub"), "uefi": ("grub",)}
# The image's phases, in run order (experiments/experiments.c): what
# --migrate-after names.
PHASES = ("calibrate", "cpu_speed", "hpet_comparator", "read_cost", "sequential", "timers", "cpus", "drift", "rtc", "stolen")


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


# The run's two stops, --OPT-at, --OPT-after and --OPT-gap each: what the
# stop is called in a message, its gap's default, and what --OPT-at and
# --OPT-gap do (--OPT-after is the same for both).
STOPS = {
    "migrate": {
        "what": "migration",
        "gap_default": qemu.MIGRATE_GAP_DEFAULT_S,
        "at_help": "migrate the VM to a new QEMU this many seconds after the serial port's first line: stopped (QMP "
                   "stop), its state written to a file, resumed by a second QEMU started with -incoming; the log goes on "
                   "from it, the status is its. From 0 to below the run's time bound",
        "gap_help": "the least time the VM stands still between the two QEMUs (longer when moving the state takes longer; "
                    "what it was is measured)",
    },
    "snapshot": {
        "what": "snapshot",
        "gap_default": snapshot.SNAPSHOT_GAP_DEFAULT_S,
        "at_help": "with --vmm firecracker or cloud-hypervisor: this many seconds after the serial port's first line, "
                   "pause the VM, snapshot it into the run's folder, kill the monitor, and restore the snapshot in a new "
                   "one that resumes it; the log goes on from it, the status is its. From 0 to below the run's time bound",
        "gap_help": "the least time from the pause's answer to the new monitor's start (the VM stands still longer: "
                    "writing and loading the snapshot; what it was is measured)",
    },
}


def add_stop_arguments(r: argparse.ArgumentParser, opt: str) -> None:
    """--OPT-at, --OPT-after and --OPT-gap for one of STOPS."""
    stop = STOPS[opt]
    r.add_argument(f"--{opt}-at", type=float, metavar="SECONDS", help=stop["at_help"])
    r.add_argument(f"--{opt}-after", metavar="PHASE",
                   help=f"with --{opt}-at: count its seconds from the start of this phase of the run (its first "
                   f"progress record: {', '.join(PHASES)}) instead of the serial port's first line")
    r.add_argument(f"--{opt}-gap", type=float, metavar="SECONDS", default=stop["gap_default"],
                   help=f"with --{opt}-at: {stop['gap_help']} (default: %(default)s)")


def _check_stop_arguments(args: argparse.Namespace, opt: str) -> bool:
    """--OPT-at, --OPT-after and --OPT-gap (opt one of STOPS), checked
    alike: one line and exit 64 for a value out of range, a phase the image
    has not, or an -after or -gap without its -at. True when a stop was
    asked for."""
    what, gap_default = STOPS[opt]["what"], STOPS[opt]["gap_default"]
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
    if _check_stop_arguments(args, "migrate"):
        qemu.qmp_module()  # QMP's library, before anything starts: a run that cannot migrate is no run (exit 69)


def check_snapshot_arguments(args: argparse.Namespace) -> None:
    _check_stop_arguments(args, "snapshot")
