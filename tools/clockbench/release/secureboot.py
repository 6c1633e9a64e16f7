"""The user's Secure Boot key, signing, and the stick's EFI system partition
(`clockbench keys`, `clockbench sign`, the Makefile's ISO; docs/architecture.md,
docs/secure-boot.md).

The key is made on the user's machine at the first build that needs it: RSA
2048, a self-signed certificate for code signing (the extended key usage shim
accepts), valid ten years. The private key stays in KEY_DIR (mode 0600, the
folder 0700), outside the repository; it is never copied to the stick and
never printed. Only the certificate goes on the stick, in DER form, for
MokManager's "Enroll key from disk". Tests and a fresh CI machine use a key
made in build/ (the Makefile's TEST_KEY_DIR).

Every refusal is a ToolError with its own exit status (errors.py), raised
before anything is written: a missing or unreadable key (66), a key with
loose permissions, an expired or not-for-code-signing certificate or one
that does not match the key (77), shim or sbsign not installed (69), a file
to sign that is not a PE image (65).
"""

from __future__ import annotations

import datetime
import os
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from clockbench import errors
from clockbench.release import reproducible

KEY_DIR = Path.home() / ".config" / "clockbench" / "secureboot"
KEY_NAME = "clockbench.key"  # PEM, the private key: mode 0600
CERT_NAME = "clockbench.crt"  # PEM, the certificate sbsign takes
CERT_DER_NAME = "clockbench.cer"  # DER, the certificate MokManager enrols
KEY_BITS = 2048
VALID_DAYS = 3650
# Debian's shim-signed: Microsoft-signed shim and MokManager
SHIM_DIR = Path("/usr/lib/shim")
SHIM = "shimx64.efi.signed"
MOKMANAGER = "mmx64.efi.signed"


@dataclass
class KeyInfo:
    key: Path
    cert: Path
    cert_der: Path
    subject: str
    fingerprint_sha256: str
    not_after: datetime.datetime
    fingerprint_sha1: str = ""  # what MokManager's "View key" shows

    def describe(self) -> str:
        left = (self.not_after - datetime.datetime.now(datetime.timezone.utc)).days
        soon = f" (in {left} days: move this key away, `clockbench keys --new`, rebuild and enrol the new certificate)" if left < 90 else ""
        return (f"key:         {self.key} (private: never copied, never printed)\n"
                f"certificate: {self.cert} (PEM), {self.cert_der} (DER, for MokManager)\n"
                f"subject:     {self.subject}\n"
                f"SHA-256:     {self.fingerprint_sha256}\n"
                f"SHA-1:       {self.fingerprint_sha1} (MokManager shows this one)\n"
                f"expires:     {self.not_after:%Y-%m-%d}{soon}")


def _crypto():
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError:
        raise errors.MissingTool("the Python 'cryptography' package is not installed (Debian: python3-cryptography; `make deps`)") from None
    return x509, hashes, serialization, rsa


def paths(key_dir: Path) -> tuple[Path, Path, Path]:
    return key_dir / KEY_NAME, key_dir / CERT_NAME, key_dir / CERT_DER_NAME


def make_key(key_dir: Path, common_name: str | None = None) -> KeyInfo:
    """A new key and certificate in key_dir (refused if one is there)."""
    x509, hashes, serialization, rsa = _crypto()
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key_path, cert_path, der_path = paths(key_dir)
    if key_path.exists():
        raise errors.CannotWrite(f"{key_path} already exists: remove it first to make a new key (the old one may be enrolled)")
    try:
        key_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(key_dir, 0o700)
    except OSError as e:
        raise errors.CannotWrite(f"cannot make {key_dir}: {e.strerror or e}") from None
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    cn = common_name or f"clockbench Secure Boot key ({os.uname().nodename})"
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        der_path.write_bytes(cert.public_bytes(serialization.Encoding.DER))
    except OSError as e:
        raise errors.CannotWrite(f"cannot write the key in {key_dir}: {e.strerror or e}") from None
    return check_key(key_path, cert_path)


def check_key(key_path: Path, cert_path: Path, now: datetime.datetime | None = None) -> KeyInfo:
    """Everything that would make a signature useless, refused before signing."""
    x509, hashes, serialization, rsa = _crypto()

    for p, what in ((key_path, "key"), (cert_path, "certificate")):
        if not p.exists():
            where = "" if p.parent == KEY_DIR else f" --dir {shlex.quote(str(p.parent))}"
            raise errors.NoInput(f"the signing {what} {p} does not exist (`clockbench keys --new{where}` makes one)")
        if not p.is_file():
            raise errors.NoInput(f"the signing {what} {p} is not a file")
    mode = key_path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise errors.BadKey(f"the key {key_path} can be read by others (mode {stat.S_IMODE(mode):04o}): "
                            f"`chmod 600 {key_path}`, and consider it exposed")
    try:
        key_bytes = key_path.read_bytes()
        cert_bytes = cert_path.read_bytes()
    except OSError as e:
        raise errors.NoInput(f"cannot read {e.filename}: {e.strerror}") from None
    try:
        key = serialization.load_pem_private_key(key_bytes, password=None)
    except (ValueError, TypeError) as e:
        raise errors.BadKey(f"{key_path} is not an unencrypted PEM private key ({str(e).splitlines()[0][:80]})") from None
    try:
        cert = x509.load_pem_x509_certificate(cert_bytes) if b"-----BEGIN" in cert_bytes else x509.load_der_x509_certificate(cert_bytes)
    except ValueError as e:
        raise errors.BadKey(f"{cert_path} is not an X.509 certificate ({str(e).splitlines()[0][:80]})") from None
    if not isinstance(key, rsa.RSAPrivateKey) or key.key_size < KEY_BITS:
        raise errors.BadKey(f"{key_path} is not an RSA key of {KEY_BITS} bits or more (shim verifies RSA-2048 Authenticode)")
    pub = serialization.PublicFormat.SubjectPublicKeyInfo
    if cert.public_key().public_bytes(serialization.Encoding.DER, pub) != key.public_key().public_bytes(serialization.Encoding.DER, pub):
        raise errors.BadKey(f"the certificate {cert_path} does not match the key {key_path}")
    check_cert_use(cert, cert_path, now)
    from cryptography.hazmat.primitives import serialization as ser
    der = cert.public_bytes(ser.Encoding.DER)
    fps = []
    for algo in (hashes.SHA256(), hashes.SHA1()):
        digest = hashes.Hash(algo)
        digest.update(der)
        fps.append(digest.finalize().hex(":").upper())
    return KeyInfo(key_path, cert_path, cert_path.with_suffix(".cer"), cert.subject.rfc4514_string(), fps[0], cert_not_after(cert), fps[1])


def cert_not_after(cert) -> datetime.datetime:
    # cryptography 42 added the *_utc properties; Debian 12 has 38
    return getattr(cert, "not_valid_after_utc", None) or cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)


def check_cert_use(cert, cert_path, now: datetime.datetime | None = None) -> None:
    """Valid now and for code signing, or a BadKey saying why."""
    x509, _, _, _ = _crypto()
    from cryptography.x509.oid import ExtendedKeyUsageOID

    now = now or datetime.datetime.now(datetime.timezone.utc)
    not_after = cert_not_after(cert)
    not_before = getattr(cert, "not_valid_before_utc", None) or cert.not_valid_before.replace(tzinfo=datetime.timezone.utc)
    if now > not_after:
        raise errors.BadKey(f"the certificate {cert_path} expired on {not_after:%Y-%m-%d}")
    if now < not_before:
        raise errors.BadKey(f"the certificate {cert_path} is not valid before {not_before:%Y-%m-%d}")
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        eku = None
    if eku is None or ExtendedKeyUsageOID.CODE_SIGNING not in eku:
        raise errors.BadKey(f"the certificate {cert_path} is not for code signing (no codeSigning extended key usage)")


def ensure_key(key_dir: Path) -> KeyInfo:
    """The key in key_dir, made if there is none (the first build)."""
    key_path, cert_path, der_path = paths(key_dir)
    if not key_path.exists() and not cert_path.exists():
        info = make_key(key_dir)
        print(f"clockbench keys: made a new Secure Boot key in {key_dir} (enrol {der_path.name} once per machine)", file=sys.stderr)
        return info
    info = check_key(key_path, cert_path)
    if not der_path.exists():
        write_der(cert_path, der_path)
    return info


def write_der(cert_path: Path, der_path: Path) -> None:
    x509, _, serialization, _ = _crypto()
    data = cert_path.read_bytes()
    cert = x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)
    der_path.write_bytes(cert.public_bytes(serialization.Encoding.DER))


def check_pe(path: Path) -> None:
    """A PE/COFF image: "MZ", then "PE\\0\\0" where e_lfanew points (PE/COFF 2)."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        raise errors.NoInput(f"{path} does not exist") from None
    except OSError as e:
        raise errors.NoInput(f"cannot read {path}: {e.strerror}") from None
    if len(head) < 0x40 or head[:2] != b"MZ":
        raise errors.BadInput(f"{path} is not a PE image (no MZ header): only EFI programs can be signed")
    off = int.from_bytes(head[0x3C:0x40], "little")
    if off + 4 > len(head) or head[off:off + 4] != b"PE\0\0":
        raise errors.BadInput(f"{path} is not a PE image (no PE signature at offset {off:#x})")


def check_signer(key_path: Path, cert_path: Path) -> KeyInfo | None:
    """What sign() will need, checked before anything is written: the key,
    or in a rebuild of a release (reproducible.SIGNATURES_FROM_ENV) only the
    release's certificate."""
    if os.environ.get(reproducible.SIGNATURES_FROM_ENV):
        if not cert_path.is_file():
            raise errors.NoInput(f"the release's certificate {cert_path} does not exist")
        return None
    return check_key(key_path, cert_path)


def sign(key_path: Path, cert_path: Path, src: Path, out: Path) -> KeyInfo:
    """sbsign src into out (never in place when out is src: a temporary, then a rename).
    In a rebuild of a release (`make rebuild-check`) the release's own
    signature of src is attached instead: rebuild.py says why that is exact."""
    if os.environ.get(reproducible.SIGNATURES_FROM_ENV):
        return reproducible.attach_released_signature(Path(os.environ[reproducible.SIGNATURES_FROM_ENV]), cert_path, src, out)
    info = check_key(key_path, cert_path)
    check_pe(src)
    if not shutil.which("sbsign"):
        raise errors.MissingTool("sbsign is not installed (Debian package sbsigntool; `make deps`)")
    tmp = out.with_name(out.name + ".signing")
    pem_cert = cert_path
    if b"-----BEGIN" not in cert_path.read_bytes():  # sbsign takes PEM only
        pem_cert = out.with_name(out.name + ".cert.pem")
        x509, _, serialization, _ = _crypto()
        pem_cert.write_bytes(x509.load_der_x509_certificate(cert_path.read_bytes()).public_bytes(serialization.Encoding.PEM))
    try:
        r = subprocess.run(["sbsign", "--key", str(key_path), "--cert", str(pem_cert), "--output", str(tmp), str(src)],
                           capture_output=True, text=True)
    finally:
        if pem_cert != cert_path:
            pem_cert.unlink(missing_ok=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        why = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise errors.BadInput(f"sbsign refused {src}: {why}")
    epoch = reproducible.source_date_epoch()
    if epoch is not None:  # the signature's time: the commit's, not the clock's
        try:
            reproducible.pin_signing_time(tmp, key_path, epoch)
        except Exception:
            tmp.unlink(missing_ok=True)
            raise
    os.replace(tmp, out)
    return info


def shim_files(shim_dir: Path = SHIM_DIR) -> tuple[Path, Path]:
    shim, mm = shim_dir / SHIM, shim_dir / MOKMANAGER
    for p in (shim, mm):
        if not p.is_file():
            raise errors.MissingTool(f"{p} not found: install Debian's shim-signed (`make deps`)")
    return shim, mm


# ---- the stick's EFI system partition -------------------------------------

VARS_OWNER = "6c6f636b-6265-6e63-6800-000000000001"  # the owner GUID of our MokList/db entries
ESP_MB = 8  # FAT16 room for shim, MokManager, GRUB, the kernel and the certificate


def make_esp(out: Path, grub_efi: Path, kernel_efi: Path, cert_der: Path, shim_dir: Path = SHIM_DIR) -> None:
    """The FAT image the ISO's El Torito EFI entry and GPT partition point at:
    EFI/BOOT/BOOTX64.EFI (shim), mmx64.efi (MokManager), grubx64.efi (our
    signed GRUB, which shim starts), clockbench.efi (the signed kernel) and
    the certificate at the top, clockbench.cer, for "Enroll key from disk".
    No fbx64.efi: shim would run the fallback loader instead of MokManager."""
    shim, mm = shim_files(shim_dir)
    for p in (grub_efi, kernel_efi, cert_der):
        if not p.is_file():
            raise errors.NoInput(f"{p} not found")
    for tool in ("mformat", "mmd", "mcopy"):
        if not shutil.which(tool):
            raise errors.MissingTool(f"{tool} is not installed (Debian package mtools; `make deps`)")
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as f:
        f.truncate(ESP_MB << 20)

    # Reproducible: mtools (4.0.32) dates files and folders from
    # SOURCE_DATE_EPOCH when it is set, in local time (FAT has no zone):
    # TZ=UTC; the volume serial, random otherwise, is made of the same date.
    env = {**os.environ, "TZ": "UTC", "LC_ALL": "C"}
    epoch = reproducible.source_date_epoch()
    serial = ["-N", f"{epoch & 0xFFFFFFFF:08X}"] if epoch is not None else []

    def m(*cmd: str) -> None:
        r = subprocess.run(list(cmd), capture_output=True, text=True, env=env)
        if r.returncode:
            raise errors.CannotWrite(f"{' '.join(cmd[:2])} failed: {r.stderr.strip()[:200]}")

    m("mformat", "-i", str(tmp), *serial, "-v", "CLOCKBENCH", "-T", str((ESP_MB << 20) // 512), "-h", "64", "-s", "32", "::")
    m("mmd", "-i", str(tmp), "::/EFI", "::/EFI/BOOT")
    for src, dst in ((shim, "BOOTX64.EFI"), (mm, "mmx64.efi"), (grub_efi, "grubx64.efi"), (kernel_efi, "clockbench.efi")):
        m("mcopy", "-i", str(tmp), str(src), f"::/EFI/BOOT/{dst}")
    m("mcopy", "-i", str(tmp), str(cert_der), "::/clockbench.cer")
    os.replace(tmp, out)


ESP_FILES = {"BOOTX64.EFI": "::/EFI/BOOT/BOOTX64.EFI", "mmx64.efi": "::/EFI/BOOT/mmx64.efi",
             "grubx64.efi": "::/EFI/BOOT/grubx64.efi", "clockbench.efi": "::/EFI/BOOT/clockbench.efi",
             "clockbench.cer": "::/clockbench.cer"}


def _esp_files(iso: Path, folder: Path, names) -> None:
    """Copies the named files (ESP_FILES) out of the ISO's EFI system partition into folder."""
    for tool in ("xorriso", "mcopy"):
        if not shutil.which(tool):
            raise errors.MissingTool(f"{tool} is not installed (`make deps`): it reads the ISO's EFI system partition")
    esp = folder / "efi.img"
    r = subprocess.run(["xorriso", "-osirrox", "on", "-indev", str(iso), "-extract", "/efi.img", str(esp)],
                       capture_output=True, text=True)
    if r.returncode or not esp.is_file():
        raise errors.BadInput(f"{iso} has no EFI system partition (/efi.img): not a clockbench ISO (`make iso`)")
    for name in names:
        src = ESP_FILES[name]
        r = subprocess.run(["mcopy", "-n", "-i", str(esp), src, str(folder / name)], capture_output=True, text=True)
        if r.returncode:
            raise errors.BadInput(f"{iso}: its EFI system partition has no {src[3:]}: rebuild it (`make iso`)")


def _iso_cert(iso: Path, der_path: Path):
    x509, _, _, _ = _crypto()
    try:
        cert = x509.load_der_x509_certificate(der_path.read_bytes())
    except ValueError:
        raise errors.BadInput(f"{iso}: /clockbench.cer on it is not a DER certificate") from None
    check_cert_use(cert, f"{iso}:/clockbench.cer")
    return cert


def iso_certificate(iso: Path, out_der: Path) -> str:
    """The certificate on the ISO (/clockbench.cer, the one its GRUB and
    kernel are signed with), checked and written to out_der in DER form.
    Returns its subject."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="clockbench-esp-") as d:
        _esp_files(iso, Path(d), ["clockbench.cer"])
        cert = _iso_cert(iso, Path(d) / "clockbench.cer")
        shutil.copyfile(Path(d) / "clockbench.cer", out_der)
        return cert.subject.rfc4514_string()


def check_iso(iso: Path) -> str:
    """Before a stick is written: the ISO's EFI system partition is a
    Secure Boot one (shim, MokManager, GRUB, the kernel, the certificate),
    its certificate is valid and for code signing, and GRUB and the kernel
    verify against it. Returns the certificate's subject."""
    import tempfile

    _, _, serialization, _ = _crypto()
    if not shutil.which("sbverify"):
        raise errors.MissingTool("sbverify is not installed (`make deps`): it checks the stick's signatures")
    with tempfile.TemporaryDirectory(prefix="clockbench-esp-") as d:
        _esp_files(iso, Path(d), ESP_FILES)
        cert = _iso_cert(iso, Path(d) / "clockbench.cer")
        pem = Path(d) / "cert.pem"
        pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        for name in ("grubx64.efi", "clockbench.efi"):
            r = subprocess.run(["sbverify", "--cert", str(pem), str(Path(d) / name)], capture_output=True, text=True)
            if r.returncode:
                raise errors.BadInput(f"{iso}: EFI/BOOT/{name} is not signed by the certificate on the stick: rebuild it (`make iso`)")
        return cert.subject.rfc4514_string()


# MokManager's screens, as shim 16.1's show them on the serial port, and the
# keys that answer each: the first boot with Secure Boot on
# (docs/real-hardware.md walks through the same; tests/boot/test_secureboot.py
# drives them).
MOK_STEPS = [
    (r"Verification failed: \(0x1A\) Security Violation", ["ret"]),  # shim's error box: OK
    (r"Press any key to perform MOK management", ["ret"]),           # a 10-second countdown
    (r"Enroll key from disk", ["down", "ret"]),                      # Continue boot / Enroll key from disk
    (r"Select Key", ["ret"]),                                        # the stick's EFI partition, CLOCKBENCH
    (r"clockbench\.cer", ["down", "ret"]),                           # EFI/ / clockbench.cer
    (r"Enroll MOK", ["down", "ret"]),                                # View key 0 / Continue
    (r"Enroll the key\(s\)\?", ["down", "ret"]),                     # No / Yes
    (r"Reboot", ["ret"]),                                            # Reboot: QEMU (-no-reboot) ends
]


def make_vars(out: Path, cert_der: Path, *, mok: bool = False, db: bool = False, pydeps: Path | None = None) -> Path:
    """A copy of OVMF's store with Microsoft's keys (a retail PC), with the
    certificate added to MokList and/or db by virt-firmware (virt-fw-vars),
    never by hand-made bytes. pydeps: where `make deps` put virt-firmware."""
    from clockbench.machines import qemu

    if not (mok or db):
        shutil.copyfile(qemu.OVMF_VARS_MS, out)
        return out
    cmd = [sys.executable, "-m", "virt.firmware.vars", "-i", qemu.OVMF_VARS_MS, "-o", str(out)]
    cmd += ["--add-mok", VARS_OWNER, str(cert_der)] if mok else []
    cmd += ["--add-db", VARS_OWNER, str(cert_der)] if db else []
    env = {**os.environ, **({"PYTHONPATH": str(pydeps)} if pydeps else {})}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        raise errors.MissingTool(f"virt-fw-vars failed (virt-firmware, `make deps`): {r.stderr.strip()[-300:]}")
    return out


def enrol_with_mokmanager(cfg, timeout: float, shots: Path | None = None) -> str:
    """Runs QEMU (its command line from qemu.build_command) and answers each
    MokManager screen by the monitor's sendkey once the serial port shows it.
    shots: a folder for a screendump (PPM) of each screen, mok-N.ppm
    (scripts/secureboot_pictures.py makes docs/img/ this way). Returns the
    serial output; QEMU ends at MokManager's Reboot (-no-reboot)."""
    import re
    import threading
    import time

    from clockbench.machines import qemu

    cmd = qemu.build_command(cfg, "tcg")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: [out.append(c) for c in iter(lambda: proc.stdout.read1(4096), b"")], daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    seen_upto = 0
    try:
        mon = qemu._Monitor(cfg.monitor_socket)
        for i, (pattern, keys) in enumerate(MOK_STEPS):
            while True:
                text = b"".join(out).decode("utf-8", "replace")
                m = re.search(pattern, text[seen_upto:])
                if m:
                    seen_upto += m.end()
                    break
                if proc.poll() is not None:
                    raise RuntimeError(f"QEMU ended before /{pattern}/:\n{text[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no /{pattern}/ within {timeout:g} s:\n{text[-3000:]}")
                time.sleep(0.2)
            time.sleep(1.5)  # the screen drawn whole
            if shots is not None:
                mon.command(f"screendump {shots / f'mok-{i}.ppm'}")
            if shots is not None and pattern == "Enroll MOK":  # View key 0: the fingerprint to compare
                mon.command("sendkey ret")
                time.sleep(2.5)
                mon.command(f"screendump {shots / f'mok-{i}-key.ppm'}")
                mon.command("sendkey ret")
                time.sleep(2.0)
            for k in keys:
                mon.command(f"sendkey {k}")
                time.sleep(0.7)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    return b"".join(out).decode("utf-8", "replace")


def main_keys(args) -> int:
    key_dir = Path(args.dir)
    if args.new:
        info = make_key(key_dir, common_name=args.name)
        print(f"made a new key in {key_dir}")
    elif args.ensure:
        if os.environ.get(reproducible.SIGNATURES_FROM_ENV):
            return 0  # a rebuild of a release signs with the release's signatures: no key to make
        info = ensure_key(key_dir)
        if not args.quiet:
            print(info.describe())
        return 0
    else:
        key_path, cert_path, _ = paths(key_dir)
        if not key_path.exists() and not cert_path.exists():
            # the hint names the folder asked about, so that it works as printed
            where = "" if Path(key_dir) == Path(KEY_DIR) else f" --dir {shlex.quote(str(key_dir))}"
            raise errors.NoInput(f"no key in {key_dir}: `clockbench keys --new{where}` makes one (the first `make iso` does "
                                 "too, in its KEY_DIR)")
        info = check_key(key_path, cert_path)
    print(info.describe())
    return 0


def main_sign(args) -> int:
    src = Path(args.file)
    out = Path(args.output) if args.output else src.with_name(src.name + ".signed")
    key_dir = Path(args.key_dir) if args.key_dir else KEY_DIR
    key = Path(args.key) if args.key else paths(key_dir)[0]
    cert = Path(args.cert) if args.cert else paths(key_dir)[1]
    info = sign(key, cert, src, out)
    if info is None:
        print(f"clockbench sign: {out} carries the release's signature")
        return 0
    print(f"clockbench sign: {out} signed with {info.subject} (SHA-256 {info.fingerprint_sha256[:23]}...)")
    return 0


def main_esp(args) -> int:
    make_esp(Path(args.out), Path(args.grub), Path(args.kernel), Path(args.cert_der))
    return 0


def add_parsers(sub) -> None:
    k = sub.add_parser("keys", help="the Secure Boot signing key: where it is, its fingerprint and expiry; --new makes one")
    k.add_argument("--dir", default=str(KEY_DIR), help="the key's folder (default: %(default)s)")
    g = k.add_mutually_exclusive_group()
    g.add_argument("--new", action="store_true", help="make a new key and certificate (refused if one is there)")
    g.add_argument("--ensure", action="store_true", help="make one only if there is none (what the build does)")
    k.add_argument("--quiet", action="store_true", help="with --ensure: say nothing unless a key is made")
    k.add_argument("--name", help="with --new: the certificate's common name (default: 'clockbench Secure Boot key (HOST)'; "
                   "a release key wants one without a machine's name, e.g. 'clockbench release key')")
    k.set_defaults(func=main_keys)
    s = sub.add_parser("sign", help="sign an EFI program (sbsign) with your key, or one you name (--key, --cert)")
    s.add_argument("file", help="the PE image to sign, e.g. build/clockbench.efi")
    s.add_argument("--key", help="a PEM private key (mode 0600); default: the one in --key-dir")
    s.add_argument("--cert", help="its certificate (PEM or DER), for code signing; default: the one in --key-dir")
    s.add_argument("--key-dir", help=f"the key's folder (default: {KEY_DIR})")
    s.add_argument("--output", "-o", help="where the signed image goes (default: FILE.signed)")
    s.set_defaults(func=main_sign)
    e = sub.add_parser("esp", help="(the Makefile's) make the stick's EFI system partition image")
    e.add_argument("--out", required=True, help="the FAT image to write")
    e.add_argument("--grub", required=True, help="the signed GRUB, EFI/BOOT/grubx64.efi")
    e.add_argument("--kernel", required=True, help="the signed kernel, EFI/BOOT/clockbench.efi")
    e.add_argument("--cert-der", required=True, help="the certificate in DER, /clockbench.cer")
    e.set_defaults(func=main_esp)
