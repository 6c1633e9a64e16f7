"""A rebuild reattaches the release's own signature (tools/clockbench/release/rebuild.py):
to the program it signed, the bytes come out as sbsign made them; to a
program one byte different, it is refused by name. Real sbsign, sbattach and
sbverify on the image's own EFI program."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.paths import EFI
from clockbench import errors
from clockbench.release import rebuild, reproducible, secureboot


@pytest.fixture
def signed(tmp_path):
    if not EFI.is_file():
        pytest.fail(f"{EFI} is missing: `make efi`")
    for tool in ("sbsign", "sbattach", "sbverify"):
        assert shutil.which(tool), f"{tool} is missing: `make deps` installs sbsigntool"
    key = tmp_path / "key"
    secureboot.make_key(key, common_name="rebuild test")
    release = tmp_path / "release"
    release.mkdir()
    k, c, _ = secureboot.paths(key)
    secureboot.sign(k, c, EFI, release / "clockbench-1.0.efi")
    return release, c


def test_the_released_signature_on_the_same_program_gives_the_released_bytes(signed, tmp_path, monkeypatch):
    release, cert = signed
    monkeypatch.setenv(rebuild.SIGNATURES_FROM_ENV, str(release))
    out = tmp_path / "clockbench.efi"
    assert secureboot.sign(Path("/nonexistent.key"), cert, EFI, out) is None  # no key read: none is there
    assert out.read_bytes() == (release / "clockbench-1.0.efi").read_bytes()


def test_a_program_one_byte_different_is_refused_by_name(signed, tmp_path, monkeypatch):
    release, cert = signed
    changed = tmp_path / "clockbench.efi"
    data = bytearray(EFI.read_bytes())
    data[0x400] ^= 1
    changed.write_bytes(bytes(data))
    monkeypatch.setenv(rebuild.SIGNATURES_FROM_ENV, str(release))
    with pytest.raises(errors.BadInput, match=r"the rebuilt .*clockbench\.efi differs from what the release signed: none of its 1 "):
        secureboot.sign(Path("/nonexistent.key"), cert, changed, tmp_path / "out.efi")
    assert not (tmp_path / "out.efi").exists() and not list(tmp_path.glob("*.attaching"))


def test_a_release_without_a_signed_program_is_named(tmp_path):
    with pytest.raises(errors.NoInput, match=r"holds no signed EFI program"):
        reproducible.released_programs(tmp_path, tmp_path)


def test_the_netboot_tarballs_programs_are_candidates(signed, tmp_path, monkeypatch):
    """The network GRUB is signed only inside the netboot tarball: found there."""
    import tarfile

    release, cert = signed
    (release / "clockbench-1.0.efi").rename(tmp_path / "kernel.efi")
    with tarfile.open(release / "clockbench-1.0-netboot.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "kernel.efi", arcname="clockbench-1.0-netboot/efi/clockbench.efi")
    monkeypatch.setenv(rebuild.SIGNATURES_FROM_ENV, str(release))
    out = tmp_path / "out.efi"
    secureboot.sign(Path("/nonexistent.key"), cert, EFI, out)
    assert out.read_bytes() == (tmp_path / "kernel.efi").read_bytes()
