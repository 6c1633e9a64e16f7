"""What a person sees: the framebuffer console under GRUB on legacy BIOS
(VBE) and UEFI (GOP), ending on the summary screen. The screendump is read
back into text by matching every 8x16 cell against the console font, and
its QR code is decoded with zbarimg into the same results the serial
records carry."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clockbench import decode, qemu, qrimage, records, screen

TEST_ISO = Path(os.environ.get("CLOCKBENCH_BUILD", Path(__file__).resolve().parents[2] / "build")) / "test" / "clockbench.iso"


@pytest.mark.parametrize("firmware", ["bios", "uefi"])
def test_summary_screen_and_its_qr_code(firmware, tmp_path):
    cfg = qemu.QemuConfig(boot="iso", iso=TEST_ISO, firmware=firmware, accel="tcg")
    serial, ppm = screen.boot_and_screendump(cfg, tmp_path / "screen.ppm")
    recs = records.parse(serial)
    machine = records.one(recs, "machine")
    assert machine["screen"].startswith("framebuffer 1024x768, 32 bits per pixel")
    w, h, pixels = screen.read_ppm(ppm)
    assert (w, h) == (1024, 768)
    # cells under the QR code match no glyph and read as '?': cut them off the right
    text = [l.rstrip("? ") for l in screen.screen_text(w, h, pixels)]
    summary = [l for l in serial.replace("\r", "").split("\n") if l.startswith("SUMMARY:")]
    assert summary and summary[0] in text, "\n".join(text)
    assert text[0].startswith("clockbench ") and text[0].endswith(": summary")
    assert any(l.startswith("CPU:") and machine["brand"] in l for l in text)
    for name in ("tsc", "hpet", "acpi_pm", "pit"):
        lat = records.one(recs, "latency", counter="rdtsc" if name == "tsc" else name)
        row = [l for l in text if l.startswith(f"  {name} ")]
        assert row and f"{lat['p50_ns']:.1f} ns" in row[0], (row, lat["p50_ns"])
    assert "clockbench: run ended: passed (status 0). Halted; it is safe to power off." in text
    assert not any(l.startswith("@cb ") for l in text), "machine records stay off the screen"

    if not qrimage.zbar_available():
        pytest.skip("zbarimg not installed (Debian package zbar-tools): the QR code was not decoded")
    qr = records.one(recs, "qr")
    codes = qrimage.decode_image(ppm)
    assert codes == [qr["payload"].encode()]
    result = decode.parse_payload(codes[0].decode())
    s = records.one(recs, "summary")
    assert result["summary"] == {"pass": s["pass"], "fail": s["fail"], "skip": s["skip"], "status": s["status"]}
    assert result["cpu"].endswith(machine["brand"])
    assert [c["name"] for c in result["counters"]] == ["tsc", "hpet", "acpi_pm", "pit"]
    f = records.one(recs, "frequency", counter="acpi_pm", reference="hpet")
    pm = result["counters"][2]
    assert abs(pm["ppm"] - f["ppm_vs_nominal"]) <= 0.005 + 1e-9
