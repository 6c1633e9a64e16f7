"""`clockbench keys`, `clockbench sign` and the stick's Secure Boot checks
(tools/clockbench/release/secureboot.py): each bad input refused with one line and
its own exit status before anything is written; a good key signs a PE
image that sbverify accepts. Keys are made in tmp_path, never the user's."""

from __future__ import annotations

import datetime
import os
import re
import shlex
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from clockbench import errors
from clockbench.release import flash, secureboot
from clockbench.__main__ import main
from helpers.paths import EFI, TEST_ISO
from helpers.tool import not_installed


def need_tool(name: str) -> None:
    if not shutil.which(name):
        not_installed(f"{name} is missing under CI=true: `make deps` installs it", f"{name} is not installed (`make deps`)")


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("keys") / "secureboot"
    secureboot.make_key(d, common_name="clockbench test key")
    return d


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def a_pe(tmp_path: Path) -> Path:
    if EFI.is_file():
        return EFI
    # the smallest image sbsign takes is a real one: build/clockbench.efi (make efi)
    pytest.skip(f"{EFI} not built (`make efi`)")


def make_cert(tmp_path: Path, key_dir: Path, *, days=(-1, 365), eku=True, other_key=False) -> Path:
    """A certificate for key_dir's key (or a fresh key) with the given validity and usage."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key_path = key_dir / secureboot.KEY_NAME
    key = rsa.generate_private_key(65537, 2048) if other_key else serialization.load_pem_private_key(key_path.read_bytes(), None)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(now + datetime.timedelta(days=days[0])).not_valid_after(now + datetime.timedelta(days=days[1])))
    b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING if eku else ExtendedKeyUsageOID.SERVER_AUTH]), False)
    out = tmp_path / f"cert-{days[0]}-{days[1]}-{eku}-{other_key}.pem"
    out.write_bytes(b.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    return out


def test_a_new_key_is_private_and_never_printed(key_dir, capsys):
    key = key_dir / secureboot.KEY_NAME
    assert key.stat().st_mode & 0o777 == 0o600
    assert key_dir.stat().st_mode & 0o777 == 0o700
    assert (key_dir / secureboot.CERT_DER_NAME).read_bytes()[:1] == b"\x30"  # DER: a SEQUENCE
    code, out, err = cli(capsys, "keys", "--dir", str(key_dir))
    assert code == 0, err
    assert "SHA-256:" in out and "SHA-1:" in out and "expires:" in out and str(key) in out
    assert "PRIVATE KEY" not in out + err and "BEGIN" not in out + err
    info = secureboot.check_key(key, key_dir / secureboot.CERT_NAME)
    assert info.not_after > datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3000)


def test_keys_new_refuses_to_replace_a_key(key_dir, capsys):
    code, _, err = cli(capsys, "keys", "--new", "--dir", str(key_dir))
    assert code == errors.CANNOT_WRITE and "already exists" in err and len(err.strip().splitlines()) == 1


def test_the_hint_for_a_folder_with_no_key_works_as_printed(tmp_path, capsys):
    d = tmp_path / "no key here"
    code, _, err = cli(capsys, "keys", "--dir", str(d))
    assert code == errors.NO_INPUT, err
    hint = re.search(r"`clockbench (keys --new[^`]*)`", err).group(1)
    assert cli(capsys, *shlex.split(hint))[0] == 0, hint  # run as printed, it makes the key where it was asked for
    assert (d / secureboot.KEY_NAME).is_file()


def test_keys_ensure_makes_one_only_when_absent(tmp_path, capsys):
    d = tmp_path / "k"
    assert cli(capsys, "keys", "--ensure", "--quiet", "--dir", str(d))[0] == 0
    first = (d / secureboot.CERT_NAME).read_bytes()
    assert cli(capsys, "keys", "--ensure", "--quiet", "--dir", str(d))[0] == 0
    assert (d / secureboot.CERT_NAME).read_bytes() == first


def test_signing_with_a_good_key_verifies(key_dir, tmp_path, capsys):
    need_tool("sbsign")
    need_tool("sbverify")
    out = tmp_path / "signed.efi"
    code, text, err = cli(capsys, "sign", "--key-dir", str(key_dir), str(a_pe(tmp_path)), "-o", str(out))
    assert code == 0, err
    r = subprocess.run(["sbverify", "--cert", str(key_dir / secureboot.CERT_NAME), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # --key/--cert name a key the user already has (an organisation's in db)
    out2 = tmp_path / "signed2.efi"
    code, _, err = cli(capsys, "sign", "--key", str(key_dir / secureboot.KEY_NAME), "--cert",
                       str(key_dir / secureboot.CERT_DER_NAME), str(a_pe(tmp_path)), "-o", str(out2))
    assert code == 0, err


def refused(capsys, code_wanted: int, words: str, *argv: str, out: Path | None = None) -> None:
    code, _, err = cli(capsys, *argv)
    assert code == code_wanted, err
    assert len(err.strip().splitlines()) == 1 and words in err, err
    if out is not None:
        assert not out.exists() and not out.with_name(out.name + ".signing").exists()


def test_a_missing_key_is_missing_input(tmp_path, capsys):
    out = tmp_path / "o.efi"
    refused(capsys, errors.NO_INPUT, "does not exist", "sign", "--key-dir", str(tmp_path / "none"), str(EFI), "-o", str(out), out=out)


def test_an_unreadable_key_is_missing_input(key_dir, tmp_path, capsys):
    if os.geteuid() == 0:
        # root reads any file; a folder in the key's place is unreadable as a key to anyone
        bad = tmp_path / "k"
        bad.mkdir()
        (bad / secureboot.KEY_NAME).mkdir()
        shutil.copy(key_dir / secureboot.CERT_NAME, bad / secureboot.CERT_NAME)
        refused(capsys, errors.NO_INPUT, "not a file", "sign", "--key-dir", str(bad), str(EFI), "-o", str(tmp_path / "o.efi"))
    else:
        bad = tmp_path / "k"
        shutil.copytree(key_dir, bad)
        (bad / secureboot.KEY_NAME).chmod(0)
        refused(capsys, errors.NO_INPUT, "cannot read", "sign", "--key-dir", str(bad), str(EFI), "-o", str(tmp_path / "o.efi"))


def test_a_key_others_can_read_is_refused(key_dir, tmp_path, capsys):
    loose = tmp_path / "loose"
    shutil.copytree(key_dir, loose)
    (loose / secureboot.KEY_NAME).chmod(0o644)
    out = tmp_path / "o.efi"
    refused(capsys, errors.BAD_KEY, "can be read by others", "sign", "--key-dir", str(loose), str(EFI), "-o", str(out), out=out)


@pytest.mark.parametrize("kind, words", [("expired", "expired"), ("not_yet", "not valid before"),
                                         ("no_eku", "not for code signing"), ("other_key", "does not match")])
def test_unusable_certificates_are_refused(key_dir, tmp_path, capsys, kind, words):
    cert = {"expired": lambda: make_cert(tmp_path, key_dir, days=(-400, -1)),
            "not_yet": lambda: make_cert(tmp_path, key_dir, days=(10, 400)),
            "no_eku": lambda: make_cert(tmp_path, key_dir, eku=False),
            "other_key": lambda: make_cert(tmp_path, key_dir, other_key=True)}[kind]()
    out = tmp_path / "o.efi"
    refused(capsys, errors.BAD_KEY, words, "sign", "--key", str(key_dir / secureboot.KEY_NAME), "--cert", str(cert),
            str(EFI), "-o", str(out), out=out)


def test_signing_a_file_that_is_not_pe_is_bad_input(key_dir, tmp_path, capsys):
    elf = tmp_path / "clockbench.elf"
    elf.write_bytes(b"\x7fELF" + bytes(200))
    mz_only = tmp_path / "mz.bin"
    mz_only.write_bytes(b"MZ" + bytes(0x3A) + (0x80).to_bytes(4, "little") + bytes(200))
    for f in (elf, mz_only):
        out = tmp_path / "o.efi"
        refused(capsys, errors.BAD_INPUT, "not a PE image", "sign", "--key-dir", str(key_dir), str(f), "-o", str(out), out=out)


def test_shim_not_installed_is_a_missing_tool(key_dir, tmp_path):
    with pytest.raises(errors.MissingTool, match="shim-signed"):
        secureboot.make_esp(tmp_path / "efi.img", EFI, EFI, key_dir / secureboot.CERT_DER_NAME, shim_dir=tmp_path / "no-shim")
    assert not (tmp_path / "efi.img").exists()


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, image, device, progress=None):
        self.calls.append((image, device))
        return "0" * 64


def test_flash_refuses_an_iso_without_a_secure_boot_partition(tmp_path):
    need_tool("xorriso")
    need_tool("mcopy")
    need_tool("sbverify")
    iso = tmp_path / "clockbench.iso"
    iso.write_bytes(bytes(1 << 16))
    rec = Recorder()
    # a fake removable stick that passes every target check (tests/boot/test_flash.py's way)
    sysfs = tmp_path / "sys"
    d = sysfs / "block" / "sdz"
    (d / "device").mkdir(parents=True)
    (d / "holders").mkdir()
    (d / "size").write_text(str((16 << 30) // 512))
    (d / "removable").write_text("1")
    (sysfs / "dev" / "block").mkdir(parents=True)
    (sysfs / "dev" / "block" / "8:208").symlink_to(d)
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text("")
    blk = lambda path: types.SimpleNamespace(st_mode=0o60660, st_rdev=os.makedev(8, 208))  # noqa: E731
    args = types.SimpleNamespace(device="/dev/sdz", iso=str(iso), yes=True, force=False, check_secure_boot=True)
    with pytest.raises(errors.BadInput, match="no EFI system partition"):
        flash.main(args, sysfs=sysfs, proc=proc, dev_stat=blk, write=rec)
    assert rec.calls == []


def test_the_test_iso_passes_the_stick_check():
    if not TEST_ISO.is_file():
        pytest.skip(f"{TEST_ISO} not built")
    need_tool("xorriso")
    need_tool("sbverify")
    assert "clockbench" in secureboot.check_iso(TEST_ISO)


def test_the_efi_program_has_sbat_and_no_writable_code():
    """build/clockbench.efi (make efi): a PE32+ EFI application, an .sbat
    section with the sbat and clockbench lines, no section both writable and
    executable, and the kernel's flat image as its payload."""
    if not EFI.is_file():
        pytest.skip(f"{EFI} not built (`make efi`)")
    need_tool("objdump")
    head = subprocess.run(["objdump", "-h", str(EFI)], capture_output=True, text=True, check=True).stdout
    assert "pei-x86-64" in head
    sections = {}
    lines = head.splitlines()
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) >= 7 and parts[0].isdigit():
            sections[parts[1]] = lines[i + 1]
    assert {".text", ".sbat", ".payload", ".reloc"} <= set(sections)
    for name, flags in sections.items():
        assert not ("CODE" in flags and "READONLY" not in flags), f"{name} is writable and executable: {flags}"
    dump = subprocess.run(["objdump", "-s", "-j", ".sbat", str(EFI)], capture_output=True, text=True, check=True).stdout
    text = "".join(l[43:].strip() for l in dump.splitlines() if l.startswith(" "))
    assert "sbat,1,SBAT Version" in text and "clockbench,1,clockbench" in text
    opt = subprocess.run(["objdump", "-p", str(EFI)], capture_output=True, text=True, check=True).stdout
    assert "(EFI application)" in opt and "PE32+" in opt
