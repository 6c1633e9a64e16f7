"""`clockbench run`'s plan: the options made into one RunPlan (the machine,
QEMU or a microVM monitor, configured for this host; the image; the
command line; the time bound; the stop to make), checked against what the
host has before anything is left behind, and the run's record begun in a
new run folder."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from clockbench import errors, paths
from clockbench.cli.run_args import NETBOOT_DEFAULT_MAC, NETBOOT_LOADERS, memory_mib
from clockbench.machines import microvm, qemu, snapshot
from clockbench.release import secureboot
from clockbench.runs import record, runs
from clockbench.runs.plan import RunPlan, default_timeout, kernel_cmdline
from clockbench.runs.record import RunRecord
from clockbench.cli.run_machine import VMM_STDERR

def say(text: str) -> None:
    print(f"clockbench: {text}", flush=True)


def make(args: argparse.Namespace) -> tuple[RunPlan, RunRecord]:
    """The run's plan and its record, begun (a microVM monitor's with --vmm)."""
    return _microvm_plan(args) if getattr(args, "vmm", "qemu") != "qemu" else _qemu_plan(args)


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


def _qemu_plan(args: argparse.Namespace) -> tuple[RunPlan, RunRecord]:
    """A QEMU run's plan, checked against what the host has, and its record
    begun in a new run folder (nothing is left behind when it cannot start)."""
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
    rec = record.begin(run_dir, cmdline, image, timeout, {"name": "qemu", "version": version, "binary": _which(command[0])})
    rec.meta["qemu"] = {"version": version, "command": command, "accel": accel, "accel_why": why, "machine": cfg.machine,
                        "firmware": cfg.firmware, "boot": cfg.boot, "cpu": command[command.index("-cpu") + 1],
                        "smp": cfg.smp, "memory": cfg.memory}
    if netbooted:
        rec.meta["netboot"] = {k: v for k, v in netbooted.items() if k != "cmdline"}
    rec.save()
    how = {"iso": "the ISO", "direct": "the kernel directly (Multiboot)", "pvh": "the kernel at its PVH entry"}
    say(f"booting {'over the network' if netbooted else how.get(cfg.boot, cfg.boot)} ({image}), firmware {cfg.firmware}, "
         f"machine {cfg.machine} under {why}")
    if secure:
        say(f"Secure Boot on; the firmware holds {keys}")
    if netbooted:
        say(f"PXE from {runs.shown(cfg.tftp)}/ through {netbooted['loader']} ({cfg.bootfile}), MAC {netbooted['mac']}; "
             f"the tree's machines file gives it \"{cmdline}\"")
    elif cmdline:
        say(f"kernel command line \"{cmdline}\"" + (" (handed to GRUB, which shows no menu)" if cfg.boot == "iso" else ""))
    say(f"keeping the run in {runs.shown(run_dir)}/; time bound {timeout:.0f} s; Ctrl-C stops it")
    if cfg.boot == "iso" and accel == "kvm":
        say("note: GRUB can take tens of seconds under nested KVM; `make run-direct` is the fast path")
    stop = None
    if getattr(args, "migrate_at", None) is not None:
        stop = qemu.Migration(at_s=args.migrate_at, gap_s=args.migrate_gap, state_dir=run_dir,
                              after=getattr(args, "migrate_after", None))
    return RunPlan(machine=cfg, image=image, cmdline=cmdline, timeout=timeout, stop=stop,
                        hold=cfg.boot not in ("direct", "pvh")), rec


def _microvm_plan(args: argparse.Namespace) -> tuple[RunPlan, RunRecord]:
    """`clockbench run --vmm cloud-hypervisor|firecracker`: the PVH kernel
    under a microVM monitor (microvm.py), planned and kept as a QEMU run is."""
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
    rec = record.begin(run_dir, cmdline, cfg.kernel, timeout, {
        "name": args.vmm, "version": microvm.version(command[0]), "binary": binary, "command": command, "boot": "pvh",
        "smp": cfg.smp, "memory": f"{cfg.memory_mib}M", "config": config, "stderr_log": VMM_STDERR})
    rec.save()
    say(f"booting the PVH kernel ({cfg.kernel}) under {rec.meta['vmm']['version'] or args.vmm} ({binary}), "
         f"{cfg.smp} vCPU{'s' if cfg.smp > 1 else ''}, {cfg.memory_mib} MiB, KVM")
    if cmdline:
        say(f"kernel command line \"{cmdline}\"")
    say(f"keeping the run in {runs.shown(run_dir)}/ ({args.vmm}'s own log in {VMM_STDERR}); time bound {timeout:.0f} s; "
         "Ctrl-C stops it")
    stop = None
    if getattr(args, "snapshot_at", None) is not None:
        stop = snapshot.Snapshot(at_s=args.snapshot_at, gap_s=args.snapshot_gap, state_dir=run_dir,
                                 after=getattr(args, "snapshot_after", None))
    return RunPlan(machine=cfg, image=cfg.kernel, cmdline=cmdline, timeout=timeout, stop=stop), rec


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
        say(f"{'the netboot tree holds an older kernel' if stale else 'no netboot tree'} in {runs.shown(cfg.tftp)}/: "
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
