"""The pieces that make the build reproducible (docs/architecture.md,
"Reproducible builds"), each on its own and cheap: NASM objects made in two
folders come out identical once scripts/dwarf_comp_dir.py has run, and stay
linkable (their relocations kept); a signature's time is SOURCE_DATE_EPOCH's
whatever the clock, and still verifies; bad input is refused with one line.
tests/release/test_release.py checks the whole build: a release and its
keyless rebuild elsewhere, compared file by file."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clockbench import errors
from clockbench.release import reproducible, secureboot
from helpers.paths import EFI, ROOT

SCRIPT = ROOT / "scripts" / "dwarf_comp_dir.py"
EPOCH = 1795694292  # 2026-11-26 11:58:12 UTC


def need(tool: str) -> None:
    if not shutil.which(tool):
        pytest.fail(f"{tool} is not installed: `make deps` installs it")


def assemble(folder: Path) -> Path:
    """boot/entry.asm as the Makefile assembles it, from the top of a copy of the tree in folder."""
    (folder / "boot").mkdir(parents=True)
    for f in (ROOT / "boot").glob("*.inc"):
        shutil.copy(f, folder / "boot")
    shutil.copy(ROOT / "boot" / "entry.asm", folder / "boot")
    subprocess.run(["nasm", "-f", "elf64", "-g", "-I", "boot/", "-o", "entry.o", "boot/entry.asm"], cwd=folder, check=True)
    return folder / "entry.o"


def readelf(*args: str) -> str:
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def test_nasm_objects_from_two_folders_are_identical_and_keep_their_relocations(tmp_path):
    need("nasm")
    a = assemble(tmp_path / "a")
    b = assemble(tmp_path / "a-longer-folder" / "b")
    assert a.read_bytes() != b.read_bytes(), "NASM no longer writes its folder: the script may have become needless"
    before = readelf("-r", str(a))
    for o in (a, b):
        r = subprocess.run([sys.executable, str(SCRIPT), str(o)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert a.read_bytes() == b.read_bytes()
    assert str(tmp_path).encode() not in a.read_bytes()
    info = readelf("--debug-dump=info", str(a))
    assert "DW_AT_comp_dir    : .\n" in info and "DW_AT_name        : boot/entry.asm" in info
    # the relocations of .debug_info are all there, those past the string moved by its change in length
    rel = lambda text: [line.split()[0] for line in text.split("Relocation section '.rela.debug_info'")[1].split("\n\n")[0].splitlines()[2:]]  # noqa: E731
    old, new = rel(before), rel(readelf("-r", str(a)))
    assert len(old) == len(new) >= 4 and old[:4] == new[:4]
    shrink = len(str(tmp_path / "a" / "boot") + "/") - len(".")
    assert [int(x, 16) for x in new[4:]] == [int(x, 16) - shrink for x in old[4:]]
    # a second run changes nothing
    same = a.read_bytes()
    subprocess.run([sys.executable, str(SCRIPT), str(a)], check=True)
    assert a.read_bytes() == same


def test_dwarf_comp_dir_refuses_what_is_not_an_elf_object(tmp_path):
    junk = tmp_path / "x.o"
    junk.write_bytes(b"not an object\n")
    r = subprocess.run([sys.executable, str(SCRIPT), str(junk)], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "not a little-endian ELF64 object" in r.stderr
    assert junk.read_bytes() == b"not an object\n"


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("keys") / "secureboot"
    secureboot.make_key(d, common_name="clockbench test key")
    return d


def sign(key_dir: Path, out: Path, clock: str | None, epoch: int | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env["PYTHONPATH"] = str(ROOT / "tools")
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = str(epoch)
    cmd = [sys.executable, "-m", "clockbench", "sign", "--key-dir", str(key_dir), str(EFI), "-o", str(out)]
    return subprocess.run((["faketime", "-f", clock] if clock else []) + cmd, env=env, capture_output=True, text=True)


def signing_time(path: Path) -> bytes:
    data = path.read_bytes()
    at = data.index(bytes.fromhex("06092a864886f70d010905"))  # the signingTime attribute's OID
    return data[at + 11 + 4:at + 11 + 4 + 13]  # SET, UTCTime headers, then YYMMDDhhmmssZ


def test_the_signing_time_is_source_date_epoch_whatever_the_clock(key_dir, tmp_path):
    need("faketime")
    need("sbsign")
    if not EFI.is_file():
        pytest.fail(f"{EFI} is missing: `make efi`")
    outs = [tmp_path / "now.efi", tmp_path / "later.efi"]
    for out, clock in zip(outs, (None, "+400d")):
        r = sign(key_dir, out, clock, EPOCH)
        assert r.returncode == 0, r.stderr
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert signing_time(outs[0]) == b"261126115812Z"
    cert = tmp_path / "cert.pem"
    shutil.copy(key_dir / secureboot.CERT_NAME, cert)
    r = subprocess.run(["sbverify", "--cert", str(cert), str(outs[0])], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # the PE checksum was made again over the changed signature
    data = outs[0].read_bytes()
    opt = int.from_bytes(data[0x3C:0x40], "little") + 24
    assert int.from_bytes(data[opt + 64:opt + 68], "little") == reproducible._pe_checksum(data, opt + 64)
    # without SOURCE_DATE_EPOCH the clock's time stays, as sbsign wrote it
    r = sign(key_dir, tmp_path / "clock.efi", None, None)
    assert r.returncode == 0, r.stderr
    now = datetime.datetime.now(datetime.timezone.utc)
    assert signing_time(tmp_path / "clock.efi")[:6] == now.strftime("%y%m%d").encode()


def test_bad_input_to_the_signing_time(key_dir, tmp_path, monkeypatch):
    if not EFI.is_file():
        pytest.fail(f"{EFI} is missing: `make efi`")
    with pytest.raises(errors.BadInput, match="no signature to date"):
        reproducible.pin_signing_time(EFI, key_dir / secureboot.KEY_NAME, EPOCH)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(errors.BadInput, match="SOURCE_DATE_EPOCH='yesterday' is not a time"):
        reproducible.source_date_epoch()
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert reproducible.source_date_epoch() is None


def test_make_refuses_a_source_date_epoch_that_is_not_a_time():
    env = {**os.environ, "SOURCE_DATE_EPOCH": "2026-11-26"}
    r = subprocess.run(["make", "-n", "kernel"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "SOURCE_DATE_EPOCH='2026-11-26' is not a time in seconds since 1970" in r.stderr
