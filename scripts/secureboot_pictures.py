#!/usr/bin/env python3
"""Makes docs/img/secureboot-*.png, the pictures of docs/real-hardware.md's
first boot with Secure Boot on: the test ISO under OVMF's Secure Boot build
with Microsoft's keys and no key of ours, MokManager driven as
tests/boot/test_secureboot.py drives it, a screendump of each screen, then
the summary screen of the boot after. Cropped and reduced to a few colours
so that each stays a few KB. Run after `make build/test/clockbench.iso`:
    PYTHONPATH=tools python3 scripts/secureboot_pictures.py"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from PIL import Image

from clockbench.machines import qemu
from clockbench.release import secureboot

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
OUT = ROOT / "docs" / "img"
NAMES = ["1-verification-failed", "2-press-any-key", "3-mok-menu", "4-select-volume", "5-select-file",
         "6-enroll-mok", "8-enroll-yes", "9-reboot"]
BOX = (240, 105, 1040, 675)  # MokManager's box on QEMU's 1280x800 screen


def save_box(ppm: Path, name: str) -> None:
    im = Image.open(ppm).convert("RGB").crop(BOX).resize((600, 428), Image.LANCZOS).quantize(colors=8)
    im.save(OUT / f"secureboot-{name}.png", optimize=True)


def main() -> int:
    iso = BUILD / "test" / "clockbench.iso"
    cert = BUILD / "test-key" / secureboot.CERT_DER_NAME
    with tempfile.TemporaryDirectory(prefix="clockbench-pictures-") as d:
        d = Path(d)
        vars_path = secureboot.make_vars(d / "vars.fd", cert, pydeps=BUILD / "pydeps")
        cfg = qemu.QemuConfig(boot="iso", iso=iso, firmware="uefi-secboot", uefi_vars=vars_path, accel="tcg",
                              append="profile=quick only=read_cost", monitor_socket=d / "mon.sock")
        secureboot.enrol_with_mokmanager(cfg, timeout=300, shots=d)
        for i, name in enumerate(NAMES):
            save_box(d / f"mok-{i}.ppm", name)
        save_box(d / "mok-5-key.ppm", "7-view-key")
        # the boot after: the summary screen (no isa-debug-exit, so it stays)
        (d / "mon.sock").unlink(missing_ok=True)
        cfg.debug_exit = False
        proc = subprocess.Popen(qemu.build_command(cfg, "tcg"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        out: list[bytes] = []
        threading.Thread(target=lambda: [out.append(c) for c in iter(lambda: proc.stdout.read1(4096), b"")], daemon=True).start()
        try:
            deadline = time.monotonic() + 180
            while b"run ended" not in b"".join(out):
                if time.monotonic() > deadline or proc.poll() is not None:
                    print("no summary screen: the boot after enrolment did not end its run", file=sys.stderr)
                    return 1
                time.sleep(0.5)
            time.sleep(3)
            qemu._Monitor(d / "mon.sock").command(f"screendump {d / 'summary.ppm'}")
            time.sleep(1)
        finally:
            proc.kill()
            proc.wait()
        im = Image.open(d / "summary.ppm").convert("L").crop((0, 0, 1024, 440)).point(lambda v: 255 if v > 128 else 0).convert("1")
        im.save(OUT / "secureboot-10-summary.png", optimize=True)
    print(f"pictures in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
