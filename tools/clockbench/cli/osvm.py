"""`clockbench os-vm`: the clocks as a Linux program sees them, in the same
QEMU machine the image measures. Boots Debian's kernel (linux-image-amd64,
fetched with apt and cached under build/linux/) with an initramfs whose
/init is build/os/clockbench-os (initramfs.py), shows the program's output
live, keeps the serial log, and exits with the program's status, which it
reports through isa-debug-exit as the image does (qemu.py). The languages'
probes and runtimes go into the initramfs too (runtimes.py), so that the
program measures them in the VM on each clocksource; --no-lang leaves them
out, --lang picks some. With --ssh the guest is a host that stays up
instead, reached over ssh through 127.0.0.1:PORT (machines/guest.py): its
/init starts an sshd and waits, and a clockbench-os bundle copied in (by
Ansible, say) measures it; --append gives its kernel clocksource=hpet."""

from __future__ import annotations

import argparse
import math
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from clockbench import errors, paths
from clockbench.machines import guest, initramfs, qemu, runtimes
from clockbench.report import progress
from clockbench.records import records
from clockbench.cli import run_args

LINUX_DIR = paths.BUILD / "linux"
PROGRAM = paths.BUILD / "os" / "clockbench-os"
LOG = paths.BUILD / "os-vm.log"
INITRAMFS_NAME = "initramfs-os.cpio"
LANG_DIR = paths.BUILD / "lang"
RUNTIME_CACHE = paths.BUILD / "os-vm"  # the jlink runtime, the runtimes' file lists
# The runtimes fill the initramfs (Node.js alone is about 100 MB, unpacked
# into RAM by the kernel): 256 MiB is not enough for them and the JVM's heap.
DEFAULT_MEMORY = "1G"
META_PACKAGE = "linux-image-amd64"
# The plain, signed image package the meta package depends on: not
# -unsigned, -dbg or a -rt/-cloud flavour.
VERSIONED = re.compile(r"^linux-image-(\d[\w.+~-]*-amd64)$")
# quiet and loglevel=3: the kernel's own lines stay out of the report unless
# they are errors; panic=-1 reboots at once on a panic, which -no-reboot
# turns into QEMU exiting, so a dead init never waits out the time bound.
CMDLINE = "console=ttyS0,115200 quiet loglevel=3 panic=-1"
# Linux under TCG reaches init in about 5 s here; under nested KVM it can
# take many minutes (every trapped instruction is emulated).
DEFAULT_TIMEOUT_S = 300
# With the languages: each probe serves its commands in one runtime (at most
# three starts per language and clocksource), and all eight languages on
# three clocksources take about 3 minutes under TCG; a KVM that emulates
# every instruction (PLATFORM.md) is far slower.
DEFAULT_LANG_TIMEOUT_S = 1800
LAST_LINES = 8
# --ssh: a guest stays up until it is powered off, Ctrl-C, SIGTERM or this bound
DEFAULT_GUEST_TIMEOUT_S = 3600
GUEST_LOG = "os-vm-guest-{port}.log"


def _say(text: str) -> None:
    print(f"clockbench os-vm: {text}", flush=True)


# --- the kernel ------------------------------------------------------------

def _tool(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs an apt or dpkg command; a missing program is errors.MissingTool."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise errors.MissingTool(f"{cmd[0]} not found: os-vm fetches Debian's kernel with apt-get and dpkg-deb "
                                 f"(a Debian or Ubuntu host); elsewhere give --kernel PATH, a bzImage") from None


def _last_line(text: str) -> str:
    lines = [l.strip() for l in text.strip().split("\n") if l.strip() and "_apt" not in l]  # apt's sandbox warning is harmless
    return lines[-1] if lines else "no message"


def cached_kernels(linux_dir: Path) -> list[Path]:
    """The kernels fetched before, newest first."""
    found = [p for p in linux_dir.glob("vmlinuz-*") if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def package_note(vmlinuz: Path) -> str:
    """The Debian package and version a cached kernel came from."""
    try:
        return (vmlinuz.parent / f"package-{vmlinuz.name[len('vmlinuz-'):]}.txt").read_text().strip()
    except OSError:
        return "package unknown"


def resolve_package() -> str:
    """The versioned package linux-image-amd64 depends on, from apt's lists
    (no network)."""
    r = _tool(["apt-cache", "depends", META_PACKAGE])
    for line in r.stdout.split("\n"):
        m = re.match(r"\s*\|?Depends:\s*(\S+)", line)
        if m and VERSIONED.match(m.group(1)):
            return m.group(1)
    raise errors.NoInput(f"apt knows no {META_PACKAGE} package with a linux-image-<version>-amd64 dependency "
                         f"({_last_line(r.stderr or r.stdout)}): run `apt-get update` as root, or give --kernel PATH")


def fetch_kernel(linux_dir: Path) -> tuple[Path, str]:
    """Debian's kernel, downloaded once and kept: (vmlinuz, description).
    A kernel fetched before is used with no apt call at all, so runs stay
    comparable and need no network; delete build/linux/ for a newer one."""
    cached = cached_kernels(linux_dir)
    if cached:
        return cached[0], f"{package_note(cached[0])}, cached"
    package = resolve_package()
    linux_dir.mkdir(parents=True, exist_ok=True)
    _say(f"fetching Debian's kernel, package {package} (about 70 MB), into {linux_dir}/")
    for old in linux_dir.glob(f"{package}_*.deb"):  # a download cut short
        old.unlink()
    r = _tool(["apt-get", "download", package], cwd=linux_dir)
    debs = list(linux_dir.glob(f"{package}_*.deb"))
    if r.returncode != 0 or len(debs) != 1:
        raise errors.NoInput(f"`apt-get download {package}` failed ({_last_line(r.stderr)}): check the network and "
                             f"apt's sources (`apt-get update`), or give --kernel PATH")
    deb, tmp = debs[0], linux_dir / f".extract-{package}"
    try:
        version = _tool(["dpkg-deb", "-f", str(deb), "Version"]).stdout.strip() or "version unknown"  # MissingTool first
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        dpkg = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        tar = subprocess.run(["tar", "-x", "--wildcards", "-C", str(tmp), "./boot/vmlinuz-*"], stdin=dpkg.stdout,
                             capture_output=True, text=True)
        dpkg.stdout.close()
        dpkg_err = dpkg.stderr.read().decode(errors="replace")
        dpkg.wait()
        found = list((tmp / "boot").glob("vmlinuz-*"))
        if dpkg.returncode != 0 or tar.returncode != 0 or len(found) != 1:
            raise errors.BadInput(f"{deb.name} holds no single ./boot/vmlinuz-* ({_last_line(dpkg_err + tar.stderr)}); "
                                  f"try again, or give --kernel PATH")
        vmlinuz = linux_dir / found[0].name
        (linux_dir / f"package-{vmlinuz.name[len('vmlinuz-'):]}.txt").write_text(f"Debian {package} {version}\n")
        try:  # the NIC's module and its kin, for os-vm --ssh's guests: from the same package, while it is here
            guest.keep_modules(deb, vmlinuz.name[len("vmlinuz-"):], linux_dir)
        except errors.ToolError:
            pass  # a guest fetches them itself when it needs them, and says why it cannot
        found[0].replace(vmlinuz)  # last: a kernel in the cache is a whole one
        vmlinuz.touch()  # its mtime says when it was fetched (cached_kernels), not the package's build date
    finally:
        deb.unlink(missing_ok=True)  # 70 MB, of which we keep 8
        shutil.rmtree(tmp, ignore_errors=True)
    return vmlinuz, f"Debian {package} {version}, fetched now"


def check_bzimage(path: Path) -> None:
    """A Linux boot image has "HdrS" at 0x202 (the x86 boot protocol);
    anything else would only make QEMU fail obscurely."""
    if not path.is_file():
        raise errors.NoInput(f"{path}: no such kernel file (give a Linux bzImage, or leave --kernel out to use Debian's)")
    with path.open("rb") as f:
        f.seek(0x202)
        if f.read(4) != b"HdrS":
            raise errors.BadInput(f"{path} is not a Linux bzImage (no 'HdrS' boot header at 0x202)")


def check_program(path: Path) -> None:
    """The program must be a static x86-64 ELF: the initramfs has no
    dynamic loader or libraries, and init that cannot run is a kernel panic."""
    if not path.is_file():
        raise errors.NoInput(f"{path}: no such program (`make os` builds it)")
    head = path.read_bytes()[:4096]
    if head[:4] != b"\x7fELF" or head[4] != 2:
        raise errors.BadInput(f"{path} is not a 64-bit ELF program")
    phoff, phentsize, phnum = int.from_bytes(head[32:40], "little"), int.from_bytes(head[54:56], "little"), \
        int.from_bytes(head[56:58], "little")
    for i in range(phnum):
        at = phoff + i * phentsize
        if int.from_bytes(head[at:at + 4], "little") == 3:  # PT_INTERP: it wants a dynamic loader
            raise errors.BadInput(f"{path} is dynamically linked; /init must be static (link it with -static)")


def check_program_args(program: Path, words: list[str]) -> None:
    """The program's own options, checked on this machine before the boot:
    as /init a bad one ends the program, and with it init, in a kernel
    panic. clockbench-os reads its options in order, so with --help after
    not. A program that cannot run here is left for the VM to judge, and so
    is any other program (--program): its --help may do anything."""
    if b"clockbench-os" not in program.read_bytes()[:1 << 22] and program.name != "clockbench-os":
        return
    if "--help" in words or "-h" in words:
        raise errors.UsageError(f"--args: --help is for this terminal: run {program} --help")
    try:
        r = subprocess.run([str(program), *words, "--help"], capture_output=True, text=True, timeout=10,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return
    if r.returncode == errors.USAGE:
        said = (r.stderr.strip().splitlines() or ["a bad option"])[0]
        raise errors.UsageError(f"--args: {said.removeprefix(program.name + ': ')} ({program} --help)")


# --- the command line --------------------------------------------------------

def kernel_cmdline(program_args: str, append: str = "") -> str:
    """The kernel's command line: CMDLINE, then --append's words for the
    kernel (clocksource=hpet), then the words after `--`, which reach init as
    its arguments. The kernel reads double quotes as grouping and has no escapes."""
    base = check_append(append)
    words = shlex.split(program_args)
    bad = [w for w in words if '"' in w or "\n" in w]
    if bad:
        raise errors.UsageError(f"--args: the kernel's command line cannot carry a double quote or a newline: {bad[0]!r}")
    quoted = [f'"{w}"' if not w or any(c.isspace() for c in w) else w for w in words]
    return " ".join([base, "--", *quoted]) if quoted else base


def check_append(append: str) -> str:
    """CMDLINE with --append's words: for the kernel, so no `--` (after it
    the words are init's) and nothing the kernel would read as grouping."""
    words = append.split()
    if "--" in words or any('"' in w for w in words):
        raise errors.UsageError(f"--append {append!r}: words for the kernel, with no '--' and no double quote")
    return " ".join([CMDLINE, *words])


def check_arguments(args: argparse.Namespace) -> None:
    """The machine's options, as `run` checks them, the time bound and the
    languages."""
    run_args.check_machine_arguments(args)
    run_args.check_timeout(args)
    languages(args)
    check_append(args.append)
    if args.ssh is None:
        for given, what in ((args.authorized_key, "--authorized-key"), (args.hostname, "--hostname")):
            if given is not None:
                raise errors.UsageError(f"{what} is for a guest reached over ssh: give --ssh 127.0.0.1:PORT too")
        return
    args.ssh_port = guest.parse_ssh(args.ssh)
    if args.authorized_key is None:
        raise errors.UsageError("--ssh: give --authorized-key FILE.pub, the key root logs in with (there is no password)")
    for given, what in ((args.args, "--args"), (args.records, "--records")):
        if given:
            raise errors.UsageError(f"{what} is for clockbench-os as /init; with --ssh the guest's /init is a shell "
                                    f"that starts sshd: run clockbench-os there over ssh")
    if args.hostname is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,62}", args.hostname):
        raise errors.UsageError(f"--hostname {args.hostname!r}: letters, digits, '-' and '.', at most 63")
    if not (math.isfinite(args.boot_timeout) and args.boot_timeout > 0):
        raise errors.UsageError(f"--boot-timeout {args.boot_timeout:g}: a number of seconds above 0")


def languages(args: argparse.Namespace) -> list[str]:
    """The languages to put into the VM, from --no-lang and --lang."""
    if args.no_lang:
        if args.lang is not None:
            raise errors.UsageError("--no-lang and --lang: give one or the other")
        return []
    if args.lang is None:
        return list(runtimes.LANGUAGES)
    picked = [w.strip() for w in args.lang.split(",")]
    bad = [w for w in picked if w not in runtimes.LANGUAGES]
    if bad or not picked:
        raise errors.UsageError(f"--lang: unknown language '{bad[0] if bad else ''}' (valid: {','.join(runtimes.LANGUAGES)})")
    return list(dict.fromkeys(picked))


# The VM is ours, booted for this one run: there clockbench-os measures every
# clocksource the kernel offers (its lab mode, which on a live host would
# switch the clocksource under every other process there), unless --args
# says --current-only.
VM_CLOCKSOURCES = "--all-clocksources"


def program_args(args: argparse.Namespace) -> str:
    """--args, after the languages' options that clockbench-os takes and
    --all-clocksources (unless --args chooses --current-only or says it)."""
    said = set(shlex.split(args.args))
    words = ["--no-lang"] if args.no_lang else [f"--lang {','.join(languages(args))}"] if args.lang is not None else []
    if not said & {"--current-only", VM_CLOCKSOURCES}:
        words.append(VM_CLOCKSOURCES)
    return " ".join([*words, args.args]).strip()


def add_parser(sub) -> argparse.ArgumentParser:
    o = sub.add_parser("os-vm", help="boot Debian's Linux in the same QEMU machine, with build/os/clockbench-os as init",
                       description="Boots Debian's Linux kernel (linux-image-amd64, fetched with apt once and kept in "
                       f"{paths.default(LINUX_DIR)}/) in the QEMU machine `clockbench run` uses, with an initramfs whose "
                       "/init is the clockbench-os program; shows its output, keeps the serial log and exits with the "
                       "program's status.")
    run_args.add_machine_arguments(o, firmware_help="SeaBIOS, OVMF (UEFI) or qboot; QEMU loads the kernel itself with each")
    o.add_argument("--kernel", help="a Linux bzImage to boot instead of Debian's (default: Debian's linux-image-amd64, "
                   f"cached in {paths.default(LINUX_DIR)}/)")
    o.add_argument("--program", default=paths.default(PROGRAM), help="the static program to run as /init (default: %(default)s)")
    o.add_argument("--args", default="", metavar="ARGS", help='arguments for the program (`build/os/clockbench-os --help`), as one string: --args "--quick --rt" (one word starting with a dash: --args=--quick)')
    o.add_argument("--log", default=None, help=f"write the serial log here (default: {paths.default(LOG)}; with --ssh, "
                   f"{paths.default(paths.BUILD)}/{GUEST_LOG})")
    o.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"stop after this many seconds, above 0 (default: {DEFAULT_LANG_TIMEOUT_S} with the languages, "
                   f"{DEFAULT_TIMEOUT_S} without, {DEFAULT_GUEST_TIMEOUT_S} for a guest (--ssh), which is then powered off; "
                   f"Linux under TCG reaches init in about 5 s, under nested KVM it can take minutes)")
    o.add_argument("--records", action="store_true", help="show the machine records (@cb lines) on the terminal too; "
                   "the log keeps them either way")
    o.add_argument("--qemu-arg", action="append", metavar="ARG", help="an extra QEMU argument (repeatable)")
    o.add_argument("--no-lang", action="store_true", help="leave the languages' clocks out (measured by default: the probes "
                   "and their runtimes go into the initramfs)")
    o.add_argument("--lang", metavar="LIST", help=f"only these languages, comma-separated: {','.join(runtimes.LANGUAGES)}")
    o.add_argument("--lang-dir", default=paths.default(LANG_DIR), help="the probes, as `make lang` builds them (default: %(default)s)")
    o.add_argument("--append", default="", metavar="WORDS", help='more words for the kernel\'s command line, as one '
                   'string: --append "clocksource=hpet" (the clocksource Linux boots on: tsc, hpet or acpi_pm)')
    g = o.add_argument_group("a guest reached over ssh, that stays up (machines/guest.py)")
    g.add_argument("--ssh", metavar="127.0.0.1:PORT", help="boot a Linux host instead of a run: /init starts an sshd "
                   "(dropbear, root by key only) that QEMU forwards from 127.0.0.1:PORT here; the guest has busybox, "
                   "Python's standard library (for Ansible) and the languages' runtimes, and stays up until it is "
                   "powered off (`poweroff` in it), Ctrl-C, SIGTERM or --timeout")
    g.add_argument("--authorized-key", metavar="FILE.pub", help="with --ssh: the public keys root logs in with (a file of one or more)")
    g.add_argument("--hostname", help="with --ssh: the guest's host name (default: os-vm-PORT)")
    g.add_argument("--boot-timeout", type=float, default=guest.BOOT_BOUND_S, metavar="SECONDS",
                   help="with --ssh: how long the guest may take from QEMU's start to its sshd's answer (default: "
                   "%(default)g; about 15 s under TCG here)")
    o.set_defaults(func=cmd_os_vm, check=check_arguments, memory=DEFAULT_MEMORY)
    return o


# --- the run -----------------------------------------------------------------

KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\] ")  # printk's timestamp; with `quiet` the kernel prints only errors


def explain_no_status(output: str, timed_out: bool) -> str:
    """Why a run ended with no status from the program, from its serial output."""
    text = records.clean(output)
    panic = re.search(r"Kernel panic - not syncing: .*", text)
    if panic:
        return f"the kernel panicked: {panic.group(0).strip()}"
    lines = [l for l in text.split("\n") if l.strip()]
    if not lines:
        return "nothing came on the serial port: the kernel never started, or never reached its console"
    if all(KERNEL_LINE.match(l) for l in lines):
        return "only the kernel printed: Linux never reached /init, or the program printed nothing"
    if timed_out:
        return "the program started but did not end in time"
    return "the program started but ended without writing its status to port 0xf4"


def last_lines(output: str, n: int = LAST_LINES) -> str:
    lines = [l for l in records.clean(output).split("\n") if l.strip()]
    return "\n".join("  " + l for l in lines[-n:]) if lines else "  (none)"


HOSTLIBC = "clockbench-os-libc"  # beside clockbench-os in build/os/ and in the bundle


def cmd_os_vm(args: argparse.Namespace) -> int:
    if args.ssh is not None:
        return cmd_guest(args)
    if args.log is None:
        args.log = paths.default(LOG)
    if args.timeout is None:
        args.timeout = DEFAULT_LANG_TIMEOUT_S if languages(args) else DEFAULT_TIMEOUT_S
    cmdline = kernel_cmdline(program_args(args), args.append)
    program = Path(args.program)
    if args.kernel:  # checked first: a bad path is the user's to fix before anything else
        kernel, which = Path(args.kernel), "given with --kernel"
        check_bzimage(kernel)
    check_program(program)
    check_program_args(program, shlex.split(program_args(args)))
    if not args.kernel:
        kernel, which = fetch_kernel(LINUX_DIR)
        check_bzimage(kernel)
    cpio = LINUX_DIR / INITRAMFS_NAME
    wanted = languages(args)
    tree = None
    if wanted:
        try:
            got = runtimes.collect(wanted, Path(args.lang_dir), RUNTIME_CACHE)
        except OSError as e:
            raise errors.CannotWrite(f"cannot collect the languages' runtimes in {RUNTIME_CACHE}: {e.strerror or e}") from None
        tree = got.tree
        for lang, why in got.left_out.items():
            _say(f"{lang}: not put into the VM: {why}")
        _say(f"languages in the VM: {', '.join(got.measured) or 'none'} ({tree.size() / 1e6:.0f} MB of probes and runtimes)")
    # clockbench-os's host-libc helper beside /init, where it looks, with the loader and libc.so.6 it loads
    # (docs/os-side.md, "The host's own C library"): the VM's C library is then this host's
    helper = program.parent / HOSTLIBC
    if helper.is_file():
        tree = tree or runtimes.Tree()
        tree.add_as(HOSTLIBC, helper)
        try:
            for lib in runtimes.shared_libraries([helper]):
                tree.add_host(lib)
        except runtimes.Missing as e:
            _say(f"the host-libc helper: not put into the VM: {e}")
            del tree.files[HOSTLIBC]
    try:
        initramfs.write(program, cpio, tree)
    except OSError as e:
        raise errors.CannotWrite(f"cannot write the initramfs {cpio}: {e.strerror or e}") from None

    cfg = qemu.QemuConfig(boot="direct", kernel=kernel, firmware=args.firmware, accel=args.accel, machine=args.machine,
                          cpu=args.cpu, smp=args.smp, memory=args.memory, append=cmdline,
                          extra=["-initrd", str(cpio), *(args.qemu_arg or [])])
    try:
        accel, why = qemu.resolve_accel(cfg.accel)  # under PVM, auto is TCG: Linux does not boot there in minutes
        cfg.accel = accel
        command = qemu.build_command(cfg, accel)
    except RuntimeError as e:
        raise errors.QemuFailed(str(e)) from None
    cpu = command[command.index("-cpu") + 1]
    _say(f"Linux under {why}; machine {cfg.machine}, cpu {cpu}, smp {cfg.smp}, memory {cfg.memory}, firmware {cfg.firmware}")
    _say(f"kernel {kernel} ({which})")
    shown = program_args(args)
    _say(f"init {program}" + (f" with arguments: {shown}" if shown.strip() else "") +
         f"; time bound {args.timeout:g} s; Ctrl-C stops it")
    if accel == "kvm":
        _say("note: under nested KVM (this machine a VM itself) Linux can take minutes to boot, or more than the time "
             "bound; `--accel tcg` reaches init in seconds")

    log = Path(args.log)
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        if log.is_symlink():  # `make os-vm`'s link to its newest kept run: replaced, never written through
            log.unlink()
        stream = log.open("w", errors="replace")  # written as it arrives: a killed tool still leaves it
    except OSError as e:
        raise errors.CannotWrite(f"cannot write the log {log}: {e.strerror or e}") from None
    term = progress.Terminal(show_records=args.records)
    first_record: list[float] = []
    start = time.monotonic()
    tail = [""]

    def echo(text: str) -> None:
        stream.write(text)
        stream.flush()
        if not first_record and records.PREFIX in tail[0] + text:  # when the program's first record came
            first_record.append(time.monotonic() - start)
        tail[0] = text[-len(records.PREFIX):]
        term.feed(text)

    stop = threading.Event()
    old = signal.signal(signal.SIGINT, lambda *_: stop.set()) if threading.current_thread() is threading.main_thread() else None
    try:
        result = qemu.run(cfg, timeout=args.timeout, echo=echo, stop=stop)
    except FileNotFoundError as e:
        if e.filename == command[0]:
            raise errors.MissingTool(f"{command[0]} not found: install the 'qemu-system-x86' package (or run `make deps`)") from None
        raise errors.QemuFailed(str(e)) from None
    except (RuntimeError, OSError) as e:
        raise errors.QemuFailed(str(e)) from None
    finally:
        stream.close()
        term.close()
        if old is not None:
            signal.signal(signal.SIGINT, old)
    log.write_text(result.output)
    if result.stderr.strip():
        print(result.stderr.rstrip(), flush=True)
    print()
    booted = f"; the program's first record came {first_record[0]:.1f} s after QEMU started" if first_record else ""
    if result.interrupted:
        _say(f"interrupted after {result.seconds:.1f} s: QEMU stopped; the partial log is in {log}")
    elif result.status is not None:
        _say(f"the program ended: {qemu.STATUS_NAMES[result.status]} (status {result.status}) after "
             f"{result.seconds:.1f} s{booted}; log in {log}")
    else:
        if not result.output.strip() and result.qemu_exit not in (None, 0):
            raise errors.QemuFailed(f"QEMU exited {result.qemu_exit} before the kernel printed anything: "
                                    f"{_last_line(result.stderr)}")
        ended = (f"stopped after {args.timeout:g} s (--timeout) without a status from the program" if result.timed_out
                 else f"QEMU exited {result.qemu_exit} after {result.seconds:.1f} s without a status from the program")
        _say(f"{ended}: {explain_no_status(result.output, result.timed_out)}{booted}. The last lines (the whole log is in {log}):")
        print(last_lines(result.output), flush=True)
        if result.timed_out and accel == "kvm":
            _say("under nested KVM Linux may need far longer: try `--accel tcg`, or a larger --timeout")
    return result.exit_code


# --- a guest reached over ssh (--ssh) ----------------------------------------

def guest_initramfs(kernel: Path, wanted: list[str], lang_dir: Path) -> Path:
    """The guest's archive for these languages, written when its bytes change
    (one per set of languages, so that guests of different sets booted at
    once do not take each other's)."""
    modules = guest.fetch_modules(kernel, LINUX_DIR)
    try:
        built = guest.build_tree(wanted, lang_dir, RUNTIME_CACHE, modules)
    except OSError as e:
        raise errors.CannotWrite(f"cannot collect the guest's files in {RUNTIME_CACHE}: {e.strerror or e}") from None
    for what, why in built.left_out.items():
        _say(f"{what}: not put into the guest: {why}")
    _say(f"languages' runtimes in the guest: {', '.join(built.languages) or 'none'}; the guest's files: "
         f"{built.tree.size() / 1e6:.0f} MB")
    which = "all" if set(wanted) == set(runtimes.LANGUAGES) else "-".join(wanted) or "nolang"
    cpio = LINUX_DIR / f"initramfs-guest-{which}.cpio"
    try:
        initramfs.write_init(built.init, cpio, built.tree)
    except OSError as e:
        raise errors.CannotWrite(f"cannot write the initramfs {cpio}: {e.strerror or e}") from None
    return cpio


def cmd_guest(args: argparse.Namespace) -> int:
    """Boots the guest, says how to reach it once its sshd answers, and stays
    until it powers off (0), Ctrl-C or SIGTERM (it is powered off: 130), or
    --timeout (powered off: 5)."""
    port = args.ssh_port
    bound = args.timeout if args.timeout is not None else DEFAULT_GUEST_TIMEOUT_S
    keys = guest.read_keys(Path(args.authorized_key))
    if args.kernel:
        raise errors.UsageError("--ssh boots Debian's kernel (its NIC module comes from the same package): leave --kernel out")
    if not guest.port_free(port):
        raise errors.Unavailable(f"127.0.0.1:{port} is in use: give --ssh another port")
    kernel, which = fetch_kernel(LINUX_DIR)
    check_bzimage(kernel)
    cpio = guest_initramfs(kernel, languages(args), Path(args.lang_dir))
    log = Path(args.log) if args.log else paths.BUILD / GUEST_LOG.format(port=port)
    cfg = guest.GuestConfig(kernel=kernel, initramfs=cpio, port=port, authorized_keys=keys,
                            hostname=args.hostname or f"os-vm-{port}", cmdline=check_append(args.append),
                            log=log, accel=args.accel, machine=args.machine, cpu=args.cpu, smp=args.smp,
                            memory=args.memory, firmware=args.firmware, extra=list(args.qemu_arg or []))
    g = guest.Guest(cfg)
    stop = threading.Event()
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        _say(f"guest {cfg.hostname}: kernel {kernel} ({which}), command line {g.qemu_config().append!r}; "
             f"serial log {log}; sshd within {args.boot_timeout:g} s")
        boot_s = g.start(args.boot_timeout, stop=stop)
        _say(f"Linux under {g.accel_why}; machine {cfg.machine}, memory {cfg.memory}")
        _say(f"up after {boot_s:.1f} s: ssh -p {port} -i PRIVATE_KEY root@127.0.0.1 (Ansible: ansible_host=127.0.0.1 "
             f"ansible_port={port} ansible_user=root ansible_python_interpreter=/usr/bin/python3)")
        _say(f"it stays up for {bound:g} s at most: `poweroff` in it, Ctrl-C or SIGTERM here ends it")
        deadline = time.monotonic() + bound
        while not stop.is_set() and time.monotonic() < deadline:
            if g.wait(0.5) is not None:
                break
        if g.alive():
            why = "interrupted" if stop.is_set() else f"its time bound ({bound:g} s, --timeout) ran out"
            _say(f"{why}: {g.stop()}")
            return errors.INTERRUPTED if stop.is_set() else qemu.EXIT_TIMEOUT
        _say(f"the guest powered off (QEMU status {g.proc.returncode}); serial log {log}")
        return 0 if g.proc.returncode == 0 else qemu.EXIT_NO_VERDICT
    finally:
        g.kill()  # nothing left running, whatever happened above
        for sig, old in handlers.items():
            signal.signal(sig, old)
