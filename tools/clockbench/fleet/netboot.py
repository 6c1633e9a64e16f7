"""`make netboot` (`clockbench netboot`): a TFTP tree that boots the image
over the network, both ways a PC netboots, with each machine's command line
chosen by its MAC address or its group (docs/fleet.md, "Network boot"):

- BIOS PXE through iPXE (the NIC's own ROM, as QEMU's are, or a chained
  undionly.kpxe): bootfile `clockbench.ipxe`, a script that loads the
  Multiboot kernel itself;
- BIOS PXE through GRUB: bootfile `boot/grub/i386-pc/core.0`;
- UEFI PXE through GRUB: bootfile `boot/grub/x86_64-efi/core.efi`
  (`grub-mknetdir`; iPXE's UEFI build has no Multiboot);
- UEFI PXE with Secure Boot, given the EFI program and a key (--efi,
  --key-dir; `make netboot` gives both): bootfile `efi/bootx64.efi`, shim,
  then our signed GRUB and the signed kernel (netboot_shim.py).
Both GRUBs read `boot/grub/grub.cfg`, which picks the command line by
`$net_default_mac`; the iPXE script by `${net0/mac}`.

The machines file (netboot/machines.toml by default) is TOML:

    [default]
    cmdline = "profile=quick"

    [groups.rack-a]
    cmdline = "profile=standard"
    macs = ["52:54:00:00:00:01", "52:54:00:00:00:02"]

    [machines."52:54:00:12:34:56"]
    cmdline = "profile=quick duration=5 only=drift,read_cost"

A machine's own line wins over its group's, a group's over the default."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from clockbench import errors, paths
from clockbench.runs import plan
from clockbench.fleet.netboot_tree import BOOTFILES, KERNEL_NAME, OUT, SHIM_BOOTFILE, tree_cmdline  # noqa: F401 (SHIM_BOOTFILE, tree_cmdline: for callers)

CONFIG = paths.ROOT / "netboot" / "machines.toml"
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
# what a command line may hold so that GRUB's and iPXE's scripts take it as words
_SAFE = re.compile(r"^[A-Za-z0-9_=,.:@/+ -]*$")


@dataclass
class Config:
    default: str = "profile=quick"
    groups: dict[str, str] = field(default_factory=dict)  # group -> command line
    by_mac: dict[str, tuple[str, str]] = field(default_factory=dict)  # mac -> (command line, where it came from)

    def cmdline(self, mac: str) -> str:
        got = self.by_mac.get(mac.lower())
        return got[0] if got else self.default


def _check_cmdline(line, where: str) -> str:
    if not isinstance(line, str):
        raise errors.BadInput(f"{where}: cmdline must be a string")
    if not _SAFE.match(line):
        raise errors.BadInput(f"{where}: cmdline {line!r} holds a character GRUB or iPXE would read as syntax "
                              "(quotes, $, ;, braces, newlines): only words of letters, digits and =,.:@/+-")
    try:  # the words the image reads, checked as `run --append` checks them
        plan.check_kernel_words(line, "cmdline")
    except errors.UsageError as e:
        raise errors.BadInput(f"{where}: {e}") from None
    return " ".join(line.split())


def _mac(m, where: str) -> str:
    if not isinstance(m, str) or not _MAC.match(m.lower()):
        raise errors.BadInput(f"{where}: {m!r} is not a MAC address (aa:bb:cc:dd:ee:ff)")
    return m.lower()


def parse_config(text: str, source: str = "machines file") -> Config:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise errors.BadInput(f"{source}: not valid TOML: {e}") from None
    unknown = set(data) - {"default", "groups", "machines"}
    if unknown:
        raise errors.BadInput(f"{source}: unknown table{'' if len(unknown) == 1 else 's'} {', '.join(sorted(unknown))}: default, groups, machines")
    cfg = Config()
    if "default" in data:
        cfg.default = _check_cmdline((data["default"] or {}).get("cmdline", cfg.default), f"{source} [default]")
    for name, g in (data.get("groups") or {}).items():
        where = f"{source} [groups.{name}]"
        if not isinstance(g, dict):
            raise errors.BadInput(f"{where}: not a table")
        cfg.groups[name] = _check_cmdline(g.get("cmdline", cfg.default), where)
        for m in g.get("macs", []):
            mac = _mac(m, where)
            if mac in cfg.by_mac:
                raise errors.BadInput(f"{where}: {mac} is already in {cfg.by_mac[mac][1]}")
            cfg.by_mac[mac] = (cfg.groups[name], f"group {name}")
    for m, entry in (data.get("machines") or {}).items():
        where = f"{source} [machines.\"{m}\"]"
        mac = _mac(m, where)
        if not isinstance(entry, dict):
            raise errors.BadInput(f"{where}: not a table")
        if "group" in entry and entry["group"] not in cfg.groups:
            raise errors.BadInput(f"{where}: no group {entry['group']!r}")
        line = entry.get("cmdline")
        if line is None:
            line = cfg.groups[entry["group"]] if "group" in entry else cfg.default
        cfg.by_mac[mac] = (_check_cmdline(line, where), f"machine {mac}")
    return cfg


def load_config(path: Path) -> Config:
    try:
        return parse_config(Path(path).read_text(), str(path))
    except FileNotFoundError:
        raise errors.NoInput(f"{path}: no such file (the machines file: docs/fleet.md)") from None
    except OSError as e:
        raise errors.NoInput(f"{path}: cannot read it: {e.strerror or e}") from None


def ipxe_script(cfg: Config) -> str:
    lines = ["#!ipxe", "# clockbench: BIOS PXE through iPXE (written by `make netboot` from the machines file)",
             f"set cb_cmdline {cfg.default}"]
    for mac, (line, where) in sorted(cfg.by_mac.items()):
        lines += [f"# {where}", f"iseq ${{net0/mac}} {mac} && set cb_cmdline {line} ||"]
    lines += [f"echo clockbench: booting {KERNEL_NAME} for ${{net0/mac}}: ${{cb_cmdline}}",
              f"kernel {KERNEL_NAME} ${{cb_cmdline}}", "boot", ""]
    return "\n".join(lines)


def grub_cfg(cfg: Config) -> str:
    lines = ["# clockbench: PXE through GRUB, BIOS (i386-pc) and UEFI (x86_64-efi); written by `make netboot`",
             "serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1",
             "terminal_input serial console", "terminal_output serial console",
             f'set cb_cmdline="{cfg.default}"']
    for mac, (line, where) in sorted(cfg.by_mac.items()):
        lines += [f"# {where}", f'if [ "$net_default_mac" = "{mac}" ]; then set cb_cmdline="{line}"; fi']
    lines += ['echo "clockbench: booting /' + KERNEL_NAME + ' for $net_default_mac: $cb_cmdline"',
              f"multiboot2 /{KERNEL_NAME} $cb_cmdline", "boot", ""]
    return "\n".join(lines)


def _mknetdir(out: Path, platform: str) -> None:
    tool = shutil.which("grub-mknetdir")
    if not tool:
        raise errors.MissingTool("grub-mknetdir not found: install grub-common grub-pc-bin grub-efi-amd64-bin (`make deps`)")
    src = Path("/usr/lib/grub") / platform
    if not src.is_dir():
        raise errors.MissingTool(f"GRUB's {platform} modules are not installed ({src}): "
                                 f"{'grub-pc-bin' if platform == 'i386-pc' else 'grub-efi-amd64-bin'} (`make deps`)")
    r = subprocess.run([tool, f"--net-directory={out}", "--subdir=boot/grub", "-d", str(src)], capture_output=True, text=True)
    if r.returncode != 0:
        raise errors.ToolError(f"grub-mknetdir for {platform} failed: {r.stderr.strip()[-500:]}", errors.CANNOT_WRITE)


def write_tree(cfg: Config, kernel: Path, out: Path, kernel_efi: Path | None = None, key_dir: Path | None = None) -> dict[str, Path]:
    """The TFTP tree in `out`; returns the bootfiles by way of booting.
    kernel_efi and key_dir: the Secure Boot way too, "uefi-shim"."""
    if not kernel.is_file():
        raise errors.NoInput(f"{kernel}: no such file (`make kernel` builds it)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        for platform in ("i386-pc", "x86_64-efi"):
            _mknetdir(out, platform)
        shutil.copyfile(kernel, out / KERNEL_NAME)
        (out / BOOTFILES["bios-ipxe"]).write_text(ipxe_script(cfg))
        (out / "boot" / "grub" / "grub.cfg").write_text(grub_cfg(cfg))
    except OSError as e:
        raise errors.CannotWrite(f"cannot write the TFTP tree in {out}: {e.strerror or e}") from None
    made = {way: out / f for way, f in BOOTFILES.items()}
    if kernel_efi is not None and key_dir is not None:
        from clockbench.fleet import netboot_shim

        made["uefi-shim"] = netboot_shim.write(out, cfg.default, cfg.by_mac, kernel_efi, key_dir)
    return made


def main(args) -> int:
    cfg = load_config(Path(args.config))
    if (args.efi is None) != (args.key_dir is None):
        raise errors.UsageError("--efi and --key-dir go together: the Secure Boot way needs the EFI program and the key to sign it")
    made = write_tree(cfg, Path(args.kernel), Path(args.out), args.efi and Path(args.efi), args.key_dir and Path(args.key_dir))
    print(f"clockbench netboot: TFTP tree in {args.out} ({len(cfg.by_mac)} machine{'' if len(cfg.by_mac) == 1 else 's'} by MAC, default \"{cfg.default}\")")
    for way, p in made.items():
        print(f"  {way:10} bootfile {p.relative_to(Path(args.out))}")
    sys.stdout.flush()
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("netboot", help="write a TFTP tree that netboots the image (BIOS: iPXE or GRUB; UEFI: GRUB)",
                       description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--config", default=paths.default(CONFIG), help="the machines file (default: %(default)s)")
    p.add_argument("--kernel", default=paths.default(paths.KERNEL), help="the kernel (default: %(default)s)")
    p.add_argument("--out", default=paths.default(OUT), help="the TFTP tree's folder (default: %(default)s)")
    p.add_argument("--efi", help="the kernel as an EFI program (build/clockbench.efi): with --key-dir, adds the Secure Boot "
                   "way, efi/bootx64.efi (shim, then GRUB and the kernel signed with the key)")
    p.add_argument("--key-dir", help="the signing key's folder (the Makefile's KEY_DIR)")
    p.set_defaults(func=main)
