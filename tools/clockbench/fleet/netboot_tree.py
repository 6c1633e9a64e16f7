"""The netboot tree's layout as `make netboot` (netboot.py) writes it, and
the command line it gives a MAC address, read back from the tree: what
`clockbench run --boot netboot` (runner.py) needs of it, apart from the
writer, which checks its machines file as runner does."""

from __future__ import annotations

import re

from clockbench import paths

OUT = paths.BUILD / "netboot"
KERNEL_NAME = "clockbench.elf"
BOOTFILES = {
    "bios-ipxe": "clockbench.ipxe",
    "bios-grub": "boot/grub/i386-pc/core.0",
    "uefi-grub": "boot/grub/x86_64-efi/core.efi",
}
# the Secure Boot way (netboot_shim.py), written when the tree is given the
# signed parts (`make netboot` gives them): shim, then signed GRUB and kernel
SHIM_DIR = "efi"
SHIM_BOOTFILE = f"{SHIM_DIR}/bootx64.efi"


def tree_cmdline(script: str, mac: str) -> str:
    """The command line a tree gives a MAC address, read back from the iPXE
    script netboot.ipxe_script wrote (the GRUB configuration holds the same
    lines)."""
    line = ""
    for text in script.splitlines():
        if text.startswith("set cb_cmdline "):
            line = text[len("set cb_cmdline "):]
        m = re.fullmatch(r"iseq \$\{net0/mac\} (\S+) && set cb_cmdline (.*) \|\|", text)
        if m and m.group(1) == mac.lower():
            line = m.group(2)
    return line
