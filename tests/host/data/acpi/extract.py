"""Cuts one machine of the linuxhw/ACPI collection down to what the tests
use: the FACP, HPET and APIC sections of its acpidump text (NAME.txt) and
of ACPICA's `iasl -d` decoding of the same tables that the collection keeps
beside it (NAME.dsl.gz). Run from a clone of https://github.com/linuxhw/ACPI:

    python3 extract.py CLONE "Tablet/.../3FE302D11C0A" NAME
"""

import gzip
import re
import subprocess
import sys
from pathlib import Path

KEEP = ("FACP", "HPET", "APIC")


def show(clone: str, path: str) -> str:
    return subprocess.run(["git", "-C", clone, "show", f"HEAD:{path}"], capture_output=True, check=True).stdout.decode("ascii")


def dump_sections(text: str) -> str:
    out, keep = [], False
    for line in text.splitlines():
        head = re.match(r"^\s*([A-Za-z0-9_!]{4})\s*@\s*0x[0-9A-Fa-f]+\s*$", line)
        if head:
            keep = head.group(1) in KEEP
        if keep and line.strip():
            out.append(line)
    return "\n".join(out) + "\n"


def decoded_sections(text: str) -> str:
    """The decoder's sections begin with the signature alone on a line,
    underlined, and end at their "Raw Table Data" hex."""
    out, keep = [], False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line in KEEP and i + 1 < len(lines) and lines[i + 1].startswith("----"):
            keep = True
        elif line.startswith("Raw Table Data"):
            keep = False
        if keep:
            out.append(line)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    clone, path, name = sys.argv[1:4]
    here = Path(__file__).parent
    (here / f"{name}.txt").write_text(dump_sections(show(clone, path + ".bin")))
    with gzip.open(here / f"{name}.dsl.gz", "wt", compresslevel=9) as f:
        f.write(decoded_sections(show(clone, path)))
