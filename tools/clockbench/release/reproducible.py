"""Reproducible builds (docs/architecture.md, "Reproducible builds"): the
build's date, SOURCE_DATE_EPOCH, and the Authenticode signature dated from it
instead of the clock.

sbsign (sbsigntool 0.9.4, through OpenSSL's PKCS7_dataFinal) puts the
signing time in the signature's authenticated attributes, from the clock.
With SOURCE_DATE_EPOCH set (the Makefile sets it to the commit's date) that
time becomes SOURCE_DATE_EPOCH: the attribute is rewritten in place (the
same DER length), the attributes signed again with the same key (RSA
PKCS#1 v1.5 is deterministic) and the PE checksum recomputed. Firmware and
shim do not read the attribute (signingTime: RFC 2985 5.3.3; a time anyone
can check would be a countersignature, which sbsign does not make). The
attributes are signed as a DER SET OF (RFC 2315 9.3); the image's hash
(Authenticode, "Windows Authenticode Portable Executable Signature Format"
1.0) leaves out the checksum and the signature, so neither changes it.
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from clockbench import errors

_OID_SIGNING_TIME = bytes.fromhex("06092a864886f70d010905")  # 1.2.840.113549.1.9.5
_OID_SHA256 = bytes.fromhex("0609608648016503040201")        # 2.16.840.1.101.3.4.2.1


def source_date_epoch() -> int | None:
    v = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not v:
        return None
    if not v.isdigit():
        raise errors.BadInput(f"SOURCE_DATE_EPOCH={v!r} is not a time in seconds since 1970")
    return int(v)


def _der(buf: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start, end) of the DER element at pos: its contents are buf[start:end]."""
    tag, n = buf[pos], buf[pos + 1]
    pos += 2
    if n & 0x80:
        k = n & 0x7F
        n, pos = int.from_bytes(buf[pos:pos + k], "big"), pos + k
    if pos + n > len(buf):
        raise ValueError("a DER element runs past its container")
    return tag, pos, pos + n


def _children(buf: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, header start, contents start, end) of each element in buf[start:end]."""
    out = []
    while start < end:
        tag, s, e = _der(buf, start)
        out.append((tag, start, s, e))
        start = e
    return out


def _pe_checksum(data: bytes | bytearray, at: int) -> int:
    """The PE optional header's CheckSum (its own 4 bytes counted as zero)."""
    import array

    words = array.array("H", bytes(data[:at]) + b"\0\0\0\0" + bytes(data[at + 4:]) + b"\0" * (len(data) & 1))
    total = 0
    for w in words:
        total += w
        total = (total & 0xFFFF) + (total >> 16)
    return (total + len(data)) & 0xFFFFFFFF


def pin_signing_time(path: Path, key_path: Path, epoch: int) -> None:
    """The signing time of the signed PE image at path set to epoch, in place."""
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
    except ImportError:
        raise errors.MissingTool("the Python 'cryptography' package is not installed (Debian: python3-cryptography; `make deps`)") from None

    data = bytearray(path.read_bytes())
    pe = int.from_bytes(data[0x3C:0x40], "little")
    opt = pe + 24
    if data[pe:pe + 4] != b"PE\0\0" or int.from_bytes(data[opt:opt + 2], "little") != 0x20B:
        raise errors.BadInput(f"{path}: not a PE32+ image")
    cert_off, cert_size = (int.from_bytes(data[opt + 144 + i:opt + 148 + i], "little") for i in (0, 4))
    if cert_size < 8 or cert_off + cert_size > len(data):
        raise errors.BadInput(f"{path}: no signature to date")
    try:
        p7 = cert_off + 8  # WIN_CERTIFICATE: dwLength, wRevision, wCertificateType, then PKCS#7
        _, s, e = _der(data, p7)                                    # ContentInfo
        _, s, e = _der(data, _children(data, s, e)[1][2])           # [0] EXPLICIT SignedData
        signer_infos = [c for c in _children(data, s, e) if c[0] == 0x31][-1]
        signer = _children(data, signer_infos[2], signer_infos[3])
        if len(signer) != 1:
            raise ValueError(f"{len(signer)} signers")
        fields = _children(data, signer[0][2], signer[0][3])
        tags = [f[0] for f in fields]
        attrs = fields[tags.index(0xA0)]
        digest_alg = fields[tags.index(0xA0) - 1]
        sig = fields[tags.index(0xA0) + 2]
        if sig[0] != 0x04 or bytes(data[digest_alg[2]:digest_alg[2] + len(_OID_SHA256)]) != _OID_SHA256:
            raise ValueError("not an RSA-SHA256 signer")
        when = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
        for _, _, s, e in _children(data, attrs[2], attrs[3]):
            oid_end = s + len(_OID_SIGNING_TIME)
            if bytes(data[s:oid_end]) != _OID_SIGNING_TIME:
                continue
            tag, vs, ve = _der(data, _children(data, oid_end, e)[0][2])  # SET { Time }
            text = (when.strftime("%y%m%d%H%M%SZ") if tag == 0x17 else when.strftime("%Y%m%d%H%M%SZ")).encode()
            if tag not in (0x17, 0x18) or len(text) != ve - vs or (tag == 0x17 and not 1950 <= when.year < 2050):
                raise ValueError("a signing time that cannot be rewritten in place")
            data[vs:ve] = text
        # the attributes are signed as a SET OF (RFC 2315 9.3), not as [0]
        signed = b"\x31" + bytes(data[attrs[1] + 1:attrs[3]])
    except (ValueError, IndexError) as exc:
        raise errors.BadInput(f"{path}: an Authenticode signature this tool cannot read ({exc})") from None
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    new = key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
    if len(new) != sig[3] - sig[2]:
        raise errors.BadInput(f"{path}: the signature's length changed")
    data[sig[2]:sig[3]] = new
    data[opt + 64:opt + 68] = _pe_checksum(data, opt + 64).to_bytes(4, "little")
    path.write_bytes(data)


# ---- a release rebuilt without its key (rebuild.py, `make rebuild-check`) ----
# Every place the build signs (secureboot.sign) reattaches the release's own
# signature instead when this names a release folder: rebuild.py says why
# that is exact.
SIGNATURES_FROM_ENV = "CLOCKBENCH_SIGNATURES_FROM"


def released_programs(release_dir: Path, scratch: Path) -> list[tuple[str, Path]]:
    """Every EFI program a release holds, by the name a person sees: the
    kernel and GRUB beside the images (clockbench-V.efi, -grubx64.efi) and
    those in the netboot tarball (the network GRUB, the kernel), the latter
    extracted into scratch. Shim and MokManager are among them; their
    signatures are Microsoft's and never verify with the release's
    certificate, so they are never taken."""
    import tarfile

    found = [(p.name, p) for p in sorted(release_dir.glob("*.efi"))]
    for tarball in sorted(release_dir.glob("*-netboot.tar.gz")):
        try:
            with tarfile.open(tarball) as tar:
                for m in (m for m in tar.getmembers() if m.isfile() and m.name.endswith(".efi")):
                    dst = scratch / f"{len(found)}-{Path(m.name).name}"  # numbered across every tarball
                    with tar.extractfile(m) as f:
                        dst.write_bytes(f.read())
                    found.append((f"{tarball.name}:{m.name}", dst))
        except (tarfile.TarError, OSError) as e:
            raise errors.BadInput(f"{tarball}: not a readable tarball ({e})") from None
    if not found:
        raise errors.NoInput(f"{release_dir} holds no signed EFI program (clockbench-VERSION.efi)")
    return found


def _attach(signed: Path, src: Path, out: Path, cert: Path, scratch: Path) -> bool:
    """signed's signature on a copy of src, at out, if it verifies there."""
    sig = scratch / "signature.p7"
    sig.unlink(missing_ok=True)
    if subprocess.run(["sbattach", "--detach", str(sig), str(signed)], capture_output=True).returncode:
        return False  # unsigned
    shutil.copyfile(src, out)
    if subprocess.run(["sbattach", "--attach", str(sig), str(out)], capture_output=True).returncode:
        return False
    return subprocess.run(["sbverify", "--cert", str(cert), str(out)], capture_output=True).returncode == 0


def attach_released_signature(release_dir: Path, cert: Path, src: Path, out: Path) -> None:
    """src signed with the release's own signature of it, into out: the one
    among the release's signed programs whose signature verifies on src
    (a signature covers the program's hash, so only the program it signed
    matches); refused, naming src, when none does."""
    for tool in ("sbattach", "sbverify"):
        if not shutil.which(tool):
            raise errors.MissingTool(f"{tool} is not installed (Debian package sbsigntool; `make deps`)")
    tmp = out.with_name(out.name + ".attaching")
    with tempfile.TemporaryDirectory() as d:
        programs = released_programs(release_dir, Path(d))
        for name, signed in programs:
            if _attach(signed, src, tmp, cert, Path(d)):
                tmp.replace(out)
                return None
    tmp.unlink(missing_ok=True)
    raise errors.BadInput(f"the rebuilt {src} differs from what the release signed: none of its {len(programs)} signed "
                          f"programs' signatures verifies on it")
