"""The netboot tree's Secure Boot way (`make netboot`, netboot.write_tree):
UEFI PXE through shim, our signed GRUB and the signed kernel, as the stick
boots (issue 31: the tree's own GRUB, grub-mknetdir's core.efi, is
unsigned). Under efi/ in the tree:

  efi/bootx64.efi     shim (Debian's, Microsoft-signed): the bootfile
  efi/grubx64.efi     GRUB for the network, signed with KEY_DIR; shim
                      fetches it by TFTP from the bootfile's folder
  efi/mmx64.efi       MokManager, which shim fetches the same way
  efi/clockbench.efi  the kernel as an EFI program, signed with KEY_DIR
  efi/grub.cfg        the menu: the machine's command line by its MAC, as
                      boot/grub/grub.cfg picks it, then GRUB's chainloader
                      (through shim's verifier) starts the signed kernel
  efi/clockbench.cer  the certificate, to enrol (MokManager from a stick, or
                      the firmware's db)

Shim takes the folder of the DHCP bootfile as the place of its second stage
(shim's netboot.c), and GRUB, started from the network, reads $prefix from
the TFTP server it was fetched from ((tftp,SERVER)/efi). Shim asks the
firmware's PXE for each file's size (TFTP tsize): the NIC's own UEFI PXE
does (OVMF's, a PC's); iPXE's EFI build, chained or as QEMU's e1000 option
ROM, answered 4 MiB for GRUB here and shim refused it ("Malformed binary
after Attribute Certificate Table"), so tests boot this way on virtio-net
with OVMF's own network stack."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from clockbench import errors
from clockbench.release import secureboot
from clockbench.fleet.netboot_tree import SHIM_DIR

# the network GRUB's modules, all built in (under Secure Boot GRUB loads no
# module): the NIC through UEFI's SNP, TFTP, the menu, the chainloader
GRUB_NET_MODULES = ["efinet", "tftp", "net", "normal", "configfile", "echo", "test", "chain", "boot", "serial", "terminal",
                    "sleep", "reboot", "halt", "ls", "cat"]
GRUB_SBAT = Path(__file__).resolve().parents[3] / "efi" / "grub-sbat.csv"


def grub_cfg(default: str, by_mac: dict[str, tuple[str, str]]) -> str:
    """The way's menu: the command line by MAC address (netboot.Config's
    lines, checked there), the signed kernel by the chainloader."""
    lines = ["# clockbench: UEFI PXE through shim and signed GRUB (Secure Boot); written by `make netboot`",
             "serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1",
             "terminal_input serial console", "terminal_output serial console",
             f'set cb_cmdline="{default}"']
    for mac, (line, where) in sorted(by_mac.items()):
        lines += [f"# {where}", f'if [ "$net_default_mac" = "{mac}" ]; then set cb_cmdline="{line}"; fi']
    lines += [f'echo "clockbench: booting /{SHIM_DIR}/clockbench.efi (signed) for $net_default_mac: $cb_cmdline"',
              f"chainloader /{SHIM_DIR}/clockbench.efi $cb_cmdline", "boot", ""]
    return "\n".join(lines)


def write(out: Path, default: str, by_mac: dict[str, tuple[str, str]], kernel_efi: Path, key_dir: Path) -> Path:
    """Writes efi/ into the tree at out; returns the bootfile (shim)."""
    if not kernel_efi.is_file():
        raise errors.NoInput(f"{kernel_efi}: no such file (`make efi` builds it)")
    secureboot.check_pe(kernel_efi)
    key, cert, der = secureboot.paths(key_dir)
    secureboot.check_signer(key, cert)  # before anything is written
    shim, mm = secureboot.shim_files()
    if not shutil.which("grub-mkimage"):
        raise errors.MissingTool("grub-mkimage not found: install grub-common grub-efi-amd64-bin (`make deps`)")
    if not GRUB_SBAT.is_file():
        raise errors.NoInput(f"{GRUB_SBAT} not found: GRUB's SBAT lines (the repository's efi/)")
    folder = out / SHIM_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not der.is_file():
            secureboot.write_der(cert, der)
        with tempfile.TemporaryDirectory(prefix="clockbench-netboot-") as d:
            grub = Path(d) / "grubx64.efi"
            r = subprocess.run(["grub-mkimage", "-O", "x86_64-efi", "-o", str(grub), "-p", f"/{SHIM_DIR}", "--sbat", str(GRUB_SBAT),
                                *GRUB_NET_MODULES], capture_output=True, text=True)
            if r.returncode:
                raise errors.CannotWrite(f"grub-mkimage (x86_64-efi, network) failed: {r.stderr.strip()[-300:]}")
            secureboot.sign(key, cert, grub, folder / "grubx64.efi")
            secureboot.sign(key, cert, kernel_efi, folder / "clockbench.efi")
        shutil.copyfile(shim, folder / "bootx64.efi")
        shutil.copyfile(mm, folder / "mmx64.efi")
        shutil.copyfile(der, folder / secureboot.CERT_DER_NAME)
        (folder / "grub.cfg").write_text(grub_cfg(default, by_mac))
    except OSError as e:
        raise errors.CannotWrite(f"cannot write {folder}: {e.strerror or e}") from None
    return folder / "bootx64.efi"
