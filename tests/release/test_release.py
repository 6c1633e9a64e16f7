"""`make release` (issue 31), as a maintainer types it, in a clone of this
commit: what it refuses before building (one line, a non-zero status,
build/release/ untouched and nothing half-written beside it), and what one
release holds: every file named in SHA256SUMS and verifying, a valid SPDX
SBOM naming each file, the version in the image's banner, machine record
and QR payload, the EFI programs signed with the release key (sbverify),
and the released ISO booting under BIOS, UEFI and Secure Boot with the
release certificate enrolled.

The release is built once (about 25 s) and read by every check; the release
key is made here, apart from the tests' key and any user's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.paths import ROOT

from clockbench.machines import qemu
from clockbench.records import records
from clockbench.release import secureboot
from helpers.tool import tool_env

# One worker runs them all (make test: pytest-xdist's loadgroup): the release
# and its rebuild are module fixtures, built once, not once a worker.
# Started first (conftest.py, FIRST): the release and its rebuild take 49 s each
# alone and 4-5 minutes each at the busy lane's priority; at the lane's end they
# kept one worker busy while the other had nothing left.
pytestmark = [pytest.mark.xdist_group("release"), pytest.mark.first]

RELEASE_VENV = ROOT / "build" / "release-venv"
PYDEPS = ROOT / "build" / "pydeps"
# What the builds' environment must not carry over from the test's: a
# SOURCE_DATE_EPOCH would hide the one the Makefile derives from the commit;
# a parent make's flags would reach the inner make.
DROP_ENV = ("SOURCE_DATE_EPOCH", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "KEY_DIR", "CLOCKBENCH_BUILD", "LANG",
            "LANGUAGE")
QUICK = "profile=quick only=read_cost"
# The bundle's Go probe compiles Go's standard library into a cold cache in
# minutes: the builds share this checkout's (a cache never changes what Go
# writes, and the rebuild still compares every byte).
GO_CACHE = {"GOCACHE": str(ROOT / "build" / "lang" / "go-cache")}
BOOT_S = 120


def make(clone: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    return subprocess.run(["make", "--no-print-directory", "-C", str(clone), "release", f"RELEASE_VENV={RELEASE_VENV}", *args],
                          capture_output=True, text=True, timeout=600, env={**base, **GO_CACHE, **(env or {})})


def clone_of_head(where: Path, source: Path = ROOT) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(source), str(where)], check=True, timeout=120)
    return where


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout


def release_key(where: Path) -> Path:
    secureboot.make_key(where, common_name="clockbench release key (tests)")
    return where


@pytest.fixture(scope="module")
def key(tmp_path_factory) -> Path:
    return release_key(tmp_path_factory.mktemp("relkey") / "key")


def fingerprint(cert: Path) -> str:
    return secureboot.check_key(cert.with_name(secureboot.KEY_NAME), cert).fingerprint_sha256


@pytest.fixture(scope="module")
def clone(tmp_path_factory, key) -> Path:
    """A clone of HEAD whose release-certificate.sha256 publishes the test
    release key's certificate, committed: the project's own commit would."""
    if not (RELEASE_VENV / "bin" / "python").is_file():
        pytest.fail(f"{RELEASE_VENV} is missing: `make deps` installs the SPDX library there")
    c = clone_of_head(tmp_path_factory.mktemp("rel") / "clockbench")
    anchor = c / "release-certificate.sha256"
    anchor.write_text(anchor.read_text() + f"{fingerprint(key / secureboot.CERT_NAME)}  clockbench release key (tests)\n")
    git(c, "commit", "-qam", "publish the tests' release certificate")
    return c


@pytest.fixture(scope="module")
def release(clone, key):
    """One `make release` of the clone: (the folder, the version, make's output)."""
    r = make(clone, f"KEY_DIR={key}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    version = subprocess.run([str(clone / "scripts" / "version.sh")], capture_output=True, text=True).stdout.strip()
    assert "the certificate is one release-certificate.sha256 publishes" in r.stdout, r.stdout[-2000:]
    return clone / "build" / "release", version, r.stdout + r.stderr


# ---- refusals -------------------------------------------------------------

def one_line_refusal(r: subprocess.CompletedProcess, status: int, words: str) -> None:
    said = [l for l in r.stderr.splitlines() if l.startswith("make release: ")]
    assert r.returncode != 0, r.stdout + r.stderr
    assert len(said) == 1 and re.search(words, said[0]), r.stderr
    assert f"Error {status}" in r.stderr, r.stderr


@pytest.mark.parametrize("args, env, status, words", [
    ((), {}, 64, r"KEY_DIR=DIR"),
    (("KEY_DIR=/nonexistent/key",), {}, 66, r"no release key in /nonexistent/key .*keys --new --dir /nonexistent/key"),
    (("KEY_DIR={key}", "VERSION=not-a-version"), {}, 64, r"not-a-version.* is not a version"),
    (("KEY_DIR={key}", "VERSION=1.0;rm"), {}, 64, r"is not a version"),
    (("KEY_DIR={loose}",), {}, 77, r"permissions|mode"),
    (("KEY_DIR={other}",), {}, 77, r"is not a release certificate this checkout publishes in release-certificate\.sha256"),
    (("KEY_DIR={stale}",), {}, 77, r"clockbench\.cer is not clockbench\.crt in DER"),
    (("KEY_DIR={key}", "SOURCE_DATE_EPOCH=1000000000"), {}, 64, r"SOURCE_DATE_EPOCH=1000000000 is not the commit's date"),
], ids=["no-key-dir", "missing-key", "bad-version", "shell-in-version", "loose-key", "unpublished-key", "stale-der",
        "foreign-date"])
def test_a_refused_release_writes_nothing(clone, key, tmp_path, args, env, status, words):
    loose = tmp_path / "loose"
    shutil.copytree(key, loose)
    os.chmod(loose / secureboot.KEY_NAME, 0o644)
    other = release_key(tmp_path / "other")
    stale = tmp_path / "stale"
    shutil.copytree(key, stale)
    (stale / secureboot.CERT_DER_NAME).write_bytes((other / secureboot.CERT_DER_NAME).read_bytes())
    out = clone / "build" / "release"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "earlier.txt").write_text("a release made before\n")
    r = make(clone, *[a.format(key=key, loose=loose, other=other, stale=stale) for a in args], env=env)
    one_line_refusal(r, status, words)
    assert sorted(p.name for p in out.iterdir()) == ["earlier.txt"], "an earlier release was touched"
    assert not (clone / "build" / "release.partial").exists()
    assert not (clone / "build" / "release-work").exists(), "the build started before the refusal"
    shutil.rmtree(out)


def test_a_dirty_tree_is_refused_unless_allowed_and_then_the_version_says_so(clone, key):
    readme = clone / "README.md"
    before = readme.read_text()
    readme.write_text(before + "\nan edit not committed\n")
    try:
        one_line_refusal(make(clone, f"KEY_DIR={key}"), 64, r"the tree is dirty \(README\.md\)")
        one_line_refusal(make(clone, f"KEY_DIR={key}", "ALLOW_DIRTY=1", "VERSION=1.2.0"), 64, r"dirty tree")
        r = subprocess.run(["make", "-C", str(clone), "-s", "--no-print-directory", "-f", "Makefile", "-p", "-q", "help"],
                           capture_output=True, text=True)
        assert re.search(r"^VERSION := [0-9a-f]{7}-dirty$", r.stdout, re.M), "make's version names no dirty tree"
    finally:
        readme.write_text(before)
    assert not (clone / "build" / "release").exists()


# ---- what a release holds ---------------------------------------------------

def test_every_file_is_in_sha256sums_and_verifies(release):
    out, version, _ = release
    r = subprocess.run(["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=out, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    listed = {line.split("  ", 1)[1] for line in (out / "SHA256SUMS").read_text().splitlines()}
    assert listed == {p.name for p in out.iterdir()} - {"SHA256SUMS"}
    for suffix in (".iso", ".img", "-multiboot.elf", "-pvh.elf", ".efi", "-grubx64.efi", "-netboot.tar.gz", ".spdx.json"):
        assert f"clockbench-{version}{suffix}" in listed, (suffix, listed)
    assert f"clockbench-os-{version}-x86_64-linux.tar.gz" in listed, listed
    assert {"clockbench-release.crt", "clockbench-release.cer", "RELEASE-NOTES.md"} <= listed
    # a byte changed is caught
    victim = out / f"clockbench-{version}-pvh.elf"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    tmp = out.parent / "tampered"
    shutil.copytree(out, tmp)
    (tmp / victim.name).write_bytes(bytes(data))
    r = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp, capture_output=True, text=True)
    shutil.rmtree(tmp)
    assert r.returncode != 0 and f"{victim.name}: FAILED" in r.stdout


def test_the_sbom_is_valid_spdx_naming_every_file_and_what_the_images_hold(release):
    out, version, _ = release
    sbom = out / f"clockbench-{version}.spdx.json"
    code = ("import sys; from spdx_tools.spdx.parser.parse_anything import parse_file; "
            "from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document; "
            "d = parse_file(sys.argv[1]); m = validate_full_spdx_document(d); "
            "print('\\n'.join(x.validation_message for x in m)); sys.exit(1 if m else 0)")
    r = subprocess.run([str(RELEASE_VENV / "bin" / "python"), "-c", code, str(sbom)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(sbom.read_text())
    sums = dict(reversed(l.split("  ", 1)) for l in (out / "SHA256SUMS").read_text().splitlines())
    files = {f["fileName"].removeprefix("./"): f for f in doc["files"]}
    assert set(files) == set(sums) - {sbom.name}
    for name, f in files.items():
        sha = {c["algorithm"]: c["checksumValue"] for c in f["checksums"]}["SHA256"]
        assert sha == sums[name], name
    packages = {p["name"]: p for p in doc["packages"]}
    assert packages["clockbench"]["versionInfo"] == version
    commit = subprocess.run(["git", "-C", str(out.parents[1]), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert packages["clockbench"]["sourceInfo"] == f"git commit {commit}"
    for deb in ("grub-pc-bin", "grub-efi-amd64-bin", "shim-signed", "gcc", "nasm", "xorriso"):
        installed = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", deb], capture_output=True, text=True).stdout
        assert packages[deb].get("versionInfo") == installed, deb
    epoch = int(subprocess.run(["git", "-C", str(out.parents[1]), "log", "-1", "--format=%ct"], capture_output=True, text=True).stdout)
    import datetime
    assert doc["creationInfo"]["created"] == datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_notes_name_the_version_commit_and_changes(release):
    out, version, _ = release
    notes = (out / "RELEASE-NOTES.md").read_text()
    commit = subprocess.run(["git", "-C", str(out.parents[1]), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    subject = subprocess.run(["git", "-C", str(out.parents[1]), "log", "-1", "--no-merges", "--format=%s"], capture_output=True,
                             text=True).stdout.strip()
    assert notes.startswith(f"# clockbench {version}\n")
    assert f"Commit {commit}" in notes
    assert subject in notes


def test_the_efi_programs_verify_against_the_release_certificate_only(release, key, tmp_path):
    out, version, _ = release
    other = release_key(tmp_path / "other")
    for name in (f"clockbench-{version}.efi", f"clockbench-{version}-grubx64.efi"):
        ok = subprocess.run(["sbverify", "--cert", str(out / "clockbench-release.crt"), str(out / name)],
                            capture_output=True, text=True)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        bad = subprocess.run(["sbverify", "--cert", str(other / secureboot.CERT_NAME), str(out / name)],
                             capture_output=True, text=True)
        assert bad.returncode != 0, f"{name} verified against a key that never signed it"
    assert (out / "clockbench-release.crt").read_bytes() == (key / secureboot.CERT_NAME).read_bytes()


def test_the_netboot_tarball_holds_the_tree_with_fixed_owners_and_dates(release):
    import tarfile

    out, version, _ = release
    with tarfile.open(out / f"clockbench-{version}-netboot.tar.gz") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    top = f"clockbench-{version}-netboot"
    assert names == sorted(names) and names[0] == top
    assert f"{top}/clockbench.elf" in names and f"{top}/boot/grub/x86_64-efi/core.efi" in names
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    assert len({m.mtime for m in members}) == 1


def test_the_bundle_is_released_with_the_version_and_runs(release, tmp_path):
    import tarfile

    out, version, _ = release
    with tarfile.open(out / f"clockbench-os-{version}-x86_64-linux.tar.gz") as tar:
        members = tar.getmembers()
        tar.extractall(tmp_path)
    top = f"clockbench-os-{version}-x86_64-linux"
    assert {m.name.split("/")[0] for m in members} == {top}
    assert {(m.uid, m.gid) for m in members} == {(0, 0)} and len({m.mtime for m in members}) == 1
    assert (tmp_path / top / "BUNDLE").read_text().splitlines()[0] == f"clockbench-os {version} x86_64-linux"
    r = subprocess.run([str(tmp_path / top / "clockbench-os"), "--quick", "--no-lang", "--current-only", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    (schema,) = [x for x in records.parse(r.stdout) if x.get("type") == "schema"]
    assert schema["build"] == version


# ---- the released image boots, and says its version ------------------------

def released(release, suffix: str) -> Path:
    out, version, _ = release
    return out / f"clockbench-{version}{suffix}"


def assert_version_everywhere(r: qemu.RunResult, version: str) -> None:
    explain = f"{' '.join(r.command)}\n{r.output[-3000:]}"
    assert r.status in (0, 1), explain
    assert f"clockbench {version}: time counters" in r.output, explain
    for kind in ("schema", "machine"):
        (record,) = [x for x in records.parse(r.output) if x.get("type") == kind]
        assert record["build"] == version, explain


@pytest.mark.parametrize("firmware", ["bios", "uefi"])
def test_the_released_iso_boots_and_names_its_version(release, firmware):
    out, version, _ = release
    r = qemu.run(qemu.QemuConfig(boot="iso", iso=released(release, ".iso"), firmware=firmware, accel="tcg", append=QUICK),
                 timeout=BOOT_S)
    assert_version_everywhere(r, version)


def test_the_released_usb_image_boots_under_bios_and_names_its_version(release):
    out, version, _ = release
    r = qemu.run(qemu.QemuConfig(boot="disk", disk=released(release, ".img"), firmware="bios", accel="tcg", append=QUICK),
                 timeout=BOOT_S)
    assert_version_everywhere(r, version)


@pytest.mark.parametrize("image", [".iso", ".img"])
def test_the_released_image_boots_under_secure_boot_with_the_release_certificate(release, key, tmp_path, image):
    out, version, _ = release
    r = subprocess.run([sys.executable, "-m", "virt.firmware.vars", "--help"], capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(PYDEPS)})
    assert r.returncode == 0, f"virt-firmware is not installed in {PYDEPS}: `make deps`"
    vars_path = secureboot.make_vars(tmp_path / "vars.fd", out / "clockbench-release.cer", mok=True, pydeps=PYDEPS)
    where = {"iso": released(release, image)} if image == ".iso" else {"disk": released(release, image)}
    r = qemu.run(qemu.QemuConfig(boot=image[1:].replace("img", "disk"), firmware="uefi-secboot", uefi_vars=vars_path,
                                 accel="tcg", append=QUICK, **where), timeout=BOOT_S)
    assert_version_everywhere(r, version)
    (machine,) = [x for x in records.parse(r.output) if x.get("type") == "machine"]
    assert machine["secure_boot"] == "on", r.output[-3000:]


def test_the_qr_payload_carries_the_version(release):
    """The summary screen's QR text, as the image builds it (b=VERSION), from
    the released Multiboot ELF booted directly."""
    out, version, _ = release
    r = qemu.run(qemu.QemuConfig(boot="direct", kernel=released(release, "-multiboot.elf"), firmware="bios", accel="tcg",
                                 append=QUICK), timeout=BOOT_S)
    assert_version_everywhere(r, version)
    (qr,) = [x for x in records.parse(r.output) if x.get("type") == "qr"]
    assert f";b={version};" in qr["payload"] + ";", qr


# ---- a rebuild, elsewhere, without the key ----------------------------------

TMPFS = Path("/dev/shm")
TMPFS_NEED = 512 << 20


def rebuild_check(clone: Path, release_dir: Path, umask: str = "077", env: dict | None = None,
                  faketime: str | None = None) -> subprocess.CompletedProcess:
    clock = f"faketime -f {faketime} " if faketime else ""
    base = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    return subprocess.run(["sh", "-c", f'umask {umask} && exec {clock}make --no-print-directory -C "$1" rebuild-check '
                           f'RELEASE="$2" RELEASE_VENV="$3"', "sh", str(clone), str(release_dir), str(RELEASE_VENV)],
                          capture_output=True, text=True, timeout=600, env={**base, **GO_CACHE, **(env or {})})


@pytest.fixture(scope="module")
def rebuilt(release, tmp_path_factory):
    """The release rebuilt by `make rebuild-check` from another clone, as
    unlike the release build as one machine allows: another folder, of
    another length and depth, on a tmpfs when there is room (another order of
    a folder's files than ext4's hashed one); umask 077 against 022; the
    wall clock 397 days on (faketime), TZ=Pacific/Chatham (+12:45, an offset
    no arithmetic gets right by accident) and LC_ALL=C.UTF-8; no private key.
    (clone, make's result)"""
    if not shutil.which("faketime"):
        pytest.fail("faketime is not installed (Debian package faketime; `make deps`)")
    out, _, _ = release
    parent = tmp_path_factory.mktemp("rebuild")
    if TMPFS.is_dir() and shutil.disk_usage(TMPFS).free > TMPFS_NEED:
        parent = Path(tempfile.mkdtemp(prefix="clockbench-rebuild-", dir=TMPFS))
    other = clone_of_head(parent / "a-second-folder-with-a-longer-name" / "and" / "cb", source=release[0].parents[1])
    try:
        yield other, rebuild_check(other, out, env={"TZ": "Pacific/Chatham", "LC_ALL": "C.UTF-8"}, faketime="+397d")
    finally:
        if str(parent).startswith(str(TMPFS)):
            shutil.rmtree(parent, ignore_errors=True)


def test_a_rebuild_elsewhere_without_the_key_is_the_release_bit_for_bit(release, rebuilt):
    out, version, _ = release
    other, r = rebuilt
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    files = sorted(p.name for p in out.iterdir())
    for name in files:
        assert re.search(rf"^  identical  {re.escape(name)}$", r.stdout, re.M), r.stdout[-3000:]
    assert f"all {len(files)} files are identical to the release, bit for bit" in r.stdout
    assert "the certificate is one release-certificate.sha256 publishes" in r.stderr, r.stderr
    assert not list((other / "build" / "rebuild-key").glob("*.key")), "a rebuild had a private key"
    # neither build's folder in any file (a path of one length in both would not show above)
    for folder in (out.parents[1], other):
        for name in files:
            if not name.endswith(".gz"):
                assert str(folder).encode() not in (out / name).read_bytes(), f"{name} holds the build folder {folder}"


def test_a_rebuild_names_each_downloaded_file_that_differs(release, rebuilt, tmp_path):
    """A download with one byte changed in its ISO and one in its signed
    kernel's code, against the rebuild: both named, status 1. (The
    rebuild's own programs stay right: the signature it reattaches covers
    what was built, not the changed download.)"""
    out, version, _ = release
    other, r = rebuilt
    assert r.returncode == 0, r.stdout[-3000:]
    bad = tmp_path / "download"
    shutil.copytree(out, bad)
    for name, at in ((f"clockbench-{version}.iso", 40000), (f"clockbench-{version}.efi", 0x400)):
        data = bytearray((bad / name).read_bytes())
        data[at] ^= 0xFF
        (bad / name).write_bytes(bytes(data))
    c = subprocess.run([str(RELEASE_VENV / "bin" / "python"), "-m", "clockbench.release.rebuild", "compare",
                        str(other / "build" / "rebuild"), str(bad)], capture_output=True, text=True,
                       env=tool_env())
    assert c.returncode == 1, c.stdout + c.stderr
    assert f"  DIFFERS    clockbench-{version}.iso" in c.stdout and f"  DIFFERS    clockbench-{version}.efi" in c.stdout
    assert f"  identical  clockbench-{version}.img" in c.stdout
    assert c.stdout.splitlines()[-1] == f"clockbench rebuild: 2 of {len(list(out.iterdir()))} files differ from the release"


def test_a_rebuild_of_another_commit_is_refused_in_one_line(release, tmp_path):
    out, _, _ = release
    other = clone_of_head(tmp_path / "cb", source=out.parents[1])
    git(other, "commit", "-q", "--allow-empty", "-m", "another commit")
    r = rebuild_check(other, out)
    said = [l for l in r.stderr.splitlines() if l.startswith("make rebuild-check: ")]
    assert r.returncode != 0 and len(said) == 1 and "git checkout" in said[0], r.stderr
    assert not (other / "build" / "release-work").exists()


def test_a_download_signed_by_a_certificate_the_checkout_does_not_publish_is_refused(release, tmp_path):
    """Certificate, signatures and notes swapped together pass every check
    a download can make of itself: the checkout's release-certificate.sha256
    is what tells. (The swap: another key's certificate in its place.)"""
    out, _, _ = release
    swapped = tmp_path / "download"
    shutil.copytree(out, swapped)
    shutil.copyfile(release_key(tmp_path / "other") / secureboot.CERT_NAME, swapped / "clockbench-release.crt")
    other = clone_of_head(tmp_path / "cb", source=out.parents[1])
    r = rebuild_check(other, swapped)
    said = [l for l in r.stderr.splitlines() if l.startswith("make rebuild-check: ")]
    assert r.returncode == 77 or "Error 77" in r.stderr, r.stderr
    assert len(said) == 1 and "is not a release certificate this checkout publishes" in said[0], r.stderr
    assert not (other / "build" / "release-work").exists()
