"""Where things are: the repository the tool runs from (the package's own
location, not the current folder), the default image and log paths in it,
and the versions `clockbench --version` names."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# tools/clockbench/ in a checkout (the venv installs it editable, in place)
ROOT = PACKAGE.parents[1]
BUILD = ROOT / "build"

KERNEL = BUILD / "clockbench.elf"
PVH_KERNEL = BUILD / "clockbench-pvh.elf"  # no Multiboot 1 header: QEMU -kernel takes its PVH entry
ISO = BUILD / "clockbench.iso"
RUN_LOG = BUILD / "run.log"
VERSION_FILE = BUILD / "version.txt"


def in_checkout() -> bool:
    return (ROOT / "Makefile").is_file() and (ROOT / "kernel").is_dir()


def default(path: Path) -> str:
    """A default path as the help text shows it and the command uses it:
    inside the repository when the tool runs from a checkout, else as the
    relative path it names."""
    return str(path if in_checkout() else path.relative_to(ROOT))


def tool_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("clockbench")
        except PackageNotFoundError:
            pass
    except ImportError:  # Python < 3.8
        pass
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "tools" / "pyproject.toml").read_text(), re.M) \
        if (ROOT / "tools" / "pyproject.toml").is_file() else None
    return m.group(1) if m else "unknown"


def image_build() -> str | None:
    """The build (git describe) of the image in build/, as the Makefile
    wrote it, or None when there is none."""
    try:
        text = VERSION_FILE.read_text().strip()
    except OSError:
        return None
    return text or None


def version_text() -> str:
    build = image_build()
    images = [p for p in (ISO, KERNEL) if p.is_file()]
    if build and images:
        image = f"image build {build} ({', '.join(default(p) for p in images)})"
    elif build:
        image = f"image build {build} (no image built in {default(BUILD)})"
    elif images:
        image = f"image in {', '.join(default(p) for p in images)}, build unknown (no {default(VERSION_FILE)})"
    else:
        image = f"no image built in {default(BUILD)} (`make iso`)"
    return f"clockbench {tool_version()}; {image}"
