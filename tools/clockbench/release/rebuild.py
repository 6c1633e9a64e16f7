"""`make rebuild-check RELEASE=DIR`: rebuild a downloaded release bit for
bit, without its private key, and say file by file whether it matches
(docs/real-hardware.md, "Checking a downloaded image").

Nobody but the releaser holds the release key, so a rebuild cannot sign.
It does not need to: a signature covers the program's Authenticode hash,
and sbattach puts a detached signature back exactly where sbsign put it
(the release's signing time is pinned to SOURCE_DATE_EPOCH, reproducible.py,
but a rebuild does not depend on that: it reuses the signature whole). So every place the
build would sign an EFI program (secureboot.sign: the ISO's, the USB
image's, the netboot tree's) takes the signature out of the release's own
signed copy and attaches it to the program just built, and sbverify checks
it with the release certificate. A program that differs by one byte from
what was signed fails there, by name. Everything after that (the ESP, the
ISO, the USB image, the tarball, SHA256SUMS) must then come out identical,
and `compare` says which file does not.

What a rebuild needs besides the commit is the build machine's packages at
the versions the release's SBOM names (GRUB and shim are copied into the
images): `compare` names every package whose version differs here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from clockbench import errors
from clockbench.release import release, reproducible, secureboot

SIGNATURES_FROM_ENV = reproducible.SIGNATURES_FROM_ENV


def prepare(release_dir: Path, key_dir: Path, cwd: Path = release.paths.ROOT, accept_unlisted: bool = False) -> str:
    """A key folder holding only the release's certificate, and the version
    the release names; refused unless this checkout is the released commit."""
    sboms = sorted(release_dir.glob("clockbench-*.spdx.json"))
    if not release_dir.is_dir() or len(sboms) != 1:
        raise errors.NoInput(f"{release_dir} is not a clockbench release folder (no clockbench-VERSION.spdx.json)")
    version = sboms[0].name[len("clockbench-"):-len(".spdx.json")]
    release.check_version(version)
    try:
        source = next(p["sourceInfo"] for p in json.loads(sboms[0].read_text())["packages"] if p["name"] == "clockbench")
    except (ValueError, KeyError, StopIteration):
        raise errors.BadInput(f"{sboms[0]} names no clockbench package and commit") from None
    commit = source.removeprefix("git commit ")
    head = release._git("rev-parse", "HEAD", cwd=cwd).strip()
    if head != commit:
        raise errors.UsageError(f"the release is commit {commit[:12]}, this checkout is {head[:12]}: "
                                f"`git checkout {commit[:12]}` first")
    if release.dirty_files(cwd):
        raise errors.UsageError("the tree is dirty: a rebuild is of the released commit as it was")
    cert = release_dir / release.release_names(version)["cert_pem"]
    if not cert.is_file():
        raise errors.NoInput(f"{cert} is missing: the release's certificate checks each signature")
    said = release.anchored(cert, "the release's certificate", cwd, accept_unlisted)
    print(f"clockbench rebuild {version}: {said}", file=sys.stderr)
    shutil.rmtree(key_dir, ignore_errors=True)
    key_dir.mkdir(parents=True)
    shutil.copyfile(cert, key_dir / secureboot.CERT_NAME)
    secureboot.write_der(cert, key_dir / secureboot.CERT_DER_NAME)
    return version


def sbom_packages(path: Path) -> dict[str, str | None]:
    try:
        return {p["name"]: p.get("versionInfo") for p in json.loads(path.read_text())["packages"]}
    except (OSError, ValueError, KeyError):
        return {}


def compare(rebuilt: Path, downloaded: Path) -> int:
    """Each file of the downloaded release against the rebuild: 0 when every
    one is identical, 1 when any differs (and why, where it can say)."""
    names = sorted(p.name for p in downloaded.iterdir())
    differ = []
    for n in names:
        mine = rebuilt / n
        same = mine.is_file() and release.sha256(mine) == release.sha256(downloaded / n)
        print(f"  {'identical' if same else 'DIFFERS  '}  {n}")
        if not same:
            differ.append(n)
    sbom = next((n for n in names if n.endswith(".spdx.json")), None)
    if sbom:
        theirs, ours = sbom_packages(downloaded / sbom), sbom_packages(rebuilt / sbom)
        for pkg in sorted(set(theirs) | set(ours)):
            if pkg != "clockbench" and theirs.get(pkg) != ours.get(pkg):
                print(f"  the release was built with {pkg} {theirs.get(pkg) or '(none)'}, this machine has "
                      f"{ours.get(pkg) or '(none)'}: install that version to rebuild it bit for bit")
    if differ:
        print(f"clockbench rebuild: {len(differ)} of {len(names)} files differ from the release")
        return 1
    print(f"clockbench rebuild: all {len(names)} files are identical to the release, bit for bit")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m clockbench.release.rebuild", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    pr = sub.add_parser("prepare", help="a key folder with the release's certificate; prints the version")
    pr.add_argument("--release", required=True)
    pr.add_argument("--key-dir", required=True)
    pr.add_argument("--accept-unlisted-certificate", action="store_true",
                    help="UNLISTED_CERT=1: rebuild a release whose certificate release-certificate.sha256 does not list")
    c = sub.add_parser("compare", help="the rebuild against the downloaded release, file by file")
    c.add_argument("rebuilt")
    c.add_argument("downloaded")
    args = p.parse_args(argv)
    try:
        if args.step == "prepare":
            print(prepare(Path(args.release), Path(args.key_dir), accept_unlisted=args.accept_unlisted_certificate))
            return 0
        return compare(Path(args.rebuilt), Path(args.downloaded))
    except errors.ToolError as e:
        print(f"make rebuild-check: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
