"""`make release`: the files a person downloads, and what lets them check
those files (issue 31; docs/real-hardware.md, "Checking a downloaded image").

The Makefile runs three steps:
1. `check`: everything that would make the release wrong is refused before
   anything is built: a VERSION that is not a version, a dirty tree (unless
   ALLOW_DIRTY=1, and then the version must say "dirty"), no KEY_DIR given
   (a release is never signed with a user's own key by default), a key that
   cannot sign (secureboot.check_key), no SPDX library.
2. the build, from nothing, in a folder of its own (build/release-work/),
   with the release key: the Makefile's own rules, so the files are the ones
   `make iso`, `make img` and `make netboot` make.
3. `assemble`: the files renamed with the version, the netboot tree as a
   tarball, the certificate, an SPDX SBOM, release notes from the log and
   SHA256SUMS, written to build/release.partial/ and renamed to
   build/release/ only when all of it is there: nothing half-written.

Everything assemble writes is a function of the commit, the build machine's
packages and the key, so two releases of one commit are byte-identical
(tests/release/): dates come from SOURCE_DATE_EPOCH, the tarball's members
are sorted with fixed owners, modes and times, the SBOM's namespace is
derived from the version and commit, never random.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from clockbench import errors, paths
from clockbench.release import secureboot

# A version: a release number (1.2, 1.2.0, 1.2.0-rc1, git describe's
# 1.2.0-3-gabc1234), or an abbreviated commit (scripts/version.sh with no
# tag); either may end "-dirty". Nothing else: the version goes into C
# strings, sed replacements, file names and the QR payload.
VERSION_RE = re.compile(r"(?:\d+\.\d+(?:\.\d+)?(?:[-+~][0-9A-Za-z.]+)*|[0-9a-f]{7,40}(?:-dirty)?)")

# What a release holds, by its role; the names carry the version.
def release_names(version: str) -> dict[str, str]:
    v = version
    return {
        "iso": f"clockbench-{v}.iso",
        "img": f"clockbench-{v}.img",
        "elf": f"clockbench-{v}-multiboot.elf",
        "pvh": f"clockbench-{v}-pvh.elf",
        "efi": f"clockbench-{v}.efi",
        "grub_efi": f"clockbench-{v}-grubx64.efi",
        "netboot": f"clockbench-{v}-netboot.tar.gz",
        "bundle": f"clockbench-os-{v}-x86_64-linux.tar.gz",
        "cert_pem": "clockbench-release.crt",
        "cert_der": "clockbench-release.cer",
        "sbom": f"clockbench-{v}.spdx.json",
        "notes": "RELEASE-NOTES.md",
        "sums": "SHA256SUMS",
    }


# Where each input sits in the release build's folder (the Makefile's names;
# the bundle's is made with the version, below).
WORK_INPUTS = {
    "iso": "clockbench.iso",
    "img": "clockbench.img",
    "elf": "clockbench.elf",
    "pvh": "clockbench-pvh.elf",
    "efi": "esp/clockbench.efi",
    "grub_efi": "esp/grubx64.efi",
    "netboot": "netboot",
}

# What goes into the images, by the Debian package it comes from, and what
# builds them: the SBOM names each with the version installed here.
SHIPPED_PACKAGES = {
    "grub-pc-bin": "GRUB for legacy BIOS: the ISO's and the USB image's boot loader, the BIOS netboot tree's",
    "grub-efi-amd64-bin": "GRUB for UEFI: the signed grubx64.efi, the UEFI netboot tree's",
    "shim-signed": "shim (BOOTX64.EFI) and MokManager, signed by Microsoft's UEFI CA",
    "console-setup-linux": "the console font (Lat15-VGA16), converted into the kernel",
    "libc6-dev": "static glibc, linked into clockbench-os and the C++ and Rust probes of the bundle; the headers and "
                 "libc.so the bundle's clockbench-os-libc is linked against (it loads the host's own libc.so.6)",
    "libstdc++-12-dev": "libstdc++, linked into the bundle's C++ (libstdc++) probe",
    "libc++-dev": "libc++, linked into the bundle's C++ (libc++) probe",
    "libc++abi-dev": "libc++abi, linked into the bundle's C++ (libc++) probe",
    "golang-go": "Go's runtime, in the bundle's Go probe (where Go came from Debian)",
    "rustc": "Rust's standard library, in the bundle's Rust probe (where Rust came from Debian)",
}
BUILD_PACKAGES = ("gcc", "binutils", "nasm", "grub-common", "xorriso", "libisofs6", "libisoburn1", "libburn4", "mtools",
                  "faketime", "libfaketime", "sbsigntool", "python3", "python3-cryptography", "zlib1g",
                  "g++", "clang", "openjdk-17-jdk-headless", "mono-mcs", "nodejs")


def _git(*args: str, cwd: Path = paths.ROOT) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        raise errors.ToolError(f"git {' '.join(args)} failed: {(r.stderr.strip().splitlines() or ['no message'])[-1]}",
                               errors.MISSING_TOOL)
    return r.stdout


def source_date_epoch_of_commit(cwd: Path = paths.ROOT) -> int:
    return int(_git("log", "-1", "--format=%ct", cwd=cwd).strip())


def source_date_epoch(cwd: Path = paths.ROOT) -> int:
    """SOURCE_DATE_EPOCH as the Makefile exports it, else the commit's date."""
    env = os.environ.get("SOURCE_DATE_EPOCH", "")
    if env.isdigit():
        return int(env)
    return source_date_epoch_of_commit(cwd)


# The fingerprints of the project's release certificates, committed with the
# code: what ties a downloaded release to the project.
ANCHOR = "release-certificate.sha256"


def published_fingerprints(cwd: Path = paths.ROOT) -> set[str]:
    """The SHA-256 fingerprints release-certificate.sha256 lists (upper case,
    no colons); empty when it lists none."""
    try:
        text = (cwd / ANCHOR).read_text()
    except OSError:
        return set()
    out = set()
    for line in text.splitlines():
        word = line.split("#", 1)[0].split()
        if word:
            fp = word[0].replace(":", "").upper()
            if not re.fullmatch(r"[0-9A-F]{64}", fp):
                raise errors.BadInput(f"{ANCHOR}: {word[0]!r} is not a SHA-256 fingerprint")
            out.add(fp)
    return out


def anchored(cert: Path, what: str, cwd: Path = paths.ROOT, accept_unlisted: bool = False) -> str:
    """Refuses a certificate the repository does not list, also while it
    lists none (then nothing ties a release to the project: the first
    release's maintainer lists its fingerprint and commits it first);
    accept_unlisted (UNLISTED_CERT=1) takes one anyway, saying so. Returns
    what was checked, for the output."""
    listed = published_fingerprints(cwd)
    fp = cert_info(cert).fingerprint_sha256.replace(":", "")
    if fp in listed:
        return f"the certificate is one {ANCHOR} publishes"
    if accept_unlisted:
        return (f"UNLISTED_CERT=1: the certificate (SHA-256 {fp[:16]}...) is not one {ANCHOR} lists"
                + (" (it lists none)" if not listed else "") + ": checked against the download only, not against the project")
    if not listed:
        raise errors.BadKey(f"{ANCHOR} lists no release certificate yet, so {what} (SHA-256 {fp[:16]}...) cannot be tied to "
                            f"the project: list its fingerprint there and commit it, or UNLISTED_CERT=1 to accept it unlisted")
    raise errors.BadKey(f"{what} (SHA-256 {fp[:16]}...) is not a release certificate this checkout publishes in {ANCHOR} "
                        "(UNLISTED_CERT=1 accepts it unlisted)")


# ---- 1. check -----------------------------------------------------------

def check_version(version: str) -> None:
    if version in ("", "unknown"):
        raise errors.UsageError("no version: this is not a git checkout; give one, e.g. `make release VERSION=1.2.0`")
    if not VERSION_RE.fullmatch(version):
        raise errors.UsageError(f"VERSION={version!r} is not a version: give a release number (1.2.0, 1.2.0-rc1) "
                                "or leave VERSION unset for the tag or commit")


def dirty_files(cwd: Path = paths.ROOT) -> list[str]:
    """Tracked files that differ from the commit (what git describe --dirty sees)."""
    return [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no", cwd=cwd).splitlines() if line]


def check(version: str, key_dir: str, key_dir_origin: str, allow_dirty: bool, cwd: Path = paths.ROOT,
          epoch: str | None = None, commit: str | None = None, accept_unlisted: bool = False) -> tuple[secureboot.KeyInfo, str]:
    check_version(version)
    if commit is not None and not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise errors.UsageError("this is not a git checkout: a release is made from one (its commit names it)")
    if epoch is not None:
        committed = str(source_date_epoch_of_commit(cwd))
        if epoch != committed:
            raise errors.UsageError(f"SOURCE_DATE_EPOCH={epoch} is not the commit's date ({committed}): a rebuild could not "
                                    "find it; unset it")
    dirty = dirty_files(cwd)
    if dirty and not allow_dirty:
        more = f" and {len(dirty) - 3} more" if len(dirty) > 3 else ""
        raise errors.ToolError(f"the tree is dirty ({', '.join(dirty[:3])}{more}): commit first, or ALLOW_DIRTY=1 for a "
                               "release whose version says dirty", errors.USAGE)
    if dirty and "dirty" not in version:
        raise errors.UsageError(f"VERSION={version} on a dirty tree: leave VERSION unset (the version then ends -dirty) "
                                "or put dirty in it")
    if key_dir_origin not in ("command line", "environment", "environment override"):
        raise errors.UsageError("a release is signed with the release key: name its folder, `make release KEY_DIR=DIR` "
                                "(`clockbench keys --new --dir DIR` makes one; never your own key by default)")
    key, cert, der = secureboot.paths(Path(key_dir))
    if not key.exists() and not cert.exists():
        raise errors.NoInput(f"no release key in {key_dir} ({key.name}, {cert.name}): `clockbench keys --new --dir "
                             f"{shlex.quote(key_dir)} --name 'clockbench release key'` makes one")
    info = secureboot.check_key(key, cert)
    if der.exists() and der.read_bytes() != cert_der_bytes(cert):
        raise errors.BadKey(f"{der} is not {cert.name} in DER (left from another key?): remove it, the build writes it anew")
    said = anchored(cert, f"the certificate in {key_dir}", cwd, accept_unlisted)
    _spdx()
    return info, said


# ---- 3. assemble --------------------------------------------------------

def _spdx():
    try:
        import spdx_tools.spdx.model  # noqa: F401
    except ImportError:
        raise errors.MissingTool("the SPDX library (spdx-tools) is not installed: `make deps DEPS=release` puts it in "
                                 "build/release-venv") from None
    return spdx_tools


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_tarball(tree: Path, out: Path, epoch: int, top: str) -> None:
    """tree as a gzip'd tar whose bytes depend only on the files' contents
    and whether each is executable: members sorted, under `top/`, owned by
    0:0 with no names, dated epoch; the gzip header dated epoch, no name."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = sorted(tree.rglob("*"), key=lambda p: p.relative_to(tree).as_posix())
        for p in [tree, *entries]:
            rel = p.relative_to(tree).as_posix()
            info = tarfile.TarInfo(top if rel == "." else f"{top}/{rel}")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = epoch
            if p.is_symlink():
                raise errors.BadInput(f"{p}: a symbolic link in the netboot tree (the tarball holds files only)")
            if p.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size = p.stat().st_size
                info.mode = 0o755 if os.access(p, os.X_OK) else 0o644
                with p.open("rb") as f:
                    tar.addfile(info, f)
    with out.open("wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=epoch, compresslevel=9) as gz:
        gz.write(raw.getvalue())


def dpkg_versions(names) -> dict[str, str]:
    """The installed version of each Debian package named (absent ones left out)."""
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n", *names],
                           capture_output=True, text=True)
    except OSError:
        return {}
    out = {}
    for line in r.stdout.splitlines():
        name, version, status = (line.split("\t") + ["", ""])[:3]
        if status.startswith("ii"):
            out[name] = version
    return out


def cert_der_bytes(cert_path: Path) -> bytes:
    x509, _, serialization, _ = secureboot._crypto()
    data = cert_path.read_bytes()
    cert = x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)
    return cert.public_bytes(serialization.Encoding.DER)


def cert_info(cert_path: Path) -> secureboot.KeyInfo:
    """The certificate's subject, fingerprints and expiry, for the notes (a
    rebuild has the certificate only, never the key)."""
    x509, hashes, serialization, _ = secureboot._crypto()
    data = cert_path.read_bytes()
    cert = x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)
    der = cert.public_bytes(serialization.Encoding.DER)
    fps = [hashlib.new(a, der).hexdigest().upper() for a in ("sha256", "sha1")]
    fps = [":".join(h[i:i + 2] for i in range(0, len(h), 2)) for h in fps]
    return secureboot.KeyInfo(Path(""), cert_path, cert_path.with_suffix(".cer"), cert.subject.rfc4514_string(), fps[0],
                              secureboot.cert_not_after(cert), fps[1])


NOTES_MAX = 300  # commits named in the notes (GitHub takes a release body of 125,000 characters)

# The notes' groups, what a user meets first: a commit goes to the first whose
# folders hold any file it changed (by path prefix); one that changed only
# tests, CI files or docs goes to those groups, last.
CHANGE_GROUPS = (
    ("The image", ("boot/", "drivers/", "lib/", "kernel/", "experiments/", "efi/", "iso/", "linker")),
    ("clockbench-os", ("os/",)),
    ("The host tool", ("tools/",)),
    ("Building and releasing", ("Makefile", "scripts/", "pyproject", "release-certificate")),
    ("Documentation", ("docs/", "README")),
    ("Tests and CI only", ("tests/", ".github/", ".gitlab", "fuzz/")),
)


def grouped_changes(span: str, cwd: Path = paths.ROOT) -> str:
    """The commits of span (no merges), grouped by what they changed
    (CHANGE_GROUPS), user-visible first, newest first within a group, each
    with the commit's first 12 hex digits (not %h, whose length grows with
    the clone's object count: a later clone would write other notes)."""
    out = _git("log", "--no-merges", "--format=%x01%H %s", "--name-only", span, cwd=cwd)
    groups: dict[str, list[str]] = {name: [] for name, _ in CHANGE_GROUPS}
    other: list[str] = []
    count = 0
    for block in out.split("\x01")[1:]:
        head, *files = [line for line in block.splitlines() if line.strip()]
        full, _, subject = head.partition(" ")
        count += 1
        if count > NOTES_MAX:
            continue
        group = next((name for name, prefixes in CHANGE_GROUPS if any(f.startswith(prefixes) for f in files)), None)
        (groups[group] if group else other).append(f"- {subject} ({full[:12]})")
    text = ""
    for name, lines in [*groups.items(), ("Other", other)]:
        if lines:
            text += f"### {name}\n\n" + "\n".join(lines) + "\n\n"
    if count > NOTES_MAX:
        text += f"... and {count - NOTES_MAX} earlier commits (`git log {span}`)\n"
    return text.rstrip("\n") + "\n"


def release_notes(version: str, commit: str, epoch: int, key: secureboot.KeyInfo, cwd: Path = paths.ROOT) -> str:
    """What changed: the log since the previous tag (all of it when there is none)."""
    prev = subprocess.run(["git", "describe", "--tags", "--abbrev=0", f"{commit}^"], cwd=cwd, capture_output=True, text=True)
    since = prev.stdout.strip() if prev.returncode == 0 else ""
    span = f"{since}..{commit}" if since else commit
    log = grouped_changes(span, cwd)
    date = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    head = [f"# clockbench {version}", "",
            f"Commit {commit}, {date:%Y-%m-%d %H:%M} UTC (the commit's date: SOURCE_DATE_EPOCH={epoch}).", "",
            "Check the files before you use them (docs/real-hardware.md, \"Checking a downloaded image\"):",
            "`sha256sum -c SHA256SUMS`; `sbverify --cert clockbench-release.crt` on the EFI programs; or rebuild "
            "this commit bit for bit with `make rebuild-check RELEASE=DIR`.", "",
            f"Signed with the release key: {key.subject}, certificate SHA-256 {key.fingerprint_sha256}",
            f"(SHA-1 {key.fingerprint_sha1}, as MokManager shows it when you enrol clockbench-release.cer), "
            f"valid until {key.not_after:%Y-%m-%d}.", "",
            f"## Changes {'since ' + since if since else '(every commit: the first release)'}", ""]
    return "\n".join(head) + log


def write_sbom(out: Path, version: str, commit: str, epoch: int, files: dict[str, Path]) -> None:
    """An SPDX 2.3 document (JSON, by spdx-tools, validated as it writes):
    clockbench, the Debian packages whose parts are in the images and the
    tools that built them, with this machine's versions, and every released
    file with its checksums."""
    _spdx()
    from spdx_tools.spdx.model import (Actor, ActorType, Checksum, ChecksumAlgorithm, CreationInfo, Document, File,
                                       FileType, Package, PackagePurpose, Relationship, RelationshipType, SpdxNoAssertion)
    from spdx_tools.spdx.writer.write_anything import write_file

    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).replace(tzinfo=None)
    ns = hashlib.sha256(f"{version}\0{commit}".encode()).hexdigest()[:32]
    doc = Document(CreationInfo(
        spdx_version="SPDX-2.3", spdx_id="SPDXRef-DOCUMENT", name=f"clockbench-{version}", data_license="CC0-1.0",
        document_namespace=f"https://clockbench.invalid/spdx/clockbench-{version}-{ns}",
        creators=[Actor(ActorType.TOOL, "clockbench-release"), Actor(ActorType.TOOL, "spdx-tools")], created=created,
        creator_comment="Made by `make release` (tools/clockbench/release/release.py); dated by SOURCE_DATE_EPOCH, the commit's date."))
    main = Package(spdx_id="SPDXRef-clockbench", name="clockbench", version=version, download_location=SpdxNoAssertion(),
                   files_analyzed=True, supplier=SpdxNoAssertion(), primary_package_purpose=PackagePurpose.OPERATING_SYSTEM,
                   source_info=f"git commit {commit}", license_concluded=SpdxNoAssertion(),
                   license_declared=SpdxNoAssertion(), copyright_text=SpdxNoAssertion())
    doc.packages.append(main)
    doc.relationships.append(Relationship("SPDXRef-DOCUMENT", RelationshipType.DESCRIBES, "SPDXRef-clockbench"))
    for i, (name, path) in enumerate(sorted(files.items())):
        data = path.read_bytes()
        fid = f"SPDXRef-File-{i}"
        kind = FileType.ARCHIVE if name.endswith((".tar.gz", ".iso", ".img")) else \
            FileType.TEXT if name.endswith((".md", ".crt")) else FileType.BINARY
        doc.files.append(File(name=f"./{name}", spdx_id=fid, file_types=[kind],
                              checksums=[Checksum(ChecksumAlgorithm.SHA1, hashlib.sha1(data).hexdigest()),
                                         Checksum(ChecksumAlgorithm.SHA256, hashlib.sha256(data).hexdigest())],
                              license_concluded=SpdxNoAssertion(), copyright_text=SpdxNoAssertion()))
        doc.relationships.append(Relationship("SPDXRef-clockbench", RelationshipType.CONTAINS, fid))
    installed = dpkg_versions([*SHIPPED_PACKAGES, *BUILD_PACKAGES])
    for name in [*SHIPPED_PACKAGES, *BUILD_PACKAGES]:
        pid = "SPDXRef-deb-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)
        doc.packages.append(Package(
            spdx_id=pid, name=name, version=installed.get(name), download_location=SpdxNoAssertion(),
            files_analyzed=False, supplier=Actor(ActorType.ORGANIZATION, "Debian"),
            summary=SHIPPED_PACKAGES.get(name, "a build tool"),
            comment=None if name in installed else "not installed where this release was built",
            license_concluded=SpdxNoAssertion(), license_declared=SpdxNoAssertion(), copyright_text=SpdxNoAssertion()))
        rel = RelationshipType.CONTAINS if name in SHIPPED_PACKAGES else RelationshipType.BUILD_TOOL_OF
        doc.relationships.append(Relationship("SPDXRef-clockbench", rel, pid) if rel == RelationshipType.CONTAINS
                                 else Relationship(pid, rel, "SPDXRef-clockbench"))
    write_file(doc, str(out), validate=True)


def assemble(version: str, work: Path, key_dir: Path, out: Path, cwd: Path = paths.ROOT, commit: str | None = None,
             allow_dirty: bool = False) -> list[str]:
    """The release folder, from the release build in work. Returns the file
    names it holds. Written beside out and swapped into place last. commit:
    the HEAD make read before the build; a release whose HEAD moved or whose
    tree changed during the build is refused."""
    names = release_names(version)
    inputs = {**WORK_INPUTS, "bundle": f"bundle/{names['bundle']}"}
    for role, rel in inputs.items():
        if not (work / rel).exists():
            raise errors.NoInput(f"the release build has no {work / rel}: the build step did not finish")
    head = _git("rev-parse", "HEAD", cwd=cwd).strip()
    if commit and head != commit:
        raise errors.UsageError(f"HEAD moved during the build ({commit[:12]} to {head[:12]}): make release again")
    if not allow_dirty and dirty_files(cwd):
        raise errors.UsageError("the tree changed during the build: make release again on a clean tree")
    commit = head
    epoch = source_date_epoch(cwd)
    _, cert_pem, cert_der = secureboot.paths(key_dir)
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        for role in ("iso", "img", "elf", "pvh", "efi", "grub_efi"):
            shutil.copyfile(work / WORK_INPUTS[role], staging / names[role])
        write_tarball(work / WORK_INPUTS["netboot"], staging / names["netboot"], epoch, f"clockbench-{version}-netboot")
        shutil.copyfile(work / inputs["bundle"], staging / names["bundle"])  # made reproducible by make bundle
        shutil.copyfile(cert_pem, staging / names["cert_pem"])
        (staging / names["cert_der"]).write_bytes(cert_der_bytes(cert_pem))  # from the PEM: never a stale .cer
        key = cert_info(cert_pem)
        (staging / names["notes"]).write_text(release_notes(version, commit, epoch, key, cwd) + "\n")
        files = {p.name: p for p in staging.iterdir()}
        write_sbom(staging / names["sbom"], version, commit, epoch, files)
        listed = sorted(p.name for p in staging.iterdir())
        (staging / names["sums"]).write_text("".join(f"{sha256(staging / n)}  {n}\n" for n in listed))
        for p in staging.iterdir():
            os.chmod(p, 0o644)
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            os.replace(out, old)  # aside, whole; the new one takes its place in one rename
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(p.name for p in out.iterdir())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m clockbench.release.release", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    c = sub.add_parser("check", help="refuse a release that would be wrong, before anything is built")
    a = sub.add_parser("assemble", help="build/release/ from the release build")
    for q in (c, a):
        q.add_argument("--version", required=True)
        q.add_argument("--key-dir", required=True)
        q.add_argument("--commit", help="HEAD as make read it")
        q.add_argument("--allow-dirty", action="store_true")
    c.add_argument("--key-dir-origin", default="command line", help="make's $(origin KEY_DIR)")
    c.add_argument("--source-date-epoch", help="the Makefile's SOURCE_DATE_EPOCH")
    c.add_argument("--accept-unlisted-certificate", action="store_true",
                   help="UNLISTED_CERT=1: sign with a key whose certificate release-certificate.sha256 does not list")
    a.add_argument("--work", required=True, help="the release build's folder")
    a.add_argument("--out", required=True, help="the release folder to write")
    a.add_argument("--quiet", action="store_true", help="say nothing when it is done (a rebuild's own copy)")
    args = p.parse_args(argv)
    try:
        if args.step == "check":
            info, said = check(args.version, args.key_dir, args.key_dir_origin, args.allow_dirty,
                               epoch=args.source_date_epoch, commit=args.commit,
                               accept_unlisted=args.accept_unlisted_certificate)
            print(f"clockbench release {args.version}: signing with {info.subject} (SHA-256 {info.fingerprint_sha256[:23]}...); "
                  f"{said}")
        else:
            listed = assemble(args.version, Path(args.work), Path(args.key_dir), Path(args.out), commit=args.commit,
                              allow_dirty=args.allow_dirty)
            if not args.quiet:
                print(f"clockbench release {args.version}: {len(listed)} files in {args.out}; check them with "
                      f"`cd {args.out} && sha256sum -c SHA256SUMS`")
    except errors.ToolError as e:
        print(f"make release: {e}", file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
