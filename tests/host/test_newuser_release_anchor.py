"""The release's trust anchor means what the docs say (issue 39, point 9):
`make release` and `make rebuild-check` refuse a certificate that
release-certificate.sha256 does not list, also while it lists none (as
before the first release), with one line saying how to go on; UNLISTED_CERT=1
(--accept-unlisted-certificate) accepts one and says the check was against
the download only. The release tests (tests/release) cover the listed case
end to end; here the anchor itself, on a checkout's file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clockbench import errors
from clockbench.release import release, secureboot

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("key")
    secureboot.make_key(d, common_name="clockbench release key (anchor test)")
    return d / secureboot.CERT_NAME


def checkout(tmp_path, *fingerprints: str) -> Path:
    text = (ROOT / release.ANCHOR).read_text() + "".join(f"{fp}  a release key\n" for fp in fingerprints)
    (tmp_path / release.ANCHOR).write_text(text)
    return tmp_path


def test_the_committed_anchor_says_what_an_empty_list_means():
    if not release.published_fingerprints(ROOT):
        assert "refuse every certificate" in (ROOT / release.ANCHOR).read_text()


def test_an_empty_list_refuses_by_default(cert, tmp_path):
    with pytest.raises(errors.BadKey) as e:
        release.anchored(cert, "the release's certificate", checkout(tmp_path))
    assert e.value.code == 77
    assert re.search(r"lists no release certificate yet, so the release's certificate \(SHA-256 [0-9A-F]{16}\.\.\.\) cannot "
                     r"be tied to the project: list its fingerprint there and commit it, or UNLISTED_CERT=1", str(e.value))


def test_unlisted_certificate_accepted_only_when_asked(cert, tmp_path):
    said = release.anchored(cert, "the release's certificate", checkout(tmp_path), accept_unlisted=True)
    assert said.startswith("UNLISTED_CERT=1: the certificate") and "(it lists none)" in said
    assert "checked against the download only" in said
    other = checkout(tmp_path, "AB" * 32)
    with pytest.raises(errors.BadKey, match="is not a release certificate this checkout publishes"):
        release.anchored(cert, "the release's certificate", other)
    assert "download only" in release.anchored(cert, "x", other, accept_unlisted=True)


def test_a_listed_certificate_passes(cert, tmp_path):
    fp = release.cert_info(cert).fingerprint_sha256
    assert release.anchored(cert, "x", checkout(tmp_path, fp)) == "the certificate is one release-certificate.sha256 publishes"


def test_the_makefile_passes_unlisted_cert_to_both_commands():
    make = (ROOT / "Makefile").read_text()
    assert "UNLISTED_FLAG = $(if $(filter 1,$(UNLISTED_CERT)),--accept-unlisted-certificate)" in make
    assert make.count("$(UNLISTED_FLAG)") == 2


def test_the_docs_name_the_package_and_no_placeholder_address():
    doc = (ROOT / "docs" / "real-hardware.md").read_text()
    assert "https://.../" not in doc and "sbsigntool" in doc
