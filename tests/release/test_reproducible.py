"""Reproducible builds (docs/architecture.md, "Reproducible builds"): two
builds of the committed HEAD, each in a fresh `git clone`, in folders of
different paths and lengths (the second on a tmpfs when there is room: another
order of files in a folder), at different wall-clock times (faketime), with
umask 022 and 077, TZ=UTC and TZ=Pacific/Chatham (+12:45/+13:45, a zone no
offset arithmetic gets right by accident), LC_ALL=C and C.UTF-8, both signing
with one key made once: every output compared byte for byte, each file that
differs named.

The clones need no `make deps`: building (the kernels, the EFI programs, the
ISO, the netboot tree, clockbench-os) uses Debian's python3 with the clone's
own tools/ on PYTHONPATH (the Makefile's CB_TOOL), never the venv or
build/pydeps, which only the host tool's reports and the tests use. A target
added here that needs build/pydeps finds the parent tree's through a symlink
in the clone's build/ (the tool looks for it beside its own tools/).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from buildpaths import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
from clockbench import secureboot  # noqa: E402

# The one place that says what is built and compared: make targets, and the
# files (or folders, ending in "/": every file under them) that must come out
# byte-identical. More (a USB .img, build/release/) go here.
TARGETS = ["kernel", "efi", "build/efi/grubx64.efi", "build/clockbench.iso", "img", "netboot", "os"]
OUTPUTS = [
    "build/clockbench.elf",
    "build/clockbench-pvh.elf",
    "build/clockbench.efi",
    "build/efi/grubx64.efi",
    "build/esp/",              # the signed clockbench.efi and grubx64.efi, efi.img
    "build/clockbench.iso",
    "build/clockbench.img",
    "build/netboot/",
    "build/os/clockbench-os",
]

# Two builds as unlike each other as one machine allows. The second goes on
# a tmpfs when there is room (a file system that lists a folder's files in
# another order than ext4's hashed one).
BUILDS = [
    {"folder": "a", "umask": 0o022, "env": {"TZ": "UTC", "LC_ALL": "C"}, "faketime": None, "tmpfs": False},
    {"folder": "a-much-longer-folder/with/more/levels/b", "umask": 0o077,
     "env": {"TZ": "Pacific/Chatham", "LC_ALL": "C.UTF-8"}, "faketime": "+397d",  # a later wall clock, ticking
     "tmpfs": True},
]
TMPFS = Path("/dev/shm")
TMPFS_NEED = 512 << 20
# What the builds' environment must not carry over from the test's
# (a SOURCE_DATE_EPOCH would hide the one the Makefile derives; a parent
# make's jobserver would take over -j2).
DROP_ENV = ("SOURCE_DATE_EPOCH", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "PYTHONPATH",
            "KEY_DIR", "CLOCKBENCH_BUILD", "LANG", "LANGUAGE")


def files_of(tree: Path, outputs: list[str]) -> dict[str, Path]:
    out = {}
    for name in outputs:
        p = tree / name.rstrip("/")
        if name.endswith("/"):
            for f in sorted(p.rglob("*")) if p.is_dir() else []:
                if f.is_file() and not f.is_symlink():
                    out[str(f.relative_to(tree))] = f
        else:
            out[name] = p
    return out


def first_difference(a: bytes, b: bytes) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"sizes {len(a)} and {len(b)}, first difference at byte {n:#x}"


def build(parent: Path, spec: dict, key_dir: Path) -> tuple[Path, float]:
    """A clone of HEAD in parent/folder, built as spec says; its folder and the seconds make took."""
    tree = parent / spec["folder"]
    tree.parent.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"{ROOT} is not a git checkout ({r.stderr.strip()[:200]}): the test builds its HEAD in two clones")
    head = r.stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(tree)], check=True, capture_output=True, text=True)
    subprocess.run(["git", "-C", str(tree), "checkout", "--quiet", "--detach", head], check=True, capture_output=True, text=True)
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env.update(spec["env"])
    cmd = ["make", "-j2", f"KEY_DIR={key_dir}", *TARGETS]
    if spec["faketime"]:
        cmd = ["faketime", "-f", spec["faketime"], *cmd]
    start = time.monotonic()
    umask = spec["umask"]
    r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, preexec_fn=lambda: os.umask(umask))
    if r.returncode:
        pytest.fail(f"the build in {tree} ({' '.join(cmd)}) failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return tree, time.monotonic() - start


def test_two_builds_are_byte_identical():
    if not shutil.which("faketime"):
        pytest.fail("faketime is not installed (Debian package faketime; `make deps`): the reproducibility test "
                    "and the ISO's dating need it")
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clockbench-repro-")))
        key_dir = tmp / "key"
        # one key for both, named without this machine's name
        secureboot.make_key(key_dir, common_name="clockbench reproducibility test key")
        start = time.monotonic()
        trees = []
        for spec in BUILDS:
            parent = tmp
            if spec["tmpfs"] and TMPFS.is_dir() and shutil.disk_usage(TMPFS).free > TMPFS_NEED:
                parent = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clockbench-repro-", dir=TMPFS)))
            trees.append(build(parent, spec, key_dir))
        print(f"\ntwo builds ({', '.join(str(t) for t, _ in trees)}): {', '.join(f'{s:.1f} s' for _, s in trees)}; "
              f"{time.monotonic() - start:.1f} s with the clones")
        (a, _), (b, _) = trees
        fa, fb = files_of(a, OUTPUTS), files_of(b, OUTPUTS)
        missing = sorted(set(fa) ^ set(fb)) + sorted(n for n, p in fa.items() if not p.is_file())
        assert not missing, f"built by one build only, or by neither: {missing}"
        differ = []
        for name in sorted(fa):
            da, db = fa[name].read_bytes(), fb[name].read_bytes()
            if da != db:
                differ.append(f"{name}: {first_difference(da, db)}")
        assert not differ, "these outputs differ between the two builds:\n" + "\n".join(differ)
        # neither build folder's path in any output (a path of equal length in both would not show above)
        for tree, files in ((a, fa), (b, fb)):
            for name, p in files.items():
                assert str(tree).encode() not in p.read_bytes(), f"{name} holds its build folder {tree}"
        assert len(fa) >= len(OUTPUTS), sorted(fa)
