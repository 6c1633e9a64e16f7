"""What a person sees: the framebuffer console under GRUB on legacy BIOS
(VBE) and UEFI (GOP). The screendump is read back into text by matching
every 8x16 cell against the console font, and the report must be there."""

from __future__ import annotations

import pytest

from clockbench import qemu, records, screen
import os
from pathlib import Path

TEST_ISO = Path(os.environ.get("CLOCKBENCH_BUILD", Path(__file__).resolve().parents[2] / "build")) / "test" / "clockbench.iso"


@pytest.mark.parametrize("firmware", ["bios", "uefi"])
def test_report_is_drawn_on_the_framebuffer(firmware, tmp_path):
    cfg = qemu.QemuConfig(boot="iso", iso=TEST_ISO, firmware=firmware, accel="tcg")
    serial, ppm = screen.boot_and_screendump(cfg, tmp_path / "screen.ppm")
    machine = records.one(records.parse(serial), "machine")
    assert machine["screen"].startswith("framebuffer 1024x768, 32 bits per pixel")
    w, h, pixels = screen.read_ppm(ppm)
    assert (w, h) == (1024, 768)
    text = screen.screen_text(w, h, pixels)
    joined = "\n".join(text)
    summary = [l for l in serial.replace("\r", "").split("\n") if l.startswith("SUMMARY:")]
    assert summary and summary[0] in text, joined[-2000:]
    assert "clockbench: run ended: passed (status 0). Halted; it is safe to power off." in text
    assert "== Verdict ==" in text
    assert not any(l.startswith("@cb ") for l in text), "machine records stay off the screen"
    assert "?" not in "".join(text[-5:]), "every cell of the last lines matches a glyph"
