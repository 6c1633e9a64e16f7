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


VENV_TOOL = BUILD / "venv" / "bin" / "clockbench"


def tool_command(argv0: str | None = None, on_path: str | None = None) -> str:
    """The command a hint should print for running this tool again, as it
    works where the user stands: `clockbench` when that is the program on
    PATH, else the program's own path (the venv's, build/venv/bin/clockbench,
    is not on PATH), else, for `python3 -m clockbench`, the venv's program
    when it exists and the module with its PYTHONPATH when it does not.
    argv0 and on_path stand in for sys.argv[0] and which("clockbench") in
    tests."""
    import os
    import shutil
    import sys

    argv0 = sys.argv[0] if argv0 is None else argv0
    on_path = shutil.which("clockbench") if on_path is None else on_path
    here = lambda p: (os.path.relpath(p) if not os.path.relpath(p).startswith("..") else str(p))  # noqa: E731
    if Path(argv0).name == "clockbench":
        if on_path and Path(on_path).resolve() == Path(argv0).resolve():
            return "clockbench"
        return here(Path(argv0).resolve())
    if VENV_TOOL.is_file():
        return here(VENV_TOOL)
    return f"PYTHONPATH={here(ROOT / 'tools')} python3 -m clockbench"


def in_checkout() -> bool:
    return (ROOT / "Makefile").is_file() and (ROOT / "kernel").is_dir()


def default(path: Path) -> str:
    """A default path as the help text shows it and the command uses it:
    inside the repository when the tool runs from a checkout, else as the
    relative path it names."""
    return str(path if in_checkout() else path.relative_to(ROOT))


def checkout_version() -> str | None:
    """The checkout's version as scripts/version.sh gives it (the Makefile
    bakes the same into the image), or None outside a git checkout: read
    once, when this module is first imported, so that no later command (nor
    a test that forbids starting programs) runs git for it."""
    return _CHECKOUT_VERSION


def _read_checkout_version() -> str | None:
    import subprocess

    script = ROOT / "scripts" / "version.sh"
    if not script.is_file():
        return None
    try:
        out = subprocess.run([str(script)], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out if out and out != "unknown" else None


_CHECKOUT_VERSION = _read_checkout_version()


def tool_version() -> str:
    """One version for the tool and the image built beside it: the
    checkout's (scripts/version.sh), else the installed package's."""
    checkout = checkout_version()
    if checkout:
        return checkout
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
    tool = tool_version()
    if build and build != tool and checkout_version():
        image += f"; not this checkout's {tool}: `make` rebuilds it"
    return f"clockbench {tool}; {image}"
